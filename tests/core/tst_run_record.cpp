#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/common/Error.h"
#include "core/results/Comparison.h"
#include "core/results/ConfigDiff.h"
#include "core/results/KernelProfile.h"
#include "core/results/AtomicFile.h"
#include "core/common/TextTable.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/Summary.h"
#include "core/results/SweepResult.h"
#include "core/selftest/SelfTest.h"

using namespace tewb;
using nlohmann::json;

namespace {

RunRecord sample_record() {
    RunRecord r;
    r.id = "0123456789abcdef0123456789abcdef";
    r.created_at = "2026-11-29T12:00:00Z";
    r.config = make_preset(Preset::QuickCpu);
    r.config.precision = Precision::Fp32;
    r.config.name = "quick, \"quoted\" run";
    r.environment.device.gpu_name = "NVIDIA H200";
    r.environment.device.compute_capability = ComputeCapability{9, 0};
    r.environment.device.sm_count = 132;
    r.environment.device.memory_total_bytes = 150'000'000'000ULL;
    r.environment.device.memory_free_bytes = 149'000'000'000ULL;
    r.environment.device.driver_version = "580.65.06 (CUDA 13.0)";
    r.environment.device.libtorch_version = "2.11.0";
    r.environment.device.cpu_model = "Test CPU";
    r.environment.device.cpu_threads = 16;
    r.environment.mode = Mode::Fp8;
    r.environment.reasons = {"TE capable: yes", "FP8 capable: yes"};
    r.environment.build = BuildInfo{"0.1.0", "abc123", "Release", "GNU 12", true};
    r.environment.hostname = "gpu-host";
    r.execution.device = "cpu";
    r.execution.implementation = "torch-eager, fp32";
    r.execution.memory_metric = MemoryMetric::CpuPeakRss;
    r.execution.flops_per_step = 1.5e9;
    r.execution.fused_launches_per_step = 412.5;
    r.execution.attention_backend = "flash";
    for (int i = 1; i <= 6; ++i) {
        r.steps.push_back(
            StepMetrics{i, i <= 2 ? Phase::Warmup : Phase::Timed, 5.5 - 0.1 * i, 10.0 + i, 1000u * i, 2048.0, 11.0 * i});
    }
    r.steps[3].loss = std::nan("");  // non-finite values survive the round trip
    for (int i = 1; i < 6; ++i) r.steps[i].breakdown = StepBreakdown{1.0 * i, 2.0 * i, 0.5 * i, 0.25};
    r.status = RunStatus::Finished;
    r.summary = summarize(r.steps, r.config, r.execution);
    return r;
}

// RFC 4180: rows of cells, quotes removed.
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string cell;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                cell += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell += c;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',' || c == '\n') {
            row.push_back(std::move(cell));
            cell.clear();
            if (c == '\n') rows.push_back(std::move(row)), row.clear();
        } else {
            cell += c;
        }
    }
    return rows;
}

// Cells a spreadsheet would run as a formula: beginning with =, +, -, @, a tab or a carriage return, and not a
// number ("-0.5", "-inf" are numbers).
std::vector<std::string> formula_cells(const std::string& csv) {
    std::vector<std::string> found;
    for (const std::vector<std::string>& row : csv_rows(csv)) {
        for (const std::string& cell : row) {
            if (cell.empty() || std::string_view("=+-@\t\r").find(cell.front()) == std::string_view::npos) continue;
            char* end = nullptr;
            std::strtod(cell.c_str(), &end);
            if (end != cell.c_str() + cell.size()) found.push_back(cell);
        }
    }
    return found;
}

void expect_rejected(const json& document, const std::string& expected_part) {
    try {
        record_from_json(document, "bad.json");
        QFAIL(qPrintable("accepted; expected an error containing " + QString::fromStdString(expected_part)));
    } catch (const DataError& e) {
        const std::string message = e.what();
        QVERIFY2(message.rfind("bad.json: ", 0) == 0, e.what());
        QVERIFY2(message.find(expected_part) != std::string::npos, e.what());
    }
}

}  // namespace

