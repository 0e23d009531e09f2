// GELU (tanh form) forward, and its backward fused with dbias and the FP8 cast + transpose of the result.
// Forward: elementwise, one read and one write per element; with the FP8 output's transposed copy, a tiled
// kernel that writes it from shared memory in the same launch. Backward: one pass over dy and x in
// row-chunk x 64-column tiles read in 16-byte vectors, the tile's g staged in shared memory for the column sums of
// dbias (in row order) and the FP8 bytes for the transposed copy (written in whole 8-byte pieces); the last block of
// each column tile sums the chunks (column_sum.cuh), in the same launch.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "activation/activation_call.h"
#include "amax/current_scale_epilogue.cuh"
#include "common/alignment.h"
#include "common/byte_transpose.cuh"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ inline float gelu(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    return 0.5f * x * (1.0f + t);
}

__device__ inline float gelu_derivative(float x) {
    const float t = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}

// The forward without the FP8 output's transposed copy, elementwise, x's dtype fixed at compile time: a thread takes W
// elements (one 16-byte vector of x; `vectors` of them, none where x is not 16-byte aligned), then the elements past the
// last whole vector one by one. out (y in out_dtype) in one 16-byte store where it is x's dtype and aligned, element by
// element elsewhere; q in one W-byte piece where aligned. fresh.scale set (q null then): current scaling's scale of out
// from the largest |y| as out stores it.
template <typename T>
__global__ void gelu_forward_kernel(const T* __restrict__ x, std::size_t n, std::size_t vectors, void* out, DType out_dtype,
                                    bool vector_out, std::uint8_t* q, bool vector_q, const float* scale, Fp8Type type, float* amax,
                                    CurrentScaleOut fresh) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    const float s = q != nullptr ? *scale : 1.0f;
    unsigned local = 0;
    const auto take = [&](float y) {
        if (q != nullptr) {
            local = max(local, abs_bits(y));
        } else if (fresh.scale != nullptr) {
            local = max(local, abs_bits(as_stored_in(y, out_dtype)));
        }
    };
    const std::size_t items = vectors + (n - vectors * W);
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t item = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; item < items; item += stride) {
        if (item < vectors) {
            const std::size_t at = item * W;
            float y[W];
            unpack(*reinterpret_cast<const uint4*>(x + at), y);
#pragma unroll
            for (int i = 0; i < W; ++i) {
                y[i] = gelu(y[i]);
                take(y[i]);
            }
            if (out != nullptr) {
                if (vector_out) {
                    *reinterpret_cast<uint4*>(static_cast<T*>(out) + at) = pack(y);
                } else {
#pragma unroll
                    for (int i = 0; i < W; ++i) store(out, out_dtype, at + i, y[i]);
                }
            }
            if (q != nullptr) {
                alignas(8) std::uint8_t bytes[W];
#pragma unroll
                for (int i = 0; i < W; ++i) bytes[i] = fp8_from_float(y[i] * s, type);
                store_fp8_piece<W>(q + at, bytes, W, vector_q);
            }
        } else {
            const std::size_t at = vectors * W + (item - vectors);
            const float y = gelu(to_float(x[at]));
            take(y);
            if (out != nullptr) store(out, out_dtype, at, y);
            if (q != nullptr) q[at] = fp8_from_float(y * s, type);
        }
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (q != nullptr) {
        combine_block_amax(local, amax);
    } else {
        finish_current_scale(local, fresh);
    }
}

