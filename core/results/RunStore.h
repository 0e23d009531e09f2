#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/common/Error.h"
#include "core/results/RunRecord.h"

struct sqlite3;

namespace tewb {

// A stored run whose record JSON cannot be read (damaged in the database): the message names the store and
// the run's number and says how to remove it. The run still lists (its columns are intact) and deletes.
class DamagedRecordError : public DataError {
public:
    DamagedRecordError(std::int64_t id, const std::string& what) : DataError(what), id_(id) {}
    std::int64_t id() const { return id_; }

private:
    std::int64_t id_;
};

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
    // What an emulated run's name calls its format (RunRecord.h's emulated_format): "FP8", "MXFP8", "NVFP4".
    std::string emulated_format = "FP8";
};

// The name a store row is shown under: as display_name(record) shows the record.
std::string display_name(const StoredRun& run);

// SQLite database of run records shared by te-bench and te-workbench. Each save is one transaction
// (write-ahead log, synchronous=FULL), so a process killed at any moment leaves every run saved before
// intact. Several processes may use it at once. Errors throw DataError naming the database file.
class RunStore {
public:
    // $TEWB_DATA_DIR/runs.sqlite3 when set, else $XDG_DATA_HOME/te-workbench/runs.sqlite3, else
    // $HOME/.local/share/te-workbench/runs.sqlite3. Throws DataError when none of the three is set
    // (never a store in whatever the current directory happens to be).
    static std::filesystem::path default_path();

    // ReadWrite creates the store (and its directory) when missing. ReadOnly is for commands that only
    // read: it works on a read-only file or directory, and a store that does not exist yet reads as empty.
    enum class Access { ReadWrite, ReadOnly };
    explicit RunStore(std::filesystem::path path, Access access = Access::ReadWrite);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    // Inserts the record, or replaces the stored one with the same record id. Returns the store id.
    std::int64_t save(const RunRecord& record);
    // Saves every record in one transaction: all of them, or (on any error) none. Returns the store ids.
    std::vector<std::int64_t> save_all(const std::vector<RunRecord>& records);
    // The store id and stored JSON of the record with this record id, if stored.
    struct Found {
        std::int64_t id = 0;
        std::string record_json;
    };
    std::optional<Found> find(const std::string& record_id) const;
    std::vector<StoredRun> list() const;  // newest first
    // Throws DamagedRecordError when the stored JSON of run `id` cannot be read.
    std::optional<RunRecord> get(std::int64_t id) const;
    bool contains(std::int64_t id) const;  // without reading the record: true for a damaged one too
    bool remove(std::int64_t id);

    const std::filesystem::path& path() const { return path_; }

private:
    void execute(const char* sql) const;
    std::int64_t insert(const RunRecord& record);
    [[noreturn]] void fail(const std::string& what) const;
    [[noreturn]] void fail_sqlite(const std::string& what) const;  // adds SQLite's and the system's reason
    void open_read_only();
    void require_writable() const;

    std::filesystem::path path_;
    sqlite3* db_ = nullptr;  // null: opened read-only and nothing stored yet
    bool read_only_ = false;
    int schema_version_ = 0;
};

// What saving one run came to: the store's number, or why it was not saved and where the record was
// kept instead (`rescue_path`, empty when even that failed).
struct SaveResult {
    std::optional<std::int64_t> id;
    std::string error;
    std::filesystem::path rescue_path;
    // "run not saved in STORE: why; the record is kept in FILE (...import it...)", for the user.
    std::string failure_message() const;
};

// How te-bench and te-workbench keep a finished, cancelled or failed run: opens the store at `path` and
// saves the record in one transaction. Never throws. When the store cannot be opened or written, the
// record is written as JSON next to the store (unsaved-run-<record id>.json), or in the temporary
// directory when that fails too, so nothing is lost; the caller must report the failure.
SaveResult save_run(const std::filesystem::path& path, const RunRecord& record);

}  // namespace tewb
