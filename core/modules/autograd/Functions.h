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

// With a `residual` ([rows, out]): residual + x · Wᵀ + b in the residual's dtype (the add in the GEMM where the ops
// can), and the residual's gradient is the output's, as it comes.
at::Tensor apply_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const GemmPlan& plan,
                        const at::Tensor& residual = {});

at::Tensor apply_layer_norm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const LayerNormPlan& plan);

// Returns {output}, then the layernorm output with `layernorm_output` (differentiable too; without it an FP8
// forward never writes the LayerNorm's high-precision output), then x itself with `input_output`: a skip
// connection taken from it sends its gradient back here, and the LayerNorm backward adds it to dx.
std::vector<at::Tensor> apply_layer_norm_linear(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                const at::Tensor& weight, const at::Tensor& bias, const LayerNormPlan& norm,
                                                const GemmPlan& gemm, bool layernorm_output, bool input_output = false);

// LayerNorm → fc1 → GELU (tanh) → fc2, plus `residual` when given (as apply_linear adds it, in fc2). A residual
// that is x itself gets its two gradients summed in the LayerNorm backward.
at::Tensor apply_layer_norm_mlp(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& fc1_weight,
                                const at::Tensor& fc1_bias, const at::Tensor& fc2_weight, const at::Tensor& fc2_bias,
                                const LayerNormPlan& norm, const GemmPlan& fc1, const GemmPlan& fc2,
                                const at::Tensor& residual = {});

}  // namespace tewb
