#include "core/selftest/SelfTest.h"

#include <chrono>
#include <cmath>
#include <exception>
#include <tuple>

#ifdef TEWB_FUSED_OPS
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/fp8/Fp8State.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"
#endif

namespace tewb {

#ifdef TEWB_FUSED_OPS
namespace {

// Bounds of docs/kernels.md.
constexpr double kFloat32Bound = 1e-5;
constexpr double kBf16Bound = 1e-2;
constexpr double kE4m3Bound = 7e-2;
constexpr double kE5m2Bound = 1.3e-1;
constexpr double kComputedAmaxBound = 1e-4;  // the amax of a computed output (LayerNorm, GELU): rounding only

using Shape = std::pair<std::int64_t, std::int64_t>;

class Checks {
public:
    explicit Checks(SelfTestReport& report) : report_(report) {}

    void relative(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
                  const at::Tensor& got, const at::Tensor& want, double bound) {
        const at::Tensor g = got.to(at::kDouble);
        const at::Tensor w = want.to(at::kDouble);
        const double norm = w.norm().item<double>();
        double error = (g - w).norm().item<double>() / (norm > 0 ? norm : 1.0);
        if (std::isnan(error)) error = INFINITY;  // an unwritten (poisoned) element
        add(op, what, shape, dtype, error, bound);
    }

    // The fraction of elements that differ: results that must be exact.
    void exact(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
               const at::Tensor& got, const at::Tensor& want) {
        const double mismatched = got.ne(want).sum().item<double>() / static_cast<double>(std::max<std::int64_t>(1, want.numel()));
        add(op, what, shape, dtype, mismatched, 0.0);
    }

    void amax(const std::string& op, const std::string& shape, const std::string& dtype, const at::Tensor& got, float want,
              double bound) {
        const float g = got.item<float>();
        double error = want > 0 ? std::abs(static_cast<double>(g) - want) / want : std::abs(static_cast<double>(g));
        if (std::isnan(g)) error = INFINITY;
        add(op, "amax", shape, dtype, error, bound);
    }

    // Elements that differ, already counted: results that must be exact.
    void mismatches(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
                    std::int64_t mismatched, std::int64_t compared) {
        add(op, what, shape, dtype, static_cast<double>(mismatched) / static_cast<double>(std::max<std::int64_t>(1, compared)), 0.0);
    }

private:
    void add(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype, double error,
             double bound) {
        report_.cases.push_back({op, what, shape, dtype, error, bound});
    }

