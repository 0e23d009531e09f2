#include "core/results/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <utility>
#include <vector>

#include <climits>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common/Error.h"

namespace tewb {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int error = errno) {
    return std::strerror(error);
}

// The path a write really lands on: symlinks followed (also a dangling one, whose target is then
// created), at most 40 deep like the kernel.
fs::path final_target(const fs::path& path) {
    fs::path current = path;
    for (int depth = 0; depth < 40; ++depth) {
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(current, ec))) return current;
        const fs::path target = fs::read_symlink(current, ec);
        if (ec) return current;
        current = target.is_absolute() ? target : current.parent_path() / target;
    }
    throw DataError(path.string() + ": too many levels of symbolic links");
}

std::string kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISFIFO(mode)) return "a FIFO";
    return "not a regular file";
}

bool written_in_place(mode_t mode) {
    return S_ISCHR(mode) || S_ISFIFO(mode);
}

void write_all(int fd, std::string_view content, const fs::path& path) {
    std::size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw DataError(path.string() + ": write failed (" + errno_text() + ")");
        }
        written += static_cast<std::size_t>(n);
    }
}

// A device or a FIFO: opened and written like `cat > path` would, never replaced.
void write_in_place(const fs::path& path, std::string_view content, bool fifo) {
    // O_NONBLOCK so a FIFO nobody reads fails at once (ENXIO) instead of blocking forever.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd < 0) {
        const int error = errno;
        throw DataError(path.string() + ": cannot open for writing (" +
                        (error == ENXIO ? std::string("a FIFO with no reader") : errno_text(error)) + ")");
    }
    if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    try {
        write_all(fd, content, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) {
        throw DataError(path.string() + ": close failed (" + errno_text() + ")");
    }
}

