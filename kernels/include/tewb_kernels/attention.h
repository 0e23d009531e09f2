#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "tewb_kernels/amax.h"
#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels {

// q, o and their gradients are [batch, seq, heads, head_dim] row-major, handed over as the matrix
// [batch * seq, heads * head_dim] (the tensors' rows and cols; a row_stride where the matrix is a narrow() of a
// wider one, as q, k and v are of a fused projection's [tokens, 3 · hidden]); k, v and their gradients
// [batch, seq, kv_heads, head_dim] likewise: these say how they split. Grouped-query attention (kv_heads < heads):
// query head h reads key/value head h / (heads / kv_heads), as LibTorch's enable_gqa (k and v repeat_interleave'd).
struct AttentionHeads {
    std::size_t seq = 0;       // positions per sequence: rows = batch * seq
    std::size_t heads = 0;     // q's cols = heads * head_dim
    float scale = 0.0f;        // the scores' factor before the softmax (1 / sqrt(head_dim) as LibTorch's default)
    std::size_t kv_heads = 0;  // k's and v's cols = kv_heads * head_dim, kv_heads a divisor of heads; 0: heads
};

// One thread block holds a whole sequence of one head in shared memory, so the kernels take short sequences only:
// these say which. The limit is the opt-in shared memory of one block on compute capability 8.6 and 8.9 (99 KiB),
// the least of the GPUs the fused path runs on (8.0: 163 KiB, 9.0: 227 KiB), so one rule holds on all of them. The
// backward's need grows with seq² (P), the forward's with seq · head_dim (its per-warp scores beside q, k and v);
// together: seq <= 128 at head_dim 64 (the seed's 96 fits), <= 80 at 128 (the forward decides there), <= 176 at 16
// (kAttentionMaxSeq, the longest any head_dim fits). A call takes the larger of the two needs, so a forward alone is
// held to what its backward will need. Of the limit, kAttentionStaticSharedReserve bytes are kept for the kernels'
// static shared memory (the *_current_scale forms' block maximum and arrival flag), which counts against the same
// opt-in limit; no shape the rule took before that reserve (none needs more than the limit less 512 bytes) is refused.
constexpr std::size_t kAttentionSharedBytesLimit = 99 * 1024;
constexpr std::size_t kAttentionStaticSharedReserve = 512;
constexpr std::size_t kAttentionMaxSeq = 176;
constexpr std::size_t kAttentionHeadDimMultiple = 16;
constexpr std::size_t kAttentionMaxHeadDim = 256;
std::size_t attention_forward_shared_bytes(std::size_t seq, std::size_t head_dim);
std::size_t attention_backward_shared_bytes(std::size_t seq, std::size_t head_dim);
// Why the kernels do not take sequences of `seq` positions and heads of `head_dim` (the larger of the two shared
// memory needs above the limit, a head_dim that is not a multiple of 16, ...); nothing when they do.
std::optional<std::string> attention_refusal(std::size_t seq, std::size_t head_dim);
// The float32 scratch attention_backward needs for q of `rows` × `cols` split by `heads`: none (0) where every query
// head has its own key/value head; with grouped queries, dk's and dv's float32 sums over a group's query heads,
// 2 · batch · kv_heads · padded_seq · head_dim floats (padded_seq: seq rounded up to 16). Arguments the call would
// refuse give 0 here (the call says why).
std::size_t attention_backward_workspace_bytes(std::size_t rows, std::size_t cols, const AttentionHeads& heads);

}  // namespace tewb::kernels

TEWB_ENTRY_POINTS(
// Causal self-attention of one batch of sequences (as scaled_dot_product_attention(q, k, v, is_causal = true,
// scale = heads.scale, enable_gqa = kv_heads < heads) over [batch, heads, seq, head_dim]): q, k, v bfloat16 (see
// AttentionHeads; each may have a row_stride), seq and head_dim as attention_refusal allows.
// Writes o (bfloat16, q's shape, a row_stride allowed) and lse, float32 [batch * heads, seq] contiguous: the
// logsumexp of each query's scaled scores (the backward reads it). One launch, one block of 4 warps per (sequence,
// head), the sequence in shared memory: S = q kᵀ on the tensor cores (bfloat16 products, float32 sums), the
// softmax of S · scale over the keys j ≤ i in float32 (max m, p = exp(s − m), l = Σ p, lse = m + log l),
// P = bfloat16(p / l), o = P v (float32 sums) rounded once to bfloat16. o may not overlap an input.
// The host twin: the same roundings (P, o) with the float32 sums in order; the tensor cores sum in their own
// order, so the two agree within bfloat16's bounds, not bit for bit (docs/kernels.md). Non-finite inputs: the
// kernel multiplies the diagonal tile's masked zeros too (0 · inf is NaN), so an infinite value of a later key can
// reach an earlier row of its 16-row tile, where the twin (which skips them) does not; LibTorch's kernels do alike.
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads, const Tensor& o,
                       const Tensor& lse, Stream stream);
// Its backward (FlashAttention's, one pass per (sequence, head) since the block holds it whole): from q, k, v, o,
// d_o (o's gradient) and lse as attention_forward left them, with delta_i = Σ_d d_o · o in float32,
// P = bfloat16(exp(S · scale − lse)) on the causal triangle, dv = Pᵀ d_o, dS = bfloat16(P · (d_o vᵀ − delta)),
// dq = scale · dS k, dk = scale · dSᵀ q (float32 sums, each rounded once to bfloat16). dq of q's shape, dk and dv of
// k's: bfloat16, row_strides allowed (three narrows of one [tokens, (heads + 2 · kv_heads) · head_dim] gradient: the
// fused projection's layout); none may overlap an input or another. One launch. Grouped queries: one block per
// (sequence, key/value head) takes the group's query heads one after another, dk's and dv's float32 sums over them in
// the workspace (attention_backward_workspace_bytes; 32-byte aligned, apart from every tensor; first written, never
// read before, so no memset), rounded once to bfloat16 after the group's last head. Every query head its own
// key/value head: no workspace (an empty one is fine). The host twin: as attention_forward's.
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                        const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv, const Workspace& workspace, Stream stream);
// The amax hand-off (current scaling's scale from the kernel that writes the tensor; docs/kernels.md): the same
// launch, o and lse bit for bit as attention_forward's, and current scaling's scale of o from the largest |o| as stored
// (what abs_max_current_scale(o, target...) writes after attention_forward), so the FP8 cast of the projection's input
// needs no amax pass of its own. The target's floats may not lie in q, k, v, o or lse; no rows: the scale of amax 0.
void attention_forward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads,
                                     const Tensor& o, const Tensor& lse, const CurrentScaleTarget& target, Stream stream);
// The backward's, likewise: dq, dk and dv as attention_backward writes them, and current scaling's scale of the three
// together (the qkv projection's output gradient they form) from their largest |value| as stored.
void attention_backward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                                      const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                                      const Tensor& dv, const Workspace& workspace, const CurrentScaleTarget& target,
                                      Stream stream);
)
