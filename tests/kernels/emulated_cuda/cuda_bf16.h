#pragma once
// bfloat16 as CUDA's conversions make it: round to nearest even, NaN to 0x7fff.
#include "emulated_cuda.h"

struct __nv_bfloat16 {
    std::uint16_t x;
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
inline float __bfloat162float(__nv_bfloat16 h) {
    return __uint_as_float(static_cast<unsigned>(h.x) << 16);
}
inline __nv_bfloat16 __float2bfloat16(float v) {
    const unsigned x = __float_as_uint(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) return {0x7fff};
    unsigned r = x >> 16;
    const unsigned rest = x << 16;
    if (rest > 0x80000000u || (rest == 0x80000000u && (r & 1u) != 0)) ++r;
    return {static_cast<std::uint16_t>(r)};
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return {__float2bfloat16(a), __float2bfloat16(b)};
}
inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return {__bfloat162float(h.x), __bfloat162float(h.y)};
}
