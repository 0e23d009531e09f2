// te-bench: the headless command line of TE Workbench. Argument wiring only; the work is in core/.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "Arguments.h"
#include "CheckedStdout.h"
#include "ProgressBar.h"
#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/device/Capability.h"
#include "core/device/DeviceInfo.h"
#include "core/fp8/ReplayReport.h"
#include "core/common/StandardStreams.h"
#include "core/results/AtomicFile.h"
#include "core/results/Comparison.h"
#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"
#include "core/results/Fp8Summary.h"
#include "core/results/KernelProfile.h"
#include "core/results/LedgerReport.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordImport.h"
#include "core/results/RecordJson.h"
#include "core/results/RunGroups.h"
#include "core/results/ReportText.h"
#include "core/results/RunStore.h"
#include "core/results/SweepResult.h"
#include "core/selftest/SelfTest.h"
#include "core/config/ComparePlan.h"
#include "core/dist/WorkerEnv.h"
#include "core/train/DataParallelRun.h"
#include "core/train/Trainer.h"
#include "LocalJob.h"

namespace {

using namespace tewb;
using namespace tewb::cli;

constexpr int kExitFailure = 1;
constexpr int kExitNotSaved = 3;  // a run ended but could not be saved in the run store (kept as JSON instead)
constexpr int kExitSkipped = 77;  // CTest's skip code: no GPU to check
constexpr int kExitInterrupted = 130;
constexpr std::size_t kTopKernelsShown = 15;  // rows of `run --profile`'s table; the record keeps them all

std::atomic<bool> g_cancel{false};
int g_argc = 0;  // the command line, for the workers of `run --nproc`
char** g_argv = nullptr;

std::atomic<int> g_interrupts{0};
bool g_announce_interrupts = true;  // a rank of a job this program launched stays quiet: its launcher speaks

void say_from_handler(std::string_view text) {
    if (g_announce_interrupts) (void)!::write(STDERR_FILENO, text.data(), text.size());
}

// The first Ctrl-C (or kill, or a closed terminal) ends the run after its current step, and it is saved as
// cancelled; a second one quits at once and says what that discards. Only async-signal-safe calls here.
extern "C" void on_interrupt(int /*signal_number*/) {
    g_cancel.store(true);
    if (g_interrupts.fetch_add(1) == 0) {
        say_from_handler("te-bench: stopping after the current step; the run is saved as cancelled, and no further "
                         "run starts. Ctrl-C again quits at once without saving it.\n");
        return;
    }
    tewb::cli::kill_running_ranks();
    say_from_handler("te-bench: quit at once: the run in progress is not saved; runs saved before it are kept.\n");
    ::_exit(kExitInterrupted);
}

void stop_cleanly_on_signals() {
    const auto value = [](const char* name) { const char* v = std::getenv(name); return std::string_view(v == nullptr ? "" : v); };
    g_announce_interrupts = value("TEWB_DIST_RECORD").empty() && (value("RANK").empty() || value("RANK") == "0");
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal_number, on_interrupt);
}

std::filesystem::path store_location(const std::string& store_path) {
    if (!store_path.empty()) return store_path;
    try {
        return RunStore::default_path();
    } catch (const DataError& e) {
        throw ConfigError(e.what());
    }
}

// The store every output is checked against: the one in use, or the default one even with --no-store
// (an export over it would destroy the history all the same). Nothing when no location is known.
std::optional<std::filesystem::path> store_to_protect(const std::string& store_path) {
    try {
        return store_location(store_path);
    } catch (const ConfigError&) {
        return std::nullopt;
    }
}

void add_output(std::vector<OutputRequest>& outputs, const char* flag, const std::string& path) {
    if (!path.empty()) outputs.push_back({flag, path});
}

std::vector<OutputRequest> outputs_of(const RunFlags& f) {
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--json", f.json_path);
    add_output(outputs, "--csv", f.csv_path);
    add_output(outputs, "--fp8-csv", f.fp8_csv_path);
    add_output(outputs, "--profile", f.profile_path);
    return outputs;
}

cli::CheckedStdout* g_stdout = nullptr;  // std::cout's buffer, installed by main

// Output that never arrived is an error, not a success: /dev/full, a closed stdout, a full disk.
void check_standard_output() {
    if (g_stdout == nullptr) return;
    if (const std::string error = g_stdout->flush_and_check(); !error.empty()) {
        throw DataError("standard output: write failed (" + error + ")");
    }
}

std::string json_text(const nlohmann::json& document) {
    return document.dump(2) + "\n";
}

void write_output(const std::string& path, const std::string& content) {
    if (path == "-") {
        std::cout << content;
        check_standard_output();
    } else {
        write_file_atomically(path, content);
    }
}

