#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "cast/cast_items.h"
#include "common/alignment.h"
#include "common/arguments.h"
#include "common/column_sum_rule.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::host {

namespace {

using detail::BlockCastOutput;

// The kernels' geometry (cast.cu): it decides the order of dbias's partial sums, so it is mirrored here.
constexpr std::size_t kTile = 32;          // cast_transpose_kernel's tile: a 32 x 8 thread block
constexpr std::size_t kTileRows = 8;       // its thread rows: row j of a tile is summed by thread row j % 8
constexpr std::size_t kWideTile = 64;      // cast_transpose_wide_kernel's tile
constexpr std::size_t kWideThreads = 256;  // its threads, each reading 16 bytes of a row
constexpr std::size_t kDbiasMaxChunks = detail::kCastTransposeDbiasMaxChunks;
constexpr std::size_t kBlockCols = 128;  // Float8BlockScaling's block width

// Below this many elements per thread, starting threads costs more than it saves.
constexpr std::size_t kElementsPerThread = std::size_t{1} << 16;
constexpr std::size_t kMostThreads = 16;

template <DType kType>
using DTypeTag = std::integral_constant<DType, kType>;

// Calls body(DTypeTag<dtype>) so that the loads in its loops are specialised for the dtype.
template <typename Body>
decltype(auto) with_dtype(DType dtype, Body&& body) {
    switch (dtype) {
        case DType::BFloat16: return body(DTypeTag<DType::BFloat16>{});
        case DType::Float16: return body(DTypeTag<DType::Float16>{});
        default: break;  // float32; the checks refused the rest
    }
    return body(DTypeTag<DType::Float32>{});
}

template <Fp8Type kFp8>
using Fp8Tag = std::integral_constant<Fp8Type, kFp8>;

// Calls body(DTypeTag<dtype>, Fp8Tag<type>): the FP8 conversion with its format known at compile time runs
// about twice as fast.
template <typename Body>
decltype(auto) with_types(DType dtype, Fp8Type type, Body&& body) {
    return with_dtype(dtype, [&](auto dtype_tag) -> decltype(auto) {
        if (type == Fp8Type::E5M2) return body(dtype_tag, Fp8Tag<Fp8Type::E5M2>{});
        return body(dtype_tag, Fp8Tag<Fp8Type::E4M3>{});
    });
}

// Runs work(part, begin, end) over [0, items) split into contiguous parts, one thread each when each part
// gets at least `min_items_per_part` items. Callers only split work whose
// result does not depend on the split (element-wise, a max, or sums whose order is fixed per item).
template <typename Work>
void split_over_threads(std::size_t items, std::size_t min_items_per_part, Work&& work) {
    const std::size_t hardware = std::max<std::size_t>(1, std::thread::hardware_concurrency());
    const std::size_t most_parts = std::min(hardware, kMostThreads);
    const std::size_t parts = std::clamp<std::size_t>(items / std::max<std::size_t>(1, min_items_per_part), 1, most_parts);
    if (parts == 1) {
        work(std::size_t{0}, std::size_t{0}, items);
        return;
    }
    std::vector<std::thread> threads;
    threads.reserve(parts - 1);
    const std::size_t per_part = (items + parts - 1) / parts;
    for (std::size_t part = 1; part < parts; ++part) {
        const std::size_t begin = std::min(items, part * per_part);
        const std::size_t end = std::min(items, begin + per_part);
        threads.emplace_back([&work, part, begin, end] { work(part, begin, end); });
    }
    work(std::size_t{0}, std::size_t{0}, std::min(items, per_part));
    for (std::thread& thread : threads) thread.join();
}

// The kernels' amax combine: atomicMax on the bits of amax[0], so the larger pattern stays and a NaN
// (above inf as bits) wins.
void combine_amax(float* amax, std::uint32_t local_bits) {
    if (amax == nullptr) return;
    std::uint32_t held = 0;
    std::memcpy(&held, amax, sizeof held);
    if (local_bits > held) std::memcpy(amax, &local_bits, sizeof local_bits);
}

// The GPU's float arithmetic gives one NaN, 0x7fffffff, whatever NaN went in; x86 keeps the operand's.
void store_sum(void* out, DType dtype, std::size_t i, float sum) {
    if (std::isnan(sum)) sum = detail::bits_float(0x7fffffffu);
    if (dtype == DType::Float32) {
        const std::uint32_t bits = detail::float_bits(sum);
        std::memcpy(static_cast<std::uint8_t*>(out) + i * sizeof(float), &bits, sizeof bits);
        return;
    }
    detail::store(out, dtype, i, sum);
}

// dbias from the partial rows: 0 + row 0 + row 1 + ..., per column, stored as the kernel stores it.
void sum_partial_rows(const float* partial, std::size_t chunks, std::size_t cols, void* dbias, DType dbias_dtype) {
    std::vector<float> sums(cols, 0.0f);
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
        const float* row = partial + chunk * cols;
        for (std::size_t c = 0; c < cols; ++c) sums[c] += row[c];
    }
    for (std::size_t c = 0; c < cols; ++c) store_sum(dbias, dbias_dtype, c, sums[c]);
}

