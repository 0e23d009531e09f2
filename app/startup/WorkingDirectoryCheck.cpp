// A program that loads LibTorch cannot start in a working directory that no longer exists: oneMKL, linked into
// LibTorch, asks for the working directory while the libraries are being loaded and aborts the process with "Intel
// oneMKL FATAL ERROR: Cannot load libtorch_cpu.so" — before main(), for every command. This check runs earlier still:
// the dynamic linker runs an executable's .preinit_array before any shared library's initializer, so the program
// can say what is wrong and exit 1 instead. Only system calls here: the C library is not initialized yet.
#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace {

void write_text(const char* text) {
    std::size_t left = std::strlen(text);
    while (left > 0) {
        const ssize_t done = ::write(STDERR_FILENO, text, left);
        if (done <= 0) return;
        text += done;
        left -= static_cast<std::size_t>(done);
    }
}

void refuse_a_vanished_working_directory(int argc, char** argv, char** /*envp*/) {
    char path[4096];
    if (::getcwd(path, sizeof path) != nullptr || errno != ENOENT) return;
    const char* program = argc > 0 && argv != nullptr && argv[0] != nullptr ? argv[0] : "te-workbench";
    if (const char* slash = std::strrchr(program, '/')) program = slash + 1;
    write_text(program);
    write_text(": the working directory no longer exists (it was deleted); LibTorch cannot start in it. Change to an "
               "existing folder (cd) and run the command again.\n");
    ::_exit(1);
}

}  // namespace

__attribute__((section(".preinit_array"), used)) void (*const tewb_working_directory_check)(int, char**, char**) =
    &refuse_a_vanished_working_directory;
