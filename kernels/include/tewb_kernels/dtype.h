#pragma once

#include <cstddef>
#include <string_view>

namespace tewb::kernels {

enum class DType { Float32, BFloat16, Float16 };

constexpr std::size_t element_size(DType dtype) {
    return dtype == DType::Float32 ? 4 : 2;
}

constexpr std::string_view to_string(DType dtype) {
    switch (dtype) {
        case DType::Float32: return "float32";
        case DType::BFloat16: return "bfloat16";
        case DType::Float16: return "float16";
    }
    return "unknown";
}

}  // namespace tewb::kernels
