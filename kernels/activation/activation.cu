// GELU (tanh form) forward, and its backward fused with dbias and the FP8 cast + transpose of the result.
// Forward: elementwise, one read and one write per element. Backward: one pass over dy and x in
// row-chunk x column-tile blocks, each thread walking a column so the column sums for dbias stay in a
// register; a second, small launch sums the chunks.
#include <algorithm>
#include <cstdint>

#include "activation/activation_launch.h"
#include "cast/cast_launch.h"
#include "common/check.h"
#include "common/column_sum.h"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kRowsPerChunk = 32;
constexpr int kMaxChunks = 1024;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ inline float gelu(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    return 0.5f * x * (1.0f + t);
}

__device__ inline float gelu_derivative(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}

__global__ void gelu_forward_kernel(const void* __restrict__ x, DType x_dtype, std::size_t n, void* out, DType out_dtype,
                                    std::uint8_t* q, const float* scale, Fp8Type type, float* amax) {
    const float s = q != nullptr ? *scale : 1.0f;
    unsigned local = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float y = gelu(load(x, x_dtype, i));
        if (out != nullptr) store(out, out_dtype, i, y);
        if (q != nullptr) {
            q[i] = fp8_from_float(y * s, type);
            local = max(local, abs_bits(y));
        }
    }
    if (q != nullptr) combine_block_amax(local, amax);
}

__global__ void gelu_backward_kernel(const void* __restrict__ dy, const void* __restrict__ x, DType dtype, int rows, int cols,
                                     int chunks, void* dx, std::uint8_t* q, std::uint8_t* q_t, const float* scale, Fp8Type type,
                                     float* amax, float* partial) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int rows_per_chunk = (rows + chunks - 1) / chunks;
    const int first = blockIdx.y * rows_per_chunk;
    const int last = min(rows, first + rows_per_chunk);
    const float s = q != nullptr ? *scale : 1.0f;
    unsigned local = 0;
    float column_sum = 0.0f;
    if (c < cols) {
        for (int r = first; r < last; ++r) {
            const std::size_t at = static_cast<std::size_t>(r) * cols + c;
            const float g = load(dy, dtype, at) * gelu_derivative(load(x, dtype, at));
            column_sum += g;
            if (dx != nullptr) store(dx, dtype, at, g);
            if (q != nullptr) {
                const std::uint8_t v = fp8_from_float(g * s, type);
                q[at] = v;
                if (q_t != nullptr) q_t[static_cast<std::size_t>(c) * rows + r] = v;
                local = max(local, abs_bits(g));
            }
        }
        if (partial != nullptr) partial[static_cast<std::size_t>(blockIdx.y) * cols + c] = column_sum;
    }
    if (q != nullptr) combine_block_amax(local, amax);
}

}  // namespace

int gelu_backward_chunks(std::size_t rows) {
    return static_cast<int>(std::clamp<std::size_t>((rows + kRowsPerChunk - 1) / kRowsPerChunk, 1, kMaxChunks));
}

void launch_gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                         const Fp8Output* fp8, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_forward";
    const std::size_t n = rows * cols;
    const int blocks = static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
    gelu_forward_kernel<<<blocks, kThreads, 0, stream>>>(
        x, x_dtype, n, out, out_dtype, fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr,
        fp8 != nullptr ? fp8->scale : nullptr, fp8 != nullptr ? fp8->type : Fp8Type::E4M3, fp8 != nullptr ? fp8->amax : nullptr);
    check_last_launch(call);
    if (fp8 != nullptr && fp8->transposed != nullptr) launch_transpose(fp8->data, 1, rows, cols, fp8->transposed, stream);
}

void launch_gelu_backward(const void* dy, const void* x, DType dtype, std::size_t rows, std::size_t cols, void* dx,
                          const Fp8Output* fp8, void* dbias, DType dbias_dtype, void* workspace, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_backward";
    const int chunks = gelu_backward_chunks(rows);
    const unsigned column_blocks = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
    auto* partial = dbias != nullptr ? static_cast<float*>(workspace) : nullptr;
    gelu_backward_kernel<<<dim3(column_blocks, static_cast<unsigned>(chunks)), kThreads, 0, stream>>>(
        dy, x, dtype, static_cast<int>(rows), static_cast<int>(cols), chunks, dx,
        fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr,
        fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->transposed) : nullptr, fp8 != nullptr ? fp8->scale : nullptr,
        fp8 != nullptr ? fp8->type : Fp8Type::E4M3, fp8 != nullptr ? fp8->amax : nullptr, partial);
    check_last_launch(call);
    if (dbias != nullptr) launch_column_sum(partial, chunks, cols, dbias, dbias_dtype, stream, call);
}

}  // namespace tewb::kernels::detail
