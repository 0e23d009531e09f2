#pragma once

#include <streambuf>
#include <string>

namespace tewb::cli {

// std::cout's buffer while te-bench runs: collects what is printed and writes it to file descriptor 1
// itself, remembering the first write error with its errno. stdio would report a failed flush only as
// "an error happened", and lose the reason (ENOSPC, EBADF) to whatever call came next.
class CheckedStdout : public std::streambuf {
public:
    CheckedStdout();
    ~CheckedStdout() override;
    CheckedStdout(const CheckedStdout&) = delete;
    CheckedStdout& operator=(const CheckedStdout&) = delete;

    // Writes what is buffered; returns the first error so far ("No space left on device"), or empty.
    std::string flush_and_check();

protected:
    int_type overflow(int_type ch) override;
    std::streamsize xsputn(const char* text, std::streamsize count) override;
    int sync() override;

private:
    void write_out();

    std::string buffer_;
    int first_errno_ = 0;
    std::streambuf* previous_ = nullptr;
};

}  // namespace tewb::cli
