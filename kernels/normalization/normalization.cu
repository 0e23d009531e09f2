// LayerNorm forward and backward. Where rows are 16-byte aligned and short enough to live in registers
// (hidden a multiple of 8 for bfloat16 x, of 4 for float32 x; at most 8192 / 4096; forward with the FP8
// transposed copy at most 4096, layer_norm_rule.h), the fast kernels of layer_norm_fast.cuh run: one read
// of x forward, one read of x and dy backward, dgamma/dbeta partial sums in registers, finished by the last
// blocks to arrive: the backward is one launch. Elsewhere the plain kernels below: one warp per row, two
// passes over the row for float32 accuracy (mean, then the variance of x - mean), dx one warp per row and
// dgamma/dbeta in a separate pass over chunks of rows whose last block per column tile finishes them (two
// launches; three past kColumnSumCounters column tiles, with layer_norm_dparams_final_kernel). Both add the
// partial rows in that final kernel's order (layer_norm_dparams.cuh).
// With the FP8 output's transposed copy the forward (fast or plain) runs in bands of consecutive rows and
// writes the copy from shared memory in the same launch (staged_transpose.cuh).
#include <algorithm>
#include <cstdint>

#include "common/check.h"
#include "common/column_sum_rule.h"
#include "amax/current_scale_epilogue.cuh"
#include "common/elementwise.cuh"
#include "common/staged_transpose.cuh"
#include "normalization/fast_dispatch.cuh"
#include "normalization/fast_forward_launch.cuh"
#include "normalization/layer_norm_dparams.cuh"
#include "normalization/layer_norm_fast.cuh"
#include "normalization/layer_norm_rule.h"
#include "normalization/normalization_call.h"
#include "common/stream.cuh"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kColumnThreads = 256;
constexpr int kMaxGridX = 2147483647;

struct RowStatistics {
    float mean;
    float rstd;
};

// A row's mean and 1 / sqrt(variance + eps) by one warp, in two passes over the row for float32 accuracy (mean,
// then the variance of x - mean): the plain kernels' order, which the host twin follows.
__device__ inline RowStatistics warp_row_statistics(const void* __restrict__ x, DType x_dtype, std::size_t base, int hidden, float eps,
                                                    int lane) {
    float sum = 0.0f;
    for (int c = lane; c < hidden; c += 32) sum += load(x, x_dtype, base + c);
    const float mean = warp_sum(sum) / hidden;
    float squares = 0.0f;
    for (int c = lane; c < hidden; c += 32) {
        const float d = load(x, x_dtype, base + c) - mean;
        squares += d * d;
    }
    return {mean, 1.0f / sqrtf(warp_sum(squares) / hidden + eps)};
}

// fresh.scale set (q null then): current scaling's scale of out from the largest |y| as out stores it.
__global__ void layer_norm_forward_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                          const void* __restrict__ beta, DType param_dtype, int rows, int hidden, float eps,
                                          void* out, DType out_dtype, std::uint8_t* q, const float* scale, Fp8Type type,
                                          float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                          CurrentScaleOut fresh) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    unsigned local = 0;
    if (row < rows) {
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        const RowStatistics stats = warp_row_statistics(x, x_dtype, base, hidden, eps, lane);
        const float mean = stats.mean;
        const float rstd = stats.rstd;
        const float s = q != nullptr ? *scale : 1.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float y = (load(x, x_dtype, base + c) - mean) * rstd * load(gamma, param_dtype, c) + load(beta, param_dtype, c);
            if (out != nullptr) store(out, out_dtype, base + c, y);
            if (q != nullptr) {
                q[base + c] = fp8_from_float(y * s, type);
                local = max(local, abs_bits(y));
            } else if (fresh.scale != nullptr) {
                local = max(local, abs_bits(as_stored_in(y, out_dtype)));
            }
        }
        if (lane == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (q != nullptr) {
        combine_block_amax(local, amax);
    } else {
        finish_current_scale(local, fresh);
    }
}

