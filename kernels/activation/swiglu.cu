// SwiGLU forward and backward, each one launch of a tiled kernel: a block owns 64 columns of the half width
// (the same 64 columns of the gate and of the up projection) and walks 64-row tiles (blockIdx.y, + gridDim.y,
// ...). Each thread takes W = 16 / sizeof(T) consecutive columns of a row: 16-byte loads (and, backward,
// stores of din) where cols is a multiple of W and the pointer is 16-byte aligned, element by element
// elsewhere (the forward's y too where it is stored in x's dtype); FP8 bytes written in W-byte pieces where aligned.
// With a transposed FP8 copy the tile's bytes are staged in shared memory as words and written column by column in
// 8-byte pieces (common/staged_transpose.cuh).
#include <algorithm>
#include <cstdint>

#include "activation/activation_call.h"
#include "amax/current_scale_epilogue.cuh"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/staged_transpose.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kTile = 64;
constexpr int kTileThreads = 256;
constexpr int kPitch = staged_transpose_pitch(kTile);
constexpr std::size_t kMaxGridY = 65535;

__device__ inline float sigmoid(float a) {
    return 1.0f / (1.0f + expf(-a));
}

__device__ inline void put(float* p, float v) {
    *p = v;
}

__device__ inline void put(__nv_bfloat16* p, float v) {
    *p = __float2bfloat16(v);
}

// W values of p[at .. at + n - 1] as floats (0 past n): one 16-byte load when `whole` (then n == W).
template <typename T, int W>
__device__ inline void load_piece(const T* __restrict__ p, std::size_t at, int n, bool whole, float (&v)[W]) {
    if (whole) {
        unpack(*reinterpret_cast<const uint4*>(p + at), v);
    } else {
#pragma unroll
        for (int i = 0; i < W; ++i) v[i] = i < n ? to_float(p[at + i]) : 0.0f;
    }
}

template <typename T, int W>
__device__ inline void store_piece(T* p, std::size_t at, int n, bool whole, const float (&v)[W]) {
    if (whole) {
        *reinterpret_cast<uint4*>(p + at) = pack(v);
    } else {
        for (int i = 0; i < n; ++i) put(p + at + i, v[i]);
    }
}

// fp8(v * s) of the W values into q[at ..] (one W-byte store when `whole`, else n bytes) and into this thread's
// place in the stage row when stage_row is not null (W / 4 word stores: the place is 4-byte aligned, the pitch a
// multiple of 4 and vec * W a multiple of 4; bytes past the right edge are never read); returns the largest |v| of
// the n values as bits.
template <int W>
__device__ inline unsigned quantize_piece(const float (&v)[W], int n, float s, Fp8Type type, std::uint8_t* q, std::size_t at,
                                          bool whole, std::uint8_t* stage_row) {
    std::uint32_t words[W / 4];  // the FP8 bytes, 4 to a word (byte i at bits 8 (i % 4) of word i / 4)
    unsigned local = 0;
#pragma unroll
    for (int w = 0; w < W / 4; ++w) {
        words[w] = 0u;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int i = 4 * w + b;
            words[w] |= static_cast<std::uint32_t>(fp8_from_float(v[i] * s, type)) << (8 * b);
            if (i < n) local = max(local, abs_bits(v[i]));
        }
    }
    if (stage_row != nullptr) {
#pragma unroll
        for (int w = 0; w < W / 4; ++w) *reinterpret_cast<std::uint32_t*>(stage_row + 4 * w) = words[w];
    }
    if (whole) {
        if constexpr (W == 8) {
            *reinterpret_cast<uint2*>(q + at) = make_uint2(words[0], words[1]);
        } else {
            *reinterpret_cast<std::uint32_t*>(q + at) = words[0];
        }
    } else {
#pragma unroll
        for (int i = 0; i < W; ++i) {
            if (i < n) q[at + i] = static_cast<std::uint8_t>(words[i / 4] >> (8 * (i % 4)));
        }
    }
    return local;
}

