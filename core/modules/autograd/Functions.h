#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/modules/ModuleChoices.h"
#include "core/modules/autograd/GemmStep.h"

namespace tewb {

// The autograd functions of the TE-style modules, written once against TeOps: whichever implementation
// the plans carry (reference or fused) runs forward and backward. Inputs are 2-D ([tokens, features]);
// a function returns its outputs in the plan's compute dtype and the gradients in each input's dtype.

// The output gradient of a Linear whose output goes through a skip connection straight into a LayerNorm (a block's
// proj into its MLP's LayerNorm, fc2 into the next block's or the head's): that LayerNorm's backward computes the
// gradient (its dx, the skip's share included), so it also writes what the Linear's backward needs of it, its copy in
// the GEMMs' dtype or its FP8 cast with the transposed copy, and its column sums (the bias gradient), in its own pass
// (TeOps::layer_norm_backward_cast, layer_norm_backward_quantize), and the Linear's backward takes them instead of
// casting the gradient again (a cast launch fewer per Linear). Made fresh for each forward and given to both: the
// Linear's forward asks, the LayerNorm's backward delivers where its ops have such a pass, and the Linear's backward
// takes what was delivered only for the very gradient it gets (the same storage and memory, not written since) and, in
// FP8, while the slot's scale is the one it was cast with; otherwise it casts as it would have, so a hand-over that
// does not happen changes no gradient. (An FP8 delivery that is not taken has still recorded its amax in the slot, so
// the slot's next scale follows the larger of the two; in the trainer every delivery is taken: tst_fused_host
// handOversReplaceTheLinearsCasts counts no cast of the Linears' own.)
class GradientHandOver {
public:
    struct Request {
        at::ScalarType dtype = at::kFloat;  // the GEMMs' dtype (high precision)
        std::optional<Fp8Quantizer> fp8;    // an FP8 backward: its grad-output slot
        bool bias_grad = false;
    };
    // What a Linear takes: the gradient in its GEMMs' dtype (high precision) or its FP8 cast, and the bias gradient.
    struct Handed {
        at::Tensor grad;
        Fp8Tensor grad_fp8;
        at::Tensor bias_grad;
    };
    void ask(const Request& request) { request_ = request; }
    const std::optional<Request>& request() const { return request_; }
    // dx, and what the request asked of it (computed from dx as stored).
    void deliver(const at::Tensor& dx, Handed handed);
    // What was delivered for dy, once; nothing when dy is not the delivered gradient as it was delivered.
    std::optional<Handed> take(const at::Tensor& dy);

private:
    std::optional<Request> request_;
    std::optional<Handed> delivered_;
    at::Tensor dx_;  // kept, so that its memory is not another tensor's by the time a gradient is compared with it
    std::uint32_t version_ = 0;
    std::uint64_t scale_changes_ = 0;
};

// A tensor's FP8 scale written by the kernel that made it, for a cast in another module (the amax hand-off across
// modules: the attention's output for proj's input cast, its q, k and v gradients for the qkv projection's
// output-gradient cast, under current scaling and delayed scaling's calibrating step). The consumer asks with its slot
// before the producer runs; the producer delivers where its ops wrote that slot's scale in its own launch (the tensor,
// as views, and the scale_inv of the cast to come); the consumer takes it only for the very tensor (the same storage,
// memory and layout, its version counter where it was), for its own slot and while the slot's scales have not been
// updated since, and otherwise casts as it would have (an amax pass of its own). The producer has written the slot's
// scale and staged amax before the consumer decides: where the consumer casts that very tensor after all (the wiring's
// only case of a hand-over not taken), the scale and amax are the same and the refusal costs a launch; a cast of other
// values would still see that amax in the slot's staging entry (recorded in the history under delayed scaling's
// calibrating step), as a GradientHandOver's untaken delivery does. Where the slot's scale is known before the pass
// (delayed scaling) a producer may deliver the cast itself instead (deliver_cast: the rotary's inverse writing the qkv
// projection's FP8 output gradient), taken under the same rules (take_cast); an untaken cast has recorded its amax in
// the slot's staging entry, which the consumer's own cast of the same tensor records again.
class ScaleHandOver {
public:
    void ask(const Fp8Quantizer& quantizer) { request_ = quantizer; }
    const Fp8Quantizer* request() const { return request_ ? &*request_ : nullptr; }
    void deliver(std::vector<at::Tensor> parts, const at::Tensor& scale_inv);
    void deliver_cast(std::vector<at::Tensor> parts, Fp8Tensor cast);
    // The scale_inv delivered for `parts` cast with `quantizer`, once; undefined when there is none for them (or a cast
    // was delivered: take_cast).
    at::Tensor take(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer);
    // The cast delivered for `parts` with `quantizer`, once; nothing when there is none for them (or a scale was
    // delivered: take).
    std::optional<Fp8Tensor> take_cast(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer);

private:
    void remember(std::vector<at::Tensor> parts);
    // Whether `parts` and `quantizer` are the very tensors and slot delivered for, the slot's scales not updated since;
    // forgets the delivery's tensors either way.
    bool matches_delivery(const std::vector<at::Tensor>& parts, const Fp8Quantizer& quantizer);

