// The TE-style modules against composed LibTorch ops: FP32 forward and backward within 1e-5; FP8
// (emulated, reference implementation) within the bounds documented in docs/fp8.md; TransformerLayer
// against a plain LibTorch block holding the same weights.
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "core/common/Error.h"
#include "core/device/Capability.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/model/MiniGptTe.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/LayerNorm.h"
#include "core/modules/LayerNormLinear.h"
#include "core/modules/LayerNormMLP.h"
#include "core/modules/Linear.h"
#include "core/modules/RmsNorm.h"
#include "core/modules/TransformerLayer.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/modules/ops/ParameterCopies.h"
#include "core/modules/ops/ReferenceOps.h"
#include "core/train/FusedAdamW.h"

using namespace tewb;

namespace {

double relative_error(const at::Tensor& out, const at::Tensor& ref) {
    return (out.to(at::kDouble) - ref.to(at::kDouble)).norm().item<double>() / ref.to(at::kDouble).norm().item<double>();
}

// TEWB_PRINT_ERRORS=1 prints every measured error (the numbers behind the bounds in docs/fp8.md).
#define CHECK_CLOSE(out, ref, bound)                                                                          \
    do {                                                                                                      \
        const double error_ = relative_error((out), (ref));                                                   \
        if (qEnvironmentVariableIsSet("TEWB_PRINT_ERRORS")) qInfo("%s vs %s: %.3g", #out, #ref, error_);      \
        QVERIFY2(error_ < (bound),                                                                            \
                 qPrintable(QStringLiteral("%1: relative error %2, bound %3").arg(#out).arg(error_).arg(bound))); \
    } while (0)

// A leaf copy of x that collects its own gradient.
at::Tensor leaf(const at::Tensor& x) {
    return x.detach().clone().requires_grad_(true);
}

void zero_grads(torch::nn::Module& module) {
    for (at::Tensor& p : module.parameters()) {
        if (p.grad().defined()) p.mutable_grad().zero_();
    }
}

at::Tensor gelu_mlp(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& b1, const at::Tensor& w2, const at::Tensor& b2) {
    return at::linear(at::gelu(at::linear(x, w1, b1), "tanh"), w2, b2);
}

// The reference ops, counting every call: what a module and its FP8 state ask of the ops in force.
class CountingOps final : public TeOps {
public:
    mutable int calls = 0;
    mutable int amax_calls = 0;
    mutable int update_calls = 0;

    bool reference = true;
    bool native_block = false;

    std::string_view name() const override { return "counting"; }
    OpsKind kind() const override { return reference ? OpsKind::Reference : OpsKind::FusedCuda; }
    bool block_gemms_native() const override { return native_block; }
    at::Tensor abs_max(const at::Tensor& x) const override {
        ++calls, ++amax_calls;
        return ref().abs_max(x);
    }
    void update_scaling(at::Tensor& h, at::Tensor& s, at::Tensor& si, const Fp8Recipe& r, float n,
                        const UpdateRecord& record) const override {
        ++calls, ++update_calls;
        ref().update_scaling(h, s, si, r, n, record);
    }
    LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, double eps,
                                       at::ScalarType t) const override {
        ++calls;
        return ref().layer_norm_forward(x, g, b, eps, t);
    }
    LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                                       const at::Tensor& g) const override {
        ++calls;
        return ref().layer_norm_backward(dy, x, m, r, g);
    }
    at::Tensor gelu_forward(const at::Tensor& x) const override {
        ++calls;
        return ref().gelu_forward(x);
    }
    at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const override {
        ++calls;
        return ref().gelu_backward(dy, x);
    }
    at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    at::ScalarType t) const override {
        ++calls;
        return ref().gemm(a, b, bias, t);
    }
    Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& q, bool with_transpose) const override {
        ++calls;
        return quantize_reference(x, q, with_transpose, *this);  // the amax through this object too
    }
    at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& ai, const at::Tensor& b, const at::Tensor& bi,
                        const std::optional<at::Tensor>& bias, at::ScalarType t, Accumulation acc) const override {
        ++calls;
        return ref().fp8_gemm(a, ai, b, bi, bias, t, acc);
    }
    // The fused steps: counted by name, computed by TeOps' compositions (through the counted primitives).
    mutable std::map<std::string, int> fused;
    mutable std::vector<bool> kept_layernorm_output;
    Fp8Tensor layer_norm_quantize(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, double eps, at::ScalarType t,
                                  const Fp8Quantizer& q, bool keep, LayerNormResult& ln) const override {
        ++fused["layer_norm_quantize"];
        kept_layernorm_output.push_back(keep);
        return TeOps::layer_norm_quantize(x, g, b, eps, t, q, keep, ln);
    }
    Fp8Tensor gelu_quantize(const at::Tensor& x, const Fp8Quantizer& q) const override {
        ++fused["gelu_quantize"];
        return TeOps::gelu_quantize(x, q);
    }
    Fp8GradWithBias gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& q) const override {
        ++fused["gelu_backward_quantize"];
        return TeOps::gelu_backward_quantize(dy, x, q);
    }
    Fp8GradWithBias quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& q) const override {
        ++fused["quantize_dbias"];
        return TeOps::quantize_dbias(dy, q);
    }
    GeluGemmResult gemm_gelu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::ScalarType t) const override {
        ++fused["gemm_gelu"];
        return TeOps::gemm_gelu(x, w, b, t);
    }
    GradWithBias gemm_dgelu(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre, at::ScalarType t) const override {
        ++fused["gemm_dgelu"];
        return TeOps::gemm_dgelu(dy, w, pre, t);
    }
    GradWithBias cast_dbias(const at::Tensor& dy, at::ScalarType t) const override {
        ++fused["cast_dbias"];
        return TeOps::cast_dbias(dy, t);
    }
    GradWithBias wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType t, bool with_bias) const override {
        ++fused[with_bias ? "wgrad_gemm with bias" : "wgrad_gemm"];
        return TeOps::wgrad_gemm(dy, x, t, with_bias);
    }

private:
    static const TeOps& ref() { return reference_ops(); }
};

// Sets an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        value ? setenv(name, value, 1) : unsetenv(name);
    }
    ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

private:
    const char* name_;
    std::optional<std::string> old_;
};

constexpr double kFp32Bound = 1e-5;
// FP8 bounds (docs/fp8.md): forward GEMMs with both operands in E4M3; backward with the gradient in
// E5M2 (HYBRID), after one step has calibrated the scales.
constexpr double kFp8ForwardBound = 7e-2;
constexpr double kFp8BackwardBound = 1.3e-1;

}  // namespace

