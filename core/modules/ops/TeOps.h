#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/common/TeImpl.h"
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

struct RmsNormResult {
    at::Tensor out;   // [rows, hidden] in the requested dtype
    at::Tensor rstd;  // [rows] float32
};

struct RmsNormGrads {
    at::Tensor dx;      // x's dtype
    at::Tensor dgamma;  // gamma's dtype
};

// A GEMM whose epilogue applied GELU: the activation and, for the backward, GELU's input.
struct GeluGemmResult {
    at::Tensor activation;  // gelu(pre)
    at::Tensor pre;         // x · wᵀ + bias
};

// A gradient with its bias gradient (the column sums), as the fused epilogues and kernels give them.
struct GradWithBias {
    at::Tensor grad;
    at::Tensor bias_grad;  // float32 unless stated
};

// One weight's FP8 cast (with its transposed copy) with its own quantizer: quantize_weights takes several.
struct WeightCast {
    at::Tensor weight;
    Fp8Quantizer quantizer;
};

struct Fp8GradWithBias {
    Fp8Tensor grad;        // with its transposed copy
    at::Tensor bias_grad;  // float32
};

// A LayerNorm backward whose dx is also a Linear's output gradient (TeOps::layer_norm_backward_cast): the norm's
// gradients, and that gradient in the Linear's GEMMs' dtype with its column sums.
struct LayerNormGradsWithCast {
    LayerNormGrads norm;
    GradWithBias cast;  // grad: dx itself where it already has the dtype; bias_grad: undefined unless asked for
};

// The same for an FP8 Linear (TeOps::layer_norm_backward_quantize): dx cast with its grad-output quantizer.
struct LayerNormGradsWithFp8 {
    LayerNormGrads norm;
    Fp8GradWithBias fp8;  // with its transposed copy; bias_grad undefined unless asked for
};

// The causal attention's output [batch, seq, heads · head_dim] and the logsumexp of each query's scaled scores
// (float32 [batch · heads, seq]), which its backward reads.
struct AttentionResult {
    at::Tensor out;
    at::Tensor lse;
    // Where the ops wrote current scaling's scale of `out` into the slot attention_forward was given (the amax
    // hand-off): the scale_inv of the cast that follows with that scale; undefined otherwise.
    at::Tensor out_scale_inv;
};

// q's gradient [batch, seq, heads, head_dim], k's and v's [batch, seq, kv_heads, head_dim]: three views of one
// [batch · seq, (heads + 2 · kv_heads) · head_dim] tensor (the qkv projection's layout), q's columns first.
struct AttentionGrads {
    at::Tensor dq, dk, dv;
    at::Tensor scale_inv;  // as AttentionResult's out_scale_inv, for the three together (attention_backward's slot)
};

// A weight whose FP8 copy (with its transposed copy) an AdamW step writes from the parameter's new value:
// params[param] cast with `quantizer`, as quantize_weights would cast it in the next forward.
struct OptimizerFp8Cast {
    std::size_t param = 0;
    Fp8Quantizer quantizer;
};

// AdamW's hyperparameters (decoupled weight decay), as torch.optim.AdamW takes them.
struct AdamWHyper {
    double lr = 3e-4;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double weight_decay = 0.1;
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
    virtual OpsKind kind() const = 0;
    // The reference emulates FP8 GEMMs in float32, and so do the fused ops on the host; records say so.
    bool is_reference() const { return kind() == OpsKind::Reference; }
    // True where Float8BlockScaling's GEMMs run as block-scaled FP8 GEMMs (cuBLASLt, Hopper); else they are
    // emulated in float32 (the casts stay real) and records say so.
    virtual bool block_gemms_native() const { return false; }

