// The multi-tensor cast + transpose: many tensors (a model's weights), each with its own scale, outputs and
// amax, in one launch per kCastMultiItemsPerLaunch of them. The items travel in the kernel's parameters
// (__grid_constant__: read where they are, not copied per thread; about 4.6 KiB of them, which needs CUDA 12.1);
// each thread block takes one 64 x 64 tile of one item, found from the items' first tiles. An item whose rows can be
// read 16 bytes at a time (float32 or bfloat16, rows a multiple of 8, aligned: `wide`, as cast.cu's vectorised kernel
// chooses) takes that kernel's tile (x in 16-byte vectors, out in 4- or 8-byte pieces, out_t in 8-byte pieces from
// byte_transpose.cuh's 8 x 4 blocks); the others go element by element. Values as cast_transpose_to_fp8's: the same
// float32 product and conversion.
#include <cstdint>
#include <vector>

#include "cast/cast_items.h"
#include "cast/fp8_tile.cuh"
#include "common/byte_transpose.cuh"
#include "common/alignment.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/cast_multi.h"

namespace tewb::kernels {

namespace {

using detail::abs_bits;
using detail::combine_block_amax;
using detail::fp8_from_float;
using detail::kByteTilePitch;
using detail::load;

constexpr int kTile = static_cast<int>(detail::kCastMultiTile);
constexpr int kThreads = 256;
constexpr int kLanesPerRow = kTile / 4;             // 16 threads per tile row, 4 columns each
constexpr int kRowsPerPass = kThreads / kLanesPerRow;  // 16 rows per pass

struct DeviceItem {
    const void* x;
    const float* scale;
    std::uint8_t* out;
    std::uint8_t* out_t;
    float* amax;
    int rows;
    int cols;
    int tiles_x;
    unsigned first_tile;
    DType dtype;
    Fp8Type type;
    bool wide;
};

struct Batch {
    DeviceItem items[kCastMultiItemsPerLaunch];
    int count;
};
// 4616 bytes: beyond the classic 4 KiB of kernel parameters, within the 32764 CUDA 12.1 and later allow on
// Volta and newer (with a driver of r530 or later).
static_assert(sizeof(Batch) <= 32764, "kernel parameters are limited to 32764 bytes");
#if CUDART_VERSION < 12010
#error "the multi-tensor casts pass more than 4 KiB of kernel parameters: CUDA 12.1 or later is needed"
#endif

// A wide item's tile [r0, r0 + 64) x [c0, c0 + 64): x in 16-byte vectors of T, each thread's FP8 bytes stored to out and
// to the staged tile as words, then the first 128 threads write out_t's 8-byte pieces from the tile's 8 x 4 blocks.
template <typename T>
__device__ void wide_tile(const DeviceItem& item, int r0, int c0, float s, std::uint8_t (*staged)[kByteTilePitch], unsigned& local) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kTile / W;
    constexpr int kVecRowsPerPass = kThreads / kVecsPerRow;
    const int vec = static_cast<int>(threadIdx.x) % kVecsPerRow;
    const int c = c0 + vec * W;
    const T* x = static_cast<const T*>(item.x);
#pragma unroll
    for (int pass = 0; pass < kTile / kVecRowsPerPass; ++pass) {
        const int j = pass * kVecRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
        const int r = r0 + j;
        if (r < item.rows && c < item.cols) {
            const std::size_t at = static_cast<std::size_t>(r) * item.cols + c;
            float v[W];
            detail::unpack(*reinterpret_cast<const uint4*>(x + at), v);
            detail::store_fp8_vector<W>(v, s, item.type, item.out + at, &staged[j][vec * W], local);
        }
    }
    __syncthreads();
    detail::store_tile_transposed(&staged[0][0], item.out_t, item.rows, item.cols, r0, c0);
}

__global__ void __launch_bounds__(kThreads) cast_transpose_multi_kernel(const __grid_constant__ Batch batch) {
    // kByteTilePitch = 64 + 4: the transposed reads spread over banks (both paths).
    __shared__ __align__(4) std::uint8_t staged[kTile][kByteTilePitch];
    int index = 0;
    while (index + 1 < batch.count && blockIdx.x >= batch.items[index + 1].first_tile) ++index;
    const DeviceItem& item = batch.items[index];
    const unsigned tile = blockIdx.x - item.first_tile;
    const int r0 = static_cast<int>(tile / item.tiles_x) * kTile;
    const int c0 = static_cast<int>(tile % item.tiles_x) * kTile;
    const float s = *item.scale;
    if (item.wide) {
        unsigned local = 0;
        if (item.dtype == DType::BFloat16) {
            wide_tile<__nv_bfloat16>(item, r0, c0, s, staged, local);
        } else {
            wide_tile<float>(item, r0, c0, s, staged, local);
        }
        combine_block_amax(local, item.amax);
        return;
    }
    const int lane = static_cast<int>(threadIdx.x) % kLanesPerRow;
    const int c = c0 + lane * 4;
    const bool whole_words = item.cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(item.out) % 4 == 0;
    unsigned local = 0;
#pragma unroll
    for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
        const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kLanesPerRow;
        const int r = r0 + j;
        std::uint8_t q[4] = {0, 0, 0, 0};
        if (r < item.rows) {
            const std::size_t row_start = static_cast<std::size_t>(r) * item.cols;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                if (c + k < item.cols) {
                    const float v = load(item.x, item.dtype, row_start + c + k);
                    local = max(local, abs_bits(v));
                    q[k] = fp8_from_float(v * s, item.type);
                }
            }
            if (whole_words && c + 3 < item.cols) {
                *reinterpret_cast<unsigned*>(item.out + row_start + c) =
                    q[0] | (q[1] << 8) | (q[2] << 16) | (static_cast<unsigned>(q[3]) << 24);
            } else {
                for (int k = 0; k < 4 && c + k < item.cols; ++k) item.out[row_start + c + k] = q[k];
            }
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) staged[j][lane * 4 + k] = q[k];
    }
    __syncthreads();
    // out_t: the tile's 64 columns are 64 rows of out_t, each 64 bytes from r0: 4 pieces of 16 bytes.
    const int column = static_cast<int>(threadIdx.x) / 4;
    const int part = static_cast<int>(threadIdx.x) % 4;
    const int ct = c0 + column;
    const int rt = r0 + part * 16;
    if (ct < item.cols && rt < item.rows) {
        alignas(16) std::uint8_t bytes[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) bytes[k] = staged[part * 16 + k][column];
        std::uint8_t* to = item.out_t + static_cast<std::size_t>(ct) * item.rows + rt;
        const bool whole_piece = rt + 16 <= item.rows && reinterpret_cast<std::uintptr_t>(to) % 16 == 0;
        if (whole_piece) {
            *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(bytes);
        } else {
            for (int k = 0; k < 16 && rt + k < item.rows; ++k) to[k] = bytes[k];
        }
    }
    combine_block_amax(local, item.amax);
}

