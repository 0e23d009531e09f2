#pragma once

#include <cstddef>
#include <optional>

#include "recipe/recipe_call.h"
#include "tewb_kernels/attention.h"

// The attention calls' checked arguments as the kernels (attention.cu) and their host twin (attention_host.cpp) work
// on them, and the rules that make them (attention_checks.cpp): they fail with KernelError "<call>: <what>" and give
// nothing when there are no rows.
namespace tewb::kernels::detail {

// Where the rows of one (sequence, head) start in a [batch * seq, heads * head_dim] matrix: element (i, d) of
// sequence b, head h is at data + (b · seq + i) · stride + h · head_dim + d.
struct HeadRows {
    void* data = nullptr;
    std::size_t stride = 0;
};

// What both kernels share: the split of the matrices and the block's shape.
struct AttentionGeometry {
    std::size_t batch = 0;
    std::size_t seq = 0;
    std::size_t heads = 0;
    std::size_t kv_heads = 0;  // a divisor of heads (heads when every query head has its own)
    std::size_t head_dim = 0;
    std::size_t padded_seq = 0;  // seq rounded up to whole 16-row tiles
    float scale = 0.0f;
};

struct AttentionForwardCall {
    AttentionGeometry g;
    HeadRows q, k, v, o;
    float* lse = nullptr;
};

struct AttentionBackwardCall {
    AttentionGeometry g;
    HeadRows q, k, v, o, d_o, dq, dk, dv;
    const float* lse = nullptr;
    float* workspace = nullptr;  // grouped queries: dv's and dk's sums, [batch * kv_heads][2][padded_seq][head_dim]
};
// Grouped queries' workspace floats: dv's then dk's sums of one (sequence, key/value head) block, side by side.
inline std::size_t attention_workspace_floats_per_block(const AttentionGeometry& g) {
    return 2 * g.padded_seq * g.head_dim;
}
inline bool attention_grouped(const AttentionGeometry& g) {
    return g.kv_heads != g.heads;
}
// The backward's workspace in bytes (attention_backward_workspace_bytes for a checked geometry).
std::size_t workspace_bytes(const AttentionGeometry& g);

std::optional<AttentionForwardCall> attention_forward_call(const char* call, const Tensor& q, const Tensor& k, const Tensor& v,
                                                           const AttentionHeads& heads, const Tensor& o, const Tensor& lse);
std::optional<AttentionBackwardCall> attention_backward_call(const char* call, const Tensor& q, const Tensor& k,
                                                             const Tensor& v, const Tensor& o, const Tensor& d_o,
                                                             const Tensor& lse, const AttentionHeads& heads,
                                                             const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                                             const Workspace& workspace);
// The *_current_scale forms: the calls' checks, then the target's (amax/current_scale_target.h: none of its floats in a
// tensor of the call), into `fresh` whether or not there are rows.
std::optional<AttentionForwardCall> attention_forward_current_scale_call(const char* call, const Tensor& q, const Tensor& k,
                                                                         const Tensor& v, const AttentionHeads& heads,
                                                                         const Tensor& o, const Tensor& lse,
                                                                         const CurrentScaleTarget& target, CurrentScaleCall& fresh);
std::optional<AttentionBackwardCall> attention_backward_current_scale_call(
    const char* call, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o, const Tensor& lse,
    const AttentionHeads& heads, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Workspace& workspace,
    const CurrentScaleTarget& target, CurrentScaleCall& fresh);

// The shared memory of one block, region by region (the kernels carve it in this order; each region 128-byte
// aligned). 4 warps a block.
constexpr int kAttentionWarps = 4;
constexpr std::size_t kAttentionTile = 16;
// The forward's row blocks (whole ones: the softmax needs a row's every score) dealt to the warps longest first and
// back and forth, warps 0 … 3, then 3 … 0, and so on: the row block `warp` takes in its `round`-th turn, or -1 when it
// has no more. At the seed's seq 96 (6 row blocks of 1 … 6 tiles) the warps take 6, 5, 5 and 5 tiles; the longest-first
// round robin before gave them 8, 6, 4 and 3, and the block waits for its slowest warp.
constexpr int attention_forward_row_block(int blocks, int warp, int round) {
    const int slot = round % 2 == 0 ? warp : kAttentionWarps - 1 - warp;
    const int item = round * kAttentionWarps + slot;
    return item < blocks ? blocks - 1 - item : -1;
}
// Padding of each shared row (elements): rows of 2 · head_dim bytes are a multiple of 128 bytes apart, so the eight
// rows a tensor-core load reads at once would share their banks.
constexpr std::size_t kAttentionPadBf16 = 8;
constexpr std::size_t kAttentionPadFloat = 4;
struct AttentionForwardSmem {
    std::size_t q, k, v;   // [padded_seq, head_dim + pad] bfloat16 each
    std::size_t scores;    // per warp: [16, padded_seq + pad] float32 (the softmax's row block; P in bfloat16 over it)
    std::size_t scores_bytes;
    std::size_t stage;     // per warp: one 16 × 16 float32 tile on its way to global memory
    std::size_t total;
};
struct AttentionBackwardSmem {
    std::size_t a;         // [padded_seq, head_dim + pad] bfloat16: q, then v, then q again
    std::size_t k, d_o;    // [padded_seq, head_dim + pad] bfloat16
    std::size_t p;         // [padded_seq, padded_seq + pad] bfloat16: P, then dS
    std::size_t lse, delta;  // [padded_seq] float32
    std::size_t stage;     // per warp: one 16 × 16 float32 tile
    std::size_t total;
};
// Whether a launch with `dynamic_bytes` of dynamic shared memory needs the kernel's raised limit: above 48 KiB a block's
// static and dynamic shared memory together need the opt-in attribute, and the hand-off forms carry static words (at
// most kAttentionStaticSharedReserve bytes), so a dynamic size just under 48 KiB needs it too.
constexpr bool attention_needs_raised_limit(std::size_t dynamic_bytes) {
    return dynamic_bytes + kAttentionStaticSharedReserve > 48 * 1024;
}
AttentionForwardSmem attention_forward_smem(std::size_t seq, std::size_t head_dim);
AttentionBackwardSmem attention_backward_smem(std::size_t seq, std::size_t head_dim);

}  // namespace tewb::kernels::detail
