#pragma once

// The arithmetic of one slot's scale update, shared by the kernel and its host reference so both round
// the same way (IEEE division; no fast math anywhere in this library).
#include "tewb_kernels/host_device.h"

#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace tewb::kernels::detail {

inline constexpr float kFloatMax = 3.402823466e+38f;

TEWB_HOST_DEVICE inline bool is_nan(float x) {
    return x != x;
}

TEWB_HOST_DEVICE inline bool is_finite(float x) {
    return x - x == 0.0f;  // inf - inf and NaN - NaN are NaN
}

// The window's reduction, Transformer Engine's fmaxf: a NaN is passed over (NaN only when both are NaN);
// an inf wins. Written out rather than fmaxf so host and device agree without relying on either libm.
TEWB_HOST_DEVICE inline float window_max(float a, float b) {
    if (is_nan(a)) return b;
    if (is_nan(b)) return a;
    return a > b ? a : b;
}

// The staged amax says the slot ran this step: non-zero, NaN included.
TEWB_HOST_DEVICE inline bool slot_ran(float staged) {
    return staged != 0.0f;
}

// The new scale from the window's amax, or the old one when the window cannot give a scale.
TEWB_HOST_DEVICE inline float next_scale(float numerator, float window, float old_scale) {
    if (!is_finite(window) || !(window > 0.0f)) return old_scale;
    const float scale = numerator / window;
    return is_finite(scale) ? scale : kFloatMax;
}

// The largest power of two at or below a positive normal float: its exponent bits alone.
TEWB_HOST_DEVICE inline float exponent_only(float x) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(__float_as_uint(x) & 0x7f800000u);
#else
    unsigned bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    bits &= 0x7f800000u;
    std::memcpy(&x, &bits, sizeof bits);
    return x;
#endif
}

// A block-scaled slot's scale from its staged amax (ScalingRule::BlockPowerOfTwo / BlockExact): the scale
// the block cast gave the block holding that amax.
TEWB_HOST_DEVICE inline float block_slot_scale(float numerator, float staged, bool power_of_two) {
    if (!is_finite(staged) || !(staged > 0.0f)) return 1.0f;
    float scale = numerator / staged;
    if (!is_finite(scale)) scale = kFloatMax;
    return power_of_two ? exponent_only(scale) : scale;
}

// NaN wins, as LibTorch's maximum: a NaN amax must reach the recipe.
TEWB_HOST_DEVICE inline float max_nan_wins(float a, float b) {
    if (is_nan(a) || is_nan(b)) return a + b;  // NaN
    return a > b ? a : b;
}

// current_scale (recipe.h) on its single values: the per-tensor rule of core/fp8/BlockScaling's
// current_scale_tensor, numerator / amax (FLT_MAX on overflow; 1 when the amax is 0, inf or NaN).
TEWB_HOST_DEVICE inline void current_scale_values(float amax, float numerator, float* scale, float* scale_inv,
                                                  float* staging) {
    const float s = block_slot_scale(numerator, amax, /*power_of_two=*/false);
    *scale = s;
    *scale_inv = 1.0f / s;
    if (staging != nullptr) *staging = max_nan_wins(*staging, amax);
}

}  // namespace tewb::kernels::detail
