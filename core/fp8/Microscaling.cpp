#include "core/fp8/Microscaling.h"

#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/common/Error.h"
#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8Tensor.h"
#include "tewb_kernels/mx.h"

namespace tewb {

namespace {

std::int64_t blocks_of(std::int64_t n, std::int64_t block) {
    return (n + block - 1) / block;
}

void check_2d(const at::Tensor& x, const char* what) {
    if (x.dim() != 2) {
        throw ConfigError(std::string(what) + ": a " + std::to_string(x.dim()) + "-D tensor; allowed: 2-D (rows × columns)");
    }
}

// values [rows, cols] times each element's block value (per_block [rows, ceil(cols / block)]), float32, contiguous:
// broadcast over a blocked view rather than materialising every element's factor (the emulation's hottest pattern).
at::Tensor times_blocks(const at::Tensor& values, const at::Tensor& per_block, std::int64_t block) {
    const std::int64_t rows = values.size(0);
    const std::int64_t cols = values.size(1);
    const std::int64_t blocks = per_block.size(1);
    const at::Tensor padded = cols == blocks * block ? values : at::constant_pad_nd(values, {0, blocks * block - cols}, 0.0);
    const at::Tensor product = (padded.reshape({rows, blocks, block}) * per_block.unsqueeze(-1)).reshape({rows, blocks * block});
    return cols == blocks * block ? product : product.narrow(1, 0, cols).contiguous();
}

constexpr BlockShape kMxfp8Row{1, static_cast<int>(kMxfp8Block)};
constexpr BlockShape kNvfp4Row{1, static_cast<int>(kNvfp4Block)};
constexpr BlockShape kNvfp4Tile{static_cast<int>(kNvfp4Block), static_cast<int>(kNvfp4Block)};

// max |x| per 16 × 16 tile, repeated for each of the tile's rows ([rows, ceil(cols / 16)]).
at::Tensor tile_amax(const at::Tensor& xf) {
    return block_abs_max(xf, kNvfp4Tile).repeat_interleave(kNvfp4Block, 0).narrow(0, 0, xf.size(0));
}

// 2^(code - 127) for E8M0 codes (0xFF: NaN), float32, built from the bits: code << 23 for codes 1..254, and 2^-127
// (a subnormal, bit 22) for code 0.
at::Tensor e8m0_values(const at::Tensor& codes) {
    const at::Tensor c = codes.to(at::kInt);
    at::Tensor bits = at::where(c.eq(0), at::full_like(c, 1 << 22), c.bitwise_left_shift(23));
    bits = at::where(c.eq(255), at::full_like(c, 0x7fc00000), bits);
    return bits.view(at::kFloat);
}

// The OCP shared-scale codes of a block amax: floor(log2 m) - emax clamped to [-127, 127], 0 for zero, 0xFF otherwise.
at::Tensor mxfp8_codes(const at::Tensor& amax, int emax) {
    const auto [mantissa, exponent] = at::frexp(amax);  // m = f · 2^e, f in [0.5, 1): floor(log2 m) = e - 1
    at::Tensor code = (exponent.to(at::kInt) - 1 - emax).clamp(-127, 127) + 127;
    code = at::where(amax.eq(0), at::zeros_like(code), code);
    return at::where(amax.isfinite().logical_not(), at::full_like(code, 255), code);
}

}  // namespace

MxQuantized mxfp8_quantize(const at::Tensor& x, Fp8Dtype dtype) {
    check_2d(x, "MXFP8 quantization");
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor codes = mxfp8_codes(block_abs_max(xf, kMxfp8Row), dtype == Fp8Dtype::E4M3 ? 8 : 15);
    // 1 / X = 2^(127 - code): exact in float32 for codes 0..253; NaN for a NaN block.
    const at::Tensor factor = e8m0_values(at::where(codes.eq(255), codes, 254 - codes));
    const float max = fp8_max(dtype);
    MxQuantized q;
    q.format = MxFormat::Mxfp8;
    q.dtype = dtype;
    q.block_scale = e8m0_values(codes);
    q.data = times_blocks(xf, factor, kMxfp8Block).clamp(-max, max).to(to_scalar_type(dtype));
    return q;
}

MxQuantized nvfp4_quantize(const at::Tensor& x, const at::Tensor& amax, bool tiles_16x16) {
    check_2d(x, "NVFP4 quantization");
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor a = amax.to(at::kFloat).reshape({});
    at::Tensor s_enc = at::full({}, 2688.0f, a.options()) / a;
    s_enc = at::where(s_enc.isnan(), at::full_like(s_enc, FLT_MAX), s_enc.clamp_max(FLT_MAX));
    s_enc = at::where(a.eq(0) | s_enc.eq(0), at::ones_like(s_enc), s_enc);
    const at::Tensor s_dec = at::ones_like(s_enc) / s_enc;
    const at::Tensor block_amax = tiles_16x16 ? tile_amax(xf) : block_abs_max(xf, kNvfp4Row);
    const at::Tensor per_value = s_enc * (1.0f / 6.0f);
    // E4M3 with saturation (LibTorch's cast turns out-of-range values into NaN): clamp first; a NaN stays NaN.
    const at::Tensor scale = (block_amax * per_value).clamp(-448.0, 448.0).to(at::kFloat8_e4m3fn).to(at::kFloat);
    at::Tensor factor = at::ones_like(scale) / (scale * s_dec);
    factor = at::where(factor.isnan(), factor, factor.clamp_max(FLT_MAX));
    MxQuantized q;
    q.format = MxFormat::Nvfp4;
    q.block_scale = scale;
    q.tensor_scale_inv = s_dec;
    q.data = e2m1_codes(times_blocks(xf, factor, kNvfp4Block));
    return q;
}

MxQuantized nvfp4_quantize_stochastic(const at::Tensor& x, const at::Tensor& amax, bool tiles_16x16, std::uint64_t seed,
                                      std::uint64_t offset) {
    check_2d(x, "NVFP4 quantization");
    const std::int64_t rows = x.size(0), cols = x.size(1);
    const at::Tensor xf = x.to(at::kCPU).to(at::kFloat).contiguous();
    at::Tensor a = amax.to(at::kCPU).to(at::kFloat).reshape({1}).contiguous();
    at::Tensor bytes = at::zeros({rows, (cols + 1) / 2}, at::kByte);
    at::Tensor scales = at::zeros({static_cast<std::int64_t>(kernels::mx_scale_rows(static_cast<std::size_t>(rows))),
                                   static_cast<std::int64_t>(kernels::mx_scale_cols(static_cast<std::size_t>(cols), kNvfp4Block))},
                                  at::kByte);
    at::Tensor s_dec = at::zeros({1});
    kernels::Tensor in = kernels::input(xf.data_ptr(), kernels::DType::Float32, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
    in.amax = a.data_ptr<float>();
    kernels::Tensor out = kernels::input(bytes.data_ptr(), kernels::DType::Float4E2M1x2, static_cast<std::size_t>(rows),
                                         static_cast<std::size_t>(bytes.size(1)));
    out.scale_inv = s_dec.data_ptr<float>();
    const kernels::Tensor scale_tensor = kernels::input(scales.data_ptr(), kernels::DType::Float8E4M3, static_cast<std::size_t>(scales.size(0)),
                                                        static_cast<std::size_t>(scales.size(1)));
    kernels::Nvfp4Cast options;
    options.tiles_16x16 = tiles_16x16;
    options.stochastic_rounding = true;
    options.seed = seed;
    options.offset = offset;
    kernels::host::nvfp4_cast(in, out, scale_tensor, {}, {}, options, {});
    MxQuantized q = mx_from_kernel_layout(MxFormat::Nvfp4, Fp8Dtype::E4M3, bytes, scales, rows, cols, s_dec);
    q.data = q.data.to(x.device());
    q.block_scale = q.block_scale.to(x.device());
    q.tensor_scale_inv = q.tensor_scale_inv.to(x.device());
    return q;
}

at::Tensor mx_statistics_scale(const at::Tensor& amax, MxFormat format, Fp8Dtype dtype) {
    const at::Tensor a = amax.to(at::kFloat);
    if (format == MxFormat::Mxfp8) {
        const at::Tensor codes = mxfp8_codes(a, dtype == Fp8Dtype::E4M3 ? 8 : 15);
        return e8m0_values(at::where(codes.eq(255), codes, 254 - codes));
    }
    at::Tensor s_enc = at::full_like(a, 2688.0f) / a;
    s_enc = at::where(s_enc.isnan(), at::full_like(s_enc, FLT_MAX), s_enc.clamp_max(FLT_MAX));
    return at::where(a.eq(0) | s_enc.eq(0), at::ones_like(s_enc), s_enc);
}

at::Tensor e2m1_codes(const at::Tensor& values) {
    const at::Tensor a = values.abs();
    // Thresholds between neighbours, each tie going to the even code: 0.25 -> 0, 0.75 -> 1.0, 1.25 -> 1.0, 1.75 -> 2,
    // 2.5 -> 2, 3.5 -> 4, 5 -> 4. (Seven comparisons measured 3× faster than at::bucketize on the CPU.)
    at::Tensor code = a.gt(0.25).to(at::kByte) + a.ge(0.75).to(at::kByte) + a.gt(1.25).to(at::kByte) + a.ge(1.75).to(at::kByte) +
                      a.gt(2.5).to(at::kByte) + a.ge(3.5).to(at::kByte) + a.gt(5.0).to(at::kByte);
    code = code + values.signbit().to(at::kByte) * 8;
    return at::where(values.isnan(), at::full_like(code, 7), code);
}

at::Tensor e2m1_values(const at::Tensor& codes) {
    // From the code's bits where the codes are (a table from the host would be a copy, and a device sync, per call):
    // magnitudes 0, 0.5 for codes 0, 1 and (1 + m / 2) · 2^(e − 1) above, with e the two exponent bits and m the
    // mantissa bit; bit 3 the sign (a negative zero stays -0).
    const at::Tensor c = codes.to(at::kInt);
    const at::Tensor exponent = c.bitwise_and(7).bitwise_right_shift(1);
    const at::Tensor half = c.bitwise_and(1).to(at::kFloat) * 0.5f;
    const at::Tensor power = at::ones_like(exponent).bitwise_left_shift((exponent - 1).clamp_min(0)).to(at::kFloat);
    const at::Tensor magnitude = at::where(exponent.eq(0), half, (half + 1.0f) * power);
    return at::where(c.bitwise_and(8).ne(0), -magnitude, magnitude);
}

at::Tensor mx_dequantize(const MxQuantized& q) {
    const std::int64_t block = q.format == MxFormat::Mxfp8 ? kMxfp8Block : kNvfp4Block;
    const at::Tensor values = q.format == MxFormat::Mxfp8 ? q.data.to(at::kFloat) : e2m1_values(q.data);
    at::Tensor out = times_blocks(values, q.block_scale, block);
    if (q.tensor_scale_inv.defined()) out = out * q.tensor_scale_inv;
    return out;
}

at::Tensor mx_gemm_reference(const MxQuantized& a, const MxQuantized& b) {
    const auto blockwise = [](const MxQuantized& q) {
        const std::int64_t block = q.format == MxFormat::Mxfp8 ? kMxfp8Block : kNvfp4Block;
        const at::Tensor values = q.format == MxFormat::Mxfp8 ? q.data.to(at::kFloat) : e2m1_values(q.data);
        return times_blocks(values, q.block_scale, block);
    };
    at::Tensor out = at::mm(blockwise(a), blockwise(b).t());
    if (a.tensor_scale_inv.defined() && b.tensor_scale_inv.defined()) out = out * (a.tensor_scale_inv * b.tensor_scale_inv);
    return out;
}

at::Tensor hadamard16_reference(const at::Tensor& x, std::uint16_t signs) {
    check_2d(x, "Hadamard transform");
    if (x.size(1) % 16 != 0) {
        throw ConfigError("Hadamard transform: " + std::to_string(x.size(1)) + " columns; allowed: a multiple of 16");
    }
    const at::Tensor runs = x.to(at::kFloat).reshape({x.size(0), x.size(1) / 16, 16});
    std::vector<at::Tensor> outputs;
    for (int j = 0; j < 16; ++j) {
        at::Tensor sum = at::zeros({x.size(0), x.size(1) / 16}, runs.options());
        for (int i = 0; i < 16; ++i) {
            const int parity = __builtin_popcount(static_cast<unsigned>(i & j)) & 1;
            const int sign_bit = (signs >> i) & 1;
            // sum ± x_i, one rounding each, in the kernel's order (x · 1 and x · -1 are exact).
            sum.add_(runs.select(2, i), (parity ^ sign_bit) != 0 ? -1.0 : 1.0);
        }
        outputs.push_back(sum * 0.25f);
    }
    return at::stack(outputs, 2).reshape({x.size(0), x.size(1)});
}

MxQuantized mx_from_kernel_layout(MxFormat format, Fp8Dtype dtype, const at::Tensor& bytes, const at::Tensor& scales,
                                  std::int64_t rows, std::int64_t cols, const at::Tensor& s_dec) {
    const std::int64_t block = format == MxFormat::Mxfp8 ? kMxfp8Block : kNvfp4Block;
    const std::int64_t blocks = blocks_of(cols, block);
    const auto scale_cols = static_cast<std::int64_t>(kernels::mx_scale_cols(static_cast<std::size_t>(cols), static_cast<std::size_t>(block)));
    // kernels::mx_scale_offset for every (row, block), computed where the scales are (no host loop, no upload).
    const at::TensorOptions on = at::TensorOptions().dtype(at::kLong).device(scales.device());
    const at::Tensor r = at::arange(rows, on).unsqueeze(1);
    const at::Tensor b = at::arange(blocks, on).unsqueeze(0);
    const at::Tensor index = (((r.div(128, "floor") * (scale_cols / 4) + b.div(4, "floor")) * 512 + r.remainder(32) * 16 +
                               r.remainder(128).div(32, "floor") * 4 + b.remainder(4)))
                                 .reshape({-1});
    const at::Tensor codes = scales.reshape({-1}).index_select(0, index).reshape({rows, blocks});
    MxQuantized q;
    q.format = format;
    q.dtype = dtype;
    if (format == MxFormat::Mxfp8) {
        q.data = bytes.view(to_scalar_type(dtype));
        q.block_scale = e8m0_values(codes);
    } else {
        const at::Tensor pairs = at::stack({bytes.bitwise_and(15), bytes.bitwise_right_shift(4)}, 2);
        q.data = pairs.reshape({rows, -1}).narrow(1, 0, cols).contiguous();
        q.block_scale = codes.view(at::kFloat8_e4m3fn).to(at::kFloat);
        q.tensor_scale_inv = s_dec.reshape({});
    }
    return q;
}

}  // namespace tewb
