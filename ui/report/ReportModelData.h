#pragma once

#include <string>
#include <vector>

#include <QString>

#include "core/results/RunRecord.h"

namespace tewb::ui {

// The report's words about what was trained, from the records alone.

// The model of a run in words: "llama: 12 layers, hidden 768, 12 heads, 4 KV heads (grouped-query attention), SwiGLU
// FFN 2048 (auto: 8/3 × hidden rounded up to 64), RoPE base 10000, RMSNorm, no biases; sequence 96, vocabulary 4096,
// batch 32" or the gpt's.
std::string model_words(const RunConfig& config);
// What a run trained on: "synthetic tokens", or the token file's name, size, SHA-256 prefix, format, tokens and the
// held-out fraction.
std::string data_words(const RunRecord& record);

// The model-and-data part of the report's machine-and-model section: each distinct model and data once, naming the
// runs when they differ.
QString model_and_data_html(const std::vector<RunRecord>& runs);

// For each FP8 run with a validation loss, against a BF16 run of the same configuration (same model, data, batch,
// steps, learning rate and seed; the same backend when there is one) with one: "FP8's validation loss is within 0.01
// of BF16's (3.2140 vs 3.2090 at step 100; te fp8 cpu against te bf16 cpu)", or "higher by"/"lower by" when the
// difference exceeds 0.02 nats (the parity bound); emulated FP8 says what that means. Compared at the last
// step both evaluated. Empty when no pair has validation losses.
std::vector<std::string> validation_sentences(const std::vector<RunRecord>& runs);

}  // namespace tewb::ui
