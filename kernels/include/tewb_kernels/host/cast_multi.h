#pragma once

#include <cstddef>

#include "tewb_kernels/cast_multi_types.h"

namespace tewb::kernels::host {

// tewb::kernels::cast_transpose_multi_to_fp8 over host memory: every item's values bit for bit as
// host::cast_transpose_to_fp8 gives them, and the kernel's launch count.
void cast_transpose_multi_to_fp8(const CastTransposeItem* items, std::size_t count);

// tewb::kernels::block_cast_multi_to_fp8 over host memory: every item bit for bit as host::block_cast_to_fp8
// gives it, and the kernel's launch count.
void block_cast_multi_to_fp8(const BlockCastItem* items, std::size_t count, DType dtype, int block_rows, bool power_of_two);

}  // namespace tewb::kernels::host
