#pragma once

#include <cuda_runtime_api.h>

#include "tewb_kernels/recipe_rule.h"

namespace tewb::kernels {

// One launch for every slot of a pass. `history` is [slots, history_len] float32, row-major, index 0 of a
// row being the staging entry this step's casts recorded their amax into; `scale` and `scale_inv` are
// [slots]. `numerator` is fp8_max / 2^margin. For a delayed rule, a slot whose staged amax is non-zero
// (NaN counts) takes window = staged amax (most recent) or the NaN-propagating max over its whole row
// (max), rolls its row (1..L-2 <- 2..L-1, the staged amax last, staging cleared) and, when the window is
// finite and positive, scale = numerator / window (FLT_MAX when that overflows). A block rule sets every
// slot's scale from its staged amax alone (recipe_rule.h; numerator = fp8_max, block scaling has no
// margin) and clears the staging entry. Every slot then gets scale_inv = 1 / scale. Bit for bit the rule
// of core/fp8/ScaleUpdate (delayed) and core/fp8/BlockScaling (block_statistics_scale). `record` (recipe_rule.h):
// the step's statistics and the scale_invs before the update, written by the same launch. `strides`: where each
// slot's row and scales sit (recipe_rule.h; packed by default). Device pointers; slots == 0 does nothing.
void update_scaling(float* history, float* scale, float* scale_inv, int slots, int history_len, float numerator,
                    ScalingRule rule, const ScaleUpdateRecord& record, const SlotStrides& strides, cudaStream_t stream);

// Current scaling's per-cast step, on the device (Transformer Engine computes the scale there too): from the
// amax a kernel just wrote (abs_max), scale = numerator / amax (FLT_MAX on overflow; 1 when the amax is 0, inf or
// NaN), scale_inv = 1 / scale, and, when `staging` is set, staging = max(staging, amax) with NaN winning (the
// slot's amax for the statistics). One thread, one launch: no host round trip between the amax and the cast that
// reads `scale`. Single float32 values in device memory; `numerator` finite and above 0.
void current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging, cudaStream_t stream);

}  // namespace tewb::kernels
