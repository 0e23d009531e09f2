#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tewb {

// Every file te-bench and te-workbench write (--json, --csv, exports, reports) goes through here, under
// one rule: only a regular file (or a new path) is ever replaced, and then atomically. In detail:
//   - a symlink is followed: its target is written, the link stays;
//   - a character device (/dev/null, /dev/stdout) or a FIFO is written in place, never replaced; a FIFO
//     with no reader is an error, not a hang;
//   - anything else that is not a regular file (a directory, a socket, a block device) is refused;
//   - a regular file or a new path: the content goes to a temporary file beside it (a short name, so a
//     250-character file name still works), is flushed to disk and renamed over it; readers see the old
//     file or the whole new one. Throws DataError on failure, with the temporary file removed.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Throws ConfigError ("<flag> <path>: <why>") when `path` could not be written under the rule above: its
// directory is missing or not writable, it names a directory or another kind of file that is never
// replaced, or it exists and is not writable. Checked before work starts so no run is wasted.
void check_output_path(std::string_view flag, const std::filesystem::path& path);

// One output a command was asked to write: the flag that named it and the path ("-" is standard output).
struct OutputRequest {
    std::string flag;
    std::filesystem::path path;
};

// check_output_path for each, and rules across them: at most one is standard output, under any spelling
// (is_standard_output); no two outputs are the same file (by path, through symlinks, or hard links); none is
// the run store `store` or one of its companion files (-wal, -shm, -journal), which an export would otherwise
// destroy; none is the regular file standard output or error is redirected to (/dev/stdout would replace it
// whole), nor this program's executable.
void check_outputs(const std::vector<OutputRequest>& outputs, const std::optional<std::filesystem::path>& store);

// What of the run store `store` writing `path` would replace: "the run store …" or "a file of the run store …
// (its wal file …)" when `path` is the store or one of its companion files (-wal, -shm, -journal), existing
// or not, through any spelling: the same file by device and inode (a hard link, a symlink), or the same
// directory entry by the directory's identity and the name (a symlinked or bind-mounted folder, the store
// opened through a symlink, a companion that does not exist yet). Nothing when it is none of them.
std::optional<std::string> run_store_file_at(const std::filesystem::path& path, const std::filesystem::path& store);

// Adds `store` to the stores this process protects (RunStore does it when it opens one, te-workbench for its
// default store before it checks its arguments): check_output_path refuses them and their companion files,
// and write_file_atomically refuses to write onto them.
void protect_run_store(const std::filesystem::path& store);

// Adds a token file (by its identity: any other path to it too) to the training data this process protects:
// check_output_path and write_file_atomically refuse to write onto it. TokenFile does it for every file a run
// reads, the workbench for every run in its window that trained on one. A path that does not exist is ignored.
void protect_training_data(const std::filesystem::path& file);

// A standard stream (STDOUT_FILENO or STDERR_FILENO) that writes into a protected run store or one of its
// companion files (`exec 1<>runs.sqlite3`), and what that file is; nothing when neither does. Both programs
// check it before they write anything: whatever they printed would overwrite the store.
struct StreamOnStore {
    int fd;
    std::string what;
};
std::optional<StreamOnStore> standard_stream_on_protected_store();

// Whether `a` and `b` are one file: the same location through any spelling (".", "..", symlinks), or the same
// file by device and inode (a hard link).
bool refer_to_one_file(const std::filesystem::path& a, const std::filesystem::path& b);

// Whether an output `path` writes to standard output: "-", or a path to what file descriptor 1 writes to
// (/dev/stdout, /dev/fd/1, /proc/self/fd/1, or the terminal, pipe, FIFO or file itself), except the null device.
bool is_standard_output(const std::filesystem::path& path);

// "standard output" or "standard error" when `path` is what that stream writes to (the same file, device,
// pipe or terminal, by identity, through any spelling such as /dev/stdout); with `regular_files_only`, only a
// regular file counts (what replacing `path` would destroy). Nothing when it is neither.
std::optional<std::string> standard_stream_at(const std::filesystem::path& path, bool regular_files_only);

}  // namespace tewb
