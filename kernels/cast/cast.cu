// FP8 casts with amax, cast + transpose (optionally with the column sums of x: a bias gradient), transpose.
// Bytes: the input read once, each output written once; the floor is copy bandwidth. Cast + transpose has
// a vectorised kernel for aligned shapes (rows a multiple of 8, cols of 16 / sizeof(x)) and a plain
// byte-wise one for the rest. The conversion is CUDA's own float-to-FP8 (round to nearest even,
// saturating finite), on the device and, for the host reference, on the host.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cast/cast_items.h"
#include "cast/fp8_tile.cuh"
#include "cast/row_sources.h"
#include "common/arguments.h"
#include "common/alignment.h"
#include "common/byte_transpose.cuh"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a 32 x 8 block walks a 32 x 32 tile
constexpr int kMaxGridY = 65535;
// With dbias, the tile rows of x are walked by at most this many blocks per column tile, each leaving one
// row of partial column sums: a small second stage (64 x cols floats) and still hundreds of blocks.
constexpr int kDbiasMaxChunks = static_cast<int>(kCastTransposeDbiasMaxChunks);

// A thread takes W = 16 / sizeof(T) elements: one 16-byte vector of x (`vectors` of them; none where x is not 16-byte
// aligned) and their bytes in one W-byte store where out is W-byte aligned; then the elements past the last whole
// vector one by one.
template <typename T>
__global__ void cast_kernel(const T* __restrict__ x, std::size_t n, std::size_t vectors, const float* __restrict__ scale,
                            std::uint8_t* __restrict__ out, bool vector_out, Fp8Type type, float* amax) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    const float s = *scale;
    unsigned local = 0;
    const std::size_t items = vectors + (n - vectors * W);
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < items; item += stride) {
        if (item < vectors) {
            const std::size_t at = item * W;
            const uint4 raw = *reinterpret_cast<const uint4*>(x + at);
            const T* v = reinterpret_cast<const T*>(&raw);
            alignas(8) std::uint8_t bytes[W];
#pragma unroll
            for (int i = 0; i < W; ++i) {
                const float f = to_float(v[i]);
                local = max(local, abs_bits(f));
                bytes[i] = fp8_from_float(f * s, type);
            }
            store_fp8_piece<W>(out + at, bytes, W, vector_out);
        } else {
            const std::size_t at = vectors * W + (item - vectors);
            const float f = to_float(x[at]);
            local = max(local, abs_bits(f));
            out[at] = fp8_from_float(f * s, type);
        }
    }
    combine_block_amax(local, amax);
}

// kDbias: also the column sums of x over the rows this block walks, into dbias.partial[blockIdx.y, :], and
// the last block of a column tile finishes the tile's sums (column_sum.cuh) unless dbias.out is null. x: a DenseRows or
// StackedRows (row_sources.h).
template <typename Source, bool kDbias>
__global__ void cast_transpose_kernel(const Source x, int rows, int cols, const float* __restrict__ scale,
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
                const float v = to_float(*x.at(r, c));
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
// W-byte pieces, the FP8 tile kept in shared memory (word stores) and `out_t` written in 8-byte pieces (8 rows of x at
// one column): a thread reads an 8 x 4 block of the tile as 8 words and turns them into 4 pieces with byte permutes
// (transpose_4x4), where 4 threads each loaded 8 single bytes with 4-way bank conflicts. For rows a multiple of 8,
// cols a multiple of W and aligned pointers (cast_transpose_fits).
constexpr int kWideTile = kFp8Tile;
constexpr int kWideThreads = 256;
template <typename Source, bool kDbias>
__global__ void __launch_bounds__(kWideThreads)
    cast_transpose_wide_kernel(const Source x, int rows, int cols, const float* __restrict__ scale,
                               std::uint8_t* __restrict__ out, std::uint8_t* __restrict__ out_t, Fp8Type type, float* amax,
                               ColumnSumTarget dbias) {
    using T = typename Source::Element;
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kWideTile / W;
    constexpr int kRowsPerPass = kWideThreads / kVecsPerRow;
    static_assert(kWideTile == 64, "byte_transpose.cuh's tile");
    __shared__ __align__(4) std::uint8_t tile[kWideTile][kByteTilePitch];
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
                float v[W];
                unpack(*reinterpret_cast<const uint4*>(x.at(r, c)), v);
                if constexpr (kDbias) {
#pragma unroll
                    for (int i = 0; i < W; ++i) sums[i] += v[i];
                }
                store_fp8_vector<W>(v, s, type, out + at, &tile[j][vec * W], local);
            }
        }
        __syncthreads();
        store_tile_transposed(&tile[0][0], out_t, rows, cols, r0, static_cast<int>(blockIdx.x) * kWideTile);
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

