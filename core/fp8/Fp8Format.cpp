#include "core/fp8/Fp8Format.h"

#include <string>

#include "core/common/Choice.h"

namespace tewb {

Fp8Dtype forward_dtype(RecipeFormat) {
    return Fp8Dtype::E4M3;
}

Fp8Dtype backward_dtype(RecipeFormat format) {
    return format == RecipeFormat::Hybrid ? Fp8Dtype::E5M2 : Fp8Dtype::E4M3;
}

RecipeFormat parse_recipe_format(std::string_view flag, std::string_view text) {
    if (text == "e5m2") {
        throw ConfigError(std::string(flag) +
                          " 'e5m2': pure E5M2 is not a recipe format (too coarse for activations and weights); "
                          "allowed: hybrid|e4m3 (hybrid already uses E5M2 for gradients)");
    }
    return parse_name<RecipeFormat>(flag, text);
}

}  // namespace tewb
