// The checks of run, compare and sweep that need no LibTorch (RunChecks.h).
#include "RunChecks.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "CommandSupport.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"

namespace tewb::cli {

namespace {

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
        throw ConfigError("--nproc " + flags.text("nproc") + ": disagrees with the launcher's environment variable WORLD_SIZE '" +
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

// `run --gemm-journal`: the fused path's GEMMs of one process, so not with --nproc; the te backend, not its reference.
void check_gemm_journal_flag(const RunFlags& flags, const RunConfig& requested, bool data_parallel) {
    if (flags.gemm_journal_path.empty()) return;
    const std::string flag = "--gemm-journal " + printable_text(flags.gemm_journal_path);
    if (flags.gemm_journal_path == "-") {
        throw ConfigError("--gemm-journal -: the journal goes to a file (tewb-gemm-replay reads it), not to standard output");
    }
    if (data_parallel) throw ConfigError(flag + " with --nproc or under a launcher: a journal is of one process; run without --nproc");
    if (requested.backend != Backend::Te) {
        throw ConfigError(flag + " with --backend torch: only the te backend's fused path issues the journal's GEMMs; use --backend te");
    }
    if (requested.te_impl == TeImpl::Reference) {
        throw ConfigError(flag + " with --te-impl reference: the reference issues no GEMM of the fused path; use --te-impl fused");
    }
}

// No output may be the token file the runs train on (`--data d.txt --json d.txt` replaced the corpus).
void check_outputs_spare_the_data(const std::vector<OutputRequest>& outputs, const RunConfig& config) {
    if (!config.data.from_file()) return;
    for (const OutputRequest& out : outputs) {
        if (out.path != "-" && refer_to_one_file(out.path, config.data.path)) {
            throw ConfigError(out.flag + " " + printable_text(out.path.string()) + ": is the token file this command trains on (--data " +
                              printable_text(config.data.path) + "), which writing here would destroy; allowed: any other path");
        }
    }
}

// `--fp8-csv` holds the FP8 statistics of FP8 runs: for a run that is not FP8 it would be a header alone.
void check_fp8_csv_applies(const RunFlags& flags, const RunConfig& requested) {
    if (flags.fp8_csv_path.empty() || requested.precision == Precision::Fp8) return;
    throw ConfigError("--fp8-csv " + printable_text(flags.fp8_csv_path) + ": this run is not FP8 (--precision " +
                      std::string(to_string(requested.precision)) + "), so the file would hold its header alone; allowed: with "
                      "--precision fp8, or leave --fp8-csv out");
}

}  // namespace

CheckedRun check_run_command(const Commands& c) {
    const RunFlags& flags = c.run_flags;
    CheckedRun checked{config_from_flags(flags), worker_env()};
    const RunConfig& requested = checked.requested;
    validate(requested);
    check_fp8_flags_apply(flags, requested);
    const bool data_parallel = checked.env.has_value() || requested.dist.enabled();
    if (checked.env) check_flags_agree_with_launcher(flags, requested, *checked.env);
    check_profile_flag(flags, data_parallel);
    check_gemm_journal_flag(flags, requested, data_parallel);
    if (!data_parallel) {
        repeat_from_flags(flags);
        check_outputs(outputs_of(flags), store_to_protect(c.store_path));
    }
    check_outputs_spare_the_data(outputs_of(flags), requested);
    check_fp8_csv_applies(flags, requested);
    return checked;
}

std::vector<OutputRequest> compare_outputs(const Commands& c) {
    std::vector<OutputRequest> outputs = outputs_of(c.compare_flags);
    add_output(outputs, "--summary-csv", c.compare_summary_csv);
    return outputs;
}

RunConfig check_compare_command(const Commands& c) {
    RunConfig base = config_from_flags(c.compare_flags);
    base.te_impl = te_impl_from_flags(c.compare_flags);  // for the te rows: the plan gives the torch rows auto
    check_outputs(compare_outputs(c), store_to_protect(c.store_path));
    check_outputs_spare_the_data(compare_outputs(c), base);
    return base;
}

std::vector<OutputRequest> sweep_outputs(const RunFlags& flags) {
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--csv", flags.csv_path);
    add_output(outputs, "--json", flags.json_path);
    return outputs;
}

SweepSpec check_sweep_command(const Commands& c) {
    const RunFlags& flags = c.sweep_flags;
    SweepSpec spec = sweep_from_flags(flags, c.sweep_precisions, c.sweep_baseline);
    const bool fp8 = std::find(spec.precisions.begin(), spec.precisions.end(), Precision::Fp8) != spec.precisions.end();
    if (flags.fp8_flags_given() && !fp8) {
        throw ConfigError(fp8_recipe_flags() + ": FP8 settings need fp8 in --precisions");
    }
    check_outputs(sweep_outputs(flags), store_to_protect(c.store_path));
    check_outputs_spare_the_data(sweep_outputs(flags), spec.base);
    return spec;
}

void check_before_libtorch(const Commands& c) {
    if (c.run->parsed()) check_run_command(c);
    if (c.compare->parsed()) check_compare_command(c);
    if (c.sweep->parsed()) check_sweep_command(c);
}

}  // namespace tewb::cli
