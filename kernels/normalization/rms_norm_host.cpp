// RMSNorm on the host in the float32 operations of rms_norm.cu: a warp per row (column c summed by lane
// c % 32, then the warp's butterfly), the kernel's explicit fused multiply-adds as std::fma and its
// separately rounded products as plain products (the host build does not contract them: no FMA target).
// Where rms_norm.cu runs LayerNorm's fast kernels, their order (rms_norm_fast_host.h, normalization_host.cpp): the
// forward's sum of squares, the whole backward.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "amax/current_scale_host.h"
#include "common/column_sum_rule.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "normalization/normalization_call.h"
#include "normalization/rms_norm_fast_host.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels::host {

using detail::Fp8Output;

namespace {

// rms_norm.cu's constants.
constexpr std::size_t kColumnThreads = 256;  // columns of a dgamma block: its column tile
constexpr std::size_t kWarpSize = 32;

// The warp's sum: lane l holds the running sum of its columns l, l + 32, ...; warp_sum's xor butterfly
// leaves every lane with the same value (float addition commutes).
float butterfly_sum(std::array<float, kWarpSize> v) {
    for (std::size_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
        std::array<float, kWarpSize> next{};
        for (std::size_t lane = 0; lane < kWarpSize; ++lane) next[lane] = v[lane] + v[lane ^ offset];
        v = next;
    }
    return v[0];
}

// The sum over c of a[c] * b[c] as one warp of the kernel makes it (lane += a * b fused).
float warp_dot(const float* a, const float* b, std::size_t n) {
    std::array<float, kWarpSize> lanes{};
    for (std::size_t c = 0; c < n; ++c) lanes[c % kWarpSize] = std::fma(a[c], b[c], lanes[c % kWarpSize]);
    return butterfly_sum(lanes);
}

std::size_t partial_rows(std::size_t rows) {
    return static_cast<std::size_t>(detail::norm_backward_chunks(rows));
}

}  // namespace

namespace {

// Both forward entry points' work after their checks.
void forward(const detail::RmsNormForwardCall* call) {
    const float eps = call->eps;
    const Tensor& x_ref = call->x;
    const Tensor& gamma_ref = call->gamma;
    const Tensor& out_ref = call->out;
    const Fp8Output* fp8 = call->fp8.data != nullptr ? &call->fp8 : nullptr;
    float* rstd = call->rstd;
    const std::size_t rows = x_ref.rows;
    const std::size_t hidden = x_ref.cols;
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    std::vector<float> g(hidden);
    detail::load_floats(gamma_ref.data, gamma_ref.dtype, 0, hidden, g.data());
    const auto count = static_cast<float>(static_cast<int>(hidden));  // the kernel divides by its int hidden
    std::atomic<std::uint32_t> amax_bits{0};
    const auto fast_rstd = rms_norm_forward_fast_rstd(*call);
    detail::StoredAmax fresh_amax(call->fresh, out_ref.data, out_ref.dtype);

    detail::parallel_for(rows, hidden * 3, [&](std::size_t first, std::size_t last) {
        std::vector<float> xs(hidden), y(hidden);
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * hidden;
            detail::load_floats(x_ref.data, x_ref.dtype, base, hidden, xs.data());
            const float r = fast_rstd ? fast_rstd(xs.data()) : 1.0f / std::sqrt(warp_dot(xs.data(), xs.data(), hidden) / count + eps);
            for (std::size_t c = 0; c < hidden; ++c) y[c] = xs[c] * r * g[c];
            if (out_ref.data != nullptr) detail::store_floats(out_ref.data, out_ref.dtype, base, hidden, y.data());
            if (q != nullptr) {
                for (std::size_t c = 0; c < hidden; ++c) {
                    q[base + c] = detail::float_to_fp8(y[c] * s, type);
                    local = std::max(local, detail::abs_bits(y[c]));
                }
            }
            stored_local = std::max(stored_local, fresh_amax.of(base, hidden, y.data()));
            rstd[row] = r;
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    fresh_amax.apply();
    if (q != nullptr && fp8->amax != nullptr) {
        *fp8->amax = detail::bits_float(std::max(detail::float_bits(*fp8->amax), amax_bits.load()));
    }
    // On the GPU the transposed copy comes from the forward kernel's own launch (banded, from shared memory).
    if (q != nullptr && fp8->transposed != nullptr) {
        detail::transpose_bytes(q, rows, hidden, static_cast<std::uint8_t*>(fp8->transposed));
    }
    detail::note_launch();
}

}  // namespace

void rms_norm_forward(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out, const Tensor& fp8, const Tensor& rstd,
                      Stream) {
    const auto call = detail::rms_norm_forward_call("tewb::kernels::host::rms_norm_forward", x, gamma, eps, out, fp8, rstd);
    if (call) forward(&*call);
}

void rms_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, float eps, const Tensor& out,
                                    const CurrentScaleTarget& target, const Tensor& rstd, Stream stream) {
    const auto call = detail::rms_norm_forward_current_scale_call("tewb::kernels::host::rms_norm_forward_current_scale", x, gamma,
                                                                  eps, out, target, rstd);
    if (call) {
        forward(&*call);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

namespace {

using detail::RmsNormBackwardCall;

// rms_norm_dx_kernel, row by row, with dresidual added when set.
void backward_dx(const RmsNormBackwardCall& a, const std::vector<float>& gam) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const auto count = static_cast<float>(static_cast<int>(hidden));
    const void* dresidual = a.dresidual.data;
    detail::parallel_for(rows, hidden * 5, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden), g(hidden), xhat(hidden), skip(dresidual != nullptr ? hidden : 0);
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * hidden;
            detail::load_floats(a.dy.data, a.dy.dtype, base, hidden, d.data());
            detail::load_floats(a.x.data, a.x.dtype, base, hidden, xs.data());
            const float r = a.rstd[row];
            for (std::size_t c = 0; c < hidden; ++c) {
                g[c] = d[c] * gam[c];
                xhat[c] = xs[c] * r;
            }
            const float mean_gx = warp_dot(g.data(), xhat.data(), hidden) / count;
            for (std::size_t c = 0; c < hidden; ++c) {
                const float product = xhat[c] * mean_gx;
                xs[c] = r * (g[c] - product);
            }
            if (dresidual != nullptr) {  // the skip connection's gradient, added before the store (may alias dx)
                detail::load_floats(dresidual, a.x.dtype, base, hidden, skip.data());
                for (std::size_t c = 0; c < hidden; ++c) xs[c] += skip[c];
            }
            detail::store_floats(a.dx.data, a.x.dtype, base, hidden, xs.data());
        }
    });
}