// Where the tables go: standard error when an output is standard output ('-', /dev/stdout, ...), so standard
// output carries that output alone and stays readable as JSON or CSV.
std::ostream& table_stream(const std::vector<OutputRequest>& outputs) {
    for (const OutputRequest& output : outputs) {
        if (is_standard_output(output.path)) return std::cerr;
    }
    return std::cout;
}

// Opened before training, so an unusable store is a bad argument rather than a run lost at the end.
std::unique_ptr<RunStore> open_store_for_runs(bool no_store, const std::string& store_path) {
    if (no_store) {
        return nullptr;
    }
    try {
        return std::make_unique<RunStore>(store_location(store_path));
    } catch (const DataError& e) {
        throw ConfigError(std::string("--store: ") + e.what() + "; pass --store PATH or --no-store");
    }
}

// Saves a finished, cancelled or failed run. A run that could not be saved is kept as a JSON file (named
// in the message) and makes the command exit with kExitNotSaved; the other outputs are still written.
bool store_run(const RunStore* store, const RunRecord& record) {
    if (store == nullptr) {
        return true;
    }
    const SaveResult saved = save_run(store->path(), record);
    if (saved.id) {
        std::fprintf(stderr, "saved as run %lld in %s\n", static_cast<long long>(*saved.id), store->path().c_str());
        return true;
    }
    std::fprintf(stderr, "te-bench: error: %s\n", saved.failure_message().c_str());
    return false;
}

RunRecord train_one(const Trainer& trainer, const RunConfig& config, const std::string& profile_trace = {}) {
    cli::ProgressBar progress(isatty(STDERR_FILENO) != 0);
    TrainerCallbacks callbacks;
    callbacks.profile_trace = profile_trace;
    callbacks.on_start = [&](const RunRecord& header) { progress.start(header); };
    callbacks.on_step = [&](const StepMetrics& step) { progress.step(step); };
    RunRecord record = trainer.run(config, callbacks, &g_cancel);
    progress.finish();
    if (record.status == RunStatus::Failed) {
        std::fprintf(stderr, "te-bench: run '%s' failed: %s\n", record.config.name.c_str(), record.message.c_str());
    } else if (record.status == RunStatus::Cancelled) {
        std::fprintf(stderr, "te-bench: run '%s' cancelled after %zu steps\n", record.config.name.c_str(), record.steps.size());
    }
    return record;
}

int exit_code_for(const std::vector<RunRecord>& runs, bool all_saved) {
    for (const RunRecord& r : runs) {
        if (r.status == RunStatus::Cancelled) return kExitInterrupted;
    }
    if (!all_saved) return kExitNotSaved;
    for (const RunRecord& r : runs) {
        if (r.status == RunStatus::Failed) return kExitFailure;
    }
    return 0;
}

std::string describe_device(const DeviceInfo& d, const Capability& cap) {
    std::ostringstream out;
    out << "Mode: " << to_string(cap.mode) << "\n";
    for (const std::string& reason : cap.reasons()) {
        out << "  " << reason << "\n";
    }
    if (d.has_gpu()) {
        out << "GPU: " << d.gpu_name << " (compute capability " << d.compute_capability->to_string() << ", " << d.sm_count
            << " SMs";
        if (d.gpu_count > 1) out << "; device 0 of " << d.gpu_count;
        out << ")\n";
        out << "Memory: " << format_bytes(d.memory_total_bytes) << " total, " << format_bytes(d.memory_free_bytes) << " free\n";
    } else {
        out << "GPU: none usable (" << d.gpu_error << ")\n";
    }
    const auto value = [](const std::string& text) { return text.empty() ? std::string("-") : text; };
    out << "Driver: " << value(d.driver_version) << "\n";
    out << "CUDA runtime: " << value(d.cuda_runtime_version) << "  cuBLASLt: " << value(d.cublaslt_version)
        << "  LibTorch: " << value(d.libtorch_version) << "\n";
    if (!d.cublaslt_library.empty()) out << "cuBLASLt loaded from: " << d.cublaslt_library << "\n";
    out << "CPU: " << d.cpu_model << " (" << d.cpu_threads << " threads)\n";
    const BuildInfo& build = build_info();
    out << "Build: te-workbench " << build.version << " (" << build.commit << ", " << build.build_type
        << (build.cuda_kernels ? ", CUDA kernels" : ", no CUDA kernels") << ")\n";
    return out.str();
}

std::int64_t parse_run_id(const std::string& text) {
    const int id = parse_int("ID", text);
    if (id <= 0) {
        throw ConfigError("ID '" + text + "': out of range; allowed: 1 to " + std::to_string(std::numeric_limits<int>::max()) +
                          " (a run number from `te-bench history list`)");
    }
    return id;
}

RunRecord load_stored(RunStore& store, std::int64_t id) {
    std::optional<RunRecord> record = store.get(id);
    if (!record) {
        throw ConfigError("ID " + std::to_string(id) + ": no such run in " + store.path().string() +
                          "; see `te-bench history list`");
    }
    return *record;
}


