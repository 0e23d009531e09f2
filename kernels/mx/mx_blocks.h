#pragma once

// One block of a microscaling cast, one run of the Hadamard transform: the work of one GPU thread and of one step of
// the host twin's loop, written once. `Numbers` supplies what each side converts with (a load in x's dtype, the FP8
// cast, the E4M3 decode): CUDA's conversions in mx.cu, host_numbers.h's definitions of them in mx_host.cpp.
#include <cstddef>
#include <cstdint>

#include "mx/mx_call.h"
#include "mx/mx_math.h"

namespace tewb::kernels::detail::mx {

// x's value at (row, col) of an output: x itself, or its transpose.
template <typename Numbers>
TEWB_HOST_DEVICE inline float input_value(const void* x, DType dtype, std::size_t x_cols, bool transposed, std::size_t row,
                                          std::size_t col) {
    return Numbers::load(x, dtype, transposed ? col * x_cols + row : row * x_cols + col);
}

// MXFP8: scale entry (row, block) of `o` in its padded layout (a padding entry is written 0); returns the block's
// largest |v| bits (0 for padding).
template <typename Numbers>
TEWB_HOST_DEVICE inline std::uint32_t mxfp8_block(const Mxfp8CastCall& c, const MxOutput& o, bool transposed, std::size_t row,
                                                  std::size_t block) {
    const std::size_t at = mx_scale_offset(row, block, o.scale_cols);
    const std::size_t blocks = (o.cols + kMxfp8BlockSize - 1) / kMxfp8BlockSize;
    if (row >= o.rows || block >= blocks) {
        o.scales[at] = 0;
        return 0;
    }
    const std::size_t begin = block * kMxfp8BlockSize;
    const std::size_t end = begin + kMxfp8BlockSize < o.cols ? begin + kMxfp8BlockSize : o.cols;
    std::uint32_t amax = 0;
    for (std::size_t col = begin; col < end; ++col) {
        const std::uint32_t bits = abs_bits(input_value<Numbers>(c.x, c.x_dtype, c.cols, transposed, row, col));
        amax = bits > amax ? bits : amax;
    }
    const std::uint8_t code = mxfp8_scale_code(amax, c.emax);
    const float factor = mxfp8_encode_factor(code);
    for (std::size_t col = begin; col < end; ++col) {
        const float scaled = input_value<Numbers>(c.x, c.x_dtype, c.cols, transposed, row, col) * factor;
        o.data[row * o.cols + col] = Numbers::fp8(scaled, c.type);
    }
    o.scales[at] = code;
    return amax;
}

// NVFP4: scale entry (row, block) of `o`, its values packed two to a byte (a padding entry is written 0). The block's
// amax is over its 16 values, or over its 16 × 16 tile of x (the same tile for both outputs) with tiles_16x16.
// `random_base`: the stream position of the output's value 0 (stochastic rounding).
template <typename Numbers>
TEWB_HOST_DEVICE inline void nvfp4_block(const Nvfp4CastCall& c, const MxOutput& o, bool transposed, std::size_t row,
                                         std::size_t block, float s_enc, float s_dec, std::uint64_t random_base) {
    const std::size_t at = mx_scale_offset(row, block, o.scale_cols);
    const std::size_t blocks = (o.cols + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
    if (row >= o.rows || block >= blocks) {
        o.scales[at] = 0;
        return;
    }
    const std::size_t begin = block * kNvfp4BlockSize;
    const std::size_t end = begin + kNvfp4BlockSize < o.cols ? begin + kNvfp4BlockSize : o.cols;
    std::size_t first_row = row;
    std::size_t last_row = row + 1;
    if (c.options.tiles_16x16) {
        first_row = row / kNvfp4BlockSize * kNvfp4BlockSize;
        last_row = first_row + kNvfp4BlockSize < o.rows ? first_row + kNvfp4BlockSize : o.rows;
    }
    std::uint32_t amax = 0;
    for (std::size_t r = first_row; r < last_row; ++r) {
        for (std::size_t col = begin; col < end; ++col) {
            const std::uint32_t bits = abs_bits(input_value<Numbers>(c.x, c.x_dtype, c.cols, transposed, r, col));
            amax = bits > amax ? bits : amax;
        }
    }
    const std::uint8_t scale_code = Numbers::fp8(nvfp4_block_scale_input(float_of(amax), s_enc), Fp8Type::E4M3);
    const float factor = nvfp4_value_factor(Numbers::e4m3_value(scale_code), s_dec);
    const std::size_t row_bytes = (o.cols + 1) / 2;
    for (std::size_t col = begin; col < end; col += 2) {
        std::uint8_t codes[2] = {0, 0};
        for (std::size_t k = 0; k < 2 && col + k < end; ++k) {
            const float scaled = input_value<Numbers>(c.x, c.x_dtype, c.cols, transposed, row, col + k) * factor;
            codes[k] = c.options.stochastic_rounding
                           ? e2m1_stochastic(scaled, random_bits(c.options.seed, random_base + row * o.cols + col + k))
                           : e2m1_nearest(scaled);
        }
        o.data[row * row_bytes + col / 2] = static_cast<std::uint8_t>(codes[0] | (codes[1] << 4));
    }
    o.scales[at] = scale_code;
}

// The transform of the 16 values of row `row` starting at column 16 · `chunk` (read before any is written: in place
// is safe).
template <typename Numbers>
TEWB_HOST_DEVICE inline void hadamard_chunk(const HadamardCall& c, std::size_t row, std::size_t chunk) {
    float x[16];
    float y[16];
    const std::size_t first = row * c.cols + chunk * 16;
    for (std::size_t i = 0; i < 16; ++i) x[i] = Numbers::load(c.x, c.x_dtype, first + i);
    hadamard16_values(x, c.signs, y);
    for (std::size_t i = 0; i < 16; ++i) Numbers::store(c.out, c.out_dtype, first + i, y[i]);
}

}  // namespace tewb::kernels::detail::mx
