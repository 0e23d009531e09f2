#include "core/results/RecordImport.h"

#include "core/results/RecordJson.h"

namespace tewb {

std::vector<ImportRecord> check_import(const std::vector<std::string>& paths, const RunStore* store) {
    std::vector<ImportRecord> checked;
    for (const std::string& path : paths) {
        const std::vector<RunRecord> records = read_record_files(path);  // DataError names the file
        if (records.empty()) throw ImportError(path + ": holds no records (an empty array)");
        for (std::size_t i = 0; i < records.size(); ++i) {
            const std::string source = records.size() == 1 ? path : path + " [" + std::to_string(i) + "]";
            if (const std::optional<std::string> problem = import_problem(records[i])) {
                throw ImportError(source + ": " + *problem);
            }
            for (const ImportRecord& earlier : checked) {
                if (earlier.record.id == records[i].id) {
                    throw ImportError(source + ": record " + records[i].id + " is also in " + earlier.source);
                }
            }
            ImportRecord item{records[i], source, std::nullopt};
            if (store != nullptr) {
                if (const std::optional<RunStore::Found> stored = store->find(records[i].id)) {
                    if (stored->record_json != record_to_json_text(records[i])) {
                        throw ImportError(source + ": record " + records[i].id + " is already stored as run " +
                                              std::to_string(stored->id) + " with different content",
                                          "delete run " + std::to_string(stored->id) + " first to replace it");
                    }
                    item.stored_as = stored->id;
                }
            }
            checked.push_back(std::move(item));
        }
    }
    return checked;
}

std::vector<std::int64_t> save_import(const std::vector<ImportRecord>& records, RunStore& store) {
    std::vector<RunRecord> fresh;
    for (const ImportRecord& item : records) {
        if (!item.stored_as) fresh.push_back(item.record);
    }
    return store.save_all(fresh);
}

}  // namespace tewb
