#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/RunConfig.h"
#include "core/device/DeviceInfo.h"

namespace tewb {

// Where does a precision start to pay? A grid of model sizes (hidden × batch × seq), each trained briefly
// by the baseline (`baseline_backend` at BF16 on a GPU, FP32 on the CPU) and by `backend` in each precision.
struct SweepSpec {
    // layers, vocabulary, architecture (llama's kv heads, ffn, rope base), data, steps, learning rate, seed, FP8
    // recipe, device, graphs, te_impl (te runs)
    RunConfig base;
    std::vector<int> hidden;   // empty: base's
    std::vector<int> batch;    // empty: base's
    std::vector<int> seq;      // empty: base's
    std::vector<Precision> precisions{Precision::Bf16, Precision::Fp8};
    Backend backend = Backend::Te;
    // torch: what a te precision gains over plain LibTorch; te: what FP8 gains over te's own BF16 (the question
    // "does FP8 pay here", with the fused kernels on both sides).
    Backend baseline_backend = Backend::Torch;
    // Runs of each configuration at each size (1 to kMaxRepeats), alternating within a size (baseline, then each
    // precision, then again), so a speedup rests on repeats and not on one run's steps.
    int repeats = 1;
};

inline constexpr int kSweepHeadSize = 64;  // heads = hidden / 64 (GPT-2's head size) at every swept width
inline constexpr int kSweepMaxPoints = 64;

// One size of the grid.
struct SweepPoint {
    int hidden = 0;
    int batch = 0;
    int seq = 0;
    std::string label() const;  // "hidden 768, batch 32, seq 96"
    friend bool operator==(const SweepPoint&, const SweepPoint&) = default;
};

struct SweepRun {
    SweepPoint point;
    RunConfig config;  // resolved when it can run here
    bool baseline = false;
    std::optional<std::string> skip_reason;  // does not fit in memory, or cannot run on this device
    int repeat = 1;   // which of the configuration's repeats at this size, 1 .. repeats
    int repeats = 1;
};

// Throws ConfigError (naming the flag) for an empty grid, a size that is not a multiple of the head size,
// more than kSweepMaxPoints sizes, a precision the backend cannot run, repeats outside 1 to kMaxRepeats. Runs that cannot run here (memory
// estimated before starting, device limits) carry the reason instead of failing the plan.
std::vector<SweepRun> plan_sweep(const SweepSpec& spec, const DeviceInfo& device);

// "256,512,768" → numbers; `flag` names the option in errors.
std::vector<int> parse_int_list(std::string_view flag, std::string_view text);
std::vector<Precision> parse_precision_list(std::string_view flag, std::string_view text);
// What a sweep is called in the run store: "sweep <backend> <precision> h768 b32 s96" (baseline: "sweep
// baseline torch bf16 h768 …"); the Sweep tab and `te-bench sweep` find their runs by it. plan_sweep names a
// llama's runs "sweep llama …".
std::string sweep_run_name(const SweepPoint& point, Backend backend, Precision precision, bool baseline, bool cpu);

}  // namespace tewb
