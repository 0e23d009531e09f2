#include "core/results/RunStore.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include <sqlite3.h>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/RecordJson.h"
#include "core/results/RunWords.h"

namespace tewb {

namespace fs = std::filesystem;

namespace {

// 1: the runs table; 2: adds fp8_emulated (a column, so listing never parses the records).
constexpr int kStoreSchemaVersion = 2;

// Whether the runs table has given out AUTOINCREMENT's last id (2^63 - 1): SQLite then refuses a new row with
// SQLITE_FULL, "database or disk is full", with no disk involved.
bool run_ids_used_up(sqlite3* db) {
    sqlite3_stmt* stmt = nullptr;
    bool used_up = false;
    if (sqlite3_prepare_v2(db, "SELECT seq FROM sqlite_sequence WHERE name = 'runs'", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        used_up = sqlite3_column_int64(stmt, 0) == std::numeric_limits<std::int64_t>::max();
    }
    sqlite3_finalize(stmt);
    return used_up;
}

// SQLite's message, with the operating system's reason where there is one: "disk I/O error" alone does
// not tell a full disk from a failing one.
std::string sqlite_reason(sqlite3* db) {
    const int code = sqlite3_errcode(db);
    const int system_errno = sqlite3_system_errno(db);
    if (code == SQLITE_FULL && system_errno == 0 && run_ids_used_up(db)) {
        return "the store's run ids are used up (SQLite gave out the largest, " +
               std::to_string(std::numeric_limits<std::int64_t>::max()) +
               ", and never reuses one); export its runs (te-bench history export) and import them into a new store";
    }
    if (code == SQLITE_FULL || system_errno == ENOSPC || system_errno == EDQUOT) {
        return "the disk is full (" + std::string(std::strerror(system_errno != 0 ? system_errno : ENOSPC)) +
               "); free some space and try again";
    }
    std::string message = sqlite3_errmsg(db);
    if (system_errno != 0 && (code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_READONLY ||
                              code == SQLITE_PERM || code == SQLITE_BUSY)) {
        message += " (" + std::string(std::strerror(system_errno)) + ")";
    }
    if (code == SQLITE_READONLY) message += "; the store is read-only: pass --store with a writable path";
    return message;
}

// Owns a prepared statement for the length of one query.
class Statement {
public:
    Statement(sqlite3* db, const char* sql, const RunStore& store) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
            throw DataError("run store " + store.path().string() + ": " + sqlite_reason(db));
        }
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    sqlite3_stmt* get() const { return stmt_; }
    void bind(int index, const std::string& text) { sqlite3_bind_text(stmt_, index, text.c_str(), -1, SQLITE_TRANSIENT); }
    void bind(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
    void bind(int index, const std::optional<double>& value) {
        if (value) {
            sqlite3_bind_double(stmt_, index, *value);
        } else {
            sqlite3_bind_null(stmt_, index);
        }
    }

private:
    sqlite3* db_;
    sqlite3_stmt* stmt_ = nullptr;
};

// A file name inside an SQLite URI: '%', '?' and '#' would otherwise end or change the path.
std::string uri_path(const fs::path& path) {
    std::string out;
    for (const char c : fs::absolute(path).string()) {
        if (c == '%' || c == '?' || c == '#') {
            static const char* digits = "0123456789ABCDEF";
            out += '%';
            out += digits[(static_cast<unsigned char>(c) >> 4) & 0xF];
            out += digits[static_cast<unsigned char>(c) & 0xF];
        } else {
            out += c;
        }
    }
    return out;
}

std::string column_text(sqlite3_stmt* stmt, int column) {
    const auto* text = sqlite3_column_text(stmt, column);
    return text != nullptr ? reinterpret_cast<const char*>(text) : std::string{};
}

std::optional<double> column_real(sqlite3_stmt* stmt, int column) {
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL) {
        return std::nullopt;
    }
    return sqlite3_column_double(stmt, column);
}

}  // namespace

fs::path RunStore::default_path() {
    if (const char* dir = std::getenv("TEWB_DATA_DIR"); dir != nullptr && *dir != '\0') {
        return fs::path(dir) / "runs.sqlite3";
    }
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
        return fs::path(xdg) / "te-workbench" / "runs.sqlite3";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        return fs::path(home) / ".local" / "share" / "te-workbench" / "runs.sqlite3";
    }
    throw DataError("no place for the run store: none of TEWB_DATA_DIR, XDG_DATA_HOME and HOME is set; set one, "
                    "or pass --store PATH");
}