void note_launches(int launches) {
    for (int i = 0; i < launches; ++i) detail::note_launch();
}

template <DType kType, Fp8Type kFp8>
std::uint32_t cast_range(const void* x, std::size_t begin, std::size_t end, float scale, std::uint8_t* out) {
    std::uint32_t local = 0;
    for (std::size_t i = begin; i < end; ++i) {
        const float v = detail::load(x, kType, i);
        local = std::max(local, detail::abs_bits(v));
        out[i] = detail::float_to_fp8(v * scale, kFp8);
    }
    return local;
}

// Rows [row_begin, row_end) of x: out and out_t, walked in square tiles so that out_t's writes stay in cache.
template <DType kType, Fp8Type kFp8>
std::uint32_t cast_transpose_rows(const void* x, std::size_t rows, std::size_t cols, std::size_t row_begin, std::size_t row_end,
                                  float scale, std::uint8_t* out, std::uint8_t* out_t) {
    std::uint32_t local = 0;
    for (std::size_t r0 = row_begin; r0 < row_end; r0 += kTile) {
        const std::size_t r1 = std::min(row_end, r0 + kTile);
        for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
            const std::size_t c1 = std::min(cols, c0 + kTile);
            for (std::size_t r = r0; r < r1; ++r) {
                for (std::size_t c = c0; c < c1; ++c) {
                    const std::size_t at = r * cols + c;
                    const float v = detail::load(x, kType, at);
                    local = std::max(local, detail::abs_bits(v));
                    const std::uint8_t q = detail::float_to_fp8(v * scale, kFp8);
                    out[at] = q;
                    out_t[c * rows + r] = q;
                }
            }
        }
    }
    return local;
}

std::uint32_t cast_transpose_all(const void* x, DType dtype, std::size_t rows, std::size_t cols, float scale, void* out,
                                 void* out_t, Fp8Type type) {
    return with_types(dtype, type, [&](auto dtype_tag, auto fp8_tag) {
        constexpr DType kType = decltype(dtype_tag)::value;
        constexpr Fp8Type kFp8 = decltype(fp8_tag)::value;
        const std::size_t row_tiles = (rows + kTile - 1) / kTile;
        std::vector<std::uint32_t> part_amax(kMostThreads, 0);
        split_over_threads(row_tiles, std::max<std::size_t>(1, kElementsPerThread / (kTile * cols)),
                           [&](std::size_t part, std::size_t tile_begin, std::size_t tile_end) {
                               part_amax[part] = cast_transpose_rows<kType, kFp8>(
                                   x, rows, cols, tile_begin * kTile, std::min(rows, tile_end * kTile), scale,
                                   static_cast<std::uint8_t*>(out), static_cast<std::uint8_t*>(out_t));
                           });
        return *std::max_element(part_amax.begin(), part_amax.end());
    });
}