// rms_norm_dgamma_partial_kernel: chunk k sums rows [k * per_chunk, (k + 1) * per_chunk) in order into
// partial row k; then each column over the partial rows in order from 0.0f (finish_column_sum, or
// launch_column_sum past the arrival counters: the same order).
void backward_dgamma(const RmsNormBackwardCall& a) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const std::size_t partials = partial_rows(rows);
    const std::size_t per_chunk = (rows + partials - 1) / partials;
    auto* partial = static_cast<float*>(a.workspace.data);
    detail::parallel_for(partials, per_chunk * hidden * 2, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden);
        for (std::size_t k = first; k < last; ++k) {
            float* sums = partial + k * hidden;
            std::fill_n(sums, hidden, 0.0f);
            for (std::size_t row = k * per_chunk; row < std::min(rows, (k + 1) * per_chunk); ++row) {
                detail::load_floats(a.dy.data, a.dy.dtype, row * hidden, hidden, d.data());
                detail::load_floats(a.x.data, a.x.dtype, row * hidden, hidden, xs.data());
                const float r = a.rstd[row];
                for (std::size_t c = 0; c < hidden; ++c) sums[c] = std::fma(d[c] * xs[c], r, sums[c]);
            }
        }
    });
    std::vector<float> total(hidden, 0.0f);
    for (std::size_t k = 0; k < partials; ++k) {
        for (std::size_t c = 0; c < hidden; ++c) total[c] += partial[k * hidden + c];
    }
    detail::store_floats(a.dgamma.data, a.gamma.dtype, 0, hidden, total.data());
}

