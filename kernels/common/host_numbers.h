#pragma once

// The number formats on the host, bit for bit as the CUDA kernels store them: float32 to bfloat16 and
// float16 rounded to nearest even (NaN becomes bfloat16 0x7fff, CUDA's canonical one), and to FP8 with
// saturation to the largest finite value and every NaN to 0x7f (CUDA 13's __nv_cvt_float_to_fp8 with
// __NV_SATFINITE; tst_host_numbers compares them over every float bit pattern). No CUDA headers here.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_type.h"

namespace tewb::kernels::detail {

inline std::uint32_t float_bits(float v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

inline float bits_float(std::uint32_t u) {
    float v = 0;
    std::memcpy(&v, &u, sizeof v);
    return v;
}

inline float bf16_to_float(std::uint16_t h) {
    return bits_float(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t float_to_bf16(float v) {
    const std::uint32_t x = float_bits(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    std::uint32_t r = x >> 16;
    const std::uint32_t remainder = x << 16;
    if (remainder > 0x80000000u || (remainder == 0x80000000u && (r & 1u) != 0)) ++r;
    return static_cast<std::uint16_t>(r);
}

inline float fp16_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_float(sign);
    // A subnormal half is mantissa · 2^-24: exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign != 0 ? -magnitude : magnitude;
}

// Round to nearest even; overflow to inf, NaN to a quiet NaN with the sign kept (CUDA's __float2half_rn).
inline std::uint16_t float_to_fp16(float v) {
    const std::uint32_t x = float_bits(v);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<std::uint16_t>(0x7fffu);
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // ≥ 65520 rounds to inf
    if (abs < 0x33000001u) return sign;                                         // ≤ 2^-25 rounds to 0
    const std::uint32_t exponent = abs >> 23;
    std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 0;
    std::uint32_t base = 0;
    if (exponent < 113) {  // subnormal half
        shift = 126 - exponent;
        base = 0;
    } else {
        shift = 13;
        base = (exponent - 112) << 10;
        mantissa &= 0x7fffffu;
    }
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    std::uint32_t r = base + kept;
    if (rest > half || (rest == half && (r & 1u) != 0)) ++r;
    return static_cast<std::uint16_t>(sign | r);
}

// CUDA's __nv_cvt_float_to_fp8(v, __NV_SATFINITE, type), written from its definition: values beyond the
// largest finite one (inf included) saturate, round to nearest even, NaN stays NaN.
inline std::uint8_t float_to_fp8(float v, Fp8Type type) {
    const bool e4m3 = type == Fp8Type::E4M3;
    const std::uint32_t x = float_bits(v);
    const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
    const std::uint32_t abs = x & 0x7fffffffu;
    const int mantissa_bits = e4m3 ? 3 : 2;
    const int bias = e4m3 ? 7 : 15;
    const std::uint8_t max_finite = e4m3 ? 0x7eu : 0x7bu;
    // Half of the smallest subnormal (2^-10, 2^-17) or less is 0; above max + half an ulp saturates
    // (E4M3: 464; E5M2: 61440, which itself rounds down to 57344 as the even neighbour).
    const std::uint32_t underflow = e4m3 ? 0x3a800000u : 0x37000000u;
    const std::uint32_t overflow = e4m3 ? 0x43e80000u : 0x476fffffu;
    const std::uint32_t min_normal = e4m3 ? 0x3c800000u : 0x38800000u;  // 2^-6, 2^-14
    std::uint8_t r = 0;
    if (abs <= underflow) {
        r = 0;
    } else if (abs > 0x7f800000u) {
        return 0x7fu;  // every NaN becomes the positive canonical one, in both formats
    } else if (abs > overflow) {
        r = max_finite;
    } else if (abs >= min_normal) {
        const int exponent = static_cast<int>(abs >> 23) - 127 + bias;
        const int drop = 23 - mantissa_bits;
        const std::uint32_t mantissa = (abs >> drop) & ((1u << mantissa_bits) - 1u);
        r = static_cast<std::uint8_t>((static_cast<std::uint32_t>(exponent) << mantissa_bits) | mantissa);
        const std::uint32_t rest = abs & ((1u << drop) - 1u);
        const std::uint32_t half = 1u << (drop - 1);
        if (rest > half || (rest == half && (r & 1u) != 0)) ++r;
    } else {
        // Subnormal FP8: the value in units of the smallest subnormal, 2^(1 - bias - mantissa_bits).
        const int exponent = static_cast<int>(abs >> 23) - 127;
        const std::uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
        const int drop = 23 - mantissa_bits + (1 - bias - exponent);
        const std::uint32_t kept = drop >= 32 ? 0u : significand >> drop;
        const std::uint32_t rest = drop >= 32 ? significand : significand & ((1u << drop) - 1u);
        const std::uint32_t half = drop >= 33 ? 0u : 1u << (drop - 1);
        r = static_cast<std::uint8_t>(kept);
        if (rest > half || (rest == half && (r & 1u) != 0)) ++r;
    }
    return static_cast<std::uint8_t>(r | sign);
}

inline float fp8_to_float(std::uint8_t b, Fp8Type type) {
    const bool e4m3 = type == Fp8Type::E4M3;
    const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
    const int mantissa_bits = e4m3 ? 3 : 2;
    const int bias = e4m3 ? 7 : 15;
    const std::uint32_t exponent = (b & 0x7fu) >> mantissa_bits;
    const std::uint32_t mantissa = b & ((1u << mantissa_bits) - 1u);
    if (e4m3 && (b & 0x7fu) == 0x7fu) return bits_float(sign | 0x7fc00000u);
    if (!e4m3 && exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << (23 - mantissa_bits)) | (mantissa ? 0x400000u : 0u));
    if (exponent != 0) {
        return bits_float(sign | ((exponent - bias + 127) << 23) | (mantissa << (23 - mantissa_bits)));
    }
    // subnormal: mantissa · 2^(1 - bias - mantissa_bits), exact
    float magnitude = static_cast<float>(mantissa);
    for (int i = 0; i < bias - 1 + mantissa_bits; ++i) magnitude *= 0.5f;
    return sign != 0 ? -magnitude : magnitude;
}

// Loads and stores in a dtype chosen at run time, as the kernels' load/store (elementwise.cuh).
inline float load(const void* p, DType dtype, std::size_t i) {
    switch (dtype) {
        case DType::Float32: return static_cast<const float*>(p)[i];
        case DType::BFloat16: return bf16_to_float(static_cast<const std::uint16_t*>(p)[i]);
        case DType::Float16: return fp16_to_float(static_cast<const std::uint16_t*>(p)[i]);
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
    return 0.0f;
}

inline void store(void* p, DType dtype, std::size_t i, float v) {
    switch (dtype) {
        case DType::Float32: static_cast<float*>(p)[i] = v; break;
        case DType::BFloat16: static_cast<std::uint16_t*>(p)[i] = float_to_bf16(v); break;
        case DType::Float16: static_cast<std::uint16_t*>(p)[i] = float_to_fp16(v); break;
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
}

// |v| as bits, the kernels' amax order: integer order is float order for non-negative floats, and every
// NaN orders above inf.
inline std::uint32_t abs_bits(float v) {
    return float_bits(v) & 0x7fffffffu;
}

}  // namespace tewb::kernels::detail
