#pragma once

#include <cstdint>
#include <vector>

namespace tewb {

// Learnable token streams, identical on every machine and backend for a seed: a Zipf-distributed
// unigram (fast to learn) mixed with a fixed random successor per token (a bigram the model learns
// over more steps). Built on std::mt19937_64 with our own integer-to-range mapping, because the
// standard distributions differ between standard libraries.
struct SyntheticCorpusSpec {
    int vocab = 0;
    int sequences = 0;        // rows
    int sequence_length = 0;  // tokens per row (model sequence + 1, so inputs and targets come from one row)
    std::uint64_t seed = 0;
};

// Row-major [sequences][sequence_length] token ids in [0, vocab).
std::vector<std::int64_t> make_synthetic_tokens(const SyntheticCorpusSpec& spec);

// The probability that the next token is the fixed successor of the current one.
inline constexpr double kSuccessorProbability = 0.6;

}  // namespace tewb