// The plain forward with the FP8 output's transposed copy q_t [hidden, rows]: a block of 4 warps owns bands
// of kBandRows consecutive rows. Each warp takes rows w, w + 4, ... of the band for mean and rstd (the
// arithmetic of layer_norm_forward_kernel: one warp per row, two passes), kept in shared memory; then the
// band goes column tile by column tile (32 columns): y as layer_norm_forward_kernel computes it, written to
// out and q, its FP8 bytes staged and written to q_t as runs of 32 bytes per column (write_staged_transpose).
constexpr int kBandRows = 32;
constexpr int kBandCols = 32;
constexpr int kBandPitch = staged_transpose_pitch(kBandCols);

__global__ void layer_norm_forward_transposed_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                                     const void* __restrict__ beta, DType param_dtype, int rows, int hidden,
                                                     float eps, void* out, DType out_dtype, std::uint8_t* __restrict__ q,
                                                     std::uint8_t* __restrict__ q_t, const float* scale, Fp8Type type,
                                                     float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out) {
    __shared__ float band_mean[kBandRows];
    __shared__ float band_rstd[kBandRows];
    __shared__ __align__(16) std::uint8_t stage[kBandRows * kBandPitch];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const float s = *scale;
    unsigned local = 0;
    const int bands = (rows + kBandRows - 1) / kBandRows;
    for (int band = blockIdx.x; band < bands; band += gridDim.x) {
        const int r0 = band * kBandRows;
        for (int i = warp; i < kBandRows && r0 + i < rows; i += kWarpsPerBlock) {
            const std::size_t base = static_cast<std::size_t>(r0 + i) * hidden;
            const RowStatistics stats = warp_row_statistics(x, x_dtype, base, hidden, eps, lane);
            const float mean = stats.mean;
            const float rstd = stats.rstd;
            if (lane == 0) {
                band_mean[i] = mean;
                band_rstd[i] = rstd;
                mean_out[r0 + i] = mean;
                rstd_out[r0 + i] = rstd;
            }
        }
        __syncthreads();
        for (int c0 = 0; c0 < hidden; c0 += kBandCols) {
            const int c = c0 + lane;
            if (c < hidden) {
                const float g = load(gamma, param_dtype, c);
                const float b = load(beta, param_dtype, c);
                for (int i = warp; i < kBandRows && r0 + i < rows; i += kWarpsPerBlock) {
                    const std::size_t at = static_cast<std::size_t>(r0 + i) * hidden + c;
                    // __fmul_rn: the product and + b rounded apart, as layer_norm_forward_kernel's y (there the
                    // loads of gamma and beta sit between them, so nothing fuses; here g and b are in registers and
                    // nvcc would make one FMA of it, 1 ulp off the kernel without the transposed copy).
                    const float y = __fmul_rn((load(x, x_dtype, at) - band_mean[i]) * band_rstd[i], g) + b;
                    if (out != nullptr) store(out, out_dtype, at, y);
                    const std::uint8_t byte = fp8_from_float(y * s, type);
                    q[at] = byte;
                    stage[i * kBandPitch + lane] = byte;
                    local = max(local, abs_bits(y));
                }
            }
            __syncthreads();
            write_staged_transpose(stage, kBandPitch, kBandRows, min(kBandCols, hidden - c0), q_t, rows, r0, c0);
            __syncthreads();  // the stage is refilled by the next tile
        }
    }
    combine_block_amax(local, amax);
}

__global__ void layer_norm_dx_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x, DType x_dtype,
                                     const float* __restrict__ mean, const float* __restrict__ rstd,
                                     const void* __restrict__ gamma, DType param_dtype, int rows, int hidden, void* dx,
                                     const void* dresidual) {
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
        float v = r * (g - mean_g - xhat * mean_gx);
        if (dresidual != nullptr) v += load(dresidual, x_dtype, base + c);
        store(dx, x_dtype, base + c, v);
    }
}

