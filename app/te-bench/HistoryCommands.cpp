// te-bench history: list, show, delete, import and export the run store.
#include "HistoryCommands.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "CommandSupport.h"
#include "Process.h"
#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"
#include "core/results/AtomicFile.h"
#include "core/results/Comparison.h"
#include "core/results/ConfigDiff.h"
#include "core/results/Fp8Summary.h"
#include "core/results/MeasurementQuality.h"
#include "core/results/RecordCsv.h"
#include "core/results/RecordImport.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"
#include "core/results/RunStore.h"
#include "core/results/TensorBoardEvents.h"

namespace tewb::cli {

namespace {

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
        rows.push_back({std::to_string(r.id), r.created_at, display_name(r), r.backend,
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
        std::cout << render_summary_table({record}, std::nullopt) << validation_text({record}, std::nullopt)
                  << te_path_text(record, false) << render_fp8_summary(record)
                  << ledger_totals_text(record, false) << kernel_profile_text(record, false) << render_job_summary(record);
        // Every figure behind the table's cv cell (an older record's absence is already said under the table).
        if (record.execution.quality) {
            std::cout << printable_text("measurement quality: " + quality_details_text(record.execution.quality)) << "\n";
        }
        if (!record.message.empty()) std::cout << "message: " << printable_text(record.message) << "\n";
    }
    return 0;
}

int run_history_diff(const Commands& c, RunStore& store) {
    const RunRecord a = load_stored(store, parse_run_id(c.diff_ids.at(0)));
    const RunRecord b = load_stored(store, parse_run_id(c.diff_ids.at(1)));
    const std::vector<SettingDifference> differences = config_differences(a.config, b.config);
    if (differences.empty()) {
        std::cout << "runs " << c.diff_ids[0] << " and " << c.diff_ids[1] << " were given the same settings\n";
        return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const SettingDifference& d : differences) rows.push_back({d.setting, printable_text(d.a), printable_text(d.b)});
    std::cout << render_text_table({"setting", "run " + c.diff_ids[0], "run " + c.diff_ids[1]}, rows);
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

// The runs `ids` names, in that order; a damaged one is skipped with a line on stderr, the command fails only
// when every one is.
std::vector<RunRecord> load_for_export(RunStore& store, const std::vector<std::int64_t>& ids, const char* command) {
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
    if (records.empty() && damaged > 0) {
        throw DataError(std::string(command) + ": every run asked for is damaged; nothing was written");
    }
    return records;
}

// Writes the prepared event files and says where they went and how to view them.
void write_and_report(const std::vector<RunRecord>& records, const TensorBoardFiles& prepared, const std::string& dir) {
    const std::vector<std::filesystem::path> files = write_tensorboard(records, prepared);
    std::size_t scalars = 0;
    for (const RunRecord& r : records) {
        for (const StepMetrics& s : r.steps) scalars += step_scalars(r, s).size();
    }
    std::cerr << "wrote " << files.size() << " runs (" << scalars << " scalars) as TensorBoard event files under " << dir
              << "; view them with: tensorboard --logdir " << dir << "\n";
}

int run_history_export(const Commands& c, RunStore& store) {
    if (c.export_json.empty() && c.export_csv.empty() && c.export_summary_csv.empty() && c.export_fp8_csv.empty() &&
        c.export_tensorboard.empty()) {
        throw ConfigError(
            "history export: nothing to write; allowed: one or more of --json PATH, --csv PATH, --summary-csv PATH, "
            "--fp8-csv PATH, --tensorboard DIR");
    }
    std::vector<OutputRequest> outputs;
    add_output(outputs, "--json", c.export_json);
    add_output(outputs, "--csv", c.export_csv);
    add_output(outputs, "--summary-csv", c.export_summary_csv);
    add_output(outputs, "--fp8-csv", c.export_fp8_csv);
    check_outputs(outputs, store.path());
    std::vector<std::int64_t> ids;
    for (const std::string& text : c.export_ids) ids.push_back(parse_run_id(text));
    const std::vector<RunRecord> records = load_for_export(store, ids, "history export");
    // The event files are checked with the other outputs before anything is written.
    std::optional<TensorBoardFiles> board;
    if (!c.export_tensorboard.empty()) {
        board = prepare_tensorboard(records, c.export_tensorboard, "--tensorboard", outputs, store.path());
    }
    if (!c.export_json.empty()) write_output(c.export_json, records_to_json_text(records));
    if (!c.export_csv.empty()) write_output(c.export_csv, steps_csv_text(records));
    if (!c.export_summary_csv.empty()) write_output(c.export_summary_csv, summary_csv_text(records, 0));
    if (!c.export_fp8_csv.empty()) write_output(c.export_fp8_csv, fp8_csv_text(records));
    if (board) write_and_report(records, *board, c.export_tensorboard);
    return 0;
}

}  // namespace

int run_history(const Commands& c) {
    const bool writes = c.history_delete->parsed() || c.history_import->parsed();
    RunStore store(store_location(c.store_path), writes ? RunStore::Access::ReadWrite : RunStore::Access::ReadOnly);
    if (c.history_list->parsed()) return run_history_list(c, store);
    if (c.history_show->parsed()) return run_history_show(c, store);
    if (c.history_diff->parsed()) return run_history_diff(c, store);
    if (c.history_delete->parsed()) return run_history_delete(c, store);
    if (c.history_import->parsed()) return run_history_import(c, store);
    return run_history_export(c, store);
}

int run_export(const Commands& c) {
    RunStore store(store_location(c.store_path), RunStore::Access::ReadOnly);
    std::vector<std::int64_t> ids;
    for (const std::string& text : c.export_runs_ids) ids.push_back(parse_run_id(text));
    if (ids.empty()) {
        for (const StoredRun& r : store.list()) ids.push_back(r.id);
        std::reverse(ids.begin(), ids.end());  // oldest first, as they ran
        if (ids.empty()) throw ConfigError("export: the run store " + store.path().string() + " has no runs to export");
    } else {
        for (const std::int64_t id : ids) {
            if (!store.contains(id)) {
                throw ConfigError("ID " + std::to_string(id) + ": no such run in " + store.path().string() +
                                  "; see `te-bench history list`");
            }
        }
    }
    const std::vector<RunRecord> records = load_for_export(store, ids, "export");
    write_and_report(records, prepare_tensorboard(records, c.export_runs_tensorboard, "--tensorboard", {}, store.path()),
                     c.export_runs_tensorboard);
    return 0;
}

}  // namespace tewb::cli
