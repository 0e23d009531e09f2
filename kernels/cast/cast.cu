// FP8 casts with amax, cast + transpose (optionally with the column sums of x: a bias gradient), transpose.
// Bytes: the input read once, each output written once; the floor is copy bandwidth. Cast + transpose has
// a vectorised kernel for aligned shapes (rows a multiple of 8, cols of 16 / sizeof(x)) and a plain
// byte-wise one for the rest. The conversion is CUDA's own float-to-FP8 (round to nearest even,
// saturating finite), on the device and, for the host reference, on the host.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cast/cast_launch.h"
#include "cast/cast_multi_arguments.h"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a 32 x 8 block walks a 32 x 32 tile
constexpr int kMaxGridY = 65535;
// With dbias, the tile rows of x are walked by at most this many blocks per column tile, each leaving one
// row of partial column sums: a small second stage (64 x cols floats) and still hundreds of blocks.
constexpr int kDbiasMaxChunks = 64;

template <typename T>
__global__ void cast_kernel(const T* __restrict__ x, std::size_t n, const float* __restrict__ scale, std::uint8_t* __restrict__ out,
                            Fp8Type type, float* amax) {
    const float s = *scale;
    unsigned local = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = to_float(x[i]);
        local = max(local, abs_bits(v));
        out[i] = fp8_from_float(v * s, type);
    }
    combine_block_amax(local, amax);
}

// kDbias: also the column sums of x over the rows this block walks, into dbias.partial[blockIdx.y, :], and
// the last block of a column tile finishes the tile's sums (column_sum.cuh) unless dbias.out is null.
template <typename T, bool kDbias>
__global__ void cast_transpose_kernel(const T* __restrict__ x, int rows, int cols, const float* __restrict__ scale,
                                      std::uint8_t* __restrict__ out, std::uint8_t* __restrict__ out_t, Fp8Type type,
                                      float* amax, ColumnSumTarget dbias) {
    __shared__ std::uint8_t tile[kTile][kTile + 1];
    const float s = *scale;
    unsigned local = 0;
    float column_sum = 0.0f;
    const int tile_rows = (rows + kTile - 1) / kTile;
    const int c = blockIdx.x * kTile + threadIdx.x;
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kTile;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
            const int r = r0 + j;
            if (r < rows && c < cols) {
                const std::size_t at = static_cast<std::size_t>(r) * cols + c;
                const float v = to_float(x[at]);
                local = max(local, abs_bits(v));
                if constexpr (kDbias) column_sum += v;
                const std::uint8_t q = fp8_from_float(v * s, type);
                out[at] = q;
                tile[j][threadIdx.x] = q;
            }
        }
        __syncthreads();
        const int rt = r0 + threadIdx.x;  // a row of x is a column of out_t
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
            const int ct = blockIdx.x * kTile + j;
            if (ct < cols && rt < rows) out_t[static_cast<std::size_t>(ct) * rows + rt] = tile[threadIdx.x][j];
        }
        __syncthreads();
    }
    if constexpr (kDbias) {
        __shared__ float column_sums[kTileRows][kTile];
        column_sums[threadIdx.y][threadIdx.x] = column_sum;
        __syncthreads();
        if (threadIdx.y == 0 && c < cols) {
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < kTileRows; ++j) sum += column_sums[j][threadIdx.x];
            dbias.partial[static_cast<std::size_t>(blockIdx.y) * cols + c] = sum;
        }
        const int c0 = static_cast<int>(blockIdx.x) * kTile;
        finish_column_sum(dbias, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.y), cols, c0, min(kTile, cols - c0));
    }
    combine_block_amax(local, amax);
}

// The vectorised cast + transpose: a 64 x 64 tile per step, x read in 16-byte vectors, `out` written in
// W-byte pieces, the FP8 tile kept in shared memory and `out_t` written in 8-byte pieces (8 rows of x at
// one column). For rows a multiple of 8, cols a multiple of W and aligned pointers (cast_transpose_fits).
constexpr int kWideTile = 64;
constexpr int kWideThreads = 256;

