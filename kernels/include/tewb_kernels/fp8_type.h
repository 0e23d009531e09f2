#pragma once

namespace tewb::kernels {

enum class Fp8Type { E4M3, E5M2 };

constexpr float fp8_max(Fp8Type type) {
    return type == Fp8Type::E4M3 ? 448.0f : 57344.0f;
}

}  // namespace tewb::kernels