void replace_regular_file(const fs::path& path, std::string_view content, std::optional<mode_t> old_mode) {
    const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
    // Short and fixed-length: the file's own name may already be near NAME_MAX (255 bytes).
    std::string pattern = (directory / ".tewb-XXXXXX.tmp").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = mkstemps(name.data(), 4);
    if (fd < 0) {
        throw DataError(path.string() + ": cannot create a file in " + directory.string() + " (" + errno_text() + ")");
    }
    const auto fail = [&](const std::string& what, int error) {
        ::close(fd);
        ::unlink(name.data());
        throw DataError(path.string() + ": " + what + " (" + errno_text(error) + ")");
    };
    try {
        write_all(fd, content, path);
    } catch (const DataError&) {
        const int error = errno;
        fail("write failed", error);
    }
    const mode_t mode = old_mode ? (*old_mode & 07777) : 0644;
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
        fail("flush failed", errno);
    }
    if (::close(fd) != 0) {
        const int error = errno;
        ::unlink(name.data());
        throw DataError(path.string() + ": close failed (" + errno_text(error) + ")");
    }
    if (std::rename(name.data(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(name.data());
        throw DataError(path.string() + ": cannot replace the file (" + errno_text(error) + ")");
    }
    // The rename itself reaches the disk only with the directory: without this a crash can lose the file.
    if (const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

struct FileIdentity {
    dev_t device;
    ino_t inode;
    friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

std::optional<FileIdentity> identity(const fs::path& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return std::nullopt;
    return FileIdentity{info.st_dev, info.st_ino};
}

// This program's executable, one of the workbench's programs installed beside it (te-bench hands its LibTorch
// commands to te-bench-torch), or a library this process loaded: writing over any of them breaks the
// installation or the running process. What it is, for the message; nothing for any other file.
std::optional<std::string> program_file_at(const FileIdentity& target) {
    if (const auto self = identity("/proc/self/exe"); self && *self == target) return "this program's own executable";
    std::error_code error;
    const fs::path folder = fs::read_symlink("/proc/self/exe", error).parent_path();
    if (!error) {
        for (const char* name : {"te-bench", "te-bench-torch", "te-workbench", "te-workbench-notice"}) {
            if (const auto program = identity(folder / name); program && *program == target) {
                return std::string("the program ") + name + " of this installation";
            }
        }
    }
    // /proc/self/maps: "address perms offset dev inode path"; a file with an executable mapping is a library (or
    // the program); fonts, the locale archive, a store's -shm are mapped too, but not executable.
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        const std::size_t perms = line.find(' ');
        const std::size_t slash = line.find(" /");
        if (perms == std::string::npos || slash == std::string::npos || line.size() < perms + 4 || line[perms + 3] != 'x') continue;
        const fs::path mapped = line.substr(slash + 1);
        if (const auto library = identity(mapped); library && *library == target) {
            return "a library this program loaded (" + mapped.filename().string() + ")";
        }
    }
    return std::nullopt;
}

// Two spellings of one location ("./a.json", "dir/../a.json", a symlink to it) compare equal.
fs::path comparable(const fs::path& path) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(final_target(path), ec).lexically_normal();
    fs::path result = fs::weakly_canonical(absolute, ec);
    return ec ? absolute : result;
}

bool same_file(const fs::path& a, const fs::path& b) {
    if (comparable(a) == comparable(b)) return true;
    const auto ia = identity(a);
    const auto ib = identity(b);
    return ia && ib && *ia == *ib;
}

// Where a write to `path` puts its directory entry: the directory, by identity (so a symlinked or
// bind-mounted spelling of it is the same directory), and the name. Also for a file that does not exist yet.
struct EntryLocation {
    FileIdentity directory;
    std::string name;
    friend bool operator==(const EntryLocation&, const EntryLocation&) = default;
};

std::optional<EntryLocation> entry_location(const fs::path& path) {
    fs::path target;
    try {
        target = final_target(path);
    } catch (const DataError&) {
        return std::nullopt;
    }
    const std::string name = target.filename().string();
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    const std::optional<FileIdentity> directory = identity(target.has_parent_path() ? target.parent_path() : fs::path("."));
    if (!directory) return std::nullopt;
    return EntryLocation{*directory, name};
}

// Every run store this process has opened (protect_run_store); never forgotten: a closed store is still data.
struct ProtectedStores {
    std::mutex mutex;
    std::vector<fs::path> paths;
};

ProtectedStores& protected_stores() {
    static ProtectedStores stores;
    return stores;
}

// Every token file a run of this process trained on, or the GUI holds a run of (protect_training_data), by
// identity: a rename or another spelling of it is the same data.
struct ProtectedData {
    std::mutex mutex;
    std::vector<std::pair<FileIdentity, fs::path>> files;
};

ProtectedData& protected_data() {
    static ProtectedData data;
    return data;
}

// "the training data of a run (PATH)" when writing `target` would replace a protected token file. A file no
// longer at the path it was protected by was deleted or replaced: its inode may now be another file's.
std::optional<std::string> training_data_at(const FileIdentity& target) {
    std::vector<std::pair<FileIdentity, fs::path>> files;
    {
        ProtectedData& registry = protected_data();
        const std::lock_guard lock(registry.mutex);
        files = registry.files;
    }
    for (const auto& [known, path] : files) {
        if (known == target && identity(path) == known) return "the training data of a run (" + path.string() + ")";
    }
    return std::nullopt;
}

std::optional<std::string> protected_store_file_at(const fs::path& path) {
    std::vector<fs::path> stores;
    {
        ProtectedStores& registry = protected_stores();
        const std::lock_guard lock(registry.mutex);
        stores = registry.paths;
    }
    for (const fs::path& store : stores) {
        if (std::optional<std::string> what = run_store_file_at(path, store)) return what;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> run_store_file_at(const fs::path& path, const fs::path& store) {
    if (path.empty() || path == "-" || store.empty()) return std::nullopt;
    std::vector<fs::path> spellings{store};
    try {
        // SQLite opens a store reached through a symlink at the link's target, and keeps its -wal there.
        if (fs::path resolved = final_target(store); resolved != store) spellings.push_back(std::move(resolved));
    } catch (const DataError&) {
    }
    const std::optional<FileIdentity> written = identity(path);
    const std::optional<EntryLocation> entry = entry_location(path);
    for (const fs::path& spelling : spellings) {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
            const fs::path companion = spelling.string() + suffix;
            const std::optional<FileIdentity> existing = identity(companion);
            const std::optional<EntryLocation> companion_entry = entry_location(companion);
            if ((written && existing && *written == *existing) || (entry && companion_entry && *entry == *companion_entry)) {
                return *suffix == '\0' ? "the run store " + store.string()
                                        : "a file of the run store " + store.string() + " (its " + (suffix + 1) + " file " +
                                              companion.string() + ")";
            }
        }
    }
    return std::nullopt;
}

void protect_run_store(const fs::path& store) {
    if (store.empty()) return;
    ProtectedStores& registry = protected_stores();
    const std::lock_guard lock(registry.mutex);
    for (const fs::path& known : registry.paths) {
        if (known == store) return;
    }
    registry.paths.push_back(store);
}

void protect_training_data(const fs::path& file) {
    const std::optional<FileIdentity> id = identity(file);
    if (!id) return;
    ProtectedData& registry = protected_data();
    const std::lock_guard lock(registry.mutex);
    for (const auto& [known, path] : registry.files) {
        if (known == *id) return;
    }
    registry.files.emplace_back(*id, file);
}

void write_file_atomically(const fs::path& path, std::string_view content) {
    // Checked again at the write: the store's -wal may exist by now, and a GUI dialog has no earlier check.
    if (const std::optional<std::string> store = protected_store_file_at(path)) {
        throw DataError(path.string() + ": is " + *store + ", which writing here would destroy; nothing was written");
    }
    if (const auto target = identity(path)) {
        std::optional<std::string> what = program_file_at(*target);
        if (!what) what = training_data_at(*target);
        if (what) throw DataError(path.string() + ": is " + *what + ", which writing here would destroy; nothing was written");
    }
    // A device or FIFO reached through a link the kernel resolves itself (/dev/stdout -> /proc/self/fd/1 ->
    // "pipe:[…]", which names no file) is opened through the path as given.
    struct stat direct {};
    if (::stat(path.c_str(), &direct) == 0 && written_in_place(direct.st_mode)) {
        write_in_place(path, content, S_ISFIFO(direct.st_mode));
        return;
    }
    const fs::path target = final_target(path);
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0) {
        if (written_in_place(info.st_mode)) {
            write_in_place(target, content, S_ISFIFO(info.st_mode));
            return;
        }
        if (!S_ISREG(info.st_mode)) {
            throw DataError(path.string() + ": is " + kind_of(info.st_mode) + "; only a regular file is replaced");
        }
        replace_regular_file(target, content, info.st_mode);
        return;
    }
    replace_regular_file(target, content, std::nullopt);
}

void check_output_path(std::string_view flag, const fs::path& path) {
    const std::string prefix = std::string(flag) + " " + path.string() + ": ";
    if (path.empty()) {
        throw ConfigError(std::string(flag) + ": empty path; allowed: a file path");
    }
    if (const std::optional<std::string> store = protected_store_file_at(path)) {
        throw ConfigError(prefix + "is " + *store + ", which writing here would destroy; allowed: any other path");
    }
    if (const auto target = identity(path)) {
        if (const std::optional<std::string> program = program_file_at(*target)) {
            throw ConfigError(prefix + "is " + *program + "; allowed: any other path");
        }
        if (const std::optional<std::string> data = training_data_at(*target)) {
            throw ConfigError(prefix + "is " + *data + ", which writing here would destroy; allowed: any other path");
        }
    }
    struct stat direct {};
    if (::stat(path.c_str(), &direct) == 0 && written_in_place(direct.st_mode)) {  // as write_file_atomically
        if (::access(path.c_str(), W_OK) != 0) throw ConfigError(prefix + "exists and is not writable (" + errno_text() + ")");
        return;
    }
    fs::path target;
    try {
        target = final_target(path);
    } catch (const DataError& e) {
        throw ConfigError(std::string(flag) + " " + e.what());
    }
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0) {
        if (S_ISDIR(info.st_mode)) {
            throw ConfigError(prefix + "is a directory; allowed: a file path");
        }
        if (!S_ISREG(info.st_mode) && !written_in_place(info.st_mode)) {
            throw ConfigError(prefix + "is " + kind_of(info.st_mode) +
                              ", which is never replaced; allowed: a regular file, a new path, a character device or a FIFO");
        }
        if (::access(target.c_str(), W_OK) != 0) {
            throw ConfigError(prefix + "exists and is not writable (" + errno_text() + ")");
        }
        if (written_in_place(info.st_mode)) return;  // written through, its directory does not matter
    }
    const fs::path directory = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(directory, ec)) {
        throw ConfigError(prefix + "directory " + directory.string() + " does not exist; create it first");
    }
    // /proc and /sys take no new files and replace none: found out before the work, and named before
    // writability (a read-only mount of /sys would otherwise hide the reason).
    struct statfs where {};
    if (::statfs(directory.c_str(), &where) == 0 && (where.f_type == PROC_SUPER_MAGIC || where.f_type == SYSFS_MAGIC)) {
        throw ConfigError(prefix + "directory " + directory.string() + " is in the kernel's " +
                          (where.f_type == PROC_SUPER_MAGIC ? "/proc" : "/sys") + " file system, which holds no files to write; "
                          "allowed: a path on a disk");
    }
    if (::access(directory.c_str(), W_OK) != 0) {
        throw ConfigError(prefix + "directory " + directory.string() + " is not writable (" + errno_text() + ")");
    }
    if (target.filename().string().size() > 255) {
        throw ConfigError(prefix + "file name is " + std::to_string(target.filename().string().size()) +
                          " bytes long; allowed: at most 255");
    }
    if (target.string().size() >= PATH_MAX) {
        throw ConfigError(prefix + "the path is " + std::to_string(target.string().size()) + " bytes long; allowed: less than " +
                          std::to_string(PATH_MAX));
    }
}