// How the GPU splits dbias's column sums, from the kernel cast_transpose_dbias launches (cast.cu): x's rows
// go in tiles of `tile` rows; chunk k (a block row of the grid, one row of the workspace) takes tiles k,
// k + chunks, k + 2 · chunks, ...; within a tile, row j is summed by thread group j % groups, each group in
// row order; the chunk's partial sum is then 0 + group 0 + group 1 + ... in that order.
struct DbiasOrder {
    std::size_t tile = kTile;
    std::size_t groups = kTileRows;
    std::size_t chunks = 1;
};

// `x_fits`: the rows of x (or of every part of a stacked x) start 16-byte aligned and a 16-byte read stays in one part.
DbiasOrder dbias_order(bool x_fits, DType dtype, std::size_t rows, std::size_t cols, const void* out, const void* out_t) {
    DbiasOrder order;
    // The vectorised kernel reads 16 bytes of a row per thread; it exists for float32 and bfloat16 only.
    const std::size_t per_vector = 16 / element_size(dtype);
    const bool wide = dtype != DType::Float16 && rows % 8 == 0 && cols % per_vector == 0 && x_fits &&
                      detail::aligned(out, per_vector) && detail::aligned(out_t, 8);
    if (wide) {
        order.tile = kWideTile;
        order.groups = kWideThreads / (kWideTile / per_vector);
    }
    order.chunks = std::min((rows + order.tile - 1) / order.tile, kDbiasMaxChunks);
    return order;
}

// Chunk `chunk`'s partial column sums into partial[chunk · cols + c], in the kernel's order. `group_sums`
// is scratch for order.groups × cols floats.
template <DType kType>
void dbias_chunk(const void* x, std::size_t rows, std::size_t cols, const DbiasOrder& order, std::size_t chunk, float* partial,
                 std::vector<float>& group_sums) {
    group_sums.assign(order.groups * cols, 0.0f);
    const std::size_t tiles = (rows + order.tile - 1) / order.tile;
    for (std::size_t tile = chunk; tile < tiles; tile += order.chunks) {
        const std::size_t r0 = tile * order.tile;
        const std::size_t r1 = std::min(rows, r0 + order.tile);
        for (std::size_t r = r0; r < r1; ++r) {
            float* sums = group_sums.data() + ((r - r0) % order.groups) * cols;
            const std::size_t row_start = r * cols;
            for (std::size_t c = 0; c < cols; ++c) sums[c] += detail::load(x, kType, row_start + c);
        }
    }
    float* out = partial + chunk * cols;
    for (std::size_t c = 0; c < cols; ++c) out[c] = 0.0f;
    for (std::size_t g = 0; g < order.groups; ++g) {
        const float* sums = group_sums.data() + g * cols;
        for (std::size_t c = 0; c < cols; ++c) out[c] += sums[c];
    }
    for (std::size_t c = 0; c < cols; ++c) {
        if (std::isnan(out[c])) out[c] = detail::bits_float(0x7fffffffu);
    }
}

float block_scale(std::uint32_t amax_bits, Fp8Type type, bool power_of_two) {
    const float amax = detail::bits_float(amax_bits);
    float scale = fp8_max(type) / amax;
    if (std::isinf(scale)) scale = 3.402823466e+38f;
    if (power_of_two) scale = detail::bits_float(detail::float_bits(scale) & 0x7f800000u);
    if (!(amax > 0.0f) || !std::isfinite(amax)) scale = 1.0f;
    return scale;
}

std::size_t round_up_4(std::size_t n) {
    return (n + 3) / 4 * 4;
}

