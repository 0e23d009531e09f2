// The te backend of MiniGPT: same initial model as the torch backend, the same FP32 loss curve, and
// FP8 (emulated on the CPU) that learns, labelled as emulation, with per-slot statistics.
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <ATen/ATen.h>

#include "../helpers/Sanitizers.h"
#include "core/common/Error.h"
#include "core/model/MiniGpt.h"
#include "core/results/Fp8Summary.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordJson.h"
#include "core/train/Trainer.h"

using namespace tewb;

namespace {

RunConfig quick(Backend backend, Precision precision, int warmup, int iters) {
    RunConfig config = make_preset(Preset::QuickCpu);
    config.backend = backend;
    config.precision = precision;
    config.warmup = warmup;
    config.iters = iters;
    return config;
}

// The quick preset's size as a llama with grouped-query attention (4 heads, 2 key/value heads), 20 steps.
RunConfig quick_llama(Backend backend, Precision precision) {
    RunConfig config = quick(backend, precision, 2, 18);
    config.model.arch = Arch::Llama;
    config.model.kv_heads = 2;
    return config;
}

}  // namespace

class TestTeTraining : public QObject {
    Q_OBJECT

    const Trainer trainer_{detect_device()};
    std::optional<RunRecord> te_fp32_;

    const RunRecord& te_fp32() {
        if (!te_fp32_) te_fp32_ = trainer_.run(quick(Backend::Te, Precision::Fp32, 5, 55));
        return *te_fp32_;
    }

private Q_SLOTS:
    void sameInitialModelAsTheTorchBackend() {
        const ModelShape shape = make_preset(Preset::QuickCpu).model;
        const auto torch_model = make_model(Backend::Torch, shape, 99);
        const auto te_model = make_model(Backend::Te, shape, 99);
        const auto a = torch_model->named_parameters();
        const auto b = te_model->named_parameters();
        QCOMPARE(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            QVERIFY2(a[i].value().equal(b[i].value()), qPrintable(QString::fromStdString(a[i].key() + " vs " + b[i].key())));
        }
        QCOMPARE(b[2].key(), std::string("blocks_0.qkv.layer_norm_weight"));
        QCOMPARE(b[b.size() - 1].key(), std::string("ln_f.bias"));
        QVERIFY(te_model->fp8_context() != nullptr);
        QVERIFY(torch_model->fp8_context() == nullptr);
    }

    void fp32LossCurveMatchesTheTorchBackend() {
        const RunRecord torch = trainer_.run(quick(Backend::Torch, Precision::Fp32, 5, 35));
        const RunRecord te = trainer_.run(quick(Backend::Te, Precision::Fp32, 5, 35));
        QCOMPARE(te.status, RunStatus::Finished);
        QCOMPARE(te.steps.size(), std::size_t{40});
        double worst = 0;
        for (std::size_t i = 0; i < te.steps.size(); ++i) {
            worst = std::max(worst, std::abs(te.steps[i].loss - torch.steps[i].loss) / std::abs(torch.steps[i].loss));
        }
        QVERIFY2(worst <= 1e-3, qPrintable(QString::number(worst)));
        QVERIFY(te.steps.front().fp8.empty());
        QVERIFY(te.fp8_slots.empty());
        QCOMPARE(te.execution.implementation, std::string("te-reference, fp32"));
        QVERIFY(!te.execution.fp8_emulated);
    }

