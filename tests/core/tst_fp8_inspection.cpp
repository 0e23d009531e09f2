// The FP8 inspector (--inspect-fp8): the errors of a cast and of the what-if recipes against sums computed here or
// the recipe run for real, and the block scales' histograms of block, MXFP8 and NVFP4 casts against scales worked
// out by hand from the formats' rules.
#include <QtTest>

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8State.h"
#include "core/fp8/Inspection.h"
#include "core/modules/ops/ReferenceOps.h"

using namespace tewb;

namespace {

std::shared_ptr<Fp8Context> one_gemm_context(const Fp8Recipe& recipe, bool inspect = false) {
    auto context = std::make_shared<Fp8Context>();
    context->add_gemm("test");
    context->prepare(recipe, inspect, at::kCPU, reference_state_ops());
    return context;
}

Fp8Recipe recipe_of(ScalingKind scaling) {
    Fp8Recipe recipe = Fp8Recipe::seed_defaults();
    recipe.scaling = scaling;
    if (scaling != ScalingKind::Delayed) recipe.format = RecipeFormat::E4M3;
    return recipe;
}

Fp8SlotSample input_sample(const Fp8Context& context) {
    return Fp8Context::read_statistics(context.statistics().contiguous().data_ptr<float>(), context.statistics_rows())[0];
}

double relative_error(const at::Tensor& back, const at::Tensor& x) {
    const at::Tensor xd = x.to(at::kDouble);
    return (back.to(at::kDouble) - xd).pow(2).sum().item<double>() / xd.pow(2).sum().item<double>();
}

// The histogram of `counts` from binade `lowest`, as the record keeps it.
Fp8ScaleHistogram histogram(int lowest, std::vector<std::int64_t> counts, std::int64_t empty) {
    return Fp8ScaleHistogram{lowest, std::move(counts), empty};
}

// One inspected cast of `x` into the input slot (or the weight slot) under `scaling`, and the slot's histogram.
Fp8ScaleHistogram histogram_after_cast(ScalingKind scaling, const at::Tensor& x, int slot = 0) {
    const auto context = one_gemm_context(recipe_of(scaling), /*inspect=*/true);
    reference_ops().quantize(x, Fp8Quantizer{context, Fp8Pass::Forward, slot}, false);
    context->update(Fp8Pass::Forward);
    return context->block_scale_histograms().at(static_cast<std::size_t>(slot));
}

}  // namespace