// Block (x, y) sums rows of chunk y (of dparams.partials == gridDim.y) for columns of tile x into
// partial[y] (dgamma) and partial[chunks + y] (dbeta); the tile's last block then writes its dgamma and
// dbeta (finish_dparams_tile) unless dparams.dgamma is null.
__global__ void layer_norm_dparams_partial_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x,
                                                  DType x_dtype, const float* __restrict__ mean, const float* __restrict__ rstd,
                                                  int rows, int hidden, DparamsTarget dparams) {
    const int chunks = dparams.partials;
    const int c0 = blockIdx.x * blockDim.x;
    const int c = c0 + threadIdx.x;
    if (c < hidden) {  // no early return: every thread takes part in the finish
        // 64-bit: near INT_MAX rows the last chunk's end would wrap and its rows be dropped.
        const long long rows_per_chunk = (static_cast<long long>(rows) + chunks - 1) / chunks;
        const long long first = static_cast<long long>(blockIdx.y) * rows_per_chunk;
        const long long last = min(static_cast<long long>(rows), first + rows_per_chunk);
        float dgamma = 0.0f;
        float dbeta = 0.0f;
        for (long long row = first; row < last; ++row) {
            const std::size_t at = static_cast<std::size_t>(row) * hidden + c;
            const float g = load(dy, dy_dtype, at);
            dgamma += g * (load(x, x_dtype, at) - mean[row]) * rstd[row];
            dbeta += g;
        }
        dparams.partial[static_cast<std::size_t>(blockIdx.y) * hidden + c] = dgamma;
        dparams.partial[static_cast<std::size_t>(chunks + blockIdx.y) * hidden + c] = dbeta;
    }
    finish_dparams_tile(dparams, hidden, static_cast<int>(blockIdx.x), c0, min(static_cast<int>(blockDim.x), hidden - c0));
}

// The partial rows summed per column, in a launch of its own: only past kColumnSumCounters column tiles of
// the plain kernel (layer_norm_dparams.cuh finishes the same sums, in this order, in the producing launch).
// A block takes 32 columns; its 8 warps each sum a share of the partial rows (coalesced 128-byte reads),
// then warp 0 adds the 8 sums.
__global__ void layer_norm_dparams_final_kernel(const float* __restrict__ partial, int hidden, int partials, void* dgamma,
                                                void* dbeta, DType param_dtype) {
    __shared__ float sums[2][8][32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int c = blockIdx.x * 32 + lane;
    float g = 0.0f;
    float b = 0.0f;
    if (c < hidden) {
        for (int k = warp; k < partials; k += 8) {
            g += partial[static_cast<std::size_t>(k) * hidden + c];
            b += partial[static_cast<std::size_t>(partials + k) * hidden + c];
        }
    }
    sums[0][warp][lane] = g;
    sums[1][warp][lane] = b;
    __syncthreads();
    if (warp == 0 && c < hidden) {
        g = 0.0f;
        b = 0.0f;
        for (int w = 0; w < 8; ++w) {
            g += sums[0][w][lane];
            b += sums[1][w][lane];
        }
        store(dgamma, param_dtype, c, g);
        store(dbeta, param_dtype, c, b);
    }
}

int row_blocks(std::size_t rows) {
    return static_cast<int>(std::min<std::size_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGridX));
}

struct BackwardLaunch {
    const void* dy;
    DType dy_dtype;
    const void* x;
    const float* mean;
    const float* rstd;
    const void* gamma;
    DType param_dtype;
    std::size_t rows, hidden;
    void* dx;
    const void* dresidual;
    float* partial;
    int partials;
    void* dgamma;
    void* dbeta;
    cudaStream_t stream;
    // layer_norm_backward_cast_dbias: dx's copy (null: none) and its column sums (null: not this entry point).
    void* cast_out = nullptr;
    DType cast_dtype = DType::Float32;
    float* dsum = nullptr;
    CurrentScaleOut fresh{};  // layer_norm_backward_cast_dbias_current_scale: current scaling's scale of dx

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        constexpr int groups = fast::kGroups<WARPS>;
        // One block per partial row: the blocks launched are the partial rows written and summed.
        const int blocks =
            static_cast<int>(std::min<std::size_t>((rows + groups - 1) / groups, static_cast<std::size_t>(partials)));
        const bool cast = dsum != nullptr;
        const std::size_t shared = groups > 1 ? (cast ? 3 : 2) * hidden * sizeof(float) : 0;
        const DparamsTarget target{partial, blocks, dgamma, dbeta, param_dtype, dsum};
        const auto launch = [&](auto kernel) {
            kernel<<<static_cast<unsigned>(blocks), fast::kThreads<WARPS>, shared, stream>>>(
                dy, dy_dtype, static_cast<const T*>(x), mean, rstd, gamma, param_dtype, static_cast<int>(rows),
                static_cast<int>(hidden), static_cast<T*>(dx), static_cast<const T*>(dresidual), target, cast_out, cast_dtype, fresh);
        };
        if (cast && fresh.scale != nullptr) {
            launch(fast::layer_norm_backward<T, VECS, WARPS, true, false, true>);
        } else if (cast) {
            launch(fast::layer_norm_backward<T, VECS, WARPS, true>);
        } else {
            launch(fast::layer_norm_backward<T, VECS, WARPS, false>);
        }
    }
};

