// Record import: any bytes as a JSON file given to `te-bench history import`. Reading may refuse them
// (DataError) but never crash, and a record that is read survives a write-and-read round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/common/Error.h"
#include "core/results/RecordJson.h"
#include "core/results/RunRecord.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    tewb::RunRecord record;
    try {
        record = tewb::record_from_json_text(text, "fuzz");
    } catch (const tewb::DataError&) {
        return 0;
    }
    (void)tewb::import_problem(record);
    const std::string written = tewb::record_to_json_text(record);
    const tewb::RunRecord again = tewb::record_from_json_text(written, "round trip");
    if (tewb::record_to_json_text(again) != written) std::abort();  // what we write, we read back the same
    return 0;
}
