#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

#include "tewb_kernels/fp8_type.h"

namespace tewb::kernels {

// Every element type a kernel tensor (tensor.h) holds: the high-precision ones, the FP8 ones, token ids, and the
// microscaling formats' (mx.h): E8M0 scales (2^(code - 127), one byte) and E2M1 values packed two to a byte (a
// tensor of E2M1x2 is shaped in bytes: [rows, ceil(values per row / 2)]).
enum class DType { Float32, BFloat16, Float16, Float8E4M3, Float8E5M2, Int64, Float8E8M0, Float4E2M1x2 };

// The element types' names (as messages and reports write them; the FP8 ones are fp8_type.h's) and sizes in
// bytes, in DType's order: the one table the kernels and core read. The names are string literals, so
// name.data() is a C string.
struct DTypeInfo {
    std::string_view name;
    std::size_t bytes;
};
inline constexpr DTypeInfo kDTypeTable[] = {{"float32", 4},
                                            {"bfloat16", 2},
                                            {"float16", 2},
                                            {kFp8TypeNames[0].name, 1},
                                            {kFp8TypeNames[1].name, 1},
                                            {"int64", 8},
                                            {"E8M0", 1},
                                            {"E2M1x2", 1}};

// A value outside the enum reads as {"unknown", 2} (an argument check reports it by name).
constexpr DTypeInfo dtype_info(DType dtype) {
    const auto i = static_cast<std::size_t>(dtype);
    return i < std::size(kDTypeTable) ? kDTypeTable[i] : DTypeInfo{"unknown", 2};
}

constexpr std::size_t element_size(DType dtype) {
    return dtype_info(dtype).bytes;
}

constexpr std::string_view to_string(DType dtype) {
    return dtype_info(dtype).name;
}

constexpr bool is_fp8(DType dtype) {
    return dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2;
}

// The element type of an FP8 format, and back (nothing for a type that is not FP8).
constexpr DType fp8_dtype(Fp8Type type) {
    return type == Fp8Type::E4M3 ? DType::Float8E4M3 : DType::Float8E5M2;
}
constexpr std::optional<Fp8Type> fp8_type_of(DType dtype) {
    if (dtype == DType::Float8E4M3) return Fp8Type::E4M3;
    if (dtype == DType::Float8E5M2) return Fp8Type::E5M2;
    return std::nullopt;
}

}  // namespace tewb::kernels
