#pragma once

#include <cmath>

// GELU in its tanh form, float32 math, as kernels/activation/activation.cu computes it (and cuBLASLt's GELU
// epilogues): one copy for the host implementations of the activation and of the GEMM's epilogues.
namespace tewb::kernels::detail {

inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;

inline float gelu(float x) {
    const float t = std::tanh(kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x));
    return 0.5f * x * (1.0f + t);
}

inline float gelu_derivative(float x) {
    const float t = std::tanh(kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}

}  // namespace tewb::kernels::detail