    // LlamaTe creates Llama's parameters (values, shapes, order) from the same seed; no biases, no position table.
    void sameInitialLlamaModelAsTheTorchBackend() {
        ModelShape shape = make_preset(Preset::QuickCpu).model;
        shape.arch = Arch::Llama;
        shape.kv_heads = 2;
        const auto torch_model = make_model(Backend::Torch, shape, 99);
        const auto te_model = make_model(Backend::Te, shape, 99);
        const auto a = torch_model->named_parameters();
        const auto b = te_model->named_parameters();
        QCOMPARE(a.size(), std::size_t{1 + 6 * 2 + 1});
        QCOMPARE(b.size(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            QVERIFY2(a[i].value().equal(b[i].value()), qPrintable(QString::fromStdString(a[i].key() + " vs " + b[i].key())));
        }
        // q's 4 heads, k's 2 and v's 2 of 32 each; fc1 [gate | up] of 2 x 384 (8/3 x 128 rounded up to 64).
        QCOMPARE(b[2].key(), std::string("blocks_0.qkv.weight"));
        QCOMPARE(b[2].value().sizes(), (c10::IntArrayRef{8 * 32, 128}));
        QCOMPARE(b[5].key(), std::string("blocks_0.mlp.fc1_weight"));
        QCOMPARE(b[5].value().sizes(), (c10::IntArrayRef{2 * 384, 128}));
        QCOMPARE(b[b.size() - 1].key(), std::string("norm_f.weight"));
        QCOMPARE(te_model->named_buffers().size(), std::size_t{2});  // the rotary tables
    }

    // The llama te model (TE-style modules, RMSNorm, SwiGLU, rotary, grouped-query attention) trains as the plain
    // LibTorch Llama in FP32, step for step, on the reference ops and on the fused ops over the host kernels.
    void llamaFp32LossCurveMatchesTheTorchBackend_data() {
        QTest::addColumn<TeImpl>("impl");
        QTest::newRow("reference") << TeImpl::Reference;
        QTest::newRow("fused-host") << TeImpl::Fused;
    }
    void llamaFp32LossCurveMatchesTheTorchBackend() {
        QFETCH(TeImpl, impl);
        const RunRecord torch = trainer_.run(quick_llama(Backend::Torch, Precision::Fp32));
        RunConfig config = quick_llama(Backend::Te, Precision::Fp32);
        config.te_impl = impl;
        const RunRecord te = trainer_.run(config);
        QVERIFY2(torch.status == RunStatus::Finished, torch.message.c_str());
        QVERIFY2(te.status == RunStatus::Finished, te.message.c_str());
        QCOMPARE(te.steps.size(), std::size_t{20});
        QCOMPARE(torch.steps.size(), te.steps.size());
        QVERIFY(te.execution.fallbacks.empty());
        double worst = 0;
        for (std::size_t i = 0; i < te.steps.size(); ++i) {
            worst = std::max(worst, std::abs(te.steps[i].loss - torch.steps[i].loss) / std::abs(torch.steps[i].loss));
        }
        qInfo("largest relative loss difference over 20 steps: %.2e", worst);
        QVERIFY2(worst <= 1e-5, qPrintable(QString::number(worst)));
        QVERIFY(te.steps.back().loss < te.steps.front().loss - 0.3);
    }

    // Under ASan 16 steps of the same run (every check below but the learning bounds, which the default build holds:
    // docs/reliability.md, "CI's time").
    void fp8EmulatedLearnsNearFp32() {
        const RunRecord fp8 = trainer_.run(kUnderAsan ? quick(Backend::Te, Precision::Fp8, 1, 15) : quick(Backend::Te, Precision::Fp8, 5, 55));
        QCOMPARE(fp8.status, RunStatus::Finished);
        if (!kUnderAsan) {
            const double first = fp8.steps.front().loss;
            const double last = fp8.summary.final_loss.value();
            QVERIFY2(first - last >= 0.5, qPrintable(QStringLiteral("first %1, last %2").arg(first).arg(last)));
            const double fp32_last = te_fp32().summary.final_loss.value();
            QVERIFY2(std::abs(last - fp32_last) <= 0.15, qPrintable(QStringLiteral("fp8 %1, fp32 %2").arg(last).arg(fp32_last)));
            // The FP8 path really ran: its curve is not the FP32 one.
            QVERIFY(fp8.steps[10].loss != te_fp32().steps[10].loss);
        }

        QVERIFY(fp8.execution.fp8_emulated);
        QVERIFY2(fp8.execution.implementation.find("fp8 emulated (delayed scaling, hybrid, history 16, max, margin 0, first step calibrated)") !=
                     std::string::npos,
                 fp8.execution.implementation.c_str());
        QCOMPARE(fp8.config.fp8, Fp8Recipe::seed_defaults());

        // Statistics: 2 layers x 4 GEMMs x (input, weight, grad-output).
        QCOMPARE(fp8.fp8_slots.size(), std::size_t{24});
        QCOMPARE(fp8.fp8_slots[0].module, std::string("blocks_0.qkv"));
        QCOMPARE(fp8.fp8_slots[2].dtype, Fp8Dtype::E5M2);
        QCOMPARE(fp8.fp8_slots[11].module, std::string("blocks_0.mlp.fc2"));
        for (const StepMetrics& step : fp8.steps) {
            QCOMPARE(step.fp8.size(), std::size_t{24});
            for (const Fp8SlotSample& s : step.fp8) {
                QVERIFY(std::isfinite(s.amax) && s.amax > 0);
                QVERIFY(!s.saturated.has_value());  // not inspecting
            }
        }
        // Step 1 calibrates: each cast takes the scale its own amax gives.
        QCOMPARE(fp8.steps[0].fp8[0].scale, 448.0f / fp8.steps[0].fp8[0].amax);
        QCOMPARE(fp8.steps[0].fp8[1].scale, 448.0f / fp8.steps[0].fp8[1].amax);
        // From step 2 on, each forward slot's scale is 448 / max over the window of earlier amaxes.
        float window = 0;
        for (std::size_t k = 0; k + 1 < fp8.steps.size() && k < 15; ++k) {
            window = std::max(window, fp8.steps[k].fp8[1].amax);  // the weight slot of blocks_0.qkv
            QCOMPARE(fp8.steps[k + 1].fp8[1].scale, 448.0f / window);
        }
    }

    // The record names the attention backend LibTorch's dispatcher picks for the models' q, k, v (both
    // backends call it alike): on the CPU its flash kernel, and math when flash is switched off, so it is
    // asked, not assumed.
    void recordsTheAttentionBackend() {
        for (const Backend backend : {Backend::Torch, Backend::Te}) {
            // a gpt, and a llama whose 2 key/value heads serve 4 query heads (asked with enable_gqa, as it runs)
            for (RunConfig config : {quick(backend, Precision::Fp32, 0, 1), quick_llama(backend, Precision::Fp32)}) {
                config.warmup = 0;
                config.iters = 1;
                const RunRecord header = make_run_header(resolve_run(config, trainer_.device()), trainer_.device());
                QCOMPARE(header.execution.attention_backend, std::string("flash"));
                at::globalContext().setSDPUseFlash(false);
                const RunRecord record = trainer_.run(config);
                at::globalContext().setSDPUseFlash(true);
                QCOMPARE(record.status, RunStatus::Finished);
                QCOMPARE(record.execution.attention_backend, std::string("math"));
            }
        }
        // A te run whose fused ops run the attention themselves (bfloat16: kernels/attention) records the project's
        // kernels, for a gpt's heads and a llama's grouped queries alike; a llama in float32 stays LibTorch's.
        RunConfig own = quick(Backend::Te, Precision::Bf16, 0, 1);
        own.te_impl = TeImpl::Fused;
        QCOMPARE(make_run_header(resolve_run(own, trainer_.device()), trainer_.device()).execution.attention_backend,
                 std::string("tewb"));
        RunConfig grouped = quick_llama(Backend::Te, Precision::Bf16);
        grouped.te_impl = TeImpl::Fused;
        QCOMPARE(make_run_header(resolve_run(grouped, trainer_.device()), trainer_.device()).execution.attention_backend,
                 std::string("tewb"));
        RunConfig grouped_fp32 = quick_llama(Backend::Te, Precision::Fp32);
        grouped_fp32.te_impl = TeImpl::Fused;
        QCOMPARE(make_run_header(resolve_run(grouped_fp32, trainer_.device()), trainer_.device()).execution.attention_backend,
                 std::string("flash"));
    }

    void inspectionAndOtherRecipes() {
        RunConfig config = quick(Backend::Te, Precision::Fp8, 1, 4);
        config.inspect_fp8 = true;
        config.fp8.scaling = ScalingKind::Current;
        config.fp8.format = RecipeFormat::E4M3;
        std::size_t slots_at_start = 0;
        std::vector<std::size_t> samples_per_step;
        TrainerCallbacks callbacks;
        callbacks.on_start = [&](const RunRecord& header) { slots_at_start = header.fp8_slots.size(); };
        callbacks.on_step = [&](const StepMetrics& step) { samples_per_step.push_back(step.fp8.size()); };
        const RunRecord record = trainer_.run(config, callbacks);
        QCOMPARE(slots_at_start, std::size_t{24});  // the GUI knows the slots before the first step
        QCOMPARE(samples_per_step, std::vector<std::size_t>(5, 24));
        QCOMPARE(record.status, RunStatus::Finished);
        QCOMPARE(record.fp8_slots[2].dtype, Fp8Dtype::E4M3);
        for (const StepMetrics& step : record.steps) {
            for (std::size_t i = 0; i < step.fp8.size(); ++i) {
                const Fp8SlotSample& s = step.fp8[i];
                QVERIFY(s.saturated && *s.saturated >= 0 && *s.saturated <= 1);
                QVERIFY(s.underflow && *s.underflow >= 0 && *s.underflow <= 1);
                QCOMPARE(*s.saturated, 0.0f);  // current scaling maps each amax to 448: nothing saturates
                QCOMPARE(s.scale, 448.0f / s.amax);
            }
        }
        QVERIFY(record.execution.implementation.find("current scaling, e4m3") != std::string::npos);
        // The FP8 bookkeeping (the scale updates after each pass) is its own part of every step.
        for (const StepMetrics& step : record.steps) {
            QVERIFY(step.breakdown && step.breakdown->fp8_ms > 0 && step.breakdown->forward_ms > step.breakdown->fp8_ms);
        }

        const std::string summary = render_fp8_summary(record);
        QVERIFY2(summary.find("FP8 casts over the timed steps (24 slots; GEMMs emulated)") == 0, summary.c_str());
        QVERIFY2(summary.find("\nweight ") != std::string::npos, summary.c_str());
        QVERIFY2(summary.find("worst saturated fraction: 0% (") != std::string::npos, summary.c_str());
        QVERIFY2(summary.find("slots with an inf or NaN amax (an inf freezes the scale while in the window, a NaN step keeps it): 0") != std::string::npos,
                 summary.c_str());
        QVERIFY(render_fp8_summary(te_fp32()).empty());

        // The record round-trips through JSON with its FP8 part; the FP8 CSV has a row per step and slot.
        const RunRecord back = record_from_json_text(record_to_json_text(record), "test");
        QCOMPARE(back.config, record.config);
        QCOMPARE(back.fp8_slots, record.fp8_slots);
        QCOMPARE(back.execution, record.execution);
        for (std::size_t i = 0; i < record.steps.size(); ++i) QCOMPARE(back.steps[i], record.steps[i]);
        std::ostringstream csv;
        write_fp8_csv(csv, {record});
        const std::string text = csv.str();
        QCOMPARE(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), 1 + 5 * record.fp8_slots.size());
    }