    std::optional<Fp8Quantizer> request_;
    std::vector<at::Tensor> parts_;
    std::vector<std::uint32_t> versions_;
    at::Tensor scale_inv_;
    std::optional<Fp8Tensor> cast_;
    std::uint64_t scale_changes_ = 0;
};

// LayerNorm (gamma, beta) or RMSNorm (gamma only: beta is undefined and gets no gradient).
struct LayerNormPlan {
    const TeOps* ops = nullptr;
    at::ScalarType compute_dtype = at::kFloat;
    double eps = 1e-5;
    Normalization normalization = Normalization::LayerNorm;
};

// With a `residual` ([rows, out]): residual + x · Wᵀ + b in the residual's dtype (the add in the GEMM where the ops
// can), and the residual's gradient is the output's, as it comes.
// With `output_grad`, the output gradient may come from the next LayerNorm's backward already cast (GradientHandOver);
// with `input_scale`, x's FP8 scale from the kernel that made x (ScaleHandOver, asked for by the caller: ask_input_scale).
at::Tensor apply_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const GemmPlan& plan,
                        const at::Tensor& residual = {}, const std::shared_ptr<GradientHandOver>& output_grad = nullptr,
                        const std::shared_ptr<ScaleHandOver>& input_scale = nullptr);

// Asks `hand_over` for the FP8 scale of the input of a GEMM planned as `plan` (its input slot; nothing outside FP8).
void ask_input_scale_of(const GemmPlan& plan, ScaleHandOver& hand_over);

// With `input_grad`, the backward delivers dx to the Linear that made x (GradientHandOver), where it asked.
at::Tensor apply_layer_norm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const LayerNormPlan& plan,
                            const std::shared_ptr<GradientHandOver>& input_grad = nullptr);

// An attention's q, k and v as three outputs of the projection that makes them: its output [batch · seq, 3 · heads ·
// head_dim] returned as three [batch, seq, heads, head_dim] views, so that its backward gets their gradients as the
// attention's backward leaves them and stacks and casts them in one pass (TeOps::stack_heads_dbias,
// stack_heads_quantize_dbias) instead of autograd's stack and then a cast. Not active while heads is 0.
struct HeadSplit {
    std::int64_t batch = 0;
    std::int64_t seq = 0;
    std::int64_t heads = 0;
    std::int64_t head_dim = 0;
    bool active() const { return heads > 0; }
};

// Returns {output} (or {q, k, v} with an active `split`), then the layernorm output with `layernorm_output`
// (differentiable too; without it an FP8 forward never writes the LayerNorm's high-precision output), then x itself
// with `input_output`: a skip connection taken from it sends its gradient back here, and the LayerNorm backward adds
// it to dx. `output_grad_scale` (FP8): asked for the output gradient's scale, which the op its output feeds may write in
// its backward (ScaleHandOver: the attention's backward for q, k and v of an active split, the rotary's inverse for llama's
// rotated qkv).
std::vector<at::Tensor> apply_layer_norm_linear(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                const at::Tensor& weight, const at::Tensor& bias, const LayerNormPlan& norm,
                                                const GemmPlan& gemm, bool layernorm_output, bool input_output = false,
                                                const HeadSplit& split = {},
                                                const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                                                const std::shared_ptr<ScaleHandOver>& output_grad_scale = nullptr);

// LayerNorm → fc1 → GELU (tanh) → fc2, plus `residual` when given (as apply_linear adds it, in fc2). A residual
// that is x itself gets its two gradients summed in the LayerNorm backward. `input_grad`: the LayerNorm's dx handed to
// the Linear that made x; `output_grad`: fc2's output gradient handed over by the next LayerNorm (GradientHandOver). With Activation::Swiglu fc1's output is
// [rows, 2 · ffn] = [gate | up] and fc2 reads silu(gate) · up (TeOps::swiglu_forward); either bias may be undefined.
at::Tensor apply_layer_norm_mlp(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& fc1_weight,
                                const at::Tensor& fc1_bias, const at::Tensor& fc2_weight, const at::Tensor& fc2_bias,
                                const LayerNormPlan& norm, const GemmPlan& fc1, const GemmPlan& fc2,
                                const at::Tensor& residual = {}, Activation activation = Activation::Gelu,
                                const std::shared_ptr<GradientHandOver>& input_grad = nullptr,
                                const std::shared_ptr<GradientHandOver>& output_grad = nullptr);