// The block cast's partial dbias row of row tile `tr` (128 rows) into partial[0, cols), in the kernel's
// order: a warp holds 16 rows of the tile, each lane summing its columns over them in row order from 0 (a
// row outside x adds 0, as the kernel's zero-filled registers), then the 8 warps' sums added in order from 0.
// A NaN sum as the GPU's one NaN.
void block_dbias_row_tile(const void* x, DType dtype, std::size_t rows, std::size_t cols, std::size_t tr, float* partial) {
    constexpr std::size_t kRowsPerWarp = 16;
    constexpr std::size_t kWarps = kBlockCols / kRowsPerWarp;
    std::vector<float> warp_sum(cols), row(cols);
    std::fill_n(partial, cols, 0.0f);
    for (std::size_t w = 0; w < kWarps; ++w) {
        std::fill(warp_sum.begin(), warp_sum.end(), 0.0f);
        for (std::size_t i = 0; i < kRowsPerWarp; ++i) {
            const std::size_t r = tr * kBlockCols + w * kRowsPerWarp + i;
            if (r < rows) {
                detail::load_floats(x, dtype, r * cols, cols, row.data());
            } else {
                std::fill(row.begin(), row.end(), 0.0f);
            }
            for (std::size_t c = 0; c < cols; ++c) warp_sum[c] += row[c];
        }
        for (std::size_t c = 0; c < cols; ++c) partial[c] += warp_sum[c];
    }
    for (std::size_t c = 0; c < cols; ++c) {
        if (std::isnan(partial[c])) partial[c] = detail::bits_float(0x7fffffffu);
    }
}

// The block cast of the row tiles [tile_begin, tile_end) (128 rows each), tile by tile as the kernel's
// thread blocks: the tile's row, column and whole amaxes, then its outputs. Returns max |x| as bits.
template <DType kType, Fp8Type kFp8>
std::uint32_t block_cast_row_tiles(const void* x, std::size_t rows, std::size_t cols, bool weight_blocks, bool power_of_two,
                                   const BlockCastOutput& out, std::size_t tile_begin, std::size_t tile_end) {
    const std::size_t col_tiles = (cols + kBlockCols - 1) / kBlockCols;
    const std::size_t row_tiles = (rows + kBlockCols - 1) / kBlockCols;
    auto* data = static_cast<std::uint8_t*>(out.data);
    auto* transposed = static_cast<std::uint8_t*>(out.transposed);
    std::vector<float> tile(kBlockCols * kBlockCols);
    std::uint32_t row_bits[kBlockCols];
    std::uint32_t col_bits[kBlockCols];
    float row_scale[kBlockCols];
    float col_scale[kBlockCols];
    std::uint32_t all_bits = 0;
    auto* partial = static_cast<float*>(out.dbias_workspace);
    for (std::size_t tr = tile_begin; tr < tile_end; ++tr) {
        const std::size_t r0 = tr * kBlockCols;
        const std::size_t height = std::min(rows, r0 + kBlockCols) - r0;
        if (out.dbias != nullptr) block_dbias_row_tile(x, kType, rows, cols, tr, partial + tr * cols);
        for (std::size_t tc = 0; tc < col_tiles; ++tc) {
            const std::size_t c0 = tc * kBlockCols;
            const std::size_t width = std::min(cols, c0 + kBlockCols) - c0;
            std::fill(std::begin(col_bits), std::end(col_bits), 0u);
            std::uint32_t tile_bits = 0;
            for (std::size_t i = 0; i < height; ++i) {
                float* row = tile.data() + i * kBlockCols;
                detail::load_floats(x, kType, (r0 + i) * cols + c0, width, row);
                std::uint32_t bits = 0;
                for (std::size_t j = 0; j < width; ++j) {
                    const std::uint32_t b = detail::abs_bits(row[j]);
                    bits = std::max(bits, b);
                    col_bits[j] = std::max(col_bits[j], b);
                }
                row_bits[i] = bits;
                tile_bits = std::max(tile_bits, bits);
            }
            all_bits = std::max(all_bits, tile_bits);
            const float tile_scale = block_scale(tile_bits, kFp8, power_of_two);
            for (std::size_t i = 0; i < height; ++i)
                row_scale[i] = weight_blocks ? tile_scale : block_scale(row_bits[i], kFp8, power_of_two);
            for (std::size_t j = 0; j < width; ++j)
                col_scale[j] = weight_blocks ? tile_scale : block_scale(col_bits[j], kFp8, power_of_two);
            for (std::size_t i = 0; i < height; ++i) {
                const float* row = tile.data() + i * kBlockCols;
                std::uint8_t* to = data + (r0 + i) * cols + c0;
                for (std::size_t j = 0; j < width; ++j) to[j] = detail::float_to_fp8(row[j] * row_scale[i], kFp8);
            }
            if (transposed != nullptr) {
                for (std::size_t j = 0; j < width; ++j) {
                    std::uint8_t* to = transposed + (c0 + j) * rows + r0;
                    for (std::size_t i = 0; i < height; ++i)
                        to[i] = detail::float_to_fp8(tile[i * kBlockCols + j] * col_scale[j], kFp8);
                }
            }
            // The scales in cuBLASLt's layouts (gemm_types.h), padding 1.
            if (weight_blocks) {
                const std::size_t stride = round_up_4(col_tiles);
                out.scale_inv[tr * stride + tc] = 1.0f / tile_scale;
                if (tc + 1 == col_tiles)
                    std::fill(out.scale_inv + tr * stride + col_tiles, out.scale_inv + (tr + 1) * stride, 1.0f);
                if (transposed != nullptr) {
                    const std::size_t t_stride = round_up_4(row_tiles);
                    out.transposed_scale_inv[tc * t_stride + tr] = 1.0f / tile_scale;
                    if (tr + 1 == row_tiles) {
                        std::fill(out.transposed_scale_inv + tc * t_stride + row_tiles,
                                  out.transposed_scale_inv + (tc + 1) * t_stride, 1.0f);
                    }
                }
            } else {
                const std::size_t stride = round_up_4(rows);
                float* scales = out.scale_inv + tc * stride + r0;
                for (std::size_t i = 0; i < height; ++i) scales[i] = 1.0f / row_scale[i];
                if (tr + 1 == row_tiles) std::fill(out.scale_inv + tc * stride + rows, out.scale_inv + (tc + 1) * stride, 1.0f);
                if (transposed != nullptr) {
                    const std::size_t t_stride = round_up_4(cols);
                    float* t_scales = out.transposed_scale_inv + tr * t_stride + c0;
                    for (std::size_t j = 0; j < width; ++j) t_scales[j] = 1.0f / col_scale[j];
                    if (tc + 1 == col_tiles) {
                        std::fill(out.transposed_scale_inv + tr * t_stride + cols, out.transposed_scale_inv + (tr + 1) * t_stride,
                                  1.0f);
                    }
                }
            }
        }
    }
    return all_bits;
}

