#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "Arguments.h"
#include "core/results/AtomicFile.h"
#include "core/results/RunRecord.h"
#include "core/results/RunStore.h"

namespace tewb::cli {

std::filesystem::path store_location(const std::string& store_path);
// The store every output is checked against: the one in use, or the default one even with --no-store
// (an export over it would destroy the history all the same). Nothing when no location is known.
std::optional<std::filesystem::path> store_to_protect(const std::string& store_path);
void add_output(std::vector<OutputRequest>& outputs, const char* flag, const std::string& path);  // when `path` is set
std::vector<OutputRequest> outputs_of(const RunFlags& f);
std::string json_text(const nlohmann::json& document);
void write_output(const std::string& path, const std::string& content);
// Where the tables go: standard error when an output is standard output ('-', /dev/stdout, ...), so standard
// output carries that output alone and stays readable as JSON or CSV.
std::ostream& table_stream(const std::vector<OutputRequest>& outputs);
// Opened before training, so an unusable store is a bad argument rather than a run lost at the end.
std::unique_ptr<RunStore> open_store_for_runs(bool no_store, const std::string& store_path);
// Saves a finished, cancelled or failed run. A run that could not be saved is kept as a JSON file (named
// in the message) and makes the command exit with kExitNotSaved; the other outputs are still written.
bool store_run(const RunStore* store, const RunRecord& record);
int exit_code_for(const std::vector<RunRecord>& runs, bool all_saved);
std::int64_t parse_run_id(const std::string& text);
RunRecord load_stored(RunStore& store, std::int64_t id);
// Runs on a token file: each run's last validation loss and its step, on the file's held-out tail, with the
// difference against the baseline (an index into `runs`) when there is one; empty when no run evaluated.
std::string validation_text(const std::vector<RunRecord>& runs, std::optional<std::size_t> baseline);
// `run --profile` (and `history show` of such a run): the traced step's top kernels.
std::string kernel_profile_text(const RunRecord& run, bool named);

}  // namespace tewb::cli
