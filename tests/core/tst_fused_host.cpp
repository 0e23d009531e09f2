// The te modules' fused path (FusedOps) over the host kernels against the reference, trained end to end on
// the CPU: what every CI machine checks of the orchestration that runs on a GPU.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/ATen.h>

#include "../helpers/Sanitizers.h"
#include "core/device/DeviceInfo.h"
#include "core/fp8/Fp8State.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/ReferenceOps.h"
#include "core/results/RunRecord.h"
#include "core/train/Trainer.h"

using namespace tewb;

namespace {

// Two layers, hidden 128 (block scaling needs k a multiple of 128), 128 tokens per step (the wgrad's k), 20
// steps (8 under ASan: the same calls, fewer repetitions; docs/reliability.md, "CI's time"), at the seed's learning
// rate: the quick preset's 3e-3 turns rounding differences into diverging runs.
RunConfig quick(Precision precision) {
    RunConfig config = make_preset(Preset::QuickCpu);
    config.backend = Backend::Te;
    config.precision = precision;
    config.model.seq = 32;
    config.batch = 4;
    config.warmup = 2;
    config.iters = kUnderAsan ? 6 : 18;
    config.lr = 3e-4;
    return config;
}

// The same as a llama (RMSNorm, SwiGLU of 384, rotary, 4 query heads over 2 key/value heads).
RunConfig quick_llama(Precision precision) {
    RunConfig config = quick(precision);
    config.model.arch = Arch::Llama;
    config.model.kv_heads = 2;
    return config;
}

// max |got - want| over max |want|: one figure for a whole tensor, as the self-test's.
double relative_error(const at::Tensor& got, const at::Tensor& want) {
    const at::Tensor g = got.to(at::kDouble);
    const at::Tensor w = want.to(at::kDouble);
    return (g - w).abs().max().item<double>() / std::max(w.abs().max().item<double>(), 1e-30);
}

// A delayed-scaling FP8 state of one GEMM at scale 1 (no calibration), updated by `ops`.
std::shared_ptr<Fp8Context> fp8_state(const TeOps& ops) {
    auto context = std::make_shared<Fp8Context>();
    context->add_gemm("g");
    Fp8Recipe recipe = Fp8Recipe::seed_defaults();
    recipe.calibrate_first_step = false;
    context->prepare(recipe, false, c10::Device(c10::kCPU), ops);
    return context;
}

float staged_amax(const Fp8Quantizer& q) {
    return q.context->history(q.pass).select(0, q.slot).select(0, 0).item<float>();
}

// A cast by the fused ops against the reference's cast of the same values: the same amax, FP8 values at most one
// E4M3 / E5M2 step apart (the kernels cast the float32 result, the reference its rounded output), the transposed copy
// the data's transpose exactly.
// No call inside the step makes the host wait for the device (item(), a tensor's truth value, nonzero, a blocking
// copy to the host): the ledger's step counts them, on the CPU those that would wait on a GPU. Current scaling
// once derived each cast's scale with LibTorch arithmetic per cast and ran host-bound on the H200 (59 ms a step).
bool step_never_waits(const RunRecord& record) {
    if (!record.execution.ledger) {
        qWarning("the run recorded no ledger step");
        return false;
    }
    for (const LedgerRow& w : record.execution.ledger->host_waits) {
        qWarning("the step waits for the device: layer %d, %s, %s, %llu calls", w.layer, w.scope.c_str(), w.op.c_str(),
                 static_cast<unsigned long long>(w.calls));
    }
    return record.execution.ledger->host_waits.empty();
}

// The fused run of `config` again in the step order of a CUDA graph run (TrainerCallbacks::graph_shaped_steps: the
// optimizer writes no FP8 weight copies, each forward casts the weights itself): the same losses and final weights bit
// for bit as the eager order's `eager`, no fallback, no host wait. Under delayed scaling the eager order's copies come
// from the optimizer's launch, "as the next forward would cast them": this holds that promise.
void check_graph_shaped_order(const Trainer& trainer, const RunConfig& config, const RunRecord& eager) {
    TrainerCallbacks callbacks;
    callbacks.graph_shaped_steps = true;
    const RunRecord graph = trainer.run(config, callbacks);
    QVERIFY2(graph.status == RunStatus::Finished, graph.message.c_str());
    for (const Fallback& f : graph.execution.fallbacks) qWarning("fallback: %s: %s (%lld)", f.op.c_str(), f.reason.c_str(), static_cast<long long>(f.count));
    QVERIFY(graph.execution.fallbacks.empty());
    QVERIFY(step_never_waits(graph));
    QCOMPARE(graph.steps.size(), eager.steps.size());
    for (std::size_t i = 0; i < graph.steps.size(); ++i) {
        QVERIFY2(graph.steps[i].loss == eager.steps[i].loss,
                 qPrintable(QStringLiteral("step %1: graph-shaped %2, eager %3").arg(i + 1).arg(graph.steps[i].loss, 0, 'g', 17)
                                .arg(eager.steps[i].loss, 0, 'g', 17)));
    }
    // The orders differ where they should: under delayed scaling the graph-shaped forward casts the weights in one
    // launch of its own (55 against 56 launches a step on the gpt), which the eager order's AdamW launch does instead.
    const double eager_launches = eager.execution.fused_launches_per_step.value_or(-1);
    const double graph_launches = graph.execution.fused_launches_per_step.value_or(-1);
    qInfo("launches per step: eager %.1f, graph-shaped %.1f", eager_launches, graph_launches);
    QCOMPARE(graph_launches, eager_launches + (config.fp8.scaling == ScalingKind::Delayed ? 1.0 : 0.0));
    QVERIFY(graph.execution.weights_digest && eager.execution.weights_digest);
    QVERIFY2(*graph.execution.weights_digest == *eager.execution.weights_digest, "the final weights differ");
}

void compare_fp8(const Fp8Tensor& fused, const Fp8Quantizer& fq, const Fp8Tensor& reference, const Fp8Quantizer& rq,
                 const char* what) {
    QVERIFY2(fused.data.sizes() == reference.data.sizes(), what);
    QVERIFY2(relative_error(fused.data.to(at::kFloat), reference.data.to(at::kFloat)) <= 0.125, what);
    QVERIFY2(fused.transposed.to(at::kFloat).equal(fused.data.to(at::kFloat).t()), what);
    const float want = staged_amax(rq);
    QVERIFY2(want > 0 && std::abs(staged_amax(fq) - want) <= 1e-6f * want, what);
}

}  // namespace

