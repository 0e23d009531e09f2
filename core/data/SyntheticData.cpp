#include "core/data/SyntheticData.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/data/TokenBatches.h"

namespace tewb {

namespace {

double unit(std::mt19937_64& generator) {
    return static_cast<double>(generator() >> 11) * 0x1.0p-53;
}

}  // namespace

std::vector<std::int64_t> make_synthetic_tokens(const SyntheticCorpusSpec& spec) {
    std::mt19937_64 generator(spec.seed ^ 0x5eed'da7a'0000'0001ULL);
    const std::int64_t vocab = spec.vocab;

    std::vector<std::int64_t> successor(static_cast<std::size_t>(vocab));
    for (std::int64_t i = 0; i < vocab; ++i) {
        successor[i] = i;
    }
    for (std::int64_t i = vocab - 1; i > 0; --i) {  // Fisher-Yates
        std::swap(successor[i], successor[uniform_below(generator, i + 1)]);
    }

    std::vector<double> cdf(static_cast<std::size_t>(vocab));
    double total = 0.0;
    for (std::int64_t rank = 0; rank < vocab; ++rank) {
        total += 1.0 / static_cast<double>(rank + 1);
        cdf[rank] = total;
    }
    for (double& value : cdf) {
        value /= total;
    }
    const auto zipf = [&] {
        const auto it = std::lower_bound(cdf.begin(), cdf.end(), unit(generator));
        return std::min<std::int64_t>(it - cdf.begin(), vocab - 1);
    };

    std::vector<std::int64_t> tokens(static_cast<std::size_t>(spec.sequences) * spec.sequence_length);
    for (int row = 0; row < spec.sequences; ++row) {
        std::int64_t* out = tokens.data() + static_cast<std::size_t>(row) * spec.sequence_length;
        out[0] = zipf();
        for (int col = 1; col < spec.sequence_length; ++col) {
            out[col] = unit(generator) < kSuccessorProbability ? successor[out[col - 1]] : zipf();
        }
    }
    return tokens;
}

}  // namespace tewb
