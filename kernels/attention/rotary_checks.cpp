#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "amax/current_scale_target.h"
#include "attention/rotary_call.h"
#include "common/alignment.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

// x [batch * seq, heads * head_dim] split as RotaryHeads says: whole sequences, whole heads, an even head_dim.
void check_layout(const char* call, const Tensor& x, const RotaryHeads& h) {
    check_dims(call, x.rows, x.cols);
    if (h.seq == 0) fail(call, "seq = 0; allowed: at least 1");
    if (h.heads == 0) fail(call, "heads = 0; allowed: at least 1");
    if (x.rows % h.seq != 0) {
        fail(call, "x is " + shape_text(x) + ": " + std::to_string(x.rows) +
                       " rows are not whole sequences of seq = " + std::to_string(h.seq) + " (rows = batch * seq)");
    }
    if (x.cols % h.heads != 0) {
        fail(call, "x is " + shape_text(x) + ": " + std::to_string(x.cols) +
                       " columns are not heads = " + std::to_string(h.heads) + " heads of one width (cols = heads * head_dim)");
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
        fail(call, std::string(name) + " is " + shape_text(t) + "; allowed: [at least seq = " + std::to_string(seq) +
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

std::optional<RotaryCall> rotary_quantize_call(const char* call, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                               const RotaryHeads& heads, const Tensor& y, const Tensor& fp8) {
    if (fp8.data == nullptr && x.rows * x.cols > 0) fail(call, "fp8 is null (the FP8 gradient is this call's output)");
    const Fp8Output q = fp8_output(call, fp8, "fp8", x.rows, x.cols);
    std::optional<RotaryCall> a = rotary_call(call, x, cos, sin, heads, y);
    if (!a) return a;
    if (q.transposed == nullptr) fail(call, "fp8.transposed is null (the FP8 Linear's wgrad reads it)");
    check_fp8_output(call, q);  // the scale required too
    const std::size_t n = x.rows * x.cols;
    if (overlap(q.data, n, q.transposed, n)) fail(call, "fp8 and fp8.transposed overlap");
    const std::pair<Tensor, const char*> others[] = {{x, "x"}, {cos, "cos"}, {sin, "sin"}, {y, "y"}};
    const std::pair<const void*, const char*> bytes[] = {{q.data, "fp8"}, {q.transposed, "fp8.transposed"}};
    for (const auto& [t, other] : others) {
        for (const auto& [b, name] : bytes) {
            if (overlap(b, n, t.data, bytes_of(t))) fail(call, std::string(name) + " and " + other + " overlap");
        }
    }
    // The scale is read while the kernel writes y and the bytes, amax written by its blocks: apart from them all.
    const std::pair<const float*, const char*> scalars[] = {{q.scale, "fp8.scale"}, {q.amax, "fp8.amax"}};
    for (const auto& [f, name] : scalars) {
        if (f == nullptr) continue;
        for (const auto& [b, bytes_name] : bytes) {
            if (overlap(f, sizeof(float), b, n)) fail(call, std::string(name) + " lies in " + bytes_name);
        }
        for (const auto& [t, other] : others) {
            if (overlap(f, sizeof(float), t.data, bytes_of(t))) fail(call, std::string(name) + " lies in " + other);
        }
    }
    if (q.amax != nullptr && q.amax == q.scale) fail(call, "fp8.amax and fp8.scale are the same float");
    a->fp8 = q;
    return a;
}

bool rotary_quantize_fits(const RotaryCall& a) {
    const std::size_t width = 16 / element_size(a.x.dtype);
    const std::size_t half = a.x.cols / a.heads.heads / 2;
    // The tile count (rows + 63) / 64 in an int.
    const bool countable = a.x.rows <= static_cast<std::size_t>(std::numeric_limits<int>::max()) - 63;
    return countable && a.x.rows % 8 == 0 && half % width == 0 && aligned(a.x.data, 16) && aligned(a.y.data, 16) &&
           aligned(a.fp8.data, width) && aligned(a.fp8.transposed, 8);
}

}  // namespace tewb::kernels::detail
