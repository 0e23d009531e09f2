// The fused ops' causal attention (FusedOps::attention_* over the host kernels, kernels/attention) against LibTorch's
// scaled_dot_product_attention in float64 on the same bfloat16 inputs and against the float32 reference (TeOps):
// within bfloat16's bound, forward and backward, q, k and v as views of a fused projection or contiguous; one launch
// each way, the gradients in the projection's layout (and not copied again by the qkv projection's backward); which
// shapes the ops own; the kernels' argument checks; the autograd function (against LibTorch's attention, in-place
// changes and a second-order backward refused); and the layer's routing to it (the gpt block and a llama block with as
// many key/value heads as heads). The CUDA kernels themselves are checked by the self-test on a GPU
// (core/selftest/AttentionChecks.cpp, the gpu-labelled te_bench_selftest).
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "core/ledger/Ledger.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/TransformerLayer.h"
#include "core/modules/autograd/Functions.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/train/AutocastScope.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/attention.h"
#include "tewb_kernels/kernel_error.h"

using namespace tewb;

namespace {

struct Shape {
    std::int64_t batch, seq, heads, head_dim;
    std::int64_t kv_heads = 0;  // grouped queries: key/value heads (0: heads)
    std::int64_t kv() const { return kv_heads == 0 ? heads : kv_heads; }
};

// The seed's attention (two sequences of it), an odd length, one token, the longest sequence at head_dim 64, the
// widest head (the longest sequence it fits), the longest sequence the rule takes at all (head_dim 16), and 160 at 32;
// then grouped queries: the seed llama's (12 query heads over 4 key/value heads), one key/value head for 4 query heads,
// and one token.
const Shape kShapes[] = {{2, 96, 12, 64},   {3, 17, 2, 16},    {2, 1, 3, 32},    {1, 128, 2, 64},   {2, 80, 1, 128},
                         {1, 176, 2, 16},   {1, 160, 2, 32},   {2, 96, 12, 64, 4}, {3, 17, 4, 16, 1}, {2, 1, 4, 32, 2}};

struct Inputs {
    at::Tensor q, k, v;
};

// q, k, v as the fused projection hands them out (views of one [batch, seq, heads + 2 · kv_heads, d] tensor) or
// contiguous.
Inputs make_inputs(const Shape& s, bool projection_views) {
    if (projection_views) {
        const at::Tensor qkv = at::randn({s.batch, s.seq, s.heads + 2 * s.kv(), s.head_dim}).to(at::kBFloat16);
        return {qkv.narrow(2, 0, s.heads), qkv.narrow(2, s.heads, s.kv()), qkv.narrow(2, s.heads + s.kv(), s.kv())};
    }
    return {at::randn({s.batch, s.seq, s.heads, s.head_dim}).to(at::kBFloat16),
            at::randn({s.batch, s.seq, s.kv(), s.head_dim}).to(at::kBFloat16),
            at::randn({s.batch, s.seq, s.kv(), s.head_dim}).to(at::kBFloat16)};
}

// ‖got − want‖ / ‖want‖, or over `scale_like`'s norm where that is larger: a gradient that is zero in exact math
// (dq and dk of one-token sequences: the softmax of one score is 1 whatever the score) is measured against the
// size of the others.
double relative_error(const at::Tensor& got, const at::Tensor& want, const at::Tensor& scale_like = {}) {
    const at::Tensor w = want.to(at::kDouble);
    double norm = w.norm().item<double>();
    if (scale_like.defined()) norm = std::max(norm, scale_like.to(at::kDouble).norm().item<double>());
    return (got.to(at::kDouble) - w).norm().item<double>() / std::max(norm, 1e-30);
}

// LibTorch's attention in float64 over the same values: the output [batch, seq, heads · d], the logsumexp
// [batch · heads, seq] and the gradients for d_out.
struct Exact {
    at::Tensor out, lse, dq, dk, dv;
};

Exact exact(const Inputs& in, const at::Tensor& d_out, double scale) {
    const std::int64_t batch = in.q.size(0), seq = in.q.size(1), heads = in.q.size(2), d = in.q.size(3);
    at::Tensor q = in.q.to(at::kDouble).transpose(1, 2).detach().requires_grad_(true);
    at::Tensor k = in.k.to(at::kDouble).transpose(1, 2).detach().requires_grad_(true);
    at::Tensor v = in.v.to(at::kDouble).transpose(1, 2).detach().requires_grad_(true);
    const bool grouped = in.k.size(2) != heads;
    const at::Tensor y = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, scale, grouped);
    const at::Tensor out = y.transpose(1, 2).reshape({batch, seq, heads * d});
    torch::autograd::backward({out}, {d_out.to(at::kDouble)});
    const at::Tensor keys = grouped ? k.detach().repeat_interleave(heads / in.k.size(2), 1) : k.detach();
    const at::Tensor scores = at::matmul(q.detach(), keys.transpose(2, 3)) * scale;
    const at::Tensor future = at::ones({seq, seq}, at::kBool).triu(1);
    const at::Tensor lse = at::logsumexp(scores.masked_fill(future, -INFINITY), {3}).reshape({batch * heads, seq});
    return {out.detach(), lse, q.grad().transpose(1, 2), k.grad().transpose(1, 2), v.grad().transpose(1, 2)};
}

