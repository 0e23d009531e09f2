#ifdef TEWB_FUSED_CUDA

// The causal attention's kernels (kernels/attention) against their host twin on copies of the same inputs and against
// the reference ops' float32 composition (TeOps::attention_*, LibTorch on the GPU), forward and backward; outputs
// poisoned first, so an element a kernel never wrote fails.

#include "core/selftest/SelfTestChecks.h"

#include <array>
#include <cmath>

#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/attention.h"

namespace tewb::selftest {

namespace {

struct AttentionCase {
    std::int64_t batch, seq, heads, head_dim;
    std::int64_t offset;        // elements the qkv buffer starts past a 16-byte boundary (the element-wise loads and stores)
    std::int64_t kv_heads = 0;  // grouped queries: key/value heads (0: heads)
    std::int64_t kv() const { return kv_heads == 0 ? heads : kv_heads; }
    std::int64_t packed() const { return heads + 2 * kv(); }
    kernels::AttentionHeads split(float scale) const {
        return {static_cast<std::size_t>(seq), static_cast<std::size_t>(heads), scale, static_cast<std::size_t>(kv_heads)};
    }
    std::string shape() const {
        std::string s = std::to_string(batch) + "x" + std::to_string(seq) + ", " + std::to_string(heads) + "x" + std::to_string(head_dim);
        if (kv() != heads) s += " over " + std::to_string(kv()) + " kv heads";
        return s;
    }
};

// t [batch, seq, heads, d] as the kernels' matrix [batch · seq, heads · d] with its token stride.
kernels::Tensor token_matrix(const at::Tensor& t) {
    kernels::Tensor m = kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), static_cast<std::size_t>(t.size(0) * t.size(1)),
                                       static_cast<std::size_t>(t.size(2) * t.size(3)));
    m.row_stride = static_cast<std::size_t>(t.size(1) > 1 ? t.stride(1) : t.stride(0));
    return m;
}

// q's [batch, seq, heads, d] and k's and v's [batch, seq, kv_heads, d] views of one [batch, seq, heads + 2 · kv_heads,
// d] buffer (the fused projection's layout) that starts `offset` elements in, on `device`, filled with `fill` or NaN.
std::array<at::Tensor, 3> stacked(const AttentionCase& c, const at::TensorOptions& options, const at::Tensor& fill = {}) {
    const std::int64_t n = c.batch * c.seq * c.packed() * c.head_dim;
    at::Tensor buffer = at::full({n + c.offset}, NAN, options.dtype(at::kBFloat16)).narrow(0, c.offset, n);
    buffer = buffer.view({c.batch, c.seq, c.packed(), c.head_dim});
    if (fill.defined()) buffer.copy_(fill);
    return {buffer.narrow(2, 0, c.heads), buffer.narrow(2, c.heads, c.kv()), buffer.narrow(2, c.heads + c.kv(), c.kv())};
}

// The backward's workspace (grouped queries' float32 sums; none without), on `options`' device.
struct Scratch {
    at::Tensor bytes;
    Scratch(const AttentionCase& c, float scale, const at::TensorOptions& options)
        : bytes(at::empty({static_cast<std::int64_t>(kernels::attention_backward_workspace_bytes(
                              static_cast<std::size_t>(c.batch * c.seq), static_cast<std::size_t>(c.heads * c.head_dim), c.split(scale)))},
                          options.dtype(at::kByte))) {}
    kernels::Workspace ref() const {
        return bytes.numel() == 0 ? kernels::Workspace{} : kernels::Workspace{bytes.data_ptr(), static_cast<std::size_t>(bytes.numel())};
    }
};

struct Outputs {
    at::Tensor out, lse;
    std::array<at::Tensor, 3> grads;
};

// Both kernels over q, k, v (views of `qkv`) and d_out, on qkv's device: the CUDA entry points or the host twins.
Outputs run(const AttentionCase& c, const at::Tensor& qkv, const at::Tensor& d_out, float scale, bool host) {
    const at::TensorOptions options = qkv.options();
    const std::array<at::Tensor, 3> in = stacked(c, options, qkv);
    Outputs r;
    r.out = at::full({c.batch * c.seq, c.heads * c.head_dim}, NAN, options);
    r.lse = at::full({c.batch * c.heads, c.seq}, NAN, options.dtype(at::kFloat));
    r.grads = stacked(c, options);
    const kernels::AttentionHeads heads = c.split(scale);
    const Scratch scratch(c, scale, options);
    const kernels::Tensor dy = kernel_tensor(d_out);
    if (host) {
        kernels::host::attention_forward(token_matrix(in[0]), token_matrix(in[1]), token_matrix(in[2]), heads,
                                         kernel_tensor(r.out), kernel_tensor(r.lse), kernels::Stream{});
        kernels::host::attention_backward(token_matrix(in[0]), token_matrix(in[1]), token_matrix(in[2]), kernel_tensor(r.out),
                                          dy, kernel_tensor(r.lse), heads, token_matrix(r.grads[0]), token_matrix(r.grads[1]),
                                          token_matrix(r.grads[2]), scratch.ref(), kernels::Stream{});
    } else {
        kernels::attention_forward(token_matrix(in[0]), token_matrix(in[1]), token_matrix(in[2]), heads, kernel_tensor(r.out),
                                   kernel_tensor(r.lse), kernel_stream());
        kernels::attention_backward(token_matrix(in[0]), token_matrix(in[1]), token_matrix(in[2]), kernel_tensor(r.out), dy,
                                    kernel_tensor(r.lse), heads, token_matrix(r.grads[0]), token_matrix(r.grads[1]),
                                    token_matrix(r.grads[2]), scratch.ref(), kernel_stream());
    }
    return r;
}

