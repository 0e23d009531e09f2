#include "core/fp8/Fp8Format.h"

#include <string>

#include "core/common/Choice.h"

namespace tewb {

float fp8_max(Fp8Dtype dtype) {
    return dtype == Fp8Dtype::E4M3 ? 448.0f : 57344.0f;
}

float fp8_saturation_threshold(Fp8Dtype dtype) {
    return dtype == Fp8Dtype::E4M3 ? 448.0f + 16.0f : 57344.0f + 4096.0f;
}

Fp8Dtype forward_dtype(RecipeFormat) {
    return Fp8Dtype::E4M3;
}

Fp8Dtype backward_dtype(RecipeFormat format) {
    return format == RecipeFormat::Hybrid ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3;
}

namespace {

constexpr NameTable kDtypeNames{std::to_array<Named<Fp8Dtype>>({{"e4m3", Fp8Dtype::E4M3}, {"e5m2", Fp8Dtype::E5M2}})};
constexpr NameTable kFormatNames{
    std::to_array<Named<RecipeFormat>>({{"hybrid", RecipeFormat::Hybrid}, {"e4m3", RecipeFormat::E4M3}})};

}  // namespace

std::string_view to_string(Fp8Dtype value) {
    return kDtypeNames.name(value);
}

std::string_view to_string(RecipeFormat value) {
    return kFormatNames.name(value);
}

Fp8Dtype parse_fp8_dtype(std::string_view flag, std::string_view text) {
    return kDtypeNames.parse(flag, text);
}

RecipeFormat parse_recipe_format(std::string_view flag, std::string_view text) {
    if (text == "e5m2") {
        throw ConfigError(std::string(flag) +
                          " 'e5m2': pure E5M2 is not a recipe format (too coarse for activations and weights); "
                          "allowed: hybrid|e4m3 (hybrid already uses E5M2 for gradients)");
    }
    return kFormatNames.parse(flag, text);
}

}  // namespace tewb
