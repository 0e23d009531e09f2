// Rotary embeddings in one launch of an elementwise kernel: a work item is W consecutive pairs (i, i + half) of
// one head of one row (W = 16 / sizeof(T) with 16-byte loads and stores where half is a multiple of W and x and
// y are 16-byte aligned, W = 1 elsewhere), items in row-major order over [rows, heads, half / W], a grid-stride
// loop over them. A rotated head's pairs are turned in float32 with the products and fused multiply-adds
// spelled out (__fmul_rn, __fmaf_rn), so that nvcc contracts nothing and the host twin's std::fma gives the
// same bits; a copied head's elements move as stored. kFresh (rotary_current_scale): each thread also keeps the largest
// |value| it stores, and the launch's last block writes current scaling's scale of y (amax/current_scale_epilogue.cuh).
// rotary_quantize: a second kernel walks y in cast_transpose_to_fp8's 64 x 64 tiles (cast/fp8_tile.cuh), each thread
// turning W values of one half of a head (reading the other half's W values beside them) and casting them as stored, the
// tile's FP8 bytes staged in shared memory for the transposed copy.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "amax/current_scale_epilogue.cuh"
#include "attention/rotary_call.h"
#include "cast/fp8_tile.cuh"
#include "common/alignment.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = std::size_t{1} << 16;
// With the hand-off every block takes a ticket and an atomic on the one scratch word: a shorter grid (the grid-stride
// loop does the rest) keeps them few.
constexpr std::size_t kMaxFreshBlocks = 2048;

struct RotaryGeometry {
    std::size_t items;   // rows * heads * chunks
    std::size_t chunks;  // half / W
    std::size_t heads;
    std::size_t rotated_heads;
    std::size_t seq;
    std::size_t half;
    float sign;  // -1: the inverse rotation
};

__device__ inline void put(float* p, float v) {
    *p = v;
}

__device__ inline void put(__nv_bfloat16* p, float v) {
    *p = __float2bfloat16(v);
}

// W values of p[at ..] as floats: one 16-byte load when W > 1 (the caller made sure it is aligned).
template <typename T, int W>
__device__ inline void load_pairs(const T* __restrict__ p, std::size_t at, float (&v)[W]) {
    if constexpr (W > 1) {
        unpack(*reinterpret_cast<const uint4*>(p + at), v);
    } else {
        v[0] = to_float(p[at]);
    }
}

template <typename T, int W>
__device__ inline void store_pairs(T* __restrict__ p, std::size_t at, const float (&v)[W]) {
    if constexpr (W > 1) {
        *reinterpret_cast<uint4*>(p + at) = pack(v);
    } else {
        put(p + at, v[0]);
    }
}

template <typename T, int W>
__device__ inline void copy_pairs(const T* __restrict__ x, T* __restrict__ y, std::size_t at) {
    if constexpr (W > 1) {
        *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(x + at);
    } else {
        y[at] = x[at];
    }
}

// The largest |value| bits of W values as T stores them.
template <typename T, int W>
__device__ inline unsigned stored_max(const float (&v)[W]) {
    constexpr DType kStored = std::is_same_v<T, float> ? DType::Float32 : DType::BFloat16;
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) m = max(m, abs_bits(as_stored_in(v[k], kStored)));
    return m;
}

// copy_pairs that also gives the largest |value| bits of what it copied (from the registers it copied through). The
// values are already as stored: no rounding again, which would also replace a NaN's payload with the canonical one.
template <typename T, int W>
__device__ inline unsigned copy_pairs_max(const T* __restrict__ x, T* __restrict__ y, std::size_t at) {
    float v[W];
    if constexpr (W > 1) {
        const uint4 u = *reinterpret_cast<const uint4*>(x + at);
        *reinterpret_cast<uint4*>(y + at) = u;
        unpack(u, v);
    } else {
        const T e = x[at];
        y[at] = e;
        v[0] = to_float(e);
    }
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) m = max(m, abs_bits(v[k]));
    return m;
}