void attention_case(Checks& check, const AttentionCase& c) {
    const std::string shape = c.shape();
    const std::string dtype = c.offset == 0 ? "BF16" : "BF16, unaligned";
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    const at::Tensor qkv = at::randn({c.batch, c.seq, c.packed(), c.head_dim}, cuda()).to(at::kBFloat16);
    const at::Tensor d_out = at::randn({c.batch * c.seq, c.heads * c.head_dim}, cuda()).to(at::kBFloat16);
    const Outputs gpu = run(c, qkv, d_out, scale, false);
    const Outputs host = run(c, qkv.cpu(), d_out.cpu(), scale, true);
    // The twin rounds at the same points; only the tensor cores' order of summing differs.
    check.relative("attention_forward", "o vs host twin", shape, dtype, gpu.out.cpu(), host.out, kBf16Bound);
    check.relative("attention_forward", "lse vs host twin", shape, dtype, gpu.lse.cpu(), host.lse, kFloat32Bound);
    const char* names[] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; ++i) {
        check.relative("attention_backward", std::string(names[i]) + " vs host twin", shape, dtype, gpu.grads[i].cpu(),
                       host.grads[i], kBf16Bound);
    }
    // The float32 reference (no bfloat16 rounding of P or dS). One-token sequences have dq = dk = 0 in exact math, so
    // only their o and dv are compared there.
    const std::array<at::Tensor, 3> in = stacked(c, cuda(), qkv);
    const AttentionResult ref = reference_ops().attention_forward(in[0], in[1], in[2], scale, nullptr);
    check.relative("attention_forward", "o vs float32 reference", shape, dtype, gpu.out, ref.out.reshape_as(gpu.out), kBf16Bound);
    const AttentionGrads ref_g =
        reference_ops().attention_backward(in[0], in[1], in[2], ref, d_out.view({c.batch, c.seq, -1}), scale, nullptr);
    const at::Tensor want[] = {ref_g.dq, ref_g.dk, ref_g.dv};
    for (int i = c.seq == 1 ? 2 : 0; i < 3; ++i) {
        check.relative("attention_backward", std::string(names[i]) + " vs float32 reference", shape, dtype, gpu.grads[i],
                       want[i], kBf16Bound);
    }
}

