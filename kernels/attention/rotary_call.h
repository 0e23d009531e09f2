#pragma once

#include <optional>

#include "common/fp8_output.h"
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
    Fp8Output fp8{};           // data null: none (rotary_quantize sets it)
};

// Whether rotary_quantize's one-launch kernel takes the call (tewb_kernels/rotary.h); the host twin counts its launches
// by the same rule.
bool rotary_quantize_fits(const RotaryCall& a);

std::optional<RotaryCall> rotary_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                      const RotaryHeads& heads, const Tensor& y);
// rotary_current_scale's: the call's checks, then the target's (amax/current_scale_target.h); nothing when there is no
// work.
std::optional<RotaryCall> rotary_current_scale_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                                    const RotaryHeads& heads, const Tensor& y, const CurrentScaleTarget& target);
// rotary_quantize's: the call's checks, then fp8's (required, with its transposed copy and scale; apart from the rest).
std::optional<RotaryCall> rotary_quantize_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                               const RotaryHeads& heads, const Tensor& y, const Tensor& fp8);

}  // namespace tewb::kernels::detail
