#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "tewb_kernels/cast_multi_types.h"

namespace tewb::kernels {

// cast_transpose_to_fp8 (tewb_kernels/cast.h) of `count` tensors, each with its own scale, outputs and amax,
// in one launch per kCastMultiItemsPerLaunch non-empty items (more only where their 64 x 64 tiles exceed a
// grid's 2^31 - 1 blocks) instead of one each: a model's weights cast to FP8 once
// per step (the values are cast_transpose_to_fp8's, bit for bit). `items` is host memory; every pointer in
// it is a device pointer, and no item's outputs overlap another's. Empty items (rows or cols 0) are skipped.
void cast_transpose_multi_to_fp8(const CastTransposeItem* items, std::size_t count, cudaStream_t stream);

// block_cast_to_fp8 (tewb_kernels/cast.h) of `count` tensors of one dtype, block shape and scale rule, each
// with its own outputs and amax, in one launch per kCastMultiItemsPerLaunch non-empty items (more only past a
// grid's 2^31 - 1 tiles of 128 x 128): a model's weights under Float8BlockScaling once per step. Values bit
// for bit block_cast_to_fp8's. `items` is host memory, its pointers device pointers; no bias gradients.
void block_cast_multi_to_fp8(const BlockCastItem* items, std::size_t count, DType dtype, int block_rows, bool power_of_two,
                             cudaStream_t stream);

}  // namespace tewb::kernels
