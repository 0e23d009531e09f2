// Float8BlockScaling's block cast (tewb_kernels/cast.h) and its multi-tensor launch (cast_multi.h): one thread
// block per 128 x 128 tile writes both orientations, their scales in cuBLASLt's layout and the tensor's amax (and,
// for one tensor, the bias gradient), reading x once. Bytes: x read once, each output written once.
#include <cstdint>
#include <vector>

#include "cast/cast_items.h"
#include "common/arguments.h"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kBlockCols = 128;           // Float8BlockScaling's block width, and the block cast's tile
constexpr int kBlockCastThreads = 256;    // 8 warps
constexpr int kBlockCastRowsPerWarp = 16;  // 8 warps x 16 rows: one tile, each lane holding 16 x 4 values
constexpr int kStagedPitch = 144;         // bytes per row of the staged transposed tile: rows stay 16-byte aligned

__device__ inline float block_scale(unsigned amax_bits, Fp8Type type, bool power_of_two) {
    const float amax = __uint_as_float(amax_bits);
    float scale = fp8_max(type) / amax;  // IEEE division: no fast math here
    if (isinf(scale)) scale = 3.402823466e+38f;
    if (power_of_two) scale = __uint_as_float(__float_as_uint(scale) & 0x7f800000u);  // the power of two at or below
    if (!(amax > 0.0f) || !isfinite(amax)) scale = 1.0f;
    return scale;
}

__device__ inline long long round_up_4(long long n) {
    return (n + 3) / 4 * 4;
}

// Where one thread block's 128 x 128 tile lies in x, and where this thread works in it.
struct BlockTilePlace {
    int tr;         // the tile's row among the tiles
    int tc;         // its column among the tiles
    int r0;         // its first row of x
    int c0;         // its first column of x
    int warp;
    int lane;
    int first_row;  // the warp's first row within the tile
    int col;        // the lane's first column within the tile
};

__device__ __forceinline__ BlockTilePlace block_tile_place(unsigned tile, int col_tiles) {
    BlockTilePlace p;
    p.tr = static_cast<int>(tile / col_tiles);
    p.tc = static_cast<int>(tile % col_tiles);
    p.r0 = p.tr * kBlockCols;
    p.c0 = p.tc * kBlockCols;
    p.warp = static_cast<int>(threadIdx.x / 32);
    p.lane = static_cast<int>(threadIdx.x % 32);
    p.first_row = p.warp * kBlockCastRowsPerWarp;
    p.col = p.lane * 4;
    return p;
}

// The thread's 16 rows x 4 columns of the tile into v (values outside x count as 0: they change no block's
// amax), each row's max |x| bits into row_bits, the warp's column maxima into col_part and, with kDbias, the
// warp's column sums into col_sum. Returns the thread's max |x| bits over its warp's rows (a NaN orders above
// inf, so it wins as in the reference). Shared memory written here is read after the caller's __syncthreads.
template <typename T, bool kDbias>
__device__ __forceinline__ unsigned block_load_tile(const T* __restrict__ x, int rows, int cols, const BlockTilePlace& p,
                                                    float (&v)[kBlockCastRowsPerWarp][4], unsigned (&row_bits)[kBlockCols],
                                                    unsigned (&col_part)[kBlockCastThreads / 32][kBlockCols],
                                                    float (&col_sum)[kDbias ? kBlockCastThreads / 32 : 1][kBlockCols]) {
    unsigned column_bits[4] = {0u, 0u, 0u, 0u};
    unsigned warp_bits = 0;  // |x| as bits
#pragma unroll
    for (int i = 0; i < kBlockCastRowsPerWarp; ++i) {
        const int r = p.r0 + p.first_row + i;
        unsigned bits = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = p.c0 + p.col + j;
            const float f = (r < rows && c < cols) ? to_float(x[static_cast<long long>(r) * cols + c]) : 0.0f;
            v[i][j] = f;
            const unsigned b = abs_bits(f);
            bits = max(bits, b);
            column_bits[j] = max(column_bits[j], b);
        }
        for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
        if (p.lane == 0) row_bits[p.first_row + i] = bits;
        warp_bits = max(warp_bits, bits);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) col_part[p.warp][p.col + j] = column_bits[j];
    if constexpr (kDbias) {
        // This lane's 4 columns over the warp's 16 rows, in row order (values outside x are 0 and change no sum).
        float sums[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            sums[j] = 0.0f;
#pragma unroll
            for (int i = 0; i < kBlockCastRowsPerWarp; ++i) sums[j] += v[i][j];
        }
        *reinterpret_cast<float4*>(&col_sum[p.warp][p.col]) = make_float4(sums[0], sums[1], sums[2], sums[3]);
    }
    return warp_bits;
}