template <typename Element>
void transpose_rows(const Element* x, std::size_t rows, std::size_t cols, std::size_t row_begin, std::size_t row_end,
                    Element* out) {
    for (std::size_t r0 = row_begin; r0 < row_end; r0 += kTile) {
        const std::size_t r1 = std::min(row_end, r0 + kTile);
        for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
            const std::size_t c1 = std::min(cols, c0 + kTile);
            for (std::size_t r = r0; r < r1; ++r) {
                for (std::size_t c = c0; c < c1; ++c) out[c * rows + r] = x[r * cols + c];
            }
        }
    }
}

template <typename Element>
void transpose_typed(const void* x, std::size_t rows, std::size_t cols, void* out) {
    const std::size_t row_tiles = (rows + kTile - 1) / kTile;
    split_over_threads(row_tiles, std::max<std::size_t>(1, 4 * kElementsPerThread / (kTile * cols)),
                       [&](std::size_t, std::size_t tile_begin, std::size_t tile_end) {
                           transpose_rows(static_cast<const Element*>(x), rows, cols, tile_begin * kTile,
                                          std::min(rows, tile_end * kTile), static_cast<Element*>(out));
                       });
}

}  // namespace

void cast_to_fp8(const Tensor& x_in, const Tensor& out_in, Stream) {
    detail::check_cast("tewb::kernels::host::cast_to_fp8", x_in, out_in);
    const void* x = x_in.data;
    const DType dtype = x_in.dtype;
    const std::size_t n = x_in.numel();
    void* out = out_in.data;
    const Fp8Type out_type = detail::fp8_type(out_in);
    float* amax = out_in.amax;
    if (n == 0) return;
    const float s = *out_in.scale;
    const std::uint32_t local = with_types(dtype, out_type, [&](auto dtype_tag, auto fp8_tag) {
        constexpr DType kType = decltype(dtype_tag)::value;
        constexpr Fp8Type kFp8 = decltype(fp8_tag)::value;
        std::vector<std::uint32_t> part_amax(kMostThreads, 0);
        split_over_threads(n, kElementsPerThread, [&](std::size_t part, std::size_t begin, std::size_t end) {
            part_amax[part] = cast_range<kType, kFp8>(x, begin, end, s, static_cast<std::uint8_t*>(out));
        });
        return *std::max_element(part_amax.begin(), part_amax.end());
    });
    combine_amax(amax, local);
    detail::note_launch();
}

