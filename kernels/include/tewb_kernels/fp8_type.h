#pragma once

namespace tewb::kernels {

enum class Fp8Type { E4M3, E5M2 };

// The FP8 types' names, the one table of them: `option` as options, records and CSV files spell a type ("e4m3"),
// `name` as messages, reports and the GEMM journal do ("E4M3"). Core's name table for its flags reads `option`.
struct Fp8TypeNames {
    Fp8Type type;
    const char* option;
    const char* name;
};
inline constexpr Fp8TypeNames kFp8TypeNames[] = {{Fp8Type::E4M3, "e4m3", "E4M3"}, {Fp8Type::E5M2, "e5m2", "E5M2"}};

constexpr const Fp8TypeNames& fp8_type_names(Fp8Type type) {
    for (const Fp8TypeNames& names : kFp8TypeNames) {
        if (names.type == type) return names;
    }
    return kFp8TypeNames[0];  // unreachable: every type has its row
}

// "E4M3" or "E5M2"; one byte each.
constexpr const char* fp8_type_name(Fp8Type type) {
    return fp8_type_names(type).name;
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
