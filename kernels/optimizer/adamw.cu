// The multi-tensor AdamW step (tewb_kernels/adamw.h): up to kAdamWTensorsPerLaunch tensors in one launch.
// The list travels in the kernel's parameters (__grid_constant__: read where it is, not copied per thread;
// about 26 KiB, which needs CUDA 12.1). Each thread block updates one chunk of kAdamWChunkElements of one
// tensor, found by a binary search of the tensors' first chunks; 16-byte loads and stores where the tensor's
// buffers allow, element by element otherwise, the same arithmetic either way (optimizer/adamw_math.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/check.h"
#include "optimizer/adamw_arguments.h"
#include "optimizer/adamw_launch.h"
#include "optimizer/adamw_math.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kVector = 4;  // floats per 16-byte access
constexpr std::size_t kChunk = kAdamWChunkElements;
static_assert(kChunk % (kThreads * kVector) == 0, "a chunk is whole passes of the block's vectors");

struct DeviceTensor {
    float* param;
    const float* grad;
    float* exp_avg;
    float* exp_avg_sq;
    __nv_bfloat16* param_bf16;
    std::size_t numel;
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
// About 26.7 KiB: beyond the classic 4 KiB of kernel parameters, within the 32764 bytes CUDA 12.1 and later
// allow on Volta and newer (with a driver of r530 or later).
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

__device__ void update_element(const AdamWCoefficients& c, const DeviceTensor& t, std::size_t i) {
    float param = t.param[i];
    float exp_avg = t.exp_avg[i];
    float exp_avg_sq = t.exp_avg_sq[i];
    adamw_update(c, param, __ldg(t.grad + i), exp_avg, exp_avg_sq);
    t.param[i] = param;
    t.exp_avg[i] = exp_avg;
    t.exp_avg_sq[i] = exp_avg_sq;
    if (t.param_bf16 != nullptr) t.param_bf16[i] = __float2bfloat16_rn(param);
}

// Elements i .. i + 3, i a multiple of 4 in a tensor whose buffers are 16-byte aligned (the copy 8).
__device__ void update_vector(const AdamWCoefficients& c, const DeviceTensor& t, std::size_t i) {
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
}

__device__ bool vector_aligned(const DeviceTensor& t) {
    const auto floats = reinterpret_cast<std::uintptr_t>(t.param) | reinterpret_cast<std::uintptr_t>(t.grad) |
                        reinterpret_cast<std::uintptr_t>(t.exp_avg) | reinterpret_cast<std::uintptr_t>(t.exp_avg_sq);
    return floats % 16 == 0 && reinterpret_cast<std::uintptr_t>(t.param_bf16) % 8 == 0;
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
        const std::size_t begin = static_cast<std::size_t>(blockIdx.x - batch.first_chunk[index]) * kChunk;
        const std::size_t end = min(tensor.numel, begin + kChunk);
        std::size_t element_from = begin;
        if (vector_aligned(tensor)) {
            const std::size_t vector_end = begin + (end - begin) / kVector * kVector;
            for (std::size_t i = begin + threadIdx.x * kVector; i < vector_end; i += kThreads * kVector) update_vector(c, tensor, i);
            element_from = vector_end;
        }
        for (std::size_t i = element_from + threadIdx.x; i < end; i += kThreads) update_element(c, tensor, i);
    }
    if (batch.advances_step) advance_step(batch.step, t);
}

}  // namespace

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
            batch.tensors[batch.count] = {w.param, w.grad, w.exp_avg, w.exp_avg_sq, static_cast<__nv_bfloat16*>(w.param_bf16), w.numel};
            batch.first_chunk[batch.count] = batch.chunks;
            batch.chunks += static_cast<unsigned>(adamw_chunks(w.numel));
            ++batch.count;
        }
        adamw_kernel<<<std::max(batch.chunks, 1u), kThreads, 0, stream>>>(batch);
        check_last_launch(call);
    }
}

}  // namespace tewb::kernels::detail