void cast_transpose_to_fp8(const Tensor& x_in, const Tensor& out_in, Stream) {
    detail::check_cast_transpose("tewb::kernels::host::cast_transpose_to_fp8", x_in, out_in);
    const void* x = x_in.data;
    const DType dtype = x_in.dtype;
    const std::size_t rows = x_in.rows;
    const std::size_t cols = x_in.cols;
    const float* scale = out_in.scale;
    void* out = out_in.data;
    void* out_t = out_in.transposed;
    const Fp8Type out_type = detail::fp8_type(out_in);
    float* amax = out_in.amax;
    if (rows == 0 || cols == 0) return;
    combine_amax(amax, cast_transpose_all(x, dtype, rows, cols, *scale, out, out_t, out_type));
    detail::note_launch();
}

namespace {

// cast_transpose_dbias_to_fp8 without its checks, for x dense (its dbias null: no sums, one launch); `x_fits` as the
// kernel judges it from the pointers it reads (dbias_order).
void cast_transpose_dbias_dense(const Tensor& x_ref, bool x_fits, const Tensor& out, const Tensor& dbias,
                                const Workspace& workspace) {
    const void* x = x_ref.data;
    const DType dtype = x_ref.dtype;
    const std::size_t rows = x_ref.rows;
    const std::size_t cols = x_ref.cols;
    combine_amax(out.amax, cast_transpose_all(x, dtype, rows, cols, *out.scale, out.data, out.transposed, detail::fp8_type(out)));
    if (dbias.data == nullptr) {
        detail::note_launch();
        return;
    }
    const DbiasOrder order = dbias_order(x_fits, dtype, rows, cols, out.data, out.transposed);
    auto* partial = static_cast<float*>(workspace.data);
    with_dtype(dtype, [&](auto tag) {
        constexpr DType kType = decltype(tag)::value;
        const std::size_t rows_per_chunk = (rows + order.chunks - 1) / order.chunks;
        split_over_threads(order.chunks, std::max<std::size_t>(1, kElementsPerThread / (rows_per_chunk * cols)),
                           [&](std::size_t, std::size_t chunk_begin, std::size_t chunk_end) {
                               std::vector<float> group_sums;
                               for (std::size_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
                                   dbias_chunk<kType>(x, rows, cols, order, chunk, partial, group_sums);
                               }
                           });
    });
    // The second stage (column_sum.cuh in the kernel's launch, or column_sum.cu): 0 + chunk 0 + chunk 1 + ...,
    // per column.
    sum_partial_rows(partial, order.chunks, cols, dbias.data, dbias.dtype);
    // The kernel's grid has a column tile per `order.tile` columns (its tiles are square).
    note_launches(detail::column_sum_launches((cols + order.tile - 1) / order.tile));
}

}  // namespace

