#include "core/data/TokenFile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/common/Error.h"
#include "core/common/NumberText.h"
#include "core/common/TextCheck.h"
#include "core/results/AtomicFile.h"

namespace tewb {

namespace {

constexpr double kMaxValFraction = 0.5;
constexpr std::size_t kScanChunk = 1 << 20;  // a multiple of every token width, as the llm.c header is

std::int32_t little_int32(const unsigned char* p) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                                     static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint32_t token_at(const unsigned char* p, int width) {
    switch (width) {
    case 1: return p[0];
    case 2: return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8;
    default:
        return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 | static_cast<std::uint32_t>(p[2]) << 16 |
               static_cast<std::uint32_t>(p[3]) << 24;
    }
}

// The largest of `count` tokens of `Width` bytes; one loop per width, so a 10 GB file scans at memory speed.
template <int Width>
std::uint32_t largest_token(const unsigned char* p, std::size_t count) {
    std::uint32_t largest = 0;
    for (std::size_t i = 0; i < count; ++i, p += Width) largest = std::max(largest, token_at(p, Width));
    return largest;
}

bool ends_with_bin(std::string_view name) {
    if (name.size() < 4) return false;
    std::string tail(name.substr(name.size() - 4));
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return tail == ".bin";
}

bool has_llmc_magic(std::string_view head) {
    if (head.size() < 4) return false;
    const std::int32_t magic = little_int32(reinterpret_cast<const unsigned char*>(head.data()));
    return magic == kLlmcGpt2Magic || magic == kLlmcLlama3Magic;
}

TokenLayout llmc_layout(std::string_view what, std::uint64_t size, std::string_view head) {
    const auto bytes = static_cast<std::int64_t>(size);
    if (bytes < kLlmcHeaderBytes) {
        throw ConfigError(std::string(what) + ": " + std::to_string(bytes) + " bytes, shorter than llm.c's header of " +
                          std::to_string(kLlmcHeaderBytes) + " bytes (256 int32); allowed: a file written by llm.c's "
                          "write_datafile, or --data-format bytes or uint16");
    }
    const auto* h = reinterpret_cast<const unsigned char*>(head.data());
    const std::int32_t magic = little_int32(h);
    const std::int32_t version = little_int32(h + 4);
    const std::int32_t count = little_int32(h + 8);
    int width = 0;
    if (magic == kLlmcGpt2Magic) {
        if (version != kLlmcGpt2Version) {
            throw ConfigError(std::string(what) + ": llm.c magic " + std::to_string(magic) + " with version " + std::to_string(version) +
                              "; allowed: version " + std::to_string(kLlmcGpt2Version) + " (GPT-2, uint16 tokens)");
        }
        width = 2;
    } else if (magic == kLlmcLlama3Magic) {
        if (version != kLlmcLlama3Version) {
            throw ConfigError(std::string(what) + ": llm.c magic " + std::to_string(magic) + " with version " + std::to_string(version) +
                              "; allowed: version " + std::to_string(kLlmcLlama3Version) + " (Llama 3, uint32 tokens)");
        }
        width = 4;
    } else {
        throw ConfigError(std::string(what) + ": magic number " + std::to_string(magic) + " is not llm.c's; allowed: " +
                          std::to_string(kLlmcGpt2Magic) + " (GPT-2, version 1, uint16 tokens) or " + std::to_string(kLlmcLlama3Magic) +
                          " (Llama 3, version 7, uint32 tokens)");
    }
    const std::int64_t body = bytes - kLlmcHeaderBytes;
    if (count <= 0) {
        throw ConfigError(std::string(what) + ": llm.c's header says " + std::to_string(count) + " tokens (" +
                          std::to_string(body) + " bytes follow it); allowed: a token count of 1 or more that matches "
                          "the bytes after the header (the header is damaged or was not written by llm.c)");
    }
    if (body != static_cast<std::int64_t>(count) * width) {
        throw ConfigError(std::string(what) + ": llm.c's header says " + std::to_string(count) + " tokens, but the file holds " +
                          std::to_string(body) + " bytes after the header (" + std::to_string(width) + " bytes a token: " +
                          (body % width == 0 ? std::to_string(body / width) + " tokens" : std::string("not a whole number of tokens")) +
                          "); the file is truncated or was not written by llm.c");
    }
    return {TokenFormat::Llmc, kLlmcHeaderBytes, width, count};
}

// One pass over the file in chunks (the page cache, not this process, holds what was read): its SHA-256 and the
// largest token.
struct Scan {
    std::string sha256;
    std::uint32_t max_token = 0;
};

Scan scan_file(int fd, std::string_view what, std::uint64_t size, const TokenLayout& layout, const std::atomic<bool>* cancel) {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256: OpenSSL could not start a digest");
    std::vector<unsigned char> chunk(kScanChunk);
    Scan scan;
    std::uint64_t offset = 0;
    while (offset < size) {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
            throw TokenFileCancelled(std::string(what) + ": cancelled while the file was read for its hash, at byte " +
                                     std::to_string(offset) + " of " + std::to_string(size) + ", before the first step");
        }
        const ssize_t got = pread(fd, chunk.data(), std::min<std::uint64_t>(chunk.size(), size - offset), static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            throw ConfigError(std::string(what) + ": read failed at byte " + std::to_string(offset) + " of " + std::to_string(size) + " (" +
                              (got < 0 ? std::strerror(errno) : "the file became shorter while it was read") + ")");
        }
        if (EVP_DigestUpdate(ctx.get(), chunk.data(), static_cast<std::size_t>(got)) != 1) throw std::runtime_error("SHA-256: OpenSSL digest update failed");
        const auto header = static_cast<std::uint64_t>(layout.header_bytes);
        const std::uint64_t first = offset < header ? header - offset : 0;  // the chunk's first token byte
        if (first < static_cast<std::uint64_t>(got)) {
            const unsigned char* p = chunk.data() + first;
            const std::size_t count = (static_cast<std::size_t>(got) - first) / static_cast<std::size_t>(layout.width);
            const std::uint32_t largest = layout.width == 1   ? largest_token<1>(p, count)
                                          : layout.width == 2 ? largest_token<2>(p, count)
                                                              : largest_token<4>(p, count);
            scan.max_token = std::max(scan.max_token, largest);
        }
        offset += static_cast<std::uint64_t>(got);
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw std::runtime_error("SHA-256: OpenSSL digest failed");
    static constexpr char kDigits[] = "0123456789abcdef";
    for (unsigned int i = 0; i < length; ++i) {
        scan.sha256.push_back(kDigits[digest[i] >> 4]);
        scan.sha256.push_back(kDigits[digest[i] & 15]);
    }
    return scan;
}

// Closes the descriptor on every path out of the constructor.
struct Descriptor {
    int fd = -1;
    ~Descriptor() {
        if (fd >= 0) close(fd);
    }
};

// max_token: the file's largest token as read (DataFileInfo keeps it as an int, which a uint32 token can exceed).
void check_sizes(std::string_view what, const DataFileInfo& info, std::uint32_t max_token, const TokenFileNeeds& needs,
                 double val_fraction) {
    const std::int64_t train = info.tokens - info.val_tokens;
    const std::int64_t batch_tokens = needs.global_batch * needs.window;
    if (train < batch_tokens) {
        throw ConfigError(std::string(what) + ": " + std::to_string(info.tokens) + " tokens leave " + std::to_string(train) +
                          " for training, fewer than one batch of " + std::to_string(needs.global_batch) + " sequences of " +
                          std::to_string(needs.window) + " tokens (" + std::to_string(batch_tokens) +
                          "); use a longer file or a smaller --batch or --seq");
    }
    if (info.val_tokens < needs.window) {
        throw ConfigError(std::string(what) + ": the held-out tail (--val-fraction " + shortest_text(val_fraction) + ") holds " +
                          std::to_string(info.val_tokens) + " tokens, fewer than one sequence of " + std::to_string(needs.window) +
                          " (--seq + 1); use a longer file, a larger --val-fraction or a smaller --seq");
    }
    if (static_cast<std::int64_t>(max_token) >= needs.vocab) {
        throw ConfigError(std::string(what) + ": holds token " + std::to_string(max_token) + ", not below --vocab " +
                          std::to_string(needs.vocab) + "; allowed: --vocab " + std::to_string(std::int64_t{max_token} + 1) +
                          " or more (a byte file needs 256)");
    }
}

}  // namespace

TokenLayout token_layout(std::string_view what, std::string_view file_name, std::uint64_t size_bytes, std::string_view head,
                         TokenFormat requested) {
    if (size_bytes == 0) throw ConfigError(std::string(what) + ": the file is empty; allowed: a file of tokens");
    TokenFormat format = requested;
    if (format == TokenFormat::Auto) {
        format = has_llmc_magic(head) ? TokenFormat::Llmc : ends_with_bin(file_name) ? TokenFormat::Uint16 : TokenFormat::Bytes;
    }
    const auto bytes = static_cast<std::int64_t>(size_bytes);
    switch (format) {
    case TokenFormat::Llmc: return llmc_layout(what, size_bytes, head);
    case TokenFormat::Uint16:
        if (bytes % 2 != 0) {
            throw ConfigError(std::string(what) + ": " + std::to_string(bytes) + " bytes, an odd length for uint16 tokens (nanoGPT's .bin: "
                              "2 bytes a token, little-endian)" + (requested == TokenFormat::Auto ? " as its .bin name says" : "") +
                              "; allowed: an even length, or --data-format bytes");
        }
        return {TokenFormat::Uint16, 0, 2, bytes / 2};
    default: return {TokenFormat::Bytes, 0, 1, bytes};
    }
}

std::int64_t validation_tokens(std::int64_t tokens, double val_fraction) {
    return std::min(tokens, static_cast<std::int64_t>(std::llround(static_cast<double>(tokens) * val_fraction)));
}

TokenFile::TokenFile(const DataSettings& settings, const TokenFileNeeds& needs) : what_("--data " + printable_text(settings.path)) {
    if (!std::isfinite(settings.val_fraction) || settings.val_fraction <= 0.0 || settings.val_fraction > kMaxValFraction) {
        throw ConfigError("--val-fraction " + shortest_text(settings.val_fraction) + ": allowed: above 0, at most 0.5");
    }
    const std::filesystem::path path(settings.path);
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
        throw ConfigError(what_ + ": cannot be reached (" + ec.message() + "); allowed: a readable file of tokens");
    }
    if (!std::filesystem::exists(status)) throw ConfigError(what_ + ": no such file");
    if (!std::filesystem::is_regular_file(status)) {
        throw ConfigError(what_ + ": is " + (std::filesystem::is_directory(status) ? "a directory" : "not a regular file") +
                          "; allowed: a file of tokens");
    }
    Descriptor file{open(settings.path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) throw ConfigError(what_ + ": cannot be read (" + std::strerror(errno) + ")");
    struct stat st {};
    if (fstat(file.fd, &st) != 0) throw ConfigError(what_ + ": cannot be read (" + std::strerror(errno) + ")");
    // A file of /proc or /sys states a size (often 4096 bytes) that is not what it holds.
    struct statfs where {};
    if (fstatfs(file.fd, &where) == 0 && (where.f_type == PROC_SUPER_MAGIC || where.f_type == SYSFS_MAGIC)) {
        throw ConfigError(what_ + ": is in the kernel's " + (where.f_type == PROC_SUPER_MAGIC ? "/proc" : "/sys") +
                          " file system, whose files hold no tokens and not the size they state; allowed: a file of tokens on a disk");
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(size, kLlmcHeaderBytes)), '\0');
    if (!head.empty()) {
        const ssize_t got = pread(file.fd, head.data(), head.size(), 0);
        if (got < 0) throw ConfigError(what_ + ": cannot be read (" + std::strerror(errno) + ")");
        if (got != static_cast<ssize_t>(head.size())) {
            throw ConfigError(what_ + ": holds fewer bytes than its size, " + std::to_string(size) +
                              ", says (it changed while it was opened)");
        }
    }
    layout_ = token_layout(what_, path.filename().string(), size, head, settings.format);
    const Scan scan = scan_file(file.fd, what_, size, layout_, needs.cancel);
    info_.name = path.filename().string();
    info_.size_bytes = size;
    info_.sha256 = scan.sha256;
    info_.format = layout_.format;
    info_.tokens = layout_.tokens;
    info_.val_tokens = validation_tokens(layout_.tokens, settings.val_fraction);
    info_.max_token = static_cast<int>(std::min<std::uint32_t>(scan.max_token, static_cast<std::uint32_t>(INT32_MAX)));
    check_sizes(what_, info_, scan.max_token, needs, settings.val_fraction);
    vocab_ = needs.vocab;
    opened_size_ = st.st_size;
    opened_mtime_ = st.st_mtim;
    std::swap(fd_, file.fd);  // kept open: every read is checked against what was opened
    protect_training_data(path);  // no output of this process may write over it
}

