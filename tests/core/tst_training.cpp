#include <QtTest>

#include <cmath>
#include <set>

#include "core/common/Error.h"
#include "core/common/Statistics.h"
#include "core/model/FlopCount.h"
#include "core/train/QualityProbe.h"
#include "core/train/RunFailure.h"
#include "core/data/SyntheticData.h"
#include "core/train/Trainer.h"

using namespace tewb;

namespace {
RunConfig quick(int warmup, int iters) {
    RunConfig config = make_preset(Preset::QuickCpu);
    config.warmup = warmup;
    config.iters = iters;
    return config;
}
}  // namespace

class TestTraining : public QObject {
    Q_OBJECT

    const Trainer trainer_{detect_device()};

private Q_SLOTS:
    void quickPresetLearns() {
        const RunConfig config = quick(10, 50);
        int reported = 0;
        bool started = false;
        TrainerCallbacks callbacks;
        callbacks.on_start = [&](const RunRecord& header) {
            started = true;
            QCOMPARE(header.config.total_steps(), 60);
            QVERIFY(header.steps.empty());
        };
        callbacks.on_step = [&](const StepMetrics& step) { QCOMPARE(step.step, ++reported); };
        const RunRecord record = trainer_.run(config, callbacks);
        QVERIFY(started);
        QCOMPARE(record.status, RunStatus::Finished);
        QCOMPARE(reported, 60);
        QCOMPARE(record.steps.size(), std::size_t{60});

        const double first = record.steps.front().loss;
        QVERIFY2(std::abs(first - std::log(256.0)) < 0.6, qPrintable(QString::number(first)));
        QVERIFY2(first - record.steps.back().loss >= 0.5,
                 qPrintable(QStringLiteral("first %1, last %2").arg(first).arg(record.steps.back().loss)));
    }

    void metricsAreSane() {
        const RunRecord record = trainer_.run(quick(3, 7));
        QCOMPARE(record.steps.size(), std::size_t{10});
        for (std::size_t i = 0; i < record.steps.size(); ++i) {
            const StepMetrics& s = record.steps[i];
            QCOMPARE(s.step, static_cast<int>(i) + 1);
            QCOMPARE(s.phase, i < 3 ? Phase::Warmup : Phase::Timed);
            QVERIFY(std::isfinite(s.loss) && s.loss > 0);
            QVERIFY(std::isfinite(s.step_ms) && s.step_ms > 0);
            QVERIFY(s.mem_bytes > 0);
            QVERIFY(s.tokens_per_s > 0);
            if (i > 0) QVERIFY(s.elapsed_ms >= record.steps[i - 1].elapsed_ms);
            // Where the time went: the parts add up to the step (host clock; the step's reading itself
            // takes a moment after the last part) and a plain run has no FP8 bookkeeping.
            QVERIFY(s.breakdown.has_value());
            const StepBreakdown& b = *s.breakdown;
            QVERIFY(b.forward_ms > 0 && b.backward_ms > 0 && b.optimizer_ms > 0);
            QCOMPARE(b.fp8_ms, 0.0);
            QVERIFY2(std::abs(b.total_ms() - s.step_ms) <= 0.02 * s.step_ms + 0.05,
                     qPrintable(QStringLiteral("parts %1 ms, step %2 ms").arg(b.total_ms()).arg(s.step_ms)));
        }
        const RunSummary& sum = record.summary;
        QCOMPARE(sum.timed_steps, 7);
        QVERIFY(sum.mean_ms && *sum.mean_ms > 0);
        QVERIFY(sum.median_ms && sum.p90_ms && *sum.p90_ms >= *sum.median_ms);
        QVERIFY(sum.tokens_per_s &&
                std::abs(*sum.tokens_per_s - 8.0 * 32.0 / (*sum.mean_ms / 1000.0)) < 1e-6 * *sum.tokens_per_s);
        QVERIFY(sum.tflops && *sum.tflops > 0);
        QVERIFY(!sum.mfu.has_value());  // CPUs are not in the peak table
        QCOMPARE(sum.final_loss.value(), record.steps.back().loss);
        QVERIFY(sum.breakdown.has_value());
        QCOMPARE(sum.breakdown_source, std::string("timed steps"));
        double backward_sum = 0;
        for (const StepMetrics& s : record.steps) {
            if (s.phase == Phase::Timed) backward_sum += s.breakdown->backward_ms;
        }
        QVERIFY(std::abs(sum.breakdown->backward_ms - backward_sum / 7) < 1e-9);
        QCOMPARE(record.execution.device, std::string("cpu"));
        QCOMPARE(record.execution.memory_metric, MemoryMetric::CpuPeakRss);
        QCOMPARE(record.config.precision, Precision::Fp32);
        QVERIFY(!record.id.empty());
        QVERIFY(!record.environment.build.version.empty());
        // Measurement quality: the CV of exactly the timed steps, the machine as /proc says (or why not), no GPU
        // contention on the CPU, and the verdict core's rule gives on these figures.
        QVERIFY(record.execution.quality.has_value());
        const MeasurementQuality& q = *record.execution.quality;
        std::vector<double> timed;
        for (const StepMetrics& s : record.steps) {
            if (s.phase == Phase::Timed) timed.push_back(s.step_ms);
        }
        QCOMPARE(q.cv, coefficient_of_variation(timed));
        QVERIFY(q.cores > 0);
        QVERIFY2(q.load_average.has_value() || !q.machine_note.empty(), q.machine_note.c_str());
        QVERIFY2(q.others_cpu_cores.has_value() || !q.machine_note.empty(), q.machine_note.c_str());
        QVERIFY(!q.gpu_applies && !q.gpu_measured);
        QCOMPARE(q.gpu_note, std::string("does not apply: a CPU run"));
        MeasurementQuality judged = q;
        judge_quality(judged);
        QCOMPARE(judged, q);
    }

