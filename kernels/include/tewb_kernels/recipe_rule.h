#pragma once

namespace tewb::kernels {

// How a pass's FP8 slots update after the pass (the update rule in docs/fp8.md).
enum class ScalingRule {
    DelayedMax,         // scale from the max over the whole amax history
    DelayedMostRecent,  // scale from this step's amax
    Current,            // casts derive their own scale: only the staging entry is cleared
    // Block scaling: casts keep their own block scales; the slot's scale (what the statistics show) becomes
    // that of the block holding this step's amax, numerator / amax (FLT_MAX on overflow; 1 when the amax
    // is 0, inf or NaN), rounded down to a power of two (BlockPowerOfTwo) or not (BlockExact), and the
    // staging entry is cleared. No history.
    BlockPowerOfTwo,
    BlockExact,
};

}  // namespace tewb::kernels
