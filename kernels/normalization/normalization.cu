// LayerNorm forward and backward. Forward: one warp per row, two passes over the row (mean, then the
// variance of x - mean) for float32 accuracy; the row is re-read from L1/L2, so the traffic is one read
// of x and one write of each output. Backward: dx one warp per row; dgamma and dbeta in two stages (each
// block sums a chunk of rows per column into the workspace, a second launch sums the chunks).
#include <algorithm>
#include <cstdint>

#include "cast/cast_launch.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "normalization/normalization_launch.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kColumnThreads = 256;
constexpr int kRowsPerChunk = 32;
constexpr int kMaxChunks = 1024;
constexpr int kMaxGridX = 2147483647;

__global__ void layer_norm_forward_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                          const void* __restrict__ beta, DType param_dtype, int rows, int hidden, float eps,
                                          void* out, DType out_dtype, std::uint8_t* q, const float* scale, Fp8Type type,
                                          float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    unsigned local = 0;
    if (row < rows) {
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        float sum = 0.0f;
        for (int c = lane; c < hidden; c += 32) sum += load(x, x_dtype, base + c);
        const float mean = warp_sum(sum) / hidden;
        float squares = 0.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float d = load(x, x_dtype, base + c) - mean;
            squares += d * d;
        }
        const float rstd = 1.0f / sqrtf(warp_sum(squares) / hidden + eps);
        const float s = q != nullptr ? *scale : 1.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float y = (load(x, x_dtype, base + c) - mean) * rstd * load(gamma, param_dtype, c) + load(beta, param_dtype, c);
            if (out != nullptr) store(out, out_dtype, base + c, y);
            if (q != nullptr) {
                q[base + c] = fp8_from_float(y * s, type);
                local = max(local, abs_bits(y));
            }
        }
        if (lane == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
    if (q != nullptr) combine_block_amax(local, amax);
}

__global__ void layer_norm_dx_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x, DType x_dtype,
                                     const float* __restrict__ mean, const float* __restrict__ rstd,
                                     const void* __restrict__ gamma, DType param_dtype, int rows, int hidden, void* dx) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows) return;
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    const float mu = mean[row];
    const float r = rstd[row];
    float sum_g = 0.0f;
    float sum_gx = 0.0f;
    for (int c = lane; c < hidden; c += 32) {
        const float g = load(dy, dy_dtype, base + c) * load(gamma, param_dtype, c);
        const float xhat = (load(x, x_dtype, base + c) - mu) * r;
        sum_g += g;
        sum_gx += g * xhat;
    }
    const float mean_g = warp_sum(sum_g) / hidden;
    const float mean_gx = warp_sum(sum_gx) / hidden;
    for (int c = lane; c < hidden; c += 32) {
        const float g = load(dy, dy_dtype, base + c) * load(gamma, param_dtype, c);
        const float xhat = (load(x, x_dtype, base + c) - mu) * r;
        store(dx, x_dtype, base + c, r * (g - mean_g - xhat * mean_gx));
    }
}

// Stage 1: block (x, y) sums rows of chunk y for columns of tile x into partial[y] (dgamma) and
// partial[chunks + y] (dbeta).
__global__ void layer_norm_dparams_partial_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x,
                                                  DType x_dtype,
                                                  const float* __restrict__ mean, const float* __restrict__ rstd, int rows,
                                                  int hidden, int chunks, float* __restrict__ partial) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= hidden) return;
    const int rows_per_chunk = (rows + chunks - 1) / chunks;
    const int first = blockIdx.y * rows_per_chunk;
    const int last = min(rows, first + rows_per_chunk);
    float dgamma = 0.0f;
    float dbeta = 0.0f;
    for (int row = first; row < last; ++row) {
        const std::size_t at = static_cast<std::size_t>(row) * hidden + c;
        const float g = load(dy, dy_dtype, at);
        dgamma += g * (load(x, x_dtype, at) - mean[row]) * rstd[row];
        dbeta += g;
    }
    partial[static_cast<std::size_t>(blockIdx.y) * hidden + c] = dgamma;
    partial[static_cast<std::size_t>(chunks + blockIdx.y) * hidden + c] = dbeta;
}

// Stage 2: one thread per column sums the chunks.
__global__ void layer_norm_dparams_final_kernel(const float* __restrict__ partial, int hidden, int chunks, void* dgamma,
                                                void* dbeta, DType param_dtype) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= hidden) return;
    float g = 0.0f;
    float b = 0.0f;
    for (int k = 0; k < chunks; ++k) {
        g += partial[static_cast<std::size_t>(k) * hidden + c];
        b += partial[static_cast<std::size_t>(chunks + k) * hidden + c];
    }
    store(dgamma, param_dtype, c, g);
    store(dbeta, param_dtype, c, b);
}

int row_blocks(std::size_t rows) {
    return static_cast<int>(std::min<std::size_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGridX));
}

}  // namespace

int layer_norm_backward_chunks(std::size_t rows) {
    return static_cast<int>(std::clamp<std::size_t>((rows + kRowsPerChunk - 1) / kRowsPerChunk, 1, kMaxChunks));
}

void launch_layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype,
                               std::size_t rows, std::size_t hidden, float eps, void* out, DType out_dtype,
                               const Fp8Output* fp8, float* mean, float* rstd, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_forward";
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    layer_norm_forward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
        x, x_dtype, gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), eps, out, out_dtype, q,
        fp8 != nullptr ? fp8->scale : nullptr, fp8 != nullptr ? fp8->type : Fp8Type::E4M3, fp8 != nullptr ? fp8->amax : nullptr,
        mean, rstd);
    check_last_launch(call);
    if (fp8 != nullptr && fp8->transposed != nullptr) {
        launch_transpose(fp8->data, 1, rows, hidden, fp8->transposed, stream);
    }
}

void launch_layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                                const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx,
                                void* dgamma, void* dbeta, void* workspace, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward";
    const int h = static_cast<int>(hidden);
    layer_norm_dx_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(dy, dy_dtype, x, x_dtype, mean, rstd, gamma, param_dtype,
                                                                               static_cast<int>(rows), h, dx);
    check_last_launch(call);
    const int chunks = layer_norm_backward_chunks(rows);
    const unsigned column_blocks = static_cast<unsigned>((hidden + kColumnThreads - 1) / kColumnThreads);
    auto* partial = static_cast<float*>(workspace);
    layer_norm_dparams_partial_kernel<<<dim3(column_blocks, static_cast<unsigned>(chunks)), kColumnThreads, 0, stream>>>(
        dy, dy_dtype, x, x_dtype, mean, rstd, static_cast<int>(rows), h, chunks, partial);
    check_last_launch(call);
    layer_norm_dparams_final_kernel<<<column_blocks, kColumnThreads, 0, stream>>>(partial, h, chunks, dgamma, dbeta, param_dtype);
    check_last_launch(call);
}

}  // namespace tewb::kernels::detail