// The forward with the FP8 output's transposed copy, x's dtype fixed at compile time: 64 x 64 tiles of x
// (a block walks tile rows blockIdx.y, + gridDim.y, ...), x read in 16-byte vectors where the rows allow
// (cols a multiple of W, x 16-byte aligned; element by element elsewhere), y in float32, q = fp8(y * scale)
// written in W-byte pieces where aligned (bytes elsewhere) and staged in shared memory (word stores), then q_t written
// as 8-byte pieces (8 rows of x at one column) where the piece is whole and 8-byte aligned, byte by byte at ragged
// edges: each of 128 threads reads an 8 x 4 block of the tile as words and makes 4 pieces of it with byte permutes
// (common/byte_transpose.cuh). `out` (y in out_dtype) too when not null.
constexpr int kGeluTile = 64;
constexpr int kGeluTileThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kGeluTileThreads)
    gelu_forward_transpose_kernel(const T* __restrict__ x, int rows, int cols, void* out, DType out_dtype,
                                  std::uint8_t* __restrict__ q, std::uint8_t* __restrict__ q_t, const float* __restrict__ scale,
                                  Fp8Type type, float* amax) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kGeluTile / W;
    constexpr int kRowsPerPass = kGeluTileThreads / kVecsPerRow;
    static_assert(kGeluTile == 64, "byte_transpose.cuh's tile");
    __shared__ __align__(4) std::uint8_t tile[kGeluTile][kByteTilePitch];
    const float s = *scale;
    unsigned local = 0;
    const int vec = static_cast<int>(threadIdx.x) % kVecsPerRow;
    const int c = static_cast<int>(blockIdx.x) * kGeluTile + vec * W;
    const int n = min(W, cols - c);  // this thread's columns in x (W, fewer at the right edge, <= 0 past it)
    const bool vector_x = cols % W == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
    const bool vector_q = cols % W == 0 && reinterpret_cast<std::uintptr_t>(q) % W == 0;
    const int tile_rows = static_cast<int>((static_cast<unsigned>(rows) + kGeluTile - 1) / kGeluTile);  // no wrap near INT_MAX
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kGeluTile;
#pragma unroll
        for (int pass = 0; pass < kGeluTile / kRowsPerPass; ++pass) {
            const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
            const int r = r0 + j;
            if (r < rows && n > 0) {
                const std::size_t at = static_cast<std::size_t>(r) * cols + c;
                float y[W];
                if (vector_x) {  // then n == W
                    const uint4 raw = *reinterpret_cast<const uint4*>(x + at);
                    const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
                    for (int i = 0; i < W; ++i) y[i] = gelu(to_float(v[i]));
                } else {
#pragma unroll
                    for (int i = 0; i < W; ++i) y[i] = i < n ? gelu(to_float(x[at + i])) : 0.0f;
                }
                alignas(8) std::uint8_t bytes[W];
#pragma unroll
                for (int i = 0; i < W; ++i) {
                    bytes[i] = fp8_from_float(y[i] * s, type);
                    if (i < n) local = max(local, abs_bits(y[i]));
                }
#pragma unroll
                for (int w = 0; w < W / 4; ++w) {  // past the right edge: never written to q_t
                    *reinterpret_cast<std::uint32_t*>(&tile[j][vec * W + 4 * w]) =
                        *reinterpret_cast<const std::uint32_t*>(bytes + 4 * w);
                }
                if (out != nullptr) {
                    for (int i = 0; i < n; ++i) store(out, out_dtype, at + i, y[i]);
                }
                store_fp8_piece<W>(q + at, bytes, n, vector_q);
            }
        }
        __syncthreads();
        // q_t: the tile's 64 columns of x, each 64 rows = 8 pieces of 8 bytes, 4 by each of the first 128 threads.
        if (threadIdx.x < kGeluTile / 4 * 8) {
            const TransposedBlock blk = transposed_block_of(static_cast<int>(threadIdx.x));
            const int rt = r0 + blk.part * 8;
            if (rt < rows) {
                const Pieces4 p = transpose_8x4(&tile[0][0], blk);
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const int ct = static_cast<int>(blockIdx.x) * kGeluTile + blk.quad * 4 + k;
                    if (ct < cols) {
                        std::uint8_t* to = q_t + static_cast<std::size_t>(ct) * rows + rt;
                        if (rt + 8 <= rows && reinterpret_cast<std::uintptr_t>(to) % 8 == 0) {
                            *reinterpret_cast<uint2*>(to) = make_uint2(p.lo.c[k], p.hi.c[k]);
                        } else {
                            for (int i = 0; i < 8 && rt + i < rows; ++i) to[i] = piece_byte(p, k, i);
                        }
                    }
                }
            }
        }
        __syncthreads();
    }
    combine_block_amax(local, amax);
}