std::optional<std::string> standard_stream_at(const fs::path& path, bool regular_files_only) {
    const std::optional<FileIdentity> target = identity(path);
    if (!target) return std::nullopt;
    for (const auto& [fd, name] : {std::pair{STDOUT_FILENO, "standard output"}, std::pair{STDERR_FILENO, "standard error"}}) {
        struct stat info {};
        if (::fstat(fd, &info) == 0 && (!regular_files_only || S_ISREG(info.st_mode)) &&
            FileIdentity{info.st_dev, info.st_ino} == *target) {
            return std::string(name);
        }
    }
    return std::nullopt;
}

std::optional<StreamOnStore> standard_stream_on_protected_store() {
    for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
        struct stat info {};
        if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) continue;
        if (std::optional<std::string> what = protected_store_file_at("/proc/self/fd/" + std::to_string(fd))) {
            return StreamOnStore{fd, std::move(*what)};
        }
    }
    return std::nullopt;
}

bool refer_to_one_file(const fs::path& a, const fs::path& b) {
    return same_file(a, b);
}

bool is_standard_output(const fs::path& path) {
    if (path == "-") return true;
    // The null device discards whatever comes: output sent there mixes with nothing, even when stdout is it too.
    const std::optional<FileIdentity> target = identity(path);
    if (target && target == identity("/dev/null")) return false;
    return standard_stream_at(path, /*regular_files_only=*/false) == "standard output";
}