int run_info(const Commands& c) {
    const DeviceInfo device = detect_device();
    const Capability capability = classify(device);
    std::cout << (c.info_json ? json_text(capability_json(device, capability)) : describe_device(device, capability));
    return 0;
}

int run_selftest(const Commands& c) {
    const SelfTestReport report = run_self_test(detect_device());
    std::cout << (c.selftest_json ? self_test_json_text(report) : render_self_test_table(report));
    if (!report.ran) return kExitSkipped;
    return report.passed() ? 0 : kExitFailure;
}

// Runs `configs` `repeats` times each, alternating (A B A B …), every repeat of one configuration in one
// group. Stops at a signal; saves each run as it ends.
std::vector<RunRecord> train_repeated(const Trainer& trainer, const std::vector<RunConfig>& configs, int repeats,
                                      const RunStore* store, bool& all_saved, const std::string& profile_trace = {}) {
    std::vector<std::string> groups;
    for (std::size_t i = 0; i < configs.size(); ++i) groups.push_back(repeats > 1 ? make_run_id() : std::string());
    std::vector<RunRecord> runs;
    for (const auto& [index, repeat] : alternating_order(configs.size(), repeats)) {
        if (g_cancel.load()) break;
        if (repeats > 1) {
            std::fprintf(stderr, "repeat %d of %d%s%s\n", repeat, repeats, configs[index].name.empty() ? "" : ": ",
                         configs[index].name.c_str());
        }
        RunRecord record = train_one(trainer, configs[index], profile_trace);
        if (repeats > 1) record.repeat = RepeatInfo{groups[index], repeat, repeats};
        all_saved = store_run(store, record) && all_saved;
        runs.push_back(std::move(record));
    }
    return runs;
}

// `run --ledger`: the first layer's rows per module, the rows outside the layers, and the totals.
std::string ledger_report(const RunRecord& run, bool named) {
    if (!run.execution.ledger) return "\nno launch ledger: the run ended before its measured step\n";
    const Ledger& ledger = *run.execution.ledger;
    std::string out = "\nlaunch ledger" + (named ? " of " + printable_text(display_name(run)) : std::string()) + ", layer 0 of " +
                      std::to_string(ledger.layers) + " (every layer's rows are the same shape):\n";
    out += ledger_layer_table(ledger, 0);
    out += "outside the layers:\n" + ledger_outside_table(ledger);
    out += "(* launch count not known: at least one launch per call counted)\n";
    return out + ledger_totals_text(run, false);
}

// `run --profile` (and `history show` of such a run): the traced step's top kernels.
std::string kernel_profile_text(const RunRecord& run, bool named) {
    const std::optional<KernelProfile>& profile = run.execution.kernel_profile;
    if (!profile) {
        if (run.execution.kernel_profile_error.empty()) return {};
        return "\nkernel trace asked for and not written: " + printable_text(run.execution.kernel_profile_error) + "\n";
    }
    return "\ntop kernels" + (named ? " of " + printable_text(display_name(run)) : std::string()) + " of step " +
           std::to_string(profile->step) + " (" + profile->source + "; not a timed step), trace in " +
           printable_text(profile->trace_path) + ":\n" + top_kernels_table(*profile, kTopKernelsShown);
}

// Writes a run's outputs (--json, --csv, --fp8-csv) and its tables.
void report_runs(const RunFlags& flags, const std::vector<RunRecord>& runs, int repeats) {
    if (!flags.json_path.empty()) write_output(flags.json_path, records_to_json_text(runs));
    if (!flags.csv_path.empty()) write_output(flags.csv_path, steps_csv_text(runs));
    if (!flags.fp8_csv_path.empty()) write_output(flags.fp8_csv_path, fp8_csv_text(runs));
    std::ostream& out = table_stream(outputs_of(flags));
    out << render_summary_table(runs, std::nullopt);
    if (repeats > 1) out << "\n" << render_group_table(runs, group_runs(runs, std::nullopt));
    if (const std::string breakdown = render_breakdown_table(runs); !breakdown.empty()) out << "\n" << breakdown;
    if (const std::string job = render_job_summary(runs.back()); !job.empty()) out << "\n" << job;
    for (const RunRecord& run : runs) out << te_path_text(run, runs.size() > 1);
    out << render_fp8_summary(runs.back());
    if (flags.ledger) {
        for (const RunRecord& run : runs) out << ledger_report(run, runs.size() > 1);
    }
    for (const RunRecord& run : runs) {
        if (run.execution.kernel_profile) out << kernel_profile_text(run, runs.size() > 1);
        if (!run.execution.kernel_profile_error.empty()) {
            std::fprintf(stderr, "te-bench: no kernel trace: %s\n", printable_text(run.execution.kernel_profile_error).c_str());
        }
    }
}

