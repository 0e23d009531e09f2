// Repeats and their spread (bootstrap intervals, groups), the FP8 break-even sweep, and the report's
// words: core only, checked against values computed here independently.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/common/Error.h"
#include "core/common/Statistics.h"
#include "core/config/SweepPlan.h"
#include "core/device/MachineLoad.h"
#include "core/results/Comparison.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/RunGroups.h"
#include "core/results/SweepResult.h"

using namespace tewb;

namespace {

RunRecord timed_run(const std::string& name, const std::vector<double>& step_ms, double final_loss = 3.0) {
    RunRecord r;
    r.id = name;
    r.config = make_preset(Preset::Seed);
    r.config.name = name;
    r.config.warmup = 0;
    r.config.iters = static_cast<int>(step_ms.size());
    r.execution.device = "cuda:0";
    r.environment.device.gpu_name = "NVIDIA H200";
    r.environment.device.compute_capability = ComputeCapability{9, 0};
    r.environment.device.gpu_count = 1;
    r.status = RunStatus::Finished;
    int i = 0;
    for (const double ms : step_ms) r.steps.push_back({++i, Phase::Timed, final_loss, ms});
    r.summary.timed_steps = i;
    double sum = 0;
    for (const double ms : step_ms) sum += ms;
    r.summary.mean_ms = sum / static_cast<double>(step_ms.size());
    r.summary.final_loss = final_loss;
    r.summary.peak_mem_bytes = 1000;
    return r;
}

RunRecord repeat_of(RunRecord r, const std::string& group, int index, int count) {
    r.repeat = RepeatInfo{group, index, count};
    return r;
}

// A measured run's quality with only its CV known, judged by core's rule.
MeasurementQuality quality_with_cv(double cv) {
    MeasurementQuality q;
    q.cv = cv;
    q.cores = 4;
    q.gpu_note = "does not apply: a CPU run";
    judge_quality(q);
    return q;
}

DeviceInfo cpu_device() {
    DeviceInfo d;
    d.gpu_error = "no CUDA-capable device is detected";
    d.cpu_model = "Test CPU";
    d.cpu_threads = 2;
    return d;
}

// A GPU of compute capability 9.0 with `gib` GiB, all of it free.
DeviceInfo hopper_with(std::uint64_t gib) {
    DeviceInfo gpu = cpu_device();
    gpu.gpu_error.clear();
    gpu.gpu_name = "Test GPU";
    gpu.compute_capability = ComputeCapability{9, 0};
    gpu.gpu_count = 1;
    gpu.memory_total_bytes = gib << 30;
    gpu.memory_free_bytes = gib << 30;
    return gpu;
}

}  // namespace

