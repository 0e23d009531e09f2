#pragma once

#include <ATen/core/Tensor.h>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8Format.h"
#include "core/fp8/Fp8Stats.h"
#include "core/fp8/Microscaling.h"

namespace tewb {

// What the FP8 inspector computes beside a cast (`--inspect-fp8`), in LibTorch operators on the cast's device.

// `xf` [rows, cols] float32 quantized as the what-if recipe would (Fp8Stats.h, WhatIf; a weight's blocks are its
// tiles: 128 × 128 for block scaling, 16 × 16 for NVFP4) and back to float32. `slot_dtype` is the slot's format,
// which current scaling keeps; the block recipes use E4M3, NVFP4 E2M1.
at::Tensor what_if_round_trip(const at::Tensor& xf, WhatIf what_if, SlotRole role, Fp8Dtype slot_dtype);

// The histogram bins (block_scale_bins) of a cast's blocks. `xf` is the tensor cast, [rows, cols] float32.
at::Tensor block_scale_bins_of(const BlockQuantized& q, const at::Tensor& xf);
// With 16 × 16 tiles (`tiles_16x16`, NVFP4 weights) a tile counts once.
at::Tensor block_scale_bins_of(const MxQuantized& q, const at::Tensor& xf, bool tiles_16x16);

}  // namespace tewb