// With a.fresh set (rms_norm_backward_current_scale): dx's scale from its largest |value| as stored, in the fast kernel's
// one launch (its last block) or in abs_max_current_scale's launch after the plain ones. With a.grad set
// (rms_norm_backward_cast): dx's copy from the same launch either way. With a.fp8 set (rms_norm_backward_quantize): dx's
// FP8 bytes from the banded kernel (rms_norm_backward_banded), or cast_transpose_to_fp8's launch after the backward's
// (fast or plain) where that kernel does not run.
void backward(const RmsNormBackwardCall& a) {
    const bool banded = rms_norm_backward_banded(a);  // the FP8 bytes written too
    const bool fast = banded || rms_norm_backward_fast(a);
    if (!fast) {
        std::vector<float> gam(a.x.cols);
        detail::load_floats(a.gamma.data, a.gamma.dtype, 0, a.x.cols, gam.data());
        backward_dx(a, gam);
        backward_dgamma(a);
        detail::note_launch();  // the dx kernel
        const int launches = detail::column_sum_launches((a.x.cols + kColumnThreads - 1) / kColumnThreads);
        for (int launch = 0; launch < launches; ++launch) detail::note_launch();
    }
    if (a.grad.data != nullptr) {  // rms_norm_backward_cast: dx as stored in grad's dtype, in the same launch either way
        const std::size_t hidden = a.x.cols;
        detail::parallel_for(a.x.rows, hidden * 2, [&](std::size_t first, std::size_t last) {
            std::vector<float> row(hidden);
            for (std::size_t r = first; r < last; ++r) {
                detail::load_floats(a.dx.data, a.x.dtype, r * hidden, hidden, row.data());
                detail::store_floats(a.grad.data, a.grad.dtype, r * hidden, hidden, row.data());
            }
        });
    }
    if (a.fp8.data != nullptr && !banded) {  // past the banded kernel: cast_transpose_to_fp8's launch after the backward
        Tensor out = input(a.fp8.data, fp8_dtype(a.fp8.type), a.x.rows, a.x.cols);
        out.transposed = a.fp8.transposed;
        out.scale = const_cast<float*>(a.fp8.scale);
        out.amax = a.fp8.amax;
        host::cast_transpose_to_fp8(input(a.dx.data, a.x.dtype, a.x.rows, a.x.cols), out, Stream{});
    }
    if (a.fresh.scale == nullptr) return;
    if (!fast) {
        const auto scalar = [](float* p) { return p != nullptr ? input(p, DType::Float32, 1, 1) : Tensor{}; };
        host::abs_max_current_scale(input(a.dx.data, a.x.dtype, a.x.rows, a.x.cols), a.fresh.numerator, scalar(a.fresh.scale),
                                    scalar(a.fresh.scale_inv), scalar(a.fresh.staging), Stream{});
        return;
    }
    const std::size_t hidden = a.x.cols;
    detail::StoredAmax fresh(a.fresh, a.dx.data, a.x.dtype);
    detail::parallel_for(a.x.rows, hidden * 2, [&](std::size_t first, std::size_t last) {
        std::vector<float> scratch(hidden);
        std::uint32_t local = 0;
        for (std::size_t row = first; row < last; ++row) local = std::max(local, fresh.of(row * hidden, hidden, scratch.data()));
        fresh.combine(local);
    });
    fresh.apply();
}

}  // namespace

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                       const Tensor& dgamma, const Workspace& workspace, Stream) {
    const auto call = detail::rms_norm_backward_call("tewb::kernels::host::rms_norm_backward", dy, x, rstd, gamma, dx, Tensor{},
                                                     dgamma, workspace);
    if (call) backward(*call);
}

void rms_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                           const Tensor& dresidual, const Tensor& dgamma, const Workspace& workspace, Stream) {
    const auto call = detail::rms_norm_backward_call("tewb::kernels::host::rms_norm_backward_add", dy, x, rstd, gamma, dx,
                                                     dresidual, dgamma, workspace);
    if (call) backward(*call);
}

void rms_norm_backward_cast(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                            const Tensor& dresidual, const Tensor& dgamma, const Tensor& grad, const Workspace& workspace, Stream) {
    const auto call = detail::rms_norm_backward_cast_call("tewb::kernels::host::rms_norm_backward_cast", dy, x, rstd, gamma, dx,
                                                          dresidual, dgamma, grad, workspace);
    if (call) backward(*call);
}

void rms_norm_backward_quantize(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                const Tensor& dresidual, const Tensor& dgamma, const Tensor& fp8, const Workspace& workspace, Stream) {
    const auto call = detail::rms_norm_backward_quantize_call("tewb::kernels::host::rms_norm_backward_quantize", dy, x, rstd, gamma,
                                                              dx, dresidual, dgamma, fp8, workspace);
    if (call) backward(*call);
}

void rms_norm_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                     const Tensor& dresidual, const Tensor& dgamma, const CurrentScaleTarget& target,
                                     const Workspace& workspace, Stream stream) {
    const auto call = detail::rms_norm_backward_current_scale_call("tewb::kernels::host::rms_norm_backward_current_scale", dy, x,
                                                                   rstd, gamma, dx, dresidual, dgamma, target, workspace);
    if (call) {
        backward(*call);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels::host
