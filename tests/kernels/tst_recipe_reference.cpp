// The recipe kernel's host reference (the same per-slot arithmetic the kernel runs, kernels/recipe/)
// against core's CPU implementation (Fp8Context::update on CPU tensors), bit for bit, including NaN, inf,
// zero and denormal amaxes, several history lengths, both amax algorithms, margins, current scaling and
// block scaling's slot scale (power of two or exact).
#include <QtTest>

#include <cstring>
#include <random>

#include <ATen/ATen.h>

#include "core/fp8/Fp8State.h"
#include "core/fp8/ScaleUpdate.h"
#include "recipe_calls.h"
#include "tewb_kernels/recipe.h"
#include "tewb_kernels/kernel_error.h"

using namespace tewb;
namespace calls = tewb::test::calls;

namespace {

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

kernels::ScalingRule rule_for(const Fp8Recipe& recipe) {
    if (recipe.scaling == ScalingKind::Current) return kernels::ScalingRule::Current;
    if (recipe.scaling == ScalingKind::Block) {
        return recipe.block_power_of_two ? kernels::ScalingRule::BlockPowerOfTwo : kernels::ScalingRule::BlockExact;
    }
    return recipe.algo == AmaxAlgo::Max ? kernels::ScalingRule::DelayedMax : kernels::ScalingRule::DelayedMostRecent;
}

}  // namespace

