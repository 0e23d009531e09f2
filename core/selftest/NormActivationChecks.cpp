#ifdef TEWB_FUSED_CUDA

// LayerNorm, RMSNorm, GELU and SwiGLU, forward (BF16 or FP8 out with the amax) and backward, against LibTorch in float32.

#include "core/selftest/SelfTestChecks.h"

#include <tuple>
#include <vector>

#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/normalization.h"

namespace tewb::selftest {

namespace {

void layer_norm_case(Checks& check, at::ScalarType io, at::ScalarType param, std::int64_t rows, std::int64_t hidden,
                     at::ScalarType dy_type) {
    constexpr float eps = 1e-5f;
    const double bound = io == at::kFloat && param == at::kFloat && dy_type == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + (param == at::kFloat ? "" : ", " + dtype_name(param) + " gamma") +
                              (dy_type == io ? "" : ", " + dtype_name(dy_type) + " dy");
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor gamma = (at::randn({hidden}, cuda()) * 0.5 + 1).to(param);
    const at::Tensor beta = (at::randn({hidden}, cuda()) * 0.1).to(param);
    const at::Tensor gamma32 = gamma.to(at::kFloat);
    auto [want, want_mean, want_rstd] = at::native_layer_norm(x.to(at::kFloat), {hidden}, gamma32, beta.to(at::kFloat), eps);
    at::Tensor out = poisoned({rows, hidden}, io);
    at::Tensor mean = poisoned({rows}, at::kFloat);
    at::Tensor rstd = poisoned({rows}, at::kFloat);
    at::Tensor q = poisoned_fp8({rows, hidden});
    at::Tensor q_t = poisoned_fp8({hidden, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (want_amax * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::layer_norm_forward(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), eps, kernel_tensor(out),
                                fp8_out(q, q_t, scale_t, amax, kernels::Fp8Type::E4M3), kernel_tensor(mean), kernel_tensor(rstd),
                                kernel_stream());
    check.relative("layer_norm_forward", "out", shape, dtype, out, want, bound);
    check.relative("layer_norm_forward", "mean", shape, dtype, mean, want_mean.reshape({-1}), kFloat32Bound);
    check.relative("layer_norm_forward", "rstd", shape, dtype, rstd, want_rstd.reshape({-1}), kFloat32Bound);
    check.relative("layer_norm_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("layer_norm_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("layer_norm_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

    const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(dy_type);
    auto [want_dx, want_dgamma, want_dbeta] = at::native_layer_norm_backward(dy.to(at::kFloat), x.to(at::kFloat), {hidden}, want_mean,
                                                                             want_rstd, gamma32, beta.to(at::kFloat), {true, true, true});
    at::Tensor dx = poisoned({rows, hidden}, io);
    at::Tensor dgamma = poisoned({hidden}, param);
    at::Tensor dbeta = poisoned({hidden}, param);
    const std::size_t bytes =
        kernels::layer_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    kernels::layer_norm_backward(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd), kernel_tensor(gamma),
                                 kernel_tensor(dx), kernel_tensor(dgamma), kernel_tensor(dbeta), workspace_ref(workspace),
                                 kernel_stream());
    check.relative("layer_norm_backward", "dx", shape, dtype, dx, want_dx, bound);
    check.relative("layer_norm_backward", "dgamma", shape, dtype, dgamma, want_dgamma, bound);
    check.relative("layer_norm_backward", "dbeta", shape, dtype, dbeta, want_dbeta, bound);
}

// RMSNorm against its definition in LibTorch's float32 ops: y = x * rsqrt(mean(x^2) + eps) * gamma; the backward
// dx = rstd * (g - xhat * mean(g * xhat)), g = dy * gamma, xhat = x * rstd; dgamma = sum over rows of dy * xhat.
void rms_norm_case(Checks& check, at::ScalarType io, at::ScalarType param, std::int64_t rows, std::int64_t hidden) {
    constexpr float eps = 1e-6f;
    const double bound = io == at::kFloat && param == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + (param == at::kFloat ? "" : ", " + dtype_name(param) + " gamma");
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor gamma = (at::randn({hidden}, cuda()) * 0.5 + 1).to(param);
    const at::Tensor x32 = x.to(at::kFloat);
    const at::Tensor gamma32 = gamma.to(at::kFloat);
    const at::Tensor want_rstd = at::rsqrt(x32.pow(2).mean({1}, true) + eps);
    const at::Tensor xhat = x32 * want_rstd;
    const at::Tensor want = xhat * gamma32;
    at::Tensor out = poisoned({rows, hidden}, io);
    at::Tensor rstd = poisoned({rows}, at::kFloat);
    at::Tensor q = poisoned_fp8({rows, hidden});
    at::Tensor q_t = poisoned_fp8({hidden, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (want_amax * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::rms_norm_forward(kernel_tensor(x), kernel_tensor(gamma), eps, kernel_tensor(out),
                              fp8_out(q, q_t, scale_t, amax, kernels::Fp8Type::E4M3), kernel_tensor(rstd), kernel_stream());
    check.relative("rms_norm_forward", "out", shape, dtype, out, want, bound);
    check.relative("rms_norm_forward", "rstd", shape, dtype, rstd, want_rstd.reshape({-1}), kFloat32Bound);
    check.relative("rms_norm_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("rms_norm_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("rms_norm_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

    const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(io);
    const at::Tensor dy32 = dy.to(at::kFloat);
    const at::Tensor g = dy32 * gamma32;
    const at::Tensor want_dx = want_rstd * (g - xhat * (g * xhat).mean({1}, true));
    const at::Tensor want_dgamma = (dy32 * xhat).sum(0);
    at::Tensor dx = poisoned({rows, hidden}, io);
    at::Tensor dgamma = poisoned({hidden}, param);
    const std::size_t bytes =
        kernels::rms_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    kernels::rms_norm_backward(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(dx),
                               kernel_tensor(dgamma), workspace_ref(workspace), kernel_stream());
    check.relative("rms_norm_backward", "dx", shape, dtype, dx, want_dx, bound);
    check.relative("rms_norm_backward", "dgamma", shape, dtype, dgamma, want_dgamma, bound);

    // The skip connection's gradient added in the same pass (the llama block's residual folding).
    const at::Tensor dresidual = at::randn({rows, hidden}, cuda()).to(io);
    at::Tensor dx_add = poisoned({rows, hidden}, io);
    at::Tensor dgamma_add = poisoned({hidden}, param);
    kernels::rms_norm_backward_add(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                                   kernel_tensor(dx_add), kernel_tensor(dresidual), kernel_tensor(dgamma_add), workspace_ref(workspace),
                                   kernel_stream());
    check.relative("rms_norm_backward_add", "dx", shape, dtype, dx_add, want_dx + dresidual.to(at::kFloat), bound);
    check.relative("rms_norm_backward_add", "dgamma", shape, dtype, dgamma_add, want_dgamma, bound);
}

void gelu_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string dtype = dtype_name(io);
    const std::string shape = shape_text(rows, cols);
    const at::Tensor x = (at::randn({rows, cols}, cuda()) * 2).to(io);
    const at::Tensor want = at::gelu(x.to(at::kFloat), "tanh");
    at::Tensor out = poisoned({rows, cols}, io);
    at::Tensor q = poisoned_fp8({rows, cols});
    at::Tensor q_t = poisoned_fp8({cols, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (std::max(want_amax, 1e-30f) * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::gelu_forward(kernel_tensor(x), kernel_tensor(out), fp8_out(q, q_t, scale_t, amax, kernels::Fp8Type::E4M3),
                          kernel_stream());
    check.relative("gelu_forward", "out", shape, dtype, out, want, bound);
    check.relative("gelu_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("gelu_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("gelu_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

    const at::Tensor dy = at::randn({rows, cols}, cuda()).to(io);
    const at::Tensor want_dx = at::gelu_backward(dy.to(at::kFloat), x.to(at::kFloat), "tanh");
    at::Tensor dx = poisoned({rows, cols}, io);
    at::Tensor dq = poisoned_fp8({rows, cols});
    at::Tensor dq_t = poisoned_fp8({cols, rows});
    const float want_damax = want_dx.abs().max().item<float>();
    const float dscale = kernels::fp8_max(kernels::Fp8Type::E5M2) / (std::max(want_damax, 1e-30f) * 1.25f);
    const at::Tensor dscale_t = scalar(dscale);
    at::Tensor damax = at::zeros({1}, cuda().dtype(at::kFloat));
    at::Tensor dbias = poisoned({cols}, at::kFloat);
    const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    kernels::gelu_backward(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(dx),
                           fp8_out(dq, dq_t, dscale_t, damax, kernels::Fp8Type::E5M2), kernel_tensor(dbias),
                           workspace_ref(workspace), kernel_stream());
    check.relative("gelu_backward", "dx", shape, dtype, dx, want_dx, bound);
    check.relative("gelu_backward", "FP8 dx", shape, dtype + " -> E5M2", dequantize(dq, kernels::Fp8Type::E5M2, dscale), want_dx,
                   kE5m2Bound);
    check.exact("gelu_backward", "FP8 transposed dx", shape, dtype + " -> E5M2", dq_t, dq.t().contiguous());
    check.relative("gelu_backward", "dbias", shape, dtype, dbias, want_dx.sum(0), std::max(bound, kFloat32Bound));
    check.amax("gelu_backward", shape, dtype + " -> E5M2", damax, want_damax, kComputedAmaxBound);

    // The forms without the transposed copy (te BF16's fc1 gradient: dx and dbias alone; an FP8 output alone; the plain
    // forward) compute each value as the forms above do: their bits must match.
    at::Tensor plain_out = poisoned({rows, cols}, io);
    kernels::gelu_forward(kernel_tensor(x), kernel_tensor(plain_out), kernels::Tensor{}, kernel_stream());
    check.exact("gelu_forward", "out, no FP8 = with FP8", shape, dtype, plain_out, out);
    at::Tensor plain_dx = poisoned({rows, cols}, io);
    at::Tensor plain_dbias = poisoned({cols}, at::kFloat);
    kernels::gelu_backward(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(plain_dx), kernels::Tensor{}, kernel_tensor(plain_dbias),
                           workspace_ref(workspace), kernel_stream());
    check.exact("gelu_backward", "dx, no FP8 = with FP8", shape, dtype, plain_dx, dx);
    check.exact("gelu_backward", "dbias, no FP8 = with FP8", shape, dtype, plain_dbias, dbias);
    at::Tensor only_q = poisoned_fp8({rows, cols});
    at::Tensor only_amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::gelu_backward(kernel_tensor(dy), kernel_tensor(x), kernels::Tensor{},
                           fp8_out(only_q, at::Tensor{}, dscale_t, only_amax, kernels::Fp8Type::E5M2), kernels::Tensor{},
                           kernels::Workspace{}, kernel_stream());
    check.exact("gelu_backward", "FP8 dx, no transposed copy", shape, dtype + " -> E5M2", only_q, dq);
    check.exact("gelu_backward", "amax, no transposed copy", shape, dtype + " -> E5M2", only_amax, damax);
}

// SwiGLU over in = [gate | up] against LibTorch's silu: y, its FP8 form with the transposed copy, amax.
void swiglu_forward_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string dtype = dtype_name(io);
    const std::string shape = shape_text(rows, 2 * cols);
    const at::Tensor in = (at::randn({rows, 2 * cols}, cuda()) * 3).to(io);
    const at::Tensor in32 = in.to(at::kFloat);
    const at::Tensor want = at::silu(in32.narrow(1, 0, cols)) * in32.narrow(1, cols, cols);
    at::Tensor out = poisoned({rows, cols}, io);
    at::Tensor q = poisoned_fp8({rows, cols});
    at::Tensor q_t = poisoned_fp8({cols, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (std::max(want_amax, 1e-30f) * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::swiglu_forward(kernel_tensor(in), kernel_tensor(out), fp8_out(q, q_t, scale_t, amax, kernels::Fp8Type::E4M3),
                            kernel_stream());
    check.relative("swiglu_forward", "out", shape, dtype, out, want, bound);
    check.relative("swiglu_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("swiglu_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("swiglu_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);
}

// d gate = silu'(gate) * dy * up (LibTorch's silu_backward), d up = dy * silu(gate); FP8 with its transposed copy.
void swiglu_backward_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string dtype = dtype_name(io);
    const std::string shape = shape_text(rows, 2 * cols);
    const at::Tensor in = (at::randn({rows, 2 * cols}, cuda()) * 3).to(io);
    const at::Tensor dy = at::randn({rows, cols}, cuda()).to(io);
    const at::Tensor in32 = in.to(at::kFloat);
    const at::Tensor dy32 = dy.to(at::kFloat);
    const at::Tensor gate = in32.narrow(1, 0, cols);
    const at::Tensor up = in32.narrow(1, cols, cols);
    const at::Tensor want = at::cat({at::silu_backward(dy32 * up, gate), dy32 * at::silu(gate)}, 1);
    at::Tensor din = poisoned({rows, 2 * cols}, io);
    at::Tensor q = poisoned_fp8({rows, 2 * cols});
    at::Tensor q_t = poisoned_fp8({2 * cols, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E5M2) / (std::max(want_amax, 1e-30f) * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    kernels::swiglu_backward(kernel_tensor(dy), kernel_tensor(in), kernel_tensor(din),
                             fp8_out(q, q_t, scale_t, amax, kernels::Fp8Type::E5M2), kernel_stream());
    check.relative("swiglu_backward", "din", shape, dtype, din, want, bound);
    check.relative("swiglu_backward", "FP8 din", shape, dtype + " -> E5M2", dequantize(q, kernels::Fp8Type::E5M2, scale), want,
                   kE5m2Bound);
    check.exact("swiglu_backward", "FP8 transposed din", shape, dtype + " -> E5M2", q_t, q.t().contiguous());
    check.amax("swiglu_backward", shape, dtype + " -> E5M2", amax, want_amax, kComputedAmaxBound);
}

// The LayerNorm backwards that hand a Linear its gradient (docs/kernels.md, "Gradients handed over cast"), against the
// same GPU's layer_norm_backward_add followed by the Linear's own cast: dx bit for bit; the bfloat16 copy, the FP8
// bytes, their transposed copy and amax bit for bit those of cast_dbias / cast_transpose_dbias_to_fp8 over that dx;
// the sums (another order) within float32's bound, and dgamma and dbeta exact where the order is the same kernel's
// (the copy form) and within the bound where the FP8 form's bands change it.
void layer_norm_handover_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t hidden) {
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + ", bfloat16 dy";
    const auto r = static_cast<std::size_t>(rows);
    const auto h = static_cast<std::size_t>(hidden);
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor gamma = at::randn({hidden}, cuda()) * 0.5 + 1;
    auto [unused, mean, rstd] = at::native_layer_norm(x.to(at::kFloat), {hidden}, gamma, at::zeros_like(gamma), 1e-5);
    mean = mean.reshape({-1}).contiguous();
    rstd = rstd.reshape({-1}).contiguous();
    const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(at::kBFloat16);
    const at::Tensor dresidual = at::randn({rows, hidden}, cuda()).to(io);
    const auto bytes = [](std::size_t n) { return at::empty({static_cast<std::int64_t>(n)}, cuda().dtype(at::kByte)); };
    const at::Tensor ws = bytes(kernels::layer_norm_backward_cast_dbias_workspace_bytes(r, h));
    // The Linear's own way: the backward, then its cast of dx.
    at::Tensor want_dx = poisoned({rows, hidden}, io);
    at::Tensor want_dgamma = poisoned({hidden}, at::kFloat);
    at::Tensor want_dbeta = poisoned({hidden}, at::kFloat);
    kernels::layer_norm_backward_add(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd), kernel_tensor(gamma),
                                     kernel_tensor(want_dx), kernel_tensor(dresidual), kernel_tensor(want_dgamma),
                                     kernel_tensor(want_dbeta), workspace_ref(ws), kernel_stream());
    const at::Tensor want_sums = want_dx.to(at::kDouble).sum(0).to(at::kFloat);

    check.attempt("layer_norm_backward_cast_dbias", shape, dtype, [&] {
        at::Tensor dx = poisoned({rows, hidden}, io);
        at::Tensor dgamma = poisoned({hidden}, at::kFloat);
        at::Tensor dbeta = poisoned({hidden}, at::kFloat);
        at::Tensor grad = poisoned({rows, hidden}, at::kBFloat16);
        at::Tensor dbias = poisoned({hidden}, at::kFloat);
        kernels::layer_norm_backward_cast_dbias(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dresidual), kernel_tensor(dgamma),
                                                kernel_tensor(dbeta), kernel_tensor(grad), kernel_tensor(dbias), workspace_ref(ws),
                                                kernel_stream());
        check.exact("layer_norm_backward_cast_dbias", "dx = layer_norm_backward_add's", shape, dtype, dx, want_dx);
        check.exact("layer_norm_backward_cast_dbias", "dgamma = layer_norm_backward_add's", shape, dtype, dgamma, want_dgamma);
        check.exact("layer_norm_backward_cast_dbias", "dbeta = layer_norm_backward_add's", shape, dtype, dbeta, want_dbeta);
        check.exact("layer_norm_backward_cast_dbias", "copy = dx in bfloat16", shape, dtype, grad, want_dx.to(at::kBFloat16));
        check.relative("layer_norm_backward_cast_dbias", "dbias", shape, dtype, dbias, want_sums, kFloat32Bound);
    });

    check.attempt("layer_norm_backward_quantize_dbias", shape, dtype + " -> E5M2", [&] {
        const kernels::Fp8Type type = kernels::Fp8Type::E5M2;
        const at::Tensor scale = scalar(64.0f);
        at::Tensor dx = poisoned({rows, hidden}, io);
        at::Tensor dgamma = poisoned({hidden}, at::kFloat);
        at::Tensor dbeta = poisoned({hidden}, at::kFloat);
        at::Tensor q = poisoned_fp8({rows, hidden});
        at::Tensor q_t = poisoned_fp8({hidden, rows});
        at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
        at::Tensor dbias = poisoned({hidden}, at::kFloat);
        kernels::layer_norm_backward_quantize_dbias(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                    kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dresidual),
                                                    kernel_tensor(dgamma), kernel_tensor(dbeta), fp8_out(q, q_t, scale, amax, type),
                                                    kernel_tensor(dbias), workspace_ref(ws), kernel_stream());
        check.exact("layer_norm_backward_quantize_dbias", "dx = layer_norm_backward_add's", shape, dtype, dx, want_dx);
        // Its FP8 bytes: those of the Linear's own cast of the dx it wrote.
        at::Tensor want_q = poisoned_fp8({rows, hidden});
        at::Tensor want_t = poisoned_fp8({hidden, rows});
        at::Tensor want_amax = at::zeros({1}, cuda().dtype(at::kFloat));
        at::Tensor sums = poisoned({hidden}, at::kFloat);
        const at::Tensor cast_ws = bytes(kernels::cast_transpose_dbias_workspace_bytes(r, h));
        kernels::cast_transpose_dbias_to_fp8(kernel_tensor(dx), fp8_out(want_q, want_t, scale, want_amax, type), kernel_tensor(sums),
                                             workspace_ref(cast_ws), kernel_stream());
        check.exact("layer_norm_backward_quantize_dbias", "FP8 = cast_transpose_dbias_to_fp8's", shape, dtype, q, want_q);
        check.exact("layer_norm_backward_quantize_dbias", "FP8 transposed", shape, dtype, q_t, want_t);
        check.exact("layer_norm_backward_quantize_dbias", "amax", shape, dtype, amax, want_amax);
        check.relative("layer_norm_backward_quantize_dbias", "dgamma", shape, dtype, dgamma, want_dgamma, kFloat32Bound);
        check.relative("layer_norm_backward_quantize_dbias", "dbeta", shape, dtype, dbeta, want_dbeta, kFloat32Bound);
        check.relative("layer_norm_backward_quantize_dbias", "dbias", shape, dtype, dbias, want_sums, kFloat32Bound);
    });
}

// The amax hand-off (layer_norm_forward_current_scale, rms_norm_forward_current_scale): against the forward and then
// abs_max_current_scale of its output on the same GPU, bit for bit (out, the statistics, scale, scale_inv, staging), twice:
// the second call with gamma a thousand times smaller (a scratch word the first left set would keep its amax).
void current_scale_handoff_case(Checks& check, bool rms, at::ScalarType io, at::ScalarType out_type, std::int64_t rows,
                                std::int64_t hidden) {
    constexpr float eps = 1e-5f;
    const char* op = rms ? "rms_norm_forward_current_scale" : "layer_norm_forward_current_scale";
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + " -> " + dtype_name(out_type);
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor beta = at::randn({hidden}, cuda()) * 0.1;
    for (const double gamma_size : {1.0, 1e-3}) {
        const at::Tensor gamma = (at::randn({hidden}, cuda()) * 0.5 + 1) * gamma_size;
        at::Tensor want_out = poisoned({rows, hidden}, out_type);
        at::Tensor want_stats = poisoned({2, rows}, at::kFloat);
        at::Tensor want = at::full({3}, 0.5f, cuda());  // scale, scale_inv, staging
        if (rms) {
            kernels::rms_norm_forward(kernel_tensor(x), kernel_tensor(gamma), eps, kernel_tensor(want_out), kernels::Tensor{},
                                      kernel_tensor(want_stats[1]), kernel_stream());
        } else {
            kernels::layer_norm_forward(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), eps, kernel_tensor(want_out),
                                        kernels::Tensor{}, kernel_tensor(want_stats[0]), kernel_tensor(want_stats[1]), kernel_stream());
        }
        kernels::abs_max_current_scale(kernel_tensor(want_out), 448.0f, kernel_tensor(want.narrow(0, 0, 1)),
                                       kernel_tensor(want.narrow(0, 1, 1)), kernel_tensor(want.narrow(0, 2, 1)), kernel_stream());
        at::Tensor out = poisoned({rows, hidden}, out_type);
        at::Tensor stats = poisoned({2, rows}, at::kFloat);
        if (rms) stats[0].copy_(want_stats[0]);  // RMSNorm saves no mean
        at::Tensor got = at::full({3}, 0.5f, cuda());
        const kernels::CurrentScaleTarget target = current_scale_target(got, 448.0f);
        if (rms) {
            kernels::rms_norm_forward_current_scale(kernel_tensor(x), kernel_tensor(gamma), eps, kernel_tensor(out), target,
                                                    kernel_tensor(stats[1]), kernel_stream());
        } else {
            kernels::layer_norm_forward_current_scale(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), eps,
                                                      kernel_tensor(out), target, kernel_tensor(stats[0]), kernel_tensor(stats[1]),
                                                      kernel_stream());
        }
        const std::string round = gamma_size == 1.0 ? "" : ", second call, gamma / 1000";
        check.exact(op, "out = the forward's", shape, dtype + round, bits(out), bits(want_out));
        check.exact(op, "statistics = the forward's", shape, dtype + round, bits(stats), bits(want_stats));
        check.exact(op, "scale, scale_inv, staging = abs_max_current_scale's of out", shape, dtype + round, bits(got), bits(want));
    }
}

// The LayerNorm backward's amax hand-off (layer_norm_backward_cast_dbias_current_scale: proj's and fc2's output gradients
// under current scaling) against layer_norm_backward_cast_dbias and abs_max_current_scale of its dx on the same GPU, bit for
// bit, twice (the second time with dy and dresidual a thousand times smaller).
void layer_norm_backward_current_scale_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t hidden) {
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + ", bfloat16 dy";
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor gamma = at::randn({hidden}, cuda()) * 0.5 + 1;
    const at::Tensor beta = at::randn({hidden}, cuda()) * 0.1;
    at::Tensor y = at::empty({rows, hidden}, cuda().dtype(io));
    at::Tensor mean = at::empty({rows}, cuda()), rstd = at::empty({rows}, cuda());
    kernels::layer_norm_forward(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernel_tensor(y), kernels::Tensor{},
                                kernel_tensor(mean), kernel_tensor(rstd), kernel_stream());
    const std::size_t bytes =
        kernels::layer_norm_backward_cast_dbias_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
    const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    for (const double size : {1.0, 1e-3}) {
        const at::Tensor dy = (at::randn({rows, hidden}, cuda()) * size).to(at::kBFloat16);
        const at::Tensor dresidual = (at::randn({rows, hidden}, cuda()) * size).to(io);
        // dx, dgamma, dbeta, dbias as floats side by side; scale, scale_inv, staging.
        at::Tensor want_dx = poisoned({rows, hidden}, io), got_dx = poisoned({rows, hidden}, io);
        at::Tensor want_params = poisoned({3, hidden}, at::kFloat), got_params = poisoned({3, hidden}, at::kFloat);
        at::Tensor want = at::full({3}, 0.5f, cuda()), got = at::full({3}, 0.5f, cuda());
        kernels::layer_norm_backward_cast_dbias(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                kernel_tensor(gamma), kernel_tensor(want_dx), kernel_tensor(dresidual),
                                                kernel_tensor(want_params[0]), kernel_tensor(want_params[1]), kernels::Tensor{},
                                                kernel_tensor(want_params[2]), workspace_ref(workspace), kernel_stream());
        kernels::abs_max_current_scale(kernel_tensor(want_dx), 448.0f, kernel_tensor(want.narrow(0, 0, 1)),
                                       kernel_tensor(want.narrow(0, 1, 1)), kernel_tensor(want.narrow(0, 2, 1)), kernel_stream());
        const kernels::CurrentScaleTarget target = current_scale_target(got, 448.0f);
        kernels::layer_norm_backward_cast_dbias_current_scale(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                              kernel_tensor(gamma), kernel_tensor(got_dx), kernel_tensor(dresidual),
                                                              kernel_tensor(got_params[0]), kernel_tensor(got_params[1]), target,
                                                              kernel_tensor(got_params[2]), workspace_ref(workspace), kernel_stream());
        const std::string round = size == 1.0 ? "" : ", second call, gradients / 1000";
        const char* op = "layer_norm_backward_cast_dbias_current_scale";
        check.exact(op, "dx = layer_norm_backward_cast_dbias's", shape, dtype + round, bits(got_dx), bits(want_dx));
        check.exact(op, "dgamma, dbeta, dbias = its", shape, dtype + round, bits(got_params), bits(want_params));
        check.exact(op, "scale, scale_inv, staging = abs_max_current_scale's of dx", shape, dtype + round, bits(got), bits(want));
    }
}

// What the RMSNorm backward cases read: x, gamma, the forward's rstd, and the backward's workspace, on the GPU.
struct RmsBackwardInputs {
    at::Tensor x, gamma, rstd, workspace;
};

RmsBackwardInputs rms_backward_inputs(at::ScalarType io, std::int64_t rows, std::int64_t hidden) {
    RmsBackwardInputs in;
    in.x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    in.gamma = at::randn({hidden}, cuda()) * 0.5 + 1;
    const at::Tensor y = at::empty({rows, hidden}, cuda().dtype(io));
    in.rstd = at::empty({rows}, cuda());
    kernels::rms_norm_forward(kernel_tensor(in.x), kernel_tensor(in.gamma), 1e-5f, kernel_tensor(y), kernels::Tensor{},
                              kernel_tensor(in.rstd), kernel_stream());
    const std::size_t bytes = kernels::rms_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
    in.workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    return in;
}

// RMSNorm's backward hand-off (rms_norm_backward_current_scale: llama's proj and down projection under current scaling)
// against rms_norm_backward_add and abs_max_current_scale of its dx on the same GPU, bit for bit, twice (the second time
// with dy and dresidual a thousand times smaller), with dresidual and without (the head's RMSNorm).
void rms_norm_backward_current_scale_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t hidden) {
    const std::string shape = shape_text(rows, hidden);
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const RmsBackwardInputs in = rms_backward_inputs(io, rows, hidden);
    const at::Tensor &x = in.x, &gamma = in.gamma, &rstd = in.rstd, &workspace = in.workspace;
    for (const bool add : {true, false}) {
        for (const double size : {1.0, 1e-3}) {
            const at::Tensor dy = (at::randn({rows, hidden}, cuda()) * size).to(io);
            const at::Tensor dresidual = (at::randn({rows, hidden}, cuda()) * size).to(io);
            const kernels::Tensor dres = add ? kernel_tensor(dresidual) : kernels::Tensor{};
            at::Tensor want_dx = poisoned({rows, hidden}, io), got_dx = poisoned({rows, hidden}, io);
            at::Tensor want_dgamma = poisoned({hidden}, at::kFloat), got_dgamma = poisoned({hidden}, at::kFloat);
            at::Tensor want = at::full({3}, 0.5f, cuda()), got = at::full({3}, 0.5f, cuda());
            kernels::rms_norm_backward_add(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                                           kernel_tensor(want_dx), dres, kernel_tensor(want_dgamma), workspace_ref(workspace),
                                           kernel_stream());
            kernels::abs_max_current_scale(kernel_tensor(want_dx), 57344.0f, kernel_tensor(want.narrow(0, 0, 1)),
                                           kernel_tensor(want.narrow(0, 1, 1)), kernel_tensor(want.narrow(0, 2, 1)), kernel_stream());
            kernels::rms_norm_backward_current_scale(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                                                     kernel_tensor(got_dx), dres, kernel_tensor(got_dgamma),
                                                     current_scale_target(got, 57344.0f), workspace_ref(workspace), kernel_stream());
            const std::string dtype = dtype_name(io) + (add ? ", dresidual" : "") + (size == 1.0 ? "" : ", second call, gradients / 1000");
            const char* op = "rms_norm_backward_current_scale";
            check.exact(op, "dx, dgamma = rms_norm_backward_add's", shape, dtype,
                        bits(at::cat({got_dx.reshape({-1}).to(at::kFloat), got_dgamma})),
                        bits(at::cat({want_dx.reshape({-1}).to(at::kFloat), want_dgamma})));
            check.exact(op, "scale, scale_inv, staging = abs_max_current_scale's of dx", shape, dtype, bits(got), bits(want));
        }
    }
}

// RMSNorm's backward hand-overs (llama's proj and down projection): rms_norm_backward_cast (BF16: dx's bfloat16 copy) against
// rms_norm_backward_add and dx's bfloat16 conversion, and rms_norm_backward_quantize (FP8, delayed scaling: dx's E5M2 bytes,
// transposed copy and amax from the banded kernel) against rms_norm_backward_add and cast_transpose_to_fp8 of its dx, on
// the same GPU, bit for bit (dgamma: the banded kernel sums its bands' rows in their own order, so against the plain
// backward's within float32 rounding), with dresidual and without.
void rms_norm_backward_handover_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t hidden) {
    const std::string shape = shape_text(rows, hidden);
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const RmsBackwardInputs in = rms_backward_inputs(io, rows, hidden);
    const at::Tensor &x = in.x, &gamma = in.gamma, &rstd = in.rstd, &workspace = in.workspace;
    const at::Tensor scale = at::full({1}, 4.0f, cuda());
    for (const bool add : {true, false}) {
        const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(io);
        const at::Tensor dresidual = at::randn({rows, hidden}, cuda()).to(io);
        const kernels::Tensor dres = add ? kernel_tensor(dresidual) : kernels::Tensor{};
        const std::string dtype = dtype_name(io) + (add ? ", dresidual" : "");
        at::Tensor want_dx = poisoned({rows, hidden}, io), want_dgamma = poisoned({hidden}, at::kFloat);
        kernels::rms_norm_backward_add(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(want_dx),
                                       dres, kernel_tensor(want_dgamma), workspace_ref(workspace), kernel_stream());
        at::Tensor got_dx = poisoned({rows, hidden}, io), got_dgamma = poisoned({hidden}, at::kFloat);
        at::Tensor grad = poisoned({rows, hidden}, at::kBFloat16);
        kernels::rms_norm_backward_cast(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma), kernel_tensor(got_dx),
                                        dres, kernel_tensor(got_dgamma), kernel_tensor(grad), workspace_ref(workspace), kernel_stream());
        check.exact("rms_norm_backward_cast", "dx, dgamma = rms_norm_backward_add's", shape, dtype,
                    bits(at::cat({got_dx.reshape({-1}).to(at::kFloat), got_dgamma})),
                    bits(at::cat({want_dx.reshape({-1}).to(at::kFloat), want_dgamma})));
        check.exact("rms_norm_backward_cast", "grad = dx as bfloat16", shape, dtype, bits(grad), bits(want_dx.to(at::kBFloat16)));
        // FP8 under delayed scaling: the backward's bytes against cast_transpose_to_fp8 of the plain backward's dx.
        at::Tensor q = at::empty({rows, hidden}, cuda().dtype(at::kByte)), q_t = at::empty({hidden, rows}, cuda().dtype(at::kByte));
        at::Tensor want_q = at::empty_like(q), want_q_t = at::empty_like(q_t);
        at::Tensor amax = at::zeros({2}, cuda());
        const auto fp8_out = [&](at::Tensor& data, at::Tensor& transposed, int slot) {
            kernels::Tensor t = kernels::input(data.data_ptr(), kernels::DType::Float8E5M2, static_cast<std::size_t>(rows),
                                               static_cast<std::size_t>(hidden));
            t.transposed = transposed.data_ptr();
            t.scale = scale.data_ptr<float>();
            t.amax = amax.data_ptr<float>() + slot;
            return t;
        };
        kernels::cast_transpose_to_fp8(kernel_tensor(want_dx), fp8_out(want_q, want_q_t, 0), kernel_stream());
        got_dx = poisoned({rows, hidden}, io);
        got_dgamma = poisoned({hidden}, at::kFloat);
        kernels::rms_norm_backward_quantize(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                                            kernel_tensor(got_dx), dres, kernel_tensor(got_dgamma), fp8_out(q, q_t, 1),
                                            workspace_ref(workspace), kernel_stream());
        check.exact("rms_norm_backward_quantize", "dx = rms_norm_backward_add's", shape, dtype, bits(got_dx), bits(want_dx));
        check.exact("rms_norm_backward_quantize", "E5M2 bytes, transposed copy = cast_transpose_to_fp8's of dx", shape, dtype,
                    at::cat({q.reshape({-1}), q_t.reshape({-1})}), at::cat({want_q.reshape({-1}), want_q_t.reshape({-1})}));
        check.exact("rms_norm_backward_quantize", "amax = cast_transpose_to_fp8's", shape, dtype, bits(amax.narrow(0, 1, 1)),
                    bits(amax.narrow(0, 0, 1)));
        check.relative("rms_norm_backward_quantize", "dgamma vs rms_norm_backward_add's", shape, dtype, got_dgamma, want_dgamma,
                       kFloat32Bound);
    }
}

// GELU's amax hand-off (gelu_forward_current_scale, gelu_backward_current_scale with fc1's bias gradient) against the
// plain call and abs_max_current_scale of its output on the same GPU, bit for bit, twice (the second time on inputs a
// thousand times smaller).
void gelu_current_scale_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const std::string shape = shape_text(rows, cols);
    const std::string dtype = dtype_name(io);
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
    const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    for (const double size : {1.0, 1e-3}) {
        const at::Tensor x = (at::randn({rows, cols}, cuda()) * 2 * size).to(io);
        const at::Tensor dy = (at::randn({rows, cols}, cuda()) * size).to(io);
        const auto target_of = [](const at::Tensor& f) { return current_scale_target(f, 57344.0f); };
        at::Tensor want_y = poisoned({rows, cols}, io), want_dx = poisoned({rows, cols}, io);
        at::Tensor want_dbias = poisoned({cols}, at::kFloat);
        at::Tensor want = at::full({2, 3}, 0.5f, cuda());
        kernels::gelu_forward(kernel_tensor(x), kernel_tensor(want_y), kernels::Tensor{}, kernel_stream());
        at::Tensor want_forward = want[0], want_backward = want[1];
        const kernels::CurrentScaleTarget wf = target_of(want_forward), wb = target_of(want_backward);
        kernels::abs_max_current_scale(kernel_tensor(want_y), wf.numerator, wf.scale, wf.scale_inv, wf.staging, kernel_stream());
        kernels::gelu_backward(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(want_dx), kernels::Tensor{}, kernel_tensor(want_dbias),
                               workspace_ref(workspace), kernel_stream());
        kernels::abs_max_current_scale(kernel_tensor(want_dx), wb.numerator, wb.scale, wb.scale_inv, wb.staging, kernel_stream());
        at::Tensor y = poisoned({rows, cols}, io), dx = poisoned({rows, cols}, io);
        at::Tensor dbias = poisoned({cols}, at::kFloat);
        at::Tensor got = at::full({2, 3}, 0.5f, cuda());
        at::Tensor got_forward = got[0], got_backward = got[1];
        kernels::gelu_forward_current_scale(kernel_tensor(x), kernel_tensor(y), target_of(got_forward), kernel_stream());
        kernels::gelu_backward_current_scale(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(dx), target_of(got_backward),
                                             kernel_tensor(dbias), workspace_ref(workspace), kernel_stream());
        const std::string round = size == 1.0 ? "" : ", second call, inputs / 1000";
        check.exact("gelu_forward_current_scale", "out = gelu_forward's", shape, dtype + round, bits(y), bits(want_y));
        check.exact("gelu_backward_current_scale", "dx, dbias = gelu_backward's", shape, dtype + round,
                    bits(at::cat({dx.reshape({-1}).to(at::kFloat), dbias})), bits(at::cat({want_dx.reshape({-1}).to(at::kFloat), want_dbias})));
        check.exact("gelu_*_current_scale", "scale, scale_inv, staging = abs_max_current_scale's of the output", shape, dtype + round,
                    bits(got), bits(want));
    }
}

// SwiGLU's amax hand-off (swiglu_forward_current_scale, swiglu_backward_current_scale) against the plain call and
// abs_max_current_scale of its output on the same GPU, bit for bit, twice (the second time on inputs a thousand times
// smaller).
void swiglu_current_scale_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const std::string shape = shape_text(rows, 2 * cols);
    const std::string dtype = dtype_name(io);
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    const auto target_of = [](const at::Tensor& f) { return current_scale_target(f, 448.0f); };
    for (const double size : {1.0, 1e-3}) {
        const at::Tensor in = (at::randn({rows, 2 * cols}, cuda()) * 2 * size).to(io);
        const at::Tensor dy = (at::randn({rows, cols}, cuda()) * size).to(io);
        at::Tensor want_y = poisoned({rows, cols}, io), want_din = poisoned({rows, 2 * cols}, io);
        at::Tensor y = poisoned({rows, cols}, io), din = poisoned({rows, 2 * cols}, io);
        at::Tensor want = at::full({2, 3}, 0.5f, cuda()), got = at::full({2, 3}, 0.5f, cuda());
        kernels::swiglu_forward(kernel_tensor(in), kernel_tensor(want_y), kernels::Tensor{}, kernel_stream());
        const kernels::CurrentScaleTarget wf = target_of(want[0]), wb = target_of(want[1]);
        kernels::abs_max_current_scale(kernel_tensor(want_y), 448.0f, wf.scale, wf.scale_inv, wf.staging, kernel_stream());
        kernels::swiglu_backward(kernel_tensor(dy), kernel_tensor(in), kernel_tensor(want_din), kernels::Tensor{}, kernel_stream());
        kernels::abs_max_current_scale(kernel_tensor(want_din), 448.0f, wb.scale, wb.scale_inv, wb.staging, kernel_stream());
        kernels::swiglu_forward_current_scale(kernel_tensor(in), kernel_tensor(y), target_of(got[0]), kernel_stream());
        kernels::swiglu_backward_current_scale(kernel_tensor(dy), kernel_tensor(in), kernel_tensor(din), target_of(got[1]), kernel_stream());
        const std::string round = size == 1.0 ? "" : ", second call, inputs / 1000";
        check.exact("swiglu_forward_current_scale", "out = swiglu_forward's", shape, dtype + round, bits(y), bits(want_y));
        check.exact("swiglu_backward_current_scale", "din = swiglu_backward's", shape, dtype + round, bits(din), bits(want_din));
        check.exact("swiglu_*_current_scale", "scale, scale_inv, staging = abs_max_current_scale's of the output", shape,
                    dtype + round, bits(got), bits(want));
    }
}

}  // namespace

void layer_norms(Checks& check) {
    // Fast kernels: one warp per row (768, 1000), a block per row (3072, 4096); plain kernels: 33, 770 (not
    // whole 16-byte vectors); 16384 rows run the backward's grid-stride loop over many rows per block.
    const Shape shapes[] = {{1, 768}, {3, 1000}, {97, 768}, {3072, 768}, {5, 3072}, {7, 33}, {64, 770}, {16384, 4096}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, hidden] : shapes) {
            check.attempt("layer_norm", shape_text(rows, hidden), dtype_name(io),
                          [&, rows = rows, hidden = hidden] { layer_norm_case(check, io, at::kFloat, rows, hidden, io); });
        }
        // BF16 parameters (a model kept in BF16): the kernels read and write gamma's dtype.
        for (const auto& [rows, hidden] : {Shape{97, 768}, Shape{3072, 768}}) {
            check.attempt("layer_norm", shape_text(rows, hidden), dtype_name(io) + ", bfloat16 gamma",
                          [&, rows = rows, hidden = hidden] { layer_norm_case(check, io, at::kBFloat16, rows, hidden, io); });
        }
    }
    // Mixed precision: the float32 residual stream with a bfloat16 gradient.
    for (const auto& [rows, hidden] : {Shape{97, 768}, Shape{3072, 768}}) {
        check.attempt("layer_norm", shape_text(rows, hidden), "float32, bfloat16 dy", [&, rows = rows, hidden = hidden] {
            layer_norm_case(check, at::kFloat, at::kFloat, rows, hidden, at::kBFloat16);
        });
    }
    // The hand-over forms: the seed's residual stream (3072 x 768 float32: one 4-warp row a block, bands of 8),
    // bfloat16 rows (4 a block) with a partial last band, bands of 16 (4 one-warp groups sharing memory with the
    // stage; one 4-warp group) and of 32, a row the plain path takes (98), and one past the FP8 form's banded limit
    // of 2048 (4096: the plain composition).
    for (const auto& [io, rows, hidden] : {std::tuple{at::kFloat, 3072, 768}, std::tuple{at::kBFloat16, 1030, 768},
                                           std::tuple{at::kBFloat16, 4224, 1024}, std::tuple{at::kFloat, 4224, 1024},
                                           std::tuple{at::kFloat, 8448, 512}, std::tuple{at::kFloat, 1030, 98},
                                           std::tuple{at::kFloat, 512, 4096}}) {
        layer_norm_handover_case(check, io, rows, hidden);
    }
    // RMSNorm (the Llama blocks' norm) on LayerNorm's fast kernels: the seed's shape (32 x 96 tokens, hidden 768), one
    // row, a block per row (3072: 8 warps for float32, 4 for bfloat16; 4096 over 16384 rows: bands of 64 for the
    // transposed copy); on the plain kernels: hidden 33 and 770 (rows not in whole 16-byte vectors; a band of 32 rows
    // only partly filled) and 8192 (past the fast forward's transposed limit of 4096; the backward still fast for
    // bfloat16).
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, hidden] : {Shape{1, 768}, Shape{7, 33}, Shape{3072, 768}, Shape{5, 3072}, Shape{64, 770},
                                           Shape{16384, 4096}, Shape{9, 8192}}) {
            check.attempt("rms_norm", shape_text(rows, hidden), dtype_name(io),
                          [&, rows = rows, hidden = hidden] { rms_norm_case(check, io, at::kFloat, rows, hidden); });
        }
    }
    check.attempt("rms_norm", shape_text(3072, 768), "bfloat16, bfloat16 gamma",
                  [&] { rms_norm_case(check, at::kBFloat16, at::kBFloat16, 3072, 768); });
    // The amax hand-off: the seed's float32 residual stream to a bfloat16 output (te FP8's LayerNorm inputs under current
    // scaling), bfloat16 rows, the plain kernels (33, 770), a block per row over many rows (16384 x 4096).
    for (const bool rms : {false, true}) {
        for (const auto& [io, out_type, rows, hidden] :
             {std::tuple{at::kFloat, at::kBFloat16, 3072, 768}, std::tuple{at::kBFloat16, at::kBFloat16, 3072, 768},
              std::tuple{at::kFloat, at::kFloat, 7, 33}, std::tuple{at::kBFloat16, at::kBFloat16, 64, 770},
              std::tuple{at::kBFloat16, at::kBFloat16, 16384, 4096}}) {
            check.attempt(rms ? "rms_norm_forward_current_scale" : "layer_norm_forward_current_scale", shape_text(rows, hidden),
                          dtype_name(io) + " -> " + dtype_name(out_type), [&, rms, io = io, out_type = out_type, rows = rows, hidden = hidden] {
                              current_scale_handoff_case(check, rms, io, out_type, rows, hidden);
                          });
        }
    }
    // The backward's hand-off: the seed's float32 residual stream, bfloat16 rows, a row the plain kernels take (98).
    for (const auto& [io, rows, hidden] : {std::tuple{at::kFloat, 3072, 768}, std::tuple{at::kBFloat16, 1030, 768},
                                           std::tuple{at::kFloat, 1030, 98}}) {
        check.attempt("layer_norm_backward_cast_dbias_current_scale", shape_text(rows, hidden), dtype_name(io),
                      [&, io = io, rows = rows, hidden = hidden] { layer_norm_backward_current_scale_case(check, io, rows, hidden); });
    }
    // RMSNorm's: the llama seed's float32 residual stream, bfloat16 rows, a row the plain kernels take (98).
    for (const auto& [io, rows, hidden] : {std::tuple{at::kFloat, 3072, 768}, std::tuple{at::kBFloat16, 1030, 768},
                                           std::tuple{at::kFloat, 1030, 98}}) {
        check.attempt("rms_norm_backward_current_scale", shape_text(rows, hidden), dtype_name(io),
                      [&, io = io, rows = rows, hidden = hidden] { rms_norm_backward_current_scale_case(check, io, rows, hidden); });
        check.attempt("rms_norm_backward_cast, rms_norm_backward_quantize", shape_text(rows, hidden), dtype_name(io),
                      [&, io = io, rows = rows, hidden = hidden] { rms_norm_backward_handover_case(check, io, rows, hidden); });
    }
}

void gelus(Checks& check) {
    const Shape shapes[] = {{1, 1}, {3, 1000}, {97, 3072}, {3072, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, cols] : shapes) {
            check.attempt("gelu", shape_text(rows, cols), dtype_name(io),
                          [&, rows = rows, cols = cols] { gelu_case(check, io, rows, cols); });
        }
        // The amax hand-off at the seed's MLP activation (3072 x 3072) and a ragged shape.
        for (const auto& [rows, cols] : {Shape{3072, 3072}, Shape{7, 33}}) {
            check.attempt("gelu_current_scale", shape_text(rows, cols), dtype_name(io),
                          [&, rows = rows, cols = cols] { gelu_current_scale_case(check, io, rows, cols); });
        }
    }
}

// Shapes as [rows, 2 * cols]: the seed's Llama MLP (32 x 96 tokens, ffn 2048 = 8/3 x 768 rounded up to 64),
// one row, and a half width of 33 (not whole 16-byte vectors: the element-by-element loads).
void swiglus(Checks& check) {
    const Shape shapes[] = {{1, 1}, {3, 1000}, {7, 33}, {97, 2048}, {3072, 2048}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, cols] : shapes) {
            check.attempt("swiglu", shape_text(rows, 2 * cols), dtype_name(io), [&, rows = rows, cols = cols] {
                swiglu_forward_case(check, io, rows, cols);
                swiglu_backward_case(check, io, rows, cols);
            });
        }
        // The amax hand-off at the seed's Llama MLP and a ragged half width.
        for (const auto& [rows, cols] : {Shape{3072, 2048}, Shape{7, 33}}) {
            check.attempt("swiglu_current_scale", shape_text(rows, 2 * cols), dtype_name(io),
                          [&, rows = rows, cols = cols] { swiglu_current_scale_case(check, io, rows, cols); });
        }
    }
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