class TestFusedHost : public QObject {
    Q_OBJECT

    const Trainer trainer_{detect_device()};

private Q_SLOTS:
    // The Llama primitives on the fused path (FusedRmsNormSwiglu.cpp over the host kernels) against the TeOps
    // defaults (the reference): float32 within 1e-5, bfloat16 outputs within their rounding; each op one kernel
    // launch (the RMSNorm backward two) and never a fallback.
    void rmsNormAndSwigluMatchTheReference() {
        const TeOps& fused = fused_host_ops();
        const TeOps& ref = reference_ops();
        clear_fallbacks();
        at::manual_seed(3);
        const at::Tensor x = at::randn({64, 128}) * 2 + 0.25;
        const at::Tensor gamma = at::randn({128}) * 0.5 + 1;
        const at::Tensor dy = at::randn({64, 128});
        std::uint64_t before = fused.kernel_launches();
        const RmsNormResult f = fused.rms_norm_forward(x, gamma, 1e-5, at::kFloat);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        const RmsNormResult r = ref.rms_norm_forward(x, gamma, 1e-5, at::kFloat);
        QVERIFY(relative_error(f.out, r.out) <= 1e-5 && relative_error(f.rstd, r.rstd) <= 1e-5);
        const RmsNormResult f16 = fused.rms_norm_forward(x, gamma, 1e-5, at::kBFloat16);
        QCOMPARE(f16.out.scalar_type(), at::kBFloat16);
        QVERIFY(relative_error(f16.out, r.out) <= 1e-2);

        before = fused.kernel_launches();
        const RmsNormGrads fg = fused.rms_norm_backward(dy, x, f.rstd, gamma);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});  // LayerNorm's fast kernel: dx and dgamma in one
        const RmsNormGrads rg = ref.rms_norm_backward(dy, x, r.rstd, gamma);
        QVERIFY(relative_error(fg.dx, rg.dx) <= 1e-5 && relative_error(fg.dgamma, rg.dgamma) <= 1e-5);
        const at::Tensor dresidual = at::randn({64, 128});
        const RmsNormGrads fa = fused.rms_norm_backward_add(dy, x, f.rstd, gamma, dresidual);
        QVERIFY(relative_error(fa.dx, rg.dx + dresidual) <= 1e-5 && fa.dgamma.equal(fg.dgamma));

        const at::Tensor in = at::randn({64, 2 * 96}) * 3;
        const at::Tensor dz = at::randn({64, 96});
        before = fused.kernel_launches();
        const at::Tensor z = fused.swiglu_forward(in);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        QCOMPARE(z.sizes(), (c10::IntArrayRef{64, 96}));
        QVERIFY(relative_error(z, ref.swiglu_forward(in)) <= 1e-5);
        QVERIFY(relative_error(fused.swiglu_backward(dz, in), ref.swiglu_backward(dz, in)) <= 1e-5);
        const at::Tensor in16 = in.to(at::kBFloat16);
        QVERIFY(relative_error(fused.swiglu_forward(in16), ref.swiglu_forward(in16)) <= 1e-2);
        QVERIFY(relative_error(fused.swiglu_backward(dz.to(at::kBFloat16), in16), ref.swiglu_backward(dz.to(at::kBFloat16), in16)) <=
                1e-2);
        QVERIFY(fallbacks_noted().empty());
    }

    // The FP8 forms: the RMSNorm writing fc1's FP8 input, SwiGLU writing fc2's, SwiGLU's backward writing fc1's FP8
    // gradient; each with its transposed copy and its amax staged in the slot, in one launch.
    void rmsNormAndSwigluFp8OutputsMatchTheReference() {
        const TeOps& fused = fused_host_ops();
        const TeOps& ref = reference_ops();
        clear_fallbacks();
        at::manual_seed(5);
        const at::Tensor x = at::randn({64, 128});
        const at::Tensor gamma = at::randn({128}) * 0.5 + 1;
        const at::Tensor in = at::randn({64, 2 * 128});
        const at::Tensor dz = at::randn({64, 128});
        const auto fc = fp8_state(fused);
        const auto rc = fp8_state(ref);
        const Fp8Quantizer f_in{fc, Fp8Pass::Forward, 0}, r_in{rc, Fp8Pass::Forward, 0};
        const Fp8Quantizer f_act{fc, Fp8Pass::Forward, 1}, r_act{rc, Fp8Pass::Forward, 1};
        const Fp8Quantizer f_grad{fc, Fp8Pass::Backward, 0}, r_grad{rc, Fp8Pass::Backward, 0};

        RmsNormResult fr, rr;
        std::uint64_t before = fused.kernel_launches();
        const Fp8Tensor fq = fused.rms_norm_quantize(x, gamma, 1e-5, at::kFloat, f_in, /*keep_output=*/true, fr);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        const Fp8Tensor rq = ref.rms_norm_quantize(x, gamma, 1e-5, at::kFloat, r_in, true, rr);
        compare_fp8(fq, f_in, rq, r_in, "rms_norm_quantize");
        QVERIFY(relative_error(fr.out, rr.out) <= 1e-5 && relative_error(fr.rstd, rr.rstd) <= 1e-5);

        before = fused.kernel_launches();
        const Fp8Tensor fa = fused.swiglu_quantize(in, f_act);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        QCOMPARE(fa.data.sizes(), (c10::IntArrayRef{64, 128}));
        compare_fp8(fa, f_act, ref.swiglu_quantize(in, r_act), r_act, "swiglu_quantize");

        before = fused.kernel_launches();
        const Fp8Tensor fd = fused.swiglu_backward_quantize(dz, in, f_grad);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        QCOMPARE(fd.dtype, Fp8Dtype::E5M2);
        compare_fp8(fd, f_grad, ref.swiglu_backward_quantize(dz, in, r_grad), r_grad, "swiglu_backward_quantize");
        QVERIFY(fallbacks_noted().empty());
    }

    // The llama te model on the fused path trains as on the reference (the bounds of the gpt's rows below) and its
    // loss falls, BF16 and FP8 under each recipe, with no fallback; FP8 also in a graph run's step order, bit for bit.
    void fusedHostTrainsLlamaAsTheReference_data() {
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("scaling");
        QTest::newRow("bf16") << int(Precision::Bf16) << int(ScalingKind::Delayed);
        QTest::newRow("fp8 delayed") << int(Precision::Fp8) << int(ScalingKind::Delayed);
        QTest::newRow("fp8 current") << int(Precision::Fp8) << int(ScalingKind::Current);
        QTest::newRow("fp8 block") << int(Precision::Fp8) << int(ScalingKind::Block);
    }

    void fusedHostTrainsLlamaAsTheReference() {
        QFETCH(int, precision);
        QFETCH(int, scaling);
        RunConfig config = quick_llama(static_cast<Precision>(precision));
        config.fp8.scaling = static_cast<ScalingKind>(scaling);
        if (config.fp8.scaling != ScalingKind::Delayed) config.fp8.margin = 0;
        if (config.fp8.scaling == ScalingKind::Block) config.fp8.format = RecipeFormat::E4M3;
        config.te_impl = TeImpl::Reference;
        const RunRecord reference = trainer_.run(config);
        config.te_impl = TeImpl::Fused;
        const RunRecord fused = trainer_.run(config);
        QVERIFY2(reference.status == RunStatus::Finished, reference.message.c_str());
        QVERIFY2(fused.status == RunStatus::Finished, fused.message.c_str());
        for (const Fallback& f : fused.execution.fallbacks) qWarning("fallback: %s: %s (%lld)", f.op.c_str(), f.reason.c_str(), static_cast<long long>(f.count));
        QVERIFY(fused.execution.fallbacks.empty());
        QVERIFY(step_never_waits(fused));
        QCOMPARE(fused.steps.size(), reference.steps.size());
        const double bound = config.precision == Precision::Bf16 ? 1e-3 : 2e-2;
        double worst = 0;
        for (std::size_t i = 0; i < fused.steps.size(); ++i) {
            QVERIFY(std::isfinite(fused.steps[i].loss));
            worst = std::max(worst, std::abs(fused.steps[i].loss - reference.steps[i].loss) / std::abs(reference.steps[i].loss));
        }
        qInfo("llama: largest relative loss difference over %zu steps: %.2e (bound %.0e); loss %.3f -> %.3f", fused.steps.size(),
              worst, bound, fused.steps.front().loss, fused.steps.back().loss);
        QVERIFY2(worst <= bound, qPrintable(QStringLiteral("relative loss difference %1 above %2").arg(worst).arg(bound)));
        if (!kUnderAsan) {  // 8 steps at 3e-4 move the loss less
            QVERIFY2(fused.steps.back().loss < fused.steps.front().loss - 0.2,
                     qPrintable(QStringLiteral("%1 -> %2").arg(fused.steps.front().loss).arg(fused.steps.back().loss)));
        }
        if (config.precision == Precision::Fp8) QCOMPARE(fused.fp8_slots.size(), std::size_t{2 * 4 * 3});
        if (config.precision == Precision::Fp8) check_graph_shaped_order(trainer_, config, fused);
    }

    // Blackwell's formats on the fused path: the cast kernels (host twins here) give the reference casts' bits, both
    // copies, NVFP4's stochastic rounding (its draws in the same order) and Hadamard-transformed copy included, in the
    // launches the ledger counts (a cast kernel counts one launch per copy it writes): MXFP8 two, NVFP4 the amax and
    // two, or with the Hadamard transform the amax, the rows, the transform, its amax and its copy.
    void microscalingCastsMatchTheReference_data() {
        QTest::addColumn<int>("scaling");
        QTest::addColumn<int>("slot");  // backward 0: a gradient; forward 1: a weight
        QTest::addColumn<bool>("hadamard");
        QTest::addColumn<int>("launches");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::newRow("mxfp8 gradient") << int(ScalingKind::Mxfp8) << 0 << true << 2 << 64 << 80;
        QTest::newRow("mxfp8 weight") << int(ScalingKind::Mxfp8) << 1 << true << 2 << 64 << 80;
        QTest::newRow("mxfp8 130x33, NaN, zero row") << int(ScalingKind::Mxfp8) << 0 << true << 2 << 130 << 33;
        QTest::newRow("nvfp4 gradient (stochastic, Hadamard)") << int(ScalingKind::Nvfp4) << 0 << true << 5 << 64 << 80;
        QTest::newRow("nvfp4 gradient (stochastic)") << int(ScalingKind::Nvfp4) << 0 << false << 3 << 64 << 80;
        QTest::newRow("nvfp4 weight (16x16 tiles)") << int(ScalingKind::Nvfp4) << 1 << true << 3 << 64 << 80;
        QTest::newRow("nvfp4 130x33, zero row") << int(ScalingKind::Nvfp4) << 0 << true << 3 << 130 << 33;
        QTest::newRow("nvfp4 144x17 (Hadamard), zero row") << int(ScalingKind::Nvfp4) << 0 << true << 5 << 144 << 17;
    }
    void microscalingCastsMatchTheReference() {
        QFETCH(int, scaling);
        QFETCH(int, slot);
        QFETCH(bool, hadamard);
        QFETCH(int, launches);
        QFETCH(int, rows);
        QFETCH(int, cols);
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.nvfp4_hadamard = hadamard;
        recipe.scaling = static_cast<ScalingKind>(scaling);
        recipe.format = RecipeFormat::E4M3;
        recipe.margin = 0;
        const Fp8Pass pass = slot == 0 ? Fp8Pass::Backward : Fp8Pass::Forward;
        at::manual_seed(21);
        at::Tensor x = (at::randn({rows, cols}) * 3).to(at::kBFloat16);
        if (rows > 64) {
            x[7].zero_();  // a row of zero blocks
            // MXFP8 keeps a NaN to its own block (NaN scale); NVFP4's tensor amax would make every value NaN.
            if (recipe.scaling == ScalingKind::Mxfp8) x[100][5] = std::numeric_limits<float>::quiet_NaN();
        }
        const auto cast = [&](const TeOps& ops) {
            auto context = std::make_shared<Fp8Context>();
            context->add_gemm("g");
            context->prepare(recipe, false, c10::Device(c10::kCPU), ops);
            context->draw_random(1000);  // a stream already in use
            ops.quantize(x, Fp8Quantizer{context, pass, slot}, false);  // a first cast draws too
            const std::uint64_t before = ops.kernel_launches();
            Fp8Tensor q = ops.quantize(x, Fp8Quantizer{context, pass, slot}, true);
            const std::uint64_t used = ops.kernel_launches() - before;
            context->update(pass);
            return std::tuple{q, used, context->history(pass).select(1, 0).clone()};
        };
        const auto [want, unused, want_history] = cast(reference_ops());
        const auto [got, used, got_history] = cast(fused_host_ops());
        QCOMPARE(static_cast<int>(used), launches);
        // Bit for bit (NaN included): each tensor's bytes.
        const auto same = [](const at::Tensor& a, const at::Tensor& b) {
            return a.sizes() == b.sizes() &&
                   at::equal(a.contiguous().reshape({-1}).view(at::kByte), b.contiguous().reshape({-1}).view(at::kByte));
        };
        QVERIFY(got.mx && *got.mx == *want.mx);
        QVERIFY(same(got.data, want.data));
        QVERIFY(same(got.scale_inv, want.scale_inv));
        QVERIFY(same(got.transposed, want.transposed));
        QVERIFY(same(got.transposed_scale_inv, want.transposed_scale_inv));
        if (recipe.scaling == ScalingKind::Nvfp4) {
            QVERIFY(same(got.tensor_scale_inv, want.tensor_scale_inv));
            QVERIFY(same(got.transposed_tensor_scale_inv, want.transposed_tensor_scale_inv));
        }
        QVERIFY(same(got_history, want_history));  // the slots' amaxes
    }

    // Gradients in layouts the stacked casts must not misread: an expanded one (every token the same memory) and a
    // transposed one falls back (reported), one token in a batch row reads its batch stride; each the stack-and-cast's
    // values.
    void stackedHeadsOddLayoutsReadRightOrFallBack_data() {
        QTest::addColumn<int>("layout");
        QTest::addColumn<bool>("falls_back");
        QTest::newRow("expanded over tokens") << 0 << true;
        QTest::newRow("heads transposed") << 1 << true;
        QTest::newRow("one token a batch row (seq 1)") << 2 << false;
        QTest::newRow("one token in all") << 3 << false;
    }
    void stackedHeadsOddLayoutsReadRightOrFallBack() {
        QFETCH(int, layout);
        QFETCH(bool, falls_back);
        const std::int64_t heads = 3, d = 8;
        at::manual_seed(9);
        std::vector<at::Tensor> parts;
        for (int p = 0; p < 3; ++p) {
            switch (layout) {
                case 0: parts.push_back(at::randn({1, 1, heads, d}).expand({4, 5, heads, d})); break;
                case 1: parts.push_back(at::randn({4, heads, 5, d}).transpose(1, 2)); break;
                case 2: parts.push_back(at::randn({4, 1, 3, heads, d}).select(2, p)); break;
                default: parts.push_back(at::randn({1, heads, 1, d}).transpose(1, 2)); break;
            }
        }
        const TeOps& ops = fused_host_ops();
        const GradWithBias want = ops.TeOps::stack_heads_dbias(parts[0], parts[1], parts[2], at::kFloat, true);
        clear_fallbacks();
        const GradWithBias got = ops.stack_heads_dbias(parts[0], parts[1], parts[2], at::kFloat, true);
        QCOMPARE(!fallbacks_noted().empty(), falls_back);
        clear_fallbacks();
        QVERIFY(at::equal(got.grad, want.grad));
        QVERIFY(at::equal(got.bias_grad, want.bias_grad));
    }

    // A Linear takes what a LayerNorm delivered only for the very gradient it gets, unchanged, and once: a view of it
    // (as the engine hands it on) is taken; another tensor, the same one written in place since, or a second take get
    // nothing, and the Linear then casts as it would have.
    void gradientHandOverTakesOnlyTheDeliveredGradient() {
        const at::Tensor dx = at::randn({6, 8});
        const auto delivered = [&](GradientHandOver& h) { h.deliver(dx, {dx.to(at::kBFloat16), Fp8Tensor(), dx.sum(0)}); };
        GradientHandOver h;
        QVERIFY(!h.take(dx));  // nothing delivered
        delivered(h);
        const std::optional<GradientHandOver::Handed> got = h.take(dx.view({2, 3, 8}));
        QVERIFY(got && got->grad.scalar_type() == at::kBFloat16 && at::equal(got->bias_grad, dx.sum(0)));
        QVERIFY(!h.take(dx));  // once
        delivered(h);
        QVERIFY(!h.take(dx.clone()));  // another tensor of the same values
        delivered(h);
        QVERIFY(!h.take(dx.narrow(0, 0, 3)));  // part of it
        delivered(h);
        QVERIFY(!h.take(at::from_blob(dx.data_ptr(), dx.sizes(), dx.options())));  // its memory, not its storage
        delivered(h);
        at::Tensor same = dx;
        same.add_(1.0);  // an in-place accumulation after the delivery
        QVERIFY(!h.take(dx));

        // An FP8 cast is taken only while its slot's scale is the one it was cast with.
        auto context = std::make_shared<Fp8Context>();
        context->add_gemm("g");
        context->prepare(Fp8Recipe::seed_defaults(), false, c10::Device(c10::kCPU), fused_host_ops());
        GradientHandOver fp8;
        fp8.ask({at::kFloat, Fp8Quantizer{context, Fp8Pass::Backward, 0}, true});
        const auto deliver_fp8 = [&] { fp8.deliver(dx, {at::Tensor(), Fp8Tensor(), dx.sum(0)}); };
        deliver_fp8();
        QVERIFY(fp8.take(dx));
        deliver_fp8();
        context->update(Fp8Pass::Backward);
        QVERIFY(!fp8.take(dx));
    }

    // RMSNorm's hand-over (rms_norm_backward_quantize): under current scaling (and delayed scaling's calibrating step) dx
    // and dgamma as rms_norm_backward_add writes them and dx's FP8 cast as quantize casts it (data, transposed copy,
    // scale_inv, the slot's scale and staged amax), bit for bit, in one launch fewer on the fast kernel (as many on the
    // plain ones); with and without dresidual, x in
    // float32 (the residual stream under autocast) and bfloat16. Nothing is handed under delayed scaling proper, with a
    // bias gradient asked for, or while inspecting.
    void rmsNormBackwardHandsItsScaleOver_data() {
        QTest::addColumn<int>("mode");  // 0 current, 1 delayed calibrating, 2 delayed, 3 current with a bias, 4 current inspected
        QTest::newRow("current") << 0;
        QTest::newRow("delayed, calibrating") << 1;
        QTest::newRow("delayed") << 2;
        QTest::newRow("current, a bias gradient asked for") << 3;
        QTest::newRow("current, inspected") << 4;
    }
    void rmsNormBackwardHandsItsScaleOver() {
        QFETCH(int, mode);
        // Delayed scaling proper since 2026-12-07: the FP8 bytes from the backward's own launch (rms_norm_backward_quantize).
        const bool handed_over = mode <= 2;
        const TeOps& ops = fused_host_ops();
        at::manual_seed(23);
        for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
            for (const bool add : {false, true}) {
                // hidden 96: the fast kernel; 129: the plain kernels, then abs_max_current_scale.
                const std::int64_t hidden = add ? 96 : 129;
                const at::Tensor x = (at::randn({40, hidden}) * 2).to(dtype);
                const at::Tensor gamma = at::rand({hidden}) + 0.5;
                const at::Tensor dy = at::randn({40, hidden}).to(dtype);
                const at::Tensor dres = add ? (at::randn({40, hidden}) * 0.1).to(dtype) : at::Tensor();
                const RmsNormResult fwd = ops.rms_norm_forward(x, gamma, 1e-5, dtype);
                const auto context_for = [&] {
                    auto context = std::make_shared<Fp8Context>();
                    context->add_gemm("proj");
                    Fp8Recipe recipe = Fp8Recipe::seed_defaults();
                    recipe.scaling = mode == 1 || mode == 2 ? ScalingKind::Delayed : ScalingKind::Current;
                    recipe.calibrate_first_step = mode == 1;
                    context->prepare(recipe, mode == 4, c10::Device(c10::kCPU), ops);
                    return context;
                };
                const auto plain = context_for(), handing = context_for();
                const Fp8Quantizer q_plain{plain, Fp8Pass::Backward, 0}, q_handing{handing, Fp8Pass::Backward, 0};
                std::uint64_t before = ops.kernel_launches();
                const RmsNormGrads want = add ? ops.rms_norm_backward_add(dy, x, fwd.rstd, gamma, dres) : ops.rms_norm_backward(dy, x, fwd.rstd, gamma);
                const Fp8Tensor want_cast = ops.quantize(want.dx, q_plain, true);
                const std::uint64_t plain_launches = ops.kernel_launches() - before;
                before = ops.kernel_launches();
                const std::optional<LayerNormGradsWithFp8> got =
                    ops.rms_norm_backward_quantize(dy, x, fwd.rstd, gamma, dres, q_handing, /*with_bias_grad=*/mode == 3);
                QCOMPARE(got.has_value(), handed_over);
                if (!got) {
                    QCOMPARE(ops.kernel_launches(), before);
                    continue;
                }
                // One launch fewer on the fast kernel (current scaling: the amax pass; delayed: the cast, written by the banded
                // kernel); the plain kernels take abs_max_current_scale or the cast after them, as the Linear did.
                QCOMPARE(ops.kernel_launches() - before, plain_launches - (hidden == 96 ? 1 : 0));
                const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).contiguous().view(at::kByte); };
                const auto same = [&](const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && at::equal(bits(a), bits(b)); };
                QVERIFY(same(got->norm.dx, want.dx));
                // The banded FP8 kernel (delayed scaling, hidden 96) sums dgamma's rows in its bands' order: the same sums
                // within float32 rounding; elsewhere the backward's own order, bit for bit.
                if (mode == 2 && hidden == 96) {
                    QVERIFY(at::allclose(got->norm.dgamma, want.dgamma, 1e-5, 1e-4));
                } else {
                    QVERIFY(same(got->norm.dgamma, want.dgamma));
                }
                QVERIFY(!got->norm.dbeta.defined());
                QVERIFY(same(got->fp8.grad.data, want_cast.data));
                QVERIFY(same(got->fp8.grad.transposed, want_cast.transposed));
                QVERIFY(same(got->fp8.grad.scale_inv, want_cast.scale_inv));
                QVERIFY(!got->fp8.bias_grad.defined());
                QVERIFY(same(handing->scale(Fp8Pass::Backward, 0), plain->scale(Fp8Pass::Backward, 0)));
                QVERIFY(same(handing->history(Fp8Pass::Backward).select(1, 0), plain->history(Fp8Pass::Backward).select(1, 0)));
            }
        }
        QVERIFY(fallbacks_noted().empty());
    }

    // RMSNorm's backward hands its dx over in the BF16 Linear's dtype (rms_norm_backward_cast): dx and dgamma bit for bit
    // rms_norm_backward_add's, the copy dx's as stored, from the same launches (the Linear's cast gone); no copy where the
    // dtype is dx's own (dx itself), nothing where a bias gradient is asked for. The fast kernel (hidden 96) and the plain
    // ones (129), with and without dresidual.
    void rmsNormBackwardHandsItsCopyOver() {
        const TeOps& ops = fused_host_ops();
        at::manual_seed(29);
        for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
            for (const bool add : {false, true}) {
                for (const std::int64_t hidden : {96, 129}) {
                    const at::Tensor x = (at::randn({40, hidden}) * 2).to(dtype);
                    const at::Tensor gamma = at::rand({hidden}) + 0.5;
                    const at::Tensor dy = at::randn({40, hidden}).to(dtype);
                    const at::Tensor dres = add ? (at::randn({40, hidden}) * 0.1).to(dtype) : at::Tensor();
                    const RmsNormResult fwd = ops.rms_norm_forward(x, gamma, 1e-5, dtype);
                    std::uint64_t before = ops.kernel_launches();
                    const RmsNormGrads want =
                        add ? ops.rms_norm_backward_add(dy, x, fwd.rstd, gamma, dres) : ops.rms_norm_backward(dy, x, fwd.rstd, gamma);
                    const std::uint64_t plain_launches = ops.kernel_launches() - before;
                    const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).contiguous().view(at::kByte); };
                    const auto same = [&](const at::Tensor& a, const at::Tensor& b) {
                        return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::equal(bits(a), bits(b));
                    };
                    before = ops.kernel_launches();
                    const std::optional<LayerNormGradsWithCast> got =
                        ops.rms_norm_backward_cast(dy, x, fwd.rstd, gamma, dres, at::kBFloat16, /*with_bias_grad=*/false);
                    QVERIFY(got.has_value());
                    QCOMPARE(ops.kernel_launches() - before, plain_launches);
                    QVERIFY(same(got->norm.dx, want.dx));
                    QVERIFY(same(got->norm.dgamma, want.dgamma));
                    QVERIFY(!got->norm.dbeta.defined());
                    QVERIFY(same(got->cast.grad, want.dx.to(at::kBFloat16)));
                    QVERIFY(!got->cast.bias_grad.defined());
                    if (dtype == at::kBFloat16) QCOMPARE(got->cast.grad.data_ptr(), got->norm.dx.data_ptr());
                    before = ops.kernel_launches();
                    QVERIFY(!ops.rms_norm_backward_cast(dy, x, fwd.rstd, gamma, dres, at::kBFloat16, /*with_bias_grad=*/true));
                    QCOMPARE(ops.kernel_launches(), before);
                }
            }
        }
        QVERIFY(!reference_ops().rms_norm_backward_cast(at::randn({4, 16}), at::randn({4, 16}), at::ones({4}), at::ones({16}),
                                                        at::Tensor(), at::kBFloat16, false));
        QVERIFY(fallbacks_noted().empty());
    }

    // The hand-overs at work in a MiniGPT step on the fused path: every Linear that feeds a LayerNorm (proj, fc2) gets
    // its gradient from that LayerNorm's pass (layer_norm_backward_cast_dbias; FP8 under delayed scaling:
    // layer_norm_backward_quantize_dbias), no cast of its own runs, and the qkv gradient comes from the stacked cast
    // (FP8), or, in BF16, from the attention kernels' backward already stacked, so that only its bias gradient is summed
    // (cast_dbias without a copy).
    // Current scaling, and delayed scaling's calibrating first step (the ledger's step is then that step: one warm-up
    // step), hand proj's and fc2's gradients over with their scale (layer_norm_backward_cast_dbias_current_scale) and the
    // Linear casts them without sums: no cast with sums outside qkv, and no amax launch in any layer (the LayerNorms, GELU
    // and the gradients hand their scale over, and the attention its output's to proj and its gradients' to qkv:
    // attention_*_current_scale).
    void handOversReplaceTheLinearsCasts_data() {
        QTest::addColumn<int>("mode");  // 0 bf16, 1 fp8 delayed, 2 fp8 current, 3 fp8 delayed calibrating its first step
        QTest::newRow("bf16") << 0;
        QTest::newRow("fp8 delayed") << 1;
        QTest::newRow("fp8 current") << 2;
        QTest::newRow("fp8 delayed, the calibrating step") << 3;
    }
    void handOversReplaceTheLinearsCasts() {
        QFETCH(int, mode);
        const bool fp8 = mode > 0;
        const bool fresh = mode >= 2;
        RunConfig config = make_preset(Preset::QuickCpu);
        config.backend = Backend::Te;
        config.precision = fp8 ? Precision::Fp8 : Precision::Bf16;
        config.model = ModelShape{3, 64, 4, 16, 128};
        config.batch = 2;
        config.warmup = mode == 3 ? 1 : 2;  // the ledger's step is the last warm-up step
        config.iters = 1;
        config.te_impl = TeImpl::Fused;
        if (mode == 2) config.fp8.scaling = ScalingKind::Current;
        if (mode == 3) config.fp8.calibrate_first_step = true;
        const RunRecord run = trainer_.run(config);
        QVERIFY2(run.status == RunStatus::Finished, run.message.c_str());
        QVERIFY(run.execution.ledger.has_value());
        QVERIFY(run.execution.fallbacks.empty());
        const std::string own_cast = fp8 ? "tewb::cast_transpose_dbias_to_fp8" : "tewb::cast_dbias";
        const std::string handing = fresh  ? "tewb::layer_norm_backward_cast_dbias_current_scale"
                                    : fp8 ? "tewb::layer_norm_backward_quantize_dbias"
                                          : "tewb::layer_norm_backward_cast_dbias";
        // Current scaling casts qkv's gradient from the attention's one view with cast_transpose_dbias_to_fp8.
        const std::string stacking = fresh ? "tewb::cast_transpose_dbias_to_fp8"
                                     : fp8 ? "tewb::stacked_cast_transpose_dbias_to_fp8"
                                           : "tewb::cast_dbias";
        int own = 0, handed = 0, stacked = 0, stacked_copies = 0, layer_amax = 0, attention_handing = 0;
        for (const auto& row : run.execution.ledger->rows) {
            if (row.op == own_cast && row.scope != "qkv") own += static_cast<int>(row.calls);
            if (row.op == handing) handed += static_cast<int>(row.calls);
            if (row.op == stacking && row.scope == "qkv") stacked += static_cast<int>(row.calls);
            if (row.op == "tewb::stacked_cast_dbias") stacked_copies += static_cast<int>(row.calls);
            if (row.op == "tewb::abs_max_current_scale") layer_amax += static_cast<int>(row.calls);
            if (row.op == "tewb::attention_forward_current_scale" || row.op == "tewb::attention_backward_current_scale") {
                attention_handing += static_cast<int>(row.calls);
            }
        }
        // 3 layers: each proj's and fc2's gradient handed over (the last fc2's by the head's LayerNorm), each qkv's stacked.
        QCOMPARE(own, 0);
        QCOMPARE(handed, 2 * config.model.layers);
        QCOMPARE(stacked, config.model.layers);
        QCOMPARE(stacked_copies, 0);
        QCOMPARE(layer_amax, 0);
        QCOMPARE(attention_handing, fresh ? 2 * config.model.layers : 0);
    }

    // qkv's output gradient from the attention's dq, dk and dv in one pass (stacked_cast_dbias,
    // stacked_cast_transpose_dbias_to_fp8) against the ops' own stack-then-cast (the TeOps default over the same fused
    // casts): the same bytes, bias gradient and amax included, in one launch; dq, dk and dv as the CPU's attention
    // leaves them (contiguous), as views of one buffer, and of a width the vectorised kernels do not take.
    void stackedHeadsGradientIsTheStackAndCast_data() {
        QTest::addColumn<bool>("fp8");
        QTest::addColumn<bool>("bias");
        QTest::addColumn<bool>("views");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("dtype");
        QTest::newRow("bf16") << false << true << false << 64 << int(at::kBFloat16);
        QTest::newRow("bf16, views of one buffer") << false << true << true << 64 << int(at::kBFloat16);
        QTest::newRow("float32, no bias") << false << false << false << 64 << int(at::kFloat);
        QTest::newRow("fp8 delayed") << true << true << false << 64 << int(at::kBFloat16);
        QTest::newRow("fp8 delayed, views, no bias") << true << false << true << 64 << int(at::kBFloat16);
        QTest::newRow("fp8 delayed, head_dim 5") << true << true << false << 5 << int(at::kBFloat16);
    }
    void stackedHeadsGradientIsTheStackAndCast() {
        QFETCH(bool, fp8);
        QFETCH(bool, bias);
        QFETCH(bool, views);
        QFETCH(int, head_dim);
        QFETCH(int, dtype);
        const auto type = static_cast<at::ScalarType>(dtype);
        const std::int64_t batch = 4, seq = 24, heads = 3;
        at::manual_seed(5);
        std::vector<at::Tensor> parts;
        if (views) {
            parts = (at::randn({batch, seq, 3, heads, head_dim}) * 2).to(type).unbind(2);
        } else {
            for (int p = 0; p < 3; ++p) parts.push_back((at::randn({batch, seq, heads, head_dim}) * 2).to(type));
        }
        parts[1][0][0][0][1] = 40.0;  // the amax, in k's part
        const TeOps& ops = fused_host_ops();
        const auto same = [](const at::Tensor& a, const at::Tensor& b) {
            return a.defined() == b.defined() &&
                   (!a.defined() || (a.sizes() == b.sizes() && at::equal(a.contiguous().view(at::kByte), b.contiguous().view(at::kByte))));
        };
        if (!fp8) {
            const GradWithBias want = ops.TeOps::stack_heads_dbias(parts[0], parts[1], parts[2], at::kBFloat16, bias);
            const std::uint64_t before = ops.kernel_launches();
            const GradWithBias got = ops.stack_heads_dbias(parts[0], parts[1], parts[2], at::kBFloat16, bias);
            QCOMPARE(ops.kernel_launches() - before, std::uint64_t{1});
            QVERIFY(same(got.grad, want.grad));
            QVERIFY(same(got.bias_grad, want.bias_grad));
            return;
        }
        const auto cast = [&](bool stacked) {
            auto context = std::make_shared<Fp8Context>();
            context->add_gemm("qkv");
            Fp8Recipe recipe = Fp8Recipe::seed_defaults();
            recipe.scaling = ScalingKind::Delayed;
            context->prepare(recipe, false, c10::Device(c10::kCPU), ops);
            context->update(Fp8Pass::Backward);  // past the calibrating first pass: the delayed cast proper
            const Fp8Quantizer q{context, Fp8Pass::Backward, 0};
            const std::uint64_t before = ops.kernel_launches();
            Fp8GradWithBias r = stacked ? ops.stack_heads_quantize_dbias(parts[0], parts[1], parts[2], q, bias, at::Tensor())
                                        : ops.TeOps::stack_heads_quantize_dbias(parts[0], parts[1], parts[2], q, bias, at::Tensor());
            const std::uint64_t used = ops.kernel_launches() - before;
            return std::tuple{r, used, context->history(Fp8Pass::Backward).select(1, 0).clone()};
        };
        const auto [want, want_launches, want_history] = cast(false);
        const auto [got, got_launches, got_history] = cast(true);
        QCOMPARE(got_launches, std::uint64_t{1});
        QCOMPARE(want_launches, std::uint64_t{1});
        QVERIFY(same(got.grad.data, want.grad.data));
        QVERIFY(same(got.grad.transposed, want.grad.transposed));
        QVERIFY(same(got.bias_grad, want.bias_grad));
        QVERIFY(same(got_history, want_history));
        QCOMPARE(got_history[0].item<float>(), 40.0f);
    }

    // Both formats train on the fused path (--te-impl fused: the casts on the kernels, the GEMMs emulated) as on the
    // reference (within the bound of the rows below: the fused norms round differently, so the tensors cast differ in
    // their last bits), labelled emulated, with no fallback, inspected alike.
    void microscalingTrainsOnTheFusedPath_data() {
        QTest::addColumn<int>("scaling");
        QTest::newRow("mxfp8") << int(ScalingKind::Mxfp8);
        QTest::newRow("nvfp4") << int(ScalingKind::Nvfp4);
    }
    void microscalingTrainsOnTheFusedPath() {
        QFETCH(int, scaling);
        RunConfig config = quick(Precision::Fp8);
        config.fp8.scaling = static_cast<ScalingKind>(scaling);
        config.fp8.format = RecipeFormat::E4M3;
        config.fp8.margin = 0;
        config.iters = kUnderAsan ? 2 : 8;
        config.inspect_fp8 = true;
        config.te_impl = TeImpl::Reference;
        const RunRecord reference = trainer_.run(config);
        config.te_impl = TeImpl::Fused;
        const RunRecord fused = trainer_.run(config);
        QVERIFY2(fused.status == RunStatus::Finished, fused.message.c_str());
        QCOMPARE(fused.execution.te_impl, std::string("fused-host"));
        QVERIFY(fused.execution.fp8_emulated);
        for (const Fallback& f : fused.execution.fallbacks) qWarning("fallback: %s: %s (%lld)", f.op.c_str(), f.reason.c_str(), static_cast<long long>(f.count));
        QVERIFY(fused.execution.fallbacks.empty());
        QVERIFY(fused.execution.fused_launches_per_step && *fused.execution.fused_launches_per_step > 0);
        double worst = 0;
        for (std::size_t i = 0; i < fused.steps.size(); ++i) {
            QVERIFY(std::isfinite(fused.steps[i].loss));
            worst = std::max(worst, std::abs(fused.steps[i].loss - reference.steps[i].loss) / std::abs(reference.steps[i].loss));
        }
        QVERIFY2(worst <= 2e-2, qPrintable(QStringLiteral("relative loss difference %1").arg(worst)));
        // Inspected on both paths alike: every slot's error and what-ifs, and the block scales' histograms.
        for (const Fp8SlotSample& sample : fused.steps.back().fp8) QVERIFY(sample.rel_mse && sample.what_if(WhatIf::Nvfp4));
        QCOMPARE(fused.fp8_block_scales.size(), fused.fp8_slots.size());
    }

    // The fused path's orchestration (FusedOps) over the host kernels trains as the reference does: BF16
    // within 1e-3 relative of the reference's losses, FP8 (every recipe, with and without inspection)
    // within 2e-2 (the casts are the same, but a GEMM summed in another order can move an element across a
    // rounding boundary of the next cast), and never a fallback to the reference. FP8 (not inspected: inspection turns
    // the optimizer's copies off anyway) also in a graph run's step order: the eager order's figures bit for bit.
    void fusedHostTrainsAsTheReference_data() {
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("calibrate");
        QTest::addColumn<bool>("inspect");
        QTest::newRow("bf16") << int(Precision::Bf16) << int(ScalingKind::Delayed) << false << false;
        for (const bool inspect : {false, true}) {
            const char* tail = inspect ? ", inspected" : "";
            QTest::newRow(qPrintable(QStringLiteral("fp8 delayed%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Delayed) << false << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 delayed, first step calibrated%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Delayed) << true << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 current%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Current) << false << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 block%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Block) << false << inspect;
        }
    }

    void fusedHostTrainsAsTheReference() {
        QFETCH(int, precision);
        QFETCH(int, scaling);
        QFETCH(bool, calibrate);
        QFETCH(bool, inspect);
        RunConfig config = quick(static_cast<Precision>(precision));
        config.fp8.scaling = static_cast<ScalingKind>(scaling);
        config.fp8.calibrate_first_step = calibrate;
        if (config.fp8.scaling != ScalingKind::Delayed) config.fp8.margin = 0;
        config.inspect_fp8 = inspect;
        config.te_impl = TeImpl::Reference;
        const RunRecord reference = trainer_.run(config);
        config.te_impl = TeImpl::Fused;
        const RunRecord fused = trainer_.run(config);
        QCOMPARE(reference.status, RunStatus::Finished);
        QVERIFY2(fused.status == RunStatus::Finished, fused.message.c_str());
        QCOMPARE(fused.execution.te_impl, std::string("fused-host"));
        for (const Fallback& f : fused.execution.fallbacks) qWarning("fallback: %s: %s (%lld)", f.op.c_str(), f.reason.c_str(), static_cast<long long>(f.count));
        QVERIFY(fused.execution.fallbacks.empty());
        QVERIFY(step_never_waits(fused));
        QVERIFY(fused.execution.fused_launches_per_step && *fused.execution.fused_launches_per_step > 0);
        QCOMPARE(fused.steps.size(), reference.steps.size());
        const double bound = config.precision == Precision::Bf16 ? 1e-3 : 2e-2;
        double worst = 0;
        for (std::size_t i = 0; i < fused.steps.size(); ++i) {
            const double r = reference.steps[i].loss;
            const double f = fused.steps[i].loss;
            QVERIFY(std::isfinite(f));
            worst = std::max(worst, std::abs(f - r) / std::abs(r));
        }
        qInfo("largest relative loss difference over %zu steps: %.2e (bound %.0e)", fused.steps.size(), worst, bound);
        QVERIFY2(worst <= bound, qPrintable(QStringLiteral("relative loss difference %1 above %2").arg(worst).arg(bound)));
        if (inspect) {  // the inspection counts the same casts on both paths
            QVERIFY(!fused.steps.back().fp8.empty());
            QVERIFY(fused.steps.front().fp8[0].saturated.has_value());
        } else if (config.precision == Precision::Fp8) {
            check_graph_shaped_order(trainer_, config, fused);
        }
    }
};

QTEST_GUILESS_MAIN(TestFusedHost)
#include "tst_fused_host.moc"
