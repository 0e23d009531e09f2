#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "amax/current_scale_target.h"
#include "attention/attention_call.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

// Regions carved one after another, each 128-byte aligned (the tensor cores' loads want 32).
struct Carver {
    std::size_t at = 0;
    std::size_t take(std::size_t bytes) {
        const std::size_t start = at;
        at = round_up(at + bytes, 128);
        return start;
    }
};

}  // namespace

namespace detail {

AttentionForwardSmem attention_forward_smem(std::size_t seq, std::size_t head_dim) {
    const std::size_t padded = round_up(seq, kAttentionTile);
    const std::size_t matrix = padded * (head_dim + kAttentionPadBf16) * 2;
    AttentionForwardSmem s{};
    Carver c;
    s.q = c.take(matrix);
    s.k = c.take(matrix);
    s.v = c.take(matrix);
    s.scores_bytes = round_up(kAttentionTile * (padded + kAttentionPadFloat) * sizeof(float), 128);
    s.scores = c.take(s.scores_bytes * kAttentionWarps);
    s.stage = c.take(kAttentionTile * kAttentionTile * sizeof(float) * kAttentionWarps);
    s.total = c.at;
    return s;
}

std::size_t workspace_bytes(const AttentionGeometry& g) {
    if (!attention_grouped(g)) return 0;
    return g.batch * g.kv_heads * attention_workspace_floats_per_block(g) * sizeof(float);
}

AttentionBackwardSmem attention_backward_smem(std::size_t seq, std::size_t head_dim) {
    const std::size_t padded = round_up(seq, kAttentionTile);
    const std::size_t matrix = padded * (head_dim + kAttentionPadBf16) * 2;
    AttentionBackwardSmem s{};
    Carver c;
    s.a = c.take(matrix);
    s.k = c.take(matrix);
    s.d_o = c.take(matrix);
    s.p = c.take(padded * (padded + kAttentionPadBf16) * 2);
    s.lse = c.take(padded * sizeof(float));
    s.delta = c.take(padded * sizeof(float));
    s.stage = c.take(kAttentionTile * kAttentionTile * sizeof(float) * kAttentionWarps);
    s.total = c.at;
    return s;
}

}  // namespace detail

std::size_t attention_forward_shared_bytes(std::size_t seq, std::size_t head_dim) {
    return detail::attention_forward_smem(seq, head_dim).total;
}

std::size_t attention_backward_shared_bytes(std::size_t seq, std::size_t head_dim) {
    return detail::attention_backward_smem(seq, head_dim).total;
}

std::optional<std::string> attention_refusal(std::size_t seq, std::size_t head_dim) {
    if (seq == 0) return "seq = 0; allowed: at least 1";
    if (seq > kAttentionMaxSeq) {
        return "seq = " + std::to_string(seq) + "; allowed: at most " + std::to_string(kAttentionMaxSeq) +
               " (a block holds a whole sequence)";
    }
    if (head_dim == 0 || head_dim % kAttentionHeadDimMultiple != 0 || head_dim > kAttentionMaxHeadDim) {
        return "head_dim = " + std::to_string(head_dim) + "; allowed: a multiple of " +
               std::to_string(kAttentionHeadDimMultiple) + " up to " + std::to_string(kAttentionMaxHeadDim) +
               " (whole tensor-core tiles)";
    }
    const std::size_t need = std::max(attention_forward_shared_bytes(seq, head_dim), attention_backward_shared_bytes(seq, head_dim));
    if (need > kAttentionSharedBytesLimit - kAttentionStaticSharedReserve) {
        return "seq = " + std::to_string(seq) + " with head_dim = " + std::to_string(head_dim) + " needs " +
               std::to_string(need) + " bytes of shared memory a block; allowed: at most " +
               std::to_string(kAttentionSharedBytesLimit - kAttentionStaticSharedReserve) +
               " (compute capability 8.6 and 8.9's limit less " + std::to_string(kAttentionStaticSharedReserve) +
               " bytes for the kernels' static shared memory)";
    }
    return std::nullopt;
}

