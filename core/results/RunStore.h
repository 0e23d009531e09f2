#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/results/RunRecord.h"

struct sqlite3;

namespace tewb {

// One line of the run history.
struct StoredRun {
    std::int64_t id = 0;  // the store's number, what `te-bench history show ID` takes
    std::string run_id;   // the record's own id
    std::string created_at;
    std::string name;
    std::string backend;
    std::string precision;
    std::string device;
    std::string status;
    int steps = 0;
    std::optional<double> median_ms;
    std::optional<double> final_loss;
    std::uint64_t peak_mem_bytes = 0;
    bool fp8_emulated = false;  // FP8 casts real, GEMMs emulated: the timings are not FP8 speed
};

// SQLite database of run records shared by te-bench and te-workbench. Each save is one transaction
// (write-ahead log, synchronous=FULL), so a process killed at any moment leaves every run saved before
// intact. Several processes may use it at once. Errors throw DataError naming the database file.
class RunStore {
public:
    // $TEWB_DATA_DIR/runs.sqlite3 when set, else $XDG_DATA_HOME/te-workbench/runs.sqlite3, else
    // ~/.local/share/te-workbench/runs.sqlite3.
    static std::filesystem::path default_path();

    explicit RunStore(std::filesystem::path path);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    // Inserts the record, or replaces the stored one with the same record id. Returns the store id.
    std::int64_t save(const RunRecord& record);
    std::vector<StoredRun> list() const;  // newest first
    std::optional<RunRecord> get(std::int64_t id) const;
    bool remove(std::int64_t id);

    const std::filesystem::path& path() const { return path_; }

private:
    void execute(const char* sql) const;
    [[noreturn]] void fail(const std::string& what) const;

    std::filesystem::path path_;
    sqlite3* db_ = nullptr;
};

// What saving one run came to: the store's number, or why it was not saved.
struct SaveResult {
    std::optional<std::int64_t> id;
    std::string error;
};

// How te-bench and te-workbench keep a finished, cancelled or failed run: opens the store at `path` and
// saves the record in one transaction. Never throws: a store that cannot be opened or written comes back
// as the error, for the caller to show.
SaveResult save_run(const std::filesystem::path& path, const RunRecord& record);

}  // namespace tewb
