#include "core/data/TokenBatches.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/data/TokenFile.h"

namespace tewb {

namespace {

// SplitMix64's finaliser: nearby seeds and steps become unrelated generator seeds.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e37'79b9'7f4a'7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58'476d'1ce4'e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d0'49bb'1331'11ebULL;
    return x ^ (x >> 31);
}

}  // namespace

std::vector<std::int64_t> batch_offsets(std::uint64_t seed, int step, std::int64_t train_tokens, std::int64_t window,
                                        std::int64_t global_batch) {
    if (window <= 0 || train_tokens < window || global_batch < 0 || step < 0) {
        throw std::invalid_argument("batch_offsets: " + std::to_string(train_tokens) + " training tokens cannot hold a window of " +
                                    std::to_string(window));
    }
    std::mt19937_64 generator(mix(seed ^ 0x70c3'f11e'da7a'0000ULL) ^ mix(static_cast<std::uint64_t>(step)));
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(global_batch));
    for (std::int64_t& offset : offsets) offset = uniform_below(generator, train_tokens - window + 1);
    return offsets;
}

std::vector<std::int64_t> validation_offsets(std::int64_t val_begin, std::int64_t tokens, std::int64_t window) {
    const std::int64_t tail = tokens - val_begin;
    if (window <= 0 || tail < window) return {};
    const std::int64_t count = std::min(kValidationSequences, tail / window);
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(count));
    const std::int64_t span = tail - window;  // where the last window starts, from val_begin
    for (std::int64_t i = 0; i < count; ++i) {
        offsets[static_cast<std::size_t>(i)] = val_begin + (count > 1 ? i * span / (count - 1) : 0);
    }
    return offsets;
}

std::vector<int> evaluation_steps(int total_steps, int eval_every) {
    std::vector<int> steps;
    if (total_steps <= 0) return steps;
    if (eval_every > 0) {
        for (int s = eval_every; s < total_steps; s += eval_every) steps.push_back(s);
    } else {
        constexpr int kEvaluations = 5;
        for (int i = 1; i < kEvaluations; ++i) {
            const int s = static_cast<int>((static_cast<std::int64_t>(total_steps) * i + kEvaluations - 1) / kEvaluations);
            if (steps.empty() || steps.back() != s) steps.push_back(s);
        }
        if (!steps.empty() && steps.back() == total_steps) steps.pop_back();
    }
    steps.push_back(total_steps);
    return steps;
}

void read_windows(const TokenFile& file, const std::vector<std::int64_t>& offsets, std::int64_t window, std::int64_t* out) {
    for (std::size_t i = 0; i < offsets.size(); ++i) file.read(offsets[i], window, out + static_cast<std::int64_t>(i) * window);
}

}  // namespace tewb