    // NVML's two samples as the record keeps them: the most other processes, every reason once, the last clocks;
    // one sample without an answer makes the GPU unmeasured, with its reason.
    void gpuSamplesCombine() {
        GpuContention start;
        start.available = true;
        start.other_processes = 2;
        start.throttle_reasons = {"SW power cap"};
        start.sm_clock_mhz = 1980;
        GpuContention end = start;
        end.other_processes = 1;
        end.throttle_reasons = {"GPU idle", "SW power cap"};
        end.sm_clock_mhz = 1410;
        end.max_sm_clock_mhz = 1980;
        MeasurementQuality q;
        add_gpu_samples(q, {start, end});
        QVERIFY(q.gpu_applies && q.gpu_measured);
        QCOMPARE(q.gpu_other_processes, 2);
        QCOMPARE(q.gpu_throttle_reasons, (std::vector<std::string>{"SW power cap", "GPU idle"}));
        QCOMPARE(q.sm_clock_mhz, std::optional<unsigned>(1410));
        QCOMPARE(q.max_sm_clock_mhz, std::optional<unsigned>(1980));
        GpuContention absent;
        absent.unavailable_reason = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
        MeasurementQuality unmeasured;
        add_gpu_samples(unmeasured, {absent, end});
        QVERIFY(unmeasured.gpu_applies && !unmeasured.gpu_measured);
        QCOMPARE(unmeasured.gpu_note, absent.unavailable_reason);
        QCOMPARE(unmeasured.gpu_other_processes, 0);
        judge_quality(unmeasured);
        QVERIFY(!unmeasured.noisy);
    }

    void sameSeedSameLossCurve() {
        RunConfig config = quick(0, 5);
        const RunRecord a = trainer_.run(config);
        const RunRecord b = trainer_.run(config);
        for (std::size_t i = 0; i < a.steps.size(); ++i) {
            QCOMPARE(a.steps[i].loss, b.steps[i].loss);
        }
        config.seed += 1;
        const RunRecord c = trainer_.run(config);
        QVERIFY(c.steps.front().loss != a.steps.front().loss);
    }

    void cancellationTakesEffectWithinOneStep() {
        const RunConfig config = make_preset(Preset::QuickCpu);
        std::atomic<bool> cancel{false};
        TrainerCallbacks callbacks;
        callbacks.on_step = [&](const StepMetrics& step) {
            if (step.step == 4) cancel = true;
        };
        const RunRecord record = trainer_.run(config, callbacks, &cancel);
        QCOMPARE(record.status, RunStatus::Cancelled);
        QCOMPARE(record.steps.size(), std::size_t{4});
        QCOMPARE(record.summary.timed_steps, 0);
        QVERIFY(!record.summary.mean_ms.has_value());
        // Cancelled in the warm-up: nothing was timed, so nothing about the timing was measured.
        QVERIFY(record.execution.quality.has_value());
        QCOMPARE(record.execution.quality->machine_note, std::string("no timed step ran"));
        QVERIFY(!record.execution.quality->cv && !record.execution.quality->noisy);
    }