template <typename T, bool kDbias>
__global__ void __launch_bounds__(kWideThreads)
    cast_transpose_wide_kernel(const T* __restrict__ x, int rows, int cols, const float* __restrict__ scale,
                               std::uint8_t* __restrict__ out, std::uint8_t* __restrict__ out_t, Fp8Type type, float* amax,
                               ColumnSumTarget dbias) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kWideTile / W;
    constexpr int kRowsPerPass = kWideThreads / kVecsPerRow;
    __shared__ std::uint8_t tile[kWideTile][kWideTile + 8];  // + 8: rows start on different banks
    const float s = *scale;
    unsigned local = 0;
    float sums[W] = {};  // kDbias: this thread's W columns, summed over the rows it reads
    const int vec = threadIdx.x % kVecsPerRow;
    const int c = blockIdx.x * kWideTile + vec * W;
    const int tile_rows = (rows + kWideTile - 1) / kWideTile;
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kWideTile;
#pragma unroll
        for (int pass = 0; pass < kWideTile / kRowsPerPass; ++pass) {
            const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
            const int r = r0 + j;
            if (r < rows && c < cols) {
                const std::size_t at = static_cast<std::size_t>(r) * cols + c;
                const uint4 raw = *reinterpret_cast<const uint4*>(x + at);
                const T* v = reinterpret_cast<const T*>(&raw);
                std::uint8_t q[W];
#pragma unroll
                for (int i = 0; i < W; ++i) {
                    const float f = to_float(v[i]);
                    local = max(local, abs_bits(f));
                    if constexpr (kDbias) sums[i] += f;
                    q[i] = fp8_from_float(f * s, type);
                    tile[j][vec * W + i] = q[i];
                }
                if constexpr (W == 8) {
                    *reinterpret_cast<uint2*>(out + at) = *reinterpret_cast<const uint2*>(q);
                } else {
                    *reinterpret_cast<std::uint32_t*>(out + at) = *reinterpret_cast<const std::uint32_t*>(q);
                }
            }
        }
        __syncthreads();
        // out_t: 64 columns of x, each 64 rows = 8 pieces of 8 bytes.
#pragma unroll
        for (int pass = 0; pass < kWideTile * 8 / kWideThreads; ++pass) {
            const int piece = pass * kWideThreads + static_cast<int>(threadIdx.x);
            const int col = piece / 8;  // column of the tile: a row of out_t
            const int part = piece % 8;
            const int ct = blockIdx.x * kWideTile + col;
            const int rt = r0 + part * 8;
            if (ct < cols && rt < rows) {
                std::uint8_t bytes[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) bytes[i] = tile[part * 8 + i][col];
                *reinterpret_cast<uint2*>(out_t + static_cast<std::size_t>(ct) * rows + rt) = *reinterpret_cast<const uint2*>(bytes);
            }
        }
        __syncthreads();
    }
    if constexpr (kDbias) {
        __shared__ float column_sums[kRowsPerPass][kWideTile];
        const int group = static_cast<int>(threadIdx.x) / kVecsPerRow;
#pragma unroll
        for (int i = 0; i < W; ++i) column_sums[group][vec * W + i] = sums[i];
        __syncthreads();
        const int col = blockIdx.x * kWideTile + static_cast<int>(threadIdx.x);
        if (threadIdx.x < kWideTile && col < cols) {
            float sum = 0.0f;
            for (int g = 0; g < kRowsPerPass; ++g) sum += column_sums[g][threadIdx.x];
            dbias.partial[static_cast<std::size_t>(blockIdx.y) * cols + col] = sum;
        }
        const int c0 = static_cast<int>(blockIdx.x) * kWideTile;
        finish_column_sum(dbias, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.y), cols, c0, min(kWideTile, cols - c0));
    }
    combine_block_amax(local, amax);
}

