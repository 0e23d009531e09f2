// GPU suite (label `gpu`) for the kernels library itself: each kernel against core's reference math in
// LibTorch on the same GPU, on fresh random inputs, odd and prime sizes as well as the model's, outputs
// poisoned before the launch so an element the kernel did not write fails. Exits 77 without a GPU.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/device/DeviceInfo.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"

using namespace tewb;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

kernels::DType dtype_of(const at::Tensor& t) {
    return t.scalar_type() == at::kFloat ? kernels::DType::Float32 : kernels::DType::BFloat16;
}

at::ScalarType fp8_of(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

// core's reference cast (ReferenceOps::quantize): float32 product, clamp, convert; as bytes.
at::Tensor reference_cast(const at::Tensor& x, float scale, kernels::Fp8Type type) {
    const float max = kernels::fp8_max(type);
    return (x.to(at::kFloat) * scale).clamp(-max, max).to(fp8_of(type)).view(at::kByte);
}

// NaN bytes in both FP8 types: an element the kernel never wrote stays a NaN and fails the comparison.
at::Tensor poisoned(at::IntArrayRef sizes) {
    return at::full(sizes, 0x7f, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
}

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

void casts() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {1, 768}, {3, 1000}, {97, 33}, {97, 768}, {3072, 768},
                                                            {3072, 3072}, {1000, 97}};
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : shapes) {
                const std::string tag = std::string(type == kernels::Fp8Type::E4M3 ? "E4M3" : "E5M2") + " from " +
                                        (input == at::kFloat ? "float32" : "bfloat16") + " " + std::to_string(rows) + "x" +
                                        std::to_string(cols);
                const at::Tensor x = (at::randn({rows, cols}, cuda) * 20).to(input);
                const float scale = kernels::fp8_max(type) / (x.abs().max().item<float>() * 1.5f);
                const at::Tensor scale_t = at::full({1}, scale, cuda.dtype(at::kFloat));
                const at::Tensor want = reference_cast(x, scale, type);
                const float want_amax = x.abs().max().to(at::kFloat).item<float>();

                at::Tensor out = poisoned({rows, cols});
                at::Tensor amax = at::zeros({1}, cuda.dtype(at::kFloat));
                kernels::cast_to_fp8(x.data_ptr(), dtype_of(x), static_cast<std::size_t>(x.numel()), scale_t.data_ptr<float>(),
                                     out.data_ptr(), type, amax.data_ptr<float>(), stream());
                check(out.equal(want), "cast_to_fp8 " + tag + " equals the reference bit for bit");
                check(same_bits(amax.item<float>(), want_amax), "cast_to_fp8 " + tag + " amax exact");

                at::Tensor both = poisoned({rows, cols});
                at::Tensor both_t = poisoned({cols, rows});
                amax.zero_();
                kernels::cast_transpose_to_fp8(x.data_ptr(), dtype_of(x), static_cast<std::size_t>(rows),
                                               static_cast<std::size_t>(cols), scale_t.data_ptr<float>(), both.data_ptr(),
                                               both_t.data_ptr(), type, amax.data_ptr<float>(), stream());
                check(both.equal(want) && both_t.equal(want.t().contiguous()),
                      "cast_transpose_to_fp8 " + tag + " equals the reference and its transpose");
                check(same_bits(amax.item<float>(), want_amax), "cast_transpose_to_fp8 " + tag + " amax exact");
            }
        }
    }

    // Amax combines with what the staging entry holds; a NaN input wins.
    at::Tensor x = at::randn({97}, cuda);
    const at::Tensor one = at::ones({1}, cuda.dtype(at::kFloat));
    at::Tensor out = poisoned({97});
    at::Tensor amax = at::full({1}, 1000.0f, cuda.dtype(at::kFloat));
    kernels::cast_to_fp8(x.data_ptr(), kernels::DType::Float32, 97, one.data_ptr<float>(), out.data_ptr(), kernels::Fp8Type::E4M3,
                         amax.data_ptr<float>(), stream());
    check(amax.item<float>() == 1000.0f, "cast_to_fp8 keeps a larger staged amax");
    x[5] = NAN;
    kernels::cast_to_fp8(x.data_ptr(), kernels::DType::Float32, 97, one.data_ptr<float>(), out.data_ptr(), kernels::Fp8Type::E4M3,
                         amax.data_ptr<float>(), stream());
    check(std::isnan(amax.item<float>()), "cast_to_fp8 records a NaN amax");
}