// The backward, dy's and x's dtype fixed at compile time (every form: dx, the FP8 output with or without its
// transposed copy, dbias, current scaling's amax of dx as stored). A block takes 64 columns of one row chunk (the dbias
// partial row's rows) in tiles of 32 rows: each thread reads W elements of a row (16-byte vectors where the rows allow),
// writes dx and q there and leaves q's bytes ([row][column], word stores, when q_t is wanted) and g ([row][column], when
// dbias is) in shared memory; then threads 64..127 each turn an 8 x 4 block of the bytes into 4 pieces of q_t (8 rows
// at one column, common/byte_transpose.cuh; byte by byte where not whole or not 8-byte aligned), while threads 0..63 add
// their column's g over the tile's rows in row order, so the partial row has the bits of the host twin. The forms
// without q_t once had a kernel of their own, a thread walking a column of its chunk in 2-byte loads (the te BF16 step's
// GELU backward); this one reads 16 bytes a thread.
constexpr int kGeluBackwardTileRows = 32;

template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
    return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}

template <typename T>
// At least 6 blocks per SM: ptxas (sm_90) gave the BF16 form 48 registers (5 blocks) without the bound, 40 and no spill
// with it; 8 blocks (32 registers) spill.
__global__ void __launch_bounds__(kGeluTileThreads, 6)
    gelu_backward_tiled_kernel(const T* __restrict__ dy, const T* __restrict__ x, int rows, int cols, int rows_per_chunk, T* dx,
                               std::uint8_t* __restrict__ q, std::uint8_t* __restrict__ q_t, const float* __restrict__ scale,
                               Fp8Type type, float* amax, ColumnSumTarget dbias, CurrentScaleOut fresh) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kGeluTile / W;
    constexpr int kRowsPerPass = kGeluTileThreads / kVecsPerRow;
    constexpr int R = kGeluBackwardTileRows;
    constexpr int kBlocks = kGeluTile / 4 * (R / 8);  // 8 x 4 blocks of the byte tile: 64
    static_assert(kGeluTile == 64 && R % 8 == 0 && 2 * kBlocks <= kGeluTileThreads,
                  "byte_transpose.cuh's tile; whole warps 64..127 take its blocks (transposed_block_of)");
    __shared__ __align__(4) std::uint8_t tile[R][kByteTilePitch];
    __shared__ float g_tile[R][kGeluTile + 1];
    const float s = q != nullptr ? *scale : 1.0f;
    const bool sums = dbias.partial != nullptr;
    unsigned local = 0;
    float column_sum = 0.0f;
    const int thread = static_cast<int>(threadIdx.x);
    const int vec = thread % kVecsPerRow;
    const int c0 = static_cast<int>(blockIdx.x) * kGeluTile;
    const int c = c0 + vec * W;
    const int n = min(W, cols - c);  // this thread's columns (W, fewer at the right edge, <= 0 past it)
    const bool vector_in = cols % W == 0 && reinterpret_cast<std::uintptr_t>(dy) % 16 == 0 &&
                           reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
    const bool vector_dx = cols % W == 0 && reinterpret_cast<std::uintptr_t>(dx) % 16 == 0;
    const bool vector_q = cols % W == 0 && reinterpret_cast<std::uintptr_t>(q) % W == 0;
    // In 64 bits: rows may come close to INT_MAX, where first + rows_per_chunk and r0 + R would overflow. Chunks start on
    // multiples of 8 rows (gelu_backward_rows_per_chunk), so q_t's pieces are whole and aligned where rows and q_t allow.
    const long long first = min(static_cast<long long>(rows), static_cast<long long>(blockIdx.y) * rows_per_chunk);
    const long long last = min(static_cast<long long>(rows), first + rows_per_chunk);
    for (long long tile_start = first; tile_start < last; tile_start += R) {
        const int r0 = static_cast<int>(tile_start);
        const int height = static_cast<int>(min(static_cast<long long>(R), last - tile_start));
#pragma unroll
        for (int pass = 0; pass < R / kRowsPerPass; ++pass) {
            const int j = pass * kRowsPerPass + thread / kVecsPerRow;
            if (j < height && n > 0) {
                const std::size_t at = static_cast<std::size_t>(r0 + j) * cols + c;
                float d[W], g[W];
                if (vector_in) {  // then n == W
                    const uint4 raw_dy = *reinterpret_cast<const uint4*>(dy + at);
                    const uint4 raw_x = *reinterpret_cast<const uint4*>(x + at);
                    const T* vd = reinterpret_cast<const T*>(&raw_dy);
                    const T* vx = reinterpret_cast<const T*>(&raw_x);
#pragma unroll
                    for (int i = 0; i < W; ++i) {
                        d[i] = to_float(vd[i]);
                        g[i] = to_float(vx[i]);
                    }
                } else {
#pragma unroll
                    for (int i = 0; i < W; ++i) {
                        d[i] = i < n ? to_float(dy[at + i]) : 0.0f;
                        g[i] = i < n ? to_float(x[at + i]) : 0.0f;
                    }
                }
                alignas(16) T out[W];
                alignas(8) std::uint8_t bytes[W];
#pragma unroll
                for (int i = 0; i < W; ++i) {
                    g[i] = d[i] * gelu_derivative(g[i]);
                    out[i] = from_float<T>(g[i]);
                    if (i < n) {
                        if (sums) g_tile[j][vec * W + i] = g[i];
                        // FP8: the float32 g; current scaling: dx as stored.
                        if (q != nullptr) {
                            local = max(local, abs_bits(g[i]));
                        } else if (fresh.scale != nullptr) {
                            local = max(local, abs_bits(to_float(out[i])));
                        }
                    }
                }
                if (dx != nullptr) {
                    if (vector_dx) {
                        *reinterpret_cast<uint4*>(dx + at) = *reinterpret_cast<const uint4*>(out);
                    } else {
                        for (int i = 0; i < n; ++i) dx[at + i] = out[i];
                    }
                }
                if (q != nullptr) {
#pragma unroll
                    for (int i = 0; i < W; ++i) bytes[i] = fp8_from_float(g[i] * s, type);
                    if (q_t != nullptr) {
#pragma unroll
                        for (int w = 0; w < W / 4; ++w) {  // past the right edge: never written to q_t
                            *reinterpret_cast<std::uint32_t*>(&tile[j][vec * W + 4 * w]) =
                                *reinterpret_cast<const std::uint32_t*>(bytes + 4 * w);
                        }
                    }
                    store_fp8_piece<W>(q + at, bytes, n, vector_q);
                }
            }
        }
        __syncthreads();
        if (q_t != nullptr && thread >= kGeluTile && thread < kGeluTile + kBlocks) {
            const TransposedBlock blk = transposed_block_of(thread - kGeluTile);
            const int j0 = blk.part * 8;
            if (j0 < height) {
                const Pieces4 p = transpose_8x4(&tile[0][0], blk);
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const int ct = c0 + blk.quad * 4 + k;
                    if (ct < cols) {
                        std::uint8_t* to = q_t + static_cast<std::size_t>(ct) * rows + r0 + j0;
                        if (j0 + 8 <= height && reinterpret_cast<std::uintptr_t>(to) % 8 == 0) {
                            *reinterpret_cast<uint2*>(to) = make_uint2(p.lo.c[k], p.hi.c[k]);
                        } else {
                            for (int i = 0; i < 8 && j0 + i < height; ++i) to[i] = piece_byte(p, k, i);
                        }
                    }
                }
            }
        }
        if (sums && thread < kGeluTile) {
            for (int j = 0; j < height; ++j) column_sum += g_tile[j][thread];
        }
        __syncthreads();
    }
    if (sums) {
        if (thread < kGeluTile && c0 + thread < cols) {
            dbias.partial[static_cast<std::size_t>(blockIdx.y) * cols + c0 + thread] = column_sum;
        }
        finish_column_sum(dbias, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.y), cols, c0, min(kGeluTile, cols - c0));
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (q != nullptr) {
        combine_block_amax(local, amax);
    } else {
        finish_current_scale(local, fresh);
    }
}

