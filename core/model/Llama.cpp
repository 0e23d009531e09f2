#include "core/model/Llama.h"

#include <string>
#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/chunk.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/rms_norm.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/split_with_sizes.h>

#include "core/common/Error.h"
#include "core/ledger/Ledger.h"
#include "core/model/Rotary.h"
#include "core/modules/ParameterInit.h"

// Module::to() moves parameters and buffers with set_data(), so the tensor members below stay the live ones.

namespace tewb {

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                           std::int64_t rotated_heads) {
    const std::int64_t seq = x.size(1);
    // [seq, half] → [1, seq, 1, half], broadcast over batch and heads.
    const torch::Tensor c = cos.narrow(0, 0, seq).to(at::kFloat).unsqueeze(0).unsqueeze(2);
    const torch::Tensor s = sin.narrow(0, 0, seq).to(at::kFloat).unsqueeze(0).unsqueeze(2);
    // Splits, not narrows: a split's backward concatenates its parts' gradients (one write) where each narrow's
    // would be a zero-filled copy of the whole, summed.
    const bool all = rotated_heads == x.size(2);
    const std::vector<torch::Tensor> heads =
        all ? std::vector<torch::Tensor>{x} : x.split_with_sizes({rotated_heads, x.size(2) - rotated_heads}, 2);
    const std::vector<torch::Tensor> halves = heads[0].to(at::kFloat).chunk(2, 3);
    const torch::Tensor& a = halves[0];
    const torch::Tensor& b = halves[1];
    const torch::Tensor out = at::cat({a * c - b * s, b * c + a * s}, 3).to(x.scalar_type());
    return all ? out : at::cat({out, heads[1]}, 2);
}

namespace {

// RunConfig's validation refuses these first; a model built from another path gets the reason, not a view error.
void check_llama_shape(const ModelShape& shape, int kv_heads) {
    if (shape.heads < 1 || shape.hidden % shape.heads != 0 || (shape.hidden / shape.heads) % 2 != 0) {
        throw ConfigError("llama: --hidden " + std::to_string(shape.hidden) + " must split into --heads " +
                          std::to_string(shape.heads) + " heads of an even size (rotary embeddings turn pairs)");
    }
    if (kv_heads < 1 || shape.heads % kv_heads != 0) {
        throw ConfigError("llama: --kv-heads " + std::to_string(kv_heads) + " must divide --heads " +
                          std::to_string(shape.heads));
    }
}

}  // namespace

Llama::Llama(const ModelShape& shape, std::uint64_t seed)
    : shape_(shape), kv_heads_(effective_kv_heads(shape)), ffn_(ffn_hidden(shape)) {
    check_llama_shape(shape, kv_heads_);
    ParameterInit init(seed);
    const std::int64_t h = shape.hidden;
    const std::int64_t d = h / shape.heads;
    const double residual_std = gpt_residual_init_std(shape.layers);

    wte_ = register_parameter("wte", init.normal({shape.vocab, h}, kGptInitStd));
    for (int i = 0; i < shape.layers; ++i) {
        const std::string p = "blocks_" + std::to_string(i) + "_";
        Block b;
        b.attn_norm_weight = register_parameter(p + "attn_norm_weight", init.ones({h}));
        b.qkv_weight = register_parameter(p + "qkv_weight", init.normal({(shape.heads + 2 * kv_heads_) * d, h}, kGptInitStd));
        b.proj_weight = register_parameter(p + "proj_weight", init.normal({h, h}, residual_std));
        b.mlp_norm_weight = register_parameter(p + "mlp_norm_weight", init.ones({h}));
        b.fc1_weight = register_parameter(p + "fc1_weight", init.normal({2 * ffn_, h}, kGptInitStd));
        b.fc2_weight = register_parameter(p + "fc2_weight", init.normal({h, ffn_}, residual_std));
        blocks_.push_back(std::move(b));
    }
    norm_f_weight_ = register_parameter("norm_f_weight", init.ones({h}));
    const RotaryTables tables = rotary_tables(shape.seq, d, shape.rope_base);
    rope_cos_ = register_buffer("rope_cos", tables.cos);
    rope_sin_ = register_buffer("rope_sin", tables.sin);
}

torch::Tensor Llama::attention(const Block& b, const torch::Tensor& x) const {
    const std::int64_t batch = x.size(0);
    const std::int64_t seq = x.size(1);
    const std::int64_t h = shape_.hidden;
    const std::int64_t heads = shape_.heads;
    const std::int64_t d = h / heads;
    torch::Tensor a, qkv, q, k, y;
    {
        const LedgerScope scope("ln1");
        a = at::rms_norm(x, {h}, b.attn_norm_weight, kRmsNormEps);
    }
    {
        const LedgerScope scope("qkv");
        qkv = at::linear(a, b.qkv_weight).view({batch, seq, heads + 2 * kv_heads_, d});
    }
    // q, k and v as splits of the projection (its backward writes their gradients into one tensor of its layout).
    const std::vector<torch::Tensor> parts = qkv.split_with_sizes({heads, kv_heads_, kv_heads_}, 2);
    {
        const LedgerScope scope("rotary");
        q = apply_rotary(parts[0], rope_cos_, rope_sin_, heads);
        k = apply_rotary(parts[1], rope_cos_, rope_sin_, kv_heads_);
    }
    {
        const LedgerScope scope("attention");
        // [batch, heads, seq, d]; sdpa repeats each key/value head for its group of query heads.
        y = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), parts[2].transpose(1, 2), {}, 0.0,
                                             /*is_causal=*/true, std::nullopt, /*enable_gqa=*/kv_heads_ < heads);
        y = y.transpose(1, 2).reshape({batch, seq, h});
    }
    const LedgerScope scope("proj");
    return at::linear(y, b.proj_weight);
}

torch::Tensor Llama::mlp(const Block& b, const torch::Tensor& x) const {
    torch::Tensor m;
    {
        const LedgerScope scope("ln2");
        m = at::rms_norm(x, {shape_.hidden}, b.mlp_norm_weight, kRmsNormEps);
    }
    {
        const LedgerScope scope("fc1");
        const std::vector<torch::Tensor> gate_up = at::linear(m, b.fc1_weight).chunk(2, -1);
        m = at::silu(gate_up[0]) * gate_up[1];
    }
    const LedgerScope scope("fc2");
    return at::linear(m, b.fc2_weight);
}

torch::Tensor Llama::forward(const torch::Tensor& tokens) {
    torch::Tensor x;
    {
        const LedgerScope scope("embedding");
        x = at::embedding(wte_, tokens);
    }
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const Block& b = blocks_[i];
        const LedgerScope layer("layer", static_cast<int>(i));
        const torch::Tensor projected = attention(b, x);
        {
            const LedgerScope scope("residual");
            x = x + projected;
        }
        const torch::Tensor down = mlp(b, x);
        const LedgerScope scope("residual");
        x = x + down;
    }
    const LedgerScope scope("head");
    x = at::rms_norm(x, {shape_.hidden}, norm_f_weight_, kRmsNormEps);
    return at::linear(x, wte_);
}

}  // namespace tewb
