#include "core/model/CausalLm.h"

#include <ATen/ops/cross_entropy_loss.h>

#include "core/ledger/Ledger.h"

namespace tewb {

torch::Tensor CausalLm::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
    const at::Tensor logits = forward(tokens);
    const LedgerScope scope("loss");
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

}  // namespace tewb
