#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <sys/types.h>
#include <time.h>

#include "core/config/RunConfig.h"
#include "core/results/RunRecord.h"

namespace tewb {

// llm.c's token files (karpathy/llm.c, dev/data/data_common.py write_datafile and llmc/dataloader.h): a header of
// 256 little-endian int32 (magic, version, token count, the rest zero), then the tokens.
inline constexpr std::int64_t kLlmcHeaderBytes = 256 * 4;
inline constexpr std::int32_t kLlmcGpt2Magic = 20240520;    // version 1: uint16 tokens (GPT-2's tokenizer)
inline constexpr std::int32_t kLlmcLlama3Magic = 20240801;  // version 7: uint32 tokens (Llama 3's tokenizer)
inline constexpr int kLlmcGpt2Version = 1;
inline constexpr int kLlmcLlama3Version = 7;

// Where a file's tokens are, once its format is known.
struct TokenLayout {
    TokenFormat format = TokenFormat::Bytes;  // never Auto
    std::int64_t header_bytes = 0;
    int width = 1;  // bytes per token: 1 (bytes), 2 (uint16; llm.c GPT-2), 4 (llm.c Llama 3)
    std::int64_t tokens = 0;
};

// The layout of a file of `size_bytes` whose first bytes are `head` (up to kLlmcHeaderBytes of them). `auto`:
// llm.c's magic at the start means llmc, else a name ending in ".bin" means uint16 (nanoGPT), else bytes.
// `what` names the file in errors. Throws ConfigError: empty, an odd length for uint16, a bad llm.c header
// (too short, magic, version, a token count that disagrees with the length).
TokenLayout token_layout(std::string_view what, std::string_view file_name, std::uint64_t size_bytes, std::string_view head,
                         TokenFormat requested);

// What training on a file needs of it.
struct TokenFileNeeds {
    int vocab = 0;                  // every token must be below it
    std::int64_t window = 0;        // tokens per sequence: seq + 1 (inputs and their targets)
    std::int64_t global_batch = 0;  // sequences per step over every rank: batch × ranks
    const std::atomic<bool>* cancel = nullptr;  // checked between the chunks of the first read (a large file takes seconds)
};

// The first read of a file (its hash and largest token) stopped because `cancel` was set.
class TokenFileCancelled : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The held-out tail: round(tokens × val_fraction) tokens, never more than the file holds.
std::int64_t validation_tokens(std::int64_t tokens, double val_fraction);

// A token file, checked and described before training, kept open read-only and read where a batch needs it (a
// 10 GB file costs only what a batch reads). Each read checks that the file is as it was opened: one that shrank,
// grew, was written to, or holds a token past the vocabulary now ends the run with a DataError naming the file
// and what changed (a memory mapping would have killed the process with SIGBUS instead). The constructor reads
// the whole file once in chunks (its SHA-256 and its largest token) and throws ConfigError, naming the file, the value and what is allowed, when it
// is missing, unreadable, not a regular file, empty, badly formed (token_layout), too short for one batch (the
// training part holds fewer than global_batch × window tokens, or the held-out tail fewer than window), or
// holds a token not below the vocabulary; and when val_fraction is outside (0, 0.5]. It throws TokenFileCancelled
// when needs.cancel is set during that first read.
class TokenFile {
public:
    TokenFile(const DataSettings& settings, const TokenFileNeeds& needs);
    ~TokenFile();
    TokenFile(const TokenFile&) = delete;
    TokenFile& operator=(const TokenFile&) = delete;

    const DataFileInfo& info() const { return info_; }
    std::int64_t tokens() const { return info_.tokens; }
    // Tokens [0, train_tokens()) are for training, [train_tokens(), tokens()) the held-out tail.
    std::int64_t train_tokens() const { return info_.tokens - info_.val_tokens; }
    std::int64_t token(std::int64_t index) const;
    // Tokens [begin, begin + count) as int64; the range must lie inside the file.
    void read(std::int64_t begin, std::int64_t count, std::int64_t* out) const;

private:
    void check_unchanged() const;  // throws DataError when the file's size or modification time changed

    std::string what_;
    TokenLayout layout_;
    DataFileInfo info_;
    int fd_ = -1;
    int vocab_ = 0;
    off_t opened_size_ = 0;
    timespec opened_mtime_{};
};

}  // namespace tewb
