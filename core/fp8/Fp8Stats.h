#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/Choice.h"
#include "core/fp8/Fp8Format.h"

namespace tewb {

// The tensors one GEMM casts to FP8 get one slot each: input, weight and output in the forward pass,
// grad-output and grad-input in the backward pass (Transformer Engine's layout). Our modules keep GEMM
// outputs and grad-inputs in high precision, so those two slots exist but are never cast into.
enum class SlotRole { Input, Weight, Output, GradOutput, GradInput };

// One slot a run reports statistics for.
struct Fp8SlotInfo {
    std::string module;  // e.g. "blocks_3.mlp.fc1"
    SlotRole role = SlotRole::Input;
    Fp8Dtype dtype = Fp8Dtype::E4M3;

    friend bool operator==(const Fp8SlotInfo&, const Fp8SlotInfo&) = default;
};

// The recipes an inspected cast is compared with, on the very same tensor (computed, not trained with):
// current scaling (scale = fp8_max / amax of the tensor itself, the slot's format), block scaling
// (Float8BlockScaling: 1×128 blocks, 128×128 for weights, E4M3, power-of-two scales), MXFP8 (E4M3 with one
// power-of-two scale per 32 values of a row, the OCP rule) and NVFP4 (E2M1 with an E4M3 scale per 16 values of a
// row, 16 × 16 tiles for weights, and the tensor's float32 scale; rounded to nearest).
enum class WhatIf { Current, Block, Mxfp8, Nvfp4 };
inline constexpr std::array<WhatIf, 4> kWhatIfs{WhatIf::Current, WhatIf::Block, WhatIf::Mxfp8, WhatIf::Nvfp4};
inline constexpr std::size_t kWhatIfCount = kWhatIfs.size();
// How people read it: "current scaling", "block scaling", "MXFP8", "NVFP4"; in a column's header "current",
// "block", "MXFP8", "NVFP4".
std::string_view what_if_title(WhatIf what_if);
std::string_view what_if_column(WhatIf what_if);

// One slot in one step: the amax recorded this step (of the unscaled tensor; 0 when the slot did not
// run) and the scale the cast used. With inspection on, the fraction of elements that saturated
// (|x * scale| beyond what rounds to fp8_max: fp8_saturation_threshold) and that underflowed (x != 0
// cast to 0).
// With inspection, also the quantization error of the cast: relative MSE = Σ(dequantized − x)² / Σx² over
// the step's casts into the slot (SNR in dB = −10·log10 of it), and the same under each what-if recipe.
struct Fp8SlotSample {
    float amax = 0;
    float scale = 1;
    std::optional<float> saturated;
    std::optional<float> underflow;
    std::optional<float> rel_mse;
    std::array<std::optional<float>, kWhatIfCount> what_if_rel_mse{};

    std::optional<float>& what_if(WhatIf w) { return what_if_rel_mse[static_cast<std::size_t>(w)]; }
    const std::optional<float>& what_if(WhatIf w) const { return what_if_rel_mse[static_cast<std::size_t>(w)]; }

    friend bool operator==(const Fp8SlotSample&, const Fp8SlotSample&) = default;
};

// With inspection under a recipe with block scales (block, MXFP8, NVFP4): how many blocks of a slot's casts had
// their scale in each binade, over every step of the run. A block's scale here is the factor its stored values are
// multiplied by on the way back (1 / scale for block scaling; X for MXFP8; the E4M3 block scale times the tensor's
// s_dec for NVFP4), binned by floor(log2). Blocks whose values are all zero or not finite have no scale: counted
// apart. Counted on the copy cast along the tensor's rows (for weights one count per tile).
struct Fp8ScaleHistogram {
    static constexpr int kLowestExponent = -128;  // bins cover 2^-128 .. 2^127; beyond that, the end bins
    static constexpr int kBins = 256;
    int lowest_exponent = 0;             // the binade of counts[0]: blocks with 2^e <= scale < 2^(e+1)
    std::vector<std::int64_t> counts;    // consecutive binades, zero-trimmed at both ends
    std::int64_t empty_blocks = 0;

    std::int64_t blocks() const;  // all blocks, empty ones included
    friend bool operator==(const Fp8ScaleHistogram&, const Fp8ScaleHistogram&) = default;
};

// Signal-to-noise ratio in dB of a relative MSE: −10·log10(rel_mse); +inf for an exact cast.
double snr_db(double rel_mse);

template <>
struct EnumNames<SlotRole> {
    static constexpr NameTable table{std::to_array<Named<SlotRole>>({{"input", SlotRole::Input},
                                                                     {"weight", SlotRole::Weight},
                                                                     {"output", SlotRole::Output},
                                                                     {"grad_output", SlotRole::GradOutput},
                                                                     {"grad_input", SlotRole::GradInput}})};
};
// The record's and CSV's names: "<name>_rel_mse".
template <>
struct EnumNames<WhatIf> {
    static constexpr NameTable table{std::to_array<Named<WhatIf>>(
        {{"current", WhatIf::Current}, {"block", WhatIf::Block}, {"mxfp8", WhatIf::Mxfp8}, {"nvfp4", WhatIf::Nvfp4}})};
};

}  // namespace tewb
