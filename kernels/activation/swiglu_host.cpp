// SwiGLU on the host: swiglu.cu's float32 expressions, in its order, row by row.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "activation/activation_call.h"
#include "amax/current_scale_host.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::host {

using detail::Fp8Output;

namespace {

float sigmoid(float a) {
    return 1.0f / (1.0f + std::exp(-a));
}

// One row's float32 gradients from dy, the gate a and the up projection u, as the kernel writes them.
void swiglu_gradients(const float* dy, const float* a, const float* u, std::size_t cols, float* d_gate, float* d_up) {
    for (std::size_t c = 0; c < cols; ++c) {
        const float s = sigmoid(a[c]);
        d_gate[c] = dy[c] * u[c] * s * std::fma(a[c], 1.0f - s, 1.0f);  // the kernel fuses this one (__fmaf_rn)
        d_up[c] = dy[c] * (a[c] * s);
    }
}

void combine_amax(const Fp8Output* fp8, const std::atomic<std::uint32_t>& bits) {
    if (fp8 != nullptr && fp8->amax != nullptr) {
        *fp8->amax = detail::bits_float(std::max(detail::float_bits(*fp8->amax), bits.load()));
    }
}

// q[base + c] = fp8(v[c] * s), c < n; returns the largest |v| as bits.
std::uint32_t quantize_row(const float* v, std::size_t n, float s, Fp8Type type, std::uint8_t* q, std::size_t base) {
    std::uint32_t local = 0;
    for (std::size_t c = 0; c < n; ++c) {
        q[base + c] = detail::float_to_fp8(v[c] * s, type);
        local = std::max(local, detail::abs_bits(v[c]));
    }
    return local;
}

// Both forward entry points' work after their checks.
void forward(const detail::SwigluForwardCall* a) {
    const Tensor& in = a->in;
    const Tensor& out = a->out;
    const Fp8Output* fp8 = detail::wanted(a->fp8);
    const std::size_t rows = in.rows;
    const std::size_t cols = in.cols / 2;
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    std::atomic<std::uint32_t> amax_bits{0};
    detail::StoredAmax fresh_amax(a->fresh, out.data, out.dtype);
    detail::parallel_for(rows, cols * 24, [&](std::size_t first, std::size_t last) {
        std::vector<float> a(cols), u(cols);
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t row = first; row < last; ++row) {
            detail::load_floats(in.data, in.dtype, row * 2 * cols, cols, a.data());
            detail::load_floats(in.data, in.dtype, row * 2 * cols + cols, cols, u.data());
            for (std::size_t c = 0; c < cols; ++c) a[c] = a[c] * sigmoid(a[c]) * u[c];
            if (out.data != nullptr) detail::store_floats(out.data, out.dtype, row * cols, cols, a.data());
            if (q != nullptr) local = std::max(local, quantize_row(a.data(), cols, s, type, q, row * cols));
            stored_local = std::max(stored_local, fresh_amax.of(row * cols, cols, u.data()));
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    if (q != nullptr) combine_amax(fp8, amax_bits);
    fresh_amax.apply();
    if (q != nullptr && fp8->transposed != nullptr)
        detail::transpose_bytes(q, rows, cols, static_cast<std::uint8_t*>(fp8->transposed));
    detail::note_launch();
}

// Both backward entry points' work after their checks.
void backward(const detail::SwigluBackwardCall* a) {
    const Tensor& dy = a->dy;
    const Tensor& in = a->in;
    const Tensor& din = a->din;
    const Fp8Output* fp8 = detail::wanted(a->fp8);
    const std::size_t rows = in.rows;
    const std::size_t cols = in.cols / 2;
    const DType dtype = in.dtype;
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    std::atomic<std::uint32_t> amax_bits{0};
    detail::StoredAmax fresh_amax(a->fresh, din.data, dtype);
    detail::parallel_for(rows, cols * 40, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(cols), a(cols), u(cols), g(2 * cols);
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * 2 * cols;
            detail::load_floats(dy.data, dtype, row * cols, cols, d.data());
            detail::load_floats(in.data, dtype, base, cols, a.data());
            detail::load_floats(in.data, dtype, base + cols, cols, u.data());
            swiglu_gradients(d.data(), a.data(), u.data(), cols, g.data(), g.data() + cols);
            if (din.data != nullptr) detail::store_floats(din.data, dtype, base, 2 * cols, g.data());
            if (q != nullptr) local = std::max(local, quantize_row(g.data(), 2 * cols, s, type, q, base));
            stored_local = std::max(stored_local, fresh_amax.of(base, 2 * cols, g.data()));
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    if (q != nullptr) combine_amax(fp8, amax_bits);
    fresh_amax.apply();
    if (q != nullptr && fp8->transposed != nullptr) {
        detail::transpose_bytes(q, rows, 2 * cols, static_cast<std::uint8_t*>(fp8->transposed));
    }
    detail::note_launch();
}

}  // namespace

void swiglu_forward(const Tensor& in, const Tensor& out, const Tensor& fp8, Stream) {
    if (const auto a = detail::swiglu_forward_call("tewb::kernels::host::swiglu_forward", in, out, fp8)) forward(&*a);
}

void swiglu_backward(const Tensor& dy, const Tensor& in, const Tensor& din, const Tensor& fp8, Stream) {
    if (const auto a = detail::swiglu_backward_call("tewb::kernels::host::swiglu_backward", dy, in, din, fp8)) backward(&*a);
}

void swiglu_forward_current_scale(const Tensor& in, const Tensor& out, const CurrentScaleTarget& target, Stream stream) {
    if (const auto a = detail::swiglu_forward_current_scale_call("tewb::kernels::host::swiglu_forward_current_scale", in, out, target)) {
        forward(&*a);
    } else {  // no elements: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void swiglu_backward_current_scale(const Tensor& dy, const Tensor& in, const Tensor& din, const CurrentScaleTarget& target,
                                   Stream stream) {
    if (const auto a = detail::swiglu_backward_current_scale_call("tewb::kernels::host::swiglu_backward_current_scale", dy, in, din,
                                                                  target)) {
        backward(&*a);
    } else {  // no elements: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(din, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels::host