namespace detail {

namespace {

std::size_t kv_cols(const AttentionGeometry& g) {
    return g.kv_heads * g.head_dim;
}

// The bytes from a matrix's first element to one past its last.
std::size_t span_bytes(const Tensor& t) {
    if (t.rows == 0 || t.cols == 0) return 0;
    return ((t.rows - 1) * t.stride() + t.cols) * element_size(t.dtype);
}

// Whether two row-major matrices share an element. Two narrows of one wider matrix (the same row stride, the
// same element size, the column ranges apart) interleave without sharing one; anything else is judged by its span.
bool share_elements(const Tensor& a, const Tensor& b) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data);
    const auto b0 = reinterpret_cast<std::uintptr_t>(b.data);
    const std::size_t a_bytes = span_bytes(a);
    const std::size_t b_bytes = span_bytes(b);
    if (a_bytes == 0 || b_bytes == 0 || a0 >= b0 + b_bytes || b0 >= a0 + a_bytes) return false;
    const std::size_t element = element_size(a.dtype);
    if (element != element_size(b.dtype) || a.stride() != b.stride()) return true;
    const std::size_t row_bytes = a.stride() * element;
    const auto [low, high] = a0 <= b0 ? std::pair{&a, &b} : std::pair{&b, &a};
    const std::size_t offset = static_cast<std::size_t>(std::max(a0, b0) - std::min(a0, b0)) % row_bytes;
    // high's columns start `offset` bytes into low's rows: apart when they begin after low's and end before its next row.
    return !(offset >= low->cols * element && offset + high->cols * element <= row_bytes);
}

void check_matrix(const char* call, const Tensor& t, const char* name, std::size_t rows, std::size_t cols) {
    if (t.dtype != DType::BFloat16) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(t.dtype)) + "; allowed: bfloat16");
    }
    check_shape(call, t, name, rows, cols);
    if (t.row_stride != 0 && t.row_stride < t.cols) {
        fail(call, std::string(name) + ".row_stride = " + std::to_string(t.row_stride) + "; allowed: 0 or at least cols (" +
                       std::to_string(t.cols) + ")");
    }
    if (t.stride() > static_cast<std::size_t>(INT32_MAX)) {
        fail(call, std::string(name) + ".row_stride = " + std::to_string(t.stride()) + "; allowed: at most 2^31 - 1");
    }
}

AttentionGeometry geometry(const char* call, const Tensor& q, const AttentionHeads& heads) {
    check_dims(call, q.rows, q.cols);
    if (heads.seq == 0) fail(call, "seq = 0; allowed: at least 1");
    if (heads.heads == 0) fail(call, "heads = 0; allowed: at least 1");
    if (q.rows % heads.seq != 0) {
        fail(call, "q is " + shape_text(q) + ": " + std::to_string(q.rows) +
                       " rows are not whole sequences of seq = " + std::to_string(heads.seq) + " (rows = batch * seq)");
    }
    if (q.cols % heads.heads != 0) {
        fail(call, "q is " + shape_text(q) + ": " + std::to_string(q.cols) + " columns are not heads = " +
                       std::to_string(heads.heads) + " heads of one width (cols = heads * head_dim)");
    }
    const std::size_t kv_heads = heads.kv_heads == 0 ? heads.heads : heads.kv_heads;
    if (kv_heads > heads.heads || heads.heads % kv_heads != 0) {
        fail(call, "kv_heads = " + std::to_string(kv_heads) + "; allowed: a divisor of heads = " + std::to_string(heads.heads) +
                       " (each key/value head serves as many query heads), or 0 for heads");
    }
    if (!(std::isfinite(heads.scale) && heads.scale > 0.0f)) {
        fail(call, "scale = " + std::to_string(heads.scale) + "; allowed: a finite number above 0");
    }
    AttentionGeometry g;
    g.batch = q.rows / heads.seq;
    g.seq = heads.seq;
    g.heads = heads.heads;
    g.kv_heads = kv_heads;
    g.head_dim = q.cols / heads.heads;
    g.padded_seq = (g.seq + kAttentionTile - 1) / kAttentionTile * kAttentionTile;
    g.scale = heads.scale;
    if (q.rows == 0) return g;  // no work: the call gives nothing whatever the heads' width
    if (const auto refused = attention_refusal(g.seq, g.head_dim)) fail(call, *refused);
    return g;
}

