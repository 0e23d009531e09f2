// A run store opened from arbitrary bytes (a damaged or foreign file passed with --store): reading
// commands list and show what they can, or stop with DataError; opening to save may migrate or refuse.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/common/Error.h"
#include "core/results/RunStore.h"

namespace {
const std::filesystem::path& scratch() {
    static const std::filesystem::path dir = [] {
        std::string pattern = (std::filesystem::temp_directory_path() / "tewb-fuzz-store-XXXXXX").string();
        return std::filesystem::path(::mkdtemp(pattern.data()));
    }();
    return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::filesystem::path path = scratch() / "runs.sqlite3";
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path.string() + suffix);
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    for (const auto access : {tewb::RunStore::Access::ReadOnly, tewb::RunStore::Access::ReadWrite}) {
        try {
            tewb::RunStore store(path, access);
            for (const tewb::StoredRun& run : store.list()) {
                try {
                    (void)store.get(run.id);
                } catch (const tewb::DataError&) {
                }
            }
        } catch (const tewb::DataError&) {
        }
    }
    return 0;
}
