#pragma once

#include <memory>

#include <torch/nn/module.h>

namespace tewb {

class Fp8Context;

// A decoder-only language model: token ids [batch, seq] (int64) to logits [batch, seq, vocab].
// Backends (torch, te) implement it; the trainer only sees this.
class CausalLm : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& tokens) = 0;
    // The FP8 state of models built from TE-style modules (its statistics feed the run record).
    virtual std::shared_ptr<Fp8Context> fp8_context() const { return nullptr; }
};

}  // namespace tewb
