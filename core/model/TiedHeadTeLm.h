#pragma once

#include <memory>

#include "core/fp8/Fp8State.h"
#include "core/model/CausalLm.h"
#include "core/model/ModelShape.h"
#include "core/modules/autograd/Functions.h"

namespace tewb {

// What the te models share: a head tied to the token embedding (kept in high precision, as Transformer Engine
// users do) over the final norm's output, and one FP8 state for all blocks. A model builds its layers and
// registers `wte_` itself (its parameter order is the torch backend's) and says how tokens become hidden states.
class TiedHeadTeLm : public CausalLm {
public:
    torch::Tensor forward(const torch::Tensor& tokens) override;
    // The head and the loss fused (apply_tied_head_loss): the logits are never kept, their memory takes the
    // gradient, and the tied table's two gradients are summed in place.
    torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets) override;
    std::shared_ptr<Fp8Context> fp8_context() const override { return fp8_; }

protected:
    explicit TiedHeadTeLm(const ModelShape& shape) : shape_(shape) {}

    // Embedding, blocks and the final norm: [batch * seq, hidden]. `tied` (null in forward()) takes the
    // embedding's gradient for the head to add its own into.
    virtual torch::Tensor hidden_states(const torch::Tensor& tokens, const std::shared_ptr<TiedTableGradient>& tied) = 0;

    ModelShape shape_;
    std::shared_ptr<Fp8Context> fp8_ = std::make_shared<Fp8Context>();
    torch::Tensor wte_;  // [vocab, hidden]: the token embedding and the head
};

}  // namespace tewb