// After block_load_tile's shared memory is complete: the tile's amax (one 128 x 128 block's), in every warp,
// and the scales of the tile's 128 rows (threads 0-127) and 128 columns (threads 128-255) into row_scale and
// col_scale, the tile's own for weight blocks. Returns the tile's scale.
__device__ __forceinline__ float block_tile_scales(const BlockTilePlace& p, Fp8Type type, bool weight_blocks, bool power_of_two,
                                                   const unsigned (&row_bits)[kBlockCols],
                                                   const unsigned (&col_part)[kBlockCastThreads / 32][kBlockCols],
                                                   float (&row_scale)[kBlockCols], float (&col_scale)[kBlockCols]) {
    const int col = p.col;
    unsigned tile_bits = max(max(row_bits[col], row_bits[col + 1]), max(row_bits[col + 2], row_bits[col + 3]));
    for (int offset = 16; offset > 0; offset /= 2) tile_bits = max(tile_bits, __shfl_xor_sync(0xffffffffu, tile_bits, offset));
    const float tile_scale = block_scale(tile_bits, type, power_of_two);
    if (threadIdx.x < kBlockCols) {
        const int i = static_cast<int>(threadIdx.x);
        row_scale[i] = weight_blocks ? tile_scale : block_scale(row_bits[i], type, power_of_two);
    } else {
        const int j = static_cast<int>(threadIdx.x) - kBlockCols;
        unsigned bits = 0;
        for (int w = 0; w < kBlockCastThreads / 32; ++w) bits = max(bits, col_part[w][j]);
        col_scale[j] = weight_blocks ? tile_scale : block_scale(bits, type, power_of_two);
    }
    return tile_scale;
}

// After block_tile_scales' shared memory is complete: the scale_invs, in cuBLASLt's layouts (gemm_types.h);
// the last tile of a row or column fills the padding with 1.
__device__ __forceinline__ void block_write_scale_invs(int rows, int cols, int row_tiles, int col_tiles, const BlockTilePlace& p,
                                                       bool weight_blocks, float tile_scale, const BlockCastOutput& out,
                                                       const float (&row_scale)[kBlockCols],
                                                       const float (&col_scale)[kBlockCols]) {
    const int tr = p.tr;
    const int tc = p.tc;
    if (weight_blocks) {
        if (threadIdx.x == 0) {
            const long long stride = round_up_4(col_tiles);
            out.scale_inv[tr * stride + tc] = 1.0f / tile_scale;
            if (tc + 1 == col_tiles) {
                for (long long k = col_tiles; k < stride; ++k) out.scale_inv[tr * stride + k] = 1.0f;
            }
            if (out.transposed != nullptr) {
                const long long t_stride = round_up_4(row_tiles);
                out.transposed_scale_inv[tc * t_stride + tr] = 1.0f / tile_scale;
                if (tr + 1 == row_tiles) {
                    for (long long k = row_tiles; k < t_stride; ++k) out.transposed_scale_inv[tc * t_stride + k] = 1.0f;
                }
            }
        }
    } else if (threadIdx.x < kBlockCols) {
        const long long stride = round_up_4(rows);  // [k block][row], the row index contiguous
        const long long r = p.r0 + static_cast<long long>(threadIdx.x);
        if (r < rows) {
            out.scale_inv[tc * stride + r] = 1.0f / row_scale[threadIdx.x];
        } else if (r < stride) {
            out.scale_inv[tc * stride + r] = 1.0f;
        }
    } else if (out.transposed != nullptr) {
        const int j = static_cast<int>(threadIdx.x) - kBlockCols;
        const long long t_stride = round_up_4(cols);  // the transposed copy's rows are x's columns
        const long long c = p.c0 + static_cast<long long>(j);
        if (c < cols) {
            out.transposed_scale_inv[tr * t_stride + c] = 1.0f / col_scale[j];
        } else if (c < t_stride) {
            out.transposed_scale_inv[tr * t_stride + c] = 1.0f;
        }
    }
}

