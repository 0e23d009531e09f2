#pragma once

#include <optional>
#include <string>
#include <string_view>

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

// One slot in one step: the amax recorded this step (of the unscaled tensor; 0 when the slot did not
// run) and the scale the cast used. With inspection on, the fraction of elements that saturated
// (|x * scale| beyond what rounds to fp8_max: fp8_saturation_threshold) and that underflowed (x != 0
// cast to 0).
// With inspection, also the quantization error of the cast: relative MSE = Σ(dequantized − x)² / Σx² over
// the step's casts into the slot (SNR in dB = −10·log10 of it), and what-if errors on the same tensors:
// current scaling (scale = fp8_max / amax of the tensor itself, the slot's format) and block scaling
// (Float8BlockScaling: 1×128 blocks, 128×128 for weights, E4M3, power-of-two scales).
struct Fp8SlotSample {
    float amax = 0;
    float scale = 1;
    std::optional<float> saturated;
    std::optional<float> underflow;
    std::optional<float> rel_mse;
    std::optional<float> current_rel_mse;
    std::optional<float> block_rel_mse;

    friend bool operator==(const Fp8SlotSample&, const Fp8SlotSample&) = default;
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

}  // namespace tewb
