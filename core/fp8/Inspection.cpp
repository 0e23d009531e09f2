#include "core/fp8/Inspection.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/slice.h>

namespace tewb {

at::Tensor what_if_round_trip(const at::Tensor& xf, WhatIf what_if, SlotRole role, Fp8Dtype slot_dtype) {
    const bool weight = role == SlotRole::Weight;
    switch (what_if) {
        case WhatIf::Current: return tensor_quantize_dequantize(xf, slot_dtype);
        case WhatIf::Block: return block_dequantize(block_quantize(xf, weight ? kWeightBlock : kActivationBlock, Fp8Dtype::E4M3));
        case WhatIf::Mxfp8: return mx_dequantize(mxfp8_quantize(xf, Fp8Dtype::E4M3));
        case WhatIf::Nvfp4: return mx_dequantize(nvfp4_quantize(xf, xf.abs().amax(), weight));
    }
    return xf;
}

at::Tensor block_scale_bins_of(const BlockQuantized& q, const at::Tensor& xf) {
    return block_scale_bins(q.scale_inv, block_abs_max(xf, q.block));
}

at::Tensor block_scale_bins_of(const MxQuantized& q, const at::Tensor& xf, bool tiles_16x16) {
    const int block = static_cast<int>(q.format == MxFormat::Mxfp8 ? kMxfp8Block : kNvfp4Block);
    // NVFP4 stores each tile's scale in every one of its rows: one row per tile.
    const at::Tensor per_block = tiles_16x16 ? q.block_scale.slice(0, 0, q.block_scale.size(0), block) : q.block_scale;
    const at::Tensor factor = q.format == MxFormat::Nvfp4 ? per_block * q.tensor_scale_inv : per_block;
    return block_scale_bins(factor, block_abs_max(xf, {tiles_16x16 ? block : 1, block}));
}

}  // namespace tewb
