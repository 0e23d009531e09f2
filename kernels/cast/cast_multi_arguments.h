#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "tewb_kernels/cast_multi_types.h"

namespace tewb::kernels::detail {

// Checks every item as cast_transpose_to_fp8 checks its arguments (the message names the item's index) and
// that `items` is not null when count > 0; returns the items that have elements, in order.
std::vector<CastTransposeItem> checked_multi_items(const char* call, const CastTransposeItem* items, std::size_t count);

// The kernel's tile: one thread block per 64 x 64 tile of an item.
constexpr std::size_t kCastMultiTile = 64;
std::size_t multi_tiles(const CastTransposeItem& item);

// How the checked items go into launches, as [first, last) ranges: at most kCastMultiItemsPerLaunch items and
// at most 2^31 - 1 tiles each (a grid's limit). The kernel launches these; the host twin counts them.
std::vector<std::pair<std::size_t, std::size_t>> multi_launches(const std::vector<CastTransposeItem>& work);

// The block cast's: every item as block_cast_to_fp8 checks its arguments, and no item with a bias gradient.
std::vector<BlockCastItem> checked_block_multi_items(const char* call, const BlockCastItem* items, std::size_t count, DType dtype,
                                                     int block_rows);
// One thread block per 128 x 128 tile of an item.
std::size_t block_multi_tiles(const BlockCastItem& item);
std::vector<std::pair<std::size_t, std::size_t>> block_multi_launches(const std::vector<BlockCastItem>& work);

}  // namespace tewb::kernels::detail
