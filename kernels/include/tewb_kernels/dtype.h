#pragma once

#include <cstddef>
#include <iterator>
#include <string_view>

namespace tewb::kernels {

enum class DType { Float32, BFloat16, Float16 };

// The high-precision element types' names (as messages and reports write them) and sizes in bytes, in
// DType's order: the one table the kernels and core read (the FP8 types' is in fp8_type.h). The names are
// string literals, so name.data() is a C string.
struct DTypeInfo {
    std::string_view name;
    std::size_t bytes;
};
inline constexpr DTypeInfo kDTypeTable[] = {{"float32", 4}, {"bfloat16", 2}, {"float16", 2}};

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

}  // namespace tewb::kernels