class TestModules : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init() { at::manual_seed(5); }

    // A run's low-precision parameter copies: the values of `to(dtype)`, kept until the parameter changes, and
    // refreshed together (one launch per step) when one of them is found stale; copies of parameters that are gone
    // are dropped. Without a scope: a plain cast.
    void parameterCopiesAreCastOncePerChangeAndTogether() {
        at::Tensor w1 = at::randn({8, 4});
        at::Tensor w2 = at::randn({4});
        QVERIFY(at::equal(parameter_copy(w1, at::kBFloat16), w1.to(at::kBFloat16)));  // no scope
        ParameterCopies copies;
        const ParameterCopiesScope scope(copies);
        QVERIFY(parameter_copy(w1, at::kFloat).is_same(w1));  // already in the dtype: the parameter itself
        const at::Tensor c1 = parameter_copy(w1, at::kBFloat16);
        const at::Tensor c2 = parameter_copy(w2, at::kBFloat16);
        QVERIFY(at::equal(c1, w1.to(at::kBFloat16)) && at::equal(c2, w2.to(at::kBFloat16)));
        QVERIFY(parameter_copy(w1, at::kBFloat16).is_same(c1));  // unchanged: the same copy, no cast
        QCOMPARE(copies.size(), std::size_t{2});
        {
            const torch::NoGradGuard no_grad;
            w1.add_(1.0);
            w2.mul_(3.0);
        }
        // The first stale lookup refreshes both: w2's copy is new before anyone asks for it.
        QVERIFY(at::equal(parameter_copy(w1, at::kBFloat16), w1.to(at::kBFloat16)));
        QVERIFY(at::equal(c2, w2.to(at::kBFloat16)));
        QVERIFY(parameter_copy(w2, at::kBFloat16).is_same(c2));
        w2 = at::Tensor();  // the parameter is gone: its copy goes at the next refresh
        {
            const torch::NoGradGuard no_grad;
            w1.add_(1.0);
        }
        parameter_copy(w1, at::kBFloat16);
        QCOMPARE(copies.size(), std::size_t{1});

        // AdamW's fused step moves the version counters (its kernel alone would not), so the copies follow it.
        at::Tensor p = at::randn({8, 4}).set_requires_grad(true);
        FusedAdamW optimizer({p}, AdamWSettings{0.1});
        const at::Tensor before = parameter_copy(p, at::kBFloat16).clone();
        (p * p).sum().backward();
        const auto version = p._version();
        optimizer.step();
        QVERIFY(p._version() > version);
        QVERIFY(!at::equal(parameter_copy(p, at::kBFloat16), before));
        QVERIFY(at::equal(parameter_copy(p, at::kBFloat16), p.detach().to(at::kBFloat16)));
    }

    void linearFp32() {
        ParameterInit init(1);
        Linear linear("linear", {96, 80, true, 0.02}, init);
        at::manual_seed(1);
        linear.bias().detach().normal_();  // a non-zero bias, so its gradient and addition are checked
        const at::Tensor x = leaf(at::randn({3, 7, 96}));
        const at::Tensor y = linear.forward(x);
        QCOMPARE(y.sizes(), (at::IntArrayRef{3, 7, 80}));
        const at::Tensor dy = at::randn_like(y);
        y.backward(dy);

        const at::Tensor xr = leaf(x), wr = leaf(linear.weight()), br = leaf(linear.bias());
        const at::Tensor yr = at::linear(xr, wr, br);
        yr.backward(dy);
        CHECK_CLOSE(y, yr, kFp32Bound);
        CHECK_CLOSE(x.grad(), xr.grad(), kFp32Bound);
        CHECK_CLOSE(linear.weight().grad(), wr.grad(), kFp32Bound);
        CHECK_CLOSE(linear.bias().grad(), br.grad(), kFp32Bound);
    }

    void layerNormFp32() {
        ParameterInit init(2);
        LayerNorm norm("ln", 97, init);
        norm.weight().detach().normal_();
        norm.bias().detach().normal_();
        const at::Tensor x = leaf(at::randn({5, 97}) * 3 + 1);
        const at::Tensor y = norm.forward(x);
        const at::Tensor dy = at::randn_like(y);
        y.backward(dy);
        const at::Tensor xr = leaf(x), gr = leaf(norm.weight()), br = leaf(norm.bias());
        const at::Tensor yr = at::layer_norm(xr, {97}, gr, br, kLayerNormEps);
        yr.backward(dy);
        CHECK_CLOSE(y, yr, kFp32Bound);
        CHECK_CLOSE(x.grad(), xr.grad(), kFp32Bound);
        CHECK_CLOSE(norm.weight().grad(), gr.grad(), kFp32Bound);
        CHECK_CLOSE(norm.bias().grad(), br.grad(), kFp32Bound);
    }

    void layerNormLinearFp32WithLayerNormOutput() {
        ParameterInit init(3);
        LayerNormLinear module("lnl", {64, 48, true, 0.02, kLayerNormEps}, init);
        module.layer_norm_weight().detach().normal_();
        module.bias().detach().normal_();
        const at::Tensor x = leaf(at::randn({2, 11, 64}));
        const auto [y, ln] = module.forward_with_layernorm_output(x);
        const at::Tensor dy = at::randn_like(y);
        const at::Tensor dln = at::randn_like(ln);
        torch::autograd::backward({y, ln}, {dy, dln});

        const at::Tensor xr = leaf(x), gr = leaf(module.layer_norm_weight()), br = leaf(module.layer_norm_bias());
        const at::Tensor wr = leaf(module.weight()), wbr = leaf(module.bias());
        const at::Tensor lnr = at::layer_norm(xr, {64}, gr, br, kLayerNormEps);
        const at::Tensor yr = at::linear(lnr, wr, wbr);
        torch::autograd::backward({yr, lnr}, {dy, dln});
        CHECK_CLOSE(y, yr, kFp32Bound);
        CHECK_CLOSE(ln, lnr, kFp32Bound);
        CHECK_CLOSE(x.grad(), xr.grad(), kFp32Bound);
        CHECK_CLOSE(module.layer_norm_weight().grad(), gr.grad(), kFp32Bound);
        CHECK_CLOSE(module.layer_norm_bias().grad(), br.grad(), kFp32Bound);
        CHECK_CLOSE(module.weight().grad(), wr.grad(), kFp32Bound);
        CHECK_CLOSE(module.bias().grad(), wbr.grad(), kFp32Bound);

        const at::Tensor only = module.forward(x);  // without the LayerNorm output
        CHECK_CLOSE(only, yr, kFp32Bound);
    }

    void layerNormMlpFp32() {
        ParameterInit init(4);
        LayerNormMLP mlp("mlp", {64, 256, 0.02, 0.01, kLayerNormEps}, init);
        mlp.layer_norm_bias().detach().normal_();
        mlp.fc1_bias().detach().normal_();
        mlp.fc2_bias().detach().normal_();
        const at::Tensor x = leaf(at::randn({3, 13, 64}));
        const at::Tensor y = mlp.forward(x);
        const at::Tensor dy = at::randn_like(y);
        y.backward(dy);

        std::vector<at::Tensor> ref;
        for (const at::Tensor& p : mlp.parameters()) ref.push_back(leaf(p));
        const at::Tensor xr = leaf(x);
        const at::Tensor yr = gelu_mlp(at::layer_norm(xr, {64}, ref[0], ref[1], kLayerNormEps), ref[2], ref[3], ref[4], ref[5]);
        yr.backward(dy);
        CHECK_CLOSE(y, yr, kFp32Bound);
        CHECK_CLOSE(x.grad(), xr.grad(), kFp32Bound);
        const std::vector<at::Tensor> params = mlp.parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
            CHECK_CLOSE(params[i].grad(), ref[i].grad(), kFp32Bound);
        }
    }

    void transformerLayerMatchesPlainBlock() {
        ParameterInit init(9);
        TransformerLayer layer("block", {64, 4, 256, 0.02, 0.01, kLayerNormEps}, init);
        for (at::Tensor& p : layer.parameters()) {
            if (p.dim() == 1) p.detach().normal_(0.0, 0.1).add_(p.detach().eq(1.0).to(at::kFloat));
        }
        const at::Tensor x = leaf(at::randn({2, 9, 64}));
        const at::Tensor y = layer.forward(x);
        const at::Tensor dy = at::randn_like(y);
        y.backward(dy);

        // The plain block of the torch backend's MiniGPT, on copies of the same weights.
        std::vector<at::Tensor> w;
        for (const at::Tensor& p : layer.parameters()) w.push_back(leaf(p));
        QCOMPARE(w.size(), std::size_t{12});
        const at::Tensor xr = leaf(x);
        const at::Tensor a = at::layer_norm(xr, {64}, w[0], w[1], kLayerNormEps);
        const at::Tensor qkv = at::linear(a, w[2], w[3]).view({2, 9, 3, 4, 16}).permute({2, 0, 3, 1, 4});
        const at::Tensor att = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, true)
                                   .transpose(1, 2)
                                   .reshape({2, 9, 64});
        const at::Tensor h = xr + at::linear(att, w[4], w[5]);
        const at::Tensor yr = h + gelu_mlp(at::layer_norm(h, {64}, w[6], w[7], kLayerNormEps), w[8], w[9], w[10], w[11]);
        yr.backward(dy);
        CHECK_CLOSE(y, yr, kFp32Bound);
        CHECK_CLOSE(x.grad(), xr.grad(), kFp32Bound);
        const std::vector<at::Tensor> params = layer.parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
            CHECK_CLOSE(params[i].grad(), w[i].grad(), kFp32Bound);
        }
    }

    // Which runs' FP8 GEMMs are emulated: every one on the reference ops; block scaling also where the
    // ops have no native block-scaled GEMM (all but Hopper); never delayed or current scaling on kernels.
    void fp8EmulationFollowsOpsAndRecipe() {
        CountingOps ops;
        const auto emulated = [](const TeOps& o, ScalingKind kind) {
            return fp8_gemms_emulated(o.kind(), kind, o.block_gemms_native());
        };
        for (const ScalingKind kind : {ScalingKind::Delayed, ScalingKind::Current, ScalingKind::Block}) {
            QVERIFY(emulated(ops, kind));
        }
        QVERIFY(emulated(reference_ops(), ScalingKind::Delayed));
        ops.reference = false;
        QVERIFY(!emulated(ops, ScalingKind::Delayed));
        QVERIFY(!emulated(ops, ScalingKind::Current));
        QVERIFY(emulated(ops, ScalingKind::Block));
        ops.native_block = true;
        QVERIFY(!emulated(ops, ScalingKind::Block));
    }

    void parametersFollowTheTorchBlockOrder() {
        ParameterInit a(77);
        TransformerLayer layer("b", {32, 2, 128, 0.02, 0.005, kLayerNormEps}, a);
        const auto named = layer.named_parameters();
        const std::vector<std::string> expected{"qkv.layer_norm_weight", "qkv.layer_norm_bias", "qkv.weight", "qkv.bias",
                                                "proj.weight",           "proj.bias",           "mlp.layer_norm_weight",
                                                "mlp.layer_norm_bias",   "mlp.fc1_weight",      "mlp.fc1_bias",
                                                "mlp.fc2_weight",        "mlp.fc2_bias"};
        QCOMPARE(named.size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i) QCOMPARE(named[i].key(), expected[i]);
        ParameterInit b(77);  // the same draws in the same order as the plain block
        QVERIFY(named[0].value().equal(b.ones({32})));
        b.zeros({32});
        QVERIFY(named[2].value().equal(b.normal({96, 32}, 0.02)));
    }

    void fp8ModulesStayWithinBounds() {
        // LayerNormMLP: two FP8 GEMMs per direction, the GELU between them.
        ParameterInit init(12);
        LayerNormMLP mlp("mlp", {128, 512, 0.02, 0.02, kLayerNormEps}, init);
        mlp.fc1_bias().detach().normal_(0.0, 0.1);
        const at::Tensor x = at::randn({4, 31, 128});
        const at::Tensor dy = at::randn({4, 31, 128});
        const auto run_fp8 = [&](at::Tensor& out, at::Tensor& grad) {
            zero_grads(mlp);
            const at::Tensor xi = leaf(x);
            {
                Fp8Scope scope(true);
                out = mlp.forward(xi);
            }
            out.backward(dy);
            grad = xi.grad();
        };
        at::Tensor y8, dx8;
        run_fp8(y8, dx8);  // step 1 runs with scale 1 and calibrates the scales
        run_fp8(y8, dx8);
        const std::vector<at::Tensor> grads8 = [&] {
            std::vector<at::Tensor> g;
            for (const at::Tensor& p : mlp.parameters()) g.push_back(p.grad().clone());
            return g;
        }();

        zero_grads(mlp);
        const at::Tensor xr = leaf(x);
        const at::Tensor yr = mlp.forward(xr);  // FP32: no scope
        yr.backward(dy);
        CHECK_CLOSE(y8, yr, kFp8ForwardBound);
        CHECK_CLOSE(dx8, xr.grad(), kFp8BackwardBound);
        const std::vector<at::Tensor> params = mlp.parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
            CHECK_CLOSE(grads8[i], params[i].grad(), kFp8BackwardBound);
        }
        QVERIFY(relative_error(y8, yr) > 1e-4);  // it really ran in FP8
    }

    // The forward's scale update runs between a forward cast and the backward GEMMs that use it: those
    // must use the scale_inv the cast used, not the new one. Step 2's input is 16 times smaller, so its
    // update (most_recent) makes the input scale 16 times larger; a backward reading the live scale_inv
    // would give a weight gradient 16 times too small. Also with a second forward before the backward.
    void fp8BackwardUsesTheScalesItsForwardCastWith() {
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.amax_history_len = 1;
        recipe.algo = AmaxAlgo::MostRecent;
        const Fp8ScopeSettings settings{recipe, false};
        ParameterInit init(3);
        Linear linear("linear", {64, 32, true, 0.02}, init);
        const at::Tensor x = at::randn({48, 64});
        const at::Tensor dy = at::randn({48, 32});
        const auto fp8_forward = [&](const at::Tensor& input) {
            const Fp8Scope scope(true, settings);
            return linear.forward(input);
        };
        const auto reference_grads = [&](const at::Tensor& input) {
            zero_grads(linear);
            linear.forward(input).backward(dy);  // FP32: no scope
            return std::pair{linear.weight().grad().clone(), linear.bias().grad().clone()};
        };
        fp8_forward(x).backward(dy);  // step 1 calibrates the scales to x
        const at::Tensor small = x / 16;
        zero_grads(linear);
        fp8_forward(small).backward(dy);
        const at::Tensor dw8 = linear.weight().grad().clone();
        const at::Tensor db8 = linear.bias().grad().clone();
        const auto [dw, db] = reference_grads(small);
        CHECK_CLOSE(dw8, dw, kFp8BackwardBound);
        CHECK_CLOSE(db8, db, kFp8BackwardBound);

        // Two forwards, then both backwards (gradient accumulation): each keeps its own scales.
        zero_grads(linear);
        const at::Tensor y1 = fp8_forward(x);
        const at::Tensor y2 = fp8_forward(small);
        (y1 * 0 + y2).backward(dy);  // only the second forward's gradient counts ...
        CHECK_CLOSE(linear.weight().grad(), dw, kFp8BackwardBound);
        fp8_forward(x).backward(dy);  // the scales of x
        zero_grads(linear);
        const at::Tensor z1 = fp8_forward(small);  // cast with x's scales; its update sets those of `small`
        const at::Tensor z2 = fp8_forward(x);      // cast with those; its update changes them again
        (z1 + z2 * 0).backward(dy);                // ... and here only the first's, after the second's update
        CHECK_CLOSE(linear.weight().grad(), dw, kFp8BackwardBound);
    }

    void fp8LinearRecordsAmaxAndCastsWeightsOncePerStep() {
        auto context = std::make_shared<Fp8Context>();
        ParameterInit init(13);
        Linear linear("l", {64, 32, true, 0.02}, init, context);
        const at::Tensor x = at::randn({16, 64}) * 5;
        {
            Fp8Scope scope(true);
            linear.forward(x);
            linear.forward(x * 2);  // a second use in the same step reuses the FP8 weight
            QCOMPARE(context->weight_casts(), std::uint64_t{1});
            QCOMPARE(context->history(Fp8Pass::Forward)[0][0].item<float>(), (x * 2).abs().max().item<float>());
            QCOMPARE(context->history(Fp8Pass::Forward)[1][0].item<float>(), linear.weight().abs().max().item<float>());
        }
        QCOMPARE(context->scales(Fp8Pass::Forward)[0].item<float>(), 448.0f / (x * 2).abs().max().item<float>());
        {
            Fp8Scope scope(true);
            const at::Tensor y = linear.forward(x);  // a new step: the weight is cast again, with the new scale
            QCOMPARE(context->weight_casts(), std::uint64_t{2});
            y.sum().backward();
            QCOMPARE(context->weight_casts(), std::uint64_t{2});  // backward reuses the forward's FP8 weight
        }
        // The backward update ran at the end of backward: grad-output's amax (all ones) is in the history.
        QCOMPARE(context->history(Fp8Pass::Backward)[0][15].item<float>(), 1.0f);
        QCOMPARE(context->scales(Fp8Pass::Backward)[0].item<float>(), 57344.0f);
        const at::Tensor stats = context->statistics();
        QCOMPARE(stats.size(0), 3);
        QCOMPARE(stats[2][0].item<float>(), 1.0f);
    }

    // The run's FP8 weight copies after a forward keep only what the backward reads (the transposed copies): the
    // backward's gradients are those of a run that kept both, and the next forward casts again.
    void fp8WeightCopiesKeepOnlyWhatTheBackwardReads() {
        const at::Tensor x = at::randn({16, 64}) * 5;
        const at::Tensor dy = at::randn({16, 32});
        at::Tensor grads[2];
        for (int release = 0; release < 2; ++release) {
            auto context = std::make_shared<Fp8Context>();
            ParameterInit init(17);
            Linear linear("l", {64, 32, true, 0.02}, init, context);
            ParameterCopies copies;
            const ParameterCopiesScope scope(copies);
            at::Tensor y;
            {
                Fp8Scope fp8(true);
                y = linear.forward(x);
            }
            const std::size_t both = copies.fp8_bytes();
            if (release == 1) {
                copies.release_forward_fp8();
                QVERIFY2(copies.fp8_bytes() < both && copies.fp8_bytes() * 2 >= both - 64,
                         qPrintable(QStringLiteral("%1 of %2 bytes kept").arg(copies.fp8_bytes()).arg(both)));
            }
            y.backward(dy);
            grads[release] = linear.weight().grad().clone();
            Fp8Scope fp8(true);
            linear.forward(x);  // casts again
            QCOMPARE(copies.fp8_bytes(), both);
        }
        QVERIFY(at::equal(grads[0], grads[1]));
    }

    // One rule decides kernels or reference; it is a plain function, so every case is checked here.
    void oneRuleChoosesTheOps() {
        QCOMPARE(choose_ops(TeImpl::Auto, true, true, ComputeCapability{8, 0}), OpsKind::FusedCuda);
        QCOMPARE(choose_ops(TeImpl::Auto, true, true, ComputeCapability{9, 0}), OpsKind::FusedCuda);
        QCOMPARE(choose_ops(TeImpl::Reference, true, true, ComputeCapability{9, 0}), OpsKind::Reference);  // reference wins everywhere
        QCOMPARE(choose_ops(TeImpl::Auto, false, true, ComputeCapability{9, 0}), OpsKind::Reference);      // no CUDA kernels in this build
        QCOMPARE(choose_ops(TeImpl::Auto, true, false, ComputeCapability{9, 0}), OpsKind::Reference);      // a CPU device
        QCOMPARE(choose_ops(TeImpl::Auto, true, true, ComputeCapability{7, 5}), OpsKind::Reference);       // below compute capability 8.0
        QCOMPARE(choose_ops(TeImpl::Fused, false, false, std::nullopt), OpsKind::FusedHost);    // the CPU: the host kernels
        QCOMPARE(choose_ops(TeImpl::Fused, true, true, ComputeCapability{9, 0}), OpsKind::FusedCuda);
        for (const auto& [built, cc, why] : {std::tuple{true, ComputeCapability{7, 5}, "compute capability 8.0 or newer, this GPU has 7.5"},
                                            std::tuple{false, ComputeCapability{9, 0}, "no CUDA kernels"}}) {
            try {
                choose_ops(TeImpl::Fused, built, true, cc);
                QFAIL("fused on a GPU the kernels cannot run on was accepted");
            } catch (const ConfigError& e) {
                QVERIFY2(QString(e.what()).contains(QLatin1String(why)), e.what());
            }
        }
        const TeOps& cpu = select_ops(at::kCPU, TeImpl::Auto);
        QVERIFY(cpu.is_reference());
        QCOMPARE(std::string(cpu.name()), std::string("reference"));
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        QCOMPARE(host.kind(), OpsKind::FusedHost);
        QCOMPARE(std::string(to_string(host.kind())), std::string("fused-host"));
        QVERIFY(fp8_gemms_emulated(host.kind(), ScalingKind::Delayed, host.block_gemms_native()));  // host FP8 GEMMs are float32 emulation
    }

    // The fused path's casts over the host kernels are the reference's casts bit for bit, for every recipe:
    // the FP8 data, the transposed copy (a contiguous tensor here, a view in the reference), the scale_inv
    // and what the slot recorded; tensors of float32 and bfloat16 with values far beyond the delayed scale
    // (saturation) and tiny ones (underflow).
    void fusedHostCastsAreTheReferenceCasts_data() {
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("calibrate");
        QTest::addColumn<bool>("inspect");
        QTest::addColumn<bool>("bf16");
        for (const bool bf16 : {false, true}) {
            for (const bool inspect : {false, true}) {
                const QString tail = QStringLiteral("%1%2").arg(bf16 ? " bf16" : " fp32", inspect ? ", inspected" : "");
                QTest::newRow(qPrintable("delayed" + tail)) << int(ScalingKind::Delayed) << false << inspect << bf16;
                QTest::newRow(qPrintable("calibrating" + tail)) << int(ScalingKind::Delayed) << true << inspect << bf16;
                QTest::newRow(qPrintable("current" + tail)) << int(ScalingKind::Current) << false << inspect << bf16;
                QTest::newRow(qPrintable("block" + tail)) << int(ScalingKind::Block) << false << inspect << bf16;
            }
        }
    }

    void fusedHostCastsAreTheReferenceCasts() {
        QFETCH(int, scaling);
        QFETCH(bool, calibrate);
        QFETCH(bool, inspect);
        QFETCH(bool, bf16);
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.scaling = static_cast<ScalingKind>(scaling);
        recipe.calibrate_first_step = calibrate;
        if (recipe.scaling != ScalingKind::Delayed) recipe.margin = 0;
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        const auto bits = [](const at::Tensor& t) { return t.contiguous().view(at::kByte); };
        at::manual_seed(5);
        const auto make_input = [&](double magnitude) {
            at::Tensor x = at::randn({96, 257}, at::kFloat) * magnitude;
            x.select(0, 3).mul_(1e-6);     // underflow
            x.select(1, 100).mul_(1e4);    // far beyond a delayed scale taken from an earlier tensor: saturation
            return bf16 ? x.to(at::kBFloat16) : x;
        };
        std::shared_ptr<Fp8Context> contexts[2] = {std::make_shared<Fp8Context>(), std::make_shared<Fp8Context>()};
        for (int i = 0; i < 2; ++i) {
            contexts[i]->add_gemm("probe");
            contexts[i]->prepare(recipe, inspect, at::kCPU, i == 0 ? reference_ops() : host);
        }
        for (int round = 0; round < 3; ++round) {
            const at::Tensor x = make_input(round == 0 ? 1.0 : 3.0);
            Fp8Tensor q[2];
            for (int i = 0; i < 2; ++i) {
                const TeOps& ops = i == 0 ? reference_ops() : host;
                q[i] = ops.quantize(x, {contexts[i], Fp8Pass::Forward, 0}, /*with_transpose=*/true);
            }
            const QString where = QStringLiteral("round %1").arg(round);
            QVERIFY2(at::equal(bits(q[0].data), bits(q[1].data)), qPrintable(where + ": data"));
            QVERIFY2(q[1].transposed.is_contiguous(), qPrintable(where + ": the fused transposed copy is a real copy"));
            QVERIFY2(at::equal(bits(q[0].transposed), bits(q[1].transposed)), qPrintable(where + ": transposed copy"));
            QVERIFY2(at::equal(q[0].scale_inv, q[1].scale_inv), qPrintable(where + ": scale_inv"));
            if (q[0].transposed_scale_inv.defined()) {
                QVERIFY2(at::equal(q[0].transposed_scale_inv, q[1].transposed_scale_inv), qPrintable(where + ": transposed scales"));
            }
            QVERIFY2(at::equal(contexts[0]->history(Fp8Pass::Forward), contexts[1]->history(Fp8Pass::Forward)),
                     qPrintable(where + ": the slot's amax history"));
            QVERIFY2(at::equal(contexts[0]->scales(Fp8Pass::Forward), contexts[1]->scales(Fp8Pass::Forward)),
                     qPrintable(where + ": the slot's scale"));
            for (int i = 0; i < 2; ++i) contexts[i]->update(Fp8Pass::Forward);
            if (inspect) {  // the update copies the step's counts into the statistics; NaN marks what is not counted
                QVERIFY2(at::allclose(contexts[0]->statistics(), contexts[1]->statistics(), 0, 0, /*equal_nan=*/true),
                         qPrintable(where + ": inspection"));
                QVERIFY(!at::isnan(contexts[1]->statistics()).all().item<bool>());
            }
        }
    }

    void teImplComesFromTheEnvironmentOrIsRefused() {
        {
            const ScopedEnv env("TEWB_TE_IMPL", nullptr);
            QCOMPARE(te_impl_from_environment(), TeImpl::Auto);
        }
        {
            const ScopedEnv env("TEWB_TE_IMPL", "reference");
            QCOMPARE(te_impl_from_environment(), TeImpl::Reference);
        }
        {
            const ScopedEnv env("TEWB_TE_IMPL", "fused");
            QCOMPARE(te_impl_from_environment(), TeImpl::Fused);
        }
        const ScopedEnv env("TEWB_TE_IMPL", "kernels");
        try {
            te_impl_from_environment();
            QFAIL("TEWB_TE_IMPL=kernels was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString(e.what()),
                     QStringLiteral("environment variable TEWB_TE_IMPL 'kernels': unknown value; allowed: auto|fused|reference"));
        }
    }

    // The ops in force reach every op of a module, forward and backward, and its FP8 state's amax and
    // scale update too: nothing chooses on its own.
    void theOpsInForceDoEverything() {
        QVERIFY(ops_in_force(at::kCPU).is_reference());  // outside a scope: select_ops for the device
        const CountingOps counting;
        auto context = std::make_shared<Fp8Context>();
        ParameterInit init(21);
        LayerNormMLP mlp("mlp", {32, 64, 0.02, 0.02, kLayerNormEps}, init, context);
        {
            const OpsScope ops_scope(counting);
            QCOMPARE(&ops_in_force(at::kCPU), static_cast<const TeOps*>(&counting));
            {
                const CountingOps inner;
                const OpsScope inner_scope(inner);
                QCOMPARE(&ops_in_force(at::kCPU), static_cast<const TeOps*>(&inner));
            }
            QCOMPARE(&ops_in_force(at::kCPU), static_cast<const TeOps*>(&counting));
            at::Tensor y;
            {
                Fp8Scope scope(true);
                y = mlp.forward(at::randn({16, 32}));
            }
            y.sum().backward();
        }
        QVERIFY(ops_in_force(at::kCPU).is_reference());  // the scope ended
        QVERIFY2(counting.amax_calls >= 4, qPrintable(QString::number(counting.amax_calls)));   // input, weight, grad casts
        QCOMPARE(counting.update_calls, 2);  // the forward and the backward pass, once each
        QVERIFY(counting.calls > counting.amax_calls + counting.update_calls);
    }

    // The modules reach the fused steps (FusedOps runs each in one pass where it can): in FP8 the LayerNorm
    // writes fc1's input (its high-precision output only when LayerNormLinear returns it), one GELU pass
    // writes fc2's input and one the backward's gradient with fc1's bias gradient; in high precision GELU
    // rides fc1's GEMM, its derivative comes with fc1's bias gradient (gemm_dgelu) and each other bias gradient
    // with its output gradient's cast (cast_dbias). The results equal the unfused reference's.
    void modulesUseTheFusedSteps() {
        for (const bool fp8 : {true, false}) {
            const CountingOps counting;
            auto context = std::make_shared<Fp8Context>();
            ParameterInit init(5);
            LayerNormMLP mlp("mlp", {32, 64, 0.02, 0.02, kLayerNormEps}, init, context);
            LayerNormLinear qkv("qkv", {32, 96, true, 0.02, kLayerNormEps}, init, context);
            ParameterInit same(5);
            auto reference_context = std::make_shared<Fp8Context>();
            LayerNormMLP mlp_ref("mlp", {32, 64, 0.02, 0.02, kLayerNormEps}, same, reference_context);
            LayerNormLinear qkv_ref("qkv", {32, 96, true, 0.02, kLayerNormEps}, same, reference_context);
            const at::Tensor x = at::randn({16, 32});
            at::Tensor outputs[2];
            for (int which = 0; which < 2; ++which) {
                const OpsScope ops_scope(which == 0 ? static_cast<const TeOps&>(counting) : reference_ops());
                LayerNormMLP& m = which == 0 ? mlp : mlp_ref;
                LayerNormLinear& q = which == 0 ? qkv : qkv_ref;
                at::Tensor y;
                {
                    Fp8Scope scope(fp8);
                    const at::Tensor a = m.forward(x).sum();
                    const at::Tensor b = q.forward(x).sum();
                    y = a + b + q.forward_with_layernorm_output(x).second.sum();
                }
                y.backward();
                outputs[which] = y.detach();
            }
            QVERIFY(at::allclose(outputs[0], outputs[1]));
            QVERIFY(at::allclose(mlp.parameters()[0].grad(), mlp_ref.parameters()[0].grad()));
            if (fp8) {
                QCOMPARE(counting.fused["layer_norm_quantize"], 3);
                QCOMPARE(counting.kept_layernorm_output, (std::vector<bool>{false, false, true}));
                QCOMPARE(counting.fused["gelu_quantize"], 1);
                QCOMPARE(counting.fused["gelu_backward_quantize"], 1);
                QCOMPARE(counting.fused["quantize_dbias"], 3);  // fc2, and qkv twice: the GEMMs with a bias
                QCOMPARE(counting.fused["gemm_gelu"], 0);
            } else {
                QCOMPARE(counting.fused["layer_norm_quantize"], 0);
                QCOMPARE(counting.fused["gemm_gelu"], 1);
                QCOMPARE(counting.fused["gemm_dgelu"], 1);
                // One pass casts each biased GEMM's output gradient and sums its bias gradient: fc2, and qkv twice; fc1's
                // comes from the dgelu. No wgrad sums a bias gradient in cuBLASLt's epilogue.
                QCOMPARE(counting.fused["cast_dbias"], 3);
                QCOMPARE(counting.fused["wgrad_gemm with bias"], 0);
                QCOMPARE(counting.fused["wgrad_gemm"], 4);
            }
        }
    }

    // Transformer Engine's llama options: RMSNorm (no layer_norm_bias), SwiGLU (fc1 [2 · ffn, hidden] = [gate | up]),
    // no biases, grouped-query attention (QKV output (heads + 2 · kv) · head_dim); key/value heads that do not divide
    // the heads are refused with the reason.
    void llamaOptionsShapeTheTeModules() {
        ParameterInit init(4);
        TransformerLayer::Options options{64, 4, 96, 0.02, 0.01, 1e-5};
        options.normalization = Normalization::RmsNorm;
        options.activation = Activation::Swiglu;
        options.bias = false;
        options.kv_heads = 2;
        TransformerLayer layer("blk", options, init);
        std::vector<std::string> names;
        for (const auto& item : layer.named_parameters()) names.push_back(item.key());
        const std::vector<std::string> want{"qkv.layer_norm_weight", "qkv.weight",        "proj.weight",
                                            "mlp.layer_norm_weight", "mlp.fc1_weight", "mlp.fc2_weight"};
        QCOMPARE(names, want);
        QCOMPARE(layer.qkv().weight().sizes(), (c10::IntArrayRef{(4 + 2 * 2) * 16, 64}));
        QCOMPARE(layer.mlp().fc1_weight().sizes(), (c10::IntArrayRef{2 * 96, 64}));
        QCOMPARE(layer.mlp().fc2_weight().sizes(), (c10::IntArrayRef{64, 96}));
        QVERIFY(!layer.mlp().fc1_bias().defined() && !layer.proj().bias().defined());
        options.kv_heads = 3;
        try {
            TransformerLayer odd("odd", options, init);
            QFAIL("accepted 3 key/value heads for 4 heads");
        } catch (const ConfigError& e) {
            QCOMPARE(std::string(e.what()), std::string("odd: key/value heads 3 do not divide heads 4"));
        }
    }

    // The te RMSNorm module and a llama block (RMSNorm, SwiGLU, no biases, 4 query heads over 2 key/value heads,
    // rotary embeddings) against the same computation in LibTorch ops (at::rms_norm, at::silu, sdpa with enable_gqa),
    // float32: outputs, the input's gradient and every parameter's within 1e-5, on the reference and the fused host ops.
    void llamaBlockMatchesLibTorch_data() {
        QTest::addColumn<int>("impl");
        QTest::newRow("reference") << int(TeImpl::Reference);
        QTest::newRow("fused-host") << int(TeImpl::Fused);
    }
    void llamaBlockMatchesLibTorch() {
        QFETCH(int, impl);
        torch::manual_seed(11);
        const OpsScope ops_scope(select_ops(at::kCPU, static_cast<TeImpl>(impl)));
        ParameterInit init(6);
        RmsNorm norm("norm", 64, init, 1e-5);
        norm.weight().data().uniform_(0.5, 1.5);
        const at::Tensor x = leaf(at::randn({3, 8, 64}));
        const at::Tensor x_ref = leaf(x);
        const at::Tensor w_ref = leaf(norm.weight());
        const at::Tensor probe = at::randn({3, 8, 64});
        (norm.forward(x) * probe).sum().backward();
        (at::rms_norm(x_ref, {64}, w_ref, 1e-5) * probe).sum().backward();
        CHECK_CLOSE(norm.forward(x).detach(), at::rms_norm(x_ref, {64}, w_ref, 1e-5).detach(), 1e-5);
        CHECK_CLOSE(x.grad(), x_ref.grad(), 1e-5);
        CHECK_CLOSE(norm.weight().grad(), w_ref.grad(), 1e-5);

        TransformerLayer::Options options{64, 4, 96, 0.05, 0.05, 1e-5};
        options.normalization = Normalization::RmsNorm;
        options.activation = Activation::Swiglu;
        options.bias = false;
        options.kv_heads = 2;
        TransformerLayer layer("blk", options, init);
        const std::int64_t d = 16;
        const at::Tensor angle = at::arange(8, at::kFloat).unsqueeze(1) * at::pow(10000.0, -at::arange(0, d, 2, at::kFloat) / d);
        const RotaryAngles rotary{at::cos(angle), at::sin(angle)};
        const at::Tensor h = leaf(at::randn({3, 8, 64}));
        const at::Tensor h_ref = leaf(h);
        std::map<std::string, at::Tensor> p;
        for (const auto& item : layer.named_parameters()) p[item.key()] = leaf(item.value());
        const auto rotate = [&](const at::Tensor& t) {  // [b, s, heads, d], rotate-half
            const at::Tensor c = rotary.cos.unsqueeze(0).unsqueeze(2);
            const at::Tensor sn = rotary.sin.unsqueeze(0).unsqueeze(2);
            const at::Tensor a = t.narrow(3, 0, d / 2);
            const at::Tensor b = t.narrow(3, d / 2, d / 2);
            return at::cat({a * c - b * sn, b * c + a * sn}, 3);
        };
        const at::Tensor qkv = at::linear(at::rms_norm(h_ref, {64}, p["qkv.layer_norm_weight"], 1e-5), p["qkv.weight"]).view({3, 8, 8, d});
        const at::Tensor q = rotate(qkv.narrow(2, 0, 4)).transpose(1, 2);
        const at::Tensor k = rotate(qkv.narrow(2, 4, 2)).transpose(1, 2);
        const at::Tensor v = qkv.narrow(2, 6, 2).transpose(1, 2);
        const at::Tensor att = at::scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, true).transpose(1, 2).reshape({3, 8, 64});
        const at::Tensor mid = h_ref + at::linear(att, p["proj.weight"]);
        const at::Tensor g = at::linear(at::rms_norm(mid, {64}, p["mlp.layer_norm_weight"], 1e-5), p["mlp.fc1_weight"]);
        const at::Tensor want = mid + at::linear(at::silu(g.narrow(-1, 0, 96)) * g.narrow(-1, 96, 96), p["mlp.fc2_weight"]);
        const at::Tensor got = layer.forward(h, &rotary);
        CHECK_CLOSE(got.detach(), want.detach(), 1e-5);
        (got * probe).sum().backward();
        (want * probe).sum().backward();
        CHECK_CLOSE(h.grad(), h_ref.grad(), 1e-5);
        for (const auto& item : layer.named_parameters()) {
            QVERIFY2(item.value().grad().defined(), item.key().c_str());
            CHECK_CLOSE(item.value().grad(), p[item.key()].grad(), 1e-5);
        }
    }

    void badInputIsRefusedWithTheModuleName() {
        ParameterInit init(1);
        Linear linear("blocks_0.proj", {8, 4, true, 0.02}, init);
        try {
            linear.forward(at::randn({2, 9}));
            QFAIL("accepted a wrong feature size");
        } catch (const ConfigError& e) {
            QCOMPARE(std::string(e.what()), std::string("blocks_0.proj: input has last dimension 9; expected 8"));
        }
        TransformerLayer layer("blk", {16, 2, 64, 0.02, 0.02, kLayerNormEps}, init);
        QVERIFY_THROWS_EXCEPTION(ConfigError, layer.forward(at::randn({2, 16})));
        QVERIFY_THROWS_EXCEPTION(ConfigError, TransformerLayer("odd", {16, 3, 64, 0.02, 0.02, kLayerNormEps}, init));

        const at::Tensor x = leaf(at::randn({2, 8}));
        const at::Tensor y = linear.forward(x).sum();
        y.backward({}, /*retain_graph=*/true);
        bool refused = false;
        try {
            y.backward();
        } catch (const std::exception& e) {
            refused = std::string(e.what()).find("backward ran twice") != std::string::npos;
        }
        QVERIFY(refused);
    }

    // The model's two ends (fused embedding; tied head and loss with the gradient computed in the forward, the tied
    // table's two gradients summed in place) against LibTorch's embedding, linear and cross_entropy_loss with the
    // autograd engine's sum, float32, for the reference and the fused ops on the host: the loss and every
    // parameter's gradient within 1e-5. Tokens and targets are narrows of one [batch, seq + 1] tensor (strided rows)
    // and repeat (a vocabulary of 11). A loss gradient other than unit_loss_gradient's scales every gradient.
    void modelEndsMatchLibTorch_data() {
        QTest::addColumn<int>("impl");
        QTest::newRow("reference") << int(TeImpl::Reference);
        QTest::newRow("fused-host") << int(TeImpl::Fused);
    }
    void modelEndsMatchLibTorch() {
        QFETCH(int, impl);
        torch::manual_seed(5);
        const ModelShape shape{1, 16, 2, 6, 11};
        MiniGptTe model(shape, 3);
        const at::Tensor batch = at::randint(shape.vocab, {3, shape.seq + 1}, at::kLong);
        const at::Tensor tokens = batch.narrow(1, 0, shape.seq);
        const at::Tensor targets = batch.narrow(1, 1, shape.seq);
        const OpsScope ops_scope(select_ops(at::kCPU, static_cast<TeImpl>(impl)));
        const auto gradients = [&](const std::function<at::Tensor()>& run, const std::function<void(const at::Tensor&)>& backward) {
            for (at::Tensor& p : model.parameters()) p.mutable_grad().reset();
            const at::Tensor loss = run();
            backward(loss);
            std::vector<at::Tensor> grads{loss.detach()};
            for (const at::Tensor& p : model.parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
            return grads;
        };
        const auto libtorch = [&] {
            const at::Tensor logits = model.forward(tokens);
            return at::cross_entropy_loss(logits.reshape({-1, shape.vocab}), targets.reshape({-1}));
        };
        const auto fused = [&] { return model.loss(tokens, targets); };
        const auto unit = [](const at::Tensor& loss) { loss.backward(unit_loss_gradient(loss.device())); };
        const std::vector<at::Tensor> expected = gradients(libtorch, [](const at::Tensor& loss) { loss.backward(); });
        const std::vector<at::Tensor> got = gradients(fused, unit);
        QCOMPARE(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(got[i].defined(), qPrintable(QStringLiteral("gradient %1 missing").arg(i)));
            CHECK_CLOSE(got[i], expected[i], 1e-5);
        }
        // The engine's own seed (a tensor of ones that is not the unit gradient) and a gradient of 2.5.
        const std::vector<at::Tensor> seeded = gradients(fused, [](const at::Tensor& loss) { loss.backward(); });
        const std::vector<at::Tensor> scaled =
            gradients(fused, [](const at::Tensor& loss) { loss.backward(at::full({}, 2.5f, loss.options())); });
        for (std::size_t i = 1; i < got.size(); ++i) {
            CHECK_CLOSE(seeded[i], got[i], 1e-6);
            CHECK_CLOSE(scaled[i], got[i] * 2.5, 1e-6);
        }
        // Other gradients of the table in the same backward (a second loss over other tokens, a penalty on the
        // table): the engine adds them to the pair's.
        const at::Tensor other = at::randint(shape.vocab, {3, shape.seq + 1}, at::kLong);
        const at::Tensor table = *model.named_parameters().find("wte");
        const std::vector<at::Tensor> expected_sum = gradients(
            [&] {
                const at::Tensor more = at::cross_entropy_loss(model.forward(other.narrow(1, 0, shape.seq)).reshape({-1, shape.vocab}),
                                                               other.narrow(1, 1, shape.seq).reshape({-1}));
                return libtorch() + more + 0.1 * table.square().sum();
            },
            [](const at::Tensor& loss) { loss.backward(); });
        const std::vector<at::Tensor> got_sum = gradients(
            [&] { return fused() + model.loss(other.narrow(1, 0, shape.seq), other.narrow(1, 1, shape.seq)) + 0.1 * table.square().sum(); },
            [](const at::Tensor& loss) { loss.backward(); });
        for (std::size_t i = 0; i < got_sum.size(); ++i) CHECK_CLOSE(got_sum[i], expected_sum[i], 1e-5);
    }

    // Bad targets and tokens in the fused ops: a NaN loss and NaN rows, never a crash or a read out of bounds.
    void modelEndsMarkOutOfRangeIdsAsNaN() {
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        at::Tensor logits = at::randn({4, 7});
        const at::Tensor targets = at::tensor({0, 6, 7, -1}, at::kLong).reshape({2, 2});
        const at::Tensor loss = host.cross_entropy_with_grad(logits, targets);
        QVERIFY(std::isnan(loss.item<float>()));
        QVERIFY(!logits[0].isnan().any().item<bool>());
        QVERIFY(logits[2].isnan().all().item<bool>() && logits[3].isnan().all().item<bool>());
        const at::Tensor table = at::randn({5, 8});
        const at::Tensor out = host.embedding_forward(table, at::zeros({2, 8}), at::tensor({1, 5}, at::kLong).reshape({1, 2}));
        QVERIFY(at::equal(out[0], table[1]));
        QVERIFY(out[1].isnan().all().item<bool>());
        // Without a position table (llama) too: LibTorch's embedding would throw on token 5.
        const at::Tensor gathered = host.embedding_forward(table, at::Tensor(), at::tensor({1, 5}, at::kLong).reshape({1, 2}));
        QVERIFY(at::equal(gathered[0], table[1]));
        QVERIFY(gathered[1].isnan().all().item<bool>());
    }

    // Llama's input (no position table) on the embedding kernel: one launch that reads a narrowed token batch where it
    // lies, each row its token's table row bit for bit, in float32 and bfloat16.
    void embeddingWithoutPositionsIsOneLaunch() {
        torch::manual_seed(13);
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        const at::Tensor batch = at::randint(17, {3, 9}, at::kLong);
        const at::Tensor tokens = batch.narrow(1, 0, 8);
        for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
            const at::Tensor table = at::randn({17, 24}).to(dtype);
            const std::uint64_t before = host.kernel_launches();
            const at::Tensor out = host.embedding_forward(table, at::Tensor(), tokens);
            QCOMPARE(host.kernel_launches() - before, std::uint64_t{1});
            QCOMPARE(out.sizes(), (at::IntArrayRef{24, 24}));
            QVERIFY(at::equal(out, at::embedding(table, tokens).reshape({-1, 24})));
        }
    }

    // AdamW through the fused ops on the host (one launch, the bfloat16 copies written by the same pass) against
    // LibTorch's _fused_adamw_: parameters within 1e-6 relative after three steps; a ParameterCopies copy equals the
    // new parameter's bfloat16 value right after the step, before anything asks for it again (so no refresh made it).
    void adamWThroughTheFusedOps() {
        torch::manual_seed(9);
        std::vector<at::Tensor> a, b;
        for (const std::vector<std::int64_t>& shape : std::vector<std::vector<std::int64_t>>{{33, 7}, {129}, {4, 4, 4}}) {
            const at::Tensor p = at::randn(shape);
            a.push_back(p.clone().requires_grad_(true));
            b.push_back(p.clone().requires_grad_(true));
        }
        FusedAdamW libtorch(a, AdamWSettings{1e-2});
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        FusedAdamW fused(b, AdamWSettings{1e-2}, &host);
        ParameterCopies copies;
        const ParameterCopiesScope scope(copies);
        const std::uint64_t launches = host.kernel_launches();
        for (int step = 0; step < 3; ++step) {
            const at::Tensor copy = parameter_copy(b[0], at::kBFloat16);
            for (std::size_t i = 0; i < a.size(); ++i) {
                const at::Tensor g = at::randn(a[i].sizes());
                a[i].mutable_grad() = g.clone();
                b[i].mutable_grad() = g.clone();
            }
            libtorch.step();
            fused.step();
            QVERIFY(at::equal(copy, b[0].detach().to(at::kBFloat16)));
            QVERIFY(parameter_copy(b[0], at::kBFloat16).is_same(copy));
        }
        QCOMPARE(host.kernel_launches() - launches, std::uint64_t{3});
        for (std::size_t i = 0; i < a.size(); ++i) CHECK_CLOSE(b[i].detach(), a[i].detach(), 1e-6);
    }

    // Under delayed scaling the optimizer's step writes the weights' FP8 copies as the next forward would cast
    // them: four steps of an FP8 Linear give the same outputs and weights, bit for bit, as with the forward's
    // casts, with one launch fewer per step after the first (the forward's multi-tensor cast: the step's own
    // launch writes them), and the copies count as current (the forward casts nothing).
    void optimizerWritesTheFp8WeightCopies() {
        const TeOps& host = select_ops(at::kCPU, TeImpl::Fused);
        const OpsScope ops_scope(host);
        torch::manual_seed(5);
        const at::Tensor x = at::randn({16, 64}) * 3;
        const at::Tensor dy = at::randn({16, 32});
        std::vector<at::Tensor> outputs[2], weights[2];
        std::uint64_t launches[2] = {};
        std::uint64_t casts[2] = {};
        for (int write = 0; write < 2; ++write) {
            auto context = std::make_shared<Fp8Context>();
            ParameterInit init(17);
            Linear linear("l", {64, 32, true, 0.02}, init, context);
            ParameterCopies copies;
            const ParameterCopiesScope scope(copies);
            FusedAdamW optimizer(linear.parameters(), AdamWSettings{1e-2}, &host);
            optimizer.set_write_fp8_copies(write == 1);
            const std::uint64_t before = host.kernel_launches();
            for (int step = 0; step < 4; ++step) {
                at::Tensor y;
                {
                    Fp8Scope fp8(true);
                    y = linear.forward(x);
                }
                copies.release_forward_fp8();
                y.backward(dy);
                optimizer.step();
                optimizer.zero_grad();
                outputs[write].push_back(y.detach().clone());
            }
            launches[write] = host.kernel_launches() - before;
            casts[write] = context->weight_casts();
            for (const at::Tensor& p : linear.parameters()) weights[write].push_back(p.detach().clone());
            // Written by the last step: the forward finds it current and casts nothing.
            const std::uint64_t launches_before_forward = host.kernel_launches();
            const Fp8Tensor copy = copies.fp8_copy_of(linear.parameters().front(), {context, Fp8Pass::Forward, 1}, host);
            QCOMPARE(host.kernel_launches() - launches_before_forward, std::uint64_t(write == 1 ? 0 : 1));
            QVERIFY(copy.data.defined() && copy.transposed.defined());
        }
        for (std::size_t i = 0; i < outputs[0].size(); ++i) QVERIFY2(at::equal(outputs[0][i], outputs[1][i]), qPrintable(QString::number(i)));
        for (std::size_t i = 0; i < weights[0].size(); ++i) QVERIFY(at::equal(weights[0][i], weights[1][i]));
        QCOMPARE(launches[0] - launches[1], std::uint64_t{3});
        QCOMPARE(casts[1], casts[0] + 1);  // the last step's copies, written ahead of a forward that never came
    }
};


QTEST_GUILESS_MAIN(TestModules)
#include "tst_modules.moc"