    SelfTestReport& report_;
};

std::string shape_text(std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "x" + std::to_string(b);
}

std::string dtype_name(at::ScalarType t) {
    return t == at::kFloat ? "float32" : "bfloat16";
}

at::ScalarType fp8_of(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

const char* fp8_name(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? "E4M3" : "E5M2";
}

cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

at::TensorOptions cuda() {
    return at::TensorOptions().device(at::kCUDA);
}

// Bytes that read as NaN in both FP8 types: an element the kernel never wrote fails.
at::Tensor poisoned_fp8(at::IntArrayRef sizes) {
    return at::full(sizes, 0x7f, cuda().dtype(at::kByte));
}

at::Tensor poisoned(at::IntArrayRef sizes, at::ScalarType type) {
    return at::full(sizes, NAN, cuda().dtype(type));
}

// core's reference cast (ReferenceOps::quantize): float32 product, clamp to ±fp8_max, convert.
at::Tensor reference_cast(const at::Tensor& x, float scale, kernels::Fp8Type type) {
    const float max = kernels::fp8_max(type);
    return (x.to(at::kFloat) * scale).clamp(-max, max).to(fp8_of(type)).view(at::kByte);
}

at::Tensor dequantize(const at::Tensor& bytes, kernels::Fp8Type type, float scale) {
    return bytes.view(fp8_of(type)).to(at::kFloat) / scale;
}

at::Tensor scalar(float value) {
    return at::full({1}, value, cuda().dtype(at::kFloat));
}

void casts(Checks& check) {
    const Shape shapes[] = {{1, 1}, {3, 1000}, {97, 33}, {97, 768}, {3072, 768}, {3072, 3072}};
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : shapes) {
                const std::string shape = shape_text(rows, cols);
                const std::string dtype = dtype_name(input) + " -> " + fp8_name(type);
                const at::Tensor x = (at::randn({rows, cols}, cuda()) * 20).to(input);
                const float want_amax = x.abs().max().to(at::kFloat).item<float>();
                const float scale = kernels::fp8_max(type) / (want_amax * 1.5f);
                const at::Tensor scale_t = scalar(scale);
                const at::Tensor want = reference_cast(x, scale, type);
                at::Tensor out = poisoned_fp8({rows, cols});
                at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
                kernels::cast_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(x.numel()), scale_t.data_ptr<float>(),
                                     out.data_ptr(), type, amax.data_ptr<float>(), stream());
                check.exact("cast_to_fp8", "out", shape, dtype, out, want);
                check.amax("cast_to_fp8", shape, dtype, amax, want_amax, 0.0);

                at::Tensor both = poisoned_fp8({rows, cols});
                at::Tensor both_t = poisoned_fp8({cols, rows});
                amax.zero_();
                kernels::cast_transpose_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(rows),
                                               static_cast<std::size_t>(cols), scale_t.data_ptr<float>(), both.data_ptr(),
                                               both_t.data_ptr(), type, amax.data_ptr<float>(), stream());
                check.exact("cast_transpose_to_fp8", "out", shape, dtype, both, want);
                check.exact("cast_transpose_to_fp8", "out_t", shape, dtype, both_t, want.t().contiguous());
                check.amax("cast_transpose_to_fp8", shape, dtype, amax, want_amax, 0.0);
            }
        }
    }
    for (const at::ScalarType type : {at::kByte, at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : {Shape{1, 1}, Shape{3, 1000}, Shape{97, 33}, Shape{3072, 768}}) {
            const at::Tensor x = at::randint(0, 255, {rows, cols}, cuda().dtype(at::kFloat)).to(type);
            at::Tensor out = at::full({cols, rows}, 77, cuda().dtype(type));
            kernels::transpose(x.data_ptr(), x.element_size(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                               out.data_ptr(), stream());
            check.exact("transpose", "out", shape_text(rows, cols), std::to_string(x.element_size()) + "-byte", out, x.t().contiguous());
        }
    }
}

