#include "core/results/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common/Error.h"

namespace tewb {

namespace fs = std::filesystem;

namespace {
std::string errno_text() {
    return std::strerror(errno);
}
}  // namespace

void write_file_atomically(const fs::path& path, std::string_view content) {
    const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
    std::string pattern = (directory / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = mkstemp(name.data());
    if (fd < 0) {
        throw DataError(path.string() + ": cannot create a file in " + directory.string() + " (" + errno_text() + ")");
    }
    const auto fail = [&](const std::string& what) {
        const std::string reason = errno_text();
        ::close(fd);
        ::unlink(name.data());
        throw DataError(path.string() + ": " + what + " (" + reason + ")");
    };
    std::size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("write failed");
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
        fail("flush failed");
    }
    if (::close(fd) != 0) {
        const std::string reason = errno_text();
        ::unlink(name.data());
        throw DataError(path.string() + ": close failed (" + reason + ")");
    }
    if (std::rename(name.data(), path.c_str()) != 0) {
        const std::string reason = errno_text();
        ::unlink(name.data());
        throw DataError(path.string() + ": cannot replace the file (" + reason + ")");
    }
}

void check_output_path(std::string_view flag, const fs::path& path) {
    const std::string prefix = std::string(flag) + " " + path.string() + ": ";
    if (path.empty()) {
        throw ConfigError(std::string(flag) + ": empty path; allowed: a file path");
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw ConfigError(prefix + "is a directory; allowed: a file path");
    }
    const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
    if (!fs::is_directory(directory, ec)) {
        throw ConfigError(prefix + "directory " + directory.string() + " does not exist; create it first");
    }
    if (::access(directory.c_str(), W_OK) != 0) {
        throw ConfigError(prefix + "directory " + directory.string() + " is not writable (" + errno_text() + ")");
    }
    if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) {
        throw ConfigError(prefix + "exists and is not writable (" + errno_text() + ")");
    }
}

}  // namespace tewb
