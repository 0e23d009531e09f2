#pragma once

#include <cstdint>
#include <memory>

#include <torch/nn/module.h>

namespace tewb {

class Fp8Context;

// A decoder-only language model: token ids [batch, seq] (int64) to logits [batch, seq, vocab].
// Backends (torch, te) implement it; the trainer only sees this.
class CausalLm : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& tokens) = 0;
    // The training loss: the mean token cross-entropy of forward(tokens) against targets [batch, seq] (int64, any
    // row stride). This default runs LibTorch's cross_entropy_loss on the logits; a model may fuse its head and loss.
    virtual torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
    // The FP8 state of models built from TE-style modules (its statistics feed the run record).
    virtual std::shared_ptr<Fp8Context> fp8_context() const { return nullptr; }
};

// The position embeddings of the first `seq` positions, added to the token embeddings by broadcasting: the
// table itself when it holds exactly `seq` rows (the seed's models), so the forward gathers nothing and the
// backward is one sum over the batch (an embedding lookup of arange(seq) gives the same values at the cost of
// an arange, a gather and the embedding backward's kernels); else its first rows.
inline torch::Tensor position_embeddings(const torch::Tensor& table, std::int64_t seq) {
    return table.size(0) == seq ? table : table.narrow(0, 0, seq);
}

}  // namespace tewb
