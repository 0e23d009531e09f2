#pragma once

#include <cstdint>

namespace tewb {

// Which implementation of the model trains: plain LibTorch modules (the baseline) or this project's
// Transformer-Engine-style modules.
enum class Backend { Torch, Te };

// The block's design. gpt: the seed's MiniGPT (learned positions, pre-LayerNorm with biases, 4× GELU MLP,
// multi-head attention). llama: pre-RMSNorm without biases, SwiGLU MLP, rotary position embeddings,
// grouped-query attention (docs/models-and-data.md).
enum class Arch { Gpt, Llama };

inline constexpr int kDefaultRopeBase = 10000;
inline constexpr double kRmsNormEps = 1e-5;  // llama's RMSNorm, both backends

// The size of a model. Defaults are the seed's benchmark (a gpt).
struct ModelShape {
    int layers = 12;
    int hidden = 768;
    int heads = 12;
    int seq = 96;
    int vocab = 4096;
    Arch arch = Arch::Gpt;
    // llama only (validation refuses them with gpt): key/value heads (0: as many as heads, ordinary multi-head
    // attention), the SwiGLU's intermediate size (0: 8/3 · hidden rounded up to a multiple of 64), the rotary
    // embeddings' base.
    int kv_heads = 0;
    int ffn = 0;
    double rope_base = kDefaultRopeBase;

    friend bool operator==(const ModelShape&, const ModelShape&) = default;
};

// The key/value heads attention uses: kv_heads, or heads when 0 (and always heads for a gpt).
inline int effective_kv_heads(const ModelShape& s) {
    return s.arch == Arch::Llama && s.kv_heads > 0 ? s.kv_heads : s.heads;
}

// The MLP's intermediate size: gpt 4 · hidden; llama --ffn, or 8/3 · hidden rounded up to a multiple of 64.
inline std::int64_t ffn_hidden(const ModelShape& s) {
    if (s.arch == Arch::Gpt) return 4 * static_cast<std::int64_t>(s.hidden);
    if (s.ffn > 0) return s.ffn;
    const std::int64_t raw = (8 * static_cast<std::int64_t>(s.hidden) + 2) / 3;  // ceil(8h / 3)
    return (raw + 63) / 64 * 64;
}

}  // namespace tewb
