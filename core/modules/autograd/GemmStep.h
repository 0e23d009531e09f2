#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "core/fp8/Fp8State.h"
#include "core/fp8/Fp8Tensor.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

// A module's FP8 copy of one weight, reused until the weight changes (its version counter moves, as
// the optimizer step does) or the scales change (the forward update): so a weight is cast once per step
// however many times the module runs in it.
struct Fp8WeightCache {
    Fp8Tensor value;
    std::int64_t version = -1;
    std::uint64_t generation = 0;
    const void* tensor = nullptr;
};

// How one GEMM (y = x · Wᵀ + b) of a module runs in this forward pass.
struct GemmPlan {
    struct Fp8 {
        Fp8Quantizer input;
        Fp8Quantizer weight;
        Fp8Quantizer grad_output;
    };
    const TeOps* ops = nullptr;
    at::ScalarType compute_dtype = at::kFloat;  // activations and GEMM outputs
    std::optional<Fp8> fp8;                     // set inside an enabled Fp8Scope
    std::shared_ptr<Fp8WeightCache> weight_cache;
};

// What the GEMM's backward needs: high-precision operands, or their FP8 copies (the input only as its
// transposed copy, for wgrad; the weight as its transposed copy, for dgrad).
struct SavedGemm {
    at::Tensor input;
    at::Tensor weight;
    Fp8Tensor input_fp8;
    Fp8Tensor weight_fp8;
    bool has_bias = false;
    at::ScalarType weight_dtype = at::kFloat;
    at::ScalarType bias_dtype = at::kFloat;
};

struct GemmGrads {
    at::Tensor dx;  // compute dtype
    at::Tensor dw;  // weight dtype
    at::Tensor db;  // bias dtype; undefined without a bias
};

// x: [rows, in] in the compute dtype; weight [out, in]; bias [out] or undefined. With a `residual` ([rows, out],
// the residual stream), the result is residual + x · Wᵀ + b in the residual's dtype, added in the GEMM where the
// ops can (TeOps::gemm_add). `handed_scale_inv` (FP8): x's producer wrote the input slot's scale already (the amax
// hand-off, ScaleHandOver), so the cast takes no amax of its own (TeOps::quantize_with_handed_scale).
at::Tensor gemm_forward(const GemmPlan& plan, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                        SavedGemm& saved, const at::Tensor& residual = {}, const at::Tensor& handed_scale_inv = {});
// dy: [rows, out] in the compute dtype. In FP8, dy is cast with the grad-output slot; `handed_scale_inv`: dy's producer
// wrote that slot's scale already (ScaleHandOver), so the cast takes no amax of its own (without a bias gradient: one
// to sum casts as before).
GemmGrads gemm_backward(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy, const at::Tensor& handed_scale_inv = {});

// The parts, for modules that fuse around their GEMMs (LayerNorm or GELU writing the FP8 input, GELU in
// the epilogue):
// FP8: the GEMM with its input already cast (with the transposed copy, kept for wgrad).
at::Tensor gemm_forward_quantized(const GemmPlan& plan, const Fp8Tensor& xq, const at::Tensor& weight, const at::Tensor& bias,
                                  SavedGemm& saved, const at::Tensor& residual = {});
// FP8: dgrad and wgrad with dy already cast (the grad-output slot) and the bias gradient (float32, or
// undefined without a bias) computed with it.
GemmGrads gemm_backward_quantized(const GemmPlan& plan, const SavedGemm& saved, const Fp8Tensor& dy_fp8,
                                  const at::Tensor& bias_grad);
// High precision: gelu(x · Wᵀ + b) in one GEMM (its epilogue); the result's `pre` is GELU's input.
GeluGemmResult gemm_gelu_forward(const GemmPlan& plan, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 SavedGemm& saved);
// High precision: the weight gradient and, where the GEMM has a bias and `bias_grad` is undefined, the bias
// gradient in the same GEMM (its epilogue); a given `bias_grad` is used as it is.
GemmGrads gemm_weight_grads(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy, const at::Tensor& bias_grad = {});
// High precision: dy · W.
at::Tensor gemm_dgrad(const GemmPlan& plan, const SavedGemm& saved, const at::Tensor& dy);

// The plan for a GEMM of a module whose FP8 slots start at `slots`, for input x: the ops in force
// (OpsChoice.h), the compute dtype (autocast's when autocast is on for that device, else x's) and, inside an
// enabled Fp8Scope, the quantizers (preparing and enlisting the module's FP8 state).
GemmPlan plan_gemm(const at::Tensor& x, const std::shared_ptr<Fp8Context>& context, Fp8Context::GemmSlots slots,
                   const std::shared_ptr<Fp8WeightCache>& weight_cache);
at::ScalarType compute_dtype_for(const at::Tensor& x);

}  // namespace tewb