// KERNELS.md's bound for bfloat16 outputs.
constexpr double kBf16Bound = 1e-2;

}  // namespace

class TestFusedAttention : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init() { clear_fallbacks(); }

    void fusedAgainstLibTorch_data() {
        QTest::addColumn<bool>("views");
        QTest::newRow("projection views") << true;
        QTest::newRow("contiguous") << false;
    }

    void fusedAgainstLibTorch() {
        QFETCH(bool, views);
        at::manual_seed(83);
        const TeOps& fused = fused_host_ops();
        for (const Shape& s : kShapes) {
            const std::string where = std::string("[") + std::to_string(s.batch) + ", " + std::to_string(s.seq) + ", " +
                                      std::to_string(s.heads) + "/" + std::to_string(s.kv()) + ", " + std::to_string(s.head_dim) + "]";
            const Inputs in = make_inputs(s, views);
            const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
            QVERIFY2(fused.owns_attention(in.q, in.k, in.v), where.c_str());
            const at::Tensor d_out = at::randn({s.batch, s.seq, s.heads * s.head_dim}).to(at::kBFloat16);
            const Exact want = exact(in, d_out, scale);

            const std::uint64_t before = fused.kernel_launches();
            const AttentionResult r = fused.attention_forward(in.q, in.k, in.v, scale, nullptr);
            QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
            QCOMPARE(r.out.scalar_type(), at::kBFloat16);
            QCOMPARE(r.out.sizes(), want.out.sizes());
            QVERIFY2(relative_error(r.out, want.out) < kBf16Bound, (where + " out").c_str());
            // The logsumexp is float32 math on exact products: within float32 rounding of the float64 one.
            QVERIFY2((r.lse.to(at::kDouble) - want.lse).abs().max().item<double>() < 1e-4, (where + " lse").c_str());

            const AttentionGrads g = fused.attention_backward(in.q, in.k, in.v, r, d_out, scale, nullptr);
            QCOMPARE(fused.kernel_launches() - before, std::uint64_t{2});
            // One-token sequences: dq = dk = 0 in exact math, measured against dv's size.
            const at::Tensor zero_scale = s.seq == 1 ? want.dv : at::Tensor();
            QVERIFY2(relative_error(g.dq, want.dq, zero_scale) < kBf16Bound, (where + " dq").c_str());
            QVERIFY2(relative_error(g.dk, want.dk, zero_scale) < kBf16Bound, (where + " dk").c_str());
            QVERIFY2(relative_error(g.dv, want.dv) < kBf16Bound, (where + " dv").c_str());
            // The projection's layout: the three gradients side by side in one tensor, q's first.
            QCOMPARE(g.dk.data_ptr<at::BFloat16>() - g.dq.data_ptr<at::BFloat16>(), s.heads * s.head_dim);
            QCOMPARE(g.dv.data_ptr<at::BFloat16>() - g.dk.data_ptr<at::BFloat16>(), s.kv() * s.head_dim);
            QCOMPARE(g.dq.stride(1), (s.heads + 2 * s.kv()) * s.head_dim);
            QCOMPARE(g.dk.sizes(), in.k.sizes());

            // The float32 reference (TeOps' default) within the same bound of the float64 one: the kernels and the
            // reference disagree only by the bfloat16 roundings of P, dS and the outputs.
            const AttentionResult ref = reference_ops().attention_forward(in.q, in.k, in.v, scale, nullptr);
            QVERIFY2(relative_error(ref.out, want.out) < kBf16Bound, (where + " reference out").c_str());
            const AttentionGrads ref_g = reference_ops().attention_backward(in.q, in.k, in.v, ref, d_out, scale, nullptr);
            QVERIFY2(relative_error(ref_g.dq, want.dq, zero_scale) < kBf16Bound, (where + " reference dq").c_str());
            QVERIFY2(relative_error(ref_g.dk, want.dk, zero_scale) < kBf16Bound, (where + " reference dk").c_str());
            QVERIFY2(relative_error(ref_g.dv, want.dv) < kBf16Bound, (where + " reference dv").c_str());
        }
        QVERIFY(fallbacks_noted().empty());
    }

    // The host twin's mask: changing the last token changes no earlier output (the kernel's diagonal tiles are the
    // self-test's).
    void causal() {
        at::manual_seed(89);
        const Inputs in = make_inputs({1, 33, 2, 16}, true);
        const AttentionResult before = fused_host_ops().attention_forward(in.q, in.k, in.v, 0.25, nullptr);
        in.k.select(1, 32).normal_();
        in.v.select(1, 32).normal_();
        const AttentionResult after = fused_host_ops().attention_forward(in.q, in.k, in.v, 0.25, nullptr);
        QVERIFY(at::equal(before.out.narrow(1, 0, 32), after.out.narrow(1, 0, 32)));
        QVERIFY(!at::equal(before.out.select(1, 32), after.out.select(1, 32)));
    }

    // What the kernels take: bfloat16 of one shape on the ops' device, tokens one stride apart, the rule's shapes.
    void ownsOnlyWhatTheKernelsTake() {
        const TeOps& fused = fused_host_ops();
        const Inputs in = make_inputs({2, 96, 12, 64}, true);
        QVERIFY(fused.owns_attention(in.q, in.k, in.v));
        QVERIFY(!reference_ops().owns_attention(in.q, in.k, in.v));
        QVERIFY(!fused.owns_attention(in.q.to(at::kFloat), in.k.to(at::kFloat), in.v.to(at::kFloat)));
        // Heads first ([batch, heads, seq, d] transposed back): each token's heads are not one row.
        const at::Tensor heads_first = at::randn({2, 12, 96, 64}).to(at::kBFloat16).transpose(1, 2);
        QVERIFY(!fused.owns_attention(heads_first, heads_first, heads_first));
        // Fewer key/value heads (grouped queries), a divisor of the query heads: the kernels' too; not 5 of 12, not k and v
        // of different head counts, not more key/value heads than query heads, not another head width.
        QVERIFY(fused.owns_attention(in.q, in.k.narrow(2, 0, 4), in.v.narrow(2, 0, 4)));
        QVERIFY(fused.owns_attention(in.q, in.k.narrow(2, 0, 1), in.v.narrow(2, 0, 1)));
        QVERIFY(!fused.owns_attention(in.q, in.k.narrow(2, 0, 5), in.v.narrow(2, 0, 5)));
        QVERIFY(!fused.owns_attention(in.q, in.k.narrow(2, 0, 4), in.v.narrow(2, 0, 6)));
        QVERIFY(!fused.owns_attention(in.q.narrow(2, 0, 4), in.k, in.v));
        QVERIFY(!fused.owns_attention(in.q, in.k.narrow(2, 0, 4).narrow(3, 0, 32), in.v.narrow(2, 0, 4).narrow(3, 0, 32)));
        const Inputs long_seq = make_inputs({1, 129, 2, 64}, false);
        QVERIFY(!fused.owns_attention(long_seq.q, long_seq.k, long_seq.v));
        const Inputs odd_head = make_inputs({1, 8, 2, 24}, false);
        QVERIFY(!fused.owns_attention(odd_head.q, odd_head.k, odd_head.v));
        const Inputs empty = make_inputs({0, 8, 2, 16}, false);
        QVERIFY(!fused.owns_attention(empty.q, empty.k, empty.v));
    }

    // The rule's numbers: the shared memory one block needs, and the shapes past 99 KiB refused with the reason.
    void theRule() {
        QCOMPARE(kernels::attention_forward_shared_bytes(96, 64), std::size_t{71168});
        QCOMPARE(kernels::attention_backward_shared_bytes(96, 64), std::size_t{66304});
        QCOMPARE(kernels::attention_forward_shared_bytes(128, 64), std::size_t{93184});
        QCOMPARE(kernels::attention_backward_shared_bytes(128, 64), std::size_t{95232});
        QVERIFY(kernels::attention_refusal(144, 64));
        QVERIFY(!kernels::attention_refusal(kernels::kAttentionMaxSeq, 16));
        QVERIFY(kernels::attention_refusal(kernels::kAttentionMaxSeq + 16, 16));
        QVERIFY(!kernels::attention_refusal(96, 64));
        QVERIFY(!kernels::attention_refusal(1, 16));
        QVERIFY(!kernels::attention_refusal(80, 128));
        const auto wide = kernels::attention_refusal(96, 128);
        QVERIFY(wide && wide->find("108032 bytes of shared memory") != std::string::npos);
        const auto odd = kernels::attention_refusal(96, 24);
        QVERIFY(odd && odd->find("multiple of 16") != std::string::npos);
        const auto long_seq = kernels::attention_refusal(177, 16);
        QVERIFY(long_seq && long_seq->find("at most 176") != std::string::npos);
    }

    // The kernels' checks: each bad argument refused by name with what is allowed, before anything is written.
    void badArgumentsAreRefused_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("message");
        QTest::newRow("float32 q") << 0 << "q has dtype float32; allowed: bfloat16";
        QTest::newRow("rows not whole sequences") << 1 << "are not whole sequences of seq = 7";
        QTest::newRow("lse shape") << 2 << "lse is [4, 8]; allowed: [8, 8]";
        QTest::newRow("o over q") << 3 << "o overlaps q";
        QTest::newRow("scale") << 4 << "scale = 0.000000; allowed: a finite number above 0";
        QTest::newRow("dq over dk") << 5 << "dq overlaps dk";
        QTest::newRow("head_dim") << 6 << "head_dim = 8; allowed: a multiple of 16";
        QTest::newRow("dv over lse") << 7 << "dv overlaps lse";
    }

    void badArgumentsAreRefused() {
        QFETCH(int, which);
        QFETCH(QString, message);
        // Two sequences of 8 of 4 heads of 16: [16, 64] matrices; lse [8, 8].
        const std::size_t rows = 16, cols = 64;
        std::vector<std::uint16_t> q(rows * cols), k(rows * cols), v(rows * cols), o(rows * cols), dq(rows * 3 * cols);
        // lse's allocation holds case 7's [16, 16] bfloat16 dv whole (512 bytes): a dv reaching past it could overlap
        // whichever buffer the heap put next (o, once in 40 runs) and be refused for that first.
        std::vector<float> lse(2 * 8 * 8), q32(rows * cols);
        auto matrix = [&](void* data) { return kernels::input(data, kernels::DType::BFloat16, rows, cols); };
        kernels::Tensor tq = matrix(q.data()), tk = matrix(k.data()), tv = matrix(v.data()), to = matrix(o.data());
        kernels::Tensor tlse = kernels::input(lse.data(), kernels::DType::Float32, 8, 8);
        kernels::AttentionHeads heads{8, 4, 0.25f};
        // The gradients as three narrows of one [16, 192]: apart, though their spans interleave.
        kernels::Tensor tdq = matrix(dq.data()), tdk = matrix(dq.data() + cols), tdv = matrix(dq.data() + 2 * cols);
        tdq.row_stride = tdk.row_stride = tdv.row_stride = 3 * cols;
        if (which == 0) tq = kernels::input(q32.data(), kernels::DType::Float32, rows, cols);
        if (which == 1) heads.seq = 7;
        if (which == 2) tlse.rows = 4;
        if (which == 3) to = matrix(q.data());
        if (which == 4) heads.scale = 0.0f;
        if (which == 5) tdk = tdq;
        if (which == 6) heads.heads = 8;
        if (which == 7) tdv = kernels::input(lse.data(), kernels::DType::BFloat16, rows, cols / 4);
        const bool backward = which >= 5;
        if (which == 7) {
            // A [16, 16] bfloat16 dv over lse's bytes: shaped right for heads of 16 only, so the heads follow.
            heads.heads = 1;
            tq.cols = tk.cols = tv.cols = to.cols = tdq.cols = tdk.cols = 16;
            tlse.rows = 2;
        }
        try {
            if (backward) {
                kernels::host::attention_backward(tq, tk, tv, to, to, tlse, heads, tdq, tdk, tdv, kernels::Workspace{}, kernels::Stream{});
            } else {
                kernels::host::attention_forward(tq, tk, tv, heads, to, tlse, kernels::Stream{});
            }
            QFAIL("accepted");
        } catch (const kernels::KernelError& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
            QVERIFY2(QString(e.what()).startsWith(backward ? "tewb::kernels::host::attention_backward: "
                                                           : "tewb::kernels::host::attention_forward: "),
                     e.what());
        }
        if (which < 5) return;
        // The same three narrows, apart, are accepted.
        if (which == 5) {
            tdk = matrix(dq.data() + cols);
            tdk.row_stride = 3 * cols;
            kernels::host::attention_backward(tq, tk, tv, to, to, tlse, kernels::AttentionHeads{8, 4, 0.25f}, tdq, tdk, tdv,
                                              kernels::Workspace{}, kernels::Stream{});
        }
    }

    // Through autograd (apply_attention): the gradients of the fused projection's output against LibTorch's attention
    // in float64, for a transposed (non-contiguous) output gradient; an in-place change of an input after the forward
    // is the engine's error, and so is a backward that would build a graph for a second one.
    void autogradFunction() {
        at::manual_seed(97);
        const Shape s{2, 24, 3, 32};
        const double scale = 1.0 / std::sqrt(32.0);
        const at::Tensor qkv = at::randn({s.batch, s.seq, 3, s.heads, s.head_dim}).to(at::kBFloat16).requires_grad_(true);
        const at::Tensor d_out = at::randn({s.heads * s.head_dim, s.seq, s.batch}).to(at::kBFloat16).permute({2, 1, 0});
        QVERIFY(!d_out.is_contiguous());
        const std::vector<at::Tensor> parts = qkv.unbind(2);
        const at::Tensor y = apply_attention(parts[0], parts[1], parts[2], scale, fused_host_ops());
        torch::autograd::backward({y}, {d_out});
        const Inputs in{qkv.detach().select(2, 0), qkv.detach().select(2, 1), qkv.detach().select(2, 2)};
        const Exact want = exact(in, d_out, scale);
        QVERIFY(relative_error(y.detach(), want.out) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().select(2, 0), want.dq) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().select(2, 1), want.dk) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().select(2, 2), want.dv) < kBf16Bound);

        const at::Tensor leaf = at::randn({1, 8, 3, 1, 16}).to(at::kBFloat16).requires_grad_(true);
        at::Tensor changed = leaf.mul(1.0);
        std::vector<at::Tensor> p = changed.unbind(2);
        at::Tensor out = apply_attention(p[0], p[1], p[2], 0.25, fused_host_ops());
        changed.add_(1.0);  // after the forward, before the backward
        QVERIFY_THROWS_EXCEPTION(std::exception, out.sum().backward());

        p = leaf.unbind(2);
        out = apply_attention(p[0], p[1], p[2], 0.25, fused_host_ops());
        QVERIFY_THROWS_EXCEPTION(std::exception,
                                 torch::autograd::grad({out.sum()}, {leaf}, {}, /*retain_graph=*/true, /*create_graph=*/true));
    }

    // Through autograd over the packed heads (apply_packed_attention, as the llama block calls it): grouped queries'
    // gradients against LibTorch's attention in float64, returned as the one tensor the ops' backward wrote (one
    // launch, nothing concatenated); over the float32 reference ops, the same values.
    void packedAttention() {
        at::manual_seed(103);
        const Shape s{2, 24, 4, 32, 2};
        const double scale = 1.0 / std::sqrt(32.0);
        const at::Tensor qkv = at::randn({s.batch, s.seq, s.heads + 2 * s.kv(), s.head_dim}).to(at::kBFloat16).requires_grad_(true);
        const at::Tensor d_out = at::randn({s.batch, s.seq, s.heads * s.head_dim}).to(at::kBFloat16);
        const TeOps& fused = fused_host_ops();
        at::Tensor seen;
        const at::Tensor through = qkv.mul(1.0);
        through.register_hook([&](const at::Tensor& g) { seen = g; });
        const at::Tensor y = apply_packed_attention(through, s.heads, s.kv(), scale, fused);
        const std::uint64_t before = fused.kernel_launches();
        LedgerRecording recording(false, 0);
        torch::autograd::backward({y}, {d_out});
        const LedgerMeasurement m = recording.finish();
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        for (const LedgerEntry& e : m.rows) QVERIFY2(e.op != "aten::cat", "the gradients were concatenated");
        QVERIFY(seen.defined() && seen.is_contiguous());
        QCOMPARE(seen.sizes(), qkv.sizes());
        const Inputs in{qkv.detach().narrow(2, 0, s.heads), qkv.detach().narrow(2, s.heads, s.kv()),
                        qkv.detach().narrow(2, s.heads + s.kv(), s.kv())};
        const Exact want = exact(in, d_out, scale);
        QVERIFY(relative_error(y.detach(), want.out) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().narrow(2, 0, s.heads), want.dq) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().narrow(2, s.heads, s.kv()), want.dk) < kBf16Bound);
        QVERIFY(relative_error(qkv.grad().narrow(2, s.heads + s.kv(), s.kv()), want.dv) < kBf16Bound);

        const at::Tensor leaf = qkv.detach().to(at::kFloat).requires_grad_(true);
        const at::Tensor y_ref = apply_packed_attention(leaf, s.heads, s.kv(), scale, reference_ops());
        torch::autograd::backward({y_ref}, {d_out.to(at::kFloat)});
        QVERIFY(relative_error(leaf.grad().narrow(2, 0, s.heads), want.dq) < kBf16Bound);
        QVERIFY(relative_error(leaf.grad().narrow(2, s.heads + s.kv(), s.kv()), want.dv) < kBf16Bound);
    }

    // The qkv projection's BF16 backward takes the attention's gradients as the one matrix they are views of: no copy,
    // one launch for the bias gradient (cast_dbias summing only), none without a bias; the same values as the stack.
    void stackedGradientsAreNotCopiedAgain() {
        const Inputs in = make_inputs({2, 16, 2, 16}, true);
        const at::Tensor d_out = at::randn({2, 16, 32}).to(at::kBFloat16);
        const TeOps& fused = fused_host_ops();
        const AttentionResult r = fused.attention_forward(in.q, in.k, in.v, 0.25, nullptr);
        const AttentionGrads g = fused.attention_backward(in.q, in.k, in.v, r, d_out, 0.25, nullptr);
        const at::Tensor stacked = at::stack({g.dq, g.dk, g.dv}, 2).reshape({32, 96});
        std::uint64_t before = fused.kernel_launches();
        const GradWithBias with_bias = fused.stack_heads_dbias(g.dq, g.dk, g.dv, at::kBFloat16, true);
        QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
        QCOMPARE(with_bias.grad.data_ptr(), g.dq.data_ptr());
        QVERIFY(at::equal(with_bias.grad, stacked));
        QVERIFY(at::allclose(with_bias.bias_grad, stacked.to(at::kFloat).sum(0), 1e-5, 1e-5));
        before = fused.kernel_launches();
        const GradWithBias without = fused.stack_heads_dbias(g.dq, g.dk, g.dv, at::kBFloat16, false);
        QCOMPARE(fused.kernel_launches(), before);
        QCOMPARE(without.grad.data_ptr(), g.dq.data_ptr());
        QVERIFY(!without.bias_grad.defined());
        // A float32 GEMM dtype: one cast_dbias casting and summing.
        const GradWithBias wide = fused.stack_heads_dbias(g.dq, g.dk, g.dv, at::kFloat, false);
        QVERIFY(at::equal(wide.grad, stacked.to(at::kFloat)));
        QVERIFY(fallbacks_noted().empty());
    }

    // The amax hand-off (current scaling, and delayed scaling's calibrating step): given proj's input slot the forward
    // writes that slot's scale with its output (attention_forward_current_scale) and quantize_with_handed_scale casts
    // with it; given qkv's grad-output slot the backward does the same for the stacked gradient, which
    // stack_heads_quantize_dbias then casts (with and without its bias gradient). Each is bit for bit the plain call
    // followed by the cast's own amax pass (the output or gradients, the FP8 data, its transposed copy, scale_inv, the
    // slot's scale and staged amax), in one launch fewer. Delayed scaling proper and inspection hand nothing over.
    void attentionHandsItsScalesOver_data() {
        QTest::addColumn<int>("mode");  // 0 current, 1 delayed calibrating, 2 delayed proper, 3 current inspected
        QTest::newRow("current") << 0;
        QTest::newRow("delayed, calibrating") << 1;
        QTest::newRow("delayed") << 2;
        QTest::newRow("current, inspected") << 3;
    }
    void attentionHandsItsScalesOver() {
        QFETCH(int, mode);
        const bool handed_over = mode <= 1;
        at::manual_seed(17);
        const Inputs in = make_inputs({2, 24, 2, 16}, true);
        const at::Tensor d_out = at::randn({2, 24, 32}).to(at::kBFloat16);
        const TeOps& fused = fused_host_ops();
        const auto context_for = [&] {
            auto context = std::make_shared<Fp8Context>();
            context->add_gemm("proj");
            context->add_gemm("qkv");
            Fp8Recipe recipe = Fp8Recipe::seed_defaults();
            recipe.scaling = mode == 0 || mode == 3 ? ScalingKind::Current : ScalingKind::Delayed;
            recipe.calibrate_first_step = mode == 1;
            context->prepare(recipe, mode == 3, c10::Device(c10::kCPU), fused);
            return context;
        };
        const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).contiguous().view(at::kByte); };
        const auto same = [&](const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && at::equal(bits(a), bits(b)); };
        // What each context holds of a slot: its scale and the staged amax.
        const auto slot_state = [](const Fp8Context& c, const Fp8Quantizer& q) {
            return at::stack({c.scale(q.pass, q.slot).reshape({}), c.history(q.pass).select(1, 0)[q.slot]});
        };
        for (const bool bias : {true, false}) {
            const auto plain = context_for();
            const auto handing = context_for();
            const Fp8Quantizer proj_plain{plain, Fp8Pass::Forward, 0}, proj_handing{handing, Fp8Pass::Forward, 0};
            const Fp8Quantizer qkv_plain{plain, Fp8Pass::Backward, 1}, qkv_handing{handing, Fp8Pass::Backward, 1};
            // Forward, and proj's input cast.
            std::uint64_t before = fused.kernel_launches();
            const AttentionResult want = fused.attention_forward(in.q, in.k, in.v, 0.25, nullptr);
            const Fp8Tensor want_cast = fused.quantize(want.out.view({48, 32}), proj_plain, true);
            const std::uint64_t plain_launches = fused.kernel_launches() - before;
            before = fused.kernel_launches();
            const AttentionResult got = fused.attention_forward(in.q, in.k, in.v, 0.25, &proj_handing);
            QCOMPARE(got.out_scale_inv.defined(), handed_over);
            const Fp8Tensor got_cast = fused.quantize_with_handed_scale(got.out.view({48, 32}), proj_handing, got.out_scale_inv, true);
            QCOMPARE(fused.kernel_launches() - before, plain_launches - (handed_over ? 1 : 0));
            QVERIFY(same(got.out, want.out));
            QVERIFY(same(got.lse, want.lse));
            QVERIFY(same(got_cast.data, want_cast.data));
            QVERIFY(same(got_cast.transposed, want_cast.transposed));
            QVERIFY(same(got_cast.scale_inv, want_cast.scale_inv));
            QVERIFY(same(slot_state(*handing, proj_handing), slot_state(*plain, proj_plain)));
            // Backward, and qkv's output-gradient cast.
            before = fused.kernel_launches();
            const AttentionGrads want_g = fused.attention_backward(in.q, in.k, in.v, want, d_out, 0.25, nullptr);
            const Fp8GradWithBias want_d =
                fused.stack_heads_quantize_dbias(want_g.dq, want_g.dk, want_g.dv, qkv_plain, bias, at::Tensor());
            const std::uint64_t plain_backward = fused.kernel_launches() - before;
            before = fused.kernel_launches();
            const AttentionGrads got_g = fused.attention_backward(in.q, in.k, in.v, got, d_out, 0.25, &qkv_handing);
            QCOMPARE(got_g.scale_inv.defined(), handed_over);
            const Fp8GradWithBias got_d =
                fused.stack_heads_quantize_dbias(got_g.dq, got_g.dk, got_g.dv, qkv_handing, bias, got_g.scale_inv);
            QCOMPARE(fused.kernel_launches() - before, plain_backward - (handed_over ? 1 : 0));
            for (const auto& [a, b] : {std::pair{got_g.dq, want_g.dq}, std::pair{got_g.dk, want_g.dk}, std::pair{got_g.dv, want_g.dv},
                                       std::pair{got_d.grad.data, want_d.grad.data}, std::pair{got_d.grad.transposed, want_d.grad.transposed},
                                       std::pair{got_d.grad.scale_inv, want_d.grad.scale_inv}}) {
                QVERIFY(same(a, b));
            }
            QCOMPARE(got_d.bias_grad.defined(), bias);
            if (bias) QVERIFY(same(got_d.bias_grad, want_d.bias_grad));
            QVERIFY(same(slot_state(*handing, qkv_handing), slot_state(*plain, qkv_plain)));
        }
        QVERIFY(fallbacks_noted().empty());
    }

    // The autograd side (ScaleHandOver): a scale, or a whole cast, is taken only for the very tensor delivered, unchanged,
    // by the slot that asked, once.
    void scaleHandOverTakesOnlyWhatWasDelivered() {
        auto context = std::make_shared<Fp8Context>();
        context->add_gemm("proj");
        context->prepare(Fp8Recipe::seed_defaults(), false, c10::Device(c10::kCPU), fused_host_ops());
        const Fp8Quantizer slot{context, Fp8Pass::Forward, 0}, other{context, Fp8Pass::Forward, 1};
        const at::Tensor x = at::randn({4, 3, 8});
        const at::Tensor scale_inv = at::ones({});
        const auto delivered = [&] {
            ScaleHandOver h;
            h.ask(slot);
            h.deliver({x}, scale_inv);
            return h;
        };
        ScaleHandOver h = delivered();
        QVERIFY(h.take({x.view({12, 8})}, slot).defined());  // a reshaped view of the same memory
        QVERIFY(!h.take({x.view({12, 8})}, slot).defined());  // once
        h = delivered();
        QVERIFY(!h.take({x.view({12, 8})}, other).defined());  // another slot
        h = delivered();
        QVERIFY(!h.take({x.view({12, 8})}, Fp8Quantizer{context, Fp8Pass::Backward, 0}).defined());  // another pass
        auto other_context = std::make_shared<Fp8Context>();
        other_context->add_gemm("proj");
        other_context->prepare(Fp8Recipe::seed_defaults(), false, c10::Device(c10::kCPU), fused_host_ops());
        h = delivered();
        QVERIFY(!h.take({x.view({12, 8})}, Fp8Quantizer{other_context, Fp8Pass::Forward, 0}).defined());  // another context
        h = delivered();
        QVERIFY(!h.take({x.view({12, 8}).t()}, slot).defined());  // the same elements transposed
        h = delivered();
        QVERIFY(!h.take({x.clone()}, slot).defined());  // a copy
        h = delivered();
        QVERIFY(!h.take({x.narrow(0, 1, 2)}, slot).defined());  // part of it
        h = delivered();
        x.mul_(2);  // changed since
        QVERIFY(!h.take({x}, slot).defined());
        h = delivered();
        context->update(Fp8Pass::Forward);  // the slot's scales updated since
        QVERIFY(!h.take({x}, slot).defined());
        ScaleHandOver never_asked;
        never_asked.deliver({x}, scale_inv);
        QVERIFY(!never_asked.take({x}, slot).defined());

        // A cast delivered (delayed scaling: the rotary's inverse), under the same rules; each kind taken only as itself.
        const auto new_x = at::randn({4, 3, 8});
        Fp8Tensor cast;
        cast.data = at::zeros({12, 8}, at::kByte);
        const auto cast_delivered = [&] {
            ScaleHandOver c;
            c.ask(slot);
            c.deliver_cast({new_x}, cast);
            return c;
        };
        ScaleHandOver c = cast_delivered();
        QVERIFY(!c.take({new_x.view({12, 8})}, slot).defined());  // no scale was delivered, the cast stays
        const std::optional<Fp8Tensor> got = c.take_cast({new_x.view({12, 8})}, slot);
        QVERIFY(got && got->data.is_same(cast.data));
        QVERIFY(!c.take_cast({new_x.view({12, 8})}, slot));  // once
        c = cast_delivered();
        QVERIFY(!c.take_cast({new_x}, other));  // another slot
        c = cast_delivered();
        QVERIFY(!c.take_cast({new_x.clone()}, slot));  // a copy
        c = cast_delivered();
        new_x.add_(1);  // changed since
        QVERIFY(!c.take_cast({new_x}, slot));
        c = cast_delivered();
        context->update(Fp8Pass::Forward);  // the slot's scales updated since
        QVERIFY(!c.take_cast({new_x}, slot));
        h = delivered();
        QVERIFY(!h.take_cast({x}, slot));  // a scale was delivered: no cast, and the scale is still there
        QVERIFY(h.take({x}, slot).defined());
        h = delivered();
        h.deliver_cast({new_x}, cast);  // a later delivery replaces the earlier
        QVERIFY(!h.take({x}, slot).defined());
        QVERIFY(h.take_cast({new_x}, slot));
    }

    // The layer runs its attention on the kernels where its ops own it: the gpt block (q, k and v handed out by the
    // projection) and llama blocks (rotated heads of one view, as many key/value heads as heads or grouped queries),
    // under BF16 autocast on the fused host ops, with no concatenation of the gradients (the packed attention's backward
    // writes the rotated heads' gradient whole); in float32 (no autocast) the kernels do not take it, LibTorch's
    // attention runs.
    void layersRouteToTheKernels_data() {
        QTest::addColumn<bool>("llama");
        QTest::addColumn<std::int64_t>("kv_heads");
        QTest::addColumn<bool>("autocast");
        QTest::addColumn<bool>("owned");
        QTest::newRow("gpt") << false << std::int64_t{0} << true << true;
        QTest::newRow("llama, kv = heads") << true << std::int64_t{4} << true << true;
        QTest::newRow("llama, grouped") << true << std::int64_t{2} << true << true;
        QTest::newRow("llama, one kv head") << true << std::int64_t{1} << true << true;
        QTest::newRow("llama, grouped, float32") << true << std::int64_t{2} << false << false;
    }
    void layersRouteToTheKernels() {
        QFETCH(bool, llama);
        QFETCH(std::int64_t, kv_heads);
        QFETCH(bool, autocast);
        QFETCH(bool, owned);
        at::manual_seed(101);
        ParameterInit init(7);
        TransformerLayer::Options options{64, 4, 128, 0.02, 0.02, 1e-5};
        if (llama) {
            options.normalization = Normalization::RmsNorm;
            options.activation = Activation::Swiglu;
            options.bias = false;
            options.kv_heads = kv_heads;
        }
        TransformerLayer layer("blk", options, init);
        const at::Tensor angle = at::arange(16, at::kFloat).unsqueeze(1) * at::pow(10000.0, -at::arange(0, 16, 2, at::kFloat) / 16);
        const RotaryAngles rotary{at::cos(angle), at::sin(angle)};
        const at::Tensor x = at::randn({2, 16, 64}).requires_grad_(true);
        LedgerRecording recording(false, 0);
        {
            const OpsScope ops(fused_host_ops());
            const AutocastScope bf16(autocast, at::kCPU);
            const at::Tensor y = layer.forward(x, llama ? &rotary : nullptr);
            y.to(at::kFloat).square().sum().backward();
        }
        const LedgerMeasurement m = recording.finish();
        int own = 0, libtorch = 0, cats = 0;
        for (const LedgerEntry& e : m.rows) {
            if (e.op == "tewb::attention_forward" || e.op == "tewb::attention_backward") own += static_cast<int>(e.calls);
            if (e.op.find("scaled_dot_product") != std::string::npos) libtorch += static_cast<int>(e.calls);
            if (e.scope == "attention" && e.op == "aten::cat") cats += static_cast<int>(e.calls);
        }
        QCOMPARE(own, owned ? 2 : 0);
        QCOMPARE(libtorch > 0, !owned);
        if (owned) QCOMPARE(cats, 0);
        QVERIFY(x.grad().defined() && at::isfinite(x.grad()).all().item<bool>());
        QVERIFY(fallbacks_noted().empty());
    }

    // The ledger: one row each way of one known launch, reading q, k, v (and o, d_out, lse) and writing o and lse (the
    // three gradients); LibTorch's attention on the CPU counts 1 and 3 launches (unknown) in their place.
    void ledgerRows() {
        const Inputs in = make_inputs({2, 16, 2, 16}, true);
        const at::Tensor d_out = at::randn({2, 16, 32}).to(at::kBFloat16);
        LedgerRecording recording(false, 0);
        {
            const LedgerScope scope("fused");
            const AttentionResult r = fused_host_ops().attention_forward(in.q, in.k, in.v, 0.25, nullptr);
            (void)fused_host_ops().attention_backward(in.q, in.k, in.v, r, d_out, 0.25, nullptr);
        }
        const LedgerMeasurement m = recording.finish();
        const std::uint64_t matrix = 2 * 16 * 32 * 2;
        const std::uint64_t lse = 2 * 2 * 16 * 4;
        int seen = 0;
        for (const LedgerEntry& e : m.rows) {
            if (e.scope != "fused") continue;
            QCOMPARE(e.calls, std::uint64_t{1});
            QCOMPARE(e.launches, std::uint64_t{1});
            QVERIFY(e.launches_known);
            if (e.op == "tewb::attention_forward") {
                QCOMPARE(e.bytes_read, 3 * matrix);
                QCOMPARE(e.bytes_written, matrix + lse);
                ++seen;
            } else if (e.op == "tewb::attention_backward") {
                QCOMPARE(e.bytes_read, 5 * matrix + lse);
                QCOMPARE(e.bytes_written, 3 * matrix);
                ++seen;
            }
        }
        QCOMPARE(seen, 2);
    }
};

QTEST_GUILESS_MAIN(TestFusedAttention)
#include "tst_fused_attention.moc"
