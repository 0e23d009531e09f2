#include "core/model/Rotary.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/ops/empty.h>

namespace tewb {

RotaryTables rotary_tables(std::int64_t seq, std::int64_t head_dim, double base) {
    if (seq < 1) throw std::invalid_argument("rotary tables: sequence length must be at least 1, got " + std::to_string(seq));
    if (head_dim < 2 || head_dim % 2 != 0) {
        throw std::invalid_argument("rotary tables: head dimension must be even and positive, got " + std::to_string(head_dim));
    }
    if (!(base > 1.0) || !std::isfinite(base)) {
        throw std::invalid_argument("rotary tables: base must be a finite number above 1, got " + std::to_string(base));
    }
    const std::int64_t half = head_dim / 2;
    at::Tensor cos = at::empty({seq, half}, at::kFloat);
    at::Tensor sin = at::empty({seq, half}, at::kFloat);
    float* c = cos.data_ptr<float>();
    float* s = sin.data_ptr<float>();
    for (std::int64_t i = 0; i < half; ++i) {
        const double inv_freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
        for (std::int64_t p = 0; p < seq; ++p) {
            const double theta = static_cast<double>(p) * inv_freq;
            c[p * half + i] = static_cast<float>(std::cos(theta));
            s[p * half + i] = static_cast<float>(std::sin(theta));
        }
    }
    return {cos, sin};
}

}  // namespace tewb
