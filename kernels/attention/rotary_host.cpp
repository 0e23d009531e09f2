// The rotary embeddings on the host: rotary.cu's float32 operations in its order, row by row.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "amax/current_scale_host.h"
#include "attention/rotary_call.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/rotary.h"

namespace tewb::kernels::host {

namespace {

// One head's pairs: a = x[0 .. half), b = x[half .. 2 half), turned by (c, s) into y, as the kernel's
// fmaf(a, c, -(b * s)) and fmaf(b, c, a * s).
void turn(const float* a, const float* b, const float* c, const float* s, std::size_t half, float sign, float* ya, float* yb) {
    for (std::size_t i = 0; i < half; ++i) {
        const float si = sign * s[i];
        ya[i] = std::fma(a[i], c[i], -(b[i] * si));
        yb[i] = std::fma(b[i], c[i], a[i] * si);
    }
}

// The entry points' work after their checks (a.fresh.scale set: y's scale from its largest |value| as stored), without
// counting a launch.
void turn_rows(const detail::RotaryCall& a) {
    const Tensor& x = a.x;
    const Tensor& y = a.y;
    const RotaryHeads& heads = a.heads;
    const Tensor& cos = a.cos;
    const Tensor& sin = a.sin;
    detail::StoredAmax fresh(a.fresh, y.data, x.dtype);
    const std::size_t rows = x.rows;
    const std::size_t cols = x.cols;
    const std::size_t head_dim = cols / heads.heads;
    const std::size_t half = head_dim / 2;
    const std::size_t element = element_size(x.dtype);
    const float sign = heads.inverse ? -1.0f : 1.0f;
    const auto* cos_table = static_cast<const float*>(cos.data);
    const auto* sin_table = static_cast<const float*>(sin.data);
    detail::parallel_for(rows, cols * 4, [&](std::size_t first, std::size_t last) {
        std::vector<float> in(head_dim), out(head_dim), scratch(a.fresh.scale != nullptr ? cols : 0);
        std::uint32_t stored = 0;
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t p = row % heads.seq;
            const float* c = cos_table + p * half;
            const float* s = sin_table + p * half;
            for (std::size_t h = 0; h < heads.rotated_heads; ++h) {
                const std::size_t at = row * cols + h * head_dim;
                detail::load_floats(x.data, x.dtype, at, head_dim, in.data());
                turn(in.data(), in.data() + half, c, s, half, sign, out.data(), out.data() + half);
                detail::store_floats(y.data, x.dtype, at, head_dim, out.data());
            }
            // The heads that do not turn (a fused qkv's values): their bits, as the kernel's raw copy.
            const std::size_t copied = (heads.heads - heads.rotated_heads) * head_dim;
            const std::size_t from = (row * cols + heads.rotated_heads * head_dim) * element;
            std::memcpy(static_cast<std::uint8_t*>(y.data) + from, static_cast<const std::uint8_t*>(x.data) + from,
                        copied * element);
            stored = std::max(stored, fresh.of(row * cols, cols, scratch.data()));
        }
        fresh.combine(stored);
    });
    fresh.apply();
}

void run(const detail::RotaryCall& a) {
    turn_rows(a);
    detail::note_launch();
}


}  // namespace

void rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y, Stream) {
    if (const auto a = detail::rotary_call("tewb::kernels::host::rotary", x, cos, sin, heads, y)) run(*a);
}

void rotary_current_scale(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                          const CurrentScaleTarget& target, Stream stream) {
    if (const auto a = detail::rotary_current_scale_call("tewb::kernels::host::rotary_current_scale", x, cos, sin, heads, y, target)) {
        run(*a);
    } else {  // no work: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(y, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

// One launch where the CUDA path's tiled kernel takes the call, rotary's and cast_transpose_to_fp8's elsewhere.
void rotary_quantize(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                     const Tensor& fp8, Stream stream) {
    const auto a = detail::rotary_quantize_call("tewb::kernels::host::rotary_quantize", x, cos, sin, heads, y, fp8);
    if (!a) return;
    if (!detail::rotary_quantize_fits(*a)) {
        run(*a);
        host::cast_transpose_to_fp8(input(a->y.data, a->y.dtype, a->y.rows, a->y.cols), fp8, stream);
        return;
    }
    turn_rows(*a);
    detail::quantize_stored(a->y.data, a->y.dtype, a->y.rows, a->y.cols, a->fp8);
    detail::note_launch();
}

}  // namespace tewb::kernels::host
