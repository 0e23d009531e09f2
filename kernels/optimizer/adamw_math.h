#pragma once

// One AdamW element update in float32, shared by the kernel and its host twin so that both round the same
// way. Every rounding is spelled out: the fused multiply-adds are explicit (fmaf / std::fma) and no plain
// product feeds an addition, so neither nvcc's nor a host compiler's contraction can change a result (and
// there is no fast math in this library: IEEE division and square root).
#include "tewb_kernels/host_device.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace tewb::kernels::detail {

// The hyperparameters as the kernel takes them: the API's doubles rounded to float32 (PyTorch's fused
// kernel converts them to its float32 opmath the same way).
struct AdamWScalars {
    float lr = 0.0f;
    float beta1 = 0.0f;
    float beta2 = 0.0f;
    float weight_decay = 0.0f;
    float eps = 0.0f;
};

// What every element of one step shares, from the scalars and the step t (after its increment).
struct AdamWCoefficients {
    float beta1 = 0.0f;
    float beta2 = 0.0f;
    float eps = 0.0f;
    float decay = 0.0f;  // lr * weight_decay
    bool decays = false;  // weight_decay != 0
    float step_size = 0.0f;  // lr / (1 - beta1^t)
    float bias_correction2_sqrt = 0.0f;  // sqrt(1 - beta2^t)
};

TEWB_HOST_DEVICE inline float fused_multiply_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return fmaf(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

TEWB_HOST_DEVICE inline float square_root(float v) {
#if defined(__CUDA_ARCH__)
    return sqrtf(v);
#else
    return std::sqrt(v);
#endif
}

// beta^t in float32: the power taken in double and rounded once, so the host's and the GPU's libm agree
// (a double pow within 2 ulps rounds to the same float except within 2^-28 of a float's rounding boundary).
TEWB_HOST_DEVICE inline float float_power(float base, float t) {
#if defined(__CUDA_ARCH__)
    return static_cast<float>(pow(static_cast<double>(base), static_cast<double>(t)));
#else
    return static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(t)));
#endif
}

TEWB_HOST_DEVICE inline AdamWCoefficients adamw_coefficients(const AdamWScalars& s, float t) {
    AdamWCoefficients c;
    c.beta1 = s.beta1;
    c.beta2 = s.beta2;
    c.eps = s.eps;
    c.decay = s.lr * s.weight_decay;
    c.decays = s.weight_decay != 0.0f;
    const float bias_correction1 = 1.0f - float_power(s.beta1, t);
    const float bias_correction2 = 1.0f - float_power(s.beta2, t);
    c.step_size = s.lr / bias_correction1;
    c.bias_correction2_sqrt = square_root(bias_correction2);
    return c;
}

// PyTorch's fused AdamW element (fused_adam_utils.cuh, adam_math, ADAMW mode) in its order.
TEWB_HOST_DEVICE inline void adamw_update(const AdamWCoefficients& c, float& param, float grad, float& exp_avg, float& exp_avg_sq) {
    float p = param;
    // PyTorch writes param -= lr * weight_decay * param; nvcc contracts it to this one rounding.
    if (c.decays) p = fused_multiply_add(-c.decay, p, p);
    const float m = fused_multiply_add(c.beta1, exp_avg, fused_multiply_add(-c.beta1, grad, grad));
    const float g2 = grad * grad;
    const float v = fused_multiply_add(c.beta2, exp_avg_sq, fused_multiply_add(-c.beta2, g2, g2));
    const float denom = square_root(v) / c.bias_correction2_sqrt + c.eps;
    const float update = c.step_size * m / denom;
    param = p - update;
    exp_avg = m;
    exp_avg_sq = v;
}

}  // namespace tewb::kernels::detail