// The amax hand-off (attention_forward_current_scale, attention_backward_current_scale) against the plain call and then
// abs_max_current_scale of its output (o; the stacked q, k and v gradients) on the same GPU, bit for bit, twice: the
// second time with v and d_out 1024 times smaller (o and the gradients too), where a scratch word the first call left
// set would keep its larger amax.
void attention_current_scale_case(Checks& check, const AttentionCase& c) {
    const std::string shape = c.shape();
    const std::string dtype = c.offset == 0 ? "BF16" : "BF16, unaligned";
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    const kernels::AttentionHeads heads = c.split(scale);
    const Scratch scratch(c, scale, cuda());
    const std::int64_t rows = c.batch * c.seq, width = c.heads * c.head_dim;
    const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).to(at::kFloat).view(at::kInt); };
    at::Tensor qkv = at::randn({c.batch, c.seq, c.packed(), c.head_dim}, cuda()).to(at::kBFloat16);
    at::Tensor d_out = at::randn({rows, width}, cuda()).to(at::kBFloat16);
    for (const bool second : {false, true}) {
        if (second) {
            qkv.narrow(2, c.heads + c.kv(), c.kv()).div_(1024);
            d_out.div_(1024);
        }
        const std::array<at::Tensor, 3> in = stacked(c, cuda(), qkv);
        const kernels::Tensor q = token_matrix(in[0]), k = token_matrix(in[1]), v = token_matrix(in[2]);
        at::Tensor want = at::full({2, 3}, 0.5f, cuda()), got = at::full({2, 3}, 0.5f, cuda());
        const at::Tensor want_forward = want[0], want_backward = want[1], got_forward = got[0], got_backward = got[1];
        const kernels::CurrentScaleTarget wf = current_scale_target(want_forward, 448.0f), wb = current_scale_target(want_backward, 57344.0f);
        at::Tensor o = poisoned({rows, width}, at::kBFloat16), lse = poisoned({c.batch * c.heads, c.seq}, at::kFloat);
        kernels::attention_forward(q, k, v, heads, kernel_tensor(o), kernel_tensor(lse), kernel_stream());
        kernels::abs_max_current_scale(kernel_tensor(o), wf.numerator, wf.scale, wf.scale_inv, wf.staging, kernel_stream());
        at::Tensor o_fresh = poisoned({rows, width}, at::kBFloat16), lse_fresh = poisoned({c.batch * c.heads, c.seq}, at::kFloat);
        kernels::attention_forward_current_scale(q, k, v, heads, kernel_tensor(o_fresh), kernel_tensor(lse_fresh),
                                                 current_scale_target(got_forward, 448.0f), kernel_stream());
        // The gradients as the fused projection takes them: one [rows, (heads + 2 · kv_heads) · head_dim] matrix, q's
        // columns first.
        const std::array<at::Tensor, 3> grads = stacked(c, cuda()), grads_fresh = stacked(c, cuda());
        const auto whole = [&](const std::array<at::Tensor, 3>& g) {
            return at::cat({g[0], g[1], g[2]}, 2).reshape({rows, c.packed() * c.head_dim});
        };
        kernels::attention_backward(q, k, v, kernel_tensor(o), kernel_tensor(d_out), kernel_tensor(lse), heads, token_matrix(grads[0]),
                                    token_matrix(grads[1]), token_matrix(grads[2]), scratch.ref(), kernel_stream());
        const at::Tensor want_grads = whole(grads);
        kernels::abs_max_current_scale(kernel_tensor(want_grads), wb.numerator, wb.scale, wb.scale_inv, wb.staging, kernel_stream());
        kernels::attention_backward_current_scale(q, k, v, kernel_tensor(o), kernel_tensor(d_out), kernel_tensor(lse), heads,
                                                  token_matrix(grads_fresh[0]), token_matrix(grads_fresh[1]),
                                                  token_matrix(grads_fresh[2]), scratch.ref(),
                                                  current_scale_target(got_backward, 57344.0f), kernel_stream());
        const std::string round = second ? ", second call, v and d_out / 1024" : "";
        check.exact("attention_forward_current_scale", "o, lse = attention_forward's", shape, dtype + round,
                    bits(at::cat({o_fresh.reshape({-1}).to(at::kFloat), lse_fresh.reshape({-1})})),
                    bits(at::cat({o.reshape({-1}).to(at::kFloat), lse.reshape({-1})})));
        check.exact("attention_backward_current_scale", "dq, dk, dv = attention_backward's", shape, dtype + round, bits(whole(grads_fresh)),
                    bits(want_grads));
        check.exact("attention_*_current_scale", "scale, scale_inv, staging = abs_max_current_scale's of the output", shape,
                    dtype + round, bits(got), bits(want));
    }
}

}  // namespace

// The seed's attention (32 sequences of 96, 12 heads of 64), an odd length, one token, the longest sequences the rule
// takes at head_dim 64 and 16, the widest head, the element-wise path (the buffer one element past alignment), and the
// two shapes whose dynamic shared memory is exactly 48 KiB (the forward's at seq 64, head_dim 64; the backward's at 48,
// 128: the hand-off forms' static words take them past it); then grouped queries: the seed llama's (12 query heads over
// 4 key/value heads), one key/value head for 4 query heads at an odd length, one token, and the element-wise path;
// each also in the amax hand-off's forms.
void attentions(Checks& check) {
    const AttentionCase cases[] = {{32, 96, 12, 64, 0},   {3, 17, 2, 16, 0},  {2, 1, 3, 32, 0},   {2, 128, 2, 64, 0},
                                   {1, 176, 2, 16, 0},    {2, 80, 2, 128, 0}, {2, 33, 3, 32, 1},  {2, 64, 2, 64, 0},
                                   {1, 48, 2, 128, 0},    {32, 96, 12, 64, 0, 4}, {3, 17, 4, 16, 0, 1}, {2, 1, 4, 32, 0, 2},
                                   {2, 33, 4, 32, 1, 2}};
    for (const AttentionCase& c : cases) {
        check.attempt("attention", c.shape(), "BF16", [&] { attention_case(check, c); });
        check.attempt("attention_*_current_scale", c.shape(), "BF16", [&] { attention_current_scale_case(check, c); });
    }
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
