#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/fail.h"
#include "common/host_numbers.h"
#include "mx/mx_blocks.h"
#include "tewb_kernels/mx.h"

namespace tewb::kernels::host {

namespace {

struct HostNumbers {
    static float load(const void* p, DType dtype, std::size_t i) { return detail::load(p, dtype, i); }
    static void store(void* p, DType dtype, std::size_t i, float v) { detail::store(p, dtype, i, v); }
    static std::uint8_t fp8(float v, Fp8Type type) { return detail::float_to_fp8(v, type); }
    static float e4m3_value(std::uint8_t code) { return detail::fp8_to_float(code, Fp8Type::E4M3); }
};

// Every scale entry of `o` (padding included), as the kernel's threads cover them; the largest |v| bits seen.
template <typename Block>
std::uint32_t each_scale(const detail::MxOutput& o, Block&& block) {
    std::uint32_t amax = 0;
    for (std::size_t row = 0; row < mx_scale_rows(o.rows); ++row) {
        for (std::size_t b = 0; b < o.scale_cols; ++b) amax = std::max(amax, block(row, b));
    }
    detail::note_launch();
    return amax;
}

}  // namespace

void mxfp8_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, Stream) {
    const detail::Mxfp8CastCall c =
        detail::mxfp8_cast_call("tewb::kernels::host::mxfp8_cast", x, out, scales, out_transposed, scales_transposed);
    if (c.rows == 0 || c.cols == 0) return;
    const std::uint32_t amax = each_scale(c.rowwise, [&](std::size_t row, std::size_t b) {
        return detail::mx::mxfp8_block<HostNumbers>(c, c.rowwise, false, row, b);
    });
    if (c.columnwise.data != nullptr) {
        each_scale(c.columnwise, [&](std::size_t row, std::size_t b) {
            return detail::mx::mxfp8_block<HostNumbers>(c, c.columnwise, true, row, b);
        });
    }
    if (c.amax != nullptr) {
        std::uint32_t held = 0;
        std::memcpy(&held, c.amax, sizeof held);
        held = std::max(held, amax);
        std::memcpy(c.amax, &held, sizeof held);
    }
}

void nvfp4_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, const Nvfp4Cast& options, Stream) {
    const detail::Nvfp4CastCall c = detail::nvfp4_cast_call("tewb::kernels::host::nvfp4_cast", x, out, scales, out_transposed,
                                                            scales_transposed, options);
    if (c.rows == 0 || c.cols == 0) return;
    const float s_enc = detail::mx::nvfp4_encode_scale(c.global_amax[0]);
    const float s_dec = 1.0f / s_enc;
    each_scale(c.rowwise, [&](std::size_t row, std::size_t b) {
        detail::mx::nvfp4_block<HostNumbers>(c, c.rowwise, false, row, b, s_enc, s_dec, options.offset);
        return std::uint32_t{0};
    });
    c.s_dec[0] = s_dec;
    if (c.columnwise.data != nullptr) {
        const std::uint64_t base = options.offset + static_cast<std::uint64_t>(c.rows) * c.cols;
        each_scale(c.columnwise, [&](std::size_t row, std::size_t b) {
            detail::mx::nvfp4_block<HostNumbers>(c, c.columnwise, true, row, b, s_enc, s_dec, base);
            return std::uint32_t{0};
        });
    }
}

void hadamard16(const Tensor& x, const Tensor& out, std::uint16_t signs, Stream) {
    const detail::HadamardCall c = detail::hadamard16_call("tewb::kernels::host::hadamard16", x, out, signs);
    if (c.rows == 0 || c.cols == 0) return;
    for (std::size_t row = 0; row < c.rows; ++row) {
        for (std::size_t chunk = 0; chunk < c.cols / 16; ++chunk) detail::mx::hadamard_chunk<HostNumbers>(c, row, chunk);
    }
    detail::note_launch();
}

}  // namespace tewb::kernels::host
