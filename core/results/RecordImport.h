#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/Error.h"
#include "core/results/RunRecord.h"
#include "core/results/RunStore.h"

namespace tewb {

// One record of an import, checked, and what taking it in will do.
struct ImportRecord {
    RunRecord record;
    std::string source;                     // "runs.json", or "runs.json [2]" for one record of several
    std::optional<std::int64_t> stored_as;  // the very same record is stored already, as this run
};

// Why an import cannot go ahead: what() is "<source>: <problem>"; `remedy`, where there is one beyond fixing
// the file, says what the user can do ("delete run 3 first to replace it").
class ImportError : public DataError {
public:
    ImportError(const std::string& message, std::string remedy = {}) : DataError(message), remedy_(std::move(remedy)) {}
    const std::string& remedy() const { return remedy_; }

private:
    std::string remedy_;
};

// The import rule, for `te-bench history import` and the GUI's open alike: every file is read and every record
// checked before anything is taken in, so an import is all or nothing. A file must read and hold at least one
// record; each record must pass import_problem (RunRecord.h: names under --name's rule among the rest); no
// record id may come twice. With `store`, a record already stored must be stored with the same content (it is
// then marked stored_as, not saved again). Throws ImportError at the first problem (a file that does not read: its DataError).
std::vector<ImportRecord> check_import(const std::vector<std::string>& paths, const RunStore* store);

// Saves the records not stored yet in one transaction; their new run ids, in order.
std::vector<std::int64_t> save_import(const std::vector<ImportRecord>& records, RunStore& store);

}  // namespace tewb