template <typename T>
void cast_typed(const void* x, std::size_t n, const float* scale, void* out, Fp8Type type, float* amax, cudaStream_t stream) {
    constexpr std::size_t W = 16 / sizeof(T);
    const std::size_t vectors = aligned(x, 16) ? n / W : 0;
    const std::size_t items = vectors + (n - vectors * W);
    const int blocks = static_cast<int>(std::min<std::size_t>((items + kThreads - 1) / kThreads, kMaxBlocks));
    cast_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, vectors, scale, static_cast<std::uint8_t*>(out),
                                                    aligned(out, W), type, amax);
}

// Launches the cast + transpose of x read through `source` and returns its grid; `x_fits`: x's rows may be read 16 bytes
// at a time (every row start 16-byte aligned). With dbias.partial set, the kernel also leaves the column sums: finished
// in this launch where the grid's column tiles fit the arrival counters (dbias.out is cleared otherwise: the caller then
// sums the grid.y partial rows with launch_column_sum).
template <typename Source>
dim3 cast_transpose_typed(const Source& source, bool x_fits, std::size_t rows, std::size_t cols, const float* scale, void* out,
                          void* out_t, Fp8Type type, float* amax, ColumnSumTarget dbias, cudaStream_t stream) {
    using T = typename Source::Element;
    constexpr std::size_t W = 16 / sizeof(T);
    const bool with_dbias = dbias.partial != nullptr;
    const std::size_t max_y = with_dbias ? kDbiasMaxChunks : kMaxGridY;
    const auto launch = [&](auto kernel, dim3 grid, dim3 block) {
        if (!column_sum_in_kernel(grid.x)) dbias.out = nullptr;
        kernel<<<grid, block, 0, stream>>>(source, static_cast<int>(rows), static_cast<int>(cols), scale,
                                           static_cast<std::uint8_t*>(out), static_cast<std::uint8_t*>(out_t), type, amax, dbias);
        return grid;
    };
    if constexpr (sizeof(T) != 2 || std::is_same_v<T, __nv_bfloat16>) {
        const bool fits = rows % 8 == 0 && cols % W == 0 && x_fits && aligned(out, W) && aligned(out_t, 8);
        if (fits) {
            const dim3 grid(static_cast<unsigned>((cols + kWideTile - 1) / kWideTile),
                            static_cast<unsigned>(std::min<std::size_t>((rows + kWideTile - 1) / kWideTile, max_y)));
            return with_dbias ? launch(cast_transpose_wide_kernel<Source, true>, grid, dim3(kWideThreads))
                              : launch(cast_transpose_wide_kernel<Source, false>, grid, dim3(kWideThreads));
        }
    }
    const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                    static_cast<unsigned>(std::min<std::size_t>((rows + kTile - 1) / kTile, max_y)));
    return with_dbias ? launch(cast_transpose_kernel<Source, true>, grid, dim3(kTile, kTileRows))
                      : launch(cast_transpose_kernel<Source, false>, grid, dim3(kTile, kTileRows));
}

// Either input layout: x dense (parts null), or `count` parts side by side (x then gives only the shape and dtype).
template <typename T>
dim3 cast_transpose_from(const Tensor& x, const Tensor* parts, std::size_t count, const float* scale, void* out, void* out_t,
                         Fp8Type type, float* amax, const ColumnSumTarget& dbias, cudaStream_t stream) {
    if (parts == nullptr) {
        const DenseRows<T> source{static_cast<const T*>(x.data), x.cols};
        return cast_transpose_typed(source, aligned(x.data, 16), x.rows, x.cols, scale, out, out_t, type, amax, dbias, stream);
    }
    StackedRows<T> source;
    source.part_cols = static_cast<int>(parts[0].cols);
    for (std::size_t p = 0; p < count; ++p) {
        source.part[p] = static_cast<const T*>(parts[p].data);
        source.stride[p] = parts[p].stride();
    }
    // A 16-byte read must stay inside one part.
    const bool fits = stacked_parts_aligned(parts, count, 16) && parts[0].cols % (16 / sizeof(T)) == 0;
    return cast_transpose_typed(source, fits, x.rows, x.cols, scale, out, out_t, type, amax, dbias, stream);
}

