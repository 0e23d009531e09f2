#include <cstdint>
#include <string>

#include "amax/current_scale_target.h"
#include "attention/rotary_call.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

std::string shape_of(const Tensor& t) {
    return "[" + std::to_string(t.rows) + ", " + std::to_string(t.cols) + "]";
}

// x [batch * seq, heads * head_dim] split as RotaryHeads says: whole sequences, whole heads, an even head_dim.
void check_layout(const char* call, const Tensor& x, const RotaryHeads& h) {
    check_dims(call, x.rows, x.cols);
    if (h.seq == 0) fail(call, "seq = 0; allowed: at least 1");
    if (h.heads == 0) fail(call, "heads = 0; allowed: at least 1");
    if (x.rows % h.seq != 0) {
        fail(call, "x is " + shape_of(x) + ": " + std::to_string(x.rows) +
                       " rows are not whole sequences of seq = " + std::to_string(h.seq) + " (rows = batch * seq)");
    }
    if (x.cols % h.heads != 0) {
        fail(call, "x is " + shape_of(x) + ": " + std::to_string(x.cols) + " columns are not heads = " + std::to_string(h.heads) +
                       " heads of one width (cols = heads * head_dim)");
    }
    const std::size_t head_dim = x.cols / h.heads;
    if (head_dim % 2 != 0) {
        fail(call, "head_dim = " + std::to_string(head_dim) +
                       " (x's columns / heads) is odd; allowed: even (pairs (i, i + head_dim / 2))");
    }
    if (h.rotated_heads > h.heads) {
        fail(call, "rotated_heads = " + std::to_string(h.rotated_heads) + "; allowed: 0 to heads = " + std::to_string(h.heads));
    }
}

// cos or sin: float32 [seq_table >= seq, head_dim / 2].
void check_table(const char* call, const Tensor& t, const char* name, std::size_t seq, std::size_t half) {
    if (t.dtype != DType::Float32) {
        fail(call, std::string(name) + " has dtype " + std::string(to_string(t.dtype)) + "; allowed: float32");
    }
    if (t.rows < seq || t.cols != half) {
        fail(call, std::string(name) + " is " + shape_of(t) + "; allowed: [at least seq = " + std::to_string(seq) +
                       ", head_dim / 2 = " + std::to_string(half) + "]");
    }
}

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a);
    const auto b0 = reinterpret_cast<std::uintptr_t>(b);
    return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

std::size_t bytes_of(const Tensor& t) {
    return t.rows * t.cols * element_size(t.dtype);
}

}  // namespace

std::optional<RotaryCall> rotary_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                      const RotaryHeads& heads, const Tensor& y) {
    const RotaryCall a{x, cos, sin, heads, y};
    check_layout(call, a.x, a.heads);
    check_float_or_bf16(call, a.x.dtype, "x");
    check_same_dtype(call, a.y.dtype, "y", a.x.dtype, "x");
    check_shape(call, a.y, "y", a.x.rows, a.x.cols);
    const std::size_t half = a.x.cols / a.heads.heads / 2;
    check_table(call, a.cos, "cos", a.heads.seq, half);
    check_table(call, a.sin, "sin", a.heads.seq, half);
    if (a.x.rows == 0 || a.x.cols == 0) return std::nullopt;
    check_buffer(call, a.x.data, "x", element_size(a.x.dtype));
    check_buffer(call, a.y.data, "y", element_size(a.x.dtype));
    check_buffer(call, a.cos.data, "cos", alignof(float));
    check_buffer(call, a.sin.data, "sin", alignof(float));
    const std::size_t y_bytes = bytes_of(a.y);
    if (overlaps(a.y.data, y_bytes, a.x.data, bytes_of(a.x))) fail(call, "y overlaps x; allowed: a separate output");
    if (overlaps(a.y.data, y_bytes, a.cos.data, bytes_of(a.cos))) fail(call, "y overlaps cos; allowed: a separate output");
    if (overlaps(a.y.data, y_bytes, a.sin.data, bytes_of(a.sin))) fail(call, "y overlaps sin; allowed: a separate output");
    return a;
}

std::optional<RotaryCall> rotary_current_scale_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                                    const RotaryHeads& heads, const Tensor& y, const CurrentScaleTarget& target) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, y, "y", {{x, "x"}, {cos, "cos"}, {sin, "sin"}});
    std::optional<RotaryCall> a = rotary_call(call, x, cos, sin, heads, y);
    if (a) a->fresh = t;
    return a;
}

}  // namespace tewb::kernels::detail
