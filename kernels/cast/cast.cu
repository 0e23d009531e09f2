// FP8 casts with amax, cast + transpose, transpose. Bytes: the input read once, each output written once;
// the floor is copy bandwidth. The conversion is CUDA's own float-to-FP8 (round to nearest even,
// saturating finite), on the device and, for the host reference, on the host.
#include <algorithm>
#include <cstdint>

#include "cast/cast_launch.h"
#include "common/check.h"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a 32 x 8 block walks a 32 x 32 tile
constexpr int kMaxGridY = 65535;

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

template <typename T>
__global__ void cast_transpose_kernel(const T* __restrict__ x, int rows, int cols, const float* __restrict__ scale,
                                      std::uint8_t* __restrict__ out, std::uint8_t* __restrict__ out_t, Fp8Type type,
                                      float* amax) {
    __shared__ std::uint8_t tile[kTile][kTile + 1];
    const float s = *scale;
    unsigned local = 0;
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
    const int blocks = static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
    cast_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, scale, static_cast<std::uint8_t*>(out), type, amax);
}

template <typename T>
void cast_transpose_typed(const void* x, std::size_t rows, std::size_t cols, const float* scale, void* out, void* out_t,
                          Fp8Type type, float* amax, cudaStream_t stream) {
    cast_transpose_kernel<T><<<tile_grid(rows, cols), dim3(kTile, kTileRows), 0, stream>>>(
        static_cast<const T*>(x), static_cast<int>(rows), static_cast<int>(cols), scale, static_cast<std::uint8_t*>(out),
        static_cast<std::uint8_t*>(out_t), type, amax);
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

void launch_cast_transpose(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type type, float* amax, cudaStream_t stream) {
    switch (dtype) {
        case DType::Float32: cast_transpose_typed<float>(x, rows, cols, scale, out, out_t, type, amax, stream); break;
        case DType::BFloat16: cast_transpose_typed<__nv_bfloat16>(x, rows, cols, scale, out, out_t, type, amax, stream); break;
        case DType::Float16: cast_transpose_typed<__half>(x, rows, cols, scale, out, out_t, type, amax, stream); break;
    }
    check_last_launch("tewb::kernels::cast_transpose_to_fp8");
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