void check_outputs(const std::vector<OutputRequest>& outputs, const std::optional<fs::path>& store) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const OutputRequest& out = outputs[i];
        // Two outputs in one stream cannot be read apart: a reader cannot tell where one ends.
        if (is_standard_output(out.path)) {
            for (std::size_t j = 0; j < i; ++j) {
                const OutputRequest& earlier = outputs[j];
                if (is_standard_output(earlier.path)) {
                    throw ConfigError(out.flag + " " + out.path.string() + ": is standard output, which " + earlier.flag + " " +
                                      earlier.path.string() + " writes to already; the two would be mixed in one stream; "
                                      "allowed: standard output for one output at most ('-' where the option takes it), a "
                                      "file for each other one");
                }
            }
        }
        if (out.path == "-") continue;
        check_output_path(out.flag, out.path);
        if (const auto target = identity(out.path)) {
            // /dev/stdout, /proc/self/fd/1: the file the shell redirected the output to would be replaced
            // whole, losing what was written to it before (and after, through the old file).
            if (const std::optional<std::string> name = standard_stream_at(out.path, /*regular_files_only=*/true)) {
                throw ConfigError(out.flag + " " + out.path.string() + ": is the file " + *name +
                                  " goes to, which writing here would replace; allowed: '-' where the option takes "
                                  "it, or another path");
            }
        }
        if (store) {
            if (const std::optional<std::string> what = run_store_file_at(out.path, *store)) {
                throw ConfigError(out.flag + " " + out.path.string() + ": is " + *what +
                                  ", which writing here would destroy; allowed: any other path");
            }
        }
        for (std::size_t j = 0; j < i; ++j) {
            const OutputRequest& earlier = outputs[j];
            if (earlier.path != "-" && same_file(out.path, earlier.path)) {
                throw ConfigError(out.flag + " " + out.path.string() + ": the same file as " + earlier.flag + " " +
                                  earlier.path.string() + "; one would overwrite the other; allowed: a different path");
            }
        }
    }
}

}  // namespace tewb