template <typename T>
void gelu_forward_transpose(const void* x, std::size_t rows, std::size_t cols, void* out, DType out_dtype, const Fp8Output& fp8,
                            cudaStream_t stream) {
    constexpr std::size_t kMaxGridY = 65535;
    const dim3 grid(static_cast<unsigned>((cols + kGeluTile - 1) / kGeluTile),
                    static_cast<unsigned>(std::min<std::size_t>((rows + kGeluTile - 1) / kGeluTile, kMaxGridY)));
    gelu_forward_transpose_kernel<T><<<grid, kGeluTileThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<int>(rows), static_cast<int>(cols), out, out_dtype,
        static_cast<std::uint8_t*>(fp8.data), static_cast<std::uint8_t*>(fp8.transposed), fp8.scale, fp8.type, fp8.amax);
}

void launch_gelu_forward(const void* x, DType x_dtype, std::size_t rows, std::size_t cols, void* out, DType out_dtype,
                         const Fp8Output* fp8, const CurrentScaleOut& fresh, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_forward";
    if (fp8 != nullptr && fp8->transposed != nullptr) {
        if (x_dtype == DType::Float32) {
            gelu_forward_transpose<float>(x, rows, cols, out, out_dtype, *fp8, stream);
        } else {
            gelu_forward_transpose<__nv_bfloat16>(x, rows, cols, out, out_dtype, *fp8, stream);
        }
        check_last_launch(call);
        return;
    }
    const std::size_t n = rows * cols;
    const Fp8Pointers p = fp8_pointers(fp8);
    const auto launch = [&](auto* typed_x) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(typed_x)>>;
        constexpr std::size_t W = 16 / sizeof(T);
        const std::size_t vectors = aligned(x, 16) ? n / W : 0;
        const bool vector_out = out_dtype == (sizeof(T) == 4 ? DType::Float32 : DType::BFloat16) && aligned(out, 16);
        const std::size_t items = vectors + (n - vectors * W);
        const int blocks = static_cast<int>(std::min<std::size_t>((items + kThreads - 1) / kThreads, kMaxBlocks));
        gelu_forward_kernel<T><<<blocks, kThreads, 0, stream>>>(typed_x, n, vectors, out, out_dtype, vector_out, p.q, aligned(p.q, W),
                                                                p.scale, p.type, p.amax, fresh);
    };
    if (x_dtype == DType::Float32) {
        launch(static_cast<const float*>(x));
    } else {
        launch(static_cast<const __nv_bfloat16*>(x));
    }
    check_last_launch(call);
}

