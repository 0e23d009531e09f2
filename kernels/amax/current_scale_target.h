#pragma once

// A producing kernel's current-scaling target (tewb_kernels/amax.h's CurrentScaleTarget, the *_current_scale entry
// points) checked as its kernel and host twin take it. Plain C++.
#include <initializer_list>
#include <utility>

#include "recipe/recipe_call.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

// current_scale_targets (recipe_call.h) of `target`; `out` (named `out_name`: the output it scales) must be set unless it
// has no elements, and none of the target's floats may lie in `out`, in `tensors` ("<target> lies in <name>") or in the
// call's workspace, nor the staging entry be the scale or scale_inv.
CurrentScaleCall checked_current_scale_target(const char* call, const CurrentScaleTarget& target, const Tensor& out,
                                              const char* out_name, std::initializer_list<std::pair<Tensor, const char*>> tensors,
                                              const Workspace& workspace = {});

}  // namespace tewb::kernels::detail