// Outputs that a launch writes; q_t needs q. fresh.scale set (q null then): current scaling's scale of out from its
// largest |value| as stored (current_scale_epilogue.cuh).
struct SwigluOutputs {
    void* out;  // forward's high precision y (out_dtype), or backward's din (T); null: not wanted
    DType out_dtype;
    std::uint8_t* q;
    std::uint8_t* q_t;
    const float* scale;
    Fp8Type type;
    float* amax;
    CurrentScaleOut fresh{};
};

// y [rows, cols] = silu(a) * u from in [rows, 2 * cols].
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    swiglu_forward_kernel(const T* __restrict__ in, int rows, int cols, SwigluOutputs o) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kTile / W;
    constexpr int kRowsPerPass = kTileThreads / kVecsPerRow;
    __shared__ __align__(16) std::uint8_t stage[kTile * kPitch];
    const float s = o.q != nullptr ? *o.scale : 1.0f;
    unsigned local = 0;
    const int vec = static_cast<int>(threadIdx.x) % kVecsPerRow;
    const int c0 = static_cast<int>(blockIdx.x) * kTile;
    const int c = c0 + vec * W;
    const int n = min(W, cols - c);  // this thread's columns (W, fewer at the right edge, <= 0 past it)
    const bool whole_in = cols % W == 0 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
    const bool whole_q = cols % W == 0 && reinterpret_cast<std::uintptr_t>(o.q) % W == 0;
    // y in x's own dtype (every caller's) goes out in 16-byte stores where aligned.
    const bool out_as_in = o.out_dtype == (sizeof(T) == 4 ? DType::Float32 : DType::BFloat16);
    const bool whole_out = out_as_in && cols % W == 0 && reinterpret_cast<std::uintptr_t>(o.out) % 16 == 0;
    const std::size_t width = 2 * static_cast<std::size_t>(cols);
    const int tile_rows = static_cast<int>((static_cast<unsigned>(rows) + kTile - 1) / kTile);  // no wrap near INT_MAX
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kTile;
#pragma unroll
        for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
            const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
            const int r = r0 + j;
            if (r >= rows || n <= 0) continue;
            const std::size_t at = static_cast<std::size_t>(r) * width + c;
            float a[W], u[W], y[W];
            load_piece<T, W>(in, at, n, whole_in, a);
            load_piece<T, W>(in, at + cols, n, whole_in, u);
#pragma unroll
            for (int i = 0; i < W; ++i) y[i] = a[i] * sigmoid(a[i]) * u[i];
            const std::size_t out_at = static_cast<std::size_t>(r) * cols + c;
            if (o.out != nullptr) {
                if (out_as_in) {
                    store_piece<T, W>(static_cast<T*>(o.out), out_at, n, whole_out, y);
                } else {
                    for (int i = 0; i < n; ++i) store(o.out, o.out_dtype, out_at + i, y[i]);
                }
            }
            if (o.q != nullptr) {
                std::uint8_t* stage_row = o.q_t != nullptr ? stage + j * kPitch + vec * W : nullptr;
                local = max(local, quantize_piece<W>(y, n, s, o.type, o.q, out_at, whole_q, stage_row));
            } else if (o.fresh.scale != nullptr) {
#pragma unroll
                for (int i = 0; i < W; ++i) {
                    if (i < n) local = max(local, abs_bits(as_stored_in(y[i], o.out_dtype)));
                }
            }
        }
        if (o.q_t != nullptr) {
            __syncthreads();
            write_staged_transpose(stage, kPitch, kTile, min(kTile, cols - c0), o.q_t, rows, r0, c0);
            __syncthreads();
        }
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (o.q != nullptr) {
        combine_block_amax(local, o.amax);
    } else {
        finish_current_scale(local, o.fresh);
    }
}

