#include "core/common/StandardStreams.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace tewb {

void occupy_standard_descriptors() {
    for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            const int opened = ::open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY);
            if (opened >= 0 && opened != fd) {
                ::dup2(opened, fd);
                ::close(opened);
            }
        }
    }
}

std::string standard_output_problem() {
    errno = 0;
    if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return {};
    const int error = errno;
    return error != 0 ? std::strerror(error) : "write failed";
}

}  // namespace tewb