class TestFp8Inspection : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The inspector's quantization errors, checked against sums computed here, and its what-if values
    // against running that recipe (current scaling) or quantizing by hand (block scaling).
    void inspectorErrorsAndWhatIf() {
        at::manual_seed(9);
        const at::Tensor x = at::randn({40, 300}) * 3.0;
        const auto context = one_gemm_context(Fp8Recipe::seed_defaults(), /*inspect=*/true);
        // The delayed scale of step 2 comes from step 1's amax; use a different tensor in step 1.
        const Fp8Quantizer input{context, Fp8Pass::Forward, 0};
        reference_ops().quantize(x * 0.25, input, false);
        context->update(Fp8Pass::Forward);
        const float scale = context->scales(Fp8Pass::Forward)[0].item<float>();
        reference_ops().quantize(x, input, false);
        context->update(Fp8Pass::Forward);
        const std::vector<Fp8SlotSample> samples =
            Fp8Context::read_statistics(context->statistics().contiguous().data_ptr<float>(), context->statistics_rows());
        const Fp8SlotSample& got = samples[0];  // the input slot
        QVERIFY(got.rel_mse && got.what_if(WhatIf::Current) && got.what_if(WhatIf::Block));
        const at::Tensor xd = x.to(at::kDouble);
        const double signal = xd.pow(2).sum().item<double>();
        // As cast: x · scale, clamped, E4M3, back over the scale.
        const at::Tensor cast = (x * scale).clamp(-448, 448).to(at::kFloat8_e4m3fn).to(at::kDouble) / scale;
        const double expected = (cast - xd).pow(2).sum().item<double>() / signal;
        QVERIFY2(std::abs(*got.rel_mse - expected) <= 1e-5 * expected, qPrintable(QStringLiteral("%1 vs %2").arg(*got.rel_mse).arg(expected)));
        // What-if current scaling = one step of the current recipe on the same tensor.
        Fp8Recipe current = Fp8Recipe::seed_defaults();
        current.scaling = ScalingKind::Current;
        const auto other = one_gemm_context(current);
        const at::Tensor current_back = reference_ops().quantize(x, Fp8Quantizer{other, Fp8Pass::Forward, 0}, false).dequantize();
        const double current_expected = (current_back.to(at::kDouble) - xd).pow(2).sum().item<double>() / signal;
        QVERIFY2(std::abs(*got.what_if(WhatIf::Current) - current_expected) <= 1e-5 * current_expected,
                 qPrintable(QStringLiteral("%1 vs %2").arg(*got.what_if(WhatIf::Current)).arg(current_expected)));
        // What-if block scaling: 1×128 blocks along each row, power-of-two scales, E4M3, by hand.
        double block_error = 0;
        for (int r = 0; r < 40; ++r) {
            for (int c0 = 0; c0 < 300; c0 += 128) {
                const at::Tensor part = x[r].narrow(0, c0, std::min(128, 300 - c0));
                const float amax = part.abs().max().item<float>();
                const float block_scale = std::exp2(std::floor(std::log2(448.0f / amax)));
                const at::Tensor back = (part * block_scale).clamp(-448, 448).to(at::kFloat8_e4m3fn).to(at::kDouble) / block_scale;
                block_error += (back - part.to(at::kDouble)).pow(2).sum().item<double>();
            }
        }
        QVERIFY2(std::abs(*got.what_if(WhatIf::Block) - block_error / signal) <= 1e-5 * block_error / signal,
                 qPrintable(QStringLiteral("%1 vs %2").arg(*got.what_if(WhatIf::Block)).arg(block_error / signal)));
        QCOMPARE(snr_db(0.001), 30.0);
        // Without inspection there are no errors.
        const auto plain = one_gemm_context(Fp8Recipe::seed_defaults());
        reference_ops().quantize(x, Fp8Quantizer{plain, Fp8Pass::Forward, 0}, false);
        plain->update(Fp8Pass::Forward);
        QVERIFY(!Fp8Context::read_statistics(plain->statistics().contiguous().data_ptr<float>(), 1)[0].rel_mse);
    }

    // The microscaling what-ifs equal running that recipe on the same tensor (an input: MXFP8 along rows, NVFP4
    // rounded to nearest with 1×16 blocks), for a delayed and a block run alike.
    void microscalingWhatIfsAreThoseRecipes() {
        at::manual_seed(11);
        const at::Tensor x = at::randn({48, 200}) * 2.0;
        const auto run_recipe = [&](ScalingKind scaling) {
            const auto context = one_gemm_context(recipe_of(scaling));
            return relative_error(reference_ops().quantize(x, Fp8Quantizer{context, Fp8Pass::Forward, 0}, false).dequantize(), x);
        };
        const double mxfp8 = run_recipe(ScalingKind::Mxfp8);
        const double nvfp4 = run_recipe(ScalingKind::Nvfp4);
        QVERIFY(nvfp4 > 10 * mxfp8);  // four bits against eight
        for (const ScalingKind scaling : {ScalingKind::Delayed, ScalingKind::Block, ScalingKind::Mxfp8}) {
            const auto context = one_gemm_context(recipe_of(scaling), /*inspect=*/true);
            reference_ops().quantize(x, Fp8Quantizer{context, Fp8Pass::Forward, 0}, false);
            context->update(Fp8Pass::Forward);
            const Fp8SlotSample got = input_sample(*context);
            QVERIFY(got.what_if(WhatIf::Mxfp8) && got.what_if(WhatIf::Nvfp4));
            QVERIFY2(std::abs(*got.what_if(WhatIf::Mxfp8) - mxfp8) <= 1e-5 * mxfp8,
                     qPrintable(QStringLiteral("%1 vs %2").arg(*got.what_if(WhatIf::Mxfp8)).arg(mxfp8)));
            QVERIFY2(std::abs(*got.what_if(WhatIf::Nvfp4) - nvfp4) <= 1e-5 * nvfp4,
                     qPrintable(QStringLiteral("%1 vs %2").arg(*got.what_if(WhatIf::Nvfp4)).arg(nvfp4)));
            if (scaling == ScalingKind::Mxfp8) QCOMPARE(*got.rel_mse, *got.what_if(WhatIf::Mxfp8));  // as cast is MXFP8
        }
    }

    // A weight's NVFP4 what-if uses 16 × 16 tiles: equal to the recipe's weight cast, and not to 1×16 blocks.
    void nvfp4WhatIfOfAWeightUsesTiles() {
        at::manual_seed(12);
        const at::Tensor w = at::randn({64, 64}) * at::linspace(0.01, 3.0, 64).reshape({64, 1});  // rows of unlike sizes
        const auto nvfp4 = one_gemm_context(recipe_of(ScalingKind::Nvfp4));
        const double tiles = relative_error(reference_ops().quantize(w, Fp8Quantizer{nvfp4, Fp8Pass::Forward, 1}, false).dequantize(), w);
        const double rows = relative_error(what_if_round_trip(w, WhatIf::Nvfp4, SlotRole::Input, Fp8Dtype::E4M3), w);
        QVERIFY(std::abs(rows - tiles) > 1e-3 * tiles);
        const auto context = one_gemm_context(recipe_of(ScalingKind::Delayed), /*inspect=*/true);
        reference_ops().quantize(w, Fp8Quantizer{context, Fp8Pass::Forward, 1}, false);
        context->update(Fp8Pass::Forward);
        const Fp8SlotSample weight =
            Fp8Context::read_statistics(context->statistics().contiguous().data_ptr<float>(), context->statistics_rows())[1];
        QVERIFY2(std::abs(*weight.what_if(WhatIf::Nvfp4) - tiles) <= 1e-5 * tiles,
                 qPrintable(QStringLiteral("%1 vs %2").arg(*weight.what_if(WhatIf::Nvfp4)).arg(tiles)));
    }

    // Block scaling (1×128, power-of-two scales): scale_inv = 2^ceil(log2(amax / 448)); an all-zero block has none.
    void blockHistogram() {
        at::Tensor x = at::zeros({2, 256});
        x[0][3] = 448.0f;   // scale 1: binade 0
        x[0][200] = -1792;  // scale 1/4, scale_inv 4: binade 2
        x[1][130] = 1.0f;   // scale 448 rounded down to 256: scale_inv 2^-8
        // x[1][0..127] all zero: no scale
        QCOMPARE(histogram_after_cast(ScalingKind::Block, x), histogram(-8, {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}, 1));
    }

    // MXFP8 (OCP): X = 2^(floor(log2 amax) − 8) for E4M3, per 32 values of a row.
    void mxfp8Histogram() {
        at::Tensor x = at::zeros({1, 96});
        x[0][5] = 1.0f;     // X = 2^-8
        x[0][40] = -3.0f;   // floor(log2 3) = 1: X = 2^-7
        x[0][70] = 1.9f;    // X = 2^-8
        QCOMPARE(histogram_after_cast(ScalingKind::Mxfp8, x), histogram(-8, {2, 1}, 0));
    }

    // NVFP4: s_enc = 448 · 6 / amax of the tensor; a block's E4M3 scale = its amax / 6 · s_enc, and its values are
    // multiplied back by that scale over s_enc.
    void nvfp4Histogram() {
        at::Tensor x = at::zeros({1, 48});
        x[0][0] = 6.0f;     // the tensor's amax: s_enc = 448; block scale 448 → factor 1: binade 0
        x[0][20] = 0.75f;   // block scale 56 → factor 1/8: binade -3
        // x[0][32..47] zero: no scale
        QCOMPARE(histogram_after_cast(ScalingKind::Nvfp4, x), histogram(-3, {1, 0, 0, 1}, 1));
        // A weight's 16 × 16 tiles count once each: 32 × 32 ones, s_enc = 2688, every tile's scale 448, factor 1/6.
        QCOMPARE(histogram_after_cast(ScalingKind::Nvfp4, at::ones({32, 32}), 1), histogram(-3, {4}, 0));
    }

    // The bins: floor(log2) of any positive float, clamped to the end bins; zero, inf and NaN blocks have no scale.
    void binsAtTheEdges() {
        const at::Tensor factor = at::tensor({1.0f, 1.5f, 0.999f, 0x1p-149f, 3e38f, 2.0f, 2.0f, 2.0f, 0.0f});
        const float inf = std::numeric_limits<float>::infinity();
        const at::Tensor amax = at::tensor({1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, inf, std::nanf(""), 1.0f});
        const at::Tensor bins = block_scale_bins(factor, amax);
        const std::int64_t lowest = Fp8ScaleHistogram::kLowestExponent;
        const std::int64_t none = Fp8ScaleHistogram::kBins;
        const std::vector<std::int64_t> want{0 - lowest, 0 - lowest, -1 - lowest, 0, Fp8ScaleHistogram::kBins - 1, none, none, none, none};
        QCOMPARE(std::vector<std::int64_t>(bins.data_ptr<std::int64_t>(), bins.data_ptr<std::int64_t>() + bins.numel()), want);
    }

    // Histograms add up over steps, cover only inspected runs of block-scaled recipes, and follow the statistics'
    // slot order.
    void histogramsAccumulateAndOnlyWhereTheyMean() {
        const at::Tensor x = at::ones({4, 64});
        const auto context = one_gemm_context(recipe_of(ScalingKind::Mxfp8), /*inspect=*/true);
        for (int step = 0; step < 3; ++step) {
            reference_ops().quantize(x, Fp8Quantizer{context, Fp8Pass::Forward, 0}, false);
            reference_ops().quantize(x * 1024, Fp8Quantizer{context, Fp8Pass::Backward, 0}, false);
            context->update(Fp8Pass::Forward);
            context->update(Fp8Pass::Backward);
        }
        const std::vector<Fp8ScaleHistogram> all = context->block_scale_histograms();
        QCOMPARE(all.size(), std::size_t{3});  // input, weight, grad-output
        QCOMPARE(all[0], histogram(-8, {3 * 8}, 0));
        QCOMPARE(all[1], histogram(0, {}, 0));  // the weight slot was never cast
        QCOMPARE(all[2], histogram(2, {3 * 8}, 0));  // 1024 with E4M3 (format e4m3): 2^(10 − 8)
        for (const bool inspect : {false, true}) {
            const auto delayed = one_gemm_context(recipe_of(ScalingKind::Delayed), inspect);
            reference_ops().quantize(x, Fp8Quantizer{delayed, Fp8Pass::Forward, 0}, false);
            delayed->update(Fp8Pass::Forward);
            QVERIFY(delayed->block_scale_histograms().empty());  // one scale per tensor
        }
        const auto plain = one_gemm_context(recipe_of(ScalingKind::Block));
        reference_ops().quantize(x, Fp8Quantizer{plain, Fp8Pass::Forward, 0}, false);
        plain->update(Fp8Pass::Forward);
        QVERIFY(plain->block_scale_histograms().empty());  // not inspected
    }
};

QTEST_APPLESS_MAIN(TestFp8Inspection)
#include "tst_fp8_inspection.moc"