void check_lse(const char* call, const Tensor& lse, const AttentionGeometry& g) {
    if (lse.dtype != DType::Float32) {
        fail(call, "lse has dtype " + std::string(to_string(lse.dtype)) + "; allowed: float32");
    }
    check_shape(call, lse, "lse", g.batch * g.heads, g.seq);
    if (lse.row_stride != 0 && lse.row_stride != lse.cols) fail(call, "lse has a row_stride; allowed: contiguous");
}

HeadRows rows_of(const Tensor& t) {
    return {t.data, t.stride()};
}

struct Named {
    const Tensor* t;
    const char* name;
};

// Every output apart from every input and from every other output.
void check_apart(const char* call, const std::vector<Named>& outputs, const std::vector<Named>& inputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        for (const Named& in : inputs) {
            if (share_elements(*outputs[i].t, *in.t)) {
                fail(call, std::string(outputs[i].name) + " overlaps " + in.name + "; allowed: a separate output");
            }
        }
        for (std::size_t j = i + 1; j < outputs.size(); ++j) {
            if (share_elements(*outputs[i].t, *outputs[j].t)) {
                fail(call, std::string(outputs[i].name) + " overlaps " + outputs[j].name + "; allowed: separate outputs");
            }
        }
    }
}

}  // namespace

std::optional<AttentionForwardCall> attention_forward_call(const char* call, const Tensor& q, const Tensor& k, const Tensor& v,
                                                           const AttentionHeads& heads, const Tensor& o, const Tensor& lse) {
    const AttentionGeometry g = geometry(call, q, heads);
    check_matrix(call, q, "q", q.rows, q.cols);
    check_matrix(call, k, "k", q.rows, kv_cols(g));
    check_matrix(call, v, "v", q.rows, kv_cols(g));
    check_matrix(call, o, "o", q.rows, q.cols);
    check_lse(call, lse, g);
    if (q.rows == 0) return std::nullopt;
    for (const Named& n : {Named{&q, "q"}, Named{&k, "k"}, Named{&v, "v"}, Named{&o, "o"}}) check_buffer(call, n.t->data, n.name, 2);
    check_buffer(call, lse.data, "lse", alignof(float));
    check_apart(call, {{&o, "o"}, {&lse, "lse"}}, {{&q, "q"}, {&k, "k"}, {&v, "v"}});
    return AttentionForwardCall{g, rows_of(q), rows_of(k), rows_of(v), rows_of(o), static_cast<float*>(lse.data)};
}

