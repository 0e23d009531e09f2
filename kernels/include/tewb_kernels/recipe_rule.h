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

// What update_scaling also writes, in the same pass over the slots; each part optional (null).
struct ScaleUpdateRecord {
    // Slot s's row at statistics + s · statistics_stride: [0] the staged amax, [1] the scale this step's casts
    // used (under a block rule, the new scale: the casts kept their own block scales).
    float* statistics = nullptr;
    int statistics_stride = 0;  // floats per row, at least 2
    // [slots]: scale_inv as it was before the update (what delayed casts handed out as live scale_invs).
    float* kept_scale_inv = nullptr;
};

// Where each slot's values sit: slot s's history row at history + s · history, its scale, scale_inv and kept
// scale_inv at s · scale (floats). The FP8 state gives every slot its own 256-byte slot, so each scale a GEMM
// reads by pointer is aligned (the scale storage contract, docs/kernels.md); 0 means packed: history_len and 1.
struct SlotStrides {
    int history = 0;
    int scale = 0;
};

}  // namespace tewb::kernels