// The data along x's rows: 4 bytes per lane, a warp's 128 contiguous bytes per row.
__device__ __forceinline__ void block_write_rows(int rows, int cols, const BlockTilePlace& p, Fp8Type type,
                                                 const float (&v)[kBlockCastRowsPerWarp][4], const float (&row_scale)[kBlockCols],
                                                 const BlockCastOutput& out) {
    auto* data = static_cast<std::uint8_t*>(out.data);
    const bool whole_words = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(data) % 4 == 0;
#pragma unroll
    for (int i = 0; i < kBlockCastRowsPerWarp; ++i) {
        const int r = p.r0 + p.first_row + i;
        const int c = p.c0 + p.col;
        if (r >= rows || c >= cols) continue;
        const float s = row_scale[p.first_row + i];
        std::uint8_t q[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) q[j] = fp8_from_float(v[i][j] * s, type);
        std::uint8_t* to = data + static_cast<long long>(r) * cols + c;
        if (whole_words) {
            *reinterpret_cast<unsigned*>(to) = q[0] | (q[1] << 8) | (q[2] << 16) | (static_cast<unsigned>(q[3]) << 24);
        } else {
            for (int j = 0; j < 4 && c + j < cols; ++j) to[j] = q[j];
        }
    }
}

// The transposed copy's bytes staged as [column][row]: a thread's 16 rows of one column are 16 contiguous
// bytes of the staged tile, one 16-byte store per column (byte stores would conflict 16 ways in shared memory).
__device__ __forceinline__ void block_stage_transposed(const BlockTilePlace& p, Fp8Type type,
                                                       const float (&v)[kBlockCastRowsPerWarp][4],
                                                       const float (&col_scale)[kBlockCols],
                                                       std::uint8_t (&staged)[kBlockCols * kStagedPitch]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float s = col_scale[p.col + j];
        unsigned words[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            words[w] = 0;
#pragma unroll
            for (int b = 0; b < 4; ++b) {
                words[w] |= static_cast<unsigned>(fp8_from_float(v[w * 4 + b][j] * s, type)) << (8 * b);
            }
        }
        *reinterpret_cast<uint4*>(staged + (p.col + j) * kStagedPitch + p.first_row) =
            make_uint4(words[0], words[1], words[2], words[3]);
    }
}

// After the whole tile is staged: the transposed copy along x's columns, 16 bytes per thread.
__device__ __forceinline__ void block_write_transposed(int rows, int cols, const BlockTilePlace& p,
                                                       const std::uint8_t (&staged)[kBlockCols * kStagedPitch],
                                                       const BlockCastOutput& out) {
    auto* transposed = static_cast<std::uint8_t*>(out.transposed);
    const bool whole_pieces = rows % 16 == 0 && reinterpret_cast<std::uintptr_t>(transposed) % 16 == 0;
    for (int piece = static_cast<int>(threadIdx.x); piece < kBlockCols * (kBlockCols / 16); piece += kBlockCastThreads) {
        const int j = piece / (kBlockCols / 16);
        const int part = piece % (kBlockCols / 16);
        const int c = p.c0 + j;
        const int r = p.r0 + part * 16;
        if (c >= cols || r >= rows) continue;
        const std::uint8_t* from = staged + j * kStagedPitch + part * 16;
        std::uint8_t* to = transposed + static_cast<long long>(c) * rows + r;
        if (whole_pieces) {
            *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
        } else {
            for (int k = 0; k < 16 && r + k < rows; ++k) to[k] = from[k];
        }
    }
}

// The tile's partial row of column sums (col_sum was complete at block_cast_tile's first __syncthreads): each
// column as 0 + warp 0's sum + warp 1's + ... + warp 7's.
__device__ __forceinline__ void block_dbias_partial(int cols, const BlockTilePlace& p,
                                                    const float (&col_sum)[kBlockCastThreads / 32][kBlockCols],
                                                    const ColumnSumTarget& dbias) {
    if (threadIdx.x < kBlockCols && p.c0 + static_cast<int>(threadIdx.x) < cols) {
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < kBlockCastThreads / 32; ++w) sum += col_sum[w][threadIdx.x];
        dbias.partial[static_cast<long long>(p.tr) * cols + p.c0 + threadIdx.x] = sum;
    }
}