template <typename E>
__global__ void transpose_kernel(const E* __restrict__ x, int rows, int cols, E* __restrict__ out) {
    __shared__ E tile[kTile][kTile + 1];
    const int tile_rows = (rows + kTile - 1) / kTile;
    const int c = blockIdx.x * kTile + threadIdx.x;
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kTile;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
            const int r = r0 + j;
            if (r < rows && c < cols) tile[j][threadIdx.x] = x[static_cast<std::size_t>(r) * cols + c];
        }
        __syncthreads();
        const int rt = r0 + threadIdx.x;
        for (int j = threadIdx.y; j < kTile; j += kTileRows) {
            const int ct = blockIdx.x * kTile + j;
            if (ct < cols && rt < rows) out[static_cast<std::size_t>(ct) * rows + rt] = tile[threadIdx.x][j];
        }
        __syncthreads();
    }
}

dim3 tile_grid(std::size_t rows, std::size_t cols) {
    const auto tiles_x = static_cast<unsigned>((cols + kTile - 1) / kTile);
    const auto tiles_y = static_cast<unsigned>(std::min<std::size_t>((rows + kTile - 1) / kTile, kMaxGridY));
    return dim3(tiles_x, tiles_y);
}

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

template <typename T>
void cast_typed(const void* x, std::size_t n, const float* scale, void* out, Fp8Type type, float* amax, cudaStream_t stream) {
    const int blocks = static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
    cast_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, scale, static_cast<std::uint8_t*>(out), type, amax);
}

bool aligned(const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Launches the cast + transpose and returns its grid. With dbias.partial set, the kernel also leaves the column
// sums: finished in this launch where the grid's column tiles fit the arrival counters (dbias.out is cleared
// otherwise: the caller then sums the grid.y partial rows with launch_column_sum).
template <typename T>
dim3 cast_transpose_typed(const void* x, std::size_t rows, std::size_t cols, const float* scale, void* out, void* out_t,
                          Fp8Type type, float* amax, ColumnSumTarget dbias, cudaStream_t stream) {
    constexpr std::size_t W = 16 / sizeof(T);
    const bool with_dbias = dbias.partial != nullptr;
    const std::size_t max_y = with_dbias ? kDbiasMaxChunks : kMaxGridY;
    const auto launch = [&](auto kernel, dim3 grid, dim3 block) {
        if (!column_sum_in_kernel(grid.x)) dbias.out = nullptr;
        kernel<<<grid, block, 0, stream>>>(static_cast<const T*>(x), static_cast<int>(rows), static_cast<int>(cols), scale,
                                           static_cast<std::uint8_t*>(out), static_cast<std::uint8_t*>(out_t), type, amax, dbias);
        return grid;
    };
    if constexpr (sizeof(T) != 2 || std::is_same_v<T, __nv_bfloat16>) {
        const bool fits = rows % 8 == 0 && cols % W == 0 && aligned(x, 16) && aligned(out, W) && aligned(out_t, 8);
        if (fits) {
            const dim3 grid(static_cast<unsigned>((cols + kWideTile - 1) / kWideTile),
                            static_cast<unsigned>(std::min<std::size_t>((rows + kWideTile - 1) / kWideTile, max_y)));
            return with_dbias ? launch(cast_transpose_wide_kernel<T, true>, grid, dim3(kWideThreads))
                              : launch(cast_transpose_wide_kernel<T, false>, grid, dim3(kWideThreads));
        }
    }
    const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                    static_cast<unsigned>(std::min<std::size_t>((rows + kTile - 1) / kTile, max_y)));
    return with_dbias ? launch(cast_transpose_kernel<T, true>, grid, dim3(kTile, kTileRows))
                      : launch(cast_transpose_kernel<T, false>, grid, dim3(kTile, kTileRows));
}

template <typename E>
void transpose_typed(const void* x, std::size_t rows, std::size_t cols, void* out, cudaStream_t stream) {
    transpose_kernel<E><<<tile_grid(rows, cols), dim3(kTile, kTileRows), 0, stream>>>(
        static_cast<const E*>(x), static_cast<int>(rows), static_cast<int>(cols), static_cast<E*>(out));
}

}  // namespace

void launch_cast(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type type, float* amax,
                 cudaStream_t stream) {
    switch (dtype) {
        case DType::Float32: cast_typed<float>(x, n, scale, out, type, amax, stream); break;
        case DType::BFloat16: cast_typed<__nv_bfloat16>(x, n, scale, out, type, amax, stream); break;
        case DType::Float16: cast_typed<__half>(x, n, scale, out, type, amax, stream); break;
    }
    check_last_launch("tewb::kernels::cast_to_fp8");
}