RunStore::RunStore(fs::path path, Access access) : path_(std::move(path)) {
    protect_run_store(path_);  // no export of this process may be written onto it or its -wal
    std::error_code ec;
    if (access == Access::ReadOnly) {
        open_read_only();
        return;
    }
    if (path_.has_parent_path()) {
        fs::create_directories(path_.parent_path(), ec);
        if (ec) {
            throw DataError("run store " + path_.string() + ": cannot create directory " + path_.parent_path().string() + " (" +
                            ec.message() + ")");
        }
    }
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        const std::string message = db_ != nullptr ? sqlite_reason(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DataError("run store " + path_.string() + ": cannot open (" + message + ")");
    }
    try {
        // SQLite quietly falls back to reading when it may not write; a store opened to save in must say so.
        if (sqlite3_db_readonly(db_, "main") == 1) {
            fail("is read-only (the file or its folder cannot be written); reading commands (history list, show, "
                 "export) still work; to save runs pass --store with a writable path");
        }
        sqlite3_busy_timeout(db_, 10000);
        execute("PRAGMA journal_mode=WAL");
        execute("PRAGMA synchronous=FULL");
        execute("PRAGMA foreign_keys=ON");
        int version = 0;
        {
            Statement stmt(db_, "PRAGMA user_version", *this);
            if (sqlite3_step(stmt.get()) == SQLITE_ROW) {
                version = sqlite3_column_int(stmt.get(), 0);
            }
        }
        if (version > kStoreSchemaVersion) {
            fail("made by a newer te-workbench (store schema " + std::to_string(version) + ", this build knows " +
                 std::to_string(kStoreSchemaVersion) + "); use a newer build or another TEWB_DATA_DIR");
        }
        if (version < kStoreSchemaVersion) {
            execute("BEGIN IMMEDIATE");
            execute(R"(CREATE TABLE IF NOT EXISTS runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                run_id TEXT NOT NULL UNIQUE,
                created_at TEXT NOT NULL,
                name TEXT NOT NULL,
                backend TEXT NOT NULL,
                precision TEXT NOT NULL,
                device TEXT NOT NULL,
                status TEXT NOT NULL,
                steps INTEGER NOT NULL,
                median_ms REAL,
                final_loss REAL,
                peak_mem_bytes INTEGER NOT NULL,
                record_json TEXT NOT NULL,
                fp8_emulated INTEGER NOT NULL DEFAULT 0))");
            execute("CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at)");
            if (version == 1) {  // runs stored by version 1 predate FP8: none is emulated
                execute("ALTER TABLE runs ADD COLUMN fp8_emulated INTEGER NOT NULL DEFAULT 0");
            }
            execute("PRAGMA user_version=2");
            execute("COMMIT");
        }
        schema_version_ = kStoreSchemaVersion;
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

void RunStore::open_read_only() {
    read_only_ = true;
    std::error_code ec;
    if (!fs::exists(path_, ec)) return;  // nothing stored yet: an empty history
    if (!fs::is_regular_file(path_, ec)) fail("is not a regular file; allowed: a run store made by te-bench");
    // SQLite reads a file whose size the system reports as 0 as an empty database: also /proc/self/status, whose
    // size is 0 and whose text is not. Anything with bytes must start as an SQLite database does.
    {
        std::ifstream in(path_, std::ios::binary);
        char head[16] = {};
        in.read(head, sizeof head);
        if (in.gcount() > 0 && (in.gcount() < 16 || std::memcmp(head, "SQLite format 3", 16) != 0)) {
            fail("is not a run store (its first bytes are not an SQLite database's); allowed: a run store made by te-bench, "
                 "or a path that does not exist yet");
        }
    }
    // A WAL store needs its -shm file; in a read-only directory that cannot be created, so the second try
    // reads the file as it is (immutable), which is what it is to every process that cannot write there.
    for (const bool immutable : {false, true}) {
        const std::string uri = "file:" + uri_path(path_) + (immutable ? "?immutable=1" : "");
        if (sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, nullptr) ==
            SQLITE_OK) {
            sqlite3_busy_timeout(db_, 10000);
            sqlite3_stmt* probe = nullptr;
            const int rc = sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &probe, nullptr) == SQLITE_OK
                               ? sqlite3_step(probe)
                               : sqlite3_errcode(db_);
            if (rc == SQLITE_ROW) {
                schema_version_ = sqlite3_column_int(probe, 0);
                sqlite3_finalize(probe);
                if (schema_version_ > kStoreSchemaVersion) {
                    const int version = schema_version_;
                    sqlite3_close(db_);
                    db_ = nullptr;
                    fail("made by a newer te-workbench (store schema " + std::to_string(version) + ", this build knows " +
                         std::to_string(kStoreSchemaVersion) + "); use a newer build or another TEWB_DATA_DIR");
                }
                if (schema_version_ == 0) {
                    sqlite3_close(db_);
                    db_ = nullptr;
                    // An empty file is a store not made yet: nothing in it. Another SQLite database is not a store.
                    if (fs::file_size(path_, ec) > 0 && !ec) {
                        fail("is an SQLite database but not a run store (it has no store schema); allowed: a run store made "
                             "by te-bench, or a path that does not exist yet");
                    }
                }
                return;
            }
            sqlite3_finalize(probe);
        }
        const std::string message = db_ != nullptr ? sqlite_reason(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        if (immutable) fail("cannot open for reading (" + message + ")");
    }
}

