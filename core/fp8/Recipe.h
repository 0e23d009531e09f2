#pragma once

#include <string_view>
#include <vector>

#include "core/common/Choice.h"
#include "core/common/ConfigProblem.h"
#include "core/common/TeImpl.h"
#include "core/fp8/Fp8Format.h"

namespace tewb {

// Delayed: each cast uses the scale derived from earlier steps' amax history (Transformer Engine's
// DelayedScaling). Current: each cast derives its scale from the tensor it casts (Float8CurrentScaling).
// Block: one scale per block, from the block's own amax (Float8BlockScaling: 1×128 blocks for
// activations and gradients, 128×128 for weights; core/fp8/BlockScaling.h); no history.
// Mxfp8, Nvfp4: Blackwell's microscaling formats (MXFP8BlockScaling, NVFP4BlockScaling; core/fp8/Microscaling.h):
// E4M3/E5M2 values with a power-of-two scale per 32 values, or E2M1 values with an E4M3 scale per 16 (16 × 16 for
// weights) and a tensor scale; no history. Emulated on every GPU (docs/fp8.md, "Microscaling recipes").
enum class ScalingKind { Delayed, Current, Block, Mxfp8, Nvfp4 };

// Whether `scaling` is one of the microscaling formats (no FP8 scale update; emulated; the reference ops only).
constexpr bool is_microscaling(ScalingKind scaling) {
    return scaling == ScalingKind::Mxfp8 || scaling == ScalingKind::Nvfp4;
}
enum class AmaxAlgo { Max, MostRecent };

// The FP8 recipe of a run. The field defaults are Transformer Engine's library defaults;
// seed_defaults() is what the CLI and the GUI start from (the seed tutorial's choice). Semantics:
// docs/fp8.md.
struct Fp8Recipe {
    static constexpr int kMaxHistoryLen = 65536;
    static constexpr int kMaxMargin = 64;

    ScalingKind scaling = ScalingKind::Delayed;
    RecipeFormat format = RecipeFormat::Hybrid;
    int amax_history_len = 1024;
    AmaxAlgo algo = AmaxAlgo::Max;
    int margin = 0;  // scale = (fp8_max / 2^margin) / amax; delayed scaling only
    // Block scaling: block scales rounded down to powers of two (Transformer Engine's default), or exact
    // float32 scales.
    bool block_power_of_two = true;
    // Delayed scaling: until a pass's first scale update (no history yet), each cast uses the scale the update
    // rule derives from that cast's own amax, instead of Transformer Engine's scale 1. Step 1 at scale 1
    // quantizes weights of about 0.02 in E4M3's subnormals and most gradients to 0 in E5M2, and that one
    // step moves a short run's loss curve by more than everything after it (docs/fp8.md, "The first step").
    bool calibrate_first_step = false;
    // NVFP4 (Transformer Engine's NVFP4BlockScaling defaults): gradients rounded stochastically, and the
    // weight-gradient GEMM's inputs passed through the 16-point random Hadamard transform before their cast.
    bool nvfp4_stochastic_rounding = true;
    bool nvfp4_hadamard = true;

    static Fp8Recipe te_defaults() { return {}; }
    static Fp8Recipe seed_defaults() { return {ScalingKind::Delayed, RecipeFormat::Hybrid, 16, AmaxAlgo::Max, 0, true, true}; }

    friend bool operator==(const Fp8Recipe&, const Fp8Recipe&) = default;
};

// Problems with `recipe`, fields named by their CLI flags: `history_flag` (te-bench run's
// --amax-history-len, also `te-bench recipe`'s, which accepts --history-len too) and --margin.
std::vector<ConfigProblem> find_recipe_problems(const Fp8Recipe& recipe,
                                                std::string_view history_flag = "--amax-history-len");

// The format a recipe takes where none was chosen: E4M3 everywhere under block and MXFP8 scaling (their Transformer
// Engine defaults; NVFP4 has no FP8 format to choose), HYBRID otherwise. te-bench applies it when --fp8-format is not given, the form when the scaling changes.
RecipeFormat default_recipe_format(ScalingKind scaling);

// Whether FP8 GEMMs under `scaling` are emulated in float32 with ops of `kind` (the run's timings then are not
// FP8 speed, and records and names say so): with the reference ops and the fused ops on the host always, and
// with block scaling where there is no native block-scaled GEMM (`block_gemms_native`: cuBLASLt on Hopper), and with
// the microscaling formats everywhere (their native GEMMs need compute capability 10.x).
bool fp8_gemms_emulated(OpsKind kind, ScalingKind scaling, bool block_gemms_native);

template <>
struct EnumNames<ScalingKind> {
    static constexpr NameTable table{std::to_array<Named<ScalingKind>>({{"delayed", ScalingKind::Delayed},
                                                                        {"current", ScalingKind::Current},
                                                                        {"block", ScalingKind::Block},
                                                                        {"mxfp8", ScalingKind::Mxfp8},
                                                                        {"nvfp4", ScalingKind::Nvfp4}})};
};
template <>
struct EnumNames<AmaxAlgo> {
    static constexpr NameTable table{
        std::to_array<Named<AmaxAlgo>>({{"max", AmaxAlgo::Max}, {"most_recent", AmaxAlgo::MostRecent}})};
};

}  // namespace tewb