// Rotary position embeddings (TeOps::rotary) over x [batch, seq, heads, head_dim], contiguous: the first
// `rotated_heads` heads turned by the tables' angles (cos, sin float32 [seq, head_dim / 2] on x's device), the rest
// copied. The backward turns the gradient back (the inverse rotation) in one call of the same op; with `grad_scale`
// asked for (the projection that made x, in FP8), that call also writes x's gradient's FP8 scale where the ops can and
// delivers it (ScaleHandOver).
at::Tensor apply_rotary_embedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                                  const TeOps& ops, const std::shared_ptr<ScaleHandOver>& grad_scale = nullptr);

// Causal attention over q, k, v [batch, seq, heads, head_dim] by ops that own it (TeOps::owns_attention): the output
// [batch, seq, heads · head_dim]; the backward is one call of the ops' attention_backward, whose q, k and v gradients
// are views of one tensor in the qkv projection's layout. `out_scale`: the output's FP8 scale delivered where the next
// cast asked and the ops write it (ScaleHandOver); `grad_scale`: likewise for the q, k and v gradients (the qkv
// projection's ask).
at::Tensor apply_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale, const TeOps& ops,
                           const std::shared_ptr<ScaleHandOver>& out_scale = nullptr,
                           const std::shared_ptr<ScaleHandOver>& grad_scale = nullptr);

// apply_attention over q, k and v packed in one tensor qkv [batch, seq, heads + 2 · kv_heads, head_dim] (q's heads, then
// k's, then v's; grouped queries where kv_heads < heads), as a projection's heads come (rotated or not): its backward
// returns qkv's gradient as the one tensor the ops' attention_backward writes the three into, where splitting qkv
// before apply_attention would have the engine concatenate them (a copy of the whole gradient). No gradient scale
// hand-off (the projection's gradient passes the rotary's inverse first, which hands its own over).
at::Tensor apply_packed_attention(const at::Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, double scale, const TeOps& ops,
                                  const std::shared_ptr<ScaleHandOver>& out_scale = nullptr);

// The model's two ends. A token table tied between the embedding and the head gets its gradient from both; the
// head's backward (which runs first) hands its weight gradient over here instead of to the engine, and the
// embedding's backward adds its rows into that tensor and returns it as the table's gradient from both, so the
// autograd engine sums nothing (a read and a write of the whole table saved); any other gradient of the table (a
// second loss, a penalty) the engine adds as usual.
struct TiedTableGradient {
    at::Tensor dtable;                // float32 [vocab, hidden]; handed on once
    bool embedding_takes_it = false;  // set by apply_embedding when its backward is recorded
};

// tokens [batch, seq] (int64, any row stride) → [batch * seq, hidden]: table rows plus the position table's
// ([seq, hidden]; undefined for a model without one, llama's), through TeOps::embedding_forward. Its backward adds into the head's gradient when `tied` holds
// one (the table then gets no gradient of its own from here), else into zeros.
at::Tensor apply_embedding(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens, const TeOps& ops,
                           const std::shared_ptr<TiedTableGradient>& tied);

// The tied LM head and its loss: the mean token cross-entropy of h · tableᵀ (h [rows, hidden], rows = batch * seq)
// against targets [batch, seq]. The gradient is computed in the forward, over the logits' memory
// (TeOps::cross_entropy_with_grad), so nothing else of the logits is kept; the backward scales it by the loss's
// gradient unless that is unit_loss_gradient's tensor, then the two GEMMs. The table's gradient goes to `tied`.
at::Tensor apply_tied_head_loss(const at::Tensor& h, const at::Tensor& table, const at::Tensor& targets, const GemmPlan& plan,
                                const std::shared_ptr<TiedTableGradient>& tied);

// A constant float32 1 on `device`, to start a backward from a loss with (`loss.backward(unit_loss_gradient(..))`):
// the engine then makes no seed of its own, and apply_tied_head_loss knows the gradient it gets is exactly 1
// without reading it. Never write to it.
const at::Tensor& unit_loss_gradient(const c10::Device& device);

}  // namespace tewb