RunStore::~RunStore() {
    sqlite3_close(db_);
}

void RunStore::fail(const std::string& what) const {
    throw DataError("run store " + path_.string() + ": " + what);
}

void RunStore::fail_sqlite(const std::string& what) const {
    fail(what + ": " + sqlite_reason(db_));
}

void RunStore::execute(const char* sql) const {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
        fail(sqlite_reason(db_));
    }
}

void RunStore::require_writable() const {
    if (db_ == nullptr || read_only_) fail("opened for reading only");
}

std::int64_t RunStore::save(const RunRecord& record) {
    return save_all({record}).front();
}

std::vector<std::int64_t> RunStore::save_all(const std::vector<RunRecord>& records) {
    require_writable();
    execute("BEGIN IMMEDIATE");
    try {
        std::vector<std::int64_t> ids;
        for (const RunRecord& record : records) ids.push_back(insert(record));
        execute("COMMIT");
        return ids;
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

std::optional<RunStore::Found> RunStore::find(const std::string& record_id) const {
    if (db_ == nullptr) return std::nullopt;
    Statement stmt(db_, "SELECT id, record_json FROM runs WHERE run_id = ?1", *this);
    stmt.bind(1, record_id);
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail_sqlite("looking up run " + record_id);
    return Found{sqlite3_column_int64(stmt.get(), 0), column_text(stmt.get(), 1)};
}

std::int64_t RunStore::insert(const RunRecord& record) {
    const std::string json = record_to_json_text(record);
    {
        Statement stmt(db_, R"(INSERT INTO runs (run_id, created_at, name, backend, precision, device, status, steps, median_ms,
                                                  final_loss, peak_mem_bytes, record_json, fp8_emulated)
                               VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                               ON CONFLICT(run_id) DO UPDATE SET
                                 created_at=excluded.created_at, name=excluded.name, backend=excluded.backend,
                                 precision=excluded.precision, device=excluded.device, status=excluded.status,
                                 steps=excluded.steps, median_ms=excluded.median_ms, final_loss=excluded.final_loss,
                                 peak_mem_bytes=excluded.peak_mem_bytes, record_json=excluded.record_json,
                                 fp8_emulated=excluded.fp8_emulated)",
                       *this);
        stmt.bind(1, record.id);
        stmt.bind(2, record.created_at);
        stmt.bind(3, record.config.name);
        stmt.bind(4, std::string(to_string(record.config.backend)));
        stmt.bind(5, std::string(to_string(record.config.precision)));
        stmt.bind(6, record.execution.device);
        stmt.bind(7, std::string(to_string(record.status)));
        stmt.bind(8, static_cast<std::int64_t>(record.steps.size()));
        stmt.bind(9, record.summary.median_ms);
        stmt.bind(10, record.summary.final_loss);
        stmt.bind(11, static_cast<std::int64_t>(record.summary.peak_mem_bytes));
        stmt.bind(12, json);
        stmt.bind(13, static_cast<std::int64_t>(record.execution.fp8_emulated ? 1 : 0));
        if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
            fail_sqlite(std::string("saving run ") + record.id);
        }
        std::int64_t id = 0;
        {
            Statement lookup(db_, "SELECT id FROM runs WHERE run_id = ?1", *this);
            lookup.bind(1, record.id);
            if (sqlite3_step(lookup.get()) == SQLITE_ROW) {
                id = sqlite3_column_int64(lookup.get(), 0);
            }
        }
        return id;
    }
}

std::string display_name(const StoredRun& run) {
    return display_name(run.name, run.fp8_emulated, run.emulated_format);
}