    // Float8BlockScaling (emulated): it trains near FP32, its record says so, and its casts use block scales.
    // Under ASan 6 steps of the same run (the per-step checks, not the bound against FP32: the default build's).
    void blockScalingTrainsNearFp32() {
        RunConfig config = kUnderAsan ? quick(Backend::Te, Precision::Fp8, 1, 5) : quick(Backend::Te, Precision::Fp8, 5, 55);
        config.fp8.scaling = ScalingKind::Block;
        config.fp8.format = RecipeFormat::E4M3;
        config.inspect_fp8 = true;
        const RunRecord record = trainer_.run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        if (!kUnderAsan) {
            const double fp32_last = te_fp32().summary.final_loss.value();
            QVERIFY2(std::abs(*record.summary.final_loss - fp32_last) <= 0.15,
                     qPrintable(QStringLiteral("block %1, fp32 %2").arg(*record.summary.final_loss).arg(fp32_last)));
        }
        QVERIFY(record.execution.fp8_emulated);
        QVERIFY2(record.execution.implementation.find("fp8 emulated (block scaling, e4m3, 1x128 / 128x128 blocks, power-of-two "
                                                      "scales)") != std::string::npos,
                 record.execution.implementation.c_str());
        for (const StepMetrics& step : record.steps) {
            for (const Fp8SlotSample& s : step.fp8) {
                QVERIFY(std::isfinite(s.amax));
                int exponent = 0;
                std::frexp(448.0f / s.amax, &exponent);
                QCOMPARE(s.scale, std::ldexp(1.0f, exponent - 1));  // the amax block's scale: the power of two below
                QCOMPARE(*s.saturated, 0.0f);  // every block maps its own amax below 448
                QCOMPARE(*s.rel_mse, *s.what_if(WhatIf::Block));  // as cast is block scaling
            }
        }
        // The block scales' histograms: one per slot; a step casts each weight's 128 × 128 tiles, each activation's
        // 1 × 128 blocks once.
        QCOMPARE(record.fp8_block_scales.size(), record.fp8_slots.size());
        for (const Fp8ScaleHistogram& h : record.fp8_block_scales) QVERIFY(h.blocks() > 0 && h.blocks() % record.steps.size() == 0);
        const RunRecord back = record_from_json_text(record_to_json_text(record), "test");
        QCOMPARE(back.config.fp8, record.config.fp8);
        QCOMPARE(back.fp8_block_scales, record.fp8_block_scales);
        RunConfig exact = config;
        exact.fp8.block_power_of_two = false;
        exact.iters = 3;
        const RunRecord exact_run = trainer_.run(exact);
        QCOMPARE(exact_run.status, RunStatus::Finished);
        QCOMPARE(exact_run.steps[1].fp8[0].scale, 448.0f / exact_run.steps[1].fp8[0].amax);
    }