// din [rows, 2 * cols] (gate half, then up half) from dy [rows, cols] and in [rows, 2 * cols]; q_t [2 * cols, rows].
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    swiglu_backward_kernel(const T* __restrict__ dy, const T* __restrict__ in, int rows, int cols, SwigluOutputs o) {
    constexpr int W = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerRow = kTile / W;
    constexpr int kRowsPerPass = kTileThreads / kVecsPerRow;
    __shared__ __align__(16) std::uint8_t stage[2][kTile * kPitch];  // the gate half's bytes, the up half's
    const float s = o.q != nullptr ? *o.scale : 1.0f;
    unsigned local = 0;
    T* din = static_cast<T*>(o.out);
    const int vec = static_cast<int>(threadIdx.x) % kVecsPerRow;
    const int c0 = static_cast<int>(blockIdx.x) * kTile;
    const int c = c0 + vec * W;
    const int n = min(W, cols - c);
    const bool whole_dy = cols % W == 0 && reinterpret_cast<std::uintptr_t>(dy) % 16 == 0;
    const bool whole_in = cols % W == 0 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
    const bool whole_din = cols % W == 0 && reinterpret_cast<std::uintptr_t>(din) % 16 == 0;
    const bool whole_q = cols % W == 0 && reinterpret_cast<std::uintptr_t>(o.q) % W == 0;
    const std::size_t width = 2 * static_cast<std::size_t>(cols);
    const int tile_rows = static_cast<int>((static_cast<unsigned>(rows) + kTile - 1) / kTile);  // no wrap near INT_MAX
    for (int tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int r0 = tile_row * kTile;
#pragma unroll
        for (int pass = 0; pass < kTile / kRowsPerPass; ++pass) {
            const int j = pass * kRowsPerPass + static_cast<int>(threadIdx.x) / kVecsPerRow;
            const int r = r0 + j;
            if (r >= rows || n <= 0) continue;
            const std::size_t at = static_cast<std::size_t>(r) * width + c;
            float d[W], a[W], u[W], g[W], h[W];
            load_piece<T, W>(dy, static_cast<std::size_t>(r) * cols + c, n, whole_dy, d);
            load_piece<T, W>(in, at, n, whole_in, a);
            load_piece<T, W>(in, at + cols, n, whole_in, u);
#pragma unroll
            for (int i = 0; i < W; ++i) {
                const float sa = sigmoid(a[i]);
                g[i] = d[i] * u[i] * sa * __fmaf_rn(a[i], 1.0f - sa, 1.0f);  // fused as the host twin writes it
                h[i] = d[i] * (a[i] * sa);
            }
            if (din != nullptr) {
                store_piece<T, W>(din, at, n, whole_din, g);
                store_piece<T, W>(din, at + cols, n, whole_din, h);
            }
            if (o.q != nullptr) {
                const bool staged = o.q_t != nullptr;
                local = max(local, quantize_piece<W>(g, n, s, o.type, o.q, at, whole_q,
                                                     staged ? stage[0] + j * kPitch + vec * W : nullptr));
                local = max(local, quantize_piece<W>(h, n, s, o.type, o.q, at + cols, whole_q,
                                                     staged ? stage[1] + j * kPitch + vec * W : nullptr));
            } else if (o.fresh.scale != nullptr) {
                constexpr DType kDtype = sizeof(T) == 4 ? DType::Float32 : DType::BFloat16;
#pragma unroll
                for (int i = 0; i < W; ++i) {
                    if (i < n) local = max(local, max(abs_bits(as_stored_in(g[i], kDtype)), abs_bits(as_stored_in(h[i], kDtype))));
                }
            }
        }
        if (o.q_t != nullptr) {
            __syncthreads();
            const int tile_width = min(kTile, cols - c0);
            write_staged_transpose(stage[0], kPitch, kTile, tile_width, o.q_t, rows, r0, c0);
            write_staged_transpose(stage[1], kPitch, kTile, tile_width, o.q_t, rows, r0, cols + c0);
            __syncthreads();
        }
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (o.q != nullptr) {
        combine_block_amax(local, o.amax);
    } else {
        finish_current_scale(local, o.fresh);
    }
}

dim3 tile_grid(std::size_t rows, std::size_t cols) {
    return dim3(static_cast<unsigned>((cols + kTile - 1) / kTile),
                static_cast<unsigned>(std::min<std::size_t>((rows + kTile - 1) / kTile, kMaxGridY)));
}

SwigluOutputs outputs(void* out, DType out_dtype, const Fp8Output* fp8) {
    if (fp8 == nullptr) return SwigluOutputs{out, out_dtype, nullptr, nullptr, nullptr, Fp8Type::E4M3, nullptr};
    return SwigluOutputs{
        out,       out_dtype, static_cast<std::uint8_t*>(fp8->data), static_cast<std::uint8_t*>(fp8->transposed), fp8->scale,
        fp8->type, fp8->amax};
}

void launch_swiglu_forward(const Tensor& in, const Tensor& out, const Fp8Output* fp8, const CurrentScaleCall& fresh,
                          cudaStream_t stream) {
    const std::size_t rows = in.rows;
    const std::size_t cols = in.cols / 2;
    SwigluOutputs o = outputs(out.data, out.dtype, fp8);
    o.fresh = CurrentScaleOut{fresh.numerator, fresh.scale, fresh.scale_inv, fresh.staging};
    const dim3 grid = tile_grid(rows, cols);
    if (in.dtype == DType::Float32) {
        swiglu_forward_kernel<float><<<grid, kTileThreads, 0, stream>>>(static_cast<const float*>(in.data),
                                                                        static_cast<int>(rows), static_cast<int>(cols), o);
    } else {
        swiglu_forward_kernel<__nv_bfloat16><<<grid, kTileThreads, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(in.data), static_cast<int>(rows), static_cast<int>(cols), o);
    }
    check_last_launch("tewb::kernels::swiglu_forward");
}

