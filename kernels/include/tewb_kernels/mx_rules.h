#pragma once

// The microscaling formats' scale rules as scalar functions (tewb_kernels/mx.h has the casts): what the kernels and
// their host twins compute per block or tensor (kernels/mx/mx_math.h builds on these), public so that host code that
// explains a rule (te-bench recipe) uses the very same arithmetic.
#include <cstdint>
#include <cstring>

#include "tewb_kernels/host_device.h"

namespace tewb::kernels::mx_rules {

TEWB_HOST_DEVICE inline std::uint32_t bits_of(float v) {
    std::uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

TEWB_HOST_DEVICE inline float float_of(std::uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

// |v|'s bits: for non-negative floats integer order is float order, and a NaN orders above every number.
TEWB_HOST_DEVICE inline std::uint32_t abs_bits(float v) {
    return bits_of(v) & 0x7fffffffu;
}

inline constexpr std::uint8_t kE8M0Nan = 0xff;

// 2^(code - 127); code 0 is 2^-127 (a float32 subnormal), 0xFF is NaN.
TEWB_HOST_DEVICE inline float e8m0_value(std::uint8_t code) {
    if (code == kE8M0Nan) return float_of(0x7fc00000u);
    if (code == 0) return float_of(0x00400000u);
    return float_of(static_cast<std::uint32_t>(code) << 23);
}

// floor(log2 m) for a finite m > 0, from its bits (subnormals included).
TEWB_HOST_DEVICE inline int floor_log2(std::uint32_t m_bits) {
    const int exponent = static_cast<int>(m_bits >> 23);
    if (exponent > 0) return exponent - 127;
    int top = 22;
    while (top > 0 && (m_bits & (1u << top)) == 0) --top;
    return top - 149;
}

// The OCP shared scale of a block whose largest |v| has bits `amax_bits` (abs_bits; a NaN or an infinity gives
// 0xFF), for elements whose largest power of two is 2^emax: 2^(floor(log2 m) - emax), the exponent clamped to
// [-127, 127]; a block of zeros gets code 0.
TEWB_HOST_DEVICE inline std::uint8_t mxfp8_scale_code(std::uint32_t amax_bits, int emax) {
    if (amax_bits >= 0x7f800000u) return kE8M0Nan;
    if (amax_bits == 0) return 0;
    int exponent = floor_log2(amax_bits) - emax;
    if (exponent < -127) exponent = -127;
    if (exponent > 127) exponent = 127;
    return static_cast<std::uint8_t>(exponent + 127);
}

// What a value is multiplied by before its FP8 cast: 1 / X = 2^(127 - code) for code 0..253 (exact), NaN for 0xFF.
TEWB_HOST_DEVICE inline float mxfp8_encode_factor(std::uint8_t code) {
    if (code == kE8M0Nan) return float_of(0x7fc00000u);
    return float_of(static_cast<std::uint32_t>(254 - code) << 23);
}

TEWB_HOST_DEVICE inline bool is_nan(float v) {
    return abs_bits(v) > 0x7f800000u;
}

// NVFP4's tensor scale: s_enc = min(448 · 6 / amax, FLT_MAX), 1 where amax is 0 or s_enc is 0 (a NaN amax: FLT_MAX,
// as fminf returns the number).
TEWB_HOST_DEVICE inline float nvfp4_encode_scale(float amax) {
    const float flt_max = float_of(0x7f7fffffu);
    float s = 2688.0f / amax;
    s = is_nan(s) ? flt_max : (s < flt_max ? s : flt_max);
    if (amax == 0.0f || s == 0.0f) s = 1.0f;
    return s;
}

}  // namespace tewb::kernels::mx_rules
