#ifdef TEWB_FUSED_CUDA

// The rotary embeddings' kernel against the reference ops' composition (TeOps::rotary, LibTorch on the GPU),
// forward and inverse, with the copied heads exact and the inverse undoing the forward.

#include "core/selftest/SelfTestChecks.h"

#include "core/model/Rotary.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/rotary.h"

namespace tewb::selftest {

namespace {

struct RotaryCase {
    std::int64_t batch;
    std::int64_t seq;
    std::int64_t heads;
    std::int64_t rotated;
    std::int64_t head_dim;
    std::int64_t offset;  // elements x and y start past a 16-byte boundary (the pair-at-a-time path)
};

kernels::Tensor matrix(const at::Tensor& t) {
    return kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), static_cast<std::size_t>(t.size(0) * t.size(1)),
                          static_cast<std::size_t>(t.size(2) * t.size(3)));
}

// A [batch, seq, heads, head_dim] tensor of `io` starting `offset` elements into its own buffer, filled with NaN.
at::Tensor shifted(const RotaryCase& c, at::ScalarType io) {
    const std::int64_t n = c.batch * c.seq * c.heads * c.head_dim;
    return poisoned({n + c.offset}, io).narrow(0, c.offset, n).view({c.batch, c.seq, c.heads, c.head_dim});
}

at::Tensor run_kernel(const at::Tensor& x, const RotaryTables& t, const RotaryCase& c, bool inverse) {
    at::Tensor y = shifted(c, x.scalar_type());
    const kernels::RotaryHeads heads{static_cast<std::size_t>(c.seq), static_cast<std::size_t>(c.heads),
                                     static_cast<std::size_t>(c.rotated), inverse};
    kernels::rotary(matrix(x), kernel_tensor(t.cos), kernel_tensor(t.sin), heads, matrix(y), kernel_stream());
    return y;
}

void rotary_case(Checks& check, at::ScalarType io, const RotaryCase& c) {
    const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string shape = shape_text(c.batch * c.seq, c.heads * c.head_dim);
    std::string dtype = dtype_name(io);
    dtype += ", ";
    dtype += std::to_string(c.rotated);
    dtype += c.offset == 0 ? " heads turned" : " heads turned, unaligned";
    at::Tensor x = shifted(c, io);
    x.copy_(at::randn({c.batch, c.seq, c.heads, c.head_dim}, cuda()));
    RotaryTables t = rotary_tables(c.seq + 3, c.head_dim, 10000.0);  // rows past seq are not read
    t.cos = t.cos.to(at::kCUDA);
    t.sin = t.sin.to(at::kCUDA);
    const at::Tensor y = run_kernel(x, t, c, false);
    check.relative("rotary", "y", shape, dtype, y, reference_ops().rotary(x, t.cos, t.sin, c.rotated, false), bound);
    const at::Tensor back = run_kernel(y, t, c, true);
    check.relative("rotary", "inverse y", shape, dtype, back, reference_ops().rotary(y, t.cos, t.sin, c.rotated, true), bound);
    check.relative("rotary", "inverse of forward", shape, dtype, back, x, bound);
    if (c.rotated < c.heads) {
        const std::int64_t copied = c.heads - c.rotated;
        check.exact("rotary", "copied heads", shape, dtype, y.narrow(2, c.rotated, copied), x.narrow(2, c.rotated, copied));
    }
}

// The hand-over forms' inputs: the tables on the GPU, the inverse turn's heads, a random x of `io`.
struct InverseSetUp {
    RotaryTables tables;
    kernels::RotaryHeads heads;
    at::Tensor x;
};

InverseSetUp inverse_set_up(const RotaryCase& c, at::ScalarType io) {
    RotaryTables t = rotary_tables(c.seq, c.head_dim, 10000.0);
    t.cos = t.cos.to(at::kCUDA);
    t.sin = t.sin.to(at::kCUDA);
    const kernels::RotaryHeads heads{static_cast<std::size_t>(c.seq), static_cast<std::size_t>(c.heads),
                                     static_cast<std::size_t>(c.rotated), /*inverse=*/true};
    at::Tensor x = shifted(c, io);
    x.copy_(at::randn({c.batch, c.seq, c.heads, c.head_dim}, cuda()));
    return {t, heads, x};
}

// The amax hand-off (rotary_current_scale: the inverse rotation as llama's qkv output gradient) against rotary and then
// abs_max_current_scale of y on the same GPU, bit for bit, twice (the second time with x a thousand times smaller).
void rotary_current_scale_case(Checks& check, at::ScalarType io, const RotaryCase& c) {
    const std::string shape = shape_text(c.batch * c.seq, c.heads * c.head_dim);
    const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).to(at::kFloat).view(at::kInt); };
    const InverseSetUp u = inverse_set_up(c, io);
    const RotaryTables& t = u.tables;
    const kernels::RotaryHeads& heads = u.heads;
    at::Tensor x = u.x;
    for (const bool second : {false, true}) {
        if (second) x.div_(1000);
        const at::Tensor want_y = run_kernel(x, t, c, true);
        at::Tensor want = at::full({3}, 0.5f, cuda()), got = at::full({3}, 0.5f, cuda());
        const kernels::CurrentScaleTarget w = current_scale_target(want, 57344.0f);
        kernels::abs_max_current_scale(matrix(want_y), w.numerator, w.scale, w.scale_inv, w.staging, kernel_stream());
        at::Tensor y = shifted(c, io);
        kernels::rotary_current_scale(matrix(x), kernel_tensor(t.cos), kernel_tensor(t.sin), heads, matrix(y),
                                      current_scale_target(got, 57344.0f), kernel_stream());
        std::string dtype = dtype_name(io) + (c.offset == 0 ? "" : ", unaligned") + (second ? ", second call, x / 1000" : "");
        check.exact("rotary_current_scale", "y = rotary's (inverse)", shape, dtype, bits(y), bits(want_y));
        check.exact("rotary_current_scale", "scale, scale_inv, staging = abs_max_current_scale's of y", shape, dtype, bits(got),
                    bits(want));
    }
}