void launch_gelu_backward(const GeluBackwardCall& a, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::gelu_backward";
    const std::size_t rows = a.x.rows;
    const std::size_t cols = a.x.cols;
    const Fp8Output* fp8 = wanted(a.fp8);
    void* dbias = a.dbias.data;
    const DType dbias_dtype = a.dbias.dtype;
    const int chunks = static_cast<int>(gelu_backward_chunks(rows));
    const int rows_per_chunk = static_cast<int>(gelu_backward_rows_per_chunk(rows));
    static_assert(kGeluBackwardColumnTile == kGeluTile);
    const unsigned column_blocks = static_cast<unsigned>((cols + kGeluBackwardColumnTile - 1) / kGeluBackwardColumnTile);
    const bool in_kernel = column_sum_in_kernel(column_blocks);
    ColumnSumTarget target;
    if (dbias != nullptr)
        target = ColumnSumTarget{static_cast<float*>(a.workspace.data), in_kernel ? dbias : nullptr, dbias_dtype};
    const dim3 grid(column_blocks, static_cast<unsigned>(chunks));
    const Fp8Pointers p = fp8_pointers(fp8);
    const CurrentScaleOut fresh{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
    if (a.x.dtype == DType::Float32) {
        gelu_backward_tiled_kernel<float><<<grid, kGeluTileThreads, 0, stream>>>(
            static_cast<const float*>(a.dy.data), static_cast<const float*>(a.x.data), static_cast<int>(rows), static_cast<int>(cols),
            rows_per_chunk, static_cast<float*>(a.dx.data), p.q, p.q_t, p.scale, p.type, p.amax, target, fresh);
    } else {
        gelu_backward_tiled_kernel<__nv_bfloat16><<<grid, kGeluTileThreads, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(a.dy.data), static_cast<const __nv_bfloat16*>(a.x.data), static_cast<int>(rows),
            static_cast<int>(cols), rows_per_chunk, static_cast<__nv_bfloat16*>(a.dx.data), p.q, p.q_t, p.scale, p.type, p.amax, target,
            fresh);
    }
    check_last_launch(call);
    if (dbias != nullptr && !in_kernel) launch_column_sum(target.partial, chunks, cols, dbias, dbias_dtype, stream, call);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void gelu_forward(const Tensor& x, const Tensor& out, const Tensor& fp8, Stream stream) {
    if (const auto a = detail::gelu_forward_call("tewb::kernels::gelu_forward", x, out, fp8)) {
        detail::launch_gelu_forward(a->x.data, a->x.dtype, a->x.rows, a->x.cols, a->out.data, a->out.dtype,
                                    detail::wanted(a->fp8), detail::CurrentScaleOut{}, detail::cuda_stream(stream));
    }
}

void gelu_forward_current_scale(const Tensor& x, const Tensor& out, const CurrentScaleTarget& target, Stream stream) {
    const auto a = detail::gelu_forward_current_scale_call("tewb::kernels::gelu_forward_current_scale", x, out, target);
    if (a) {
        detail::launch_gelu_forward(a->x.data, a->x.dtype, a->x.rows, a->x.cols, a->out.data, a->out.dtype, nullptr,
                                    detail::CurrentScaleOut{a->fresh.numerator, a->fresh.scale, a->fresh.scale_inv, a->fresh.staging},
                                    detail::cuda_stream(stream));
    } else {  // no elements: the scale of an empty tensor's amax, 0
        abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void gelu_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& dx, const CurrentScaleTarget& target,
                                 const Tensor& dbias, const Workspace& workspace, Stream stream) {
    const auto a = detail::gelu_backward_current_scale_call("tewb::kernels::gelu_backward_current_scale", dy, x, dx, target, dbias,
                                                            workspace);
    if (a) {
        detail::launch_gelu_backward(*a, detail::cuda_stream(stream));
    } else {  // no elements: the scale of an empty tensor's amax, 0
        abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void gelu_backward(const Tensor& dy, const Tensor& x, const Tensor& dx, const Tensor& fp8, const Tensor& dbias,
                   const Workspace& workspace, Stream stream) {
    if (const auto a = detail::gelu_backward_call("tewb::kernels::gelu_backward", dy, x, dx, fp8, dbias, workspace)) {
        detail::launch_gelu_backward(*a, detail::cuda_stream(stream));
    }
}

}  // namespace tewb::kernels