    // Blackwell's microscaling recipes (emulated on the reference ops): they train near FP32 on the quick preset (MXFP8
    // within the bound FP8 holds; NVFP4 within 0.1, where it measured 0.004 to 0.018 from FP32 with each option on and
    // off, 2026-12-06), the record says what ran, and the statistics show each slot's scale as the recipe derives it.
    void microscalingRecipesTrainNearFp32_data() {
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("stochastic");
        QTest::addColumn<bool>("hadamard");
        QTest::addColumn<double>("bound");
        QTest::newRow("mxfp8") << int(ScalingKind::Mxfp8) << true << true << 0.15;
        QTest::newRow("nvfp4") << int(ScalingKind::Nvfp4) << true << true << 0.1;
        if (!kUnderAsan) {
            QTest::newRow("nvfp4, nearest, no Hadamard") << int(ScalingKind::Nvfp4) << false << false << 0.1;
        }
    }
    void microscalingRecipesTrainNearFp32() {
        QFETCH(int, scaling);
        QFETCH(bool, stochastic);
        QFETCH(bool, hadamard);
        QFETCH(double, bound);
        RunConfig config = kUnderAsan ? quick(Backend::Te, Precision::Fp8, 1, 3) : quick(Backend::Te, Precision::Fp8, 5, 55);
        config.fp8.scaling = static_cast<ScalingKind>(scaling);
        config.fp8.format = RecipeFormat::E4M3;
        config.fp8.nvfp4_stochastic_rounding = stochastic;
        config.fp8.nvfp4_hadamard = hadamard;
        const RunRecord record = trainer_.run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        if (!kUnderAsan) {
            const double fp32_last = te_fp32().summary.final_loss.value();
            QVERIFY2(std::abs(*record.summary.final_loss - fp32_last) <= bound,
                     qPrintable(QStringLiteral("%1, fp32 %2").arg(*record.summary.final_loss).arg(fp32_last)));
        }
        QVERIFY(record.execution.fp8_emulated);
        QCOMPARE(record.execution.te_impl, std::string("reference"));
        const bool mxfp8 = config.fp8.scaling == ScalingKind::Mxfp8;
        const std::string words = mxfp8 ? "mxfp8 scaling, e4m3, 1x32 blocks, E8M0 scales (OCP rule)"
                                        : std::string("nvfp4 scaling, e4m3, E2M1 values, E4M3 scales per 1x16 (16x16 for weights) "
                                                      "and a float32 tensor scale, stochastic rounding ") +
                                              (stochastic ? "on" : "off") + ", Hadamard transform " + (hadamard ? "on" : "off");
        QVERIFY2(record.execution.implementation.find(words) != std::string::npos, record.execution.implementation.c_str());
        for (const StepMetrics& step : record.steps) {
            for (const Fp8SlotSample& s : step.fp8) {
                QVERIFY(std::isfinite(s.amax) && s.amax > 0);
                if (mxfp8) {  // 1 / X of the block holding the amax: a power of two that maps the amax into [256, 512)
                    QVERIFY2(s.amax * s.scale >= 256.0f && s.amax * s.scale < 512.0f, qPrintable(QString::number(s.amax * s.scale)));
                } else {
                    QCOMPARE(s.scale, 2688.0f / s.amax);  // NVFP4's tensor scale
                }
            }
        }
        const RunRecord back = record_from_json_text(record_to_json_text(record), "test");
        QCOMPARE(back.config.fp8, record.config.fp8);
    }