template <typename E>
void transpose_typed(const void* x, std::size_t rows, std::size_t cols, void* out, cudaStream_t stream) {
    transpose_kernel<E><<<tile_grid(rows, cols), dim3(kTile, kTileRows), 0, stream>>>(
        static_cast<const E*>(x), static_cast<int>(rows), static_cast<int>(cols), static_cast<E*>(out));
}

dim3 cast_transpose_any(const Tensor& x, const Tensor* parts, std::size_t count, const float* scale, void* out, void* out_t,
                        Fp8Type type, float* amax, const ColumnSumTarget& dbias, cudaStream_t stream) {
    switch (x.dtype) {
        case DType::BFloat16:
            return cast_transpose_from<__nv_bfloat16>(x, parts, count, scale, out, out_t, type, amax, dbias, stream);
        case DType::Float16: return cast_transpose_from<__half>(x, parts, count, scale, out, out_t, type, amax, dbias, stream);
        default: return cast_transpose_from<float>(x, parts, count, scale, out, out_t, type, amax, dbias, stream);
    }
}

// cast_transpose_dbias_to_fp8 of x, dense or in parts; without dbias.data the sums are not made.
void launch_cast_transpose_dbias(const char* call, const Tensor& x, const Tensor* parts, std::size_t count, const Tensor& out,
                                 const Tensor& dbias, const Workspace& workspace, cudaStream_t stream) {
    const bool sums = dbias.data != nullptr;
    const ColumnSumTarget target = sums ? ColumnSumTarget{static_cast<float*>(workspace.data), dbias.data, dbias.dtype} : ColumnSumTarget{};
    const dim3 grid =
        cast_transpose_any(x, parts, count, out.scale, out.data, out.transposed, fp8_type(out), out.amax, target, stream);
    check_last_launch(call);
    if (sums && !column_sum_in_kernel(grid.x)) {
        launch_column_sum(target.partial, static_cast<int>(grid.y), x.cols, dbias.data, dbias.dtype, stream, call);
    }
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void cast_to_fp8(const Tensor& x, const Tensor& out, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::cast_to_fp8";
    check_cast(call, x, out);
    const std::size_t n = x.numel();
    if (n == 0) return;
    const cudaStream_t stream = cuda_stream(on);
    const Fp8Type type = fp8_type(out);
    switch (x.dtype) {
        case DType::BFloat16: cast_typed<__nv_bfloat16>(x.data, n, out.scale, out.data, type, out.amax, stream); break;
        case DType::Float16: cast_typed<__half>(x.data, n, out.scale, out.data, type, out.amax, stream); break;
        default: cast_typed<float>(x.data, n, out.scale, out.data, type, out.amax, stream); break;
    }
    check_last_launch(call);
}

void cast_transpose_to_fp8(const Tensor& x, const Tensor& out, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::cast_transpose_to_fp8";
    check_cast_transpose(call, x, out);
    if (x.rows == 0 || x.cols == 0) return;
    cast_transpose_any(x, nullptr, 0, out.scale, out.data, out.transposed, fp8_type(out), out.amax, ColumnSumTarget{},
                       cuda_stream(on));
    check_last_launch(call);
}

void cast_transpose_dbias_to_fp8(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                                 Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::cast_transpose_dbias_to_fp8";
    check_cast_transpose_dbias(call, x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    launch_cast_transpose_dbias(call, x, nullptr, 0, out, dbias, workspace, cuda_stream(on));
}

void stacked_cast_transpose_dbias_to_fp8(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias,
                                         const Workspace& workspace, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::stacked_cast_transpose_dbias_to_fp8";
    const Tensor x = check_stacked_cast_transpose_dbias(call, parts, count, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    launch_cast_transpose_dbias(call, x, parts, count, out, dbias, workspace, cuda_stream(on));
}

void transpose(const Tensor& x, const Tensor& out, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::transpose";
    check_transpose(call, x, out);
    if (x.rows == 0 || x.cols == 0) return;
    const cudaStream_t stream = cuda_stream(on);
    switch (element_size(x.dtype)) {
        case 1: transpose_typed<std::uint8_t>(x.data, x.rows, x.cols, out.data, stream); break;
        case 2: transpose_typed<std::uint16_t>(x.data, x.rows, x.cols, out.data, stream); break;
        default: transpose_typed<std::uint32_t>(x.data, x.rows, x.cols, out.data, stream); break;
    }
    check_last_launch(call);
}

std::uint8_t cast_one_to_fp8(float x, float scale, Fp8Type type) {
    return detail::fp8_from_float(x * scale, type);
}

}  // namespace tewb::kernels
