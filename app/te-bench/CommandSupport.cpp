// What the commands share: where the store is, where outputs go, saving a run, exit statuses.
#include "CommandSupport.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "Process.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/results/AtomicFile.h"
#include "core/results/KernelProfile.h"

namespace tewb::cli {

namespace {

constexpr std::size_t kTopKernelsShown = 15;  // rows of `run --profile`'s table; the record keeps them all

}  // namespace

void add_output(std::vector<OutputRequest>& outputs, const char* flag, const std::string& path) {
    if (!path.empty()) outputs.push_back({flag, path});
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

std::vector<OutputRequest> outputs_of(const RunFlags& f) {
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--json", f.json_path);
    add_output(outputs, "--csv", f.csv_path);
    add_output(outputs, "--fp8-csv", f.fp8_csv_path);
    add_output(outputs, "--profile", f.profile_path);
    add_output(outputs, "--gemm-journal", f.gemm_journal_path);
    return outputs;
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

namespace {

std::string fixed(double value, const char* format) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

// "tiny.txt: 1,200 of 24,000 tokens held out" for the run's file.
std::string held_out_text(const DataFileInfo& file) {
    std::string out = printable_text(file.name);
    out += ": ";
    out += std::to_string(file.val_tokens);
    out += " of ";
    out += std::to_string(file.tokens);
    out += " tokens held out";
    return out;
}

}  // namespace

std::string validation_text(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline) {
    std::vector<const RunRecord*> evaluated;
    for (const RunRecord& r : runs) {
        if (r.summary.final_val_loss) evaluated.push_back(&r);
    }
    if (evaluated.empty()) return {};
    const RunRecord* base = baseline && *baseline < runs.size() && runs[*baseline].summary.final_val_loss ? &runs[*baseline] : nullptr;
    std::string out = "\nvalidation loss";
    if (evaluated.front()->data_file) out += " (" + held_out_text(*evaluated.front()->data_file) + ")";
    out += ":\n";
    for (const RunRecord* r : evaluated) {
        out += "  ";
        out += printable_text(display_name(*r));
        out += ": ";
        out += fixed(*r->summary.final_val_loss, "%.4f");
        if (r->summary.final_val_step) {
            out += " at step ";
            out += std::to_string(*r->summary.final_val_step);
        }
        if (base != nullptr && r != base) {
            out += " (";
            double difference = std::round((*r->summary.final_val_loss - *base->summary.final_val_loss) * 1e4) / 1e4;
            if (difference == 0.0) difference = 0.0;  // -0.0 would print as "-0.0000"
            out += fixed(difference, "%+.4f");
            out += " against the baseline)";
        }
        out += '\n';
    }
    return out;
}

}  // namespace tewb::cli
