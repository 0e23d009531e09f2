// RMSNorm forward and backward. Both run on LayerNorm's fast kernels (layer_norm_fast.cuh, kRms: no mean, no beta,
// no dbeta) where their shape rules hold (fast_dispatch.cuh; the forward with the FP8 transposed copy for rows of at
// most 4096, layer_norm_rule.h): the forward reads a row once into registers (16-byte loads, the transposed copy from
// a shared-memory stage of bands of rows in the same launch, fast_forward_launch.cuh); the backward reads dy and x
// once, keeps dgamma's partial rows in registers and finishes them in the last blocks to arrive: one launch each.
// Elsewhere the plain kernels of the LayerNorm (normalization.cu) without the mean and the bias: one warp per row (4
// rows per block of 128 threads); the forward's FP8 transposed copy from a shared-memory stage in bands of 32 rows in
// the same launch (staged_transpose.cuh); the plain backward's dx, then dgamma's partial rows over chunks of rows,
// finished by the last block of each 256-column tile (column_sum.cuh), or by launch_column_sum past
// kColumnSumCounters tiles, in one fixed order. The plain kernels and the fast forward spell out their float32
// operations (__fmaf_rn where a multiply-add is fused, __fmul_rn where a product must be rounded on its own, 1 / sqrtf)
// so that nvcc's contraction cannot move them away from the host twins (rms_norm_host.cpp for the plain kernels,
// normalization_host.cpp for the fast ones, whose order they share with LayerNorm's); the fast backward is LayerNorm's
// arithmetic, with its twin's order.
#include <algorithm>
#include <cstdint>

#include "amax/current_scale_epilogue.cuh"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/column_sum_rule.h"
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
constexpr int kBandRows = 32;
constexpr int kBandCols = 32;
constexpr int kBandPitch = staged_transpose_pitch(kBandCols);

// 1 / sqrt(mean(x^2) + eps) of a row by one warp: lane l adds the squares of columns l, l + 32, ... (fused),
// then the warp's butterfly. sqrtf and the division are correctly rounded (no fast-math in this build).
__device__ inline float warp_row_rstd(const void* __restrict__ x, DType x_dtype, std::size_t base, int hidden, float eps,
                                      int lane) {
    float squares = 0.0f;
    for (int c = lane; c < hidden; c += 32) {
        const float v = load(x, x_dtype, base + c);
        squares = __fmaf_rn(v, v, squares);
    }
    return 1.0f / sqrtf(warp_sum(squares) / hidden + eps);
}

// fresh.scale set (q null then): current scaling's scale of out from the largest |y| as out stores it.
__global__ void rms_norm_forward_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                        DType param_dtype, int rows, int hidden, float eps, void* out, DType out_dtype,
                                        std::uint8_t* q, const float* scale, Fp8Type type, float* amax,
                                        float* __restrict__ rstd_out, CurrentScaleOut fresh) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    unsigned local = 0;
    if (row < rows) {  // no early return: every thread takes part in the amax combine
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        const float rstd = warp_row_rstd(x, x_dtype, base, hidden, eps, lane);
        const float s = q != nullptr ? *scale : 1.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float y = __fmul_rn(load(x, x_dtype, base + c), rstd) * load(gamma, param_dtype, c);
            if (out != nullptr) store(out, out_dtype, base + c, y);
            if (q != nullptr) {
                q[base + c] = fp8_from_float(y * s, type);
                local = max(local, abs_bits(y));
            } else if (fresh.scale != nullptr) {
                local = max(local, abs_bits(as_stored_in(y, out_dtype)));
            }
        }
        if (lane == 0) rstd_out[row] = rstd;
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (q != nullptr) {
        combine_block_amax(local, amax);
    } else {
        finish_current_scale(local, fresh);
    }
}

