// The multi-tensor AdamW step (tewb_kernels/adamw.h): up to kAdamWTensorsPerLaunch tensors in one launch.
// The list travels in the kernel's parameters (__grid_constant__: read where it is, not copied per thread;
// about 25 KiB, which needs CUDA 12.1). Each thread block updates one chunk of one tensor, found by a binary
// search of the tensors' first chunks: kAdamWChunkElements consecutive elements, or, for a tensor with an FP8
// output, one 64 x 64 tile of its [rows, cols] matrix, whose FP8 bytes are cast as cast_transpose_multi_to_fp8
// casts them (common/elementwise.cuh) and staged in shared memory so the transposed copy is written along its
// own rows. 16-byte loads and stores where the tensor's buffers allow, element by element otherwise, the same
// arithmetic either way (optimizer/adamw_math.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/arguments.h"
#include "common/stream.cuh"
#include "optimizer/adamw_call.h"
#include "optimizer/adamw_math.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kVector = 4;  // floats per 16-byte access
constexpr std::size_t kChunk = kAdamWChunkElements;
static_assert(kChunk % (kThreads * kVector) == 0, "a chunk is whole passes of the block's vectors");

// A tile as cast_transpose_multi_to_fp8's: 16 threads per row of 4 columns each, 16 rows per pass; then 4
// threads per column of the tile, 16 bytes of the transposed copy each.
constexpr int kTile = static_cast<int>(kAdamWFp8Tile);
constexpr int kLanesPerRow = kTile / kVector;
constexpr int kRowsPerPass = kThreads / kLanesPerRow;
constexpr int kPiece = 16;  // bytes of the transposed copy one thread stores
static_assert(kTile % kRowsPerPass == 0 && kThreads == kTile * (kTile / kPiece), "the tile's two thread layouts");

struct DeviceTensor {
    float* param;
    const float* grad;
    float* exp_avg;
    float* exp_avg_sq;
    __nv_bfloat16* param_bf16;
    std::uint8_t* fp8;  // null: no FP8 output, flat chunks
    std::uint8_t* fp8_t;
    const float* scale;
    float* amax;
    std::size_t numel;
    int rows;  // with fp8 (in int, as the cast: at most kAdamWMaxChunks tiles, adamw_arguments.cpp)
    int cols;
    int tiles_x;
    Fp8Type type;
};

struct Batch {
    DeviceTensor tensors[kAdamWTensorsPerLaunch];
    unsigned first_chunk[kAdamWTensorsPerLaunch];  // rising strictly: every tensor here has a chunk
    int count;
    unsigned chunks;
    float* step;
    AdamWScalars scalars;
    bool advances_step;  // the call's last launch: its last block to arrive writes *step
};
// About 25 KiB (100 bytes a tensor): beyond the classic 4 KiB of kernel parameters, within the 32764 bytes
// CUDA 12.1 and later allow on Volta and newer (with a driver of r530 or later).
static_assert(sizeof(Batch) <= 32764, "kernel parameters are limited to 32764 bytes");
#if CUDART_VERSION < 12010
#error "the multi-tensor AdamW step passes more than 4 KiB of kernel parameters: CUDA 12.1 or later is needed"
#endif

// Zero at module load; the last block of a step-advancing launch resets it, so the next launch (or graph
// replay) finds it zeroed. Hence no two AdamW steps at the same time (adamw.h).
__device__ unsigned adamw_arrivals;