std::vector<StoredRun> RunStore::list() const {
    if (db_ == nullptr) return {};
    // A version-1 store opened read-only keeps its old table: no run in it is FP8. Only an emulated run's record
    // is looked into, for its recipe (MXFP8 and NVFP4 runs are named by format); a damaged one reads as FP8.
    Statement stmt(db_, schema_version_ >= 2 ? R"(SELECT id, run_id, created_at, name, backend, precision, device, status, steps, median_ms,
                                  final_loss, peak_mem_bytes, fp8_emulated,
                                  CASE WHEN fp8_emulated AND json_valid(record_json)
                                       THEN json_extract(record_json, '$.config.fp8.recipe') END
                                  FROM runs ORDER BY id DESC)"
                                             : R"(SELECT id, run_id, created_at, name, backend, precision, device, status, steps, median_ms,
                                  final_loss, peak_mem_bytes, 0, NULL FROM runs ORDER BY id DESC)",
                   *this);
    std::vector<StoredRun> runs;
    int rc = 0;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
        StoredRun run;
        run.id = sqlite3_column_int64(stmt.get(), 0);
        run.run_id = column_text(stmt.get(), 1);
        run.created_at = column_text(stmt.get(), 2);
        run.name = column_text(stmt.get(), 3);
        run.backend = column_text(stmt.get(), 4);
        run.precision = column_text(stmt.get(), 5);
        run.device = column_text(stmt.get(), 6);
        run.status = column_text(stmt.get(), 7);
        run.steps = sqlite3_column_int(stmt.get(), 8);
        run.median_ms = column_real(stmt.get(), 9);
        run.final_loss = column_real(stmt.get(), 10);
        run.peak_mem_bytes = static_cast<std::uint64_t>(sqlite3_column_int64(stmt.get(), 11));
        run.fp8_emulated = sqlite3_column_int(stmt.get(), 12) != 0;
        const std::string recipe = column_text(stmt.get(), 13);
        for (const ScalingKind scaling : {ScalingKind::Mxfp8, ScalingKind::Nvfp4}) {
            if (recipe == to_string(scaling)) run.emulated_format = std::string(emulated_format(Precision::Fp8, scaling));
        }
        runs.push_back(std::move(run));
    }
    if (rc != SQLITE_DONE) {
        fail_sqlite("listing runs");
    }
    return runs;
}

std::optional<RunRecord> RunStore::get(std::int64_t id) const {
    if (db_ == nullptr) return std::nullopt;
    Statement stmt(db_, "SELECT record_json FROM runs WHERE id = ?1", *this);
    stmt.bind(1, id);
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) {
        return std::nullopt;
    }
    if (rc != SQLITE_ROW) {
        fail_sqlite("reading run " + std::to_string(id));
    }
    try {
        return record_from_json_text(column_text(stmt.get(), 0), path_.string() + " run " + std::to_string(id));
    } catch (const DataError& e) {
        throw DamagedRecordError(id, std::string(e.what()) + "; the stored record of run " + std::to_string(id) +
                                         " is damaged (`te-bench history delete " + std::to_string(id) + "` removes it)");
    }
}

bool RunStore::contains(std::int64_t id) const {
    if (db_ == nullptr) return false;
    Statement stmt(db_, "SELECT 1 FROM runs WHERE id = ?1", *this);
    stmt.bind(1, id);
    const int rc = sqlite3_step(stmt.get());
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail_sqlite("reading run " + std::to_string(id));
    return rc == SQLITE_ROW;
}

bool RunStore::remove(std::int64_t id) {
    require_writable();
    Statement stmt(db_, "DELETE FROM runs WHERE id = ?1", *this);
    stmt.bind(1, id);
    if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
        fail_sqlite("deleting run " + std::to_string(id));
    }
    return sqlite3_changes(db_) > 0;
}

std::string SaveResult::failure_message() const {
    std::string message = "run not saved: " + error;
    if (!rescue_path.empty()) {
        message += "; the record is kept in " + rescue_path.string() +
                   " (add it to the history later with `te-bench history import " + rescue_path.string() + "`)";
    } else {
        message += "; the record could not be kept anywhere else either";
    }
    return message;
}

SaveResult save_run(const std::filesystem::path& path, const RunRecord& record) {
    SaveResult result;
    try {
        RunStore store(path);
        result.id = store.save(record);
        return result;
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    const std::string name = "unsaved-run-" + record.id + ".json";
    std::error_code ec;
    std::vector<fs::path> places;
    if (path.has_parent_path()) places.push_back(path.parent_path() / name);
    places.push_back(fs::path(".") / name);
    if (const fs::path temp = fs::temp_directory_path(ec); !ec) places.push_back(temp / name);
    for (const fs::path& place : places) {
        try {
            write_file_atomically(place, record_to_json_text(record));
            result.rescue_path = fs::absolute(place, ec);
            break;
        } catch (const std::exception&) {
            // the next place
        }
    }
    return result;
}

}  // namespace tewb
