#pragma once

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

}  // namespace tewb::kernels::detail