// One thread block per 128 x 128 tile of x (flattened: rows of tiles may exceed the grid's y limit). x is
// read once into registers; a tile holds 128 row blocks and 128 column blocks of 1 x 128 (or is one
// 128 x 128 block), so both orientations' scales come from the same values. The transposed copy is staged
// in shared memory and written as 16-byte rows.
// Two blocks per SM (at most 128 registers a thread), so one tile's loads overlap another's stores.
// kDbias: also the column sums of x (out.dbias): the tile's partial row dbias.partial[tr, c0 .. c0 + 128), each
// column as (0 + warp 0's 16 rows in order) + warp 1's + ... + warp 7's, and the last tile of a column of
// tiles to finish adds the row tiles' partial rows in order (column_sum.cuh) unless dbias.out is null.
// The work of one thread block on tile `tile` (row-major over the tiles); block_cast_kernel and the
// multi-tensor block_cast_multi_kernel run it. Its __syncthreads are all here (with those inside
// finish_column_sum and combine_block_amax), reached by every thread of the block (out.transposed is the same
// for all of them); the helpers above hold none and run between them.
template <typename T, bool kDbias>
__device__ __forceinline__ void block_cast_tile(const T* __restrict__ x, int rows, int cols, int row_tiles, int col_tiles,
                                                unsigned tile, bool weight_blocks, bool power_of_two, const BlockCastOutput& out,
                                                const ColumnSumTarget& dbias) {
    __shared__ unsigned row_bits[kBlockCols];
    __shared__ unsigned col_part[kBlockCastThreads / 32][kBlockCols];
    __shared__ __align__(16) float col_sum[kDbias ? kBlockCastThreads / 32 : 1][kBlockCols];
    __shared__ float row_scale[kBlockCols];
    __shared__ float col_scale[kBlockCols];
    __shared__ __align__(16) std::uint8_t staged[kBlockCols * kStagedPitch];
    const BlockTilePlace p = block_tile_place(tile, col_tiles);
    const Fp8Type type = out.type;

    float v[kBlockCastRowsPerWarp][4];
    const unsigned warp_bits = block_load_tile<T, kDbias>(x, rows, cols, p, v, row_bits, col_part, col_sum);
    __syncthreads();

    const float tile_scale = block_tile_scales(p, type, weight_blocks, power_of_two, row_bits, col_part, row_scale, col_scale);
    __syncthreads();

    block_write_scale_invs(rows, cols, row_tiles, col_tiles, p, weight_blocks, tile_scale, out, row_scale, col_scale);
    block_write_rows(rows, cols, p, type, v, row_scale, out);
    if (out.transposed != nullptr) {
        block_stage_transposed(p, type, v, col_scale, staged);
        __syncthreads();
        block_write_transposed(rows, cols, p, staged, out);
    }
    if constexpr (kDbias) {
        block_dbias_partial(cols, p, col_sum, dbias);
        finish_column_sum(dbias, p.tc, row_tiles, cols, p.c0, min(kBlockCols, cols - p.c0));
    }
    combine_block_amax(warp_bits, out.amax);
}

template <typename T, bool kDbias>
__global__ void __launch_bounds__(kBlockCastThreads, 2)
    block_cast_kernel(const T* __restrict__ x, int rows, int cols, int row_tiles, int col_tiles, bool weight_blocks,
                      bool power_of_two, BlockCastOutput out, ColumnSumTarget dbias) {
    block_cast_tile<T, kDbias>(x, rows, cols, row_tiles, col_tiles, blockIdx.x, weight_blocks, power_of_two, out, dbias);
}

// The multi-tensor block cast (cast_multi.h): the items travel in the kernel's parameters (__grid_constant__:
// read where they are); each thread block finds its item from the items' first tiles and casts one tile of it.
struct BlockMultiItem {
    const void* x;
    BlockCastOutput out;
    int rows;
    int cols;
    int row_tiles;
    int col_tiles;
    unsigned first_tile;
};

struct BlockMultiBatch {
    BlockMultiItem items[kCastMultiItemsPerLaunch];
    int count;
    bool weight_blocks;
    bool power_of_two;
};
// About 6 KiB: beyond the classic 4 KiB of kernel parameters, within the 32764 bytes CUDA 12.1 and later allow.
static_assert(sizeof(BlockMultiBatch) <= 32764, "kernel parameters are limited to 32764 bytes");

template <typename T>
__global__ void __launch_bounds__(kBlockCastThreads, 2) block_cast_multi_kernel(const __grid_constant__ BlockMultiBatch batch) {
    int index = 0;
    while (index + 1 < batch.count && blockIdx.x >= batch.items[index + 1].first_tile) ++index;
    const BlockMultiItem& item = batch.items[index];
    block_cast_tile<T, false>(static_cast<const T*>(item.x), item.rows, item.cols, item.row_tiles, item.col_tiles,
                              blockIdx.x - item.first_tile, batch.weight_blocks, batch.power_of_two, item.out, ColumnSumTarget{});
}