void transposes() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {3, 1000}, {97, 33}, {3072, 768}};
    for (const at::ScalarType type : {at::kByte, at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : shapes) {
            const at::Tensor x = at::randint(0, 255, {rows, cols}, cuda.dtype(at::kFloat)).to(type);
            at::Tensor out = at::full({cols, rows}, 77, cuda.dtype(type));
            kernels::transpose(x.data_ptr(), x.element_size(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                               out.data_ptr(), stream());
            check(out.equal(x.t().contiguous()), "transpose of " + std::to_string(x.element_size()) + "-byte " +
                                                     std::to_string(rows) + "x" + std::to_string(cols));
        }
    }
}

double relative_error(const at::Tensor& got, const at::Tensor& want) {
    const at::Tensor g = got.to(at::kDouble);
    const at::Tensor w = want.to(at::kDouble);
    const double denominator = w.norm().item<double>();
    return (g - w).norm().item<double>() / (denominator > 0 ? denominator : 1.0);
}

std::string error_text(double error, double bound) {
    char text[64];
    std::snprintf(text, sizeof text, " (error %.3g, bound %.3g)", error, bound);
    return text;
}

kernels::DType kernel_dtype(at::ScalarType type) {
    return type == at::kFloat ? kernels::DType::Float32 : kernels::DType::BFloat16;
}

// LayerNorm against core's reference (ReferenceOps: LibTorch's layer norm in float32).
void layer_norms() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    constexpr float eps = 1e-5f;
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 768}, {3, 1000}, {97, 768}, {3072, 768}, {5, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, hidden] : shapes) {
            const std::string tag = std::string(io == at::kFloat ? "float32 " : "bfloat16 ") + std::to_string(rows) + "x" +
                                    std::to_string(hidden);
            const double bound = io == at::kFloat ? 1e-5 : 1e-2;
            const at::Tensor x = (at::randn({rows, hidden}, cuda) * 3 + 0.5).to(io);
            const at::Tensor gamma = at::randn({hidden}, cuda) * 0.5 + 1;
            const at::Tensor beta = at::randn({hidden}, cuda) * 0.1;
            auto [want, want_mean, want_rstd] = at::native_layer_norm(x.to(at::kFloat), {hidden}, gamma, beta, eps);

            at::Tensor out = at::full({rows, hidden}, NAN, cuda.dtype(io));
            at::Tensor mean = at::full({rows}, NAN, cuda.dtype(at::kFloat));
            at::Tensor rstd = at::full({rows}, NAN, cuda.dtype(at::kFloat));
            at::Tensor q = poisoned({rows, hidden});
            at::Tensor q_t = poisoned({hidden, rows});
            const float scale = 448.0f / (want.abs().max().item<float>() * 1.25f);
            const at::Tensor scale_t = at::full({1}, scale, cuda.dtype(at::kFloat));
            at::Tensor amax = at::zeros({1}, cuda.dtype(at::kFloat));
            const kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                         kernels::Fp8Type::E4M3};
            kernels::layer_norm_forward(x.data_ptr(), kernel_dtype(io), gamma.data_ptr(), beta.data_ptr(), kernels::DType::Float32,
                                        static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden), eps, out.data_ptr(),
                                        kernel_dtype(io), &fp8, mean.data_ptr<float>(), rstd.data_ptr<float>(), stream());
            const double e_out = relative_error(out, want);
            check(e_out < bound, "layer_norm_forward " + tag + " output" + error_text(e_out, bound));
            const double e_stats = std::max(relative_error(mean, want_mean.reshape({-1})), relative_error(rstd, want_rstd.reshape({-1})));
            check(e_stats < 1e-5, "layer_norm_forward " + tag + " mean and rstd" + error_text(e_stats, 1e-5));
            const at::Tensor dequantized = q.view(at::kFloat8_e4m3fn).to(at::kFloat) / scale;
            const double e_fp8 = relative_error(dequantized, want);
            check(e_fp8 < 7e-2, "layer_norm_forward " + tag + " FP8 output" + error_text(e_fp8, 7e-2));
            check(q_t.equal(q.t().contiguous()), "layer_norm_forward " + tag + " FP8 transposed copy");
            const double e_amax = std::abs(amax.item<float>() - want.abs().max().item<float>()) / want.abs().max().item<float>();
            check(e_amax < 1e-5, "layer_norm_forward " + tag + " amax" + error_text(e_amax, 1e-5));

            const at::Tensor dy = at::randn({rows, hidden}, cuda).to(io);
            auto [want_dx, want_dgamma, want_dbeta] = at::native_layer_norm_backward(
                dy.to(at::kFloat), x.to(at::kFloat), {hidden}, want_mean, want_rstd, gamma, beta, {true, true, true});
            at::Tensor dx = at::full({rows, hidden}, NAN, cuda.dtype(io));
            at::Tensor dgamma = at::full({hidden}, NAN, cuda.dtype(at::kFloat));
            at::Tensor dbeta = at::full({hidden}, NAN, cuda.dtype(at::kFloat));
            const std::size_t bytes = kernels::layer_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
            at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda.dtype(at::kByte));
            kernels::layer_norm_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(io), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                         gamma.data_ptr(), kernels::DType::Float32, static_cast<std::size_t>(rows),
                                         static_cast<std::size_t>(hidden), dx.data_ptr(), dgamma.data_ptr(), dbeta.data_ptr(),
                                         workspace.data_ptr(), bytes, stream());
            const double e_dx = relative_error(dx, want_dx);
            check(e_dx < bound, "layer_norm_backward " + tag + " dx" + error_text(e_dx, bound));
            const double e_params = std::max(relative_error(dgamma, want_dgamma), relative_error(dbeta, want_dbeta));
            check(e_params < (io == at::kFloat ? 1e-5 : 1e-2), "layer_norm_backward " + tag + " dgamma and dbeta" + error_text(e_params, bound));
        }
    }
}