    // One mapping names a failed run's kind from what it threw; inside a job what is not the job's own error
    // is the job's failure, outside it a runtime error; only the first line of a rank's error is quoted.
    void failuresAreNamedByOneMapping() {
        const auto classify = [](auto error, bool in_job, bool cuda) {
            return classify_failure(std::make_exception_ptr(error), in_job, cuda);
        };
        QCOMPARE(classify(DistError("rank 1 left"), false, false).kind, ErrorKind::Distributed);
        QCOMPARE(classify(NumericsError("loss became nan"), true, false).kind, ErrorKind::Numerics);
        QCOMPARE(classify(NumericsError("loss became nan"), true, false).detail, std::string("loss became nan"));
        const RunFailure host = classify(std::bad_alloc(), false, true);
        QCOMPARE(host.kind, ErrorKind::OutOfMemory);
        QVERIFY(host.host_memory);
        QCOMPARE(classify(std::runtime_error("two\nlines"), false, false).kind, ErrorKind::Runtime);
        QCOMPARE(classify(std::runtime_error("two\nlines"), false, false).detail, std::string("two\nlines"));
        const RunFailure in_job = classify(std::runtime_error("two\nlines"), true, false);
        QCOMPARE(in_job.kind, ErrorKind::Distributed);
        QCOMPARE(in_job.detail, std::string("two"));
        QVERIFY(!in_job.from_libtorch);
        QCOMPARE(classify(42, false, false).kind, ErrorKind::Runtime);  // not even a std::exception
    }

    void invalidConfigurationThrowsBeforeAnyStep() {
        RunConfig config = make_preset(Preset::QuickCpu);
        config.model.heads = 3;
        bool started = false;
        TrainerCallbacks callbacks;
        callbacks.on_start = [&](const RunRecord&) { started = true; };
        QVERIFY_THROWS_EXCEPTION(ConfigError, trainer_.run(config, callbacks));
        QVERIFY(!started);
    }

    void syntheticDataIsDeterministicAndInRange() {
        const SyntheticCorpusSpec spec{256, 16, 33, 42};
        const std::vector<std::int64_t> a = make_synthetic_tokens(spec);
        QCOMPARE(a, make_synthetic_tokens(spec));
        QCOMPARE(a.size(), std::size_t{16 * 33});
        std::set<std::int64_t> distinct;
        for (const std::int64_t t : a) {
            QVERIFY(t >= 0 && t < 256);
            distinct.insert(t);
        }
        QVERIFY(distinct.size() > 50);
        QVERIFY(make_synthetic_tokens({256, 16, 33, 43}) != a);
        // Pinned values: the corpus must not change silently between versions, machines or backends.
        QCOMPARE(std::vector<std::int64_t>(a.begin(), a.begin() + 8),
                 (std::vector<std::int64_t>{3, 0, 13, 117, 245, 151, 248, 153}));
        const std::vector<std::int64_t> seed_preset = make_synthetic_tokens({4096, 2, 97, 1234});
        QCOMPARE(std::vector<std::int64_t>(seed_preset.begin(), seed_preset.begin() + 8),
                 (std::vector<std::int64_t>{1, 133, 2301, 3753, 2545, 1286, 3518, 1329}));
    }

    void flopCountFollowsTheFormula() {
        const ModelShape seed{12, 768, 12, 96, 4096};
        const double flops = training_flops_per_step(seed, 32);
        const double blocks = 6.0 * 12 * 12 * 768.0 * 768.0 * 3072;  // 6 * params * tokens
        const double attention = 3.0 * 12 * 4 * 96 * 768.0 * 3072;
        const double head = 6.0 * 768 * 4096.0 * 3072;
        QCOMPARE(flops, blocks + attention + head);
        QVERIFY(std::abs(blocks / 1e12 - 1.565) < 0.01);  // KERNELS.md: about 1.57 TFLOP per step
    }
};

QTEST_GUILESS_MAIN(TestTraining)
#include "tst_training.moc"