class TestRunRecord : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void unfinishedRunsAreMarkedInLegends() {
        QCOMPARE(unfinished_mark(RunStatus::Cancelled), std::string_view(" (cancelled)"));
        QCOMPARE(unfinished_mark(RunStatus::Failed), std::string_view(" (failed)"));
        QVERIFY(unfinished_mark(RunStatus::Finished).empty());
        QVERIFY(unfinished_mark(RunStatus::Running).empty());
    }

    void selfTestReportRendersEveryCase() {
        SelfTestReport report;
        report.ran = true;
        report.device = "NVIDIA H200 (compute capability 9.0)";
        report.seed = 42;
        report.cases.push_back({"layer_norm_forward", "out", "3072x768", "bfloat16", 0.004, 1e-2, 0.02, {}});
        report.cases.push_back({"cast_to_fp8", "out", "97x33", "float32 -> E4M3", 0.01, 0.0, 0.01, {}});
        QVERIFY(!report.passed());
        const std::string table = render_self_test_table(report);
        QVERIFY(table.find("self-test on NVIDIA H200 (compute capability 9.0) (seed 42)") == 0);
        QVERIFY(table.find("FAIL") != std::string::npos);
        QVERIFY(table.find("pass") != std::string::npos);
        QVERIFY(table.find("2 checks, 1 failed") != std::string::npos);
        const nlohmann::json j = nlohmann::json::parse(self_test_json_text(report));
        QCOMPARE(j["passed"], false);
        QCOMPARE(j["cases"].size(), std::size_t{2});
        QCOMPARE(j["cases"][1]["passed"], false);
        QCOMPARE(j["cases"][0]["bound"].get<double>(), 1e-2);
        QCOMPARE(j["cases"][0]["max_error"].get<double>(), 0.02);
        report.cases.pop_back();
        QVERIFY(report.passed());
        // A check that threw is a failed row with its reason; the run goes on (SelfTest.h).
        report.cases.push_back({"gemm", "-", "3072x768x768", "E4M3 x E4M3 -> E4M3", INFINITY, 0.0, INFINITY,
                                "tewb::kernels::gemm: cublasLtMatmul failed: cuBLAS status 7"});
        QVERIFY(!report.passed());
        const std::string with_failure = render_self_test_table(report);
        QVERIFY2(with_failure.find("FAIL gemm - 3072x768x768 E4M3 x E4M3 -> E4M3: tewb::kernels::gemm: cublasLtMatmul failed") !=
                     std::string::npos,
                 with_failure.c_str());
        QCOMPARE(nlohmann::json::parse(self_test_json_text(report))["cases"][1]["failure"].get<std::string>(),
                 std::string("tewb::kernels::gemm: cublasLtMatmul failed: cuBLAS status 7"));
        report.cases.pop_back();
        QVERIFY(report.passed());
        report.error = "tewb::kernels::gemm: cublasLtMatmul failed";
        QVERIFY(!report.passed());
        QVERIFY(render_self_test_table(report).find("stopped by an error: tewb::kernels::gemm") != std::string::npos);
        SelfTestReport skipped;
        skipped.skip_reason = "no usable CUDA device";
        QVERIFY(!skipped.passed());
        QCOMPARE(render_self_test_table(skipped), std::string("self-test skipped: no usable CUDA device\n"));
    }

    // The settings two runs were given differently, by their place in the record, sorted by it; none for the same
    // configuration.
    void configDifferencesNameEachSettingAndBothValues() {
        RunConfig a;
        a.backend = Backend::Te;
        a.precision = Precision::Fp8;  // FP8 settings are written for FP8 runs only
        RunConfig b = a;
        QVERIFY(config_differences(a, b).empty());
        b.name = "other";
        b.model.hidden = 512;
        b.fp8.scaling = ScalingKind::Block;
        const std::vector<SettingDifference> d = config_differences(a, b);
        QStringList settings;
        for (const SettingDifference& x : d) settings << QString::fromStdString(x.setting);
        QVERIFY2(settings.contains(QStringLiteral("name")) && settings.contains(QStringLiteral("hidden")) &&
                     settings.contains(QStringLiteral("fp8.recipe")),
                 qPrintable(settings.join(QStringLiteral(", "))));
        QCOMPARE(settings.size(), 3);
        for (const SettingDifference& x : d) {
            if (x.setting == "hidden") {
                QCOMPARE(x.a, std::to_string(a.model.hidden));
                QCOMPARE(x.b, std::string("512"));
            }
            if (x.setting == "fp8.recipe") QCOMPARE(x.b, std::string("block"));  // as the record writes it, unquoted
        }
    }

    void jsonRoundTrip() {
        const RunRecord original = sample_record();
        const std::string text = record_to_json_text(original);
        const RunRecord back = record_from_json_text(text, "memory");
        QCOMPARE(back.id, original.id);
        QCOMPARE(back.config, original.config);
        QCOMPARE(back.execution, original.execution);
        QCOMPARE(back.summary, original.summary);
        QCOMPARE(back.status, original.status);
        QCOMPARE(back.environment.device.compute_capability, original.environment.device.compute_capability);
        QCOMPARE(back.environment.device.memory_total_bytes, original.environment.device.memory_total_bytes);
        QCOMPARE(back.environment.reasons, original.environment.reasons);
        QCOMPARE(back.steps.size(), original.steps.size());
        QVERIFY(std::isnan(back.steps[3].loss));
        for (std::size_t i = 0; i < back.steps.size(); ++i) {
            if (i != 3) QCOMPARE(back.steps[i], original.steps[i]);
        }
        QCOMPARE(record_to_json_text(back), text);

        RunRecord graphed = sample_record();  // a CUDA graph run: the decision, its note and the kernel count
        graphed.config.cuda_graph = true;
        graphed.execution.cuda_graph = true;
        graphed.execution.cuda_graph_note = "one CUDA graph per step, captured after 10 eager warm-up steps; 1890 kernels per step";
        graphed.execution.graph_kernels = 1890;
        graphed.execution.graph_pool_bytes = 3'221'225'472ULL;
        graphed.environment.device.cublaslt_library = "/opt/venv/site-packages/nvidia/cu13/lib/libcublasLt.so.13";
        const RunRecord graphed_back = record_from_json_text(record_to_json_text(graphed), "memory");
        QCOMPARE(graphed_back.config, graphed.config);
        QCOMPARE(graphed_back.execution, graphed.execution);
        QCOMPARE(graphed_back.environment.device.cublaslt_library, graphed.environment.device.cublaslt_library);

        json old = to_json(graphed);  // a record written before the option existed ran eagerly
        old["config"].erase("cuda_graph");
        old["execution"].erase("cuda_graph");
        old["execution"].erase("cuda_graph_note");
        old["execution"].erase("graph_kernels");
        old["execution"].erase("graph_pool_bytes");
        old["execution"].erase("attention_backend");
        const RunRecord old_back = record_from_json(old, "old.json");
        QVERIFY(!old_back.config.cuda_graph);
        QVERIFY(!old_back.execution.cuda_graph);
        QVERIFY(!old_back.execution.graph_kernels);
        QVERIFY(!old_back.execution.graph_pool_bytes);
        QVERIFY(old_back.execution.attention_backend.empty());

        RunRecord fp8 = sample_record();  // the FP8 recipe, first-step calibration included, both ways
        fp8.config.backend = Backend::Te;
        fp8.config.precision = Precision::Fp8;
        for (const bool calibrate : {true, false}) {
            fp8.config.fp8.calibrate_first_step = calibrate;
            QCOMPARE(record_from_json_text(record_to_json_text(fp8), "memory").config.fp8, fp8.config.fp8);
        }
        json before_calibration = to_json(fp8);  // records from before the option ran step 1 at scale 1
        before_calibration["config"]["fp8"].erase("calibrate_first_step");
        QVERIFY(!record_from_json(before_calibration, "old.json").config.fp8.calibrate_first_step);
    }

    // Measurement quality, every field both ways; a record from before it was kept reads as not measured (never
    // clean); a damaged figure is refused with its path.
    // A run on a token file: each evaluation's held-out loss, the last one in the summary, and the file's
    // description (never its contents) survive JSON; an older record has none of them.
    void validationLossAndDataFileRoundTrip() {
        RunRecord r = sample_record();
        r.config.data.path = "/data/corpus.txt";
        r.steps[2].val_loss = 4.25;
        r.steps[4].val_loss = 3.5;
        r.summary = summarize(r.steps, r.config, r.execution);
        QCOMPARE(r.summary.final_val_loss.value_or(0), 3.5);
        QCOMPARE(r.summary.final_val_step.value_or(0), 5);
        r.data_file = DataFileInfo{"corpus.txt", 123456, std::string(64, 'a'), TokenFormat::Llmc, 61000, 3050, 50256};
        const std::string text = record_to_json_text(r);
        QVERIFY(text.find("\"val_loss\": 4.25") != std::string::npos);
        const RunRecord back = record_from_json_text(text, "memory");
        QVERIFY(back.data_file == r.data_file);
        QVERIFY(back.summary == r.summary);
        QCOMPARE(back.steps[2].val_loss.value_or(0), 4.25);
        QVERIFY(!back.steps[3].val_loss.has_value());
        QCOMPARE(record_to_json_text(back), text);
        QVERIFY(!import_problem(back).has_value());
        // Before validation existed: no data_file, no val_loss, no final_val_loss.
        const RunRecord plain = record_from_json_text(record_to_json_text(sample_record()), "memory");
        QVERIFY(!plain.data_file && !plain.summary.final_val_loss && !plain.summary.final_val_step);
        RunRecord bad = r;
        bad.data_file->val_tokens = bad.data_file->tokens + 1;
        QVERIFY(import_problem(bad).value_or("").find("data_file") != std::string::npos);
    }

    void measurementQualityRoundTrip() {
        RunRecord measured = sample_record();
        MeasurementQuality q;
        q.cv = 0.142;
        q.others_cpu_cores = 1.3;
        q.load_average = 5.25;
        q.cores = 4;
        q.threads = 3;
        q.gpu_applies = true;
        q.gpu_measured = true;
        q.gpu_other_processes = 2;
        q.gpu_throttle_reasons = {"GPU idle", "SW power cap"};
        q.sm_clock_mhz = 1410;
        q.max_sm_clock_mhz = 1980;
        judge_quality(q);
        QVERIFY(q.noisy && q.reasons.size() == 5);
        measured.execution.quality = q;
        measured.execution.dist = DistExecution{};
        measured.execution.dist->baseline_noisy = true;
        measured.execution.dist->baseline_threads = 4;
        const RunRecord back = record_from_json_text(record_to_json_text(measured), "memory");
        QCOMPARE(back.execution, measured.execution);
        QVERIFY(back.execution.dist->baseline_noisy);
        QCOMPARE(back.execution.dist->baseline_threads, 4);
        QCOMPARE(back.execution.quality->threads, 3);
        QVERIFY2(quality_details_text(back.execution.quality).find("; 3 LibTorch threads;") != std::string::npos,
                 quality_details_text(back.execution.quality).c_str());

        MeasurementQuality unmeasured;  // a CPU run whose machine could not be read
        unmeasured.machine_note = "/proc/stat cannot be read (not Linux, or /proc not mounted)";
        unmeasured.gpu_note = "does not apply: a CPU run";
        measured.execution.quality = unmeasured;
        QCOMPARE(record_from_json_text(record_to_json_text(measured), "memory").execution.quality, unmeasured);

        json old = to_json(measured);
        old["execution"].erase("quality");
        old["execution"]["dist"].erase("baseline_noisy");
        old["execution"]["dist"].erase("baseline_threads");
        const RunRecord old_back = record_from_json(old, "old.json");
        QVERIFY(!old_back.execution.quality);
        QVERIFY(!old_back.execution.dist->baseline_noisy);
        QCOMPARE(old_back.execution.dist->baseline_threads, 0);  // not known
        json old_quality = to_json(measured);
        old_quality["execution"]["quality"].erase("threads");
        QCOMPARE(record_from_json(old_quality, "old.json").execution.quality->threads, 0);
        QVERIFY(quality_details_text(record_from_json(old_quality, "old.json").execution.quality).find("LibTorch thread") ==
                std::string::npos);
        QVERIFY(!is_noisy(old_back.execution.quality));
        QVERIFY(quality_details_text(old_back.execution.quality).find("not known to be clean") != std::string::npos);

        json damaged = to_json(measured);
        damaged["execution"]["quality"]["cv"] = -0.5;
        expect_rejected(damaged, "$.execution.quality.cv: expected a finite number of 0 or more");
        damaged = to_json(measured);
        damaged["execution"]["quality"]["reasons"] = json::array({1});
        expect_rejected(damaged, "$.execution.quality.reasons[0]: expected a string");
    }

    // `te-bench run --profile`: the top-kernels table from the profiler's events (outermost per lane on the CPU,
    // every event on the GPU), as text and CSV, and in the record both ways; a damaged table is refused.
    void kernelProfileTableTextCsvAndRecord() {
        // Lane 1: "a" encloses "b" (not counted again), then "a" once more; lane 2 overlaps lane 1 in time.
        const std::vector<ProfiledEvent> events{{"a", 1, 1000, 5000}, {"b", 1, 2000, 3000}, {"a", 1, 6000, 7000},
                                                {"c", 2, 1500, 9500}, {"d", 1, 5000, 5500}};
        const std::vector<KernelTime> outer = outermost_times(events, "engine");
        QCOMPARE(outer.size(), std::size_t{3});
        QCOMPARE(outer[0], (KernelTime{"c", 1, 8.0}));
        QCOMPARE(outer[1], (KernelTime{"a", 2, 5.0}));
        QCOMPARE(outer[2], (KernelTime{"d", 1, 0.5}));
        // A wrapper (the autograd engine's range) is seen through: its operators count, its own time is one row;
        // a wrapper inside an operator is that operator's time.
        std::vector<ProfiledEvent> backward{{"w", 3, 10000, 20000, true}, {"x", 3, 11000, 13000}, {"y", 3, 12000, 12500},
                                            {"z", 3, 15000, 16000}, {"w", 3, 30000, 31000, true}, {"op", 3, 40000, 45000},
                                            {"w", 3, 41000, 42000, true}};
        const std::vector<KernelTime> seen_through = outermost_times(backward, "engine");
        QCOMPARE(seen_through.size(), std::size_t{4});
        QCOMPARE(seen_through[0], (KernelTime{"engine", 2, 8.0}));  // 10 us less 3 us of x and z, and 1 us
        QCOMPARE(seen_through[1], (KernelTime{"op", 1, 5.0}));
        QCOMPARE(seen_through[2], (KernelTime{"x", 1, 2.0}));
        QCOMPARE(seen_through[3], (KernelTime{"z", 1, 1.0}));
        const std::vector<KernelTime> every = every_event_times(events);
        QCOMPARE(every.size(), std::size_t{4});
        QCOMPARE(every[2], (KernelTime{"b", 1, 1.0}));

        KernelProfile p;
        p.step = 41;
        p.source = "CUDA kernels, copies and sets (CUPTI)";
        p.step_ms = 0.02;
        p.trace_path = "/tmp/trace, \"one\".json";
        p.kernels = every;
        p.kernels[0].name = "void gemm<cutlass::bf16, 128>(Params, int)" + std::string(100, 'x');
        QCOMPARE(p.total_us(), 14.5);
        QCOMPARE(p.share_of_step(p.kernels[0]), 0.4);
        const std::string table = top_kernels_table(p, 2);
        QVERIFY2(table.find("kernel") != std::string::npos && table.find("total µs") != std::string::npos &&
                     table.find("40.0%") != std::string::npos && table.find("...") != std::string::npos,
                 table.c_str());
        QVERIFY2(table.find("2 more: 1.5 µs (7.5%)") != std::string::npos, table.c_str());
        QVERIFY2(table.find("total: 14.5 µs in 4 kernels, 72.5% of the profiled step's 0.020 ms") != std::string::npos, table.c_str());
        QVERIFY2(table.find(std::string(100, 'x')) == std::string::npos, "long names are shortened");
        const std::vector<std::string> lines = top_kernels_lines(p, 10);
        QCOMPARE(lines.size(), std::size_t{4});
        QVERIFY2(lines[1] == "a: 5.0 µs in 2 launches (25.0% of the step)", lines[1].c_str());
        const std::string csv = kernel_profile_csv_text(p);
        QVERIFY2(csv.rfind("kernel,launches,total_us,mean_us,share_of_step\n\"void gemm<cutlass::bf16, 128>(Params, int)", 0) == 0,
                 csv.c_str());
        QVERIFY2(csv.find("\na,2,5,2.5,0.25\n") != std::string::npos, csv.c_str());

        RunRecord r = sample_record();
        r.execution.kernel_profile = p;
        const RunRecord back = record_from_json_text(record_to_json_text(r), "memory");
        QCOMPARE(back.execution, r.execution);
        RunRecord failed = sample_record();
        failed.execution.kernel_profile_error = "/tmp/x.fifo: cannot open for writing (a FIFO with no reader)";
        QCOMPARE(record_from_json_text(record_to_json_text(failed), "memory").execution, failed.execution);
        QVERIFY(to_json(sample_record())["execution"]["kernel_profile"].is_null());  // only when asked for

        json damaged = to_json(r);
        damaged["execution"]["kernel_profile"]["kernels"][1]["total_us"] = -3;
        expect_rejected(damaged, "$.execution.kernel_profile.kernels[1].total_us");
        damaged = to_json(r);
        damaged["execution"]["kernel_profile"]["kernels"][0].erase("launches");
        expect_rejected(damaged, "$.execution.kernel_profile.kernels[0].launches: missing");
        damaged = to_json(r);
        damaged["execution"]["kernel_profile"]["kernels"][0]["work"] = "launch";
        expect_rejected(damaged, "$.execution.kernel_profile.kernels[0].work: expected kernel, helper, memset or copy");
        json old = to_json(r);  // a record from before memsets and op ranges were kept apart
        for (json& k : old["execution"]["kernel_profile"]["kernels"]) k.erase("work");
        old["execution"]["kernel_profile"].erase("op_ranges");
        old["execution"]["kernel_profile"].erase("launches_by_op");
        QCOMPARE(record_from_json(old, "old").execution.kernel_profile->kernels.size(), p.kernels.size());
    }

    // A CUDA profile's GPU work per operator, as the launch ledger attributes it: each kernel, memset or copy to the
    // operator whose correlation it carries, then to the outermost operator around that one on its thread; the
    // autograd engine's range is never one; work no operator launched is op "". Kept in the record both ways.
    void gpuWorkIsAttributedToTheOutermostOperator() {
        // Thread 1: aten::linear encloses aten::addmm (correlation 2); tewb::gemm (3) alone. Thread 2: the engine's
        // wrapper (4) encloses aten::mm_backward's ops (5, and 6 inside it).
        const std::vector<ProfiledOp> ops{{"aten::linear", 1, 100, 900, 1},   {"aten::addmm", 1, 200, 800, 2},
                                          {"tewb::gemm", 1, 1000, 1500, 3},   {"autograd::engine::evaluate_function: X", 2, 0, 9000, 4, true},
                                          {"aten::mm", 2, 100, 800, 5},       {"aten::fill_", 2, 300, 400, 6}};
        std::vector<ProfiledEvent> gpu;
        const auto event = [&gpu](std::uint64_t correlation, LaunchWork work) {
            ProfiledEvent e{"k", 7, 0, 10};
            e.correlation = correlation;
            e.work = work;
            gpu.push_back(e);
        };
        event(2, LaunchWork::Kernel);  // addmm's kernel: aten::linear's
        event(3, LaunchWork::Kernel);
        event(3, LaunchWork::Kernel);  // cuBLASLt's helper beside the matmul
        event(3, LaunchWork::Memset);
        event(6, LaunchWork::Kernel);  // inside aten::mm: aten::mm's, not the wrapper's
        event(0, LaunchWork::Copy);    // launched outside every operator
        event(99, LaunchWork::Kernel);  // a correlation no operator has
        const std::vector<OpLaunches> by_op = launches_by_op(ops, gpu);
        QCOMPARE(by_op.size(), std::size_t{4});
        QCOMPARE(by_op[0], (OpLaunches{"tewb::gemm", 2, 1, 0}));
        QCOMPARE(by_op[1], (OpLaunches{"", 1, 0, 1}));
        QCOMPARE(by_op[2], (OpLaunches{"aten::linear", 1, 0, 0}));
        QCOMPARE(by_op[3], (OpLaunches{"aten::mm", 1, 0, 0}));

        KernelProfile p;
        p.step = 16;
        p.source = "CUDA kernels, copies and sets (CUPTI)";
        p.kernels = {KernelTime{"nvjet", 2, 30.0}, KernelTime{"Memset (Device)", 1, 1.0, LaunchWork::Memset}};
        p.op_ranges = {KernelTime{"tewb::gemm", 1, 40.0}};
        p.launches_by_op = by_op;
        RunRecord r = sample_record();
        r.execution.kernel_profile = p;
        QCOMPARE(record_from_json_text(record_to_json_text(r), "memory").execution, r.execution);
    }

    // --te-impl in the configuration, the te path that ran and its fallbacks in the execution: both ways, and
    // records from before them still read (auto, nothing recorded).
    void teImplAndFallbacksRoundTrip() {
        RunRecord r = sample_record();
        r.config.backend = Backend::Te;
        r.config.precision = Precision::Fp8;
        r.config.te_impl = TeImpl::Fused;
        r.execution.te_impl = "fused-host";
        r.execution.fp8_emulated = true;
        r.execution.fallbacks = {{"gemm", "operand not 16-byte aligned", 12}, {"layer_norm", "hidden 770 is odd", 1}};
        const json j = to_json(r);
        QCOMPARE(j["config"]["te_impl"].get<std::string>(), std::string("fused"));
        QCOMPARE(j["execution"]["te_impl"].get<std::string>(), std::string("fused-host"));
        QCOMPARE(j["execution"]["fallbacks"].size(), std::size_t{2});
        QCOMPARE(j["execution"]["fallbacks"][0]["op"].get<std::string>(), std::string("gemm"));
        QCOMPARE(j["execution"]["fallbacks"][0]["reason"].get<std::string>(), std::string("operand not 16-byte aligned"));
        QCOMPARE(j["execution"]["fallbacks"][0]["count"].get<std::int64_t>(), std::int64_t{12});
        const RunRecord back = record_from_json_text(record_to_json_text(r), "memory");
        QCOMPARE(back.config, r.config);
        QCOMPARE(back.execution, r.execution);
        QCOMPARE(record_to_json_text(back), record_to_json_text(r));
        for (const TeImpl impl : {TeImpl::Auto, TeImpl::Reference}) {
            r.config.te_impl = impl;
            QCOMPARE(record_from_json(to_json(r), "memory").config.te_impl, impl);
        }

        const RunRecord torch = sample_record();  // a torch run: auto, no te path, an empty list
        const json torch_json = to_json(torch);
        QCOMPARE(torch_json["config"]["te_impl"].get<std::string>(), std::string("auto"));
        QVERIFY(torch_json["execution"]["te_impl"].is_null());
        QVERIFY(torch_json["execution"]["fallbacks"].is_array() && torch_json["execution"]["fallbacks"].empty());

        json old = to_json(r);  // written before --te-impl and the fallbacks were recorded
        old["config"].erase("te_impl");
        old["execution"].erase("te_impl");
        old["execution"].erase("fallbacks");
        const RunRecord old_back = record_from_json(old, "old.json");
        QCOMPARE(old_back.config.te_impl, TeImpl::Auto);
        QVERIFY(old_back.execution.te_impl.empty());
        QVERIFY(old_back.execution.fallbacks.empty());
        QCOMPARE(te_path_words(old_back), std::string("te path: not recorded"));

        json bad = to_json(r);
        bad["config"]["te_impl"] = "fast";
        expect_rejected(bad, "allowed: auto|fused|reference");
        bad = to_json(r);
        bad["execution"]["fallbacks"][1]["count"] = -1;
        expect_rejected(bad, "$.execution.fallbacks[1].count");
        bad = to_json(r);
        bad["execution"]["fallbacks"][0].erase("reason");
        expect_rejected(bad, "$.execution.fallbacks[0].reason: missing");
        bad = to_json(r);
        bad["execution"]["fallbacks"] = "none";
        expect_rejected(bad, "$.execution.fallbacks: expected an array");
    }

    // The report's words for the te path: which path, the fallbacks one by one, "fully fused" only without any;
    // the command line carries --te-impl when it is not auto; the summary CSV the path and the fallback calls.
    void tePathAndFallbacksInTheReport() {
        RunRecord r = sample_record();
        r.config.backend = Backend::Te;
        r.config.precision = Precision::Fp8;
        r.execution.te_impl = "fused-cuda";
        QCOMPARE(te_path_words(r), std::string("te path: fused-cuda"));
        QVERIFY(fully_fused(r.execution));
        QCOMPARE(fallback_summary(r.execution), std::string("no fallbacks"));
        QCOMPARE(te_path_text(r, false), std::string("te path: fused-cuda, fully fused, no fallbacks\n"));
        for (const std::string& label : honesty_labels(r)) QVERIFY2(label.find("fallback") == std::string::npos, label.c_str());

        r.execution.fallbacks = {{"gemm", "operand not 16-byte aligned", 12}, {"layer_norm", "hidden 770 is odd", 1}};
        QVERIFY(!fully_fused(r.execution));
        QCOMPARE(fallback_summary(r.execution), std::string("2 fallbacks to the reference (13 calls)"));
        const std::vector<std::string> expected_lines{"gemm: operand not 16-byte aligned (12 calls)",
                                                      "layer_norm: hidden 770 is odd (1 call)"};
        QCOMPARE(fallback_lines(r.execution), expected_lines);
        const std::string text = te_path_text(r, true);
        QCOMPARE(text, display_name(r) + ": te path: fused-cuda; 2 fallbacks to the reference (13 calls)\n"
                                         "  fallback: gemm: operand not 16-byte aligned (12 calls)\n"
                                         "  fallback: layer_norm: hidden 770 is odd (1 call)\n");
        QVERIFY(text.find("fully fused") == std::string::npos);
        const std::vector<std::string> labels = honesty_labels(r);
        QVERIFY(std::find(labels.begin(), labels.end(), std::string("2 fallbacks to the reference")) != labels.end());

        r.execution.te_impl = "fused-host";
        r.execution.fallbacks.clear();
        QCOMPARE(te_path_words(r), std::string("te path: fused-host, FP8 GEMMs emulated"));
        r.execution.te_impl = "reference";
        r.execution.fp8_emulated = true;
        QCOMPARE(te_path_words(r), std::string("te path: reference, FP8 GEMMs emulated"));
        QVERIFY(!fully_fused(r.execution));
        QCOMPARE(te_path_text(r, false), std::string("te path: reference, FP8 GEMMs emulated; no fallbacks\n"));
        QCOMPARE(te_path_text(sample_record(), false), std::string());  // torch: nothing to say

        r.config.te_impl = TeImpl::Auto;
        QVERIFY(command_line_for(r.config).find("--te-impl") == std::string::npos);
        r.config.te_impl = TeImpl::Fused;
        QVERIFY2(command_line_for(r.config).find(" --te-impl fused") != std::string::npos, command_line_for(r.config).c_str());
        r.config.te_impl = TeImpl::Reference;
        QVERIFY(command_line_for(r.config).find(" --te-impl reference") != std::string::npos);

        r.execution.te_impl = "fused-cuda";
        r.execution.fallbacks = {{"gemm", "epilogue refused", 5}, {"gelu", "odd width", 2}};
        std::ostringstream out;
        write_summary_csv(out, {r, sample_record()}, 0);
        const QStringList lines = QString::fromStdString(out.str()).split('\n', Qt::SkipEmptyParts);
        const QStringList header = lines[0].split(',');
        const auto field = [&](const QString& line, const char* column) {  // the name holds commas: count from the end
            const QStringList parts = line.split(',');
            return parts[parts.size() - (header.size() - header.indexOf(QString::fromLatin1(column)))];
        };
        QCOMPARE(field(lines[1], "te_impl"), QStringLiteral("fused-cuda"));
        QCOMPARE(field(lines[1], "fallback_calls"), QStringLiteral("7"));
        QCOMPARE(field(lines[2], "te_impl"), QString());
        QCOMPARE(field(lines[2], "fallback_calls"), QString());
    }

    void jsonHasTheDocumentedKeys() {
        const json j = to_json(sample_record());
        QCOMPARE(j["schema_version"].get<int>(), 1);
        for (const char* key : {"config", "environment", "status", "steps", "summary", "execution"})
            QVERIFY2(j.contains(key), key);
        for (const char* key : {"step", "phase", "loss", "step_ms", "mem_bytes"}) QVERIFY2(j["steps"][0].contains(key), key);
        for (const char* key :
             {"mean_ms", "median_ms", "p90_ms", "tokens_per_s", "tflops", "mfu", "peak_mem_bytes", "final_loss"})
            QVERIFY2(j["summary"].contains(key), key);
        QCOMPARE(j["steps"][0]["phase"].get<std::string>(), std::string("warmup"));
        QCOMPARE(j["steps"][3]["loss"].get<std::string>(), std::string("nan"));
        QCOMPARE(j["environment"]["device"]["compute_capability"].get<std::string>(), std::string("9.0"));
        QVERIFY(j["summary"]["mfu"].is_null());
    }

    void malformedImportsAreRejected() {
        const json good = to_json(sample_record());
        QVERIFY_THROWS_EXCEPTION(DataError, record_from_json_text("{not json", "bad.json"));
        QVERIFY_THROWS_EXCEPTION(DataError, record_from_json_text("", "bad.json"));
        expect_rejected(json::array(), "$: expected an object");
        json j = good;
        j.erase("steps");
        expect_rejected(j, "$.steps: missing");
        j = good;
        j["schema_version"] = 99;
        expect_rejected(j, "version 99 is not supported");
        j = good;
        j["status"] = "exploded";
        expect_rejected(j, "$.status");
        j = good;
        j["config"]["hidden"] = "wide";
        expect_rejected(j, "$.config.hidden: expected a whole number");
        j = good;
        j["config"]["backend"] = "jax";
        expect_rejected(j, "allowed: torch|te");
        j = good;
        j["steps"][2]["loss"] = "lots";
        expect_rejected(j, "$.steps[2].loss: expected a number");
        j = good;
        j["steps"][2]["step"] = 1;
        expect_rejected(j, "$.steps[2].step: 1 does not follow step 2");
        j = good;
        j["steps"][0]["phase"] = "cooldown";
        expect_rejected(j, "$.steps[0].phase");
        j = good;
        j["environment"]["device"]["compute_capability"] = "nine";
        expect_rejected(j, "not of the form MAJOR.MINOR");
        j = good;
        j["summary"]["peak_mem_bytes"] = -5;
        expect_rejected(j, "$.summary.peak_mem_bytes");
        j = good;
        j["id"] = "";
        expect_rejected(j, "$.id: must not be empty");
        j = good;
        j["status"] = "failed";
        j["error_kind"] = "exploded";
        expect_rejected(j, "allowed: out_of_memory|numerics|runtime|distributed");
    }

    // The block scales' histograms of an inspected block-scaled run: read back as written, and refused with the value
    // and the rule when out of range, too large in sum, or on a run that cannot have them.
    void blockScaleHistogramsAreCheckedOnImport() {
        RunRecord r = sample_record();
        r.config.backend = Backend::Te;
        r.config.precision = Precision::Fp8;
        r.config.fp8.scaling = ScalingKind::Mxfp8;
        r.config.fp8.format = RecipeFormat::E4M3;
        r.config.fp8.margin = 0;
        r.config.inspect_fp8 = true;
        r.fp8_slots = {{"blocks_0.qkv", SlotRole::Input, Fp8Dtype::E4M3}, {"blocks_0.qkv", SlotRole::Weight, Fp8Dtype::E4M3}};
        for (StepMetrics& step : r.steps) step.fp8.assign(2, Fp8SlotSample{1.0f, 2.0f});
        r.fp8_block_scales = {Fp8ScaleHistogram{-9, {3, 0, 5}, 1}, Fp8ScaleHistogram{0, {}, 0}};
        const json good = to_json(r);
        QCOMPARE(record_from_json(good, "good.json").fp8_block_scales, r.fp8_block_scales);
        QVERIFY(!import_problem(r));
        json j = good;
        j["fp8_block_scales"][0]["counts"][1] = -1;
        expect_rejected(j, "$.fp8_block_scales[0].counts[1]: -1 is out of range; allowed: 0 to 1125899906842624");
        j = good;
        j["fp8_block_scales"][0]["counts"][1] = 18446744073709551615ull;
        expect_rejected(j, "$.fp8_block_scales[0].counts[1]: 18446744073709551615 is out of range");
        j = json::parse(good.dump());
        j["fp8_block_scales"][0]["empty_blocks"] = 3.6893488147419103e19;  // 2^65, beyond 64 bits
        expect_rejected(j, "$.fp8_block_scales[0].empty_blocks: 3.6893488147419103e+19 is out of range");
        j = good;
        j["fp8_block_scales"][0]["counts"] = json::array({1ll << 50, 1ll << 50});
        expect_rejected(j, "$.fp8_block_scales[0].counts: 2251799813685249 blocks in all; allowed: at most 1125899906842624");
        j = good;
        j["fp8_block_scales"][0]["lowest_exponent"] = 127;
        expect_rejected(j, "3 binades from 2^127 reach past 2^127");
        j = good;
        j["fp8_block_scales"][0]["lowest_exponent"] = 128;
        expect_rejected(j, "lowest_exponent: 128 is out of range; allowed: -128 to 127");
        j = good;
        j["fp8_block_scales"].erase(1);
        expect_rejected(j, "1 histograms; expected one per FP8 slot (2)");
        RunRecord plain = r;
        plain.config.inspect_fp8 = false;
        QVERIFY(import_problem(plain) && import_problem(plain)->find("$.fp8_block_scales: only an inspected FP8 run") == 0);
        plain = r;
        plain.config.fp8.scaling = ScalingKind::Delayed;
        QVERIFY(import_problem(plain) && import_problem(plain)->find("recipe delayed") != std::string::npos);
    }

    // A failed run is built one way (mark_failed), and its kind survives the record's JSON.
    void failedRunsCarryTheirKind() {
        for (const ErrorKind kind : {ErrorKind::OutOfMemory, ErrorKind::Numerics, ErrorKind::Runtime, ErrorKind::Distributed}) {
            RunRecord r = sample_record();
            mark_failed(r, kind, "what went wrong; what to do");
            QCOMPARE(r.status, RunStatus::Failed);
            const json j = to_json(r);
            QCOMPARE(j["error_kind"].get<std::string>(), std::string(to_string(kind)));
            const RunRecord back = record_from_json(j, "failed.json");
            QVERIFY(back.error_kind == kind);
            QCOMPARE(back.message, std::string("what went wrong; what to do"));
        }
        const RunRecord finished = sample_record();
        QVERIFY(to_json(finished)["error_kind"].is_null());
        QVERIFY(!record_from_json(to_json(finished), "finished.json").error_kind);
    }

    void readingAMissingFileSaysSo() {
        try {
            read_record_file("/nonexistent/run.json");
            QFAIL("read a missing file");
        } catch (const DataError& e) {
            QVERIFY(std::string(e.what()).find("/nonexistent/run.json") == 0);
        }
    }

    // The summary's breakdown: the mean over the timed steps; without split timed steps (a CUDA-graph
    // run) the eager warm-up steps after the first, and the source says which.
    void breakdownSummaryAndItsSource() {
        RunRecord r = sample_record();
        QVERIFY(r.summary.breakdown.has_value());
        QCOMPARE(r.summary.breakdown_source, std::string("timed steps"));
        QCOMPARE(*r.summary.breakdown, (StepBreakdown{3.5, 7.0, 1.75, 0.25}));  // steps 3..6: i = 2..5
        for (StepMetrics& s : r.steps) {
            if (s.phase == Phase::Timed) s.breakdown.reset();
        }
        r.steps[0].breakdown = StepBreakdown{100, 100, 100, 100};  // the first warm-up step: one-time costs
        RunSummary graphed = summarize(r.steps, r.config, r.execution);
        QCOMPARE(*graphed.breakdown, (StepBreakdown{1, 2, 0.5, 0.25}));
        QVERIFY(graphed.breakdown_source.find("eager warm-up steps") == 0);
        r.steps[1].breakdown.reset();  // only the first warm-up step is split: it is all there is
        graphed = summarize(r.steps, r.config, r.execution);
        QCOMPARE(*graphed.breakdown, (StepBreakdown{100, 100, 100, 100}));
        r.steps[0].breakdown.reset();
        QVERIFY(!summarize(r.steps, r.config, r.execution).breakdown.has_value());
        // The terminal's table: shares of the sum, the steps it is over; runs without one are left out.
        RunRecord split = sample_record();
        split.summary.breakdown = StepBreakdown{2, 5, 1, 2};
        r.summary.breakdown.reset();
        const std::string table = render_breakdown_table({split, r});
        QVERIFY2(table.find("2.00 (20%)") != std::string::npos && table.find("5.00 (50%)") != std::string::npos, table.c_str());
        QVERIFY2(table.find("timed steps") != std::string::npos, table.c_str());
        QCOMPARE(std::count(table.begin(), table.end(), '\n'), 3L);  // title, header, one run
        QVERIFY(render_breakdown_table({r}).empty());
        // Bad times in a breakdown keep a record out of the store.
        RunRecord bad = sample_record();
        bad.steps[2].breakdown->fp8_ms = -1;
        QVERIFY(import_problem(bad).value_or("").find("breakdown") != std::string::npos);
        bad = sample_record();
        bad.summary.breakdown->optimizer_ms = INFINITY;
        QVERIFY(import_problem(bad).has_value());
    }

    void stepsCsvIsLongFormat() {
        std::vector<RunRecord> runs{sample_record(), sample_record()};
        runs[1].id = "second";
        std::ostringstream out;
        write_steps_csv(out, runs);
        const QStringList lines = QString::fromStdString(out.str()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1 + 12);
        QCOMPARE(
            lines[0],
            QStringLiteral("run_id,run_name,backend,precision,device,step,phase,loss,step_ms,mem_bytes,tokens_per_s,elapsed_ms,"
                           "forward_ms,backward_ms,communication_ms,optimizer_ms,fp8_ms,val_loss"));
        QVERIFY(lines[1].startsWith(QStringLiteral(
            "0123456789abcdef0123456789abcdef,\"quick, \"\"quoted\"\" run\",torch,fp32,cpu,1,warmup,5.4,11,1000,")));
        QVERIFY(lines[7].startsWith(QStringLiteral("second,")));
        QVERIFY2(lines[1].endsWith(QStringLiteral(",,,,,,")), qPrintable(lines[1]));  // step 1 was not split nor evaluated
        QVERIFY2(lines[2].endsWith(QStringLiteral(",1,2,0,0.5,0.25,")), qPrintable(lines[2]));
        QVERIFY(lines[4].contains(QStringLiteral(",nan,")));
    }

    void summaryCsvHasSpeedupAgainstTheBaseline() {
        std::vector<RunRecord> runs{sample_record(), sample_record()};
        runs[1].summary.mean_ms = *runs[0].summary.mean_ms / 2.0;
        runs[1].summary.peak_mem_bytes = runs[0].summary.peak_mem_bytes / 2;
        std::ostringstream out;
        write_summary_csv(out, runs, 0);
        const QStringList lines = QString::fromStdString(out.str()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 3);
        const QStringList header = lines[0].split(',');
        QCOMPARE(header.size(), 47);
        QCOMPARE(header[41], QStringLiteral("speedup_note"));  // why a speedup cell is empty (emulated FP8)
        // Measurement quality, appended so that readers by name keep working.
        QCOMPARE(header.mid(42), (QStringList{"cv", "others_cpu_cores", "load_average", "noisy", "noisy_reasons"}));
        QCOMPARE(header[19], QStringLiteral("final_loss"));
        QCOMPARE(header[20], QStringLiteral("final_val_loss"));  // empty for runs on synthetic tokens
        QCOMPARE(header[6], QStringLiteral("fp8_emulated"));
        QCOMPARE(header[7], QStringLiteral("te_impl"));
        QCOMPARE(header[8], QStringLiteral("fallback_calls"));
        const qsizetype speedup = header.indexOf(QStringLiteral("speedup"));
        QCOMPARE(header[speedup + 1], QStringLiteral("memory_ratio"));
        QCOMPARE(header[34], QStringLiteral("group_speedup_significant"));
        QCOMPARE(header[40], QStringLiteral("breakdown_source"));
        // The name and the implementation hold commas (quoted): count the later columns from the end.
        const auto field = [&](const QString& line, const char* column) {
            const QStringList parts = line.split(',');
            return parts[parts.size() - (header.size() - header.indexOf(QString::fromLatin1(column)))];
        };
        QCOMPARE(field(lines[2], "speedup"), QStringLiteral("2"));
        QCOMPARE(field(lines[2], "memory_ratio"), QStringLiteral("0.5"));
        QCOMPARE(field(lines[1], "speedup"), QStringLiteral("1"));
        QCOMPARE(field(lines[1], "memory_ratio"), QStringLiteral("1"));
        // Not repeats: the group columns are the run's own (its timed steps).
        QCOMPARE(field(lines[1], "repeat_group"), QString());
        QCOMPARE(field(lines[2], "group_speedup"), QStringLiteral("2"));
        QCOMPARE(field(lines[2], "speedup_note"), QString());
        // Records without a measurement quality: empty figures, and the reason says it was not recorded.
        QCOMPARE(field(lines[1], "cv"), QString());
        QCOMPARE(field(lines[1], "noisy"), QString());
        QCOMPARE(field(lines[1], "noisy_reasons"), QStringLiteral("measurement quality not recorded (an older record)"));
        MeasurementQuality q;
        q.cv = 0.25;
        q.others_cpu_cores = 0.75;
        q.load_average = 1.5;
        q.cores = 2;
        judge_quality(q);
        runs[1].execution.quality = q;
        const QStringList measured = QString::fromStdString(summary_csv_text(runs, 0)).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(field(measured[2], "cv"), QStringLiteral("0.25"));
        QCOMPARE(field(measured[2], "others_cpu_cores"), QStringLiteral("0.75"));
        QCOMPARE(field(measured[2], "load_average"), QStringLiteral("1.5"));
        QCOMPARE(field(measured[2], "noisy"), QStringLiteral("true"));
        QCOMPARE(field(measured[2], "noisy_reasons"),
                 QStringLiteral("step times vary by 25.0 % (CV; noisy above 10.0 %); other processes used 0.8 cores"));
        QCOMPARE(field(measured[2], "speedup"), QStringLiteral("2"));  // a number still, its noise in the columns beside it
    }

    // A spreadsheet runs a cell that begins with =, +, -, @, a tab or a carriage return as a formula (=HYPERLINK,
    // =cmd|...): every text cell of every CSV (names, devices, modules, kernels, notes) gets a leading ' then, and
    // is quoted as RFC 4180 asks; numbers (a negative loss, an SNR below 0 dB) stay numbers.
    void csvTextCellsAreNeverFormulas() {
        QCOMPARE(csv_field("=1+1"), std::string("'=1+1"));
        QCOMPARE(csv_field("+1"), std::string("'+1"));
        QCOMPARE(csv_field("-1"), std::string("'-1"));
        QCOMPARE(csv_field("@SUM(A1)"), std::string("'@SUM(A1)"));
        QCOMPARE(csv_field("\t=1"), std::string("'\t=1"));
        QCOMPARE(csv_field("\r=1"), std::string("\"'\r=1\""));
        QCOMPARE(csv_field("=HYPERLINK(\"http://x\",\"y\")"), std::string("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""));
        QCOMPARE(csv_field("a=1"), std::string("a=1"));  // only the first character counts
        QCOMPARE(csv_field("'=1"), std::string("'=1"));
        QCOMPARE(csv_field("a, b"), std::string("\"a, b\""));
        QCOMPARE(csv_field(""), std::string());

        RunRecord r = sample_record();
        r.id = "-0123456789abcdef";
        r.config.name = "=HYPERLINK(\"http://example.com\",\"click\")";
        r.execution.device = "@SUM(1+1)*cmd|' /C calc'!A0";
        r.execution.implementation = "+1+1";
        r.execution.te_impl = "\t=1+1";
        r.summary.breakdown_source = "\r=1+1";
        r.repeat = RepeatInfo{"-group", 1, 1};
        r.steps[0].loss = -0.5;
        r.steps[1].loss = -1e-3;
        r.fp8_slots = {{"=blocks_0.qkv", SlotRole::Input, Fp8Dtype::E4M3}};
        Fp8SlotSample sample;
        sample.amax = 3.5f;
        sample.rel_mse = 2.0f;  // worse than no signal: an SNR of -3 dB
        for (StepMetrics& s : r.steps) s.fp8 = {sample};
        KernelProfile profile;
        profile.step_ms = 1.0;
        profile.kernels = {{"=kernel()", 1, 2.0}, {"-[memcpy]", 2, 1.0}};
        SweepResult sweep;
        sweep.points = {SweepPoint{64, 8, 32}};
        sweep.flops = {1e9};
        sweep.precisions = {Precision::Fp8};
        SweepCell cell;
        cell.point = sweep.points[0];
        cell.precision = Precision::Fp8;
        cell.baseline_ms = 2.0;
        cell.emulated = true;
        cell.note = "+note";
        cell.basis = "=basis";
        sweep.cells = {cell};
        const std::vector<RunRecord> runs{r, sample_record()};
        for (const std::string& csv : {steps_csv_text(runs), summary_csv_text(runs, 1), fp8_csv_text(runs),
                                       kernel_profile_csv_text(profile), sweep_csv_text(sweep)}) {
            const std::vector<std::string> formulas = formula_cells(csv);
            const std::string first = formulas.empty() ? std::string() : formulas.front();
            QVERIFY2(formulas.empty(), ("runs as a formula: " + first + "\nin\n" + csv).c_str());
        }

        const std::vector<std::vector<std::string>> steps = csv_rows(steps_csv_text(runs));
        QCOMPARE(steps[1][0], std::string("'-0123456789abcdef"));
        QCOMPARE(steps[1][1], std::string("'=HYPERLINK(\"http://example.com\",\"click\")"));
        QCOMPARE(steps[1][4], std::string("'@SUM(1+1)*cmd|' /C calc'!A0"));
        QCOMPARE(steps[1][7], std::string("-0.5"));  // a number: no '
        QCOMPARE(steps[2][7], std::string("-0.001"));
        const std::vector<std::vector<std::string>> summary = csv_rows(summary_csv_text(runs, 1));
        const auto column = [&](const char* name) {
            return std::find(summary[0].begin(), summary[0].end(), name) - summary[0].begin();
        };
        QCOMPARE(summary[1][column("implementation")], std::string("'+1+1"));
        QCOMPARE(summary[1][column("te_impl")], std::string("'\t=1+1"));
        QCOMPARE(summary[1][column("repeat_group")], std::string("'-group"));
        QCOMPARE(summary[1][column("breakdown_source")], std::string("'\r=1+1"));
        const std::vector<std::vector<std::string>> fp8 = csv_rows(fp8_csv_text(runs));
        QCOMPARE(fp8[1][4], std::string("'=blocks_0.qkv"));
        QVERIFY2(fp8[1][12].rfind("-3.01", 0) == 0, fp8[1][12].c_str());  // snr_db, a negative number
        const std::vector<std::vector<std::string>> kernels = csv_rows(kernel_profile_csv_text(profile));
        QCOMPARE(kernels[1][0], std::string("'=kernel()"));
        QCOMPARE(kernels[2][0], std::string("'-[memcpy]"));
        QCOMPARE(csv_rows(sweep_csv_text(sweep))[1][9], std::string("'+note"));  // the note column
    }

    void percentilesInterpolate() {
        QCOMPARE(percentile({1, 2, 3, 4, 5}, 50), 3.0);
        QCOMPARE(percentile({5, 1, 4, 2, 3}, 90), 4.6);
        QCOMPARE(percentile({7}, 90), 7.0);
        QCOMPARE(percentile({}, 50), 0.0);
    }

    void summaryCoversOnlyTimedSteps() {
        const RunRecord r = sample_record();
        QCOMPARE(r.summary.timed_steps, 4);
        QCOMPARE(*r.summary.mean_ms, (13.0 + 14.0 + 15.0 + 16.0) / 4.0);
        QCOMPARE(r.summary.peak_mem_bytes, std::uint64_t{6000});
        QCOMPARE(*r.summary.tflops, 1.5e9 / (14.5 / 1000.0) / 1e12);
    }

    void textTableAligns() {
        const std::string table = render_text_table({"a", "number"}, {{"x", "1.5"}, {"longer", "22.25"}});
        QCOMPARE(table, std::string("a       number\nx          1.5\nlonger   22.25\n"));
    }

    void atomicWriteReplacesWholeFile() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("out.json").toStdString();
        write_file_atomically(path, "first");
        write_file_atomically(path, "second");
        QFile file(QString::fromStdString(path));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), QByteArray("second"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temporary left
        QVERIFY_THROWS_EXCEPTION(DataError, write_file_atomically("/nonexistent-dir/out.json", "x"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, check_output_path("--json", "/nonexistent-dir/out.json"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, check_output_path("--json", dir.path().toStdString()));
        check_output_path("--json", path);
    }
};

QTEST_GUILESS_MAIN(TestRunRecord)
#include "tst_run_record.moc"