// The tensor that owns chunk `block`: the last one whose first chunk is at or before it.
__device__ int tensor_of(const Batch& batch, unsigned block) {
    int low = 0;
    int high = batch.count - 1;
    while (low < high) {
        const int mid = (low + high + 1) / 2;
        if (batch.first_chunk[mid] <= block) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    return low;
}

// Returns the updated parameter (the FP8 cast's input).
__device__ float update_element(const AdamWCoefficients& c, const DeviceTensor& t, std::size_t i) {
    float param = t.param[i];
    float exp_avg = t.exp_avg[i];
    float exp_avg_sq = t.exp_avg_sq[i];
    adamw_update(c, param, __ldg(t.grad + i), exp_avg, exp_avg_sq);
    t.param[i] = param;
    t.exp_avg[i] = exp_avg;
    t.exp_avg_sq[i] = exp_avg_sq;
    if (t.param_bf16 != nullptr) t.param_bf16[i] = __float2bfloat16_rn(param);
    return param;
}

// Elements i .. i + 3, i a multiple of 4 in a tensor whose buffers are 16-byte aligned (the copy 8).
__device__ float4 update_vector(const AdamWCoefficients& c, const DeviceTensor& t, std::size_t i) {
    float4 param = *reinterpret_cast<const float4*>(t.param + i);
    const float4 grad = __ldg(reinterpret_cast<const float4*>(t.grad + i));
    float4 exp_avg = *reinterpret_cast<const float4*>(t.exp_avg + i);
    float4 exp_avg_sq = *reinterpret_cast<const float4*>(t.exp_avg_sq + i);
    adamw_update(c, param.x, grad.x, exp_avg.x, exp_avg_sq.x);
    adamw_update(c, param.y, grad.y, exp_avg.y, exp_avg_sq.y);
    adamw_update(c, param.z, grad.z, exp_avg.z, exp_avg_sq.z);
    adamw_update(c, param.w, grad.w, exp_avg.w, exp_avg_sq.w);
    *reinterpret_cast<float4*>(t.param + i) = param;
    *reinterpret_cast<float4*>(t.exp_avg + i) = exp_avg;
    *reinterpret_cast<float4*>(t.exp_avg_sq + i) = exp_avg_sq;
    if (t.param_bf16 != nullptr) {
        alignas(8) __nv_bfloat162 pairs[2] = {__floats2bfloat162_rn(param.x, param.y), __floats2bfloat162_rn(param.z, param.w)};
        *reinterpret_cast<uint2*>(t.param_bf16 + i) = *reinterpret_cast<const uint2*>(pairs);
    }
    return param;
}

__device__ bool vector_aligned(const DeviceTensor& t) {
    const auto floats = reinterpret_cast<std::uintptr_t>(t.param) | reinterpret_cast<std::uintptr_t>(t.grad) |
                        reinterpret_cast<std::uintptr_t>(t.exp_avg) | reinterpret_cast<std::uintptr_t>(t.exp_avg_sq);
    return floats % 16 == 0 && reinterpret_cast<std::uintptr_t>(t.param_bf16) % 8 == 0;
}

// Chunk [begin, end) of a tensor without an FP8 output.
__device__ void update_chunk(const AdamWCoefficients& c, const DeviceTensor& t, std::size_t begin, std::size_t end) {
    std::size_t element_from = begin;
    if (vector_aligned(t)) {
        const std::size_t vector_end = begin + (end - begin) / kVector * kVector;
        for (std::size_t i = begin + threadIdx.x * kVector; i < vector_end; i += kThreads * kVector) update_vector(c, t, i);
        element_from = vector_end;
    }
    for (std::size_t i = element_from + threadIdx.x; i < end; i += kThreads) update_element(c, t, i);
}

// Tile `tile` (row-major over the tiles) of a tensor with an FP8 output: the update, then its FP8 bytes
// written row by row (4-byte stores where whole and aligned) and staged, the transposed copy written from the
// stage in 16-byte pieces where whole and aligned, and the tile's max |param| combined into the amax. The
// values are cast_transpose_multi_to_fp8's for this tile of the updated parameter: its product, conversion
// and amax bits. Every thread of the block calls it (it synchronizes).
__device__ void update_tile(const AdamWCoefficients& c, const DeviceTensor& t, unsigned tile) {
    __shared__ std::uint8_t staged[kTile][kTile + 4];  // + 4: the transposed reads spread over banks
    const int r0 = static_cast<int>(tile / t.tiles_x) * kTile;
    const int c0 = static_cast<int>(tile % t.tiles_x) * kTile;
    const float s = *t.scale;
    const int lane = static_cast<int>(threadIdx.x) % kLanesPerRow;
    const int col = c0 + lane * kVector;
    // Whole rows of vectors: a thread's 4 columns are all in the tensor or all past its end.
    const bool vectors = t.cols % kVector == 0 && vector_aligned(t);
    const bool whole_words = t.cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(t.fp8) % 4 == 0;
    unsigned local = 0;
#pragma unroll
    for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
        const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kLanesPerRow;
        const int r = r0 + j;
        std::uint8_t q[kVector] = {0, 0, 0, 0};
        if (r < t.rows) {
            const std::size_t row_start = static_cast<std::size_t>(r) * t.cols;
            float param[kVector] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (vectors) {
                if (col < t.cols) {
                    const float4 v = update_vector(c, t, row_start + col);
                    param[0] = v.x;
                    param[1] = v.y;
                    param[2] = v.z;
                    param[3] = v.w;
                }
            } else {
#pragma unroll
                for (int k = 0; k < kVector; ++k) {
                    if (col + k < t.cols) param[k] = update_element(c, t, row_start + col + k);
                }
            }
#pragma unroll
            for (int k = 0; k < kVector; ++k) {
                if (col + k < t.cols) {
                    local = max(local, abs_bits(param[k]));
                    q[k] = fp8_from_float(param[k] * s, t.type);
                }
            }
            if (whole_words && col + 3 < t.cols) {
                *reinterpret_cast<unsigned*>(t.fp8 + row_start + col) =
                    q[0] | (q[1] << 8) | (q[2] << 16) | (static_cast<unsigned>(q[3]) << 24);
            } else {
                for (int k = 0; k < kVector && col + k < t.cols; ++k) t.fp8[row_start + col + k] = q[k];
            }
        }
#pragma unroll
        for (int k = 0; k < kVector; ++k) staged[j][lane * kVector + k] = q[k];
    }
    __syncthreads();
    // The tile's 64 columns are 64 rows of the transposed copy, each 64 bytes from r0: 4 pieces of 16.
    const int column = static_cast<int>(threadIdx.x) / (kTile / kPiece);
    const int part = static_cast<int>(threadIdx.x) % (kTile / kPiece);
    const int ct = c0 + column;
    const int rt = r0 + part * kPiece;
    if (t.fp8_t != nullptr && ct < t.cols && rt < t.rows) {
        alignas(16) std::uint8_t bytes[kPiece];
#pragma unroll
        for (int k = 0; k < kPiece; ++k) bytes[k] = staged[part * kPiece + k][column];
        std::uint8_t* to = t.fp8_t + static_cast<std::size_t>(ct) * t.rows + rt;
        if (rt + kPiece <= t.rows && reinterpret_cast<std::uintptr_t>(to) % 16 == 0) {
            *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(bytes);
        } else {
            for (int k = 0; k < kPiece && rt + k < t.rows; ++k) to[k] = bytes[k];
        }
    }
    combine_block_amax(local, t.amax);
}