template <typename T, int W, bool kFresh>
__global__ void __launch_bounds__(kThreads) rotary_kernel(const T* __restrict__ x, const float* __restrict__ cos,
                                                          const float* __restrict__ sin, T* __restrict__ y, RotaryGeometry g,
                                                          CurrentScaleOut fresh) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned local = 0;  // kFresh: the largest |value| stored, as bits
    for (std::size_t item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < g.items; item += stride) {
        const std::size_t chunk = item % g.chunks;
        const std::size_t head_row = item / g.chunks;  // row * heads + head
        const std::size_t head = head_row % g.heads;
        const std::size_t i = chunk * W;
        const std::size_t at = head_row * 2 * g.half + i;
        if (head >= g.rotated_heads) {
            if constexpr (kFresh) {
                local = max(local, max(copy_pairs_max<T, W>(x, y, at), copy_pairs_max<T, W>(x, y, at + g.half)));
            } else {
                copy_pairs<T, W>(x, y, at);
                copy_pairs<T, W>(x, y, at + g.half);
            }
            continue;
        }
        const std::size_t t = (head_row / g.heads % g.seq) * g.half + i;  // the row's position in the tables
        float a[W], b[W], ya[W], yb[W];
        load_pairs<T, W>(x, at, a);
        load_pairs<T, W>(x, at + g.half, b);
#pragma unroll
        for (int k = 0; k < W; ++k) {
            const float c = __ldg(cos + t + k);
            const float s = g.sign * __ldg(sin + t + k);
            ya[k] = __fmaf_rn(a[k], c, -__fmul_rn(b[k], s));
            yb[k] = __fmaf_rn(b[k], c, __fmul_rn(a[k], s));
        }
        store_pairs<T, W>(y, at, ya);
        store_pairs<T, W>(y, at + g.half, yb);
        if constexpr (kFresh) local = max(local, max(stored_max<T, W>(ya), stored_max<T, W>(yb)));
    }
    if constexpr (kFresh) finish_current_scale(local, fresh);
}

// rotary_quantize_fits's shapes: thread `vec` of a tile row takes y's columns [c, c + W) (W = 16 / sizeof(T)), all in
// one half of one head (half a multiple of W), for each row of the tile it walks; y's bytes staged in `tile` and written
// transposed after each tile (rows a multiple of 8).
template <typename T, int W>
__global__ void __launch_bounds__(kThreads) rotary_quantize_kernel(const T* __restrict__ x, const float* __restrict__ cos,
                                                                   const float* __restrict__ sin, T* __restrict__ y,
                                                                   RotaryGeometry g, int rows, int cols, Fp8Output q) {
    constexpr int kVecsPerRow = kFp8Tile / W;
    constexpr int kRowsPerPass = kThreads / kVecsPerRow;
    __shared__ __align__(4) std::uint8_t tile[kFp8Tile][kByteTilePitch];
    const float scale = *q.scale;
    auto* out = static_cast<std::uint8_t*>(q.data);
    auto* out_t = static_cast<std::uint8_t*>(q.transposed);
    unsigned local = 0;
    const int vec = static_cast<int>(threadIdx.x) % kVecsPerRow;
    const int c0 = static_cast<int>(blockIdx.x) * kFp8Tile;
    const int c = c0 + vec * W;
    // Where the thread's columns lie in their head: the same for every row.
    const auto half = static_cast<int>(g.half);
    const int head = c / (2 * half);
    const int j = c - head * 2 * half;
    const bool second = j >= half;              // the pairs' y_{i+half} side
    const int i = second ? j - half : j;        // the pairs' index in the tables
    const int partner = second ? c - half : c + half;
    const bool turns = static_cast<std::size_t>(head) < g.rotated_heads;
    const int tile_rows = (rows + kFp8Tile - 1) / kFp8Tile;
    for (int tile_row = static_cast<int>(blockIdx.y); tile_row < tile_rows; tile_row += static_cast<int>(gridDim.y)) {
        const int r0 = tile_row * kFp8Tile;
#pragma unroll
        for (int pass = 0; pass < kFp8Tile / kRowsPerPass; ++pass) {
            const int tr = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
            const int r = r0 + tr;
            if (r >= rows || c >= cols) continue;
            const std::size_t at = static_cast<std::size_t>(r) * cols + c;
            float v[W];  // y's values as stored
            if (!turns) {
                const uint4 u = *reinterpret_cast<const uint4*>(x + at);
                *reinterpret_cast<uint4*>(y + at) = u;
                unpack(u, v);
            } else {
                float own[W], other[W];
                load_pairs<T, W>(x, at, own);
                load_pairs<T, W>(x, static_cast<std::size_t>(r) * cols + partner, other);
                const std::size_t t = static_cast<std::size_t>(r) % g.seq * g.half + i;
#pragma unroll
                for (int k = 0; k < W; ++k) {
                    const float cs = __ldg(cos + t + k);
                    const float sn = g.sign * __ldg(sin + t + k);
                    // rotary_kernel's ya = fma(a, c, -(b · s)) on the first half, yb = fma(b, c, a · s) on the second.
                    v[k] = second ? __fmaf_rn(own[k], cs, __fmul_rn(other[k], sn)) : __fmaf_rn(own[k], cs, -__fmul_rn(other[k], sn));
                }
                const uint4 u = pack(v);
                *reinterpret_cast<uint4*>(y + at) = u;
                unpack(u, v);
            }
            store_fp8_vector<W>(v, scale, q.type, out + at, &tile[tr][vec * W], local);
        }
        __syncthreads();
        store_tile_transposed(&tile[0][0], out_t, rows, cols, r0, c0);
        __syncthreads();
    }
    combine_block_amax(local, q.amax);
}

