#pragma once

#include <cstdint>

#include "tewb_kernels/fp8_type.h"

namespace tewb::kernels::detail {

// An FP8 output as the kernels write it, made from a checked FP8 tensor (common/arguments.h's fp8_output): `data` gets
// fp8(y * scale[0]) in the op's [rows, cols] layout and, when not null, `transposed` the same values as
// [cols, rows]; max |y| is combined into amax[0] when amax is not null (the rules of cast_to_fp8).
struct Fp8Output {
    void* data = nullptr;
    void* transposed = nullptr;
    const float* scale = nullptr;
    float* amax = nullptr;
    Fp8Type type = Fp8Type::E4M3;
};

// An optional FP8 output's pointers as the launchers hand them to a kernel: all null (type E4M3) where there is none.
struct Fp8Pointers {
    std::uint8_t* q = nullptr;
    std::uint8_t* q_t = nullptr;
    const float* scale = nullptr;
    Fp8Type type = Fp8Type::E4M3;
    float* amax = nullptr;
};

inline Fp8Pointers fp8_pointers(const Fp8Output* fp8) {
    if (fp8 == nullptr) return {};
    return {static_cast<std::uint8_t*>(fp8->data), static_cast<std::uint8_t*>(fp8->transposed), fp8->scale, fp8->type, fp8->amax};
}

}  // namespace tewb::kernels::detail
