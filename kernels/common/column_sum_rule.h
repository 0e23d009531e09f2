#pragma once

// How many launches a column sum (a bias gradient) takes, one rule for the CUDA kernels and their host twins.
// Plain C++: the host library includes it too.
#include <cstddef>

namespace tewb::kernels::detail {

// Arrival counters per translation unit (common/column_sum.cuh): one per column tile of a grid. A grid with
// more column tiles than this keeps the two-launch path (the kernel writes partial rows, launch_column_sum
// sums them); the rest finish their column sums in the kernel's own launch.
inline constexpr std::size_t kColumnSumCounters = 2048;

// True where a grid of `column_tiles` column tiles finishes its column sums in the same launch.
constexpr bool column_sum_in_kernel(std::size_t column_tiles) {
    return column_tiles <= kColumnSumCounters;
}

// The launches of a kernel that also leaves a column sum: 1, or 2 where the sums need launch_column_sum.
constexpr int column_sum_launches(std::size_t column_tiles) {
    return column_sum_in_kernel(column_tiles) ? 1 : 2;
}

}  // namespace tewb::kernels::detail
