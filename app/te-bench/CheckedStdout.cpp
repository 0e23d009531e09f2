#include "CheckedStdout.h"

#include <cerrno>
#include <cstring>
#include <iostream>

#include <unistd.h>

namespace tewb::cli {

namespace {
constexpr std::size_t kFlushAt = 1 << 16;
}

CheckedStdout::CheckedStdout() : previous_(std::cout.rdbuf(this)) {}

CheckedStdout::~CheckedStdout() {
    write_out();
    std::cout.rdbuf(previous_);
}

CheckedStdout::int_type CheckedStdout::overflow(int_type ch) {
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
        buffer_.push_back(traits_type::to_char_type(ch));
        if (buffer_.size() >= kFlushAt) write_out();
    }
    return traits_type::not_eof(ch);
}

std::streamsize CheckedStdout::xsputn(const char* text, std::streamsize count) {
    buffer_.append(text, static_cast<std::size_t>(count));
    if (buffer_.size() >= kFlushAt) write_out();
    return count;
}

int CheckedStdout::sync() {
    write_out();
    return first_errno_ == 0 ? 0 : -1;
}

void CheckedStdout::write_out() {
    std::size_t written = 0;
    while (first_errno_ == 0 && written < buffer_.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, buffer_.data() + written, buffer_.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            first_errno_ = errno;
        } else {
            written += static_cast<std::size_t>(n);
        }
    }
    buffer_.clear();  // after an error nothing more can arrive in order: drop it rather than grow
}

std::string CheckedStdout::flush_and_check() {
    write_out();
    return first_errno_ == 0 ? std::string() : std::string(std::strerror(first_errno_));
}

}  // namespace tewb::cli
