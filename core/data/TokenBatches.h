#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tewb {

class TokenFile;

// A uniform integer in [0, bound) (bound > 0) by Lemire's multiply-shift: the standard distributions differ between
// standard libraries, this mapping is the same everywhere, so every machine draws the same batches.
inline std::int64_t uniform_below(std::mt19937_64& generator, std::int64_t bound) {
    return static_cast<std::int64_t>((static_cast<unsigned __int128>(generator()) * static_cast<std::uint64_t>(bound)) >> 64);
}

// The first token of each of a step's `global_batch` sequences of `window` tokens, drawn uniformly from the
// training part [0, train_tokens) by a std::mt19937_64 keyed by the run's seed and the step (0-based): the same
// run draws the same batches, and rank r of a job takes sequences [r · batch, (r + 1) · batch) of the same
// global batch, so N ranks see the data of one process with N times the batch.
std::vector<std::int64_t> batch_offsets(std::uint64_t seed, int step, std::int64_t train_tokens, std::int64_t window,
                                        std::int64_t global_batch);

// The validation set: at most kValidationSequences windows of `window` tokens spread evenly over the held-out
// tail [val_begin, tokens) (back to back when the tail holds fewer), the first at val_begin, the last ending at
// the file's end. The same for every seed, batch size and rank count.
inline constexpr std::int64_t kValidationSequences = 128;
std::vector<std::int64_t> validation_offsets(std::int64_t val_begin, std::int64_t tokens, std::int64_t window);

// The steps (1-based, increasing) whose end evaluates the validation loss in a run of `total_steps`: every
// `eval_every` steps and the last; with eval_every 0, five spread over the run (ceil(total · i / 5), i = 1..5),
// the last at the last step (fewer when the run has fewer than five steps).
std::vector<int> evaluation_steps(int total_steps, int eval_every);

// Rows of `window` tokens from the file at `offsets`, back to back: [offsets.size() × window] int64.
void read_windows(const TokenFile& file, const std::vector<std::int64_t>& offsets, std::int64_t window, std::int64_t* out);

}  // namespace tewb