// A trace that was asked for and not written fails the command, like any output that could not be written.
int with_profile_outcome(const std::vector<RunRecord>& runs, int code) {
    if (code != 0) return code;
    for (const RunRecord& run : runs) {
        if (!run.execution.kernel_profile_error.empty()) return kExitFailure;
    }
    return code;
}

// `run --profile`: one trace file per process run, written by this process.
void check_profile_flag(const RunFlags& flags, bool data_parallel) {
    if (flags.profile_path.empty()) return;
    if (flags.profile_path == "-") {
        throw ConfigError("--profile -: a kernel trace goes to a file (Perfetto and chrome://tracing open it), not to standard output");
    }
    if (data_parallel) {
        throw ConfigError("--profile with --nproc or under a launcher: a trace is of one process; run without --nproc and "
                          "outside the launcher");
    }
    // The record keeps the path as JSON text.
    if (const std::optional<std::string> problem = text_problem(flags.profile_path, 4096)) {
        throw ConfigError("--profile " + printable_text(flags.profile_path) + ": " + *problem + "; allowed: a UTF-8 path");
    }
    // A trace of megabytes of JSON is never meant for the terminal or a pipe (check_outputs refuses the regular
    // file the output is redirected to, for every output).
    if (const std::optional<std::string> stream = standard_stream_at(flags.profile_path, /*regular_files_only=*/false)) {
        throw ConfigError("--profile " + printable_text(flags.profile_path) + ": is the " + *stream + "; a kernel trace goes to a file");
    }
    if (repeat_from_flags(flags) > 1) {
        throw ConfigError("--profile with --repeat " + flags.repeat + ": one trace file is one run; repeat without --profile, "
                          "then run once with it");
    }
}

// Under a launcher the environment describes the job; flags that say otherwise are refused before anything
// starts (exit 2), on every rank alike, rather than found out in the rendezvous.
void check_flags_agree_with_launcher(const RunFlags& flags, const RunConfig& requested, const WorkerEnv& env) {
    if (requested.dist.enabled() && requested.dist.nproc != env.world_size) {
        throw ConfigError("--nproc " + flags.nproc + ": disagrees with the launcher's environment variable WORLD_SIZE '" +
                          std::to_string(env.world_size) + "'; allowed: --nproc " + std::to_string(env.world_size) +
                          ", or leave --nproc out under a launcher");
    }
    if (!flags.master_port.empty()) {
        const int port = parse_int("--master-port", flags.master_port);
        if (port != env.master_port) {
            const char* given = std::getenv("MASTER_PORT");
            throw ConfigError("--master-port " + flags.master_port + ": disagrees with the launcher's " +
                              (given != nullptr ? "environment variable MASTER_PORT '" + std::string(given) + "'"
                                                : "default port " + std::to_string(env.master_port) + " (MASTER_PORT unset)") +
                              "; allowed: --master-port " + std::to_string(env.master_port) +
                              ", or leave --master-port out under a launcher (MASTER_PORT names the port)");
        }
    }
}

// One rank of a data-parallel job (the environment says which). Rank 0 reports the job: to the launcher
// through TEWB_DIST_RECORD when `te-bench run --nproc` started it, else like any run (store, outputs,
// tables). Under an outside launcher the other ranks write the files they are given (--json, --csv,
// --fp8-csv: their own records; give each rank its own path) and say on stderr when something went wrong.
int run_rank(const Commands& c, RunConfig requested, const WorkerEnv& env) {
    const RunFlags& flags = c.run_flags;
    if (!requested.dist.enabled()) requested.dist.nproc = env.world_size;
    const char* record_path = std::getenv("TEWB_DIST_RECORD");
    const bool reports = env.rank == 0 && record_path == nullptr;
    const bool own_files = record_path == nullptr;
    if (own_files) check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    resolve(requested, trainer.device(), MemoryScope::OneRank);  // the launcher (if ours) checked the whole job
    const std::unique_ptr<RunStore> store = reports ? open_store_for_runs(flags.no_store, c.store_path) : nullptr;
    stop_cleanly_on_signals();
    cli::ProgressBar progress(env.rank == 0 && isatty(STDERR_FILENO) != 0);
    TrainerCallbacks callbacks;
    // Each rank says when it enters the rendezvous and when it trains: where a job stands (and where it
    // stopped) can be read off its output.
    callbacks.on_start = [&](const RunRecord& header) {
        if (header.status != RunStatus::Failed) std::fprintf(stderr, "rank %d: training\n", env.rank);
        progress.start(header);
    };
    callbacks.on_step = [&](const StepMetrics& step) { progress.step(step); };
    std::fprintf(stderr, "rank %d: joining the job at %s:%d (%d processes)\n", env.rank, env.master_addr.c_str(),
                 env.master_port, env.world_size);
    const RunRecord record = run_as_rank(trainer, requested, env, callbacks, &g_cancel);
    progress.finish();
    if (record.status != RunStatus::Finished && !record.message.empty()) {
        std::fprintf(stderr, "te-bench: %s\n", record.message.c_str());
    }
    if (env.rank == 0 && record_path != nullptr) {
        write_file_atomically(record_path, record_to_json_text(record));
    } else if (reports) {
        const bool saved = store_run(store.get(), record);
        report_runs(flags, {record}, 1);
        return exit_code_for({record}, saved);
    } else if (own_files) {
        if (!flags.json_path.empty() && flags.json_path != "-") write_output(flags.json_path, record_to_json_text(record));
        if (!flags.csv_path.empty() && flags.csv_path != "-") write_output(flags.csv_path, steps_csv_text({record}));
        if (!flags.fp8_csv_path.empty() && flags.fp8_csv_path != "-") write_output(flags.fp8_csv_path, fp8_csv_text({record}));
    }
    return record.status == RunStatus::Failed ? kExitFailure : record.status == RunStatus::Cancelled ? kExitInterrupted : 0;
}

