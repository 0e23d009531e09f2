#pragma once

#include <optional>

#include "recipe/recipe_call.h"
#include "tewb_kernels/rotary.h"

// One rotary call's checked arguments as the kernel (rotary.cu) and its host twin (rotary_host.cpp) work on them,
// and the rules that make them (rotary_checks.cpp): they fail with KernelError "<call>: <what>" and give nothing
// when x has no rows or columns.
namespace tewb::kernels::detail {

// The arguments of tewb_kernels/rotary.h's entry point.
struct RotaryCall {
    Tensor x;
    Tensor cos;
    Tensor sin;
    RotaryHeads heads;
    Tensor y;
    CurrentScaleCall fresh{};  // scale null: none (rotary_current_scale sets it)
};

std::optional<RotaryCall> rotary_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                      const RotaryHeads& heads, const Tensor& y);
// rotary_current_scale's: the call's checks, then the target's (amax/current_scale_target.h); nothing when there is no
// work.
std::optional<RotaryCall> rotary_current_scale_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                                    const RotaryHeads& heads, const Tensor& y, const CurrentScaleTarget& target);

}  // namespace tewb::kernels::detail