// The banded FP8 backward (layer_norm_backward_quantized): one block per partial row, bands of
// layer_norm_backward_band_rows rows, its stage after the partial sums in dynamic shared memory.
struct QuantizedBackwardLaunch {
    const LayerNormBackwardQuantizeCall& c;
    int partials;
    cudaStream_t stream;

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        const LayerNormBackwardCall& a = c.norm;
        const std::size_t rows = a.x.rows;
        const std::size_t hidden = a.x.cols;
        const fast::BandedGrid g = fast::banded_grid<WARPS>(rows, hidden, partials, 3);
        const DparamsTarget target{static_cast<float*>(a.workspace.data), g.blocks, a.dgamma.data, a.dbeta.data, a.gamma.dtype,
                                   static_cast<float*>(c.dbias.data)};
        fast::layer_norm_backward_quantized<T, VECS, WARPS><<<static_cast<unsigned>(g.blocks), fast::kThreads<WARPS>, g.shared, stream>>>(
            a.dy.data, a.dy.dtype, static_cast<const T*>(a.x.data), a.mean, a.rstd, a.gamma.data, a.gamma.dtype, static_cast<int>(rows),
            static_cast<int>(hidden), static_cast<T*>(a.dx.data), static_cast<const T*>(a.dresidual.data), target,
            static_cast<std::uint8_t*>(c.fp8.data), static_cast<std::uint8_t*>(c.fp8.transposed), c.fp8.scale, c.fp8.type, c.fp8.amax,
            g.band, g.pitch);
    }
};

}  // namespace

namespace {

void launch_layer_norm_forward(const LayerNormForwardCall& a, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_forward";
    const void* x = a.x.data;
    const DType x_dtype = a.x.dtype;
    const void* gamma = a.gamma.data;
    const void* beta = a.beta.data;
    const DType param_dtype = a.gamma.dtype;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    void* out = a.out.data;
    const DType out_dtype = a.out.dtype;
    const Fp8Output* fp8 = a.fp8.data != nullptr ? &a.fp8 : nullptr;
    const auto [q, q_t, scale, type, amax] = fp8_pointers(fp8);
    const CurrentScaleOut fresh{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
    FastShape shape = fast_shape(x_dtype, hidden, {x, gamma, beta, out, q});
    if (!layer_norm_fast_allows_transposed(hidden, q_t != nullptr)) shape = FastShape{};
    if (shape.warps > 0) {
        dispatch_fast(x_dtype, shape,
                      FastForwardLaunch<false>{x, gamma, beta, param_dtype, rows, hidden, a.eps, out, out_dtype, q, q_t, scale,
                                               type, amax, a.mean, a.rstd, stream, fresh});
    } else if (q_t != nullptr) {
        const auto bands = static_cast<unsigned>(std::min<std::size_t>((rows + kBandRows - 1) / kBandRows, kMaxGridX));
        layer_norm_forward_transposed_kernel<<<bands, kWarpsPerBlock * 32, 0, stream>>>(
            x, x_dtype, gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), a.eps, out, out_dtype, q, q_t,
            scale, type, amax, a.mean, a.rstd);
    } else {
        layer_norm_forward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
            x, x_dtype, gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), a.eps, out, out_dtype, q,
            scale, type, amax, a.mean, a.rstd, fresh);
    }
    check_last_launch(call);
}