// GELU forward and the fused backward against core's reference (LibTorch's tanh GELU in float32).
void gelus() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {3, 1000}, {97, 3072}, {3072, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, cols] : shapes) {
            const std::string tag = std::string(io == at::kFloat ? "float32 " : "bfloat16 ") + std::to_string(rows) + "x" +
                                    std::to_string(cols);
            const double bound = io == at::kFloat ? 1e-5 : 1e-2;
            const at::Tensor x = (at::randn({rows, cols}, cuda) * 2).to(io);
            const at::Tensor want = at::gelu(x.to(at::kFloat), "tanh");
            at::Tensor out = at::full({rows, cols}, NAN, cuda.dtype(io));
            at::Tensor q = poisoned({rows, cols});
            at::Tensor q_t = poisoned({cols, rows});
            const float scale = 448.0f / (want.abs().max().item<float>() * 1.25f);
            const at::Tensor scale_t = at::full({1}, scale, cuda.dtype(at::kFloat));
            at::Tensor amax = at::zeros({1}, cuda.dtype(at::kFloat));
            kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                   kernels::Fp8Type::E4M3};
            kernels::gelu_forward(x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                                  out.data_ptr(), kernel_dtype(io), &fp8, stream());
            const double e_out = relative_error(out, want);
            check(e_out < bound, "gelu_forward " + tag + " output" + error_text(e_out, bound));
            const double e_fp8 = relative_error(q.view(at::kFloat8_e4m3fn).to(at::kFloat) / scale, want);
            check(e_fp8 < 7e-2, "gelu_forward " + tag + " FP8 output" + error_text(e_fp8, 7e-2));
            check(q_t.equal(q.t().contiguous()), "gelu_forward " + tag + " FP8 transposed copy");
            const float want_amax = want.abs().max().item<float>();
            const double e_amax = std::abs(amax.item<float>() - want_amax) / std::max(want_amax, 1e-30f);
            check(e_amax < 1e-4, "gelu_forward " + tag + " amax" + error_text(e_amax, 1e-4));

            const at::Tensor dy = at::randn({rows, cols}, cuda).to(io);
            const at::Tensor want_dx = at::gelu_backward(dy.to(at::kFloat), x.to(at::kFloat), "tanh");
            at::Tensor dx = at::full({rows, cols}, NAN, cuda.dtype(io));
            at::Tensor dq = poisoned({rows, cols});
            at::Tensor dq_t = poisoned({cols, rows});
            const float dscale = 57344.0f / (want_dx.abs().max().item<float>() * 1.25f);
            const at::Tensor dscale_t = at::full({1}, dscale, cuda.dtype(at::kFloat));
            at::Tensor damax = at::zeros({1}, cuda.dtype(at::kFloat));
            at::Tensor dbias = at::full({cols}, NAN, cuda.dtype(at::kFloat));
            const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
            at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda.dtype(at::kByte));
            kernels::Fp8Output dfp8{dq.data_ptr(), dq_t.data_ptr(), dscale_t.data_ptr<float>(), damax.data_ptr<float>(),
                                    kernels::Fp8Type::E5M2};
            kernels::gelu_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows),
                                   static_cast<std::size_t>(cols), dx.data_ptr(), &dfp8, dbias.data_ptr(), kernels::DType::Float32,
                                   workspace.data_ptr(), bytes, stream());
            const double e_dx = relative_error(dx, want_dx);
            check(e_dx < bound, "gelu_backward " + tag + " dx" + error_text(e_dx, bound));
            const double e_dfp8 = relative_error(dq.view(at::kFloat8_e5m2).to(at::kFloat) / dscale, want_dx);
            check(e_dfp8 < 1.3e-1, "gelu_backward " + tag + " FP8 dx (E5M2)" + error_text(e_dfp8, 1.3e-1));
            check(dq_t.equal(dq.t().contiguous()), "gelu_backward " + tag + " FP8 transposed dx");
            const double e_dbias = relative_error(dbias, want_dx.sum(0));
            check(e_dbias < std::max(bound, 1e-5), "gelu_backward " + tag + " dbias" + error_text(e_dbias, bound));
            const float want_damax = want_dx.abs().max().item<float>();
            const double e_damax = std::abs(damax.item<float>() - want_damax) / std::max(want_damax, 1e-30f);
            check(e_damax < 1e-4, "gelu_backward " + tag + " amax" + error_text(e_damax, 1e-4));
        }
    }
}

