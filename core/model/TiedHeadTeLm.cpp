#include "core/model/TiedHeadTeLm.h"

#include <ATen/ops/linear.h>

#include "core/ledger/Ledger.h"
#include "core/modules/ops/OpsChoice.h"

namespace tewb {

torch::Tensor TiedHeadTeLm::forward(const torch::Tensor& tokens) {
    const at::Tensor h = hidden_states(tokens, nullptr);
    const LedgerScope scope("head");
    return at::linear(h, wte_).view({tokens.size(0), tokens.size(1), shape_.vocab});
}

torch::Tensor TiedHeadTeLm::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
    const auto tied = std::make_shared<TiedTableGradient>();
    const at::Tensor h = hidden_states(tokens, tied);
    const LedgerScope scope("head");
    const GemmPlan plan{&ops_in_force(h.device()), compute_dtype_for(h), std::nullopt, nullptr};
    return apply_tied_head_loss(h, wte_, targets, plan, tied);
}

}  // namespace tewb
