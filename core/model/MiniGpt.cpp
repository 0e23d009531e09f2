#include "core/model/MiniGpt.h"

#include <vector>

#include <ATen/ops/embedding.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/unbind.h>

#include "core/ledger/Ledger.h"
#include "core/model/Llama.h"
#include "core/model/LlamaTe.h"
#include "core/model/MiniGptTe.h"
#include "core/modules/ParameterInit.h"

// Module::to() moves parameters with set_data(), so the tensor members below stay the live parameters.

namespace tewb {

MiniGpt::MiniGpt(const ModelShape& shape, std::uint64_t seed) : shape_(shape) {
    ParameterInit init(seed);
    const std::int64_t h = shape.hidden;
    const double residual_std = gpt_residual_init_std(shape.layers);

    wte_ = register_parameter("wte", init.normal({shape.vocab, h}, kGptInitStd));
    wpe_ = register_parameter("wpe", init.normal({shape.seq, h}, kGptInitStd));
    for (int i = 0; i < shape.layers; ++i) {
        const std::string p = "blocks_" + std::to_string(i) + "_";
        Block b;
        b.ln1_weight = register_parameter(p + "ln1_weight", init.ones({h}));
        b.ln1_bias = register_parameter(p + "ln1_bias", init.zeros({h}));
        b.qkv_weight = register_parameter(p + "qkv_weight", init.normal({3 * h, h}, kGptInitStd));
        b.qkv_bias = register_parameter(p + "qkv_bias", init.zeros({3 * h}));
        b.proj_weight = register_parameter(p + "proj_weight", init.normal({h, h}, residual_std));
        b.proj_bias = register_parameter(p + "proj_bias", init.zeros({h}));
        b.ln2_weight = register_parameter(p + "ln2_weight", init.ones({h}));
        b.ln2_bias = register_parameter(p + "ln2_bias", init.zeros({h}));
        b.fc1_weight = register_parameter(p + "fc1_weight", init.normal({4 * h, h}, kGptInitStd));
        b.fc1_bias = register_parameter(p + "fc1_bias", init.zeros({4 * h}));
        b.fc2_weight = register_parameter(p + "fc2_weight", init.normal({h, 4 * h}, residual_std));
        b.fc2_bias = register_parameter(p + "fc2_bias", init.zeros({h}));
        blocks_.push_back(std::move(b));
    }
    ln_f_weight_ = register_parameter("ln_f_weight", init.ones({h}));
    ln_f_bias_ = register_parameter("ln_f_bias", init.zeros({h}));
}

torch::Tensor MiniGpt::forward(const torch::Tensor& tokens) {
    const std::int64_t batch = tokens.size(0);
    const std::int64_t seq = tokens.size(1);
    const std::int64_t h = shape_.hidden;
    const std::int64_t heads = shape_.heads;
    torch::Tensor x;
    {
        const LedgerScope scope("embedding");
        x = at::embedding(wte_, tokens) + position_embeddings(wpe_, seq);
    }
    // The ledger's scopes (core/ledger) name the parts of a layer; the backward's ops inherit them.
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const Block& b = blocks_[i];
        const LedgerScope layer("layer", static_cast<int>(i));
        torch::Tensor a, qkv, y, projected, m;
        {
            const LedgerScope scope("ln1");
            a = at::layer_norm(x, {h}, b.ln1_weight, b.ln1_bias, kLayerNormEps);
        }
        {
            const LedgerScope scope("qkv");
            qkv = at::linear(a, b.qkv_weight, b.qkv_bias);
        }
        {
            const LedgerScope scope("attention");
            // q, k and v as views of the projection ([batch, seq, 3, heads, head dim] split along the 3): unbind's
            // backward stacks their gradients into one tensor of the projection's layout (one write), where
            // indexing would give each a zero-filled copy and sum the three.
            const std::vector<torch::Tensor> parts = qkv.view({batch, seq, 3, heads, h / heads}).unbind(2);
            y = at::scaled_dot_product_attention(parts[0].transpose(1, 2), parts[1].transpose(1, 2), parts[2].transpose(1, 2),
                                                 {}, 0.0, /*is_causal=*/true);
            y = y.transpose(1, 2).reshape({batch, seq, h});
        }
        {
            const LedgerScope scope("proj");
            projected = at::linear(y, b.proj_weight, b.proj_bias);
        }
        {
            const LedgerScope scope("residual");
            x = x + projected;
        }
        {
            const LedgerScope scope("ln2");
            m = at::layer_norm(x, {h}, b.ln2_weight, b.ln2_bias, kLayerNormEps);
        }
        {
            const LedgerScope scope("fc1");
            m = at::gelu(at::linear(m, b.fc1_weight, b.fc1_bias), "tanh");
        }
        {
            const LedgerScope scope("fc2");
            m = at::linear(m, b.fc2_weight, b.fc2_bias);
        }
        const LedgerScope scope("residual");
        x = x + m;
    }
    const LedgerScope scope("head");
    x = at::layer_norm(x, {h}, ln_f_weight_, ln_f_bias_, kLayerNormEps);
    return at::linear(x, wte_);
}

std::shared_ptr<CausalLm> make_model(Backend backend, const ModelShape& shape, std::uint64_t seed) {
    if (shape.arch == Arch::Llama) {
        if (backend == Backend::Te) return std::make_shared<LlamaTe>(shape, seed);
        return std::make_shared<Llama>(shape, seed);
    }
    if (backend == Backend::Te) {
        return std::make_shared<MiniGptTe>(shape, seed);
    }
    return std::make_shared<MiniGpt>(shape, seed);
}

}  // namespace tewb
