// te-bench run, compare and sweep: train, report, store and write what was asked for.
#include "RunCommands.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "CommandSupport.h"
#include "ProgressBar.h"
#include "Process.h"
#include "RunChecks.h"
#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"
#include "core/config/ComparePlan.h"
#include "core/data/TokenFile.h"
#include "core/dist/WorkerEnv.h"
#include "core/results/AtomicFile.h"
#include "core/results/Comparison.h"
#include "core/results/Fp8Summary.h"
#include "core/ledger/GemmJournal.h"
#include "core/results/KernelProfile.h"
#include "core/results/LedgerReport.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/RunGroups.h"
#include "core/results/SweepResult.h"
#include "core/train/DataParallelJob.h"
#include "core/train/DataParallelRun.h"
#include "core/train/Trainer.h"

namespace tewb::cli {

namespace {

RunRecord train_one(const Trainer& trainer, const ResolvedRun& run, const std::string& profile_trace = {}) {
    cli::ProgressBar progress(isatty(STDERR_FILENO) != 0);
    TrainerCallbacks callbacks;
    callbacks.profile_trace = profile_trace;
    callbacks.on_start = [&](const RunRecord& header) { progress.start(header); };
    callbacks.on_step = [&](const StepMetrics& step) { progress.step(step); };
    RunRecord record = trainer.run(run, callbacks, &cancel_requested());
    progress.finish();
    if (record.status == RunStatus::Failed) {
        std::fprintf(stderr, "te-bench: run '%s' failed: %s\n", record.config.name.c_str(), record.message.c_str());
    } else if (record.status == RunStatus::Cancelled) {
        std::fprintf(stderr, "te-bench: run '%s' cancelled after %zu steps\n", record.config.name.c_str(), record.steps.size());
    }
    return record;
}

// Runs `configs` `repeats` times each, alternating (A B A B …), every repeat of one configuration in one
// group. Stops at a signal; saves each run as it ends.
struct RunToTrain {
    ResolvedRun run;
    std::string asked_name;  // the name given (--name, a comparison's row), empty when none: the repeat lines name none
};

std::vector<RunRecord> train_repeated(const Trainer& trainer, const std::vector<RunToTrain>& configs, int repeats,
                                      const RunStore* store, bool& all_saved, const std::string& profile_trace = {}) {
    std::vector<std::string> groups;
    for (std::size_t i = 0; i < configs.size(); ++i) groups.push_back(repeats > 1 ? make_run_id() : std::string());
    std::vector<RunRecord> runs;
    for (const auto& [index, repeat] : alternating_order(configs.size(), repeats)) {
        if (cancel_requested().load()) break;
        if (repeats > 1) {
            const std::string& name = configs[index].asked_name;
            std::fprintf(stderr, "repeat %d of %d%s%s\n", repeat, repeats, name.empty() ? "" : ": ", name.c_str());
        }
        RunRecord record = train_one(trainer, configs[index].run, profile_trace);
        if (repeats > 1) record.repeat = RepeatInfo{groups[index], repeat, repeats};
        all_saved = store_run(store, record) && all_saved;
        runs.push_back(std::move(record));
    }
    return runs;
}

// Whether two layers' rows name the same ops with the same calls and launches.
bool same_layer_ops(const Ledger& ledger, int a, int b) {
    const auto ops = [&](int layer) {
        std::vector<std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>> rows;
        for (const LedgerRow& r : ledger.rows) {
            if (r.layer == layer) rows.emplace_back(r.scope, r.op, r.calls, r.launches);
        }
        return rows;
    };
    return ops(a) == ops(b);
}

// `run --ledger`: the last layer's rows per module (a layer as every layer after the first is: on te's fused path
// the first has no Linear before it to hand its LayerNorm's gradient to), the rows outside the layers, and the totals.
std::string ledger_report(const RunRecord& run, bool named) {
    if (!run.execution.ledger) return "\nno launch ledger: the run ended before its measured step\n";
    const Ledger& ledger = *run.execution.ledger;
    const int shown = std::max(ledger.layers - 1, 0);
    const std::string note = same_layer_ops(ledger, 0, shown)
                                 ? "every layer's rows are the same shape"
                                 : "every layer after the first has these rows; the first's differ in op, not in launches";
    std::string out = "\nlaunch ledger" + (named ? " of " + printable_text(display_name(run)) : std::string()) + ", layer " +
                      std::to_string(shown) + " of " + std::to_string(ledger.layers) + " (" + note + "):\n";
    out += ledger_layer_table(ledger, shown);
    out += "outside the layers:\n" + ledger_outside_table(ledger);
    out += "(* launch count not known: at least one launch per call counted)\n";
    return out + ledger_totals_text(run, false);
}

// Writes a run's outputs (--json, --csv, --fp8-csv) and its tables.
void report_runs(const RunFlags& flags, const std::vector<RunRecord>& runs, int repeats) {
    if (!flags.json_path.empty()) write_output(flags.json_path, records_to_json_text(runs));
    if (!flags.csv_path.empty()) write_output(flags.csv_path, steps_csv_text(runs));
    if (!flags.fp8_csv_path.empty()) write_output(flags.fp8_csv_path, fp8_csv_text(runs));
    std::ostream& out = table_stream(outputs_of(flags));
    out << render_summary_table(runs, std::nullopt);
    out << validation_text(runs, std::nullopt);
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

// One rank of a data-parallel job (the environment says which). Rank 0 reports the job: to the launcher
// through TEWB_DIST_RECORD when `te-bench run --nproc` started it, else like any run (store, outputs,
// tables). Under an outside launcher the other ranks write the files they are given (--json, --csv,
// --fp8-csv: their own records; give each rank its own path) and say on stderr when something went wrong.
int run_rank(const Commands& c, RunConfig requested, const WorkerEnv& env) {
    const RunFlags& flags = c.run_flags;
    if (!requested.dist.enabled()) requested.dist.nproc = env.world_size;
    const std::string record_path = rank_record_path();
    const bool reports = env.rank == 0 && record_path.empty();
    const bool own_files = record_path.empty();
    if (own_files) check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    const Trainer trainer(detect_device(env.local_rank));  // this rank's GPU, and no context on the others
    // This rank's share only: the launcher (if ours) checked the whole job.
    const ResolvedRun run = resolve_run(requested, trainer.device(), RunPlace::rank(env.local_rank));
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
    const RunRecord record = run_as_rank(trainer, run, env, callbacks, &cancel_requested());
    progress.finish();
    if (record.status != RunStatus::Finished && !record.message.empty()) {
        std::fprintf(stderr, "te-bench: %s\n", record.message.c_str());
    }
    if (env.rank == 0 && !record_path.empty()) {
        write_rank_record(record_path, record);
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

// `te-bench run --nproc N`: core's job (run_data_parallel_job) with this program as each rank (rank_command): the
// 1-process run the scaling efficiency is measured against (unless --no-scaling-baseline), stored as it
// ends, then the job's N processes; the job's record comes from rank 0, or, when rank 0 left none, is made
// as a failed run naming the ranks that failed.
int run_local_job_command(const Commands& c, const RunConfig& requested) {
    const RunFlags& flags = c.run_flags;
    if (!flags.repeat.empty() && repeat_from_flags(flags) != 1) {
        throw ConfigError("--repeat with --nproc: a data-parallel job runs once; repeat the command instead");
    }
    check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    const Trainer trainer(detect_device());
    resolve(requested, trainer.device());  // every argument error surfaces before anything starts
    int port = requested.dist.enabled() && !flags.master_port.empty() ? parse_int("--master-port", flags.master_port) : 0;
    if (!flags.master_port.empty() && (port < 1 || port > kMaxPort)) {
        throw ConfigError("--master-port " + flags.master_port + ": out of range; allowed: 1 to " + std::to_string(kMaxPort));
    }
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    DataParallelJobRequest request;
    request.config = requested;
    request.scaling_baseline = !flags.no_scaling_baseline;
    request.master_port = port;
    request.ranks = rank_command(requested, "/proc/self/exe");
    bool saved = true;
    DataParallelJobHooks hooks;
    hooks.train_reference = [&](const RunConfig& single) { return train_one(trainer, resolve_run(single, trainer.device())); };
    hooks.reference_ended = [&](const RunRecord& reference) { saved = store_run(store.get(), reference) && saved; };
    hooks.say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    const DataParallelJobResult result = run_data_parallel_job(request, trainer.device(), hooks, cancel_requested());
    if (!result.job) return kExitInterrupted;  // cancelled during the 1-process run: the ranks never started
    if (result.launcher_failed) std::fprintf(stderr, "te-bench: the job failed: %s\n", result.job->message.c_str());
    std::vector<RunRecord> runs;
    if (result.reference) runs.push_back(*result.reference);
    saved = store_run(store.get(), *result.job) && saved;
    runs.push_back(*result.job);
    report_runs(flags, runs, 1);
    return exit_code_for(runs, saved);
}

// A sweep on a token file: the file is checked once for the largest batch and sequence of the grid, so a size it is
// too short for is refused before the first run rather than found out halfway.
void check_sweep_data(const SweepSpec& spec, const std::vector<SweepRun>& plan) {
    if (!spec.base.data.from_file()) return;
    TokenFileNeeds needs{spec.base.model.vocab, 0, 0};
    for (const SweepRun& run : plan) {
        if (run.skip_reason) continue;
        needs.window = std::max<std::int64_t>(needs.window, run.config.model.seq + 1);
        needs.global_batch = std::max<std::int64_t>(needs.global_batch, run.config.batch);
    }
    if (needs.window > 0) TokenFile check(spec.base.data, needs);
}

// After the runs: the journal, or why there is none.
int write_gemm_journal(const RunFlags& flags, const std::vector<RunRecord>& runs, std::vector<GemmJournalEntry> gemms, int code) {
    if (flags.gemm_journal_path.empty()) return code;
    if (gemms.empty()) {
        const std::string impl = runs.empty() ? std::string("-") : runs.front().execution.te_impl;
        std::fprintf(stderr, "te-bench: --gemm-journal: no GEMM ran on the fused path (te path: %s), nothing written; on this "
                             "device add --te-impl fused\n", impl.c_str());
        return code == 0 ? kExitFailure : code;
    }
    GemmJournal journal;
    journal.written_by = version_text("te-bench");
    const RunConfig& config = runs.front().config;
    journal.run = config.name + ": " + std::string(to_string(config.model.arch)) + ", " + std::to_string(config.model.layers) +
                  " layers, hidden " + std::to_string(config.model.hidden) + ", seq " + std::to_string(config.model.seq) +
                  ", batch " + std::to_string(config.batch) + ", vocab " + std::to_string(config.model.vocab) + ", " +
                  std::to_string(config.warmup + config.iters) + " steps on " + runs.front().execution.te_impl;
    std::uint64_t calls = 0;
    for (const GemmJournalEntry& e : gemms) calls += e.calls;
    journal.gemms = std::move(gemms);
    write_output(flags.gemm_journal_path, gemm_journal_json(journal));
    std::fprintf(stderr, "te-bench: GEMM journal: %zu distinct GEMMs (%llu calls) written to %s\n", journal.gemms.size(),
                 static_cast<unsigned long long>(calls), printable_text(flags.gemm_journal_path).c_str());
    return code;
}

}  // namespace

int run_one(const Commands& c) {
    const RunFlags& flags = c.run_flags;
    const CheckedRun checked = check_run_command(c);
    const RunConfig& requested = checked.requested;
    if (checked.env) return run_rank(c, requested, *checked.env);
    if (requested.dist.enabled()) return run_local_job_command(c, requested);
    const int repeats = repeat_from_flags(flags);
    const Trainer trainer(detect_device());
    // Every argument error surfaces before training starts, and the run is decided once.
    const ResolvedRun run = resolve_run(requested, trainer.device());
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    bool saved = true;
    if (!flags.gemm_journal_path.empty()) start_gemm_journal();
    const std::vector<RunRecord> runs =
        train_repeated(trainer, {{run, requested.name}}, repeats, store.get(), saved, flags.profile_path);
    std::vector<GemmJournalEntry> gemms = stop_gemm_journal();
    if (runs.empty()) {
        std::fprintf(stderr, "te-bench: run cancelled before it began\n");
        return kExitInterrupted;
    }
    report_runs(flags, runs, repeats);
    return write_gemm_journal(flags, runs, std::move(gemms), with_profile_outcome(runs, exit_code_for(runs, saved)));
}

int run_compare(const Commands& c) {
    const RunFlags& flags = c.compare_flags;
    const RunConfig base = check_compare_command(c);
    std::vector<OutputRequest> outputs = compare_outputs(c);
    const Trainer trainer(detect_device());
    const std::vector<PlannedRun> plan = plan_comparison(base, trainer.device());
    if (plan.front().skip_reason) throw ConfigError(*plan.front().skip_reason);
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    const int repeats = repeat_from_flags(flags);
    std::vector<RunToTrain> configs;
    std::vector<std::string> skipped;
    for (const PlannedRun& row : plan) {
        if (row.skip_reason) {
            skipped.push_back(row.config.name + ": " + *row.skip_reason);
        } else {
            configs.push_back({resolve_run(row.config, trainer.device()), row.config.name});
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
    out << validation_text(runs, 0);
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
    const SweepSpec spec = check_sweep_command(c);
    const std::vector<OutputRequest> outputs = sweep_outputs(flags);
    const Trainer trainer(detect_device());
    const std::vector<SweepRun> plan = plan_sweep(spec, trainer.device());
    check_sweep_data(spec, plan);
    const std::unique_ptr<RunStore> store = open_store_for_runs(flags.no_store, c.store_path);
    stop_cleanly_on_signals();
    std::vector<std::optional<RunRecord>> records(plan.size());
    std::vector<RunRecord> ran;
    bool all_saved = true;
    std::size_t to_run = 0;
    for (const SweepRun& run : plan) to_run += run.skip_reason ? 0 : 1;
    std::size_t done = 0;
    std::map<std::string, std::string> series;  // a configuration's repeats at a size: one group in the store
    for (std::size_t i = 0; i < plan.size(); ++i) {
        if (plan[i].skip_reason) {
            if (plan[i].repeat == 1) std::fprintf(stderr, "skipped %s: %s\n", plan[i].config.name.c_str(), plan[i].skip_reason->c_str());
            continue;
        }
        if (cancel_requested().load()) break;
        std::fprintf(stderr, "sweep run %zu of %zu: %s%s\n", ++done, to_run, plan[i].config.name.c_str(),
                     plan[i].repeats > 1
                         ? (" (repeat " + std::to_string(plan[i].repeat) + " of " + std::to_string(plan[i].repeats) + ")").c_str()
                         : "");
        records[i] = train_one(trainer, resolve_run(plan[i].config, trainer.device()));
        if (plan[i].repeats > 1) {
            const auto [it, fresh] = series.emplace(plan[i].config.name, std::string());
            if (fresh) it->second = make_run_id();
            records[i]->repeat = RepeatInfo{it->second, plan[i].repeat, plan[i].repeats};
        }
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

}  // namespace tewb::cli