// With the FP8 output's transposed copy q_t [hidden, rows]: a block of 4 warps owns bands of kBandRows
// consecutive rows (grid-stride). Warp w takes rows w, w + 4, ... of the band for rstd (kept in shared
// memory); then the band goes 32 columns at a time: y as rms_norm_forward_kernel computes it, to out and q,
// its FP8 bytes staged and written to q_t as runs of bytes per column (write_staged_transpose).
__global__ void rms_norm_forward_transposed_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                                   DType param_dtype, int rows, int hidden, float eps, void* out, DType out_dtype,
                                                   std::uint8_t* __restrict__ q, std::uint8_t* __restrict__ q_t,
                                                   const float* scale, Fp8Type type, float* amax, float* __restrict__ rstd_out) {
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
            const float rstd = warp_row_rstd(x, x_dtype, static_cast<std::size_t>(r0 + i) * hidden, hidden, eps, lane);
            if (lane == 0) {
                band_rstd[i] = rstd;
                rstd_out[r0 + i] = rstd;
            }
        }
        __syncthreads();
        for (int c0 = 0; c0 < hidden; c0 += kBandCols) {
            const int c = c0 + lane;
            if (c < hidden) {
                const float g = load(gamma, param_dtype, c);
                for (int i = warp; i < kBandRows && r0 + i < rows; i += kWarpsPerBlock) {
                    const std::size_t at = static_cast<std::size_t>(r0 + i) * hidden + c;
                    const float y = __fmul_rn(load(x, x_dtype, at), band_rstd[i]) * g;
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
        // band_rstd is rewritten by the next band only after every warp passed the last tile's barrier.
    }
    combine_block_amax(local, amax);
}

// dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * gamma and xhat = x * rstd, one warp per row; dresidual
// (when not null) added before the store; cast_out (when not null): dx as stored, in cast_dtype (rms_norm_backward_cast).
__global__ void rms_norm_dx_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x, DType x_dtype,
                                   const float* __restrict__ rstd, const void* __restrict__ gamma, DType param_dtype, int rows,
                                   int hidden, void* dx, const void* dresidual, void* cast_out, DType cast_dtype) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows) return;
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    const float r = rstd[row];
    float sum_gx = 0.0f;
    for (int c = lane; c < hidden; c += 32) {
        const float g = __fmul_rn(load(dy, dy_dtype, base + c), load(gamma, param_dtype, c));
        const float xhat = __fmul_rn(load(x, x_dtype, base + c), r);
        sum_gx = __fmaf_rn(g, xhat, sum_gx);
    }
    const float mean_gx = warp_sum(sum_gx) / hidden;
    for (int c = lane; c < hidden; c += 32) {
        const float g = __fmul_rn(load(dy, dy_dtype, base + c), load(gamma, param_dtype, c));
        const float xhat = __fmul_rn(load(x, x_dtype, base + c), r);
        float v = __fmul_rn(r, g - __fmul_rn(xhat, mean_gx));
        if (dresidual != nullptr) v += load(dresidual, x_dtype, base + c);
        store(dx, x_dtype, base + c, v);
        if (cast_out != nullptr) store(cast_out, cast_dtype, base + c, as_stored_in(v, x_dtype));
    }
}

// Block (x, y) sums dy * x * rstd over the rows of chunk y (of gridDim.y) for the columns of tile x into
// partial row y; the tile's last block then writes dgamma for those columns unless target.out is null.
__global__ void rms_norm_dgamma_partial_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x,
                                               DType x_dtype, const float* __restrict__ rstd, int rows, int hidden,
                                               ColumnSumTarget target) {
    const int chunks = static_cast<int>(gridDim.y);
    const int c0 = blockIdx.x * blockDim.x;
    const int c = c0 + threadIdx.x;
    if (c < hidden) {  // no early return: every thread takes part in the finish
        // 64-bit: near INT_MAX rows the last chunk's end would wrap and its rows be dropped.
        const long long rows_per_chunk = (static_cast<long long>(rows) + chunks - 1) / chunks;
        const long long first = static_cast<long long>(blockIdx.y) * rows_per_chunk;
        const long long last = min(static_cast<long long>(rows), first + rows_per_chunk);
        float sum = 0.0f;
        for (long long row = first; row < last; ++row) {
            const std::size_t at = static_cast<std::size_t>(row) * hidden + c;
            sum = __fmaf_rn(__fmul_rn(load(dy, dy_dtype, at), load(x, x_dtype, at)), rstd[row], sum);
        }
        target.partial[static_cast<std::size_t>(blockIdx.y) * hidden + c] = sum;
    }
    finish_column_sum(target, static_cast<int>(blockIdx.x), chunks, hidden, c0, min(static_cast<int>(blockDim.x), hidden - c0));
}

