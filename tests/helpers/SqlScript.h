#pragma once

#include <string>

#include <sqlite3.h>

// Runs `sql` on the SQLite file at `path` (made when missing) and closes it: how a test edits or damages a store
// behind the programs' back. Returns SQLite's error text, empty when every statement ran.
inline std::string run_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
        const std::string error = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
        sqlite3_close(db);
        return error;
    }
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    std::string error = rc == SQLITE_OK ? std::string() : message != nullptr ? message : "error " + std::to_string(rc);
    sqlite3_free(message);
    sqlite3_close(db);
    return error;
}
