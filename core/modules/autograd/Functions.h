#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "core/modules/autograd/GemmStep.h"

namespace tewb {

// The autograd functions of the TE-style modules, written once against TeOps: whichever implementation
// the plans carry (reference or fused) runs forward and backward. Inputs are 2-D ([tokens, features]);
// a function returns its outputs in the plan's compute dtype and the gradients in each input's dtype.

struct LayerNormPlan {
    const TeOps* ops = nullptr;
    at::ScalarType compute_dtype = at::kFloat;
    double eps = 1e-5;
};

at::Tensor apply_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const GemmPlan& plan);

at::Tensor apply_layer_norm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const LayerNormPlan& plan);

// Returns {output} or, with `layernorm_output`, {output, layernorm output} (differentiable too). Without it
// an FP8 forward never writes the LayerNorm's high-precision output.
std::vector<at::Tensor> apply_layer_norm_linear(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                const at::Tensor& weight, const at::Tensor& bias, const LayerNormPlan& norm,
                                                const GemmPlan& gemm, bool layernorm_output);

// LayerNorm → fc1 → GELU (tanh) → fc2.
at::Tensor apply_layer_norm_mlp(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& fc1_weight,
                                const at::Tensor& fc1_bias, const at::Tensor& fc2_weight, const at::Tensor& fc2_bias,
                                const LayerNormPlan& norm, const GemmPlan& fc1, const GemmPlan& fc2);

}  // namespace tewb