class TestRecipeReference : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hostReferenceMatchesCoreBitForBit() {
        std::mt19937 random(23);
        std::lognormal_distribution<float> spread(0.0f, 4.0f);
        const float inf = std::numeric_limits<float>::infinity();
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const std::vector<float> specials{0.0f, -0.0f, 1e-37f, 1e-40f, inf, nan, 448.0f, 57344.0f, 1e30f};
        int checked = 0;
        for (const int len : {1, 2, 3, 16, 300}) {
            for (const ScalingKind scaling : {ScalingKind::Delayed, ScalingKind::Current, ScalingKind::Block}) {
                for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
                    for (const int margin : {0, 3}) {
                        for (const bool pow2 : {true, false}) {
                            const bool delayed = scaling == ScalingKind::Delayed;
                            if (!delayed && (margin != 0 || algo != AmaxAlgo::Max)) continue;  // no margin, no history
                            if (scaling != ScalingKind::Block && !pow2) continue;
                            Fp8Recipe recipe{scaling, RecipeFormat::Hybrid, len, algo, margin};
                            recipe.block_power_of_two = pow2;
                            auto context = std::make_shared<Fp8Context>();
                            for (int g = 0; g < 3; ++g) context->add_gemm("g" + std::to_string(g));
                            context->prepare(recipe, false, at::kCPU, reference_state_ops());
                            for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
                                const int slots = static_cast<int>(context->scales(pass).size(0));
                                // Packed copies of the context's slots (which sit each in its own aligned slot).
                                at::Tensor history = context->history(pass).contiguous().clone();
                                at::Tensor scale = context->scales(pass).contiguous().clone();
                                at::Tensor scale_inv = context->scale_invs(pass).contiguous().clone();
                                const float numerator = scale_numerator(fp8_max(context->dtype(pass)), margin);
                                for (int step = 0; step < 2 * len + 6 && step < 40; ++step) {
                                    for (int s = 0; s < slots; ++s) {
                                        const int pick = static_cast<int>(random() % 14);
                                        const float a = pick < 9 ? specials[pick] : spread(random);
                                        context->record_amax(pass, s, at::scalar_tensor(a, at::kFloat));
                                        history[s][0] = context->history(pass)[s][0].item<float>();
                                    }
                                    // The record the update writes on the side: the step's amax and scale used, the
                                    // scale_inv before the update.
                                    const at::Tensor kept_before = context->scale_invs(pass).contiguous().clone();
                                    at::Tensor statistics = at::full({slots, 3}, -1.0f);
                                    at::Tensor kept = at::full({slots}, -1.0f);
                                    const calls::SlotRecord record{statistics.data_ptr<float>(), 3, kept.data_ptr<float>()};
                                    context->update(pass);
                                    calls::update_scaling(kernels::host::update_scaling, history.data_ptr<float>(),
                                                          scale.data_ptr<float>(), scale_inv.data_ptr<float>(), slots, len,
                                                          numerator, rule_for(recipe), record);
                                    const at::Tensor core_statistics = context->slot_statistics(pass);
                                    QVERIFY(std::memcmp(statistics.narrow(1, 0, 2).contiguous().data_ptr<float>(),
                                                        core_statistics.narrow(1, 0, 2).contiguous().data_ptr<float>(),
                                                        sizeof(float) * static_cast<std::size_t>(slots * 2)) == 0);
                                    QVERIFY(at::equal(statistics.select(1, 2), at::full({slots}, -1.0f)));  // beyond the two columns
                                    QVERIFY(std::memcmp(kept.data_ptr<float>(), kept_before.data_ptr<float>(),
                                                        sizeof(float) * static_cast<std::size_t>(slots)) == 0);
                                    for (int s = 0; s < slots; ++s) {
                                        QVERIFY2(same_bits(scale[s].item<float>(), context->scales(pass)[s].item<float>()),
                                                 qPrintable(QStringLiteral("L %1 slot %2 step %3").arg(len).arg(s).arg(step)));
                                        QVERIFY(
                                            same_bits(scale_inv[s].item<float>(), context->scale_invs(pass)[s].item<float>()));
                                    }
                                    const at::Tensor core = context->history(pass).contiguous();
                                    QVERIFY(std::memcmp(history.data_ptr<float>(), core.data_ptr<float>(),
                                                        sizeof(float) * static_cast<std::size_t>(slots * len)) == 0);
                                    ++checked;
                                }
                            }
                        }
                    }
                }
            }
        }
        QVERIFY(checked > 300);
    }

    // The FP8 state's layout (every slot in its own 256-byte slot, docs/kernels.md): the update over strided slots
    // writes what the packed update writes, bit for bit, and leaves the padding between slots alone.
    void stridedSlotsMatchPacked() {
        std::mt19937 random(5);
        std::lognormal_distribution<float> spread(0.0f, 4.0f);
        const int slots = 7;
        const float pad = -12345.0f;
        for (const int len : {1, 3, 16}) {
            for (const auto rule : {kernels::ScalingRule::DelayedMax, kernels::ScalingRule::DelayedMostRecent,
                                    kernels::ScalingRule::Current, kernels::ScalingRule::BlockPowerOfTwo,
                                    kernels::ScalingRule::BlockExact}) {
                const calls::SlotStrides strides{len + 5, 64};
                std::vector<float> history(static_cast<std::size_t>(slots * len)), scale(slots), scale_inv(slots), kept(slots);
                std::vector<float> history_s(static_cast<std::size_t>(slots * strides.history), pad);
                std::vector<float> scale_s(static_cast<std::size_t>(slots * strides.scale), pad);
                std::vector<float> scale_inv_s(scale_s.size(), pad), kept_s(scale_s.size(), pad);
                for (int s = 0; s < slots; ++s) {
                    for (int i = 0; i < len; ++i) {
                        history[s * len + i] = history_s[s * strides.history + i] = spread(random);
                    }
                    scale[s] = scale_s[s * strides.scale] = spread(random);
                    scale_inv[s] = scale_inv_s[s * strides.scale] = 1.0f / scale[s];
                }
                for (int step = 0; step < 3; ++step) {
                    calls::update_scaling(kernels::host::update_scaling, history.data(), scale.data(), scale_inv.data(), slots,
                                          len, 448.0f, rule, calls::SlotRecord{nullptr, 0, kept.data()});
                    calls::update_scaling(kernels::host::update_scaling, history_s.data(), scale_s.data(), scale_inv_s.data(),
                                          slots, len, 448.0f, rule, calls::SlotRecord{nullptr, 0, kept_s.data()}, strides);
                    for (int s = 0; s < slots; ++s) {
                        for (int i = 0; i < strides.history; ++i) {
                            const float got = history_s[s * strides.history + i];
                            QVERIFY(same_bits(got, i < len ? history[s * len + i] : pad));
                        }
                        for (int i = 0; i < strides.scale; ++i) {
                            const std::size_t at = static_cast<std::size_t>(s * strides.scale + i);
                            QVERIFY(same_bits(scale_s[at], i == 0 ? scale[s] : pad));
                            QVERIFY(same_bits(scale_inv_s[at], i == 0 ? scale_inv[s] : pad));
                            QVERIFY(same_bits(kept_s[at], i == 0 ? kept[s] : pad));
                        }
                        history[s * len] = history_s[s * strides.history] = spread(random);  // the next step's amax
                    }
                }
            }
        }
        // A history stride below the row's length would overlap rows: refused, naming the value.
        std::vector<float> h(64), sc(4), si(4);
        QVERIFY_THROWS_EXCEPTION(kernels::KernelError,
                                 calls::update_scaling(kernels::host::update_scaling, h.data(), sc.data(), si.data(), 2, 16,
                                                       448.0f, kernels::ScalingRule::DelayedMax, {}, calls::SlotStrides{8, 1}));
    }
};

QTEST_GUILESS_MAIN(TestRecipeReference)
#include "tst_recipe_reference.moc"
