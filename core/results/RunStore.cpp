#include "core/results/RunStore.h"

#include <cstdlib>

#include <sqlite3.h>

#include "core/common/Error.h"
#include "core/results/RecordJson.h"

namespace tewb {

namespace fs = std::filesystem;

namespace {

// 1: the runs table; 2: adds fp8_emulated (a column, so listing never parses the records).
constexpr int kStoreSchemaVersion = 2;

// Owns a prepared statement for the length of one query.
class Statement {
public:
    Statement(sqlite3* db, const char* sql, const RunStore& store) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
            throw DataError("run store " + store.path().string() + ": " + sqlite3_errmsg(db));
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
    const char* home = std::getenv("HOME");
    return fs::path(home != nullptr ? home : ".") / ".local" / "share" / "te-workbench" / "runs.sqlite3";
}

RunStore::RunStore(fs::path path) : path_(std::move(path)) {
    std::error_code ec;
    if (path_.has_parent_path()) {
        fs::create_directories(path_.parent_path(), ec);
        if (ec) {
            throw DataError("run store " + path_.string() + ": cannot create directory " + path_.parent_path().string() + " (" +
                            ec.message() + ")");
        }
    }
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw DataError("run store " + path_.string() + ": cannot open (" + message + ")");
    }
    try {
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
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

RunStore::~RunStore() {
    sqlite3_close(db_);
}

void RunStore::fail(const std::string& what) const {
    throw DataError("run store " + path_.string() + ": " + what);
}

void RunStore::execute(const char* sql) const {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        const std::string message = error != nullptr ? error : sqlite3_errmsg(db_);
        sqlite3_free(error);
        fail(message);
    }
}

std::int64_t RunStore::save(const RunRecord& record) {
    const std::string json = record_to_json_text(record);
    execute("BEGIN IMMEDIATE");
    try {
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
            fail(std::string("saving run ") + record.id + ": " + sqlite3_errmsg(db_));
        }
        std::int64_t id = 0;
        {
            Statement lookup(db_, "SELECT id FROM runs WHERE run_id = ?1", *this);
            lookup.bind(1, record.id);
            if (sqlite3_step(lookup.get()) == SQLITE_ROW) {
                id = sqlite3_column_int64(lookup.get(), 0);
            }
        }
        execute("COMMIT");
        return id;
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

std::vector<StoredRun> RunStore::list() const {
    Statement stmt(db_, R"(SELECT id, run_id, created_at, name, backend, precision, device, status, steps, median_ms,
                                  final_loss, peak_mem_bytes, fp8_emulated FROM runs ORDER BY id DESC)",
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
        runs.push_back(std::move(run));
    }
    if (rc != SQLITE_DONE) {
        fail(std::string("listing runs: ") + sqlite3_errmsg(db_));
    }
    return runs;
}

std::optional<RunRecord> RunStore::get(std::int64_t id) const {
    Statement stmt(db_, "SELECT record_json FROM runs WHERE id = ?1", *this);
    stmt.bind(1, id);
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) {
        return std::nullopt;
    }
    if (rc != SQLITE_ROW) {
        fail("reading run " + std::to_string(id) + ": " + sqlite3_errmsg(db_));
    }
    return record_from_json_text(column_text(stmt.get(), 0), path_.string() + " run " + std::to_string(id));
}

bool RunStore::remove(std::int64_t id) {
    Statement stmt(db_, "DELETE FROM runs WHERE id = ?1", *this);
    stmt.bind(1, id);
    if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
        fail("deleting run " + std::to_string(id) + ": " + sqlite3_errmsg(db_));
    }
    return sqlite3_changes(db_) > 0;
}

SaveResult save_run(const std::filesystem::path& path, const RunRecord& record) {
    SaveResult result;
    try {
        RunStore store(path);
        result.id = store.save(record);
    } catch (const std::exception& e) {
        result.error = e.what();
    }
    return result;
}

}  // namespace tewb