// `te-bench run --nproc N`: the 1-process run the scaling efficiency is measured against (unless
// --no-scaling-baseline), then the job's N processes (cli/LocalJob); the job's record comes from rank 0,
// or, when rank 0 left none, is made here as a failed run naming the ranks that failed.
int run_local_job_command(const Commands& c, const RunConfig& requested) {
    const RunFlags& flags = c.run_flags;
    if (!flags.repeat.empty() && repeat_from_flags(flags) != 1) {
        throw ConfigError("--repeat with --nproc: a data-parallel job runs once; repeat the command instead");
    }
    check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    const RunConfig resolved = resolve(requested, trainer.device());
    int port = requested.dist.enabled() && !flags.master_port.empty() ? parse_int("--master-port", flags.master_port) : 0;
    if (!flags.master_port.empty() && (port < 1 || port > 65535)) {
        throw ConfigError("--master-port " + flags.master_port + ": out of range; allowed: 1 to 65535");
    }
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    bool saved = true;
    std::vector<RunRecord> runs;
    if (!flags.no_scaling_baseline) {
        RunConfig single = requested;
        single.dist = DistSettings{};
        single.name = resolve(single, trainer.device()).name + " (1 process)";
        std::fprintf(stderr, "the 1-process run the job's scaling is measured against:\n");
        runs.push_back(train_one(trainer, single));
        saved = store_run(store.get(), runs.back()) && saved;
        if (g_cancel.load()) return kExitInterrupted;
    }
    char record_template[] = "/tmp/te-bench-job-XXXXXX";
    const int fd = ::mkstemp(record_template);
    if (fd < 0) throw DataError(std::string("cannot create a temporary file for the job's record: ") + std::strerror(errno));
    ::close(fd);
    ::unlink(record_template);  // rank 0 writes it atomically; its absence means rank 0 left no record
    LocalJob job;
    job.nproc = resolved.dist.nproc;
    job.master_port = port > 0 ? port : free_local_port();
    job.record_path = record_template;
    std::fprintf(stderr, "data-parallel job: %d processes, %s, rendezvous at 127.0.0.1:%d\n", job.nproc,
                 std::string(to_string(resolved.dist.backend)).c_str(), job.master_port);
    const LocalJobOutcome outcome = run_local_job(g_argc, g_argv, job, g_cancel);
    RunRecord record;
    std::error_code ignored;
    const bool rank0_reported = std::filesystem::exists(record_template, ignored);
    if (rank0_reported) {
        record = read_record_file(record_template);
        std::filesystem::remove(record_template, ignored);
    } else {
        record = make_run_header(resolved, trainer.device());
    }
    if (!outcome.all_ok() || !rank0_reported) {
        // Rank 0's own account of a failure leads (it says what the job was doing); the launcher's, which
        // names the rank that ended first and how, follows. A rank 0 the launcher stopped says nothing more.
        const std::string launcher = outcome.all_ok() ? std::string("rank 0 left no record") : outcome.describe();
        const bool rank0_failed = rank0_reported && record.status == RunStatus::Failed && !record.message.empty();
        mark_failed(record, ErrorKind::Distributed, rank0_failed ? record.message + " (" + launcher + ")" : launcher);
        std::fprintf(stderr, "te-bench: the job failed: %s\n", record.message.c_str());
    }
    if (!runs.empty() && record.execution.dist && runs.front().summary.mean_ms && record.summary.mean_ms &&
        *record.summary.mean_ms > 0 && record.status == RunStatus::Finished) {
        record.execution.dist->scaling_efficiency = *runs.front().summary.mean_ms / *record.summary.mean_ms;
        record.execution.dist->baseline_run_id = runs.front().id;
    }
    saved = store_run(store.get(), record) && saved;
    runs.push_back(record);
    report_runs(flags, runs, 1);
    return exit_code_for(runs, saved);
}