class TestRepeatsSweep : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A speedup only between comparable runs (core/results/Comparability.h): the same model, data kind, tokens per
    // step per process and device kind; cancelled or failed runs get none, an emulated run is no baseline, and runs
    // of another process count compare tokens per second. Tables and groups say "not comparable" and why.
    void speedupsOnlyBetweenComparableRuns() {
        std::vector<RunRecord> runs{timed_run("base", {10.0, 10.0}), timed_run("llama", {20.0, 20.0}),
                                    timed_run("cpu", {40.0, 40.0}), timed_run("cancelled", {5.0}),
                                    timed_run("job", {16.0, 16.0}), timed_run("same", {8.0, 8.0})};
        runs[1].config.model.arch = Arch::Llama;
        runs[1].config.model.hidden = 512;
        runs[2].execution.device = "cpu";
        runs[2].config.data.path = "corpus.txt";
        runs[3].status = RunStatus::Cancelled;
        runs[4].config.dist.nproc = 2;  // twice the tokens per step in 16 ms: 1.25x the baseline's tokens per second
        const std::vector<ComparisonRow> rows = compare_runs(runs, 0);
        QCOMPARE(rows[0].speedup.value_or(0), 1.0);
        QVERIFY(rows[0].not_comparable.empty());
        QVERIFY(!rows[1].speedup && !rows[1].memory_ratio);
        QCOMPARE(rows[1].not_comparable, (std::vector<std::string>{"model llama vs gpt", "hidden 512 vs 768"}));
        QCOMPARE(rows[2].not_comparable, (std::vector<std::string>{"data a token file vs synthetic tokens", "device cpu vs cuda"}));
        QCOMPARE(rows[3].not_comparable, (std::vector<std::string>{"it was cancelled"}));
        QVERIFY(rows[4].not_comparable.empty() && rows[4].per_token);
        QCOMPARE(rows[4].speedup.value_or(0), 10.0 / 16.0 * 2.0);
        QVERIFY(!rows[5].per_token);
        QCOMPARE(rows[5].speedup.value_or(0), 1.25);
        const std::string table = render_summary_table(runs, 0);
        QVERIFY2(table.find("not comparable") != std::string::npos, table.c_str());
        QVERIFY2(table.find("no speedup: llama: not comparable: model llama vs gpt; hidden 512 vs 768\n") != std::string::npos,
                 table.c_str());
        QVERIFY2(table.find("1.25x per token") != std::string::npos, table.c_str());
        QVERIFY2(table.find("per token: runs of another process count") != std::string::npos, table.c_str());

        // Groups (the window's intervals, te-bench's repeat table): the same rule.
        const std::vector<RunGroup> groups = group_runs(runs, 0);
        QCOMPARE(speedup_text(groups[1]), std::string("not comparable"));
        QVERIFY(!groups[1].speedup && !groups[1].speedup_ci && !groups[1].memory_ratio);
        QVERIFY(groups[4].per_token && speedup_text(groups[4]).find("per token") != std::string::npos);
        QVERIFY(render_group_table(runs, groups).find("no speedup: cancelled: not comparable: it was cancelled") !=
                std::string::npos);

        // An emulated run as the baseline: nothing is faster or slower than an emulation.
        runs[5].execution.fp8_emulated = true;
        const std::vector<ComparisonRow> against_emulated = compare_runs(runs, 5);
        QVERIFY(!against_emulated[0].speedup);
        QVERIFY(against_emulated[0].not_comparable.front().find("the baseline's FP8 GEMMs were emulated") == 0);
        QCOMPARE(against_emulated[5].speedup.value_or(0), 1.0);  // itself
        runs[3].execution.fp8_emulated = false;
        QCOMPARE(compare_runs(runs, 3)[0].not_comparable, (std::vector<std::string>{"the baseline was cancelled"}));

        // FP8 inspection's host reads are inside the step time: an inspected run and one without have no speedup.
        runs[5].execution.fp8_emulated = false;
        runs[5].config.inspect_fp8 = true;
        QCOMPARE(compare_runs(runs, 0)[5].not_comparable, (std::vector<std::string>{"FP8 inspection on vs off"}));
        runs[0].config.inspect_fp8 = true;  // both inspected: comparable again
        QVERIFY(compare_runs(runs, 0)[5].not_comparable.empty());
    }

    void medianAndMean() {
        QCOMPARE(median_of({3, 1, 2}), 2.0);
        QCOMPARE(median_of({4, 1, 3, 2}), 2.5);
        QCOMPARE(median_of({}), 0.0);
        QCOMPARE(mean_of({1, 2, 6}), 3.0);
    }

    void bootstrapOfAConstantSampleIsThatValue() {
        const auto ci = bootstrap_interval({5, 5, 5, 5}, Statistic::Median);
        QVERIFY(ci);
        QCOMPARE(ci->lo, 5.0);
        QCOMPARE(ci->hi, 5.0);
        QVERIFY(!bootstrap_interval({}, Statistic::Mean));
    }

    void bootstrapIntervalOfTheMeanMatchesTheNormalTheory() {
        // For n = 400 draws of N(10, 2), the mean's 95% interval is about ±1.96·2/√400 = ±0.196.
        std::mt19937_64 rng(7);
        std::normal_distribution<double> normal(10.0, 2.0);
        std::vector<double> sample(400);
        for (double& v : sample) v = normal(rng);
        const auto ci = bootstrap_interval(sample, Statistic::Mean);
        QVERIFY(ci);
        const double half = (ci->hi - ci->lo) / 2;
        QVERIFY2(std::abs(half - 0.196) < 0.04, qPrintable(QString::number(half)));
        QVERIFY(ci->contains(mean_of(sample)));
        // Deterministic: the same sample and seed give the same interval.
        QCOMPARE(*bootstrap_interval(sample, Statistic::Mean), *ci);
    }

    void ratioIntervalSeparatesADifferenceFromNoise() {
        std::mt19937_64 rng(11);
        std::normal_distribution<double> base(10.0, 0.3);
        std::normal_distribution<double> fast(8.0, 0.3);
        std::vector<double> a(30), b(30), c(30);
        for (double& v : a) v = base(rng);
        for (double& v : b) v = fast(rng);
        for (double& v : c) v = base(rng);
        const auto faster = bootstrap_ratio_interval(a, b, Statistic::Mean);
        QVERIFY(faster && faster->lo > 1.0);
        QVERIFY(faster->contains(mean_of(a) / mean_of(b)));
        const auto same = bootstrap_ratio_interval(a, c, Statistic::Mean);
        QVERIFY(same && same->contains(1.0));
    }

    void groupsOfRepeatsUseTheMedianOfTheRepeatMeans() {
        std::vector<RunRecord> runs;
        // Alternating order, as --repeat runs them: base, fast, base, fast, base, fast.
        const std::vector<double> base_means{10.0, 10.4, 9.8};
        const std::vector<double> fast_means{8.0, 8.3, 7.9};
        for (int i = 0; i < 3; ++i) {
            runs.push_back(repeat_of(timed_run("base", {base_means[i], base_means[i]}, 3.0), "g1", i + 1, 3));
            runs.push_back(repeat_of(timed_run("fast", {fast_means[i], fast_means[i]}, 3.004), "g2", i + 1, 3));
        }
        const std::vector<RunGroup> groups = group_runs(runs, 0);
        QCOMPARE(groups.size(), std::size_t{2});
        QCOMPARE(groups[0].members, (std::vector<std::size_t>{0, 2, 4}));
        QVERIFY(groups[0].repeated && groups[0].is_baseline);
        QCOMPARE(*groups[0].centre_ms, 10.0);  // median of 10.0, 10.4, 9.8
        QCOMPARE(*groups[0].min_ms, 9.8);
        QCOMPARE(*groups[0].max_ms, 10.4);
        QCOMPARE(*groups[1].centre_ms, 8.0);
        QCOMPARE(*groups[1].speedup, 10.0 / 8.0);
        QVERIFY(groups[1].speedup_ci);
        QVERIFY(groups[1].significant());  // every resample of 3 vs 3 keeps base > fast
        QCOMPARE(groups[1].sample_basis(), std::string("3 repeats"));
        QVERIFY(speedup_text(groups[1]).find("not significant") == std::string::npos);
        const std::string table = render_group_table(runs, groups);
        QVERIFY(table.find("3 repeats") != std::string::npos);
        QVERIFY(table.find("1.25x") != std::string::npos);
    }

    // A --repeat series cancelled part way: the cancelled repeat's few steps are not counted, the row says how
    // many finished, and a line under the table says what the others were.
    void cancelledRepeatsAreLeftOutAndCounted() {
        std::vector<RunRecord> runs;
        runs.push_back(repeat_of(timed_run("base", {10.0, 10.0}), "g1", 1, 3));
        runs.push_back(repeat_of(timed_run("fast", {8.0, 8.0}), "g2", 1, 3));
        runs.push_back(repeat_of(timed_run("base", {9.0, 9.0}), "g1", 2, 3));
        RunRecord cancelled = repeat_of(timed_run("fast", {1.0}), "g2", 2, 3);  // one quick step, then Ctrl-C
        cancelled.status = RunStatus::Cancelled;
        runs.push_back(cancelled);
        const std::vector<RunGroup> groups = group_runs(runs, 0);
        QCOMPARE(groups.size(), std::size_t{2});
        QCOMPARE(groups[0].counted, (std::vector<std::size_t>{0, 2}));
        QCOMPARE(groups[0].sample_basis(), std::string("2 of 3 repeats"));
        QCOMPARE(*groups[0].centre_ms, 9.5);
        QCOMPARE(groups[1].members, (std::vector<std::size_t>{1, 3}));
        QCOMPARE(groups[1].counted, (std::vector<std::size_t>{1}));
        QCOMPARE(*groups[1].centre_ms, 8.0);  // not 4.5: the cancelled repeat's 1 ms is left out
        QCOMPARE(groups[1].sample_basis(), std::string("2 timed steps (1 of 3 repeats finished)"));
        QCOMPARE(*groups[1].speedup, 9.5 / 8.0);
        const std::string table = render_group_table(runs, groups);
        QVERIFY2(table.find("base: 2 of 3 repeats finished, and only those are counted; 1 not started.") != std::string::npos,
                 table.c_str());
        QVERIFY2(table.find("fast: 1 of 3 repeats finished, and only those are counted; 1 cancelled; 1 not started.") !=
                     std::string::npos,
                 table.c_str());
        // Nothing finished: no figures, and said so.
        const std::vector<RunGroup> none = group_runs({cancelled}, std::nullopt);
        QVERIFY(!none[0].centre_ms);
        QCOMPARE(none[0].sample_basis(), std::string("0 of 3 repeats finished"));
        // A series that finished says nothing more.
        const std::vector<RunRecord> whole{repeat_of(runs[0], "g1", 1, 2), repeat_of(runs[2], "g1", 2, 2)};
        QVERIFY(render_group_table(whole, group_runs(whole, 0)).find("finished") == std::string::npos);
    }

    void overlappingRepeatsAreNotSignificant() {
        std::vector<RunRecord> runs;
        for (int i = 0; i < 3; ++i) {
            runs.push_back(repeat_of(timed_run("a", {10.0 + i}), "ga", i + 1, 3));
            runs.push_back(repeat_of(timed_run("b", {10.5 - i}), "gb", i + 1, 3));
        }
        const std::vector<RunGroup> groups = group_runs(runs, 0);
        QVERIFY(groups[1].speedup_ci);
        QVERIFY(!groups[1].significant());
        QVERIFY(speedup_text(groups[1]).find("not significant") != std::string::npos);
    }

    void alternatingOrderInterleavesConfigurations() {
        const auto order = alternating_order(2, 3);
        const std::vector<std::pair<std::size_t, int>> expected{{0, 1}, {1, 1}, {0, 2}, {1, 2}, {0, 3}, {1, 3}};
        QCOMPARE(order, expected);
    }

    void repeatInfoSurvivesJson() {
        RunRecord r = repeat_of(timed_run("x", {1, 2}), "group-1", 2, 3);
        r.created_at = "2026-12-01T00:00:00Z";
        const RunRecord back = record_from_json_text(record_to_json_text(r), "test");
        QVERIFY(back.repeat);
        QCOMPARE(*back.repeat, *r.repeat);
        std::string text = record_to_json_text(r);
        text.replace(text.find("\"index\": 2"), 10, "\"index\": 4");
        QVERIFY_THROWS_EXCEPTION(DataError, record_from_json_text(text, "test"));
    }

    void sweepPlanHasABaselineAndEachPrecisionPerSize() {
        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128};
        spec.precisions = {Precision::Bf16, Precision::Fp8};
        const std::vector<SweepRun> plan = plan_sweep(spec, cpu_device());
        QCOMPARE(plan.size(), std::size_t{6});
        QVERIFY(plan[0].baseline);
        QCOMPARE(plan[0].config.backend, Backend::Torch);
        QCOMPARE(plan[0].config.precision, Precision::Fp32);  // the CPU baseline
        QCOMPARE(plan[2].config.precision, Precision::Fp8);
        QCOMPARE(plan[3].config.model.hidden, 128);
        QCOMPARE(plan[3].config.model.heads, 2);  // hidden / 64
        QCOMPARE(plan[2].config.name, std::string("sweep te fp8 cpu h64 b8 s32"));
    }

    // --baseline te: each size's baseline is te in the device's baseline precision, so FP8 is measured against te's
    // own BF16 on a GPU; that precision is not run twice, and asking for it alone is the baseline itself.
    void sweepPlanAgainstATeBaseline() {
        const DeviceInfo gpu = hopper_with(80);
        SweepSpec spec;
        spec.base = make_preset(Preset::Seed);
        spec.base.device = DeviceKind::Cuda;
        spec.hidden = {768, 1024};
        spec.precisions = {Precision::Bf16, Precision::Fp8};
        spec.baseline_backend = Backend::Te;
        std::vector<SweepRun> plan = plan_sweep(spec, gpu);
        QCOMPARE(plan.size(), std::size_t{4});  // per size: te bf16 (the baseline), te fp8
        for (std::size_t i = 0; i < plan.size(); ++i) {
            QCOMPARE(plan[i].baseline, i % 2 == 0);
            QCOMPARE(plan[i].config.backend, Backend::Te);
            QCOMPARE(plan[i].config.precision, i % 2 == 0 ? Precision::Bf16 : Precision::Fp8);
        }
        QCOMPARE(plan[0].config.name, std::string("sweep baseline te bf16 h768 b32 s96"));
        spec.precisions = {Precision::Bf16};
        try {
            plan_sweep(spec, gpu);
            QFAIL("te bf16 against a te bf16 baseline was planned");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("the baseline itself on this device (--baseline te)") != std::string::npos, e.what());
        }
        // torch precisions against a te baseline: the baseline's te implementation is kept, the torch runs take none.
        spec.backend = Backend::Torch;
        spec.base.te_impl = TeImpl::Reference;
        plan = plan_sweep(spec, gpu);
        QCOMPARE(plan.size(), std::size_t{4});
        QCOMPARE(plan[0].config.te_impl, TeImpl::Reference);
        QCOMPARE(plan[1].config.backend, Backend::Torch);
        QCOMPARE(plan[1].config.te_impl, TeImpl::Auto);
        // On the CPU the baseline is FP32: te fp32 once, then each precision asked for.
        SweepSpec cpu;
        cpu.base = make_preset(Preset::QuickCpu);
        cpu.hidden = {64};
        cpu.precisions = {Precision::Fp32, Precision::Fp8};
        cpu.baseline_backend = Backend::Te;
        plan = plan_sweep(cpu, cpu_device());
        QCOMPARE(plan.size(), std::size_t{2});
        QCOMPARE(plan[0].config.name, std::string("sweep baseline te fp32 cpu h64 b8 s32"));
        QCOMPARE(plan[1].config.precision, Precision::Fp8);
    }

    void sweepPlanRefusesBadGridsAndSkipsWhatDoesNotFit() {
        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {100};
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_sweep(spec, cpu_device()));
        spec.hidden = {64};
        spec.backend = Backend::Torch;
        spec.precisions = {Precision::Fp8};
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_sweep(spec, cpu_device()));
        spec.precisions = {Precision::Fp32};  // on the CPU that is the baseline itself: nothing to compare
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_sweep(spec, cpu_device()));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_int_list("--hidden", "256,,512"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_int_list("--hidden", "256,256"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_precision_list("--precisions", "bf16,auto"));
        // A GPU with 4 GiB free: the 4096-wide model is estimated not to fit and is skipped with the reason.
        const DeviceInfo gpu = hopper_with(4);
        SweepSpec big;
        big.base = make_preset(Preset::Seed);
        big.hidden = {256, 4096};
        const std::vector<SweepRun> plan = plan_sweep(big, gpu);
        QVERIFY2(!plan[0].skip_reason, plan[0].skip_reason.value_or("").c_str());
        QVERIFY(plan.back().skip_reason);
        QVERIFY2(plan.back().skip_reason->find("free on the GPU") != std::string::npos, plan.back().skip_reason->c_str());
    }

    void sweepAnalysisFindsTheBreakEven() {
        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128, 256};
        spec.precisions = {Precision::Fp8};
        const std::vector<SweepRun> plan = plan_sweep(spec, cpu_device());
        // baseline ms and fp8 ms per size: slower, then faster from 128 on.
        const std::vector<double> ms{1.0, 2.0, 4.0, 3.0, 9.0, 6.0};
        // Three timed steps each, 1 % apart: the speedups' intervals are narrow and clear of 1.
        const auto steps = [](double m) { return std::vector<double>{m * 0.99, m, m * 1.01}; };
        std::vector<std::optional<RunRecord>> records;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            RunRecord r = timed_run(plan[i].config.name, steps(ms[i]));
            r.config = plan[i].config;
            records.push_back(r);
        }
        const SweepResult result = analyze_sweep(plan, records);
        QCOMPARE(result.points.size(), std::size_t{3});
        QCOMPARE(*result.cell(0, 0).speedup, 0.5);
        QCOMPARE(*result.cell(1, 0).speedup, 4.0 / 3.0);
        QCOMPARE(*result.cell(2, 0).speedup, 1.5);
        QCOMPARE(result.cell(0, 0).verdict(), SweepVerdict::Slower);
        QCOMPARE(result.cell(2, 0).verdict(), SweepVerdict::Pays);
        QVERIFY(result.cell(2, 0).speedup_ci && result.cell(2, 0).speedup_ci->lo > 1.4);
        QCOMPARE(result.cell(2, 0).basis, std::string("3 timed steps"));
        QCOMPARE(result.break_even_point(0), std::optional<std::size_t>(1));
        const std::string words = result.break_even_statements()[0];
        QVERIFY2(words.find("pays from hidden 128") != std::string::npos, words.c_str());
        const std::string csv = sweep_csv_text(result);
        QVERIFY(csv.find("128,8,32,") != std::string::npos);
        // Every speedup says what it is against: the table's header, the CSV's last column.
        QCOMPARE(result.baseline, std::string("torch fp32"));
        QVERIFY2(render_sweep_table(result).find("baseline torch fp32 ms") != std::string::npos, render_sweep_table(result).c_str());
        QVERIFY(csv.substr(0, csv.find('\n')).ends_with(",basis,baseline"));
        QVERIFY(csv.find(",torch fp32\n") != std::string::npos);
        QVERIFY2(csv.find(",true,pays,3 timed steps,torch fp32\n") != std::string::npos, csv.c_str());
        QVERIFY(render_sweep_table(result).find("1.50x [") != std::string::npos);
        // Never faster: said so, with the best size.
        std::vector<std::optional<RunRecord>> slow = records;
        for (std::size_t i = 1; i < slow.size(); i += 2) {
            slow[i] = timed_run(plan[i].config.name, steps(100.0));
            slow[i]->config = plan[i].config;
        }
        const SweepResult never = analyze_sweep(plan, slow);
        QVERIFY(!never.break_even_point(0));
        QVERIFY(never.break_even_statements()[0].find("does not pay") != std::string::npos);
        // A size that was skipped has no speedup and says why.
        std::vector<SweepRun> skipped = plan;
        skipped[5].skip_reason = "needs 90 GiB, has 80 GiB";
        const SweepResult partial = analyze_sweep(skipped, records);
        QVERIFY(!partial.cell(2, 0).speedup);
        QVERIFY(partial.cell(2, 0).note.find("skipped") == 0);
        QVERIFY(!partial.cut_short_statement());  // a skipped run was never to run
        // Unclear sizes never pay: at hidden 256 FP8's steps overlap the baseline's (the interval contains 1), and at
        // hidden 128 the baseline was measured noisily. What stays is "pays" nowhere, and the reason with the remedy.
        std::vector<std::optional<RunRecord>> unclear = records;
        unclear[4] = timed_run(plan[4].config.name, {5.0, 9.0, 13.0});
        unclear[4]->config = plan[4].config;
        unclear[5] = timed_run(plan[5].config.name, {4.0, 8.5, 13.5});
        unclear[5]->config = plan[5].config;
        unclear[2]->execution.quality = quality_with_cv(0.3);
        const SweepResult doubtful = analyze_sweep(plan, unclear);
        QCOMPARE(doubtful.cell(1, 0).verdict(), SweepVerdict::Unclear);  // noisy baseline
        QCOMPARE(doubtful.cell(2, 0).verdict(), SweepVerdict::Unclear);  // interval contains 1
        QVERIFY(*doubtful.cell(2, 0).speedup > 1.0);                     // faster on average, still not "pays"
        QVERIFY(!doubtful.break_even_point(0));
        const std::string doubt = doubtful.break_even_statements()[0];
        QVERIFY2(doubt.find("has no clear break-even on this grid: at the largest measured size it is not clearly faster") !=
                     std::string::npos,
                 doubt.c_str());
        QVERIFY2(doubt.find("2 of these sizes count as neither") != std::string::npos, doubt.c_str());
        QVERIFY2(doubt.find("--repeat 3") != std::string::npos, doubt.c_str());
        QVERIFY2(sweep_speedup_text(doubtful.cell(2, 0)).find("not significant") != std::string::npos,
                 sweep_speedup_text(doubtful.cell(2, 0)).c_str());
        // A record that is not the size's (another sequence length): its time stays, no speedup, the cell says why.
        std::vector<std::optional<RunRecord>> other = records;
        other[3]->config.model.seq *= 2;
        const SweepResult mixed = analyze_sweep(plan, other);
        QVERIFY(!mixed.cell(1, 0).speedup);
        QCOMPARE(*mixed.cell(1, 0).ms, 3.0);
        QVERIFY2(mixed.cell(1, 0).note.find("not comparable") == 0, mixed.cell(1, 0).note.c_str());
        QVERIFY(mixed.cell(2, 0).speedup);
        // Cancelled part way at the middle size: that size's cancelled run and the sizes not run have no time,
        // the break-even names only measured sizes, and the summary says how many runs finished.
        std::vector<std::optional<RunRecord>> cut(records.begin(), records.begin() + 4);
        cut[3]->status = RunStatus::Cancelled;
        cut[3]->summary.mean_ms = 0.5;  // its few steps: a "speedup" of 4 that was never measured
        const SweepResult cancelled = analyze_sweep(plan, cut);
        QVERIFY(!cancelled.cell(1, 0).speedup);
        QCOMPARE(cancelled.cell(1, 0).note, std::string("cancelled"));
        QVERIFY(!cancelled.cell(2, 0).speedup);
        QCOMPARE(cancelled.runs_finished, std::size_t{3});
        QCOMPARE(*cancelled.cut_short_statement(),
                 std::string("Sweep cut short: 3 of 6 runs finished (1 cancelled, 2 not run); only finished runs are counted."));
        const std::string said = cancelled.break_even_statements()[0];
        QVERIFY2(said.find("hidden 128") == std::string::npos && said.find("hidden 256") == std::string::npos, said.c_str());
        QVERIFY2(said.find("Measured at 1 of 3 sizes") != std::string::npos, said.c_str());
        QVERIFY(render_sweep_table(cancelled).find("Sweep cut short: 3 of 6 runs finished") != std::string::npos);
    }

    // With repeats, each configuration runs that many times at each size, alternating within the size; the speedup
    // is the ratio of the medians over repeats, its interval over the repeats, and a size's repeats that did not
    // finish are left out and said so.
    void sweepRepeatsEachSizeAndJudgesOverTheRepeats() {
        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128};
        spec.precisions = {Precision::Bf16};
        spec.backend = Backend::Te;
        spec.repeats = 3;
        const std::vector<SweepRun> plan = plan_sweep(spec, cpu_device());
        QCOMPARE(plan.size(), std::size_t{12});  // 2 sizes × (baseline, te bf16) × 3
        QCOMPARE(plan[0].point.hidden, 64);
        QVERIFY(plan[0].baseline && !plan[1].baseline && plan[2].baseline && !plan[3].baseline);  // A B A B at a size
        QCOMPARE(plan[2].repeat, 2);
        QCOMPARE(plan[5].repeats, 3);
        QCOMPARE(plan[0].config.name, plan[2].config.name);  // one name per configuration and size
        QCOMPARE(plan[6].point.hidden, 128);
        // Baseline 10 ms, te 8 ms at both sizes; each repeat's steps a little different.
        std::vector<std::optional<RunRecord>> records;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            const double m = (plan[i].baseline ? 10.0 : 8.0) * (1.0 + 0.01 * static_cast<double>(plan[i].repeat - 2));
            RunRecord r = timed_run(plan[i].config.name, {m * 0.98, m, m * 1.02});
            r.config = plan[i].config;
            records.push_back(r);
        }
        const SweepResult result = analyze_sweep(plan, records);
        QCOMPARE(result.repeats, 3);
        QCOMPARE(result.cell(0, 0).basis, std::string("3 repeats"));
        QCOMPARE(*result.cell(0, 0).speedup, 1.25);
        QCOMPARE(result.cell(0, 0).verdict(), SweepVerdict::Pays);
        QCOMPARE(result.break_even_point(0), std::optional<std::size_t>(0));
        // One te repeat at hidden 128 cancelled: the other two count, and the cell says so.
        records[9]->status = RunStatus::Cancelled;
        const SweepResult partial = analyze_sweep(plan, records);
        QCOMPARE(partial.cell(1, 0).basis, std::string("2 of 3 repeats"));
        QVERIFY(partial.cell(1, 0).speedup);
        QCOMPARE(partial.runs_cancelled, std::size_t{1});
        // Repeats outside 1 to 100 are refused with the flag.
        spec.repeats = 0;
        bool refused = false;
        try {
            plan_sweep(spec, cpu_device());
        } catch (const ConfigError& e) {
            refused = std::string(e.what()).find("--repeat 0: allowed: 1 to 100") != std::string::npos;
        }
        QVERIFY(refused);
    }

    void headlineStatesTheFastestRunAgainstTheBaseline() {
        std::vector<RunRecord> runs{timed_run("torch bf16 (baseline)", {18, 18.2, 17.8}, 3.000),
                                    timed_run("te fp8", {10, 10.1, 9.9}, 3.004), timed_run("te bf16", {12, 12.2, 11.9}, 3.0)};
        const std::string headline = report_headline(runs, group_runs(runs, 0));
        QVERIFY2(headline.rfind("te fp8 is 1.80x faster than the torch bf16 baseline at the seed shape on NVIDIA H200, final "
                                "loss within 0.01", 0) == 0,
                 headline.c_str());
        runs[1].summary.final_loss = 3.07;
        QVERIFY(report_headline(runs, group_runs(runs, 0)).find("final loss 0.070 higher") != std::string::npos);
    }

    void emulatedFp8RunsSayEmulatedInTheirName() {
        RunRecord emulated = timed_run("te fp8 cpu", {5, 6});
        emulated.execution.fp8_emulated = true;
        const RunRecord real = timed_run("te fp8", {5, 6});
        QCOMPARE(display_name(emulated), std::string("te fp8 cpu (emulated FP8)"));
        QCOMPARE(display_name(real), std::string("te fp8"));
        QCOMPARE(display_name("fp8 emulated run", true), std::string("fp8 emulated run"));  // said already
        const std::vector<RunRecord> runs{real, emulated};
        for (const std::string& text : {render_summary_table(runs, 0), render_group_table(runs, group_runs(runs, 0)),
                                        summary_csv_text(runs, 0), steps_csv_text(runs)}) {
            QVERIFY2(text.find("te fp8 cpu (emulated FP8)") != std::string::npos, text.c_str());
        }
    }

    // Blackwell's formats emulated say which format in their name, and have no memory ratio (their memory holds the
    // emulation's copies); a default name carries a recipe other than delayed scaling.
    void emulatedMicroscalingRunsNameTheirFormatAndHaveNoMemoryRatio() {
        const RunRecord base = timed_run("torch bf16 (baseline)", {10, 10.2, 9.8});
        RunRecord mxfp8 = timed_run("te fp8 mxfp8 cpu", {5, 6});
        mxfp8.config.precision = Precision::Fp8;
        mxfp8.config.fp8.scaling = ScalingKind::Mxfp8;
        mxfp8.execution.fp8_emulated = true;
        RunRecord nvfp4 = mxfp8;
        nvfp4.config.name = "te fp8 nvfp4 cpu";
        nvfp4.config.fp8.scaling = ScalingKind::Nvfp4;
        QCOMPARE(display_name(mxfp8), std::string("te fp8 mxfp8 cpu (emulated MXFP8)"));
        QCOMPARE(display_name(nvfp4), std::string("te fp8 nvfp4 cpu (emulated NVFP4)"));
        const std::vector<RunRecord> runs{base, mxfp8, nvfp4};
        const std::vector<ComparisonRow> rows = compare_runs(runs, 0);
        QVERIFY(rows[1].emulated_format_memory && !rows[1].memory_ratio && rows[1].speedup);
        const std::string table = render_summary_table(runs, 0);
        QVERIFY2(table.find("no memory ratio: te fp8 nvfp4 cpu (emulated NVFP4): emulated: its memory holds") != std::string::npos,
                 table.c_str());
        RunRecord fp8 = base;
        fp8.config.precision = Precision::Fp8;
        QVERIFY(!compare_runs({base, fp8}, 0)[1].emulated_format_memory);  // FP8 emulated: its casts are the format's bytes
        QVERIFY(render_summary_table({nvfp4}, std::nullopt).find("no memory ratio") == std::string::npos);  // no baseline

        RunConfig config = make_preset(Preset::QuickCpu);
        config.backend = Backend::Te;
        config.precision = Precision::Fp8;
        config.fp8.margin = 0;
        QCOMPARE(resolve(config, DeviceInfo{}).name, std::string("te fp8 cpu"));
        config.fp8.scaling = ScalingKind::Nvfp4;
        config.fp8.format = RecipeFormat::E4M3;
        QCOMPARE(resolve(config, DeviceInfo{}).name, std::string("te fp8 nvfp4 cpu"));
        config.fp8.scaling = ScalingKind::Block;
        config.fp8.format = RecipeFormat::E4M3;
        QCOMPARE(resolve(config, DeviceInfo{}).name, std::string("te fp8 block cpu"));
    }

    // An emulated run's step time is the emulation's cost: no table, CSV file, headline or sweep statement
    // shows its ratio to the baseline as a speedup, even when it is the fastest run.
    void emulatedRunsAreNeverASpeedup() {
        RunRecord base = timed_run("torch bf16 (baseline)", {10, 10.2, 9.8});
        RunRecord emulated = timed_run("te fp8 cpu", {5, 5.1, 4.9});
        emulated.execution.fp8_emulated = true;
        std::vector<RunRecord> runs{base, emulated};
        const std::vector<RunGroup> groups = group_runs(runs, 0);
        QVERIFY(groups[1].emulated && groups[1].speedup);
        QCOMPARE(speedup_text(groups[1]), std::string("emulated"));
        const std::string headline = report_headline(runs, groups);
        QVERIFY2(headline.find("faster") == std::string::npos, headline.c_str());
        QVERIFY2(headline.find("the emulation's cost, not FP8's speed") != std::string::npos, headline.c_str());
        for (const std::string& table : {render_summary_table(runs, 0), render_group_table(runs, groups)}) {
            QVERIFY2(table.find("2.00x") == std::string::npos && table.find("emulated") != std::string::npos, table.c_str());
        }
        const std::string csv = summary_csv_text(runs, 0);
        const std::string row = csv.substr(csv.find("\nte fp8 cpu") + 1);
        QVERIFY2(row.find(",2,") == std::string::npos && row.find("2.0") == std::string::npos, row.c_str());
        QVERIFY2(row.find("this ratio is the emulation's cost and not FP8's speed") != std::string::npos, row.c_str());
        // A real FP8 run beside it is the headline's, the emulated one is still not a speedup.
        runs.push_back(timed_run("te fp8", {8, 8.1, 7.9}));
        const std::string mixed = report_headline(runs, group_runs(runs, 0));
        QVERIFY2(mixed.rfind("te fp8 is 1.25x faster", 0) == 0, mixed.c_str());

        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128};
        spec.precisions = {Precision::Fp8};
        const std::vector<SweepRun> plan = plan_sweep(spec, cpu_device());
        std::vector<std::optional<RunRecord>> records;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            RunRecord r = timed_run(plan[i].config.name, {i % 2 == 0 ? 4.0 : 2.0});  // "2x" at every size
            r.config = plan[i].config;
            r.execution.fp8_emulated = plan[i].config.precision == Precision::Fp8;
            records.push_back(r);
        }
        const SweepResult sweep = analyze_sweep(plan, records);
        const std::string said = sweep.break_even_statements()[0];
        QVERIFY2(said.find("pays") == std::string::npos && said.find("no break-even is stated") != std::string::npos, said.c_str());
        QVERIFY2(said.find("compute capability 8.9") != std::string::npos, said.c_str());
        // A microscaling sweep is not told to find an FP8 GPU: its formats run natively on 10.x only.
        SweepSpec nvfp4 = spec;
        nvfp4.base.fp8.scaling = ScalingKind::Nvfp4;
        nvfp4.base.fp8.format = RecipeFormat::E4M3;  // NVFP4's one format (te-bench's default for it)
        const std::vector<SweepRun> nvfp4_plan = plan_sweep(nvfp4, cpu_device());
        std::vector<std::optional<RunRecord>> nvfp4_records;
        for (const SweepRun& run : nvfp4_plan) {
            RunRecord r = timed_run(run.config.name, {3.0});
            r.config = run.config;
            r.execution.fp8_emulated = run.config.precision == Precision::Fp8;
            nvfp4_records.push_back(r);
        }
        const std::string nvfp4_said = analyze_sweep(nvfp4_plan, nvfp4_records).break_even_statements()[0];
        QVERIFY2(nvfp4_said.find("compute capability 10.x") != std::string::npos &&
                     nvfp4_said.find("compute capability 8.9") == std::string::npos,
                 nvfp4_said.c_str());
        const std::string table = render_sweep_table(sweep);
        QVERIFY2(table.find("2.00x") == std::string::npos && table.find("emulated") != std::string::npos, table.c_str());
        const std::string sweep_csv = sweep_csv_text(sweep);
        QVERIFY2(sweep_csv.find(",2.000000,4.000000,,true,") != std::string::npos, sweep_csv.c_str());  // speedup empty
        QVERIFY2(sweep_csv.find("not FP8's speed") != std::string::npos, sweep_csv.c_str());
    }

    // A job summary states its scaling efficiency; above 100 % it says that is not a result to quote.
    void scalingAbovePerfectIsMarked() {
        RunRecord job = timed_run("job", {10, 10.1, 9.9});
        job.execution.dist = DistExecution{};
        job.execution.dist->world_size = 2;
        job.execution.dist->rank_mean_ms = {10.0, 10.1};
        job.execution.dist->scaling_efficiency = 0.93;
        std::string text = render_job_summary(job);
        QVERIFY2(text.find("scaling efficiency: 93.0% (the 1-process run's median ms per step") != std::string::npos, text.c_str());
        QVERIFY(text.find("above 100 %") == std::string::npos);
        QVERIFY2(text.find("same batch per process)\n") != std::string::npos, text.c_str());  // threads not known
        // On the CPU the efficiency includes the threads each side computed with, so the summary names them.
        job.execution.device = "cpu";
        job.execution.dist->baseline_threads = 8;
        job.execution.quality = MeasurementQuality{};
        job.execution.quality->threads = 4;
        text = render_job_summary(job);
        QVERIFY2(text.find("same batch per process; 8 CPU threads in the 1-process run, 4 in each rank)\n") != std::string::npos,
                 text.c_str());
        job.execution.device = "cuda:0";  // a GPU job: its host threads are not what it computes with
        QVERIFY(render_job_summary(job).find("CPU thread") == std::string::npos);
        job.execution.dist->scaling_efficiency = 24.81;
        text = render_job_summary(job);
        QVERIFY2(text.find("scaling efficiency: 2481.0%") != std::string::npos, text.c_str());
        QVERIFY2(text.find("above 100 %: each process stepped faster than the 1-process run did") != std::string::npos, text.c_str());
    }

    void coefficientOfVariation() {
        // mean 10, sample standard deviation sqrt(((-2)^2 + 0 + 2^2) / 2) = 2: CV 0.2.
        QCOMPARE(*coefficient_of_variation({8, 10, 12}), 0.2);
        QCOMPARE(*coefficient_of_variation({5, 5, 5, 5}), 0.0);
        QVERIFY(!coefficient_of_variation({7}));      // one step has no spread
        QVERIFY(!coefficient_of_variation({}));
        QVERIFY(!coefficient_of_variation({0, 0}));   // no positive mean
    }

    // The rule's boundaries: a CV of 9.9 % is steady, 10.1 % noisy; other processes at 0.5 core are tolerated,
    // at 1.3 they disturb; a load average of 1.25 per core is tolerated, above it disturbs; any other process on
    // the GPU disturbs, and so does a clock-event reason except the benign ones.
    void noisyRuleBoundaries() {
        QVERIFY(!quality_with_cv(0.099).noisy);
        MeasurementQuality q = quality_with_cv(0.101);
        QVERIFY(q.noisy);
        QCOMPARE(q.reasons, std::vector<std::string>{"step times vary by 10.1 % (CV; noisy above 10.0 %)"});

        MeasurementQuality machine = quality_with_cv(0.02);
        machine.others_cpu_cores = 0.5;
        machine.load_average = 5.0;  // 1.25 per core: the run's own threads count in it
        judge_quality(machine);
        QVERIFY2(!machine.noisy, quality_reasons_text(machine).c_str());
        machine.others_cpu_cores = 1.3;
        machine.load_average = 5.2;
        judge_quality(machine);
        QVERIFY(machine.noisy);
        QCOMPARE(quality_reasons_text(machine), std::string("other processes used 1.3 cores; the load average was 5.2 on 4 cores"));

        MeasurementQuality gpu = quality_with_cv(0.02);
        gpu.gpu_applies = gpu.gpu_measured = true;
        gpu.gpu_throttle_reasons = {"GPU idle", "application clocks setting"};
        judge_quality(gpu);
        QVERIFY2(!gpu.noisy, quality_reasons_text(gpu).c_str());
        gpu.gpu_throttle_reasons.push_back("SW power cap");
        gpu.gpu_other_processes = 1;
        judge_quality(gpu);
        QCOMPARE(quality_reasons_text(gpu),
                 std::string("1 other process computed on the GPU; the GPU lowered its clocks (SW power cap)"));
        // Where NVML did not answer, its figures give no reason, and the details say why it was not measured.
        gpu.gpu_measured = false;
        gpu.gpu_note = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
        judge_quality(gpu);
        QVERIFY(!gpu.noisy);
        QVERIFY2(quality_details_text(gpu).find("GPU contention not measured: libnvidia-ml.so.1 not found") != std::string::npos,
                 quality_details_text(gpu).c_str());
        // A record without a quality is not measured, never clean.
        QVERIFY(!is_noisy(std::nullopt));
        QCOMPARE(quality_cell(std::nullopt), std::string("-"));
        QVERIFY(quality_details_text(std::nullopt).find("not known to be clean") != std::string::npos);
        QCOMPARE(quality_cell(quality_with_cv(0.0314)), std::string("3.1%"));
        QCOMPARE(quality_cell(quality_with_cv(0.142)), std::string("14.2% noisy"));
        QCOMPARE(noisy_name("te bf16", quality_with_cv(0.142)), std::string("te bf16 (noisy)"));
        QCOMPARE(noisy_name("te bf16", quality_with_cv(0.02)), std::string("te bf16"));
    }

    // /proc's texts as the kernel writes them, and malformed ones: a value, or a reason, never a crash.
    void procTextsParse() {
        const char* stat = "cpu  100 5 50 1000 20 3 2 10 7 0\ncpu0 50 2 25 500 10 1 1 5 3 0\nintr 12345\n";
        QCOMPARE(*parse_busy_jiffies(stat).value, std::uint64_t{100 + 5 + 50 + 3 + 2 + 10});  // not idle, not iowait
        for (const char* bad : {"", "intr 1 2 3\n", "cpu  1 2 3\n", "cpu  1 2 x 4 5 6 7 8\n"}) {
            const ProcReading<std::uint64_t> r = parse_busy_jiffies(bad);
            QVERIFY(!r.value);
            QVERIFY2(r.problem.rfind("/proc/stat", 0) == 0, r.problem.c_str());
        }
        // The command name may hold spaces and parentheses: fields are counted after the last ')'.
        const char* self = "4242 (te bench (x)) R 1 4242 4242 0 -1 4194304 100 0 0 0 370 45 0 0 20 0 9 0 1000 1 1\n";
        QCOMPARE(*parse_own_jiffies(self).value, std::uint64_t{415});
        QVERIFY(parse_own_jiffies("4242 te-bench R 1").problem.find("no \"(command)\" field") != std::string::npos);
        QVERIFY(parse_own_jiffies("4242 (te) R 1 2 3").problem.find("ends before its utime") != std::string::npos);
        QVERIFY(parse_own_jiffies("4242 (te) R 1 2 3 4 5 6 7 8 9 10 ten 12").problem.find("not a whole number") != std::string::npos);
        QCOMPARE(*parse_load_average("1.77 1.84 1.06 2/97 10959\n").value, 1.77);
        QVERIFY(parse_load_average("").problem == "/proc/loadavg is empty");
        QVERIFY(parse_load_average("high 1 1").problem.find("not a load average") != std::string::npos);

        // 300 busy jiffies of which 100 are this process's, over 2 s at 100 ticks per second: 1 core of other work.
        const CpuSnapshot start{1000, 500};
        const CpuSnapshot end{1300, 600};
        QCOMPARE(*others_cpu_cores(start, end, 2.0, 100).value, 1.0);
        QCOMPARE(*others_cpu_cores(start, end, 2.0, 100, 100).value, 0.5);   // a job's other ranks are not other work
        QCOMPARE(*others_cpu_cores(start, end, 2.0, 100, 1000).value, 0.0);  // never below 0
        QVERIFY(others_cpu_cores(start, end, 0.2, 100).problem.find("too short") != std::string::npos);
        QVERIFY(others_cpu_cores(end, start, 2.0, 100).problem.find("went backwards") != std::string::npos);
        QVERIFY(!others_cpu_cores(start, end, 2.0, 0).value);
    }

    // A speedup measured on a noisy run, or against a noisy baseline, says so wherever it is shown: the
    // interval, the group table, the plain table, the headline, the report's sentence and the sweep.
    void noisySpeedupsSayNoisy() {
        RunRecord base = timed_run("torch bf16 (baseline)", {10, 10.2, 9.8});
        RunRecord fast = timed_run("te bf16", {5, 5.1, 4.9});
        base.execution.quality = quality_with_cv(0.02);
        fast.execution.quality = quality_with_cv(0.02);
        std::vector<RunRecord> runs{base, fast};
        std::vector<RunGroup> groups = group_runs(runs, 0);
        QVERIFY(groups[1].significant() && !groups[1].speedup_noisy);
        const std::string clean = speedup_text(groups[1]);
        QVERIFY2(clean.find("noisy") == std::string::npos, clean.c_str());
        QVERIFY(report_headline(runs, groups).find("noisy") == std::string::npos);
        QVERIFY2(quality_sentence(runs).rfind("Every run was measured with steady step times (CV at most 10 %)", 0) == 0,
                 quality_sentence(runs).c_str());
        QVERIFY(render_summary_table(runs, 0).find("noisy") == std::string::npos);

        runs[0].execution.quality = quality_with_cv(0.14);  // only the baseline is noisy
        groups = group_runs(runs, 0);
        QVERIFY(groups[1].significant() && groups[1].speedup_noisy);
        const std::string text = speedup_text(groups[1]);
        QVERIFY2(text.size() > 6 && text.compare(text.size() - 6, 6, " noisy") == 0, text.c_str());
        const std::string table = render_group_table(runs, groups);
        QVERIFY2(table.find(text) != std::string::npos && table.find("quality") != std::string::npos, table.c_str());
        const std::string plain = render_summary_table(runs, 0);
        QVERIFY2(plain.find("2.00x noisy") != std::string::npos, plain.c_str());
        QVERIFY2(plain.find("1.00x noisy") == std::string::npos, plain.c_str());  // the baseline against itself is exact
        QVERIFY(!groups[0].speedup_noisy);
        QVERIFY2(plain.find("14.0% noisy") != std::string::npos, plain.c_str());
        QVERIFY2(plain.find("noisy: torch bf16 (baseline): step times vary by 14.0 % (CV") != std::string::npos, plain.c_str());
        const std::string headline = report_headline(runs, groups);
        QVERIFY2(headline.find("(noisy measurement: not clean evidence of a difference)") != std::string::npos, headline.c_str());
        const std::string sentence = quality_sentence(runs);
        QVERIFY2(sentence.rfind("Noisy measurements: torch bf16 (baseline) (step times vary by 14.0 %", 0) == 0, sentence.c_str());

        runs[0].execution.quality.reset();  // an older record: not recorded, never called clean
        QVERIFY2(quality_sentence(runs).find("not recorded for torch bf16 (baseline)") != std::string::npos,
                 quality_sentence(runs).c_str());
        QVERIFY(quality_sentence(runs).find("Every run") == std::string::npos);
        QVERIFY(render_summary_table(runs, 0).find("measurement quality not recorded") != std::string::npos);

        SweepSpec spec;
        spec.base = make_preset(Preset::QuickCpu);
        spec.hidden = {64, 128};
        spec.precisions = {Precision::Bf16};
        const std::vector<SweepRun> plan = plan_sweep(spec, cpu_device());
        std::vector<std::optional<RunRecord>> records;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            const double m = plan[i].baseline ? 4.0 : 2.0;
            RunRecord r = timed_run(plan[i].config.name, {m * 0.99, m, m * 1.01});
            r.config = plan[i].config;
            r.execution.quality = quality_with_cv(plan[i].baseline && i < 2 ? 0.3 : 0.01);  // the first size's baseline
            records.push_back(r);
        }
        const SweepResult sweep = analyze_sweep(plan, records);
        const std::string said = sweep.break_even_statements()[0];
        // The noisy size counts as neither paying nor slower, however clear its interval.
        QCOMPARE(sweep.cell(0, 0).verdict(), SweepVerdict::Unclear);
        QCOMPARE(sweep.break_even_point(0), std::optional<std::size_t>(1));
        QVERIFY2(said.find("1 of these sizes count as neither: their 95% interval contains 1 or they were measured noisily") !=
                     std::string::npos,
                 said.c_str());
        const std::string sweep_table = render_sweep_table(sweep);
        QVERIFY2(sweep_table.find("2.00x [") != std::string::npos && sweep_table.find("] noisy") != std::string::npos &&
                     sweep_table.find("baseline: step times vary by 30.0 %") != std::string::npos,
                 sweep_table.c_str());
        const std::string sweep_csv = sweep_csv_text(sweep);
        QVERIFY2(sweep_csv.find(",noisy,noisy_reasons,") != std::string::npos && sweep_csv.find(",true,baseline: step times") !=
                                                                                     std::string::npos,
                 sweep_csv.c_str());
    }

    // The scaling efficiency stands on both runs' measurements: a noisy job or 1-process run marks it.
    void noisyScalingIsMarked() {
        RunRecord job = timed_run("job", {10, 10.1, 9.9});
        job.execution.dist = DistExecution{};
        job.execution.dist->world_size = 2;
        job.execution.dist->rank_mean_ms = {10.0, 10.1};
        job.execution.dist->scaling_efficiency = 0.93;
        job.execution.quality = quality_with_cv(0.02);
        QVERIFY(!scaling_is_noisy(job));
        QVERIFY(render_job_summary(job).find("noisy") == std::string::npos);
        job.execution.dist->baseline_noisy = true;
        QVERIFY(scaling_is_noisy(job));
        std::string text = render_job_summary(job);
        QVERIFY2(text.find("noisy: its 1-process run was measured on a disturbed machine") != std::string::npos, text.c_str());
        job.execution.quality = quality_with_cv(0.2);
        text = render_job_summary(job);
        QVERIFY2(text.find("noisy: the job and its 1-process run were measured") != std::string::npos, text.c_str());
    }

    void honestyLabelsAndCommandLine() {
        RunRecord r = timed_run("te fp8 cpu", {5});
        r.config = make_preset(Preset::QuickCpu);
        r.config.backend = Backend::Te;
        r.config.precision = Precision::Fp8;
        r.execution.device = "cpu";
        r.execution.fp8_emulated = true;
        const std::vector<std::string> labels = honesty_labels(r);
        QVERIFY(std::find(labels.begin(), labels.end(), "CPU") != labels.end());
        QVERIFY(std::find(labels.begin(), labels.end(), "emulated FP8") != labels.end());
        // 55 timed steps are not fewer than the seed's 30; its warm-up of 5 is shorter than the seed's 10.
        QVERIFY(std::none_of(labels.begin(), labels.end(), [](const std::string& l) { return l.rfind("fewer", 0) == 0; }));
        QVERIFY(std::find(labels.begin(), labels.end(), "shorter warm-up than the seed (5 steps, seed 10)") != labels.end());
        RunRecord brief = r;
        brief.config.iters = 12;
        brief.config.warmup = 10;
        const std::vector<std::string> brief_labels = honesty_labels(brief);
        QVERIFY(std::find(brief_labels.begin(), brief_labels.end(), "fewer timed steps than the seed (12, seed 30)") !=
                brief_labels.end());
        QVERIFY(std::none_of(brief_labels.begin(), brief_labels.end(), [](const std::string& l) { return l.rfind("shorter", 0) == 0; }));
        const std::string line = command_line_for(r.config);
        QVERIFY2(line.find("te-bench run --device") == 0, line.c_str());
        QVERIFY(line.find("--precision fp8") != std::string::npos);
        QVERIFY(line.find("--recipe delayed --fp8-format hybrid") != std::string::npos);
        QVERIFY2(line.find("--margin 0 --calibrate-first-step on") != std::string::npos, line.c_str());
        RunConfig uncalibrated = r.config;
        uncalibrated.fp8.calibrate_first_step = false;
        QVERIFY(command_line_for(uncalibrated).find("--calibrate-first-step off") != std::string::npos);
        uncalibrated.fp8.scaling = ScalingKind::Current;  // the flag belongs to delayed scaling only
        QVERIFY(command_line_for(uncalibrated).find("--calibrate-first-step") == std::string::npos);
        RunConfig job = r.config;
        job.dist.nproc = 4;
        job.dist.backend = DistBackend::Gloo;
        job.dist.bucket_mb = 12.5;
        job.name = "it's a job";
        const std::string job_line = command_line_for(job);
        QVERIFY2(job_line.find("--nproc 4 --dist-backend gloo --bucket-mb 12.5 --amax-reduction on --dist-timeout 120") !=
                     std::string::npos,
                 job_line.c_str());
        QVERIFY2(job_line.find("--name 'it'\\''s a job'") != std::string::npos, job_line.c_str());
        const std::vector<std::string> args = command_arguments_for(job);
        QCOMPARE(args.back(), std::string("it's a job"));  // no quoting without a shell
        QCOMPARE(args.front(), std::string("run"));
        // A llama names its architecture and the sizes it sets; a gpt's line is as before (no --arch, no llama flags).
        RunConfig llama = make_preset(Preset::QuickCpuLlama);
        llama.model.rope_base = 500000;
        llama.data.path = "/data/tiny shakespeare.txt";
        llama.data.eval_every = 10;
        const std::string llama_line = command_line_for(llama);
        QVERIFY2(llama_line.find("--precision auto --arch llama --layers 2") != std::string::npos, llama_line.c_str());
        QVERIFY2(llama_line.find("--vocab 256 --kv-heads 2 --rope-base 5e+05 --batch 8") != std::string::npos, llama_line.c_str());
        QVERIFY2(llama_line.find("--ffn") == std::string::npos, llama_line.c_str());  // 0: the automatic size
        QVERIFY2(llama_line.find("--data '/data/tiny shakespeare.txt' --data-format auto --val-fraction 0.05 --eval-every 10") !=
                     std::string::npos,
                 llama_line.c_str());
        const std::string gpt_line = command_line_for(make_preset(Preset::QuickCpu));
        for (const char* absent : {"--arch", "--kv-heads", "--ffn", "--rope-base", "--data"}) {
            QVERIFY2(gpt_line.find(absent) == std::string::npos, gpt_line.c_str());
        }
        RunRecord seed = timed_run("seed", {1});
        seed.config = make_preset(Preset::Seed);
        // Without a recorded measurement quality (an older record) it is not known to be clean.
        QCOMPARE(honesty_labels(seed), std::vector<std::string>{"measurement quality not recorded"});
        seed.execution.quality = quality_with_cv(0.02);
        QVERIFY(honesty_labels(seed).empty());
        seed.execution.quality = quality_with_cv(0.14);
        QCOMPARE(honesty_labels(seed), std::vector<std::string>{"noisy: step times vary by 14.0 % (CV; noisy above 10.0 %)"});
    }
};

QTEST_GUILESS_MAIN(TestRepeatsSweep)
#include "tst_repeats_sweep.moc"