void layer_norms(Checks& check) {
    constexpr float eps = 1e-5f;
    const Shape shapes[] = {{1, 768}, {3, 1000}, {97, 768}, {3072, 768}, {5, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
        for (const auto& [rows, hidden] : shapes) {
            const std::string shape = shape_text(rows, hidden);
            const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
            const at::Tensor gamma = at::randn({hidden}, cuda()) * 0.5 + 1;
            const at::Tensor beta = at::randn({hidden}, cuda()) * 0.1;
            auto [want, want_mean, want_rstd] = at::native_layer_norm(x.to(at::kFloat), {hidden}, gamma, beta, eps);
            at::Tensor out = poisoned({rows, hidden}, io);
            at::Tensor mean = poisoned({rows}, at::kFloat);
            at::Tensor rstd = poisoned({rows}, at::kFloat);
            at::Tensor q = poisoned_fp8({rows, hidden});
            at::Tensor q_t = poisoned_fp8({hidden, rows});
            const float want_amax = want.abs().max().item<float>();
            const float scale = 448.0f / (want_amax * 1.25f);
            const at::Tensor scale_t = scalar(scale);
            at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
            const kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                         kernels::Fp8Type::E4M3};
            kernels::layer_norm_forward(x.data_ptr(), kernel_dtype(io), gamma.data_ptr(), beta.data_ptr(), kernels::DType::Float32,
                                        static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden), eps, out.data_ptr(),
                                        kernel_dtype(io), &fp8, mean.data_ptr<float>(), rstd.data_ptr<float>(), stream());
            const std::string dtype = dtype_name(io);
            check.relative("layer_norm_forward", "out", shape, dtype, out, want, bound);
            check.relative("layer_norm_forward", "mean", shape, dtype, mean, want_mean.reshape({-1}), kFloat32Bound);
            check.relative("layer_norm_forward", "rstd", shape, dtype, rstd, want_rstd.reshape({-1}), kFloat32Bound);
            check.relative("layer_norm_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                           kE4m3Bound);
            check.exact("layer_norm_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
            check.amax("layer_norm_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

            const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(io);
            auto [want_dx, want_dgamma, want_dbeta] = at::native_layer_norm_backward(
                dy.to(at::kFloat), x.to(at::kFloat), {hidden}, want_mean, want_rstd, gamma, beta, {true, true, true});
            at::Tensor dx = poisoned({rows, hidden}, io);
            at::Tensor dgamma = poisoned({hidden}, at::kFloat);
            at::Tensor dbeta = poisoned({hidden}, at::kFloat);
            const std::size_t bytes =
                kernels::layer_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
            at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
            kernels::layer_norm_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(io), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                         gamma.data_ptr(), kernels::DType::Float32, static_cast<std::size_t>(rows),
                                         static_cast<std::size_t>(hidden), dx.data_ptr(), dgamma.data_ptr(), dbeta.data_ptr(),
                                         workspace.data_ptr(), bytes, stream());
            check.relative("layer_norm_backward", "dx", shape, dtype, dx, want_dx, bound);
            check.relative("layer_norm_backward", "dgamma", shape, dtype, dgamma, want_dgamma, bound);
            check.relative("layer_norm_backward", "dbeta", shape, dtype, dbeta, want_dbeta, bound);
        }
    }
}

void gelus(Checks& check) {
    const Shape shapes[] = {{1, 1}, {3, 1000}, {97, 3072}, {3072, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
        const std::string dtype = dtype_name(io);
        for (const auto& [rows, cols] : shapes) {
            const std::string shape = shape_text(rows, cols);
            const at::Tensor x = (at::randn({rows, cols}, cuda()) * 2).to(io);
            const at::Tensor want = at::gelu(x.to(at::kFloat), "tanh");
            at::Tensor out = poisoned({rows, cols}, io);
            at::Tensor q = poisoned_fp8({rows, cols});
            at::Tensor q_t = poisoned_fp8({cols, rows});
            const float want_amax = want.abs().max().item<float>();
            const float scale = 448.0f / (std::max(want_amax, 1e-30f) * 1.25f);
            const at::Tensor scale_t = scalar(scale);
            at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
            const kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                         kernels::Fp8Type::E4M3};
            kernels::gelu_forward(x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                                  out.data_ptr(), kernel_dtype(io), &fp8, stream());
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
            const float dscale = 57344.0f / (std::max(want_damax, 1e-30f) * 1.25f);
            const at::Tensor dscale_t = scalar(dscale);
            at::Tensor damax = at::zeros({1}, cuda().dtype(at::kFloat));
            at::Tensor dbias = poisoned({cols}, at::kFloat);
            const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
            at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
            const kernels::Fp8Output dfp8{dq.data_ptr(), dq_t.data_ptr(), dscale_t.data_ptr<float>(), damax.data_ptr<float>(),
                                          kernels::Fp8Type::E5M2};
            kernels::gelu_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows),
                                   static_cast<std::size_t>(cols), dx.data_ptr(), &dfp8, dbias.data_ptr(), kernels::DType::Float32,
                                   workspace.data_ptr(), bytes, stream());
            check.relative("gelu_backward", "dx", shape, dtype, dx, want_dx, bound);
            check.relative("gelu_backward", "FP8 dx", shape, dtype + " -> E5M2", dequantize(dq, kernels::Fp8Type::E5M2, dscale), want_dx,
                           kE5m2Bound);
            check.exact("gelu_backward", "FP8 transposed dx", shape, dtype + " -> E5M2", dq_t, dq.t().contiguous());
            check.relative("gelu_backward", "dbias", shape, dtype, dbias, want_dx.sum(0), std::max(bound, kFloat32Bound));
            check.amax("gelu_backward", shape, dtype + " -> E5M2", damax, want_damax, kComputedAmaxBound);
        }
    }
}

kernels::GemmArgs gemm_args(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, kernels::GemmType type) {
    kernels::GemmArgs g;
    g.m = static_cast<std::size_t>(a.size(0));
    g.n = static_cast<std::size_t>(b.size(0));
    g.k = static_cast<std::size_t>(a.size(1));
    g.a = {a.data_ptr(), type, nullptr};
    g.b = {b.data_ptr(), type, nullptr};
    g.d = d.data_ptr();
    return g;
}