int run_one(const Commands& c) {
    const RunFlags& flags = c.run_flags;
    const RunConfig requested = config_from_flags(flags);
    check_fp8_flags_apply(flags, requested);
    const std::optional<WorkerEnv> env = worker_env();
    if (env) check_flags_agree_with_launcher(flags, requested, *env);
    check_profile_flag(flags, env.has_value() || requested.dist.enabled());
    if (env) return run_rank(c, requested, *env);
    if (requested.dist.enabled()) return run_local_job_command(c, requested);
    const int repeats = repeat_from_flags(flags);
    check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    resolve(requested, trainer.device());  // every argument error surfaces before training starts
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    bool saved = true;
    const std::vector<RunRecord> runs = train_repeated(trainer, {requested}, repeats, store.get(), saved, flags.profile_path);
    if (runs.empty()) {
        std::fprintf(stderr, "te-bench: run cancelled before it began\n");
        return kExitInterrupted;
    }
    report_runs(flags, runs, repeats);
    return with_profile_outcome(runs, exit_code_for(runs, saved));
}

int run_compare(const Commands& c) {
    const RunFlags& flags = c.compare_flags;
    RunConfig base = config_from_flags(flags);
    base.te_impl = te_impl_from_flags(flags);  // for the te rows: the plan gives the torch rows auto
    std::vector<OutputRequest> outputs = outputs_of(flags);
    add_output(outputs, "--summary-csv", c.compare_summary_csv);
    check_outputs(outputs, store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    const std::vector<PlannedRun> plan = plan_comparison(base, trainer.device());
    if (plan.front().skip_reason) throw ConfigError(*plan.front().skip_reason);
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    const int repeats = repeat_from_flags(flags);
    std::vector<RunConfig> configs;
    std::vector<std::string> skipped;
    for (const PlannedRun& row : plan) {
        if (row.skip_reason) {
            skipped.push_back(row.config.name + ": " + *row.skip_reason);
        } else {
            configs.push_back(row.config);
        }
    }
    bool all_saved = true;
    const std::vector<RunRecord> runs = train_repeated(trainer, configs, repeats, store.get(), all_saved);
    if (runs.empty()) {  // a signal arrived before the first run began: nothing ran, nothing to write
        std::fprintf(stderr, "te-bench: compare cancelled before its first run\n");
        return kExitInterrupted;
    }
    if (!flags.json_path.empty()) {
        nlohmann::json document{{"baseline", runs.front().id}, {"runs", nlohmann::json::array()}, {"skipped", skipped}};
        for (const RunRecord& r : runs) document["runs"].push_back(to_json(r));
        write_output(flags.json_path, json_text(document));
    }
    if (!flags.csv_path.empty()) write_output(flags.csv_path, steps_csv_text(runs));
    if (!flags.fp8_csv_path.empty()) write_output(flags.fp8_csv_path, fp8_csv_text(runs));
    if (!c.compare_summary_csv.empty()) write_output(c.compare_summary_csv, summary_csv_text(runs, 0));
    std::ostream& out = table_stream(outputs);
    out << render_summary_table(runs, 0);
    if (repeats > 1) out << "\n" << render_group_table(runs, group_runs(runs, 0));
    if (const std::string breakdown = render_breakdown_table(runs); !breakdown.empty()) out << "\n" << breakdown;
    if (!skipped.empty()) {
        out << "\nNot run here:\n";
        for (const std::string& line : skipped) out << "  " << line << "\n";
    }
    return exit_code_for(runs, all_saved);
}

int run_sweep(const Commands& c) {
    const RunFlags& flags = c.sweep_flags;
    const SweepSpec spec = sweep_from_flags(flags, c.sweep_precisions);
    const bool fp8 = std::find(spec.precisions.begin(), spec.precisions.end(), Precision::Fp8) != spec.precisions.end();
    if (flags.fp8_flags_given() && !fp8) {
        throw ConfigError("--recipe/--fp8-format/--amax-history-len/--amax-algo/--margin: FP8 settings need fp8 in --precisions");
    }
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--csv", flags.csv_path);
    add_output(outputs, "--json", flags.json_path);
    check_outputs(outputs, store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    const std::vector<SweepRun> plan = plan_sweep(spec, trainer.device());
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    std::vector<std::optional<RunRecord>> records(plan.size());
    std::vector<RunRecord> ran;
    bool all_saved = true;
    std::size_t to_run = 0;
    for (const SweepRun& run : plan) to_run += run.skip_reason ? 0 : 1;
    std::size_t done = 0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        if (plan[i].skip_reason) {
            std::fprintf(stderr, "skipped %s: %s\n", plan[i].config.name.c_str(), plan[i].skip_reason->c_str());
            continue;
        }
        if (g_cancel.load()) break;
        std::fprintf(stderr, "sweep run %zu of %zu: %s\n", ++done, to_run, plan[i].config.name.c_str());
        records[i] = train_one(trainer, plan[i].config);
        all_saved = store_run(store.get(), *records[i]) && all_saved;
        ran.push_back(*records[i]);
    }
    if (ran.empty() && to_run > 0) {
        std::fprintf(stderr, "te-bench: sweep cancelled before its first run\n");
        return kExitInterrupted;
    }
    if (to_run == 0) std::fprintf(stderr, "te-bench: no size of the sweep can run on this machine (see the reasons above)\n");
    const SweepResult result = analyze_sweep(plan, records);
    if (!flags.csv_path.empty()) write_output(flags.csv_path, sweep_csv_text(result));
    if (!flags.json_path.empty()) write_output(flags.json_path, records_to_json_text(ran));
    table_stream(outputs) << render_sweep_table(result);
    return ran.empty() ? kExitFailure : exit_code_for(ran, all_saved);
}

int run_recipe(const Commands& c) {
    RecipeReplay replay;
    if (!c.replay_recipe.empty()) replay.scaling = parse_name<ScalingKind>("--recipe", c.replay_recipe);
    if (!c.replay_dtype.empty()) replay.dtype = parse_name<Fp8Dtype>("--dtype", c.replay_dtype);
    if (!c.replay_history_len.empty()) replay.history_len = parse_int("--history-len", c.replay_history_len);
    if (!c.replay_algo.empty()) replay.algo = parse_name<AmaxAlgo>("--algo", c.replay_algo);
    if (!c.replay_margin.empty()) replay.margin = parse_int("--margin", c.replay_margin);
    if (!c.replay_calibrate.empty()) {
        replay.calibrate_first_step = parse_on_off("--calibrate-first-step", c.replay_calibrate);
        if (replay.scaling != ScalingKind::Delayed) throw ConfigError("--calibrate-first-step goes with --recipe delayed");
    }
    replay.amaxes = parse_amax_list("--amax", c.replay_amax);
    if (replay.scaling == ScalingKind::Block) {
        // Nothing to replay: a block's scale depends on that block alone, in this step alone.
        std::cout << block_scaling_explanation(c.replay_json);
        return 0;
    }
    validate(replay);
    const std::vector<RecipeReplayStep> steps =
        replay_recipe(replay.scaling, replay.dtype, replay.history_len, replay.algo, replay.margin, replay.amaxes,
                      replay.calibrate_first_step);
    std::cout << (c.replay_json ? replay_json_text(replay, steps) : replay_table_text(replay, steps));
    return 0;
}

int run_history_list(const Commands& c, RunStore& store) {
    const std::vector<StoredRun> runs = store.list();
    if (c.list_json) {
        nlohmann::json document = nlohmann::json::array();
        for (const StoredRun& r : runs) document.push_back(to_json(r));
        std::cout << json_text(document);
        return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const StoredRun& r : runs) {
        rows.push_back({std::to_string(r.id), r.created_at, display_name(r.name, r.fp8_emulated), r.backend,
                        precision_label(r.precision, r.fp8_emulated), r.device, r.status,
                        std::to_string(r.steps), format_fixed(r.median_ms, 2), format_fixed(r.final_loss, 4),
                        r.peak_mem_bytes > 0 ? format_bytes(r.peak_mem_bytes) : "-"});
    }
    std::cout << render_text_table({"id", "created (UTC)", "name", "backend", "precision", "device", "status", "steps",
                                    "median ms", "final loss", "peak mem"},
                                   rows);
    std::cerr << runs.size() << " runs in " << store.path().string() << "\n";
    return 0;
}

int run_history_show(const Commands& c, RunStore& store) {
    const RunRecord record = load_stored(store, parse_run_id(c.show_id));
    if (c.show_json) {
        std::cout << record_to_json_text(record);
    } else {
        std::cout << render_summary_table({record}, std::nullopt) << te_path_text(record, false) << render_fp8_summary(record)
                  << ledger_totals_text(record, false) << kernel_profile_text(record, false);
        if (!record.message.empty()) std::cout << "message: " << printable_text(record.message) << "\n";
    }
    return 0;
}

int run_history_delete(const Commands& c, RunStore& store) {
    std::vector<std::int64_t> ids;
    for (const std::string& text : c.delete_ids) ids.push_back(parse_run_id(text));
    for (const std::int64_t id : ids) {  // all exist, or delete none; a damaged record is deleted like any other
        if (!store.contains(id)) {
            throw ConfigError("ID " + std::to_string(id) + ": no such run in " + store.path().string() +
                              "; see `te-bench history list`");
        }
    }
    for (const std::int64_t id : ids) {
        store.remove(id);
        std::cerr << "deleted run " << id << "\n";
    }
    return 0;
}

// The import rule is core's (check_import): all or nothing; this says what happened to each record.
int run_history_import(const Commands& c, RunStore& store) {
    std::vector<ImportRecord> records;
    try {
        records = check_import(c.import_paths, &store);
    } catch (const ImportError& e) {
        throw ConfigError(std::string("FILE ") + e.what() + "; nothing was imported" +
                          (e.remedy().empty() ? std::string() : " (" + e.remedy() + ")"));
    } catch (const DataError& e) {
        throw ConfigError(std::string("FILE ") + e.what() + "; nothing was imported");
    }
    const std::vector<std::int64_t> ids = save_import(records, store);
    std::size_t next = 0;
    for (const ImportRecord& item : records) {
        const std::string name = printable_text(item.record.config.name);
        if (item.stored_as) {
            std::cerr << "already stored: " << name << " is run " << *item.stored_as << " (unchanged)\n";
        } else {
            std::cerr << "imported " << name << " as run " << ids[next++] << "\n";
        }
    }
    std::cerr << ids.size() << " imported, " << records.size() - ids.size() << " already stored, in "
              << store.path().string() << "\n";
    return 0;
}

int run_history_export(const Commands& c, RunStore& store) {
    if (c.export_json.empty() && c.export_csv.empty() && c.export_summary_csv.empty() && c.export_fp8_csv.empty()) {
        throw ConfigError(
            "history export: nothing to write; allowed: one or more of --json PATH, --csv PATH, --summary-csv PATH, "
            "--fp8-csv PATH");
    }
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--json", c.export_json);
    add_output(outputs, "--csv", c.export_csv);
    add_output(outputs, "--summary-csv", c.export_summary_csv);
    add_output(outputs, "--fp8-csv", c.export_fp8_csv);
    check_outputs(outputs, store.path());
    std::vector<std::int64_t> ids;
    for (const std::string& text : c.export_ids) ids.push_back(parse_run_id(text));
    std::vector<RunRecord> records;
    std::size_t damaged = 0;
    for (const std::int64_t id : ids) {
        try {
            records.push_back(load_stored(store, id));
        } catch (const DamagedRecordError& e) {  // the others are still exported
            std::fprintf(stderr, "te-bench: skipped run %lld: %s\n", static_cast<long long>(e.id()), e.what());
            ++damaged;
        }
    }
    if (records.empty() && damaged > 0) throw DataError("history export: every run asked for is damaged; nothing was written");
    if (!c.export_json.empty()) write_output(c.export_json, records_to_json_text(records));
    if (!c.export_csv.empty()) write_output(c.export_csv, steps_csv_text(records));
    if (!c.export_summary_csv.empty()) write_output(c.export_summary_csv, summary_csv_text(records, 0));
    if (!c.export_fp8_csv.empty()) write_output(c.export_fp8_csv, fp8_csv_text(records));
    return 0;
}

int run_history(const Commands& c) {
    const bool writes = c.history_delete->parsed() || c.history_import->parsed();
    RunStore store(store_location(c.store_path), writes ? RunStore::Access::ReadWrite : RunStore::Access::ReadOnly);
    if (c.history_list->parsed()) return run_history_list(c, store);
    if (c.history_show->parsed()) return run_history_show(c, store);
    if (c.history_delete->parsed()) return run_history_delete(c, store);
    if (c.history_import->parsed()) return run_history_import(c, store);
    return run_history_export(c, store);
}

// The command that was given; errors become exit statuses: 2 a bad argument, 1 anything else.
int run_command(const Commands& c) {
    if (c.info->parsed()) return run_info(c);
    if (c.selftest->parsed()) return run_selftest(c);
    if (c.run->parsed()) return run_one(c);
    if (c.compare->parsed()) return run_compare(c);
    if (c.sweep->parsed()) return run_sweep(c);
    if (c.recipe->parsed()) return run_recipe(c);
    return run_history(c);
}

int dispatch(const Commands& c) {
    try {
        const int status = run_command(c);
        check_standard_output();
        return status;
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "te-bench: %s\n", e.what());
        return kExitUsage;
    } catch (const Error& e) {
        std::fprintf(stderr, "te-bench: %s\n", e.what());
        return kExitFailure;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "te-bench: unexpected error: %s\n", e.what());
        return kExitFailure;
    }
}

}  // namespace

int main(int argc, char** argv) {
    g_argc = argc;
    g_argv = argv;
    tewb::occupy_standard_descriptors();
    cli::CheckedStdout checked_stdout;
    g_stdout = &checked_stdout;
    CLI::App app{"te-bench: train MiniGPT with LibTorch and TE-style modules, and measure it"};
    Commands commands;
    define_commands(app, commands);
    if (const std::optional<int> status = parse_arguments(app, commands, argc, argv)) {
        if (const std::string error = checked_stdout.flush_and_check(); *status == 0 && !error.empty()) {
            std::fprintf(stderr, "te-bench: standard output: write failed (%s)\n", error.c_str());  // --help went nowhere
            return kExitFailure;
        }
        return *status;
    }
    return dispatch(commands);
}