    // An inspected microscaling run: its casts of inputs are the what-if of its own format (MXFP8 for both
    // slots of the forward, NVFP4's rows rounded to nearest for inputs), and every slot has a block-scale histogram.
    void microscalingRunsInspected() {
        for (const ScalingKind scaling : {ScalingKind::Mxfp8, ScalingKind::Nvfp4}) {
            RunConfig config = quick(Backend::Te, Precision::Fp8, 1, 2);
            config.fp8.scaling = scaling;
            config.fp8.format = RecipeFormat::E4M3;
            config.inspect_fp8 = true;
            const RunRecord record = trainer_.run(config);
            QCOMPARE(record.status, RunStatus::Finished);
            const WhatIf own = scaling == ScalingKind::Mxfp8 ? WhatIf::Mxfp8 : WhatIf::Nvfp4;
            for (const StepMetrics& step : record.steps) {
                for (std::size_t i = 0; i < step.fp8.size(); ++i) {
                    const Fp8SlotSample& s = step.fp8[i];
                    QVERIFY(s.rel_mse && s.saturated && s.underflow);
                    for (const WhatIf w : kWhatIfs) QVERIFY(s.what_if(w));
                    if (record.fp8_slots[i].role == SlotRole::Input) QCOMPARE(*s.rel_mse, *s.what_if(own));
                }
            }
            QCOMPARE(record.fp8_block_scales.size(), record.fp8_slots.size());
            for (const Fp8ScaleHistogram& h : record.fp8_block_scales) QVERIFY(h.blocks() > 0);
            QVERIFY(render_fp8_summary(record).find("block scales over the run") != std::string::npos);
        }
    }