// rotary_quantize (delayed scaling's FP8 form of the inverse rotation: llama's qkv output gradient) against rotary and then
// cast_transpose_to_fp8 of y on the same GPU, bit for bit: y, the FP8 bytes (E5M2, the gradients' format), their
// transposed copy and the amax combined into a given one. The seed's shape takes the tiled kernel's one launch; the
// others (rows not a multiple of 8, a head_dim of 6, unaligned) the two-launch path.
void rotary_quantize_case(Checks& check, at::ScalarType io, const RotaryCase& c) {
    const std::int64_t rows = c.batch * c.seq, cols = c.heads * c.head_dim;
    const std::string shape = shape_text(rows, cols);
    const auto bits = [](const at::Tensor& t) { return t.reshape({-1}).to(at::kFloat).view(at::kInt); };
    const InverseSetUp u = inverse_set_up(c, io);
    const RotaryTables& t = u.tables;
    const kernels::RotaryHeads& heads = u.heads;
    at::Tensor x = u.x;
    // scale and amax in one buffer, 16 bytes apart; each side its own.
    const auto fp8_of = [&](const at::Tensor& data, const at::Tensor& transposed, const at::Tensor& scalars) {
        kernels::Tensor f = kernels::input(data.data_ptr(), kernels::DType::Float8E5M2, static_cast<std::size_t>(rows),
                                           static_cast<std::size_t>(cols));
        f.transposed = transposed.data_ptr();
        f.scale = scalars.data_ptr<float>();
        f.amax = scalars.data_ptr<float>() + 4;
        return f;
    };
    const auto scalars = [&] {
        at::Tensor s = at::zeros({8}, cuda().dtype(at::kFloat));
        s.narrow(0, 0, 1).fill_(1024.0f);
        s.narrow(0, 4, 1).fill_(0.25f);
        return s;
    };
    const at::Tensor want_y = run_kernel(x, t, c, true);
    const at::Tensor want_q = poisoned_fp8({rows, cols}), want_t = poisoned_fp8({cols, rows}), want_s = scalars();
    kernels::cast_transpose_to_fp8(matrix(want_y), fp8_of(want_q, want_t, want_s), kernel_stream());
    at::Tensor y = shifted(c, io);
    const at::Tensor q = poisoned_fp8({rows, cols}), q_t = poisoned_fp8({cols, rows}), s = scalars();
    kernels::rotary_quantize(matrix(x), kernel_tensor(t.cos), kernel_tensor(t.sin), heads, matrix(y), fp8_of(q, q_t, s),
                             kernel_stream());
    const std::string dtype = dtype_name(io) + (c.offset == 0 ? "" : ", unaligned");
    check.exact("rotary_quantize", "y = rotary's (inverse)", shape, dtype, bits(y), bits(want_y));
    check.exact("rotary_quantize", "FP8 bytes = cast_transpose_to_fp8's of y", shape, dtype, q, want_q);
    check.exact("rotary_quantize", "transposed copy = cast_transpose_to_fp8's", shape, dtype, q_t, want_t);
    check.exact("rotary_quantize", "amax = cast_transpose_to_fp8's", shape, dtype, bits(s), bits(want_s));
}

}  // namespace

// The seed's Llama attention (32 x 96 tokens, 12 query heads of 64 and 4 key/value heads: the fused qkv's 20
// heads, 16 turned), every head turned, a head_dim of 6 (3 pairs: not whole 16-byte vectors) and x one element
// past alignment (the pair-at-a-time loads); each also in the amax hand-off's form and in rotary_quantize's.
void rotaries(Checks& check) {
    const RotaryCase cases[] = {{32, 96, 20, 16, 64, 0}, {2, 7, 4, 4, 128, 0}, {3, 5, 3, 2, 6, 0}, {2, 9, 5, 3, 32, 1}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const RotaryCase& c : cases) {
            check.attempt("rotary", shape_text(c.batch * c.seq, c.heads * c.head_dim), dtype_name(io),
                          [&] { rotary_case(check, io, c); });
            check.attempt("rotary_current_scale", shape_text(c.batch * c.seq, c.heads * c.head_dim), dtype_name(io),
                          [&] { rotary_current_scale_case(check, io, c); });
            check.attempt("rotary_quantize", shape_text(c.batch * c.seq, c.heads * c.head_dim), dtype_name(io),
                          [&] { rotary_quantize_case(check, io, c); });
        }
    }
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