TokenFile::~TokenFile() {
    if (fd_ >= 0) close(fd_);
}

void TokenFile::check_unchanged() const {
    struct stat now {};
    if (fstat(fd_, &now) != 0) throw DataError(what_ + ": can no longer be read (" + std::strerror(errno) + ")");
    std::string change;
    if (now.st_size != opened_size_) {
        change = "its size went from " + std::to_string(opened_size_) + " to " + std::to_string(now.st_size) + " bytes";
    } else if (now.st_mtim.tv_sec != opened_mtime_.tv_sec || now.st_mtim.tv_nsec != opened_mtime_.tv_nsec) {
        change = "it was written to (same size, a new modification time)";
    }
    if (!change.empty()) {
        throw DataError(what_ + ": changed during the run (" + change + "); the run stops here, its steps so far kept; "
                        "train on a file nothing writes to while the run reads it");
    }
}

void TokenFile::read(std::int64_t begin, std::int64_t count, std::int64_t* out) const {
    if (begin < 0 || count < 0 || begin + count > info_.tokens) {
        throw std::out_of_range(what_ + ": tokens [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                                ") are outside its " + std::to_string(info_.tokens) + " tokens");
    }
    // Read, not memory-mapped: a file that shrinks under a mapping kills the process with SIGBUS at the next
    // access (a run lost); a read past its new end returns short instead, and is said.
    check_unchanged();
    std::vector<unsigned char> bytes(static_cast<std::size_t>(count * layout_.width));
    const off_t start = static_cast<off_t>(layout_.header_bytes + begin * layout_.width);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t got = pread(fd_, bytes.data() + done, bytes.size() - done, start + static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            throw DataError(what_ + ": changed during the run (" +
                            (got < 0 ? std::string("a read failed: ") + std::strerror(errno)
                                     : "it ends before byte " + std::to_string(start + static_cast<off_t>(bytes.size()))) +
                            "); the run stops here, its steps so far kept");
        }
        done += static_cast<std::size_t>(got);
    }
    for (std::int64_t i = 0; i < count; ++i) {
        const std::uint32_t value = token_at(bytes.data() + i * layout_.width, layout_.width);
        if (vocab_ > 0 && value >= static_cast<std::uint32_t>(vocab_)) {
            throw DataError(what_ + ": token " + std::to_string(value) + " at index " + std::to_string(begin + i) +
                            " is not below the vocabulary " + std::to_string(vocab_) +
                            " although every token was when the run started: the file changed during the run");
        }
        out[i] = value;
    }
}

std::int64_t TokenFile::token(std::int64_t index) const {
    if (index < 0 || index >= info_.tokens) {
        throw std::out_of_range(what_ + ": token " + std::to_string(index) + " is outside its " + std::to_string(info_.tokens) + " tokens");
    }
    std::int64_t value = 0;
    read(index, 1, &value);
    return value;
}

}  // namespace tewb