void launch_layer_norm_backward(const LayerNormBackwardCall& a, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward";
    const void* dy = a.dy.data;
    const DType dy_dtype = a.dy.dtype;
    const void* x = a.x.data;
    const DType x_dtype = a.x.dtype;
    const void* gamma = a.gamma.data;
    const DType param_dtype = a.gamma.dtype;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    void* dx = a.dx.data;
    const void* dresidual = a.dresidual.data;
    void* dgamma = a.dgamma.data;
    void* dbeta = a.dbeta.data;
    const int h = static_cast<int>(hidden);
    const int partials = norm_backward_chunks(rows);
    auto* partial = static_cast<float*>(a.workspace.data);
    const FastShape shape = fast_shape(x_dtype, hidden, {dy, x, gamma, dx, dresidual});
    if (shape.warps > 0) {
        dispatch_fast(x_dtype, shape,
                      BackwardLaunch{dy, dy_dtype, x, a.mean, a.rstd, gamma, param_dtype, rows, hidden, dx, dresidual, partial,
                                     partials, dgamma, dbeta, stream});
        check_last_launch(call);
        return;
    }
    layer_norm_dx_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
        dy, dy_dtype, x, x_dtype, a.mean, a.rstd, gamma, param_dtype, static_cast<int>(rows), h, dx, dresidual);
    check_last_launch(call);
    const std::size_t column_blocks = (hidden + kColumnThreads - 1) / kColumnThreads;
    const bool in_kernel = column_sum_in_kernel(column_blocks);
    const DparamsTarget target{partial, partials, in_kernel ? dgamma : nullptr, dbeta, param_dtype};
    layer_norm_dparams_partial_kernel<<<dim3(static_cast<unsigned>(column_blocks), static_cast<unsigned>(partials)),
                                        kColumnThreads, 0, stream>>>(dy, dy_dtype, x, x_dtype, a.mean, a.rstd,
                                                                     static_cast<int>(rows), h, target);
    check_last_launch(call);
    if (!in_kernel) {
        layer_norm_dparams_final_kernel<<<static_cast<unsigned>((hidden + 31) / 32), 256, 0, stream>>>(
            partial, h, partials, dgamma, dbeta, param_dtype);
        check_last_launch(call);
    }
}

// The backward with dx's copy and column sums: one fast launch where it fits, else the plain backward and then
// cast_dbias over dx, its workspace after the backward's partial rows.
void launch_layer_norm_backward_cast_dbias(const LayerNormBackwardCastCall& c, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward_cast_dbias";
    const LayerNormBackwardCall& a = c.norm;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const int partials = norm_backward_chunks(rows);
    auto* partial = static_cast<float*>(a.workspace.data);
    const FastShape shape = fast_shape(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, c.grad.data});
    if (shape.warps > 0) {
        BackwardLaunch launch{a.dy.data, a.dy.dtype, a.x.data,     a.mean,       a.rstd,       a.gamma.data, a.gamma.dtype, rows, hidden,
                              a.dx.data, a.dresidual.data, partial, partials, a.dgamma.data, a.dbeta.data, stream};
        launch.cast_out = c.grad.data;
        launch.cast_dtype = c.grad.dtype;
        launch.dsum = static_cast<float*>(c.dbias.data);
        launch.fresh = CurrentScaleOut{c.fresh.numerator, c.fresh.scale, c.fresh.scale_inv, c.fresh.staging};
        dispatch_fast(a.x.dtype, shape, launch);
        check_last_launch(call);
        return;
    }
    launch_layer_norm_backward(a, stream);
    const Tensor dx = input(a.dx.data, a.x.dtype, rows, hidden);
    kernels::cast_dbias(dx, c.grad, c.dbias, after_backward_rows(a), Stream{stream});
    if (c.fresh.scale != nullptr) {  // the plain kernels take no amax: current scaling's step of its own
        const auto scalar = [](float* p) { return p != nullptr ? input(p, DType::Float32, 1, 1) : Tensor{}; };
        kernels::abs_max_current_scale(dx, c.fresh.numerator, scalar(c.fresh.scale), scalar(c.fresh.scale_inv), scalar(c.fresh.staging),
                                       Stream{stream});
    }
}