unsigned row_blocks(std::size_t rows) {
    return static_cast<unsigned>(std::min<std::size_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGridX));
}

void launch_rms_norm_forward(const RmsNormForwardCall& a, cudaStream_t stream) {
    const Fp8Output* fp8 = a.fp8.data != nullptr ? &a.fp8 : nullptr;
    const auto [q, q_t, scale, type, amax] = fp8_pointers(fp8);
    const CurrentScaleOut fresh{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
    FastShape shape = fast_shape(a.x.dtype, a.x.cols, {a.x.data, a.gamma.data, a.out.data, q});
    if (!layer_norm_fast_allows_transposed(a.x.cols, q_t != nullptr)) shape = FastShape{};
    if (shape.warps > 0) {
        dispatch_fast(a.x.dtype, shape,
                      FastForwardLaunch<true>{a.x.data, a.gamma.data, nullptr, a.gamma.dtype, a.x.rows, a.x.cols, a.eps,
                                              a.out.data, a.out.dtype, q, q_t, scale, type, amax, nullptr, a.rstd, stream, fresh});
        check_last_launch("tewb::kernels::rms_norm_forward");
        return;
    }
    const int rows = static_cast<int>(a.x.rows);
    const int hidden = static_cast<int>(a.x.cols);
    if (q_t != nullptr) {
        const auto bands = static_cast<unsigned>(std::min<std::size_t>((a.x.rows + kBandRows - 1) / kBandRows, kMaxGridX));
        rms_norm_forward_transposed_kernel<<<bands, kWarpsPerBlock * 32, 0, stream>>>(
            a.x.data, a.x.dtype, a.gamma.data, a.gamma.dtype, rows, hidden, a.eps, a.out.data, a.out.dtype, q, q_t, scale, type,
            amax, a.rstd);
    } else {
        rms_norm_forward_kernel<<<row_blocks(a.x.rows), kWarpsPerBlock * 32, 0, stream>>>(
            a.x.data, a.x.dtype, a.gamma.data, a.gamma.dtype, rows, hidden, a.eps, a.out.data, a.out.dtype, q, scale, type, amax,
            a.rstd, fresh);
    }
    check_last_launch("tewb::kernels::rms_norm_forward");
}

// The fast backward: one block per partial row (at most norm_backward_chunks), dgamma's rows alone; with a.fresh set,
// the form that also writes dx's scale (kFresh: rms_norm_backward_current_scale).
struct FastBackwardLaunch {
    const RmsNormBackwardCall& a;
    cudaStream_t stream;

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        constexpr int groups = fast::kGroups<WARPS>;
        const std::size_t rows = a.x.rows;
        const std::size_t hidden = a.x.cols;
        const int blocks = static_cast<int>(
            std::min<std::size_t>((rows + groups - 1) / groups, static_cast<std::size_t>(norm_backward_chunks(rows))));
        const std::size_t shared = groups > 1 ? hidden * sizeof(float) : 0;
        const DparamsTarget target{static_cast<float*>(a.workspace.data), blocks, a.dgamma.data, nullptr, a.gamma.dtype};
        const CurrentScaleOut fresh{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
        const auto launch = [&](auto kernel) {
            kernel<<<static_cast<unsigned>(blocks), fast::kThreads<WARPS>, shared, stream>>>(
                a.dy.data, a.dy.dtype, static_cast<const T*>(a.x.data), nullptr, a.rstd, a.gamma.data, a.gamma.dtype,
                static_cast<int>(rows), static_cast<int>(hidden), static_cast<T*>(a.dx.data), static_cast<const T*>(a.dresidual.data),
                target, a.grad.data, a.grad.dtype, fresh);
        };
        if (fresh.scale != nullptr) {
            launch(fast::layer_norm_backward<T, VECS, WARPS, false, true, true>);
        } else if (a.grad.data != nullptr) {  // rms_norm_backward_cast: dx's copy, no column sums
            launch(fast::layer_norm_backward<T, VECS, WARPS, true, true>);
        } else {
            launch(fast::layer_norm_backward<T, VECS, WARPS, false, true>);
        }
    }
};

// rms_norm_backward_quantize on LayerNorm's banded FP8 backward (kRms): bands of layer_norm_backward_band_rows rows, one
// block per partial row at most, dgamma's sums [1][hidden] before the stage where a block has several groups.
struct QuantizedBackwardLaunch {
    const RmsNormBackwardCall& a;
    cudaStream_t stream;

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        const std::size_t rows = a.x.rows;
        const std::size_t hidden = a.x.cols;
        const fast::BandedGrid g = fast::banded_grid<WARPS>(rows, hidden, norm_backward_chunks(rows), 1);
        const DparamsTarget target{static_cast<float*>(a.workspace.data), g.blocks, a.dgamma.data, nullptr, a.gamma.dtype};
        fast::layer_norm_backward_quantized<T, VECS, WARPS, true><<<static_cast<unsigned>(g.blocks), fast::kThreads<WARPS>, g.shared, stream>>>(
            a.dy.data, a.dy.dtype, static_cast<const T*>(a.x.data), nullptr, a.rstd, a.gamma.data, a.gamma.dtype, static_cast<int>(rows),
            static_cast<int>(hidden), static_cast<T*>(a.dx.data), static_cast<const T*>(a.dresidual.data), target,
            static_cast<std::uint8_t*>(a.fp8.data), static_cast<std::uint8_t*>(a.fp8.transposed), a.fp8.scale, a.fp8.type, a.fp8.amax,
            g.band, g.pitch);
    }
};

