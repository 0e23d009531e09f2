// The FP8 recipe: the update rule's edge cases (FP8_RECIPE.md) on the host reference, the tensor state
// against that reference bit for bit, quantize/dequantize bounds and saturation, current scaling, scopes.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include <ATen/ATen.h>

#include "core/common/Error.h"
#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/fp8/ReplayReport.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/ReferenceOps.h"

using namespace tewb;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

bool same_bits(float a, float b) {
    if (std::isnan(a) && std::isnan(b)) return true;
    std::uint32_t x = 0, y = 0;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y;
}

// Scale after replaying `amaxes` on one slot.
float scale_after(const std::vector<float>& amaxes, Fp8Dtype dtype, AmaxAlgo algo, int len = 16, int margin = 0) {
    return replay_recipe(ScalingKind::Delayed, dtype, len, algo, margin, amaxes).back().scale_next;
}

std::shared_ptr<Fp8Context> one_gemm_context(const Fp8Recipe& recipe, bool inspect = false) {
    auto context = std::make_shared<Fp8Context>();
    context->add_gemm("test");
    context->prepare(recipe, inspect, at::kCPU, reference_state_ops());
    return context;
}

}  // namespace

class TestFp8Recipe : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void edgeCases_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<int>("algo");
        for (const Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2}) {
            for (const AmaxAlgo a : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
                const std::string name = std::string(to_string(d)) + " " + std::string(to_string(a));
                QTest::newRow(name.c_str()) << static_cast<int>(d) << static_cast<int>(a);
            }
        }
    }

    void edgeCases() {
        QFETCH(int, dtype);
        QFETCH(int, algo);
        const auto d = static_cast<Fp8Dtype>(dtype);
        const auto a = static_cast<AmaxAlgo>(algo);
        const float max = fp8_max(d);
        QCOMPARE(max, d == Fp8Dtype::E4M3 ? 448.0f : 57344.0f);

        QCOMPARE(scale_after({0.0f}, d, a), 1.0f);                    // amax 0: unchanged, 1 at the start
        QCOMPARE(scale_after({1e-37f}, d, a), FLT_MAX);               // tiny but normal: the quotient overflows
        QCOMPARE(scale_after({3.5f}, d, a), max / 3.5f);              // normal
        QCOMPARE(scale_after({kInf}, d, a), 1.0f);                    // inf: unchanged
        QCOMPARE(scale_after({kNan}, d, a), 1.0f);                    // NaN: unchanged
        QCOMPARE(scale_after({3.5f, kInf}, d, a), max / 3.5f);        // kept from the step before
        QCOMPARE(scale_after({3.5f, kNan}, d, a), max / 3.5f);
        QCOMPARE(scale_after({2.0f}, d, a, 16, 2), scale_after({2.0f}, d, a) / 4.0f);  // margin 2: a quarter
        QVERIFY(same_bits(scale_after({3.3f}, d, a, 16, 2), (max / 4.0f) / 3.3f));

        // A step where the slot did not run changes nothing, not even the history.
        const auto steps = replay_recipe(ScalingKind::Delayed, d, 4, a, 0, {5.0f, 0.0f});
        QCOMPARE(steps[1].history, steps[0].history);
        QCOMPARE(steps[1].scale_next, steps[0].scale_next);
        QCOMPARE(steps[0].scale_used, 1.0f);  // the first step runs with scale 1
    }

    void historyOfOneEqualsMostRecent() {
        std::mt19937 random(7);
        std::lognormal_distribution<float> amax(0.0f, 3.0f);
        std::vector<float> sequence;
        for (int i = 0; i < 200; ++i) sequence.push_back(i % 17 == 0 ? 0.0f : amax(random));
        for (const Fp8Dtype d : {Fp8Dtype::E4M3, Fp8Dtype::E5M2}) {
            const auto one = replay_recipe(ScalingKind::Delayed, d, 1, AmaxAlgo::Max, 0, sequence);
            const auto recent = replay_recipe(ScalingKind::Delayed, d, 16, AmaxAlgo::MostRecent, 0, sequence);
            for (std::size_t i = 0; i < sequence.size(); ++i) QVERIFY(same_bits(one[i].scale_next, recent[i].scale_next));
        }
    }

    void spikeStaysExactlyLUpdates() {
        for (const Fp8Dtype dtype : {Fp8Dtype::E4M3, Fp8Dtype::E5M2}) {
            const float max = fp8_max(dtype);
            for (const int len : {1, 2, 5, 16}) {
                std::vector<float> sequence{1.0f, 100.0f};
                for (int i = 0; i < len + 3; ++i) sequence.push_back(1.0f);
                const auto steps = replay_recipe(ScalingKind::Delayed, dtype, len, AmaxAlgo::Max, 0, sequence);
                for (std::size_t i = 1; i < steps.size(); ++i) {  // update i + 1 saw the spike first at update 2
                    const float expected = static_cast<int>(i) <= len ? max / 100.0f : max;
                    QVERIFY2(steps[i].scale_next == expected,
                             qPrintable(QStringLiteral("%1 L %2, update %3: %4")
                                            .arg(QString::fromStdString(std::string(to_string(dtype))))
                                            .arg(len)
                                            .arg(i + 1)
                                            .arg(steps[i].scale_next)));
                }
            }
        }
    }

    // Transformer Engine reduces the amax window with fmaxf: a NaN entry is passed over, an inf wins, and
    // the window is NaN only when every entry is. Each rule (host, tensor) is checked on the same cases;
    // the kernel's host reference and the kernel are held to the tensor rule in tst_recipe_reference and
    // `te-bench selftest`.
    void nanInTheWindowIsPassedOverAsTransformerEngineDoes() {
        const auto scales = [](const std::vector<float>& amaxes, AmaxAlgo algo, int len) {
            std::vector<float> out;
            for (const RecipeReplayStep& step : replay_recipe(ScalingKind::Delayed, Fp8Dtype::E4M3, len, algo, 0, amaxes)) {
                out.push_back(step.scale_next);
            }
            return out;
        };
        // The case: TE moves to 112 at step 3; a NaN anywhere in the window used to freeze 448.
        QCOMPARE(scales({1, kNan, 4, 4}, AmaxAlgo::Max, 16), (std::vector<float>{448, 448, 112, 112}));
        // An inf still wins and freezes the scale while it is in the window (L = 3: two more updates).
        QCOMPARE(scales({1, kInf, 4, 4, 4}, AmaxAlgo::Max, 3), (std::vector<float>{448, 448, 448, 448, 112}));
        // A NaN and an inf in one window: the inf wins.
        QCOMPARE(scales({1, kNan, kInf, 4}, AmaxAlgo::Max, 16), (std::vector<float>{448, 448, 448, 448}));
        // A window of NaNs only (history 1, or the staged NaN with an empty history): the scale stays.
        QCOMPARE(scales({2, kNan, kNan}, AmaxAlgo::Max, 1), (std::vector<float>{224, 224, 224}));
        QCOMPARE(scales({kNan, 8}, AmaxAlgo::Max, 16), (std::vector<float>{1, 56}));
        // most_recent looks at the staged amax alone: a NaN keeps the scale of the step before.
        QCOMPARE(scales({1, kNan, 4}, AmaxAlgo::MostRecent, 16), (std::vector<float>{448, 448, 112}));
        // The tensor rule, over every slot at once, says the same.
        for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
            for (const std::vector<float>& amaxes :
                 {std::vector<float>{1, kNan, 4, 4}, std::vector<float>{1, kNan, kInf, 4}, std::vector<float>{kNan, 8}}) {
                auto context = one_gemm_context(Fp8Recipe{ScalingKind::Delayed, RecipeFormat::E4M3, 16, algo, 0});
                const std::vector<float> expected = scales(amaxes, algo, 16);
                for (std::size_t i = 0; i < amaxes.size(); ++i) {
                    context->record_amax(Fp8Pass::Forward, 0, at::scalar_tensor(amaxes[i], at::kFloat));
                    context->update(Fp8Pass::Forward);
                    QVERIFY(same_bits(context->scales(Fp8Pass::Forward)[0].item<float>(), expected[i]));
                }
            }
        }
    }

    void tensorUpdateMatchesHostRuleBitForBit() {
        std::mt19937 random(11);
        std::lognormal_distribution<float> normal(0.0f, 4.0f);
        const std::vector<float> specials{0.0f, 1e-37f, 1e-40f, kInf, kNan, 448.0f, 57344.0f, 1e30f};
        for (const int len : {1, 2, 3, 16}) {
            for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
                for (const int margin : {0, 3}) {
                    Fp8Recipe recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, len, algo, margin};
                    auto context = std::make_shared<Fp8Context>();
                    for (int g = 0; g < 4; ++g) context->add_gemm("g" + std::to_string(g));
                    context->prepare(recipe, false, at::kCPU, reference_state_ops());
                    for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
                        const int slots = static_cast<int>(context->scales(pass).size(0));
                        std::vector<SlotScaleState> host(slots, SlotScaleState(len));
                        for (int step = 0; step < 3 * len + 5; ++step) {
                            for (int s = 0; s < slots; ++s) {
                                const int pick = static_cast<int>(random() % 12);
                                const float a = pick < 8 ? specials[pick] : normal(random);
                                host[s].history[0] = a;
                                context->record_amax(pass, s, at::scalar_tensor(a, at::kFloat));
                            }
                            context->update(pass);
                            const float max = fp8_max(context->dtype(pass));
                            for (int s = 0; s < slots; ++s) {
                                update_delayed(host[s], max, algo, margin);
                                const float got = context->scales(pass)[s].item<float>();
                                QVERIFY2(same_bits(got, host[s].scale),
                                         qPrintable(QStringLiteral("slot %1 step %2: %3 vs %4").arg(s).arg(step).arg(got).arg(host[s].scale)));
                                QVERIFY(same_bits(context->scale_invs(pass)[s].item<float>(), 1.0f / host[s].scale));
                                for (int i = 0; i < len; ++i) {
                                    QVERIFY(same_bits(context->history(pass)[s][i].item<float>(), host[s].history[i]));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    void stateLayout() {
        auto context = std::make_shared<Fp8Context>();
        context->add_gemm("a");
        context->add_gemm("b");
        context->prepare(Fp8Recipe::seed_defaults(), false, at::kCPU, reference_state_ops());
        QCOMPARE(context->history(Fp8Pass::Forward).sizes(), (at::IntArrayRef{6, 16}));
        QCOMPARE(context->history(Fp8Pass::Backward).sizes(), (at::IntArrayRef{4, 16}));
        QVERIFY(context->history(Fp8Pass::Forward).eq(0).all().item<bool>());
        QVERIFY(context->scales(Fp8Pass::Backward).eq(1).all().item<bool>());
        QCOMPARE(context->dtype(Fp8Pass::Forward), Fp8Dtype::E4M3);
        QCOMPARE(context->dtype(Fp8Pass::Backward), Fp8Dtype::E5M2);
        QCOMPARE(context->quantized_slots(Fp8Recipe::seed_defaults()).size(), std::size_t{6});
        QCOMPARE(context->quantized_slots(Fp8Recipe::seed_defaults())[5].role, SlotRole::GradOutput);
        QCOMPARE(context->quantized_slots(Fp8Recipe::seed_defaults())[5].dtype, Fp8Dtype::E5M2);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, context->add_gemm("late"));
        Fp8Recipe e4m3 = Fp8Recipe::seed_defaults();
        e4m3.format = RecipeFormat::E4M3;
        context->prepare(e4m3, false, at::kCPU, reference_state_ops());
        QCOMPARE(context->dtype(Fp8Pass::Backward), Fp8Dtype::E4M3);
    }

    // The scale storage contract (docs/kernels.md): every value a cast or a GEMM is handed by pointer (scale,
    // scale_inv now and after the update, the amax staging entry) starts its own 256-byte slot, for every recipe,
    // on the fused host path's ops too, and stays there through updates. A scale 4 bytes into a packed array made
    // cuBLASLt refuse FP8 GEMMs on the H200 (status 15).
    void everyScaleSitsInItsOwnAlignedSlot_data() {
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("fused");
        for (const bool fused : {false, true}) {
            const char* ops = fused ? "fused host ops" : "reference ops";
            QTest::newRow(qPrintable(QStringLiteral("delayed, %1").arg(ops))) << int(ScalingKind::Delayed) << fused;
            QTest::newRow(qPrintable(QStringLiteral("current, %1").arg(ops))) << int(ScalingKind::Current) << fused;
            QTest::newRow(qPrintable(QStringLiteral("block, %1").arg(ops))) << int(ScalingKind::Block) << fused;
        }
    }

    void everyScaleSitsInItsOwnAlignedSlot() {
        QFETCH(int, scaling);
        QFETCH(bool, fused);
        auto context = std::make_shared<Fp8Context>();
        for (int g = 0; g < 5; ++g) context->add_gemm("g" + std::to_string(g));
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.scaling = static_cast<ScalingKind>(scaling);
        if (recipe.scaling != ScalingKind::Delayed) recipe.margin = 0;
        const Fp8StateOps& ops = fused ? static_cast<const Fp8StateOps&>(fused_host_ops()) : reference_state_ops();
        context->prepare(recipe, false, at::kCPU, ops);
        const auto address = [](const at::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()); };
        for (int step = 0; step < 3; ++step) {
            for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
                const int slots = static_cast<int>(context->scales(pass).size(0));
                for (int s = 0; s < slots; ++s) {
                    const Fp8Context::LiveScaleInv live = context->live_scale_inv(pass, s);
                    const std::uintptr_t pointers[] = {address(context->scale(pass, s)), address(live.now),
                                                       address(live.after_update),
                                                       address(context->history(pass).select(0, s).select(0, 0))};
                    for (const std::uintptr_t p : pointers) {
                        QVERIFY2(p % 64 == 0, qPrintable(QStringLiteral("step %1 slot %2: %3 is not 64-byte aligned")
                                                             .arg(step).arg(s).arg(p, 0, 16)));
                    }
                    if (s > 0) {
                        QCOMPARE(address(context->scale(pass, s)) - address(context->scale(pass, s - 1)),
                                 std::uintptr_t{Fp8Context::kSlotBytes});
                    }
                }
                context->record_amax(pass, 1, at::scalar_tensor(3.0f, at::kFloat));
                context->update(pass);
            }
        }
        // The update wrote through the strided views: slot 1's scale moved (delayed, block) and every scale_inv
        // is its scale's reciprocal.
        const at::Tensor scales = context->scales(Fp8Pass::Forward).contiguous();
        QVERIFY(at::equal(context->scale_invs(Fp8Pass::Forward).contiguous(), at::reciprocal(scales)));
        if (recipe.scaling != ScalingKind::Current) QVERIFY(scales[1].item<float>() != 1.0f);
    }

    // A GEMM the rule table refuses (here a weight scale_inv 4 bytes into a packed array, what the H200's cuBLASLt
    // refused) does not abort: the fused ops run the reference (the same mathematics), and the fallback is noted with
    // the call's description, every pointer's alignment included, so the record and the GPU check name it.
    void aRefusedGemmFallsBackAndSaysWhy() {
        at::manual_seed(3);
        const at::Tensor a = (at::randn({32, 64}) * 4).to(at::kFloat8_e4m3fn);
        const at::Tensor b = (at::randn({48, 64}) * 4).to(at::kFloat8_e4m3fn);
        const at::Tensor packed = at::full({4}, 0.5f);  // 64-byte aligned; element 1 sits 4 bytes in
        const at::Tensor a_scale = packed.select(0, 0);
        const at::Tensor b_scale = packed.select(0, 1);
        clear_fallbacks();
        const at::Tensor got = fused_host_ops().fp8_gemm(a, a_scale, b, b_scale, std::nullopt, at::kFloat, Accumulation::Split);
        const at::Tensor want = reference_ops().fp8_gemm(a, a_scale, b, b_scale, std::nullopt, at::kFloat, Accumulation::Split);
        QVERIFY(at::equal(got, want));
        const std::vector<FallbackTally> noted = fallbacks_noted();
        QCOMPARE(noted.size(), std::size_t{1});
        QCOMPARE(noted[0].op, std::string("fp8_gemm"));
        const std::string& why = noted[0].reason;
        for (const char* part : {"Misaligned", "E4M3 x E4M3 -> float32", "m = 32, n = 48, k = 64", "a.scale_inv ",
                                 "b.scale_inv 4"}) {
            QVERIFY2(why.find(part) != std::string::npos, why.c_str());
        }
        // With the scale in its own slot the same call runs fused.
        clear_fallbacks();
        const at::Tensor fused = fused_host_ops().fp8_gemm(a, a_scale, b, b_scale.clone(), std::nullopt, at::kFloat,
                                                           Accumulation::Split);
        QVERIFY(fallbacks_noted().empty());
        QVERIFY(at::allclose(fused, want, 1e-5, 1e-5));
    }

    void quantizeRoundTripAndSaturation_data() {
        QTest::addColumn<int>("format");
        QTest::newRow("hybrid (e5m2 gradients)") << static_cast<int>(RecipeFormat::Hybrid);
        QTest::newRow("e4m3") << static_cast<int>(RecipeFormat::E4M3);
    }

    void quantizeRoundTripAndSaturation() {
        QFETCH(int, format);
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.format = static_cast<RecipeFormat>(format);
        recipe.calibrate_first_step = false;  // Transformer Engine's first step: scale 1
        const auto context = one_gemm_context(recipe, /*inspect=*/true);
        const TeOps& ops = reference_ops();
        at::manual_seed(3);
        for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
            const Fp8Quantizer quantizer{context, pass, 0};
            const Fp8Dtype dtype = quantizer.dtype();
            const float max = fp8_max(dtype);
            // Scale 1 (the first step): values in the normal range round to 3 (E4M3) or 2 (E5M2) mantissa bits.
            const at::Tensor x = at::randn({64, 48}) * 8.0;
            const Fp8Tensor q = ops.quantize(x, quantizer, /*with_transpose=*/true);
            QCOMPARE(q.data.scalar_type(), to_scalar_type(dtype));
            QCOMPARE(q.scale_inv.item<float>(), 1.0f);
            QVERIFY(q.transposed.to(at::kFloat).equal(q.data.t().to(at::kFloat)));
            const at::Tensor back = q.dequantize();
            const double half_ulp = dtype == Fp8Dtype::E4M3 ? 1.0 / 16 : 1.0 / 8;
            const at::Tensor normal = x.abs() >= (dtype == Fp8Dtype::E4M3 ? 1.0 / 64 : 1.0 / 16384);
            const double worst = ((back - x).abs() / x.abs()).masked_select(normal).max().item<double>();
            QVERIFY2(worst <= half_ulp + 1e-7, qPrintable(QString::number(worst)));
            // The amax is that of the unscaled input, staged in history index 0.
            QCOMPARE(context->history(pass)[0][0].item<float>(), x.abs().max().item<float>());

            // Saturation: scaled values beyond ±max clamp to ±max (never NaN), NaN stays NaN.
            const at::Tensor big =
                at::tensor({1e6f, -1e6f, max * 2, 1.0f, std::numeric_limits<float>::infinity(), kNan, max * 1.03f});
            const at::Tensor b = ops.quantize(big, quantizer, false).dequantize();
            QCOMPARE(b[0].item<float>(), max);
            QCOMPARE(b[1].item<float>(), -max);
            QCOMPARE(b[2].item<float>(), max);
            QCOMPARE(b[3].item<float>(), 1.0f);
            QCOMPARE(b[4].item<float>(), max);
            QVERIFY(std::isnan(b[5].item<float>()));
            QCOMPARE(b[6].item<float>(), max);  // rounds to max: not counted as saturated
            QVERIFY(std::isnan(context->history(pass)[0][0].item<float>()));  // a NaN amax wins the staging max

            context->update(pass);
            const at::Tensor stats = context->statistics();
            const int row = pass == Fp8Pass::Forward ? 0 : 2;
            QVERIFY(std::isnan(stats[row][0].item<float>()));
            QCOMPARE(stats[row][1].item<float>(), 1.0f);               // the scale the casts used
            QCOMPARE(stats[row][2].item<float>(), 4.0f / (64 * 48 + 7));  // 4 of the elements saturated
            QVERIFY(stats[row][3].item<float>() >= 0.0f);
        }
    }

    // Calibration: until its pass's first update a cast takes the scale the rule gives its own amax (margin
    // included) and leaves it in the slot; after the update the slot's delayed scale rules again.
    void firstStepCalibratesWhenAsked() {
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.margin = 1;
        QVERIFY(recipe.calibrate_first_step);
        const auto context = one_gemm_context(recipe);
        const TeOps& ops = reference_ops();
        const Fp8Quantizer forward{context, Fp8Pass::Forward, 0};
        const Fp8Quantizer backward{context, Fp8Pass::Backward, 0};
        QVERIFY(context->calibrating(Fp8Pass::Forward));
        QVERIFY(context->calibrating(Fp8Pass::Backward));
        const at::Tensor x = at::full({4, 8}, 0.5f);
        const Fp8Tensor first = ops.quantize(x, forward, false);
        QCOMPARE(first.scale_inv.item<float>(), 1.0f / (224.0f / 0.5f));  // (448 / 2^1) / 0.5
        QCOMPARE(context->scale(Fp8Pass::Forward, 0).item<float>(), 448.0f);
        context->update(Fp8Pass::Forward);
        QVERIFY(!context->calibrating(Fp8Pass::Forward));
        QVERIFY(context->calibrating(Fp8Pass::Backward));  // each pass calibrates until its own first update
        QCOMPARE(context->statistics()[0][1].item<float>(), 448.0f);  // the scale step 1 used

        // Step 2: a tensor twice as large is cast with the delayed scale, not its own.
        const Fp8Tensor second = ops.quantize(x * 2, forward, false);
        QCOMPARE(second.scale_inv.item<float>(), 1.0f / 448.0f);
        QCOMPARE(second.dequantize()[0][0].item<float>(), 1.0f);  // 1.0 · 448 is E4M3's largest value: it still fits

        // The backward pass calibrates with its own format (E5M2 under HYBRID).
        const Fp8Tensor grad = ops.quantize(x * 1e-4, backward, false);
        QCOMPARE(grad.scale_inv.item<float>(), 1.0f / ((57344.0f / 2) / (0.5f * 1e-4f)));

        // A new history length starts the state again, calibration included; other recipes never calibrate.
        Fp8Recipe longer = recipe;
        longer.amax_history_len = 32;
        context->prepare(longer, false, at::kCPU, reference_state_ops());
        QVERIFY(context->calibrating(Fp8Pass::Forward));
        for (const ScalingKind other : {ScalingKind::Current, ScalingKind::Block}) {
            Fp8Recipe r = longer;
            r.scaling = other;
            context->prepare(r, false, at::kCPU, reference_state_ops());
            QVERIFY(!context->calibrating(Fp8Pass::Forward));
        }
        longer.calibrate_first_step = false;
        context->prepare(longer, false, at::kCPU, reference_state_ops());
        QVERIFY(!context->calibrating(Fp8Pass::Forward));
    }

    void scaleUsedIsTheDelayedOne() {
        const auto context = one_gemm_context(Fp8Recipe::seed_defaults());
        const Fp8Quantizer quantizer{context, Fp8Pass::Forward, 0};
        const TeOps& ops = reference_ops();
        const at::Tensor x = at::full({4, 4}, 2.0f);
        ops.quantize(x, quantizer, false);
        context->update(Fp8Pass::Forward);
        QCOMPARE(context->scales(Fp8Pass::Forward)[0].item<float>(), 224.0f);  // 448 / 2, for the next step
        const Fp8Tensor q = ops.quantize(x * 0.5, quantizer, false);       // uses 224, not 448 / 1
        QCOMPARE(q.scale_inv.item<float>(), 1.0f / 224.0f);
        QCOMPARE(q.dequantize()[0][0].item<float>(), 1.0f);
        context->update(Fp8Pass::Forward);
        QCOMPARE(q.scale_inv.item<float>(), 1.0f / 224.0f);  // a cast keeps its own scale_inv
    }

    void currentScaling() {
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.scaling = ScalingKind::Current;
        const auto context = one_gemm_context(recipe);
        const Fp8Quantizer quantizer{context, Fp8Pass::Forward, 0};
        const TeOps& ops = reference_ops();
        const Fp8Tensor q = ops.quantize(at::full({8}, 3.5f), quantizer, false);
        QCOMPARE(q.scale_inv.item<float>(), 3.5f / 448.0f);
        QCOMPARE(q.dequantize()[0].item<float>(), 3.5f);
        QCOMPARE(ops.quantize(at::zeros({8}), quantizer, false).scale_inv.item<float>(), 1.0f);
        const at::Tensor amaxes = at::tensor({0.0f, 3.5f, 1e-40f, 1e-37f, kInf, kNan});
        const at::Tensor scales = current_scale_tensor(amaxes, 448.0f);
        for (int i = 0; i < 6; ++i) {
            QVERIFY(same_bits(scales[i].item<float>(), current_scale(amaxes[i].item<float>(), 448.0f)));
        }
        QCOMPARE(current_scale(0.0f, 448.0f), 1.0f);
        QCOMPARE(current_scale(kInf, 448.0f), 1.0f);
        QCOMPARE(current_scale(kNan, 448.0f), 1.0f);
        QCOMPARE(current_scale(1e-40f, 448.0f), FLT_MAX);
        context->update(Fp8Pass::Forward);  // no history under current scaling
        QVERIFY(context->history(Fp8Pass::Forward).eq(0).all().item<bool>());
    }

    void scopesNestAndUpdateOnceAtTheOutermostExit() {
        const auto context = one_gemm_context(Fp8Recipe::seed_defaults());
        const Fp8Quantizer quantizer{context, Fp8Pass::Forward, 0};
        QVERIFY(Fp8Scope::active() == nullptr);
        const std::uint64_t start = context->generation();
        {
            Fp8ScopeSettings settings{Fp8Recipe::seed_defaults(), false};
            settings.recipe.amax_history_len = 4;
            Fp8Scope outer(true, settings);
            QVERIFY(Fp8Scope::active() != nullptr);
            QCOMPARE(Fp8Scope::active()->recipe.amax_history_len, 4);
            {
                Fp8Scope inner(true);
                Fp8Scope::enlist(context);
                reference_ops().quantize(at::full({2}, 7.0f), quantizer, false);
                {
                    Fp8Scope off(false);
                    QVERIFY(Fp8Scope::active() == nullptr);
                }
            }
            QCOMPARE(context->generation(), start);  // the inner exits did not update
            QCOMPARE(context->history(Fp8Pass::Forward)[0][0].item<float>(), 7.0f);
        }
        QCOMPARE(context->generation(), start + 1);
        QCOMPARE(context->history(Fp8Pass::Forward)[0][0].item<float>(), 0.0f);
        QCOMPARE(context->history(Fp8Pass::Forward)[0][15].item<float>(), 7.0f);
        QCOMPARE(context->scales(Fp8Pass::Forward)[0].item<float>(), 64.0f);

        try {  // a scope left by an exception does not update
            Fp8Scope scope(true);
            Fp8Scope::enlist(context);
            reference_ops().quantize(at::full({2}, 1.0f), quantizer, false);
            throw std::runtime_error("forward failed");
        } catch (const std::runtime_error&) {
        }
        QCOMPARE(context->generation(), start + 1);
    }

    // Float8BlockScaling's reference: every block gets its own scale, so an outlier costs only its block.
    void blockQuantizationRoundTripAndPerBlockSaturation() {
        at::manual_seed(3);
        // 130 × 300: neither a multiple of 128; the last blocks are shorter, never padded into the data.
        at::Tensor x = at::randn({130, 300}) * 0.01;
        x[5][7] = 1000.0f;  // an outlier in block (row 5, columns 0..127)
        for (const bool pow2 : {true, false}) {
            for (const BlockShape block : {kActivationBlock, kWeightBlock}) {
                const BlockQuantized q = block_quantize(x, block, Fp8Dtype::E4M3, pow2);
                QCOMPARE(q.data.sizes(), x.sizes());
                QCOMPARE(q.scale_inv.size(0), (130 + block.rows - 1) / block.rows);
                QCOMPARE(q.scale_inv.size(1), 3);  // 300 columns: 128 + 128 + 44
                const at::Tensor back = block_dequantize(q);
                // E4M3 keeps 3 mantissa bits: within 2^-4 relative for values in its normal range.
                // (Away from the outlier's block, whose coarse scale flushes small values, by design.)
                at::Tensor normal = x.abs() > 1e-3;
                normal.narrow(0, 0, 128).narrow(1, 0, 128).fill_(false);
                const at::Tensor rel = ((back - x).abs() / x.abs()).masked_select(normal);
                QVERIFY2(rel.max().item<float>() <= 0.0625f + 1e-6f, qPrintable(QString::number(rel.max().item<float>())));
                // No element saturates: each block's amax maps to at most fp8_max.
                QVERIFY(q.data.to(at::kFloat).abs().max().item<float>() <= 448.0f);
                if (pow2) {
                    const at::Tensor scale = at::reciprocal(q.scale_inv);
                    QVERIFY(at::equal(at::exp2(at::round(at::log2(scale))), scale));  // powers of two
                    QVERIFY(at::equal(power_of_two_at_or_below(scale), scale));
                } else {
                    QCOMPARE(back[5][7].item<float>(), 1000.0f);  // the amax element maps to 448 exactly
                }
                // The outlier's block has the coarse scale; a block away from it keeps fine precision.
                const float outlier_scale_inv = q.scale_inv[5 / block.rows][0].item<float>();
                const float far_scale_inv = q.scale_inv[(129) / block.rows][2].item<float>();
                QVERIFY(outlier_scale_inv > 100 * far_scale_inv);
            }
        }
        // A per-tensor scale would flush the small values of that outlier's tensor far more.
        const at::Tensor per_tensor = tensor_quantize_dequantize(x, Fp8Dtype::E4M3);
        QCOMPARE(per_tensor[5][7].item<float>(), 1000.0f);  // the amax maps to fp8_max and back exactly
        QVERIFY((per_tensor - x).abs().max().item<float>() < 1.0f);
        const at::Tensor blockwise = block_dequantize(block_quantize(x, kActivationBlock, Fp8Dtype::E4M3));
        at::Tensor others = at::ones_like(x, at::kBool);
        others[5][7] = false;  // the outlier itself: per-tensor maps it exactly, a power-of-two block scale does not
        const double per_tensor_error = (per_tensor - x).masked_select(others).pow(2).sum().item<double>();
        const double block_error = (blockwise - x).masked_select(others).pow(2).sum().item<double>();
        QVERIFY2(per_tensor_error > 10 * block_error, qPrintable(QStringLiteral("%1 vs %2").arg(per_tensor_error).arg(block_error)));
        // Zero, inf and NaN blocks keep scale 1; NaN stays NaN; inf saturates.
        at::Tensor special = at::zeros({2, 256});
        special[1][0] = std::numeric_limits<float>::infinity();
        special[1][200] = kNan;
        const BlockQuantized s = block_quantize(special, kActivationBlock, Fp8Dtype::E4M3);
        QVERIFY(at::equal(s.scale_inv, at::ones({2, 2})));
        QCOMPARE(s.data.to(at::kFloat)[1][0].item<float>(), 448.0f);
        QVERIFY(std::isnan(s.data.to(at::kFloat)[1][200].item<float>()));
        QVERIFY_THROWS_EXCEPTION(ConfigError, block_quantize(at::zeros({2, 2, 2}), kActivationBlock, Fp8Dtype::E4M3));
    }

    // The reference ops under --recipe block: casts carry block scales (the transposed copy its own) and
    // the FP8 GEMM applies them block by block.
    void blockRecipeCastsAndGemm() {
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.scaling = ScalingKind::Block;
        recipe.format = RecipeFormat::E4M3;
        const auto context = one_gemm_context(recipe);
        at::manual_seed(8);
        const at::Tensor x = at::randn({96, 256});
        const at::Tensor w = at::randn({160, 256}) * 0.02;
        const Fp8Tensor xq = reference_ops().quantize(x, Fp8Quantizer{context, Fp8Pass::Forward, 0}, true);
        const Fp8Tensor wq = reference_ops().quantize(w, Fp8Quantizer{context, Fp8Pass::Forward, 1}, true);
        QCOMPARE(xq.scale_inv.sizes(), (at::IntArrayRef{96, 2}));        // 1×128 blocks
        QCOMPARE(wq.scale_inv.sizes(), (at::IntArrayRef{2, 2}));         // 128×128 tiles
        QCOMPARE(xq.transposed_scale_inv.sizes(), (at::IntArrayRef{256, 1}));  // xᵀ quantized along its own rows
        const at::Tensor y = reference_ops().fp8_gemm(xq.data, xq.scale_inv, wq.data, wq.scale_inv, std::nullopt, at::kFloat,
                                                      Accumulation::Fast);
        const at::Tensor expected = block_gemm_reference(block_quantize(x, kActivationBlock, Fp8Dtype::E4M3),
                                                         block_quantize(w, kWeightBlock, Fp8Dtype::E4M3));
        QVERIFY(at::equal(y, expected));
        QVERIFY(at::allclose(xq.dequantize(), block_dequantize(block_quantize(x, kActivationBlock, Fp8Dtype::E4M3))));
        // No history: the update clears the staging entry and leaves nothing to roll.
        context->update(Fp8Pass::Forward);
        QCOMPARE(context->history(Fp8Pass::Forward)[0][0].item<float>(), 0.0f);
    }

    // The fused ops' block cast (one kernel: both orientations, scales in cuBLASLt's layout, the amax into
    // the staging entry) against the reference cast: the same bytes and scale values; the GEMM takes the
    // kernel's scales as they are (no copy), a reference scale_inv is copied into the layout; the slot's
    // statistics scale follows from the recorded amax at the update.
    void fusedBlockCastFeedsTheGemmWithoutACopy() {
        Fp8Recipe recipe = Fp8Recipe::seed_defaults();
        recipe.scaling = ScalingKind::Block;
        recipe.format = RecipeFormat::E4M3;
        const auto fused_context = one_gemm_context(recipe);
        const auto reference_context = one_gemm_context(recipe);
        at::manual_seed(9);
        const at::Tensor x = at::randn({130, 300}) * 5;  // ragged in both directions
        const at::Tensor w = at::randn({200, 300}) * 0.02;
        for (const auto& [t, slot] : {std::pair{x, 0}, std::pair{w, 1}}) {
            const Fp8Tensor fused = fused_host_ops().quantize(t, Fp8Quantizer{fused_context, Fp8Pass::Forward, slot}, true);
            const Fp8Tensor want = reference_ops().quantize(t, Fp8Quantizer{reference_context, Fp8Pass::Forward, slot}, true);
            QVERIFY(at::equal(fused.data.view(at::kByte), want.data.view(at::kByte)));
            QVERIFY(at::equal(fused.transposed.view(at::kByte), want.transposed.view(at::kByte)));
            QCOMPARE(fused.scale_inv.sizes(), want.scale_inv.sizes());
            QVERIFY(at::equal(fused.scale_inv, want.scale_inv));
            QVERIFY(at::equal(fused.transposed_scale_inv, want.transposed_scale_inv));
            const BlockShape block = slot == 1 ? kWeightBlock : kActivationBlock;
            for (const at::Tensor& scales : {fused.scale_inv, fused.transposed_scale_inv}) {
                const at::Tensor laid_out = block_scales_for_gemm(scales, block);
                QCOMPARE(laid_out.data_ptr(), scales.data_ptr());  // a view of the kernel's buffer
                QVERIFY(at::equal(laid_out, block_scales_for_gemm(scales.contiguous(), block)));  // padding 1 as a copy's
            }
            QVERIFY(block_scales_for_gemm(want.scale_inv, block).data_ptr() != want.scale_inv.data_ptr());
        }
        // Both recorded max |x| of the input and of the weight; the update turns them into the same scales.
        QVERIFY(at::equal(fused_context->history(Fp8Pass::Forward).select(1, 0),
                          reference_context->history(Fp8Pass::Forward).select(1, 0)));
        QCOMPARE(fused_context->history(Fp8Pass::Forward)[0][0].item<float>(), x.abs().max().item<float>());
        fused_context->update(Fp8Pass::Forward);
        reference_context->update(Fp8Pass::Forward);
        QVERIFY(at::equal(fused_context->scales(Fp8Pass::Forward), reference_context->scales(Fp8Pass::Forward)));
        const at::Tensor amaxes = at::stack({x.abs().max(), w.abs().max()});
        QVERIFY(at::equal(fused_context->scales(Fp8Pass::Forward).narrow(0, 0, 2),
                          block_statistics_scale(amaxes, 448.0f, recipe.block_power_of_two)));
        // The scale of the block holding the amax, as a power of two at or below fp8_max / amax.
        const float scale = fused_context->scales(Fp8Pass::Forward)[0].item<float>();
        QVERIFY(scale <= 448.0f / x.abs().max().item<float>() && scale * 2 > 448.0f / x.abs().max().item<float>());
        QCOMPARE(block_statistics_scale(at::tensor({0.0f, kNan, INFINITY}), 448.0f, true).sum().item<float>(), 3.0f);
    }

    // The scales in cuBLASLt's block layouts: 1x128 transposed with the rows padded to 4, 128x128 with
    // the k blocks padded to 4; every entry where the layout says, the padding 1.
    void blockScalesForGemmFollowCublasLayout() {
        const at::Tensor activation = at::arange(30 * 3, at::kFloat).reshape({30, 3}) + 1;  // [rows 30, k blocks 3]
        const at::Tensor a = block_scales_for_gemm(activation, kActivationBlock);
        QCOMPARE(a.sizes(), (at::IntArrayRef{3, 32}));
        QVERIFY(a.is_contiguous());
        const float* p = a.data_ptr<float>();
        for (int kb = 0; kb < 3; ++kb) {
            for (int r = 0; r < 32; ++r) {
                const float want = r < 30 ? activation[r][kb].item<float>() : 1.0f;
                QCOMPARE(p[kb * 32 + r], want);
            }
        }
        const at::Tensor weight = at::arange(2 * 6, at::kFloat).reshape({2, 6}) + 1;  // [row tiles 2, k tiles 6]
        const at::Tensor w = block_scales_for_gemm(weight, kWeightBlock);
        QCOMPARE(w.sizes(), (at::IntArrayRef{2, 8}));
        const float* q = w.data_ptr<float>();
        for (int rb = 0; rb < 2; ++rb) {
            for (int kb = 0; kb < 8; ++kb) QCOMPARE(q[rb * 8 + kb], kb < 6 ? weight[rb][kb].item<float>() : 1.0f);
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError, block_scales_for_gemm(weight, BlockShape{2, 128}));
        QVERIFY_THROWS_EXCEPTION(ConfigError, block_scales_for_gemm(at::ones({4}), kActivationBlock));
    }

    void blockGemmEmulationMatchesFloat64() {
        at::manual_seed(5);
        const at::Tensor a = at::randn({96, 384});
        const at::Tensor b = at::randn({200, 384}) * 0.05;
        const BlockQuantized qa = block_quantize(a, kActivationBlock, Fp8Dtype::E4M3);
        const BlockQuantized qb = block_quantize(b, kWeightBlock, Fp8Dtype::E4M3);
        const at::Tensor got = block_gemm_reference(qa, qb);
        // The same dequantized values multiplied and summed in float64, block by block along K.
        at::Tensor expected = at::zeros({96, 200}, at::kDouble);
        for (int kb = 0; kb < 3; ++kb) {
            const at::Tensor ak = qa.data.narrow(1, kb * 128, 128).to(at::kDouble) *
                                  qa.scale_inv.narrow(1, kb, 1).to(at::kDouble);
            const at::Tensor bk = qb.data.narrow(1, kb * 128, 128).to(at::kDouble) *
                                  qb.scale_inv.narrow(1, kb, 1).repeat_interleave(128, 0).narrow(0, 0, 200).to(at::kDouble);
            expected += at::mm(ak, bk.t());
        }
        const double error = (got.to(at::kDouble) - expected).norm().item<double>() / expected.norm().item<double>();
        QVERIFY2(error < 1e-6, qPrintable(QString::number(error)));
        // And against the unquantized product: FP8's own error, a few percent at most.
        const double fp8_error = (got - at::mm(a, b.t())).norm().item<double>() / at::mm(a, b.t()).norm().item<double>();
        QVERIFY2(fp8_error < 0.05, qPrintable(QString::number(fp8_error)));
        QVERIFY_THROWS_EXCEPTION(ConfigError, block_gemm_reference(qa, block_quantize(at::zeros({4, 100}), kWeightBlock, Fp8Dtype::E4M3)));
    }

    void amaxListParsing() {
        const std::vector<float> values = parse_amax_list("--amax", "3.5,0,1e-40,inf,nan,-0,1e-50");
        QCOMPARE(values.size(), std::size_t{7});
        QCOMPARE(values[0], 3.5f);
        QCOMPARE(values[2], 1e-40f);
        QVERIFY(std::isinf(values[3]));
        QVERIFY(std::isnan(values[4]));
        QCOMPARE(values[5], 0.0f);
        QCOMPARE(values[6], 0.0f);
        for (const char* bad : {"", "1,", "a", "1,-2", "-inf", "1e39", "1e999", "0x10", "1 ,2"}) {
            QVERIFY_THROWS_EXCEPTION(ConfigError, parse_amax_list("--amax", bad));
        }
        RecipeReplay replay;
        replay.history_len = 0;
        QVERIFY_THROWS_EXCEPTION(ConfigError, validate(replay));
    }
};

QTEST_GUILESS_MAIN(TestFp8Recipe)
#include "tst_fp8_recipe.moc"