// The FP8 form: one banded launch where the fast kernel fits and rows are at most kLayerNormBackwardFp8MaxHidden long,
// else the plain backward and then cast_transpose_dbias_to_fp8 over dx, its workspace after the backward's rows.
void launch_layer_norm_backward_quantize_dbias(const LayerNormBackwardQuantizeCall& c, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward_quantize_dbias";
    const LayerNormBackwardCall& a = c.norm;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const int partials = norm_backward_chunks(rows);
    FastShape shape = fast_shape(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, c.fp8.data});
    if (hidden > kLayerNormBackwardFp8MaxHidden) shape = FastShape{};
    if (shape.warps > 0) {
        dispatch_fast(a.x.dtype, shape, QuantizedBackwardLaunch{c, partials, stream});
        check_last_launch(call);
        return;
    }
    launch_layer_norm_backward(a, stream);
    kernels::cast_transpose_dbias_to_fp8(input(a.dx.data, a.x.dtype, rows, hidden), fp8_output_tensor(c.fp8, rows, hidden), c.dbias,
                                         after_backward_rows(a), Stream{stream});
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void layer_norm_backward_quantize_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                        const Tensor& dbeta, const Tensor& fp8, const Tensor& dbias, const Workspace& workspace,
                                        Stream stream) {
    const auto call = detail::layer_norm_backward_quantize_call("tewb::kernels::layer_norm_backward_quantize_dbias", dy, x, mean,
                                                                rstd, gamma, dx, dresidual, dgamma, dbeta, fp8, dbias, workspace);
    if (call) detail::launch_layer_norm_backward_quantize_dbias(*call, detail::cuda_stream(stream));
}

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out,
                        const Tensor& fp8, const Tensor& mean, const Tensor& rstd, Stream stream) {
    const auto call = detail::layer_norm_forward_call("tewb::kernels::layer_norm_forward", x, gamma, beta, eps, out, fp8, mean, rstd);
    if (call) detail::launch_layer_norm_forward(*call, detail::cuda_stream(stream));
}

void layer_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out,
                                      const CurrentScaleTarget& target, const Tensor& mean, const Tensor& rstd, Stream stream) {
    const auto call = detail::layer_norm_forward_current_scale_call("tewb::kernels::layer_norm_forward_current_scale", x, gamma,
                                                                    beta, eps, out, target, mean, rstd);
    if (call) {
        detail::launch_layer_norm_forward(*call, detail::cuda_stream(stream));
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                         const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta, const Workspace& workspace, Stream stream) {
    const auto call = detail::layer_norm_backward_call("tewb::kernels::layer_norm_backward", dy, x, mean, rstd, gamma, dx,
                                                       Tensor{}, dgamma, dbeta, workspace);
    if (call) detail::launch_layer_norm_backward(*call, detail::cuda_stream(stream));
}

void layer_norm_backward_cast_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                    const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                                    const Tensor& grad, const Tensor& dbias, const Workspace& workspace, Stream stream) {
    const auto call = detail::layer_norm_backward_cast_call("tewb::kernels::layer_norm_backward_cast_dbias", dy, x, mean, rstd,
                                                            gamma, dx, dresidual, dgamma, dbeta, grad, dbias, workspace);
    if (call) detail::launch_layer_norm_backward_cast_dbias(*call, detail::cuda_stream(stream));
}

void layer_norm_backward_cast_dbias_current_scale(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                                  const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                                  const Tensor& dbeta, const CurrentScaleTarget& target, const Tensor& dbias,
                                                  const Workspace& workspace, Stream stream) {
    const auto call = detail::layer_norm_backward_cast_current_scale_call("tewb::kernels::layer_norm_backward_cast_dbias_current_scale",
                                                                          dy, x, mean, rstd, gamma, dx, dresidual, dgamma, dbeta,
                                                                          target, dbias, workspace);
    if (call) {
        detail::launch_layer_norm_backward_cast_dbias(*call, detail::cuda_stream(stream));
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void layer_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                             const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                             const Workspace& workspace, Stream stream) {
    const auto call = detail::layer_norm_backward_call("tewb::kernels::layer_norm_backward_add", dy, x, mean, rstd, gamma, dx,
                                                       dresidual, dgamma, dbeta, workspace);
    if (call) detail::launch_layer_norm_backward(*call, detail::cuda_stream(stream));
}

}  // namespace tewb::kernels
