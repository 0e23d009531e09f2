#pragma once

namespace tewb::kernels {

// How a pass's FP8 slots update after the pass (the update rule in docs/fp8.md).
enum class ScalingRule {
    DelayedMax,         // scale from the max over the whole amax history
    DelayedMostRecent,  // scale from this step's amax
    Current,            // casts derive their own scale: only the staging entry is cleared
};

}  // namespace tewb::kernels
