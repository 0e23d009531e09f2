#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/device/Capability.h"
#include "core/results/RunRecord.h"
#include "core/results/RunStore.h"

namespace tewb {

// Run records as JSON (schema version RunRecord::kSchemaVersion). Non-finite numbers are written as the
// strings "nan", "inf" and "-inf"; unknown values as null.
nlohmann::json to_json(const RunRecord& record);
nlohmann::json to_json(const DeviceInfo& device);
nlohmann::json to_json(const RunConfig& config);
nlohmann::json to_json(const RunSummary& summary);
nlohmann::json to_json(const StoredRun& run);  // a line of `te-bench history list --json`
// {"mode", "reasons", "device"}: what `te-bench info --json` prints.
nlohmann::json capability_json(const DeviceInfo& device, const Capability& capability);

std::string record_to_json_text(const RunRecord& record);
// One record as an object, several as an array: what read_record_files and `te-bench history import` read.
std::string records_to_json_text(const std::vector<RunRecord>& records);

// Validates everything it reads: a malformed file throws DataError naming `source`, the JSON path of the
// offending value and what was expected there.
RunRecord record_from_json(const nlohmann::json& json, std::string_view source);
RunRecord record_from_json_text(std::string_view text, std::string_view source);
// A run configuration alone, as to_json(RunConfig) writes it (the GUI keeps the last setup this way).
RunConfig config_from_json_text(std::string_view text, std::string_view source);
std::string config_to_json_text(const RunConfig& config);
RunRecord read_record_file(const std::string& path);
// A file holding one record, a JSON array of records (what `te-bench run`, `sweep` and `history export`
// write) or `te-bench compare --json`'s object (its "runs").
std::vector<RunRecord> read_record_files(const std::string& path);

}  // namespace tewb
