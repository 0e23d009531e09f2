#pragma once

namespace tewb {

// Transformer Engine's module choices (normalization="LayerNorm" | "RMSNorm", activation="gelu" | "swiglu"): the
// gpt block takes the first of each, the llama block the second.
enum class Normalization { LayerNorm, RmsNorm };
enum class Activation { Gelu, Swiglu };

}  // namespace tewb