std::optional<AttentionBackwardCall> attention_backward_call(const char* call, const Tensor& q, const Tensor& k,
                                                             const Tensor& v, const Tensor& o, const Tensor& d_o,
                                                             const Tensor& lse, const AttentionHeads& heads,
                                                             const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                                             const Workspace& workspace) {
    const AttentionGeometry g = geometry(call, q, heads);
    const std::vector<Named> inputs{{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}, {&d_o, "d_o"}};
    const std::vector<Named> outputs{{&dq, "dq"}, {&dk, "dk"}, {&dv, "dv"}};
    // q, o, d_o and dq: q's columns; k, v, dk and dv: the key/value heads' (by position: a caller may pass one tensor twice).
    const std::size_t input_cols[] = {q.cols, kv_cols(g), kv_cols(g), q.cols, q.cols};
    const std::size_t output_cols[] = {q.cols, kv_cols(g), kv_cols(g)};
    for (std::size_t i = 0; i < inputs.size(); ++i) check_matrix(call, *inputs[i].t, inputs[i].name, q.rows, input_cols[i]);
    for (std::size_t i = 0; i < outputs.size(); ++i) check_matrix(call, *outputs[i].t, outputs[i].name, q.rows, output_cols[i]);
    check_lse(call, lse, g);
    if (q.rows == 0) return std::nullopt;
    for (const Named& n : inputs) check_buffer(call, n.t->data, n.name, 2);
    for (const Named& n : outputs) check_buffer(call, n.t->data, n.name, 2);
    check_buffer(call, lse.data, "lse", alignof(float));
    std::vector<Named> read = inputs;
    read.push_back({&lse, "lse"});
    check_apart(call, outputs, read);
    float* scratch = nullptr;
    if (attention_grouped(g)) {
        check_workspace(call, workspace.data, workspace.bytes, workspace_bytes(g), "attention_backward_workspace_bytes");
        // The tensor cores' float32 tiles load and store from 32-byte boundaries.
        check_buffer(call, workspace.data, "workspace", 32);
        const Tensor ws = input(workspace.data, DType::Float32, 1, workspace_bytes(g) / sizeof(float));
        std::vector<Named> every = read;
        every.insert(every.end(), outputs.begin(), outputs.end());
        for (const Named& n : every) {
            if (overlap(ws.data, tensor_bytes(ws), n.t->data, tensor_bytes(*n.t))) {
                fail(call, std::string("workspace overlaps ") + n.name + "; allowed: scratch of its own");
            }
        }
        scratch = static_cast<float*>(workspace.data);
    }
    return AttentionBackwardCall{g,           rows_of(q),  rows_of(k),  rows_of(v),  rows_of(o), rows_of(d_o),
                                 rows_of(dq), rows_of(dk), rows_of(dv), static_cast<const float*>(lse.data), scratch};
}

std::optional<AttentionForwardCall> attention_forward_current_scale_call(const char* call, const Tensor& q, const Tensor& k,
                                                                         const Tensor& v, const AttentionHeads& heads,
                                                                         const Tensor& o, const Tensor& lse,
                                                                         const CurrentScaleTarget& target, CurrentScaleCall& fresh) {
    std::optional<AttentionForwardCall> a = attention_forward_call(call, q, k, v, heads, o, lse);
    fresh = checked_current_scale_target(call, target, o, "o", {{q, "q"}, {k, "k"}, {v, "v"}, {lse, "lse"}});
    return a;
}

std::optional<AttentionBackwardCall> attention_backward_current_scale_call(
    const char* call, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o, const Tensor& lse,
    const AttentionHeads& heads, const Tensor& dq, const Tensor& dk, const Tensor& dv, const Workspace& workspace,
    const CurrentScaleTarget& target, CurrentScaleCall& fresh) {
    std::optional<AttentionBackwardCall> a = attention_backward_call(call, q, k, v, o, d_o, lse, heads, dq, dk, dv, workspace);
    fresh = checked_current_scale_target(call, target, dq, "dq",
                                         {{dk, "dk"}, {dv, "dv"}, {q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {d_o, "d_o"}, {lse, "lse"}},
                                         workspace);
    return a;
}

}  // namespace detail

std::size_t attention_backward_workspace_bytes(std::size_t rows, std::size_t cols, const AttentionHeads& heads) {
    const std::size_t kv_heads = heads.kv_heads == 0 ? heads.heads : heads.kv_heads;
    if (heads.seq == 0 || heads.heads == 0 || rows % heads.seq != 0 || cols % heads.heads != 0 || kv_heads > heads.heads ||
        heads.heads % kv_heads != 0) {
        return 0;  // the call itself says why it refuses these
    }
    detail::AttentionGeometry g;
    g.batch = rows / heads.seq;
    g.seq = heads.seq;
    g.heads = heads.heads;
    g.kv_heads = kv_heads;
    g.head_dim = cols / heads.heads;
    g.padded_seq = (g.seq + detail::kAttentionTile - 1) / detail::kAttentionTile * detail::kAttentionTile;
    return detail::workspace_bytes(g);
}

}  // namespace tewb::kernels
