#pragma once

#include <string_view>

#include "core/common/Choice.h"
#include "tewb_kernels/fp8_type.h"

namespace tewb {

// The two FP8 encodings (OCP FP8): E4M3 "fn" (no infinities, largest finite 448) and E5M2 (IEEE-like,
// largest finite 57344). The kernels' type itself, so core and the kernels never convert between two enums; its
// largest finite value and saturation threshold are the kernels' fp8_max and fp8_saturation_threshold.
using Fp8Dtype = kernels::Fp8Type;

// What a recipe uses where: E4M3 everywhere, or HYBRID (E4M3 forward, E5M2 for gradients). Pure E5M2
// is not a recipe format: its 2-bit mantissa is too coarse for activations and weights.
enum class RecipeFormat { Hybrid, E4M3 };

using kernels::fp8_max;
using kernels::fp8_saturation_threshold;
Fp8Dtype forward_dtype(RecipeFormat format);
Fp8Dtype backward_dtype(RecipeFormat format);

template <>
struct EnumNames<Fp8Dtype> {
    static constexpr NameTable table{std::to_array<Named<Fp8Dtype>>(
        {{kernels::fp8_type_names(Fp8Dtype::E4M3).option, Fp8Dtype::E4M3},
         {kernels::fp8_type_names(Fp8Dtype::E5M2).option, Fp8Dtype::E5M2}})};
};
template <>
struct EnumNames<RecipeFormat> {
    static constexpr NameTable table{
        std::to_array<Named<RecipeFormat>>({{"hybrid", RecipeFormat::Hybrid}, {"e4m3", RecipeFormat::E4M3}})};
};

// parse_name<RecipeFormat>, with the reason pure E5M2 is not a recipe format; throws ConfigError naming `flag`,
// the text and what is allowed.
RecipeFormat parse_recipe_format(std::string_view flag, std::string_view text);

}  // namespace tewb