template <typename T, int W>
void launch(const RotaryCall& a, RotaryGeometry g, cudaStream_t stream) {
    g.chunks = g.half / W;
    g.items = a.x.rows * g.heads * g.chunks;
    const CurrentScaleOut fresh{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
    const std::size_t blocks = std::min((g.items + kThreads - 1) / kThreads, fresh.scale != nullptr ? kMaxFreshBlocks : kMaxBlocks);
    const auto run = [&](auto kernel) {
        kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<const T*>(a.x.data),
                                                                        static_cast<const float*>(a.cos.data),
                                                                        static_cast<const float*>(a.sin.data),
                                                                        static_cast<T*>(a.y.data), g, fresh);
    };
    if (fresh.scale != nullptr) {
        run(rotary_kernel<T, W, true>);
    } else {
        run(rotary_kernel<T, W, false>);
    }
}

void launch_rotary(const RotaryCall& a, cudaStream_t stream, const char* call) {
    const std::size_t half = a.x.cols / a.heads.heads / 2;
    const RotaryGeometry g{0, 0, a.heads.heads, a.heads.rotated_heads, a.heads.seq, half, a.heads.inverse ? -1.0f : 1.0f};
    const bool whole = aligned(a.x.data, 16) && aligned(a.y.data, 16);
    if (a.x.dtype == DType::Float32) {
        if (whole && half % 4 == 0) {
            launch<float, 4>(a, g, stream);
        } else {
            launch<float, 1>(a, g, stream);
        }
    } else {
        if (whole && half % 8 == 0) {
            launch<__nv_bfloat16, 8>(a, g, stream);
        } else {
            launch<__nv_bfloat16, 1>(a, g, stream);
        }
    }
    check_last_launch(call);
}

// rotary_quantize_fits's shapes in one launch (the grid as cast_transpose_to_fp8's vectorised kernel's).
template <typename T>
void launch_rotary_quantize(const RotaryCall& a, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    const std::size_t half = a.x.cols / a.heads.heads / 2;
    const RotaryGeometry g{0, 0, a.heads.heads, a.heads.rotated_heads, a.heads.seq, half, a.heads.inverse ? -1.0f : 1.0f};
    const dim3 grid(static_cast<unsigned>((a.x.cols + kFp8Tile - 1) / kFp8Tile),
                    static_cast<unsigned>(std::min<std::size_t>((a.x.rows + kFp8Tile - 1) / kFp8Tile, 65535)));
    rotary_quantize_kernel<T, W><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(a.x.data), static_cast<const float*>(a.cos.data), static_cast<const float*>(a.sin.data),
        static_cast<T*>(a.y.data), g, static_cast<int>(a.x.rows), static_cast<int>(a.x.cols), a.fp8);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::rotary";
    if (const auto a = detail::rotary_call(kCall, x, cos, sin, heads, y)) {
        detail::launch_rotary(*a, detail::cuda_stream(stream), kCall);
    }
}

void rotary_current_scale(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                          const CurrentScaleTarget& target, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::rotary_current_scale";
    if (const auto a = detail::rotary_current_scale_call(kCall, x, cos, sin, heads, y, target)) {
        detail::launch_rotary(*a, detail::cuda_stream(stream), kCall);
    } else {  // no work: the scale of an empty tensor's amax, 0
        abs_max_current_scale(y, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void rotary_quantize(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryHeads& heads, const Tensor& y,
                     const Tensor& fp8, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::rotary_quantize";
    const auto a = detail::rotary_quantize_call(kCall, x, cos, sin, heads, y, fp8);
    if (!a) return;
    const cudaStream_t s = detail::cuda_stream(stream);
    if (!detail::rotary_quantize_fits(*a)) {
        detail::launch_rotary(*a, s, kCall);
        Tensor stored = input(a->y.data, a->y.dtype, a->y.rows, a->y.cols);
        cast_transpose_to_fp8(stored, fp8, stream);
        return;
    }
    if (a->x.dtype == DType::Float32) {
        detail::launch_rotary_quantize<float>(*a, s);
    } else {
        detail::launch_rotary_quantize<__nv_bfloat16>(*a, s);
    }
    detail::check_last_launch(kCall);
}

}  // namespace tewb::kernels
