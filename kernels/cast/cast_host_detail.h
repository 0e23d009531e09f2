#pragma once

#include <cstddef>

#include "tewb_kernels/block_cast_types.h"
#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// host::block_cast_to_fp8's work without its argument checks or its launch count: for the multi-tensor
// cast's items (cast_multi_host.cpp), which count their own launches.
void host_block_cast(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                     const BlockCastOutput& out);

}  // namespace tewb::kernels::detail
