// The multi-tensor cast + transpose: many tensors (a model's weights), each with its own scale, outputs and
// amax, in one launch per kCastMultiItemsPerLaunch of them. The items travel in the kernel's parameters
// (__grid_constant__: read where they are, not copied per thread; about 4 KiB of them, which needs CUDA 12.1);
// each thread block takes one 64 x 64
// tile of one item, found from the items' first tiles. Values as cast_transpose_to_fp8's: the same float32
// product and conversion.
#include <cstdint>
#include <vector>

#include "cast/cast_items.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/cast_multi.h"

namespace tewb::kernels {

namespace {

using detail::abs_bits;
using detail::combine_block_amax;
using detail::fp8_from_float;
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
};

struct Batch {
    DeviceItem items[kCastMultiItemsPerLaunch];
    int count;
};
// 4104 bytes: beyond the classic 4 KiB of kernel parameters, within the 32764 CUDA 12.1 and later allow on
// Volta and newer (with a driver of r530 or later).
static_assert(sizeof(Batch) <= 32764, "kernel parameters are limited to 32764 bytes");
#if CUDART_VERSION < 12010
#error "the multi-tensor casts pass more than 4 KiB of kernel parameters: CUDA 12.1 or later is needed"
#endif

__global__ void __launch_bounds__(kThreads) cast_transpose_multi_kernel(const __grid_constant__ Batch batch) {
    __shared__ std::uint8_t staged[kTile][kTile + 4];  // + 4: the transposed reads spread over banks
    int index = 0;
    while (index + 1 < batch.count && blockIdx.x >= batch.items[index + 1].first_tile) ++index;
    const DeviceItem& item = batch.items[index];
    const unsigned tile = blockIdx.x - item.first_tile;
    const int r0 = static_cast<int>(tile / item.tiles_x) * kTile;
    const int c0 = static_cast<int>(tile % item.tiles_x) * kTile;
    const float s = *item.scale;
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
                                          w.type};
            tiles += static_cast<unsigned>(detail::multi_tiles(w));
        }
        cast_transpose_multi_kernel<<<tiles, kThreads, 0, stream>>>(batch);
        detail::check_last_launch(call);
    }
}

}  // namespace tewb::kernels
