#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "core/modules/ops/TeOps.h"

namespace tewb {

// lr, betas, eps, weight decay: the one set TeOps::adamw_step takes too.
using AdamWSettings = AdamWHyper;

// AdamW over all parameters through LibTorch's fused kernel (aten::_fused_adamw_: one multi-tensor
// launch per step on CUDA, the same op PyTorch's AdamW(fused=True) calls). LibTorch's C++ optimizer
// has no fused option, hence this thin owner of the state. Decoupled weight decay applies to every
// parameter, as in the Python reference (bench/minigpt_reference.py).
//
// Given a run's TeOps (the te backend), the step goes through TeOps::adamw_step instead: the fused ops' one
// launch that also rewrites the parameters' bfloat16 copies and FP8 weight copies kept by the ParameterCopies in
// force (so no separate refresh or cast follows), with one step count shared by all parameters (a parameter without a gradient in some step
// is left as it is, and later steps still count that step in its bias correction; every MiniGPT parameter gets a
// gradient in every step).
class FusedAdamW {
public:
    FusedAdamW(std::vector<at::Tensor> parameters, AdamWSettings settings, const TeOps* ops = nullptr);

    // With a TeOps (on by default): the step also writes the FP8 weight copies the ParameterCopies in force keep
    // under delayed scaling (ParameterCopies::fp8_casts_for), so the next forward casts none. Off, the forward
    // casts them, as before this lever (the same values: tst_modules compares the two).
    void set_write_fp8_copies(bool on) { write_fp8_copies_ = on; }

    void zero_grad();  // grads set to undefined, as zero_grad(set_to_none=True)
    void step();

private:
    void update(at::TensorList params, at::TensorList grads, at::TensorList exp_avg, at::TensorList exp_avg_sq,
                at::TensorList steps) const;

    std::vector<at::Tensor> parameters_;
    std::vector<at::Tensor> exp_avg_;
    std::vector<at::Tensor> exp_avg_sq_;
    void update_through_ops(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                            const std::vector<at::Tensor>& exp_avg, const std::vector<at::Tensor>& exp_avg_sq) const;

    std::vector<at::Tensor> steps_;  // float32 scalars on the parameters' device, as the fused op wants
    at::Tensor shared_step_;         // with ops: the one step count
    AdamWSettings settings_;
    const TeOps* ops_ = nullptr;
    bool write_fp8_copies_ = true;
};

}  // namespace tewb