int cast_transpose_dbias_chunks(std::size_t rows) {
    return static_cast<int>(std::clamp<std::size_t>((rows + kTile - 1) / kTile, 1, kDbiasMaxChunks));
}

namespace {

dim3 cast_transpose_any(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                        void* out_t, Fp8Type type, float* amax, const ColumnSumTarget& dbias, cudaStream_t stream) {
    switch (dtype) {
        case DType::Float32: return cast_transpose_typed<float>(x, rows, cols, scale, out, out_t, type, amax, dbias, stream);
        case DType::BFloat16:
            return cast_transpose_typed<__nv_bfloat16>(x, rows, cols, scale, out, out_t, type, amax, dbias, stream);
        case DType::Float16: return cast_transpose_typed<__half>(x, rows, cols, scale, out, out_t, type, amax, dbias, stream);
    }
    return dim3(0, 0);
}

}  // namespace

void launch_cast_transpose(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type type, float* amax, cudaStream_t stream) {
    cast_transpose_any(x, dtype, rows, cols, scale, out, out_t, type, amax, ColumnSumTarget{}, stream);
    check_last_launch("tewb::kernels::cast_transpose_to_fp8");
}

void launch_cast_transpose_dbias(const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                 const Workspace& workspace, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_dbias_to_fp8";
    const ColumnSumTarget target{static_cast<float*>(workspace.data), dbias.data, dbias.dtype};
    const dim3 grid = cast_transpose_any(x.data, x.dtype, x.rows, x.cols, out.scale, out.data, out.transposed, out.type, out.amax,
                                         target, stream);
    check_last_launch(call);
    if (!column_sum_in_kernel(grid.x)) {
        launch_column_sum(target.partial, static_cast<int>(grid.y), x.cols, dbias.data, dbias.dtype, stream, call);
    }
}

void launch_block_cast(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       const BlockCastOutput& out, cudaStream_t stream) {
    switch (dtype) {
        case DType::Float32: block_cast_typed<float>(x, rows, cols, block_rows, power_of_two, out, stream); break;
        case DType::BFloat16: block_cast_typed<__nv_bfloat16>(x, rows, cols, block_rows, power_of_two, out, stream); break;
        case DType::Float16: block_cast_typed<__half>(x, rows, cols, block_rows, power_of_two, out, stream); break;
    }
    constexpr const char* call = "tewb::kernels::block_cast_to_fp8";
    check_last_launch(call);
    const std::size_t col_tiles = (cols + kBlockCols - 1) / kBlockCols;
    if (out.dbias != nullptr && !column_sum_in_kernel(col_tiles)) {
        const int row_tiles = static_cast<int>((rows + kBlockCols - 1) / kBlockCols);
        launch_column_sum(static_cast<const float*>(out.dbias_workspace), row_tiles, cols, out.dbias, DType::Float32, stream, call);
    }
}

void launch_block_cast_multi(const std::vector<BlockCastItem>& work, DType dtype, int block_rows, bool power_of_two,
                             cudaStream_t stream) {
    switch (dtype) {
        case DType::Float32: block_cast_multi_typed<float>(work, block_rows, power_of_two, stream); break;
        case DType::BFloat16: block_cast_multi_typed<__nv_bfloat16>(work, block_rows, power_of_two, stream); break;
        case DType::Float16: block_cast_multi_typed<__half>(work, block_rows, power_of_two, stream); break;
    }
}

void launch_transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out,
                      cudaStream_t stream) {
    switch (element_bytes) {
        case 1: transpose_typed<std::uint8_t>(x, rows, cols, out, stream); break;
        case 2: transpose_typed<std::uint16_t>(x, rows, cols, out, stream); break;
        default: transpose_typed<std::uint32_t>(x, rows, cols, out, stream); break;
    }
    check_last_launch("tewb::kernels::transpose");
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

std::uint8_t cast_one_to_fp8(float x, float scale, Fp8Type type) {
    return detail::fp8_from_float(x * scale, type);
}

}  // namespace tewb::kernels