// The FP8 form past the banded kernel: cast_transpose_to_fp8 over dx after the backward's launches.
void cast_dx_to_fp8(const RmsNormBackwardCall& a, cudaStream_t stream) {
    Tensor out = input(a.fp8.data, fp8_dtype(a.fp8.type), a.x.rows, a.x.cols);
    out.transposed = a.fp8.transposed;
    out.scale = const_cast<float*>(a.fp8.scale);
    out.amax = a.fp8.amax;
    kernels::cast_transpose_to_fp8(a.dx, out, Stream{stream});
}

void launch_rms_norm_backward(const RmsNormBackwardCall& a, cudaStream_t stream, const char* call) {
    if (a.fp8.data != nullptr) {  // rms_norm_backward_quantize: the banded kernel where it fits
        FastShape shape = fast_shape(a.x.dtype, a.x.cols, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, a.fp8.data});
        if (a.x.cols > kLayerNormBackwardFp8MaxHidden) shape = FastShape{};
        if (shape.warps > 0) {
            dispatch_fast(a.x.dtype, shape, QuantizedBackwardLaunch{a, stream});
            check_last_launch(call);
            return;
        }
    }
    // Elsewhere the backward as rms_norm_backward_add runs it (fast where its rule holds; the copy's pointer counts), and
    // the FP8 form's cast after it.
    const FastShape shape = fast_shape(a.x.dtype, a.x.cols, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, a.grad.data});
    if (shape.warps > 0) {
        dispatch_fast(a.x.dtype, shape, FastBackwardLaunch{a, stream});
        check_last_launch(call);
        if (a.fp8.data != nullptr) cast_dx_to_fp8(a, stream);
        return;
    }
    const int rows = static_cast<int>(a.x.rows);
    const int hidden = static_cast<int>(a.x.cols);
    rms_norm_dx_kernel<<<row_blocks(a.x.rows), kWarpsPerBlock * 32, 0, stream>>>(a.dy.data, a.dy.dtype, a.x.data, a.x.dtype,
                                                                                 a.rstd, a.gamma.data, a.gamma.dtype, rows,
                                                                                 hidden, a.dx.data, a.dresidual.data, a.grad.data,
                                                                                 a.grad.dtype);
    check_last_launch(call);
    const int chunks = norm_backward_chunks(a.x.rows);
    auto* partial = static_cast<float*>(a.workspace.data);
    const std::size_t column_blocks = (a.x.cols + kColumnThreads - 1) / kColumnThreads;
    const bool in_kernel = column_sum_in_kernel(column_blocks);
    const ColumnSumTarget target{partial, in_kernel ? a.dgamma.data : nullptr, a.gamma.dtype};
    rms_norm_dgamma_partial_kernel<<<dim3(static_cast<unsigned>(column_blocks), static_cast<unsigned>(chunks)), kColumnThreads, 0,
                                     stream>>>(a.dy.data, a.dy.dtype, a.x.data, a.x.dtype, a.rstd, rows, hidden, target);
    check_last_launch(call);
    if (!in_kernel) launch_column_sum(partial, chunks, a.x.cols, a.dgamma.data, a.gamma.dtype, stream, call);
    // The plain kernels have no hand-off: dx's scale in abs_max_current_scale's launch after them.
    if (a.fresh.scale != nullptr) {
        const auto scalar = [](float* p) { return p != nullptr ? input(p, DType::Float32, 1, 1) : Tensor{}; };
        kernels::abs_max_current_scale(a.dx, a.fresh.numerator, scalar(a.fresh.scale), scalar(a.fresh.scale_inv),
                                       scalar(a.fresh.staging), Stream{stream});
    }
    // Nor a cast: the FP8 gradient in cast_transpose_to_fp8's launch after them.
    if (a.fp8.data != nullptr) cast_dx_to_fp8(a, stream);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void rms_norm_forward(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out, const Tensor& fp8, const Tensor& rstd,
                      Stream stream) {
    const auto call = detail::rms_norm_forward_call("tewb::kernels::rms_norm_forward", x, gamma, eps, out, fp8, rstd);
    if (call) detail::launch_rms_norm_forward(*call, detail::cuda_stream(stream));
}

