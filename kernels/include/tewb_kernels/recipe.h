#pragma once

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

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

// What update_scaling also writes, in the same pass over the slots; each part optional (data null).
struct ScaleUpdateRecord {
    // [slots, 2 or more] float32 rows: slot s's [0] the staged amax, [1] the scale this step's casts used (under a
    // block rule, the new scale: the casts kept their own block scales).
    Tensor statistics;
    // [slots, 1] float32 of scale's row stride: scale_inv as it was before the update (what delayed casts handed out
    // as live scale_invs).
    Tensor kept_scale_inv;
};

}  // namespace tewb::kernels

TEWB_ENTRY_POINTS(
// One launch for every slot of a pass. `history` is [slots, history_len] float32, index 0 of a row being the
// staging entry this step's casts recorded their amax into; `scale` and `scale_inv` are [slots, 1] float32 of one
// row stride (the FP8 state gives every slot its own 256-byte slot, so each scale a GEMM reads by pointer is
// aligned: the scale storage contract, docs/kernels.md; history's rows may be apart too). `numerator` is fp8_max / 2^margin. For a delayed rule, a slot whose staged amax is non-zero
// (NaN counts) takes window = staged amax (most recent) or the NaN-propagating max over its whole row
// (max), rolls its row (1..L-2 <- 2..L-1, the staged amax last, staging cleared) and, when the window is
// finite and positive, scale = numerator / window (FLT_MAX when that overflows). A block rule sets every
// slot's scale from its staged amax alone (ScalingRule; numerator = fp8_max, block scaling has no
// margin) and clears the staging entry. Every slot then gets scale_inv = 1 / scale. Bit for bit the rule
// of core/fp8/ScaleUpdate (delayed) and core/fp8/BlockScaling (block_statistics_scale). `record`:
// the step's statistics and the scale_invs before the update, written by the same launch. slots == 0 does nothing.
// The host twin goes one slot after another, bit for bit the kernel's result (the arithmetic is shared:
// recipe/recipe_math.h). One launch.
void update_scaling(const Tensor& history, const Tensor& scale, const Tensor& scale_inv, float numerator, ScalingRule rule,
                    const ScaleUpdateRecord& record, Stream stream);

// Current scaling's per-cast step, on the device (Transformer Engine computes the scale there too): from the
// amax a kernel just wrote (abs_max), scale = numerator / amax (FLT_MAX on overflow; 1 when the amax is 0, inf or
// NaN), scale_inv = 1 / scale, and, when `staging` is set, staging = max(staging, amax) with NaN winning (the
// slot's amax for the statistics). One thread, one launch: no host round trip between the amax and the cast that
// reads `scale`. amax, scale, scale_inv and staging (data null: none) are float32 [1, 1]; `numerator` finite and above 0.
void current_scale(const Tensor& amax, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                   Stream stream);
)