void gemms(Checks& check) {
    using Triple = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
    for (const auto& [m, n, k] : {Triple{3072, 768, 768}, Triple{3072, 3072, 768}, Triple{3072, 768, 3072}, Triple{97, 1000, 33},
                                  Triple{1, 7, 13}}) {
        const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
        const at::Tensor b = at::randn({n, k}, cuda()).to(at::kBFloat16);
        at::Tensor d = poisoned({m, n}, at::kBFloat16);
        kernels::gemm(gemm_args(a, b, d, kernels::GemmType::BFloat16), stream());
        check.relative("gemm", "d", std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), "bfloat16", d,
                       at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
    }
    for (const bool backward : {false, true}) {
        const std::int64_t m = 3072, n = 768, k = 768;
        const auto a_type = backward ? kernels::Fp8Type::E5M2 : kernels::Fp8Type::E4M3;
        const at::Tensor a_hp = at::randn({m, k}, cuda());
        const at::Tensor b_hp = at::randn({n, k}, cuda()) * 0.02;
        const float a_scale = kernels::fp8_max(a_type) / a_hp.abs().max().item<float>();
        const float b_scale = 448.0f / b_hp.abs().max().item<float>();
        const at::Tensor a8 = reference_cast(a_hp, a_scale, a_type);
        const at::Tensor b8 = reference_cast(b_hp, b_scale, kernels::Fp8Type::E4M3);
        const at::Tensor a_inv = scalar(1.0f / a_scale);
        const at::Tensor b_inv = scalar(1.0f / b_scale);
        const at::Tensor bias = at::randn({n}, cuda()).to(at::kBFloat16);
        at::Tensor d = poisoned({m, n}, at::kBFloat16);
        kernels::GemmArgs g = gemm_args(a8, b8, d, kernels::GemmType::E4M3);
        g.a = {a8.data_ptr(), backward ? kernels::GemmType::E5M2 : kernels::GemmType::E4M3, a_inv.data_ptr<float>()};
        g.b.scale_inv = b_inv.data_ptr<float>();
        g.epilogue = kernels::Epilogue::Bias;
        g.bias = bias.data_ptr();
        g.accumulation = backward ? kernels::Accumulation::Split : kernels::Accumulation::Fast;
        kernels::gemm(g, stream());
        const at::Tensor want = at::mm(dequantize(a8, a_type, a_scale), dequantize(b8, kernels::Fp8Type::E4M3, b_scale).t()) +
                                bias.to(at::kFloat);
        check.relative("gemm", backward ? "d (split accumulation)" : "d (fast accumulation)", "3072x768x768",
                       backward ? "E5M2 x E4M3 -> bfloat16, bias" : "E4M3 x E4M3 -> bfloat16, bias", d, want, kBf16Bound);
    }
    // Epilogues: GELU with its aux output, DGELU with the bias gradient, BGRADB.
    const std::int64_t m = 256, n = 384, k = 128;
    const std::string shape = "256x384x128";
    const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
    const at::Tensor b = (at::randn({n, k}, cuda()) * 0.1).to(at::kBFloat16);
    const at::Tensor bias = at::randn({n}, cuda()).to(at::kBFloat16);
    const at::Tensor product = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
    const at::Tensor pre = product + bias.to(at::kFloat);
    at::Tensor d = poisoned({m, n}, at::kBFloat16);
    at::Tensor aux = poisoned({m, n}, at::kBFloat16);
    kernels::GemmArgs g = gemm_args(a, b, d, kernels::GemmType::BFloat16);
    g.epilogue = kernels::Epilogue::GeluAuxBias;
    g.bias = bias.data_ptr();
    g.aux = aux.data_ptr();
    g.aux_ld = static_cast<std::size_t>(n);
    kernels::gemm(g, stream());
    check.relative("gemm GELU_AUX_BIAS", "aux", shape, "bfloat16", aux, pre, kBf16Bound);
    check.relative("gemm GELU_AUX_BIAS", "d", shape, "bfloat16", d, at::gelu(pre, "tanh"), kBf16Bound);
    at::Tensor dgelu = poisoned({m, n}, at::kBFloat16);
    at::Tensor dbias = poisoned({n}, at::kBFloat16);
    g.d = dgelu.data_ptr();
    g.epilogue = kernels::Epilogue::DGeluBGrad;
    g.bias = nullptr;
    g.bias_grad = dbias.data_ptr();
    kernels::gemm(g, stream());
    const at::Tensor want_dgelu = at::gelu_backward(product, aux.to(at::kFloat), "tanh");
    check.relative("gemm DGELU_BGRAD", "d", shape, "bfloat16", dgelu, want_dgelu, kBf16Bound);
    check.relative("gemm DGELU_BGRAD", "bias_grad", shape, "bfloat16", dbias, want_dgelu.sum(0), kBf16Bound);
    at::Tensor plain = poisoned({m, n}, at::kBFloat16);
    at::Tensor row_sums = poisoned({m}, at::kBFloat16);
    g.d = plain.data_ptr();
    g.epilogue = kernels::Epilogue::BGradB;
    g.aux = nullptr;
    g.bias_grad = row_sums.data_ptr();
    kernels::gemm(g, stream());
    check.relative("gemm BGRADB", "d", shape, "bfloat16", plain, product, kBf16Bound);
    check.relative("gemm BGRADB", "bias_grad", shape, "bfloat16", row_sums, a.to(at::kFloat).sum(1), kBf16Bound);
}