void rms_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out,
                                    const CurrentScaleTarget& target, const Tensor& rstd, Stream stream) {
    const auto call = detail::rms_norm_forward_current_scale_call("tewb::kernels::rms_norm_forward_current_scale", x, gamma, eps, out,
                                                                  target, rstd);
    if (call) {
        detail::launch_rms_norm_forward(*call, detail::cuda_stream(stream));
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                       const Tensor& dgamma, const Workspace& workspace, Stream stream) {
    const auto call =
        detail::rms_norm_backward_call("tewb::kernels::rms_norm_backward", dy, x, rstd, gamma, dx, Tensor{}, dgamma, workspace);
    if (call) detail::launch_rms_norm_backward(*call, detail::cuda_stream(stream), "tewb::kernels::rms_norm_backward");
}

void rms_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                           const Tensor& dresidual, const Tensor& dgamma, const Workspace& workspace, Stream stream) {
    const auto call = detail::rms_norm_backward_call("tewb::kernels::rms_norm_backward_add", dy, x, rstd, gamma, dx, dresidual,
                                                     dgamma, workspace);
    if (call) detail::launch_rms_norm_backward(*call, detail::cuda_stream(stream), "tewb::kernels::rms_norm_backward_add");
}

void rms_norm_backward_cast(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                            const Tensor& dresidual, const Tensor& dgamma, const Tensor& grad, const Workspace& workspace,
                            Stream stream) {
    constexpr const char* kCall = "tewb::kernels::rms_norm_backward_cast";
    const auto call = detail::rms_norm_backward_cast_call(kCall, dy, x, rstd, gamma, dx, dresidual, dgamma, grad, workspace);
    if (call) detail::launch_rms_norm_backward(*call, detail::cuda_stream(stream), kCall);
}

void rms_norm_backward_quantize(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                const Tensor& dresidual, const Tensor& dgamma, const Tensor& fp8, const Workspace& workspace,
                                Stream stream) {
    constexpr const char* kCall = "tewb::kernels::rms_norm_backward_quantize";
    const auto call = detail::rms_norm_backward_quantize_call(kCall, dy, x, rstd, gamma, dx, dresidual, dgamma, fp8, workspace);
    if (call) detail::launch_rms_norm_backward(*call, detail::cuda_stream(stream), kCall);
}

void rms_norm_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                     const Tensor& dresidual, const Tensor& dgamma, const CurrentScaleTarget& target,
                                     const Workspace& workspace, Stream stream) {
    const auto call = detail::rms_norm_backward_current_scale_call("tewb::kernels::rms_norm_backward_current_scale", dy, x, rstd,
                                                                   gamma, dx, dresidual, dgamma, target, workspace);
    if (call) {
        detail::launch_rms_norm_backward(*call, detail::cuda_stream(stream), "tewb::kernels::rms_norm_backward_current_scale");
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels
