#pragma once

namespace tewb::kernels {

enum class Fp8Type { E4M3, E5M2 };

// The FP8 types' names as messages and reports write them; one byte each.
constexpr const char* fp8_type_name(Fp8Type type) {
    return type == Fp8Type::E4M3 ? "E4M3" : "E5M2";
}

// The largest finite values: the one place they are written (core's Fp8Format and the self-test read them).
constexpr float fp8_max(Fp8Type type) {
    return type == Fp8Type::E4M3 ? 448.0f : 57344.0f;
}

// The magnitude from which a cast loses information to saturation: fp8_max plus half the spacing of values
// there (464 for E4M3, 61440 for E5M2). Below it, round-to-nearest lands on fp8_max anyway.
constexpr float fp8_saturation_threshold(Fp8Type type) {
    return fp8_max(type) + (type == Fp8Type::E4M3 ? 16.0f : 4096.0f);
}

}  // namespace tewb::kernels