// The recipe kernel (Fp8Context::update on CUDA) against the host rule, bit for bit.
void recipe_updates(Checks& check) {
    const float specials[] = {0.0f, 1e-37f, 1e-40f, INFINITY, NAN, 3.5f, 1e30f, 0.02f};
    for (const int len : {1, 5, 300}) {
        for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
            const Fp8Recipe recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, len, algo, 1};
            auto context = std::make_shared<Fp8Context>();
            for (int g = 0; g < 5; ++g) context->add_gemm("g" + std::to_string(g));
            context->prepare(recipe, false, c10::Device(c10::kCUDA, 0), fused_ops());
            std::int64_t mismatched = 0;
            std::int64_t compared = 0;
            for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
                const int slots = static_cast<int>(context->scales(pass).size(0));
                std::vector<SlotScaleState> host(static_cast<std::size_t>(slots), SlotScaleState(len));
                for (int step = 0; step < 2 * len + 3 && step < 24; ++step) {
                    for (int s = 0; s < slots; ++s) {
                        const float a = specials[(step * 7 + s * 3) % 8] * (1.0f + 0.125f * static_cast<float>(step % 5));
                        host[static_cast<std::size_t>(s)].history[0] = a;
                        context->record_amax(pass, s, at::scalar_tensor(a, cuda()));
                    }
                    context->update(pass);
                    const at::Tensor scales = context->scales(pass).cpu();
                    const at::Tensor history = context->history(pass).cpu().contiguous();
                    for (int s = 0; s < slots; ++s) {
                        SlotScaleState& h = host[static_cast<std::size_t>(s)];
                        update_delayed(h, fp8_max(context->dtype(pass)), algo, 1);
                        const auto same = [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); };
                        mismatched += same(scales[s].item<float>(), h.scale) ? 0 : 1;
                        const float* row = history.data_ptr<float>() + static_cast<std::ptrdiff_t>(s) * len;
                        for (int i = 0; i < len; ++i) mismatched += same(row[i], h.history[static_cast<std::size_t>(i)]) ? 0 : 1;
                        compared += len + 1;
                    }
                }
            }
            check.mismatches("update_scaling", "scales and histories", "10 slots x " + std::to_string(len),
                             "delayed, " + std::string(to_string(algo)), mismatched, compared);
        }
    }
}

}  // namespace
#endif

SelfTestReport run_self_test([[maybe_unused]] const DeviceInfo& device) {
    SelfTestReport report;
#ifndef TEWB_FUSED_OPS
    report.skip_reason = "this build has no fused kernels (configured without nvcc, TEWB_BUILD_KERNELS=OFF, or a CPU-only LibTorch)";
    return report;
#else
    if (!device.has_gpu()) {
        report.skip_reason = "no usable CUDA device: " + device.gpu_error;
        return report;
    }
    if (*device.compute_capability < ComputeCapability{8, 0}) {
        report.skip_reason = "the fused kernels need compute capability 8.0; this GPU has " + device.compute_capability->to_string();
        return report;
    }
    report.ran = true;
    report.device = device.gpu_name + " (compute capability " + device.compute_capability->to_string() + ")";
    report.seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    try {
        at::manual_seed(report.seed);
        Checks check(report);
        casts(check);
        layer_norms(check);
        gelus(check);
        gemms(check);
        recipe_updates(check);
        at::cuda::getCurrentCUDAStream().synchronize();
    } catch (const std::exception& e) {
        report.error = e.what();
    }
    return report;
#endif
}

}  // namespace tewb