void cast_transpose_dbias_to_fp8(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                                 Stream) {
    detail::check_cast_transpose_dbias("tewb::kernels::host::cast_transpose_dbias_to_fp8", x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    cast_transpose_dbias_dense(x, detail::aligned(x.data, 16), out, dbias, workspace);
}

void stacked_cast_transpose_dbias_to_fp8(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias,
                                         const Workspace& workspace, Stream) {
    const Tensor shape = detail::check_stacked_cast_transpose_dbias("tewb::kernels::host::stacked_cast_transpose_dbias_to_fp8",
                                                                    parts, count, out, dbias, workspace);
    if (shape.rows == 0 || shape.cols == 0) return;
    const std::vector<unsigned char> gathered = detail::gather_stacked(parts, count);
    const bool fits = detail::stacked_parts_aligned(parts, count, 16) && parts[0].cols % (16 / element_size(shape.dtype)) == 0;
    cast_transpose_dbias_dense(input(gathered.data(), shape.dtype, shape.rows, shape.cols), fits, out, dbias, workspace);
}

void transpose(const Tensor& x_in, const Tensor& out_in, Stream) {
    detail::check_transpose("tewb::kernels::host::transpose", x_in, out_in);
    const void* x = x_in.data;
    void* out = out_in.data;
    const std::size_t rows = x_in.rows;
    const std::size_t cols = x_in.cols;
    const std::size_t element_bytes = element_size(x_in.dtype);
    if (rows == 0 || cols == 0) return;
    switch (element_bytes) {
        case 1: transpose_typed<std::uint8_t>(x, rows, cols, out); break;
        case 2: transpose_typed<std::uint16_t>(x, rows, cols, out); break;
        default: transpose_typed<std::uint32_t>(x, rows, cols, out); break;
    }
    detail::note_launch();
}

void block_cast_to_fp8(const Tensor& x, const Tensor& out_in, bool power_of_two, const Tensor& dbias,
                       const Workspace& dbias_workspace, Stream) {
    detail::check_block_cast("tewb::kernels::host::block_cast_to_fp8", x, out_in, dbias, dbias_workspace);
    const std::size_t rows = x.rows;
    const std::size_t cols = x.cols;
    if (rows == 0 || cols == 0) return;
    const detail::BlockCastOutput out = detail::block_cast_output(out_in, dbias, dbias_workspace);
    detail::host_block_cast(x.data, x.dtype, rows, cols, detail::block_rows(out_in), power_of_two, out);
    if (out.dbias == nullptr) {
        detail::note_launch();
        return;
    }
    note_launches(detail::column_sum_launches((cols + kBlockCols - 1) / kBlockCols));
}

}  // namespace tewb::kernels::host

namespace tewb::kernels::detail {

void host_block_cast(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                     const BlockCastOutput& out) {
    using namespace tewb::kernels::host;
    const std::size_t row_tiles = (rows + kBlockCols - 1) / kBlockCols;
    const std::uint32_t local = with_types(dtype, out.type, [&](auto dtype_tag, auto fp8_tag) {
        constexpr DType kType = decltype(dtype_tag)::value;
        constexpr Fp8Type kFp8 = decltype(fp8_tag)::value;
        std::vector<std::uint32_t> part_amax(kMostThreads, 0);
        split_over_threads(row_tiles, std::max<std::size_t>(1, kElementsPerThread / (kBlockCols * cols)),
                           [&](std::size_t part, std::size_t begin, std::size_t end) {
                               part_amax[part] = block_cast_row_tiles<kType, kFp8>(x, rows, cols, block_rows != 1, power_of_two,
                                                                                   out, begin, end);
                           });
        return *std::max_element(part_amax.begin(), part_amax.end());
    });
    combine_amax(out.amax, local);
    // The tiles' partial rows (written above, one per row tile), added in order: in the kernel's launch
    // (column_sum.cuh) or, past the counters, by launch_column_sum.
    if (out.dbias != nullptr) sum_partial_rows(static_cast<const float*>(out.dbias_workspace), row_tiles, cols, out.dbias, DType::Float32);
}

}  // namespace tewb::kernels::detail
