#pragma once

// The microscaling formats' arithmetic (tewb_kernels/mx.h), shared by the kernels and their host twins so both
// round the same way: integer work on float bits, IEEE products and quotients that feed no addition (nothing for a
// compiler to contract), and the FP8 conversions each side already has (CUDA's on the device, host_numbers.h's
// definition of it on the host) passed in by the caller.
#include "tewb_kernels/host_device.h"
#include "tewb_kernels/mx_rules.h"

#include <cstdint>

namespace tewb::kernels::detail::mx {

// The scale rules, public for host code that explains them (te-bench recipe); declared here by name, so that they
// win over any like-named helper of an enclosing namespace.
using mx_rules::abs_bits;
using mx_rules::bits_of;
using mx_rules::e8m0_value;
using mx_rules::float_of;
using mx_rules::floor_log2;
using mx_rules::is_nan;
using mx_rules::kE8M0Nan;
using mx_rules::mxfp8_encode_factor;
using mx_rules::mxfp8_scale_code;
using mx_rules::nvfp4_encode_scale;

// E2M1: sign in bit 3, then two exponent bits and one mantissa bit; codes 0..7 are these magnitudes.
TEWB_HOST_DEVICE inline float e2m1_magnitude(std::uint8_t code) {
    switch (code & 7u) {
        case 0: return 0.0f;
        case 1: return 0.5f;
        case 2: return 1.0f;
        case 3: return 1.5f;
        case 4: return 2.0f;
        case 5: return 3.0f;
        case 6: return 4.0f;
        default: return 6.0f;
    }
}

TEWB_HOST_DEVICE inline float e2m1_value(std::uint8_t code) {
    const float m = e2m1_magnitude(code);
    return (code & 8u) != 0 ? -m : m;
}

TEWB_HOST_DEVICE inline std::uint8_t with_sign(float v, std::uint8_t magnitude_code) {
    return static_cast<std::uint8_t>(magnitude_code | ((bits_of(v) >> 31) != 0 ? 8u : 0u));
}

// Round to nearest, ties to the even code; |v| above 6 (infinity included) saturates to 6, NaN becomes +6, and the
// sign is kept (a negative value that rounds to 0 is -0, 0x8): CUDA's __nv_cvt_float_to_fp4 (cuda_fp4.h, E2M1,
// cudaRoundNearest) bit for bit (tst_host_numbers).
TEWB_HOST_DEVICE inline std::uint8_t e2m1_nearest(float v) {
    if (is_nan(v)) return 7;
    const float a = float_of(abs_bits(v));
    std::uint8_t code;
    if (a <= 0.25f) code = 0;
    else if (a < 0.75f) code = 1;
    else if (a <= 1.25f) code = 2;
    else if (a < 1.75f) code = 3;
    else if (a <= 2.5f) code = 4;
    else if (a < 3.5f) code = 5;
    else if (a <= 5.0f) code = 6;
    else code = 7;
    return with_sign(v, code);
}

// Stochastic rounding with 32 random bits: between the neighbours lo <= |v| < hi, up when u < (|v| - lo) / (hi - lo),
// u = (random >> 8) · 2^-24. Both the difference (Sterbenz: lo <= |v| < 2 lo, or lo = 0) and the quotient by a power of
// two are exact, so the probability is too. Saturation, NaN and zero as e2m1_nearest.
TEWB_HOST_DEVICE inline std::uint8_t e2m1_stochastic(float v, std::uint32_t random) {
    if (is_nan(v)) return 7;
    const float a = float_of(abs_bits(v));
    if (a >= 6.0f) return with_sign(v, 7);
    std::uint8_t lo = 0;
    while (lo < 6 && e2m1_magnitude(static_cast<std::uint8_t>(lo + 1)) <= a) ++lo;
    const float low = e2m1_magnitude(lo);
    const float high = e2m1_magnitude(static_cast<std::uint8_t>(lo + 1));
    const float p = (a - low) / (high - low);
    const float u = static_cast<float>(random >> 8) * float_of(0x33800000u);  // 2^-24
    return with_sign(v, u < p ? static_cast<std::uint8_t>(lo + 1) : lo);
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011): four 32-bit words from a
// 128-bit counter and a 64-bit key.
struct Philox4 {
    std::uint32_t v[4];
};

TEWB_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 counter, std::uint32_t key0, std::uint32_t key1) {
    for (int round = 0; round < 10; ++round) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * counter.v[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * counter.v[2];
        const Philox4 next{{static_cast<std::uint32_t>(p1 >> 32) ^ counter.v[1] ^ key0, static_cast<std::uint32_t>(p1),
                            static_cast<std::uint32_t>(p0 >> 32) ^ counter.v[3] ^ key1, static_cast<std::uint32_t>(p0)}};
        counter = next;
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
    }
    return counter;
}

// The 32 random bits of stream position `index` under `seed`: counter index / 4, word index % 4.
TEWB_HOST_DEVICE inline std::uint32_t random_bits(std::uint64_t seed, std::uint64_t index) {
    const std::uint64_t block = index / 4;
    const Philox4 counter{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}};
    const Philox4 out = philox4x32_10(counter, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
    return out.v[index % 4];
}

// What a block's values are multiplied by before their E2M1 cast: min(1 / (sf · s_dec), FLT_MAX), with sf the block
// scale's value (a NaN scale gives NaN).
TEWB_HOST_DEVICE inline float nvfp4_value_factor(float block_scale, float s_dec) {
    const float flt_max = float_of(0x7f7fffffu);
    const float product = block_scale * s_dec;
    const float factor = 1.0f / product;
    if (is_nan(factor)) return factor;
    return factor < flt_max ? factor : flt_max;
}

// What the block scale's E4M3 cast takes: b · (s_enc · (1 / 6)), in that order.
TEWB_HOST_DEVICE inline float nvfp4_block_scale_input(float block_amax, float s_enc) {
    const float per_value = s_enc * (1.0f / 6.0f);
    return block_amax * per_value;
}

// The Hadamard sign of row i of H (column j): (-1)^popcount(i & j).
TEWB_HOST_DEVICE inline bool hadamard_negative(unsigned i, unsigned j) {
    unsigned x = i & j;
    x ^= x >> 2;
    x ^= x >> 1;
    return (x & 1u) != 0;
}

// y_j = (Σ_i s_i x_i H_ij) / 4 for 16 values, summed over i in order.
TEWB_HOST_DEVICE inline void hadamard16_values(const float (&x)[16], std::uint16_t signs, float (&y)[16]) {
    for (unsigned j = 0; j < 16; ++j) {
        float sum = 0.0f;
        for (unsigned i = 0; i < 16; ++i) {
            const bool negative = (((signs >> i) & 1u) != 0) != hadamard_negative(i, j);
            sum = negative ? sum - x[i] : sum + x[i];
        }
        y[j] = sum * 0.25f;
    }
}

}  // namespace tewb::kernels::detail::mx