// The cuBLASLt wrapper against LibTorch's float32 products of the same (dequantized) operands.
void gemms() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    // BF16: model shapes and odd, prime ones.
    const std::tuple<std::int64_t, std::int64_t, std::int64_t> bf16_shapes[] = {
        {3072, 768, 768}, {3072, 3072, 768}, {3072, 768, 3072}, {97, 1000, 33}, {1, 7, 13}, {4096, 4096, 4096}};
    for (const auto& [m, n, k] : bf16_shapes) {
        const std::string tag = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
        const at::Tensor a = at::randn({m, k}, cuda).to(at::kBFloat16);
        const at::Tensor b = at::randn({n, k}, cuda).to(at::kBFloat16);
        const at::Tensor want = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
        at::Tensor d = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
        kernels::GemmArgs g;
        g.m = static_cast<std::size_t>(m);
        g.n = static_cast<std::size_t>(n);
        g.k = static_cast<std::size_t>(k);
        g.a = {a.data_ptr(), kernels::GemmType::BFloat16, nullptr};
        g.b = {b.data_ptr(), kernels::GemmType::BFloat16, nullptr};
        g.d = d.data_ptr();
        kernels::gemm(g, stream());
        const double e = relative_error(d, want);
        check(e < 1e-2, "gemm bfloat16 " + tag + error_text(e, 1e-2));
    }

    // FP8: E4M3 x E4M3 (forward, fast accumulation) and E5M2 grads x E4M3 (backward, split), with scales.
    for (const bool backward : {false, true}) {
        const std::int64_t m = 3072, n = 768, k = 768;
        const auto a_type = backward ? kernels::Fp8Type::E5M2 : kernels::Fp8Type::E4M3;
        const at::Tensor a_hp = at::randn({m, k}, cuda);
        const at::Tensor b_hp = at::randn({n, k}, cuda) * 0.02;
        const float a_scale = kernels::fp8_max(a_type) / a_hp.abs().max().item<float>();
        const float b_scale = 448.0f / b_hp.abs().max().item<float>();
        const at::Tensor a8 = reference_cast(a_hp, a_scale, a_type).view(fp8_of(a_type));
        const at::Tensor b8 = reference_cast(b_hp, b_scale, kernels::Fp8Type::E4M3).view(at::kFloat8_e4m3fn);
        const at::Tensor a_inv = at::full({1}, 1.0f / a_scale, cuda.dtype(at::kFloat));
        const at::Tensor b_inv = at::full({1}, 1.0f / b_scale, cuda.dtype(at::kFloat));
        const at::Tensor want = at::mm(a8.to(at::kFloat) / a_scale, (b8.to(at::kFloat) / b_scale).t());
        const at::Tensor bias = at::randn({n}, cuda).to(at::kBFloat16);
        at::Tensor d = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
        kernels::GemmArgs g;
        g.m = m;
        g.n = n;
        g.k = k;
        g.a = {a8.data_ptr(), backward ? kernels::GemmType::E5M2 : kernels::GemmType::E4M3, a_inv.data_ptr<float>()};
        g.b = {b8.data_ptr(), kernels::GemmType::E4M3, b_inv.data_ptr<float>()};
        g.d = d.data_ptr();
        g.epilogue = kernels::Epilogue::Bias;
        g.bias = bias.data_ptr();
        g.accumulation = backward ? kernels::Accumulation::Split : kernels::Accumulation::Fast;
        kernels::gemm(g, stream());
        const double e = relative_error(d, want + bias.to(at::kFloat));
        check(e < 1e-2, std::string("gemm FP8 ") + (backward ? "E5M2 x E4M3 split" : "E4M3 x E4M3 fast") + " with bias" +
                            error_text(e, 1e-2));
        const std::size_t cached = kernels::gemm_cache_size();
        kernels::gemm(g, stream());
        check(kernels::gemm_cache_size() == cached, "gemm reuses its cached plan for the same shape");
    }

    // Epilogues in bfloat16: GELU with its aux output, then DGELU with the bias gradient, BGRADB.
    const std::int64_t m = 256, n = 384, k = 128;
    const at::Tensor a = at::randn({m, k}, cuda).to(at::kBFloat16);
    const at::Tensor b = (at::randn({n, k}, cuda) * 0.1).to(at::kBFloat16);
    const at::Tensor bias = at::randn({n}, cuda).to(at::kBFloat16);
    const at::Tensor pre = at::mm(a.to(at::kFloat), b.to(at::kFloat).t()) + bias.to(at::kFloat);
    at::Tensor d = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
    at::Tensor aux = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
    kernels::GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = {a.data_ptr(), kernels::GemmType::BFloat16, nullptr};
    g.b = {b.data_ptr(), kernels::GemmType::BFloat16, nullptr};
    g.d = d.data_ptr();
    g.epilogue = kernels::Epilogue::GeluAuxBias;
    g.bias = bias.data_ptr();
    g.aux = aux.data_ptr();
    g.aux_ld = n;
    kernels::gemm(g, stream());
    const double e_aux = relative_error(aux, pre);
    const double e_gelu = relative_error(d, at::gelu(pre, "tanh"));
    check(e_aux < 1e-2 && e_gelu < 1e-2, "gemm GELU_AUX_BIAS: aux" + error_text(e_aux, 1e-2) + ", output" + error_text(e_gelu, 1e-2));

    at::Tensor dgelu = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
    at::Tensor dbias = at::full({n}, NAN, cuda.dtype(at::kBFloat16));
    g.d = dgelu.data_ptr();
    g.epilogue = kernels::Epilogue::DGeluBGrad;
    g.bias = nullptr;
    g.bias_grad = dbias.data_ptr();
    kernels::gemm(g, stream());
    const at::Tensor product = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
    const at::Tensor want_dgelu = at::gelu_backward(product, aux.to(at::kFloat), "tanh");
    const double e_dgelu = relative_error(dgelu, want_dgelu);
    const double e_dbias = relative_error(dbias, want_dgelu.sum(0));
    check(e_dgelu < 1e-2 && e_dbias < 1e-2,
          "gemm DGELU_BGRAD: output" + error_text(e_dgelu, 1e-2) + ", bias gradient" + error_text(e_dbias, 1e-2));

    at::Tensor plain = at::full({m, n}, NAN, cuda.dtype(at::kBFloat16));
    at::Tensor row_sums = at::full({m}, NAN, cuda.dtype(at::kBFloat16));
    g.d = plain.data_ptr();
    g.epilogue = kernels::Epilogue::BGradB;
    g.aux = nullptr;
    g.bias_grad = row_sums.data_ptr();
    kernels::gemm(g, stream());
    const double e_plain = relative_error(plain, product);
    const double e_rows = relative_error(row_sums, a.to(at::kFloat).sum(1));
    check(e_plain < 1e-2 && e_rows < 1e-2, "gemm BGRADB: output" + error_text(e_plain, 1e-2) + ", bias gradient" + error_text(e_rows, 1e-2));
}

}  // namespace

int main() {
    const DeviceInfo device = detect_device();
    if (!device.has_gpu()) {
        std::printf("SKIP  no usable CUDA device: %s\n", device.gpu_error.c_str());
        return 77;
    }
    at::manual_seed(17);
    try {
        casts();
        transposes();
        layer_norms();
        gelus();
        gemms();
        at::cuda::getCurrentCUDAStream().synchronize();
    } catch (const std::exception& e) {
        check(false, std::string("no exception: ") + e.what());
    }
    std::printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