// Called by every thread of every block after its reads of *step. The last block to arrive writes t: every
// other block has read the old value by then.
__device__ void advance_step(float* step, float t) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned ticket = atomicAdd(&adamw_arrivals, 1u);
        last = ticket == gridDim.x - 1;
        __threadfence();
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        *step = t;
        adamw_arrivals = 0u;
    }
}

__global__ void __launch_bounds__(kThreads) adamw_kernel(const __grid_constant__ Batch batch) {
    const float t = *batch.step + 1.0f;
    // An empty list launches one block, with no chunk, that only advances the step.
    if (blockIdx.x < batch.chunks) {
        // Two double-precision powers: once per block, not per thread (FP64 is slow on consumer parts).
        __shared__ alignas(AdamWCoefficients) unsigned char coefficients[sizeof(AdamWCoefficients)];
        auto* shared = reinterpret_cast<AdamWCoefficients*>(coefficients);
        if (threadIdx.x == 0) *shared = adamw_coefficients(batch.scalars, t);
        __syncthreads();
        const AdamWCoefficients c = *shared;
        const int index = tensor_of(batch, blockIdx.x);
        const DeviceTensor& tensor = batch.tensors[index];
        const unsigned chunk = blockIdx.x - batch.first_chunk[index];
        if (tensor.fp8 != nullptr) {
            update_tile(c, tensor, chunk);
        } else {
            const std::size_t begin = static_cast<std::size_t>(chunk) * kChunk;
            update_chunk(c, tensor, begin, min(tensor.numel, begin + kChunk));
        }
    }
    if (batch.advances_step) advance_step(batch.step, t);
}

void launch_adamw(const std::vector<AdamWTensor>& work, float* step, const AdamWScalars& scalars, cudaStream_t stream,
                  std::string_view call) {
    const auto ranges = adamw_launch_ranges(work.size());
    for (std::size_t r = 0; r < ranges.size(); ++r) {
        Batch batch{};
        batch.step = step;
        batch.scalars = scalars;
        batch.advances_step = r + 1 == ranges.size();
        for (std::size_t i = ranges[r].first; i < ranges[r].second; ++i) {
            const AdamWTensor& w = work[i];
            const bool fp8 = w.fp8.data != nullptr;
            batch.tensors[batch.count] = {w.param,
                                          w.grad,
                                          w.exp_avg,
                                          w.exp_avg_sq,
                                          static_cast<__nv_bfloat16*>(w.param_bf16),
                                          static_cast<std::uint8_t*>(w.fp8.data),
                                          fp8 ? static_cast<std::uint8_t*>(w.fp8.transposed) : nullptr,
                                          fp8 ? w.fp8.scale : nullptr,
                                          fp8 ? w.fp8.amax : nullptr,
                                          w.numel,
                                          fp8 ? static_cast<int>(w.rows) : 0,
                                          fp8 ? static_cast<int>(w.cols) : 0,
                                          fp8 ? static_cast<int>((w.cols + kTile - 1) / kTile) : 0,
                                          w.fp8.type};
            batch.first_chunk[batch.count] = batch.chunks;
            batch.chunks += static_cast<unsigned>(adamw_chunks(w));
            ++batch.count;
        }
        adamw_kernel<<<std::max(batch.chunks, 1u), kThreads, 0, stream>>>(batch);
        check_last_launch(call);
    }
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void adamw_step(const AdamWParameter* parameters, std::size_t count, const Tensor& step, double lr, double beta1, double beta2,
                double weight_decay, double eps, Stream stream) {
    constexpr const char* call = "tewb::kernels::adamw_step";
    float* step_value = detail::float_vector(call, step, "step", 1);
    const std::vector<detail::AdamWTensor> work =
        detail::checked_adamw_tensors(call, parameters, count, step_value, lr, beta1, beta2, weight_decay, eps);
    detail::launch_adamw(work, step_value, detail::adamw_scalars(lr, beta1, beta2, weight_decay, eps), detail::cuda_stream(stream),
                         call);
}

}  // namespace tewb::kernels