void launch_swiglu_backward(const SwigluBackwardCall& a, cudaStream_t stream) {
    const std::size_t rows = a.in.rows;
    const std::size_t cols = a.in.cols / 2;
    SwigluOutputs o = outputs(a.din.data, a.in.dtype, wanted(a.fp8));
    o.fresh = CurrentScaleOut{a.fresh.numerator, a.fresh.scale, a.fresh.scale_inv, a.fresh.staging};
    const dim3 grid = tile_grid(rows, cols);
    if (a.in.dtype == DType::Float32) {
        swiglu_backward_kernel<float><<<grid, kTileThreads, 0, stream>>>(static_cast<const float*>(a.dy.data),
                                                                         static_cast<const float*>(a.in.data),
                                                                         static_cast<int>(rows), static_cast<int>(cols), o);
    } else {
        swiglu_backward_kernel<__nv_bfloat16><<<grid, kTileThreads, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(a.dy.data), static_cast<const __nv_bfloat16*>(a.in.data), static_cast<int>(rows),
            static_cast<int>(cols), o);
    }
    check_last_launch("tewb::kernels::swiglu_backward");
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void swiglu_forward(const Tensor& in, const Tensor& out, const Tensor& fp8, Stream stream) {
    if (const auto a = detail::swiglu_forward_call("tewb::kernels::swiglu_forward", in, out, fp8)) {
        detail::launch_swiglu_forward(a->in, a->out, detail::wanted(a->fp8), a->fresh, detail::cuda_stream(stream));
    }
}

void swiglu_backward(const Tensor& dy, const Tensor& in, const Tensor& din, const Tensor& fp8, Stream stream) {
    if (const auto a = detail::swiglu_backward_call("tewb::kernels::swiglu_backward", dy, in, din, fp8)) {
        detail::launch_swiglu_backward(*a, detail::cuda_stream(stream));
    }
}

void swiglu_forward_current_scale(const Tensor& in, const Tensor& out, const CurrentScaleTarget& target, Stream stream) {
    if (const auto a = detail::swiglu_forward_current_scale_call("tewb::kernels::swiglu_forward_current_scale", in, out, target)) {
        detail::launch_swiglu_forward(a->in, a->out, nullptr, a->fresh, detail::cuda_stream(stream));
    } else {  // no elements: the scale of an empty tensor's amax, 0
        abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void swiglu_backward_current_scale(const Tensor& dy, const Tensor& in, const Tensor& din, const CurrentScaleTarget& target,
                                   Stream stream) {
    if (const auto a =
            detail::swiglu_backward_current_scale_call("tewb::kernels::swiglu_backward_current_scale", dy, in, din, target)) {
        detail::launch_swiglu_backward(*a, detail::cuda_stream(stream));
    } else {  // no elements: the scale of an empty tensor's amax, 0
        abs_max_current_scale(din, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels
