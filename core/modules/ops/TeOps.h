#pragma once

#include <optional>
#include <string_view>

#include <ATen/core/Tensor.h>

#include "core/fp8/Fp8State.h"
#include "core/fp8/Fp8StateOps.h"
#include "core/fp8/Fp8Tensor.h"

namespace tewb {

struct LayerNormResult {
    at::Tensor out;   // [rows, hidden] in the requested dtype
    at::Tensor mean;  // [rows] float32
    at::Tensor rstd;  // [rows] float32
};

struct LayerNormGrads {
    at::Tensor dx;      // x's dtype
    at::Tensor dgamma;  // gamma's dtype
    at::Tensor dbeta;
};

// Fast accumulation for forward GEMMs; split (precise) accumulation for dgrad and wgrad, as cuBLASLt
// FP8 GEMMs offer it. The reference accumulates in float32 either way.
enum class Accumulation { Fast, Split };

// The primitive operations the TE-style modules' autograd functions are written in, and (as an
// Fp8StateOps) the amax and scale update of their FP8 state. Two implementations satisfy it: the
// reference (LibTorch ops with float32 math: runs anywhere, defines the numerics, is the self-test's
// oracle) and, on CUDA, the fused kernels of kernels/. Which one a run uses is decided once, by
// select_ops (OpsChoice.h). Shapes are 2-D: rows are tokens. gemm(a, b) computes a · bᵀ (a [m, k],
// b [n, k] → [m, n]).
class TeOps : public Fp8StateOps {
public:
    // "reference" or "fused": the run record's implementation says te-<name>.
    virtual std::string_view name() const = 0;
    // True for the reference: FP8 GEMMs are then emulated in float32, and records say so.
    virtual bool is_reference() const = 0;
    // True where Float8BlockScaling's GEMMs run as block-scaled FP8 GEMMs (cuBLASLt, Hopper); else they are
    // emulated in float32 (the casts stay real) and records say so.
    virtual bool block_gemms_native() const { return false; }

    virtual LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                               double eps, at::ScalarType out_dtype) const = 0;
    virtual LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                               const at::Tensor& rstd, const at::Tensor& gamma) const = 0;

    // GELU, tanh form; the result and the gradient in x's dtype.
    virtual at::Tensor gelu_forward(const at::Tensor& x) const = 0;
    virtual at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const = 0;

    // High precision: a and b in the same dtype, float32 accumulation, result in out_dtype.
    virtual at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                            at::ScalarType out_dtype) const = 0;

    // Casts x with the quantizer's slot (delayed: the slot's scale; current: a scale from x's own amax),
    // records x's amax in the slot and, with `with_transpose`, produces the transposed copy too.
    virtual Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const = 0;

    // a [m, k] · b [n, k]ᵀ of FP8 operands (their row-major data), scaled by both scale_invs, float32
    // accumulation, bias added in float32, result in out_dtype.
    virtual at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                                Accumulation accumulation) const = 0;
};

}  // namespace tewb
