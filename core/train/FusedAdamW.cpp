#include "core/train/FusedAdamW.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include "core/modules/ops/ParameterCopies.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

FusedAdamW::FusedAdamW(std::vector<at::Tensor> parameters, AdamWSettings settings, const TeOps* ops)
    : parameters_(std::move(parameters)), settings_(settings), ops_(ops) {
    for (const at::Tensor& p : parameters_) {
        exp_avg_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
        exp_avg_sq_.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
        if (!ops_) steps_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
    }
    if (ops_ && !parameters_.empty()) shared_step_ = at::zeros({}, parameters_.front().options().dtype(at::kFloat));
}

void FusedAdamW::zero_grad() {
    for (at::Tensor& p : parameters_) {
        p.mutable_grad().reset();
    }
}

void FusedAdamW::step() {
    if (parameters_.empty()) return;
    bool all_have_grads = true;
    std::vector<at::Tensor> grads;
    grads.reserve(parameters_.size());
    for (const at::Tensor& p : parameters_) {
        grads.push_back(p.grad());
        all_have_grads = all_have_grads && grads.back().defined();
    }
    // Hot path: every MiniGPT parameter gets a gradient, so the owned lists go to the kernel as they are.
    if (all_have_grads) {
        if (ops_) {
            update_through_ops(parameters_, grads, exp_avg_, exp_avg_sq_);
        } else {
            update(parameters_, grads, exp_avg_, exp_avg_sq_, steps_);
        }
        return;
    }
    std::vector<at::Tensor> params, present_grads, exp_avg, exp_avg_sq, steps;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        if (grads[i].defined()) {
            params.push_back(parameters_[i]);
            present_grads.push_back(grads[i]);
            exp_avg.push_back(exp_avg_[i]);
            exp_avg_sq.push_back(exp_avg_sq_[i]);
            if (!ops_) steps.push_back(steps_[i]);
        }
    }
    if (params.empty()) return;
    if (ops_) {
        update_through_ops(params, present_grads, exp_avg, exp_avg_sq);
    } else {
        update(params, present_grads, exp_avg, exp_avg_sq, steps);
    }
}

void FusedAdamW::update_through_ops(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                                    const std::vector<at::Tensor>& exp_avg, const std::vector<at::Tensor>& exp_avg_sq) const {
    ParameterCopies* copies = parameter_copies_in_force();
    const std::vector<at::Tensor> bf16 = copies ? copies->copies_for(params, at::kBFloat16) : std::vector<at::Tensor>(params.size());
    const std::vector<OptimizerFp8Cast> fp8 =
        copies && write_fp8_copies_ ? copies->fp8_casts_for(params) : std::vector<OptimizerFp8Cast>();
    std::vector<Fp8Tensor> fp8_values = ops_->adamw_step(params, grads, exp_avg, exp_avg_sq, shared_step_, bf16, fp8, settings_);
    // The kernel writes below autograd's in-place bookkeeping: move the counters, then record the copies as current.
    for (const at::Tensor& p : params) p.unsafeGetTensorImpl()->bump_version();
    if (copies) {
        copies->mark_current(params, at::kBFloat16);
        copies->set_fp8_copies(params, fp8, std::move(fp8_values));
    }
}

void FusedAdamW::update(at::TensorList params, at::TensorList grads, at::TensorList exp_avg, at::TensorList exp_avg_sq,
                        at::TensorList steps) const {
    at::_foreach_add_(steps, 1.0);
    at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, steps, settings_.lr, settings_.beta1,
                      settings_.beta2, settings_.weight_decay, settings_.eps, /*amsgrad=*/false, /*maximize=*/false);
    // The fused kernel writes the parameters without moving their version counters (it is called below
    // autograd's in-place bookkeeping); what keeps copies of a parameter (ParameterCopies, the FP8 weight
    // cache) reads the counter to know the parameter changed.
    for (const at::Tensor& p : params) p.unsafeGetTensorImpl()->bump_version();
}

}  // namespace tewb
