/* Fault injection for tests: an LD_PRELOAD library that makes chosen file operations fail the way a full
 * disk, a failing disk or a read-only file system does, so the run store and every export are tested
 * against them on each CI run. Configured by the environment:
 *   TEWB_FAULT_PATH   substring of the path a call must touch to fail (required; nothing fails without it)
 *   TEWB_FAULT_ERRNO  ENOSPC (default), EIO, EROFS or EDQUOT
 *   TEWB_FAULT_OPS    write: write/pwrite/fsync/fdatasync/ftruncate on open files of that path (default);
 *                     open: opening such a path for writing, creating, renaming, removing it
 *   TEWB_FAULT_SKIP   how many matching calls succeed before the faults start (default 0)
 * and, on its own, TEWB_FAULT_SOCKET=EMFILE: every socket() fails as in a process out of file descriptors.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int fault_errno(void) {
    const char* name = getenv("TEWB_FAULT_ERRNO");
    if (name == NULL || strcmp(name, "ENOSPC") == 0) return ENOSPC;
    if (strcmp(name, "EIO") == 0) return EIO;
    if (strcmp(name, "EROFS") == 0) return EROFS;
    if (strcmp(name, "EDQUOT") == 0) return EDQUOT;
    return ENOSPC;
}

static int ops_are(const char* kind) {
    const char* ops = getenv("TEWB_FAULT_OPS");
    return strcmp(ops != NULL ? ops : "write", kind) == 0;
}

/* Counts matching calls; true once TEWB_FAULT_SKIP of them have passed. */
static int should_fail(const char* path) {
    static long seen = 0;
    const char* needle = getenv("TEWB_FAULT_PATH");
    if (needle == NULL || *needle == '\0' || path == NULL || strstr(path, needle) == NULL) return 0;
    const char* skip = getenv("TEWB_FAULT_SKIP");
    return seen++ >= (skip != NULL ? atol(skip) : 0);
}

static int fd_should_fail(int fd) {
    if (!ops_are("write")) return 0;
    char link[64];
    char path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    return should_fail(path);
}

static int path_should_fail(const char* path, int flags) {
    if (!ops_are("open")) return 0;
    if ((flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) == 0) return 0;
    return should_fail(path);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
#define FAIL(value) \
    do {            \
        errno = fault_errno(); \
        return value; \
    } while (0)

ssize_t write(int fd, const void* buffer, size_t count) {
    if (fd > 2 && fd_should_fail(fd)) FAIL(-1);
    return NEXT(write)(fd, buffer, count);
}

ssize_t pwrite(int fd, const void* buffer, size_t count, off_t offset) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(pwrite)(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void* buffer, size_t count, off64_t offset) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(pwrite64)(fd, buffer, count, offset);
}

int fsync(int fd) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(fsync)(fd);
}

int fdatasync(int fd) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(fdatasync)(fd);
}

int ftruncate(int fd, off_t length) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(ftruncate)(fd, length);
}

int ftruncate64(int fd, off64_t length) {
    if (fd_should_fail(fd)) FAIL(-1);
    return NEXT(ftruncate64)(fd, length);
}

static mode_t mode_argument(int flags, va_list args) {
    return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(args, int) : 0;
}

int open(const char* path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    const mode_t mode = mode_argument(flags, args);
    va_end(args);
    if (path_should_fail(path, flags)) FAIL(-1);
    return NEXT(open)(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    const mode_t mode = mode_argument(flags, args);
    va_end(args);
    if (path_should_fail(path, flags)) FAIL(-1);
    return NEXT(open64)(path, flags, mode);
}

int openat(int dir, const char* path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    const mode_t mode = mode_argument(flags, args);
    va_end(args);
    if (path_should_fail(path, flags)) FAIL(-1);
    return NEXT(openat)(dir, path, flags, mode);
}

int mkstemps(char* pattern, int suffix_length) {
    if (path_should_fail(pattern, O_CREAT)) FAIL(-1);
    return NEXT(mkstemps)(pattern, suffix_length);
}

int mkstemp(char* pattern) {
    if (path_should_fail(pattern, O_CREAT)) FAIL(-1);
    return NEXT(mkstemp)(pattern);
}

int rename(const char* from, const char* to) {
    if (path_should_fail(to, O_CREAT) || path_should_fail(from, O_CREAT)) FAIL(-1);
    return NEXT(rename)(from, to);
}

int mkdir(const char* path, mode_t mode) {
    if (path_should_fail(path, O_CREAT)) FAIL(-1);
    return NEXT(mkdir)(path, mode);
}

int socket(int domain, int type, int protocol) {
    const char* fault = getenv("TEWB_FAULT_SOCKET");
    if (fault != NULL && strcmp(fault, "EMFILE") == 0) {
        errno = EMFILE;
        return -1;
    }
    return NEXT(socket)(domain, type, protocol);
}
