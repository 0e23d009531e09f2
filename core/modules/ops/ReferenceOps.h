#pragma once

#include "core/fp8/BlockScaling.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

// LibTorch ops with float32 math: the numerics every other implementation is checked against. FP8
// operands are real Float8 tensors; the GEMM multiplies their exact values in float32 and applies both
// scale_invs to the float32 sums, as FP8 tensor cores do.
class ReferenceOps final : public TeOps {
public:
    std::string_view name() const override { return "reference"; }
    OpsKind kind() const override { return OpsKind::Reference; }

    at::Tensor abs_max(const at::Tensor& x) const override;
    void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                        float numerator, const UpdateRecord& record) const override;

    LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                       at::ScalarType out_dtype) const override;
    LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                       const at::Tensor& rstd, const at::Tensor& gamma) const override;
    at::Tensor gelu_forward(const at::Tensor& x) const override;
    at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const override;
    at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    at::ScalarType out_dtype) const override;
    Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const override;
    at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                        const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                        Accumulation accumulation) const override;
};

const TeOps& reference_ops();

// The reference cast (ReferenceOps::quantize) with the amax taken by `state_ops`: the fused ops hand
// the casts their kernels do not cover (current scaling, inspection) to it and keep their amax kernel.
Fp8Tensor quantize_reference(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                             const Fp8StateOps& state_ops);

// --inspect-fp8's statistics of one cast (saturated and underflowed elements, the cast's error, what each what-if
// recipe would have made of x, and a block-scaled cast's block scales), shared by both ops so that they count alike:
// a per-tensor cast of x into `data` with `scale`, a block cast and a microscaling cast (in the reference's plain form).
void inspect_tensor_cast(const at::Tensor& x, const at::Tensor& data, const at::Tensor& scale, const Fp8Quantizer& quantizer);
void inspect_block_cast(const at::Tensor& x, const BlockQuantized& q, const Fp8Quantizer& quantizer);
void inspect_microscaling_cast(const at::Tensor& x, const MxQuantized& q, const Fp8Quantizer& quantizer);

}  // namespace tewb