    virtual LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                               double eps, at::ScalarType out_dtype) const = 0;
    virtual LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                               const at::Tensor& rstd, const at::Tensor& gamma) const = 0;
    // layer_norm_backward with `dresidual` (x's shape and dtype) added to dx: the gradient x gets through the
    // skip connection, summed in the LayerNorm's own pass instead of by the autograd engine. This default adds it
    // after; the fused ops add it in the kernel.
    virtual LayerNormGrads layer_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                                   const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& dresidual) const;
    // layer_norm_backward (dresidual undefined) or layer_norm_backward_add whose dx is also the output gradient of the
    // Linear that made x (its output went through a skip connection into this LayerNorm: GradientHandOver): that
    // gradient in `dtype` too and, with `with_bias_grad`, its column sums in float32 (the Linear's bias gradient), from
    // the backward's own pass (fused: layer_norm_backward_cast_dbias), where the Linear's backward took a cast_dbias
    // launch of its own. Nothing where an implementation has no such pass for these operands (this default, so the
    // reference: it would only move the same ops into another module); the Linear then casts for itself.
    virtual std::optional<LayerNormGradsWithCast> layer_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x,
                                                                           const at::Tensor& mean, const at::Tensor& rstd,
                                                                           const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                           at::ScalarType dtype, bool with_bias_grad) const;
    // The same for a Linear whose backward runs in FP8: dx cast with the Linear's grad-output quantizer, with its
    // transposed copy and amax (fused under delayed scaling: layer_norm_backward_quantize_dbias, in place of the Linear's
    // cast_transpose_dbias_to_fp8). Nothing where there is no such pass (this default; other recipes).
    virtual std::optional<LayerNormGradsWithFp8> layer_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x,
                                                                              const at::Tensor& mean, const at::Tensor& rstd,
                                                                              const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                              const Fp8Quantizer& quantizer, bool with_bias_grad) const;

    // GELU, tanh form; the result and the gradient in x's dtype.
    virtual at::Tensor gelu_forward(const at::Tensor& x) const = 0;
    virtual at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const = 0;

    // The Llama block's primitives (Transformer Engine's normalization="RMSNorm", activation="swiglu" and fused
    // rotary embeddings). Defaults compose LibTorch ops with float32 math (TeOpsLlama.cpp, TeOpsRotary.cpp: the
    // reference's numerics); the fused ops launch the kernels of kernels/normalization, kernels/activation and
    // kernels/attention where the operands fit, and fall back to these elsewhere.

    // y = x · rstd · gamma, rstd = 1 / sqrt(mean(x²) + eps) per row, y in out_dtype.
    virtual RmsNormResult rms_norm_forward(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype) const;
    virtual RmsNormGrads rms_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                           const at::Tensor& gamma) const;
    // rms_norm_backward with `dresidual` (x's shape and dtype) added to dx, as layer_norm_backward_add.
    virtual RmsNormGrads rms_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                               const at::Tensor& gamma, const at::Tensor& dresidual) const;
    // layer_norm_backward_cast for RMSNorm (rms_norm_backward_add's dx handed to the BF16 Linear that made x in its GEMMs'
    // dtype; dresidual may be undefined; norm.dbeta undefined; no bias gradient: RMSNorm's models have none, so nothing
    // where one is asked for). Nothing where there is no such pass (this default); the fused ops write the copy from the
    // backward's own launch (rms_norm_backward_cast), where the Linear took a cast launch of its own.
    virtual std::optional<LayerNormGradsWithCast> rms_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x,
                                                                         const at::Tensor& rstd, const at::Tensor& gamma,
                                                                         const at::Tensor& dresidual, at::ScalarType dtype,
                                                                         bool with_bias_grad) const;
    // layer_norm_backward_quantize for RMSNorm (rms_norm_backward_add's dx handed to the FP8 Linear that made x; dresidual
    // may be undefined; norm.dbeta undefined). Nothing where there is no such pass (this default) or a bias gradient is
    // asked for. The fused ops have one under delayed scaling (the slot's scale known before the pass: dx's FP8 bytes,
    // transposed copy and amax from the backward's own launch, rms_norm_backward_quantize, in place of the Linear's
    // cast_transpose_to_fp8) and under current scaling (and delayed scaling's calibrating step): the backward writes dx's
    // scale in its own pass (rms_norm_backward_current_scale) and the cast follows, one launch fewer than the Linear's
    // own amax pass and cast where the backward runs on the fast kernel (as many on the plain ones).
    virtual std::optional<LayerNormGradsWithFp8> rms_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x,
                                                                            const at::Tensor& rstd, const at::Tensor& gamma,
                                                                            const at::Tensor& dresidual, const Fp8Quantizer& quantizer,
                                                                            bool with_bias_grad) const;
    // RMSNorm whose output goes straight into an FP8 GEMM, as layer_norm_quantize.
    virtual Fp8Tensor rms_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype,
                                        const Fp8Quantizer& quantizer, bool keep_output, RmsNormResult& rn) const;
    // SwiGLU of in [rows, 2 · cols] = [gate | up]: silu(gate) · up, [rows, cols] in in's dtype.
    virtual at::Tensor swiglu_forward(const at::Tensor& in) const;
    // Its gradient [d gate | d up], in's shape and dtype.
    virtual at::Tensor swiglu_backward(const at::Tensor& dy, const at::Tensor& in) const;
    // swiglu_forward cast with the quantizer (the down projection's input), with its transposed copy.
    virtual Fp8Tensor swiglu_quantize(const at::Tensor& in, const Fp8Quantizer& quantizer) const;
    // swiglu_backward cast with the quantizer, with its transposed copy (fc1's dgrad and wgrad operands; no bias).
    virtual Fp8Tensor swiglu_backward_quantize(const at::Tensor& dy, const at::Tensor& in, const Fp8Quantizer& quantizer) const;
    // Rotary position embeddings over x [batch, seq, heads, head_dim] (contiguous; head_dim even): the first
    // `rotated_heads` heads rotated, the rest copied, in x's dtype with float32 math. Pairs are (i, i + head_dim/2)
    // (rotate-half, as GPT-NeoX and Hugging Face's Llama): y_i = x_i·cos − x_{i+d/2}·sin, y_{i+d/2} = x_{i+d/2}·cos +
    // x_i·sin, with cos and sin float32 [seq, head_dim / 2] (core/model/Rotary.h). `inverse` rotates by −θ: the
    // backward of the forward.
    virtual at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                              bool inverse) const;
    // rotary whose output is next cast to FP8 with `quantizer` (llama's qkv output gradient, the inverse rotation's
    // output), where the ops can do part of that cast in the rotation's own launch: where the cast takes its scale from the
    // tensor's amax (current scaling, delayed scaling's calibrating step), the launch writes that scale into the slot (the
    // amax hand-off, rotary_current_scale) and the cast's scale_inv comes back; where the slot's scale is known before the
    // pass (delayed scaling), the launch writes the cast itself, with its transposed copy and amax (rotary_quantize), and
    // it comes back. Neither otherwise (the default: rotary alone).
    struct RotaryHandOver {
        at::Tensor y;
        at::Tensor scale_inv;
        std::optional<Fp8Tensor> cast;
    };
    virtual RotaryHandOver rotary_handing_over(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                               std::int64_t rotated_heads, bool inverse, const Fp8Quantizer& quantizer) const;
    // Whether these ops run the causal attention of q, k, v themselves (attention_forward below): q [batch, seq, heads,
    // head_dim], k and v [batch, seq, kv_heads, head_dim] (grouped queries where kv_heads, a divisor of heads, is
    // fewer: query head h reads key/value head h / (heads / kv_heads), as LibTorch's enable_gqa), of one dtype and
    // device, each with its tokens one stride apart (views of a fused projection are). The default does not: the modules call LibTorch's scaled_dot_product_attention. The fused
    // ops do for bfloat16 on their device where kernels/attention's rule (attention_refusal: short sequences, head_dim
    // a multiple of 16) takes the shape: one launch forward, one backward, where LibTorch's backends take 3 to 5.
    virtual bool owns_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const;
    // Causal softmax(q kᵀ · scale) v (only where owns_attention). `out_scale` (may be null): the FP8 slot of the cast
    // that reads the output next (the projection's input). Where that cast takes its scale from the tensor's own amax
    // (current scaling, delayed scaling's calibrating step) and the ops can, the attention's own launch writes that
    // scale into the slot (the amax hand-off, kernels/attention's *_current_scale forms) and out_scale_inv says so;
    // the default ignores it.
    virtual AttentionResult attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                              const Fp8Quantizer* out_scale) const;
    // Its backward from the output gradient d_out ([batch, seq, heads · head_dim]) and what the forward saved;
    // `grad_scale` as out_scale, for the stacked q, k and v gradients (the qkv projection's output gradient).
    virtual AttentionGrads attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                              const AttentionResult& forward, const at::Tensor& d_out, double scale,
                                              const Fp8Quantizer* grad_scale) const;

    // High precision: a and b in the same dtype, float32 accumulation, result in out_dtype.
    virtual at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                            at::ScalarType out_dtype) const = 0;

    // Casts x with the quantizer's slot (delayed: the slot's scale; current: a scale from x's own amax),
    // records x's amax in the slot and, with `with_transpose`, produces the transposed copy too.
    virtual Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const = 0;
    // quantize, where x's producer already wrote the slot's scale from x's amax (the amax hand-off: attention_forward's
    // out_scale_inv): the cast with that scale, `scale_inv` its own. The default casts as quantize does (an amax pass
    // again, the same scale).
    virtual Fp8Tensor quantize_with_handed_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, const at::Tensor& scale_inv,
                                                 bool with_transpose) const;

    // quantize(weight, quantizer, true) of each cast, in order: a model's weights cast once per step. The fused
    // ops cast all of them in one launch where the recipe allows it (delayed scaling); this default casts them
    // one by one.
    virtual std::vector<Fp8Tensor> quantize_weights(const std::vector<WeightCast>& casts) const;

    // a [m, k] · b [n, k]ᵀ of FP8 operands (their row-major data), scaled by both scale_invs, float32
    // accumulation, bias added in float32, result in out_dtype.
    virtual at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                                Accumulation accumulation) const = 0;

    // a [m, k] · b [n, k]ᵀ of microscaling operands (Fp8Tensor::mx; the GEMM's k is both operands' rows), emulated
    // in every implementation today: the blockwise values' products summed in float32, NVFP4's tensor scales applied
    // once (core/fp8/Microscaling.h, mx_gemm_reference), bias added in float32, result in out_dtype.
    struct MxOperand {
        MxFormat format = MxFormat::Mxfp8;
        at::Tensor data;
        at::Tensor block_scale;
        at::Tensor tensor_scale_inv;
        Fp8Dtype dtype = Fp8Dtype::E4M3;
    };
    virtual at::Tensor mx_gemm(const MxOperand& a, const MxOperand& b, const std::optional<at::Tensor>& bias,
                               at::ScalarType out_dtype) const;

    // A GEMM whose output is added to `residual` (the residual stream, its dtype the result's): residual + gemm(a,
    // b, bias, product_dtype) and the FP8 counterpart. This default computes the product in product_dtype and adds
    // it (LibTorch's add); the fused ops accumulate onto the residual in the GEMM itself (cuBLASLt's C, beta = 1),
    // so the product is not rounded to product_dtype first, as Transformer Engine folds its bias-dropout-add.
    virtual at::Tensor gemm_add(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                                at::ScalarType product_dtype, const at::Tensor& residual) const;
    virtual at::Tensor fp8_gemm_add(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                    const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias,
                                    at::ScalarType product_dtype, Accumulation accumulation, const at::Tensor& residual) const;

    // Fused steps, as Transformer Engine fuses them. Each is defined by the composition of the primitives
    // above that this base class implements (so the reference has them for free, with its numerics); the
    // fused ops replace it with one pass where their kernels and cuBLASLt's epilogues allow, and fall
    // back to it elsewhere.

    // LayerNorm whose output goes straight into an FP8 GEMM: `ln` gets mean and rstd (and the high-precision
    // output when `keep_output`); the result is the output cast with the quantizer, with its transposed copy.
    virtual Fp8Tensor layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                          at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                          LayerNormResult& ln) const;
    // gelu(x) cast with the quantizer (the MLP's fc2 input), with its transposed copy.
    virtual Fp8Tensor gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const;
    // The MLP backward between its GEMMs: dy ⊙ gelu'(x) cast with the quantizer (transposed copy too), and its
    // column sums (fc1's bias gradient).
    virtual Fp8GradWithBias gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& quantizer) const;
    // A Linear's output gradient for its FP8 backward: dy cast with the quantizer (transposed copy too) and dy's
    // column sums in float32 (the bias gradient).
    virtual Fp8GradWithBias quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const;
    // High precision: gelu(x · wᵀ + bias) with GELU's input kept (cuBLASLt's GELU_AUX_BIAS).
    virtual GeluGemmResult gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                     at::ScalarType out_dtype) const;
    // A Linear's output gradient for its high-precision backward: dy in the GEMMs' dtype and dy's column sums in
    // float32 (the bias gradient), from one read of dy (fused: the cast_dbias kernel, in place of a cast and
    // cuBLASLt's BGRADB helper kernel and memset).
    virtual GradWithBias cast_dbias(const at::Tensor& dy, at::ScalarType dtype) const;
    // The qkv projection's output gradient from the attention's input gradients dq, dk and dv, as its backward leaves
    // them (each [batch, seq, heads, head_dim], one shape and dtype): [batch · seq, 3 · heads · head_dim], q's columns
    // first, in `dtype`, and with `with_bias_grad` its column sums in float32 (the projection's bias gradient). This
    // default stacks them (LibTorch's stack) and then casts (cast_dbias); the fused ops read the three where they lie
    // and write the stacked copy and the sums in one pass (stacked_cast_dbias), where a stack and a cast were two.
    virtual GradWithBias stack_heads_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, at::ScalarType dtype,
                                           bool with_bias_grad) const;
    // The same gradient for an FP8 backward: cast with the quantizer, with its transposed copy (and its column sums with
    // `with_bias_grad`), as quantize_dbias (or quantize) casts a stacked one; fused under delayed scaling: one pass
    // (stacked_cast_transpose_dbias_to_fp8), no high-precision copy written at all. `handed_scale_inv` (may be
    // undefined): the attention's backward wrote the slot's scale already (AttentionGrads::scale_inv), so the fused ops
    // cast with it and take no amax of their own; the default casts as without it.
    virtual Fp8GradWithBias stack_heads_quantize_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                                       const Fp8Quantizer& quantizer, bool with_bias_grad,
                                                       const at::Tensor& handed_scale_inv) const;
    // High precision dgrad through GELU: (dy · w) ⊙ gelu'(pre) in out_dtype and its column sums in float32 (fc1's
    // bias gradient; fused: a plain GEMM, then the GELU backward kernel sums them as it writes, in place of
    // cuBLASLt's DGELU_BGRAD epilogue with its helper kernel and memset). w is [out, in] as stored.
    virtual GradWithBias gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                                    at::ScalarType out_dtype) const;
    // High precision wgrad: dyᵀ · x in out_dtype and, with `bias_grad`, dy's column sums in out_dtype
    // (cuBLASLt's BGRADB). dy [rows, out], x [rows, in] as they are.
    virtual GradWithBias wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool bias_grad) const;
    // dy's column sums in float32, one pass.
    virtual at::Tensor bias_grad(const at::Tensor& dy) const;

    // The model's two ends (a GPT's token and position embeddings, its tied head's loss), outside the layers.
    // tokens and targets are int64 [batch, seq] with any row stride (the trainer's narrow() of its
    // [batch, seq + 1] batch). This default composes LibTorch ops; the fused ops take one launch each.

    // table[tokens[b, s]] + positions[s] for each token, [batch * seq, hidden] in the table's dtype (positions
    // [seq, hidden] in it too), the add in float32. Undefined positions (a model without a position table, llama's):
    // the table's rows alone, LibTorch's embedding (a gather) on both implementations.
    virtual at::Tensor embedding_forward(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens) const;
    // The backward of embedding_forward for dy [batch * seq, hidden]: each row of dy is added to `dtable` (float32
    // [vocab, hidden]) at its token, on top of what dtable holds (a tied head's weight gradient, or zeros), and the
    // position table's gradient (the sum over the batch) is returned in positions_dtype. Tokens outside
    // [0, vocab) add nothing (their forward rows are NaN in the fused ops). positions_dtype Undefined: no position
    // table, nothing returned.
    virtual at::Tensor embedding_backward(const at::Tensor& dy, const at::Tensor& tokens, at::Tensor& dtable,
                                          at::ScalarType positions_dtype) const;
    // The mean token cross-entropy of logits [batch * seq, vocab] (float32 or bfloat16) against targets, as a
    // float32 scalar, and its gradient for a loss gradient of 1, (softmax - onehot) / rows, written over the
    // logits (consumed: the gradient takes their memory, as Transformer Engine's cross-entropy does). A target
    // outside [0, vocab) makes the loss NaN in the fused ops.
    virtual at::Tensor cross_entropy_with_grad(at::Tensor& logits, const at::Tensor& targets) const;

    // One AdamW step (PyTorch's fused AdamW arithmetic, amsgrad and maximize off) over float32 lists of one length:
    // params, grads, exp_avg, exp_avg_sq. `step` is one float32 scalar for all of them, incremented first; where
    // copies[i] is defined (a bfloat16 tensor of params[i]'s shape), it is rewritten from the new params[i] (a
    // parameter's low-precision copy: ParameterCopies). Each of `fp8` names a parameter whose FP8 copies are
    // then written from its new value, returned in that order. This default is LibTorch's _fused_adamw_, a
    // _foreach_copy_ and quantize_weights; the fused ops do all of it in one launch under delayed scaling.
    virtual std::vector<Fp8Tensor> adamw_step(at::TensorList params, at::TensorList grads, at::TensorList exp_avg,
                                              at::TensorList exp_avg_sq, const at::Tensor& step, at::TensorList copies,
                                              const std::vector<OptimizerFp8Cast>& fp8, const AdamWHyper& hyper) const;

    // Kernel launches these ops have made in this process so far (the fused ops count theirs; the reference
    // makes none of its own): the trainer reports launches per step from it.
    virtual std::uint64_t kernel_launches() const { return 0; }
};

}  // namespace tewb
