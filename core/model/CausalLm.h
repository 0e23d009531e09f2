#pragma once

#include <torch/nn/module.h>

namespace tewb {

// A decoder-only language model: token ids [batch, seq] (int64) to logits [batch, seq, vocab].
// Backends (torch, later te) implement it; the trainer only sees this.
class CausalLm : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& tokens) = 0;
    virtual std::string implementation() const = 0;
};

}  // namespace tewb
