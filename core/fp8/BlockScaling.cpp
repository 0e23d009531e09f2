#include "core/fp8/BlockScaling.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/bitwise_and.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/frexp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/where.h>

#include "core/common/Error.h"
#include "core/fp8/Fp8Stats.h"
#include "core/fp8/Fp8Tensor.h"

namespace tewb {

namespace {

std::int64_t blocks_of(std::int64_t n, int block) {
    return (n + block - 1) / block;
}

std::int64_t round_up_4(std::int64_t n) {
    return (n + 3) / 4 * 4;
}


}  // namespace

at::Tensor block_abs_max(const at::Tensor& x, BlockShape block) {
    const std::int64_t rows = x.size(0);
    const std::int64_t cols = x.size(1);
    const std::int64_t row_blocks = blocks_of(rows, block.rows);
    const std::int64_t col_blocks = blocks_of(cols, block.cols);
    // Zeros pad the last blocks up to full size: they do not change any block's amax.
    const at::Tensor magnitude = x.to(at::kFloat).abs();
    const bool whole = rows == row_blocks * block.rows && cols == col_blocks * block.cols;
    const at::Tensor padded =
        whole ? magnitude : at::constant_pad_nd(magnitude, {0, col_blocks * block.cols - cols, 0, row_blocks * block.rows - rows}, 0.0);
    if (block.rows == 1) return padded.reshape({row_blocks, col_blocks, block.cols}).amax(2);
    return padded.reshape({row_blocks, block.rows, col_blocks, block.cols}).amax({1, 3});
}

at::Tensor block_scale_bins(const at::Tensor& factor, const at::Tensor& block_amax) {
    // factor = f · 2^e with f in [0.5, 1): floor(log2 factor) = e − 1, exact for every positive float.
    const at::Tensor exponent = std::get<1>(at::frexp(factor.to(at::kFloat))).to(at::kLong) - 1;
    const at::Tensor bin = (exponent - Fp8ScaleHistogram::kLowestExponent).clamp(0, Fp8ScaleHistogram::kBins - 1);
    const at::Tensor empty = block_amax.eq(0) | block_amax.isfinite().logical_not() | (factor > 0).logical_not() |
                             factor.isfinite().logical_not();
    return at::where(empty, at::full_like(bin, Fp8ScaleHistogram::kBins), bin);
}

at::Tensor expand_blocks(const at::Tensor& per_block, BlockShape block, std::int64_t rows, std::int64_t cols) {
    return per_block.repeat_interleave(block.rows, 0).repeat_interleave(block.cols, 1).narrow(0, 0, rows).narrow(1, 0, cols);
}

at::Tensor power_of_two_at_or_below(const at::Tensor& scale) {
    // Keep only the exponent bits: exact for every normal float32 (a log2 rounded up near a power of two
    // would pick the power above and saturate the block's amax). Scales here are >= fp8_max / FLT_MAX,
    // always normal. The block cast kernel does the same bit operation.
    return at::bitwise_and(scale.contiguous().view(at::kInt), 0x7f800000).view(at::kFloat);
}

BlockQuantized block_quantize(const at::Tensor& x, BlockShape block, Fp8Dtype dtype, bool power_of_two) {
    if (x.dim() != 2) {
        throw ConfigError("block quantization: a " + std::to_string(x.dim()) + "-D tensor; allowed: 2-D (rows × columns)");
    }
    if (block.rows < 1 || block.cols < 1) throw ConfigError("block quantization: a block needs at least one row and column");
    const std::int64_t rows = x.size(0);
    const std::int64_t cols = x.size(1);
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor amax = block_abs_max(xf, block);
    const float max = fp8_max(dtype);
    at::Tensor scale = current_scale_tensor(amax, max);  // the per-tensor rule per block
    if (power_of_two) scale = power_of_two_at_or_below(scale);  // 1 stays 1
    BlockQuantized q;
    q.block = block;
    q.dtype = dtype;
    q.scale_inv = at::reciprocal(scale);
    const at::Tensor scaled = xf * expand_blocks(scale, block, rows, cols);
    q.data = scaled.clamp(-max, max).to(to_scalar_type(dtype));  // clamp: LibTorch casts out-of-range to NaN
    return q;
}

at::Tensor block_dequantize(const BlockQuantized& q) {
    return q.data.to(at::kFloat) * expand_blocks(q.scale_inv, q.block, q.data.size(0), q.data.size(1));
}

at::Tensor block_gemm_reference(const BlockQuantized& a, const BlockQuantized& b) {
    if (a.data.dim() != 2 || b.data.dim() != 2 || a.data.size(1) != b.data.size(1)) {
        throw ConfigError("block GEMM: operands must be [M, K] and [N, K] with the same K");
    }
    return at::mm(block_dequantize(a), block_dequantize(b).t());
}

at::Tensor block_scales_for_gemm(const at::Tensor& scale_inv, BlockShape block) {
    if (scale_inv.dim() != 2 || block.cols != 128 || (block.rows != 1 && block.rows != 128)) {
        throw ConfigError("block scales for a GEMM: 2-D scales of 1x128 or 128x128 blocks only");
    }
    const at::Tensor laid_out = block == kActivationBlock ? scale_inv.t() : scale_inv;
    const std::int64_t outer = laid_out.size(0);
    const std::int64_t inner = laid_out.size(1);
    const std::int64_t padded = round_up_4(inner);
    const bool in_layout = laid_out.scalar_type() == at::kFloat && laid_out.stride(1) == 1 &&
                           (outer == 1 || laid_out.stride(0) == padded) &&
                           static_cast<std::int64_t>(laid_out.storage().nbytes()) >=
                               (laid_out.storage_offset() + outer * padded) * static_cast<std::int64_t>(sizeof(float));
    if (in_layout) return laid_out.as_strided({outer, padded}, {padded, 1});
    return at::constant_pad_nd(laid_out.to(at::kFloat), {0, padded - inner}, 1.0).contiguous();
}

at::Tensor empty_block_scales(std::int64_t rows, std::int64_t cols, BlockShape block, const at::TensorOptions& options) {
    if (block.cols != 128 || (block.rows != 1 && block.rows != 128)) {
        throw ConfigError("block scales for a GEMM: 1x128 or 128x128 blocks only");
    }
    const std::int64_t row_blocks = blocks_of(rows, block.rows);
    const std::int64_t col_blocks = blocks_of(cols, block.cols);
    if (block == kActivationBlock) {
        return at::empty({col_blocks, round_up_4(row_blocks)}, options.dtype(at::kFloat)).narrow(1, 0, row_blocks).t();
    }
    return at::empty({row_blocks, round_up_4(col_blocks)}, options.dtype(at::kFloat)).narrow(1, 0, col_blocks);
}

at::Tensor current_scale_tensor(const at::Tensor& amax, float fp8_max) {
    at::Tensor scale = at::div(at::full_like(amax, fp8_max), amax);
    scale = at::where(at::isinf(scale), at::full_like(scale, FLT_MAX), scale);
    return at::where(at::isfinite(amax) & (amax > 0), scale, at::ones_like(scale));
}

at::Tensor block_statistics_scale(const at::Tensor& amax, float fp8_max, bool power_of_two) {
    const at::Tensor scale = current_scale_tensor(amax, fp8_max);
    return power_of_two ? power_of_two_at_or_below(scale) : scale;
}

at::Tensor tensor_quantize_dequantize(const at::Tensor& x, Fp8Dtype dtype) {
    // One block over the whole tensor, with an exact (not power-of-two) scale: current scaling's rule.
    const at::Tensor as_2d = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
    const BlockShape whole{static_cast<int>(std::max<std::int64_t>(1, as_2d.size(0))),
                           static_cast<int>(std::max<std::int64_t>(1, as_2d.size(1)))};
    return block_dequantize(block_quantize(as_2d, whole, dtype, /*power_of_two=*/false)).reshape(x.sizes());
}

}  // namespace tewb