template <typename T>
void block_cast_multi_typed(const std::vector<BlockCastItem>& work, int block_rows, bool power_of_two, cudaStream_t stream) {
    for (const auto& [first, last] : block_multi_launches(work)) {
        BlockMultiBatch batch{};
        batch.weight_blocks = block_rows != 1;
        batch.power_of_two = power_of_two;
        unsigned tiles = 0;
        for (std::size_t i = first; i < last; ++i) {
            const BlockCastItem& w = work[i];
            const int row_tiles = static_cast<int>((w.rows + kBlockCols - 1) / kBlockCols);
            const int col_tiles = static_cast<int>((w.cols + kBlockCols - 1) / kBlockCols);
            batch.items[batch.count++] = {w.x, w.out, static_cast<int>(w.rows), static_cast<int>(w.cols), row_tiles, col_tiles, tiles};
            tiles += static_cast<unsigned>(block_multi_tiles(w));
        }
        block_cast_multi_kernel<T><<<tiles, kBlockCastThreads, 0, stream>>>(batch);
        check_last_launch("tewb::kernels::block_cast_multi_to_fp8");
    }
}

template <typename T>
void block_cast_typed(const void* x, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                      const BlockCastOutput& out, cudaStream_t stream) {
    const int row_tiles = static_cast<int>((rows + kBlockCols - 1) / kBlockCols);
    const int col_tiles = static_cast<int>((cols + kBlockCols - 1) / kBlockCols);
    const auto tiles = static_cast<unsigned>(static_cast<long long>(row_tiles) * col_tiles);
    const auto launch = [&](auto kernel, const ColumnSumTarget& dbias) {
        kernel<<<tiles, kBlockCastThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<int>(rows), static_cast<int>(cols),
                                                        row_tiles, col_tiles, block_rows != 1, power_of_two, out, dbias);
    };
    if (out.dbias != nullptr) {
        const bool in_kernel = column_sum_in_kernel(static_cast<std::size_t>(col_tiles));
        launch(block_cast_kernel<T, true>,
               ColumnSumTarget{static_cast<float*>(out.dbias_workspace), in_kernel ? out.dbias : nullptr, DType::Float32});
    } else {
        launch(block_cast_kernel<T, false>, ColumnSumTarget{});
    }
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void block_cast_to_fp8(const Tensor& x, const Tensor& out_in, bool power_of_two, const Tensor& dbias,
                       const Workspace& dbias_workspace, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::block_cast_to_fp8";
    check_block_cast(call, x, out_in, dbias, dbias_workspace);
    const std::size_t rows = x.rows;
    const std::size_t cols = x.cols;
    if (rows == 0 || cols == 0) return;
    const BlockCastOutput out = block_cast_output(out_in, dbias, dbias_workspace);
    const int rows_per_block = block_rows(out_in);
    const cudaStream_t stream = cuda_stream(on);
    switch (x.dtype) {
        case DType::BFloat16: block_cast_typed<__nv_bfloat16>(x.data, rows, cols, rows_per_block, power_of_two, out, stream); break;
        case DType::Float16: block_cast_typed<__half>(x.data, rows, cols, rows_per_block, power_of_two, out, stream); break;
        default: block_cast_typed<float>(x.data, rows, cols, rows_per_block, power_of_two, out, stream); break;
    }
    check_last_launch(call);
    const std::size_t col_tiles = (cols + kBlockCols - 1) / kBlockCols;
    if (out.dbias != nullptr && !column_sum_in_kernel(col_tiles)) {
        const int row_tiles = static_cast<int>((rows + kBlockCols - 1) / kBlockCols);
        launch_column_sum(static_cast<const float*>(out.dbias_workspace), row_tiles, cols, out.dbias, DType::Float32, stream, call);
    }
}

void block_cast_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, bool power_of_two, Stream on) {
    using namespace detail;
    const std::vector<BlockCastItem> work = checked_block_multi_items("tewb::kernels::block_cast_multi_to_fp8", x, out, count);
    if (work.empty()) return;
    const int rows_per_block = block_rows(out[0]);
    const cudaStream_t stream = cuda_stream(on);
    switch (x[0].dtype) {
        case DType::BFloat16: block_cast_multi_typed<__nv_bfloat16>(work, rows_per_block, power_of_two, stream); break;
        case DType::Float16: block_cast_multi_typed<__half>(work, rows_per_block, power_of_two, stream); break;
        default: block_cast_multi_typed<float>(work, rows_per_block, power_of_two, stream); break;
    }
}

}  // namespace tewb::kernels