    // The run's choice of ops is made once, before any work, and the record says which ran.
    void theRunsOpsChoiceIsCheckedFirstAndRecorded() {
        RunConfig reference = quick(Backend::Te, Precision::Fp8, 1, 2);
        reference.te_impl = TeImpl::Reference;
        const RunRecord r = trainer_.run(reference);
        QCOMPARE(r.status, RunStatus::Finished);
        QVERIFY(r.execution.fp8_emulated);
        QCOMPARE(r.execution.te_impl, std::string("reference"));
        QVERIFY2(r.execution.implementation.rfind("te-reference, fp8 emulated", 0) == 0, r.execution.implementation.c_str());
        RunConfig fused = reference;
        fused.te_impl = TeImpl::Fused;
        const RunRecord f = trainer_.run(fused);
        QCOMPARE(f.status, RunStatus::Finished);
        QCOMPARE(f.execution.te_impl, std::string("fused-host"));
        QVERIFY(f.execution.fp8_emulated);  // host FP8 GEMMs are float32 emulation, and the record says so
        QVERIFY2(f.execution.implementation.rfind("te-fused, fp8 emulated", 0) == 0, f.execution.implementation.c_str());
        const RunRecord torch = trainer_.run(quick(Backend::Torch, Precision::Fp32, 1, 1));
        QVERIFY(torch.execution.te_impl.empty());
    }

    void malformedFp8RecordsAreRefused() {
        RunConfig config = quick(Backend::Te, Precision::Fp8, 0, 1);
        const RunRecord record = trainer_.run(config);
        const std::string good = record_to_json_text(record);
        std::string fewer = good;
        const std::string key = "\"amax\": [";
        const std::size_t at = fewer.find(key);
        QVERIFY(at != std::string::npos);
        const std::size_t comma = fewer.find(',', at);
        fewer.erase(at + key.size(), comma - (at + key.size()) + 1);  // drop the first value
        try {
            record_from_json_text(fewer, "short.json");
            QFAIL("accepted an FP8 sample list of the wrong length");
        } catch (const DataError& e) {
            QVERIFY2(std::string(e.what()).find("short.json: $.steps[0].fp8.amax: 23 values; expected one per FP8 slot (24)") == 0,
                     e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestTeTraining)
#include "tst_te_training.moc"
