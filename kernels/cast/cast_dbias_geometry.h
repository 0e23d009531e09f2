#pragma once

// cast_dbias's geometry, one definition for the CUDA kernel (cast_dbias.cu) and its host twin
// (cast_dbias_host.cpp): it decides the order of the bias gradient's float32 sums, so both follow it.
// Plain C++: the host library includes it too.
#include <algorithm>
#include <cstddef>

namespace tewb::kernels::detail::cast_dbias_geometry {

// A block of 32 lanes x 8 thread rows covers a tile of 128 columns, 4 consecutive columns per lane.
inline constexpr std::size_t kLanes = 32;
inline constexpr std::size_t kGroups = 8;
inline constexpr std::size_t kPerLane = 4;
inline constexpr std::size_t kTileCols = kLanes * kPerLane;
// Blocks per column tile (rows of partial sums in the workspace), at most: enough blocks to fill a GPU
// at the seed's 768 columns, and a workspace of at most 128 rows.
inline constexpr std::size_t kMaxChunks = 128;

// The grid's row of blocks walks the row groups (8 rows each) chunk, chunk + chunks, ...
constexpr std::size_t chunks(std::size_t rows) {
    return std::clamp<std::size_t>((rows + kGroups - 1) / kGroups, 1, kMaxChunks);
}

constexpr std::size_t column_tiles(std::size_t cols) {
    return (cols + kTileCols - 1) / kTileCols;
}

}  // namespace tewb::kernels::detail::cast_dbias_geometry