// The item's rows read 16 bytes at a time and its outputs written in whole pieces (cast.cu's vectorised kernel's rule).
bool wide(const detail::CastTransposeItem& w) {
    if (w.dtype != DType::Float32 && w.dtype != DType::BFloat16) return false;
    const std::size_t per = 16 / element_size(w.dtype);
    return w.rows % 8 == 0 && w.cols % per == 0 && detail::aligned(w.x, 16) && detail::aligned(w.out, per) &&
           detail::aligned(w.out_t, 8);
}

}  // namespace

void cast_transpose_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, Stream on) {
    constexpr const char* call = "tewb::kernels::cast_transpose_multi_to_fp8";
    const std::vector<detail::CastTransposeItem> work = detail::checked_multi_items(call, x, out, count);
    const cudaStream_t stream = detail::cuda_stream(on);
    for (const auto& [first, last] : detail::multi_launches(work)) {
        Batch batch{};
        unsigned tiles = 0;
        for (std::size_t i = first; i < last; ++i) {
            const detail::CastTransposeItem& w = work[i];
            batch.items[batch.count++] = {w.x,
                                          w.scale,
                                          static_cast<std::uint8_t*>(w.out),
                                          static_cast<std::uint8_t*>(w.out_t),
                                          w.amax,
                                          static_cast<int>(w.rows),
                                          static_cast<int>(w.cols),
                                          static_cast<int>((w.cols + kTile - 1) / kTile),
                                          tiles,
                                          w.dtype,
                                          w.type,
                                          wide(w)};
            tiles += static_cast<unsigned>(detail::multi_tiles(w));
        }
        cast_transpose_multi_kernel<<<tiles, kThreads, 0, stream>>>(batch);
        detail::check_last_launch(call);
    }
}

}  // namespace tewb::kernels
