#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tewb {

// Writes `content` to a temporary file beside `path`, flushes it to disk and renames it over `path`:
// readers see the old file or the whole new one, never half of it. Throws DataError on failure, with
// the temporary file removed.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Throws ConfigError ("<flag> <path>: <why>") when `path` could not be written: its directory is
// missing or not writable, or it names a directory. Checked before work starts so no run is wasted.
void check_output_path(std::string_view flag, const std::filesystem::path& path);

}  // namespace tewb
