#pragma once

// The fast LayerNorm kernels: x's dtype a template parameter, 16-byte loads and stores, each row held in
// registers between its passes (one read of x forward; one read of x and dy backward), and the backward's
// dgamma/dbeta partial sums kept in registers across the rows a block handles (one partial row per block,
// no second pass over x and dy), finished into dgamma and dbeta by the last blocks to arrive
// (layer_norm_dparams.cuh) in the same launch. A row belongs to a group of WARPS warps; a thread owns the
// same columns in every row: VECS vectors of W = 16 / sizeof(T) elements, column (v * 32 * WARPS + t) * W.
// normalization.cu launches them where the shapes and pointers allow (fast_dispatch.cuh) and keeps the
// plain kernels for the rest; rms_norm.cu launches the backward as RMSNorm's (kRms: no mean, no dbeta).
#include <cuda_bf16.h>

#include <cstdint>

#include "amax/current_scale_epilogue.cuh"
#include "common/elementwise.cuh"
#include "common/staged_transpose.cuh"
#include "normalization/layer_norm_dparams.cuh"
#include "normalization/layer_norm_rule.h"

namespace tewb::kernels::detail::fast {

template <typename T>
constexpr int kWidth = 16 / static_cast<int>(sizeof(T));

// Threads per block: one group of WARPS warps, or four one-warp groups.
template <int WARPS>
constexpr int kThreads = 32 * (WARPS < 4 ? 4 : WARPS);
template <int WARPS>
constexpr int kGroups = kThreads<WARPS> / (32 * WARPS);

// W elements at p + i (i a multiple of W, p 16-byte aligned) in dtype `dtype` as floats.
template <int W>
__device__ inline void load_any(const void* p, DType dtype, std::size_t i, float (&v)[W]) {
    if (dtype == DType::Float32) {
        const auto* f = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
#pragma unroll
        for (int k = 0; k < W / 4; ++k) {
            const float4 q = f[k];
            v[4 * k] = q.x;
            v[4 * k + 1] = q.y;
            v[4 * k + 2] = q.z;
            v[4 * k + 3] = q.w;
        }
    } else {
        const auto* b = static_cast<const __nv_bfloat16*>(p) + i;
        if constexpr (W == 8) {
            const uint4 u = *reinterpret_cast<const uint4*>(b);
            unpack_bf16x2<4>(reinterpret_cast<const __nv_bfloat162*>(&u), v);
        } else {
            const uint2 u = *reinterpret_cast<const uint2*>(b);
            unpack_bf16x2<2>(reinterpret_cast<const __nv_bfloat162*>(&u), v);
        }
    }
}

template <int W>
__device__ inline void store_any(void* p, DType dtype, std::size_t i, const float (&v)[W]) {
    if (dtype == DType::Float32) {
        auto* f = reinterpret_cast<float4*>(static_cast<float*>(p) + i);
#pragma unroll
        for (int k = 0; k < W / 4; ++k) f[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
    } else {
        __nv_bfloat162 h[W / 2];
        pack_bf16x2<W / 2>(v, h);
        auto* b = static_cast<__nv_bfloat16*>(p) + i;
        if constexpr (W == 8) {
            *reinterpret_cast<uint4*>(b) = *reinterpret_cast<const uint4*>(h);
        } else {
            *reinterpret_cast<uint2*>(b) = *reinterpret_cast<const uint2*>(h);
        }
    }
}

template <typename T>
constexpr DType dtype_of() {
    if constexpr (sizeof(T) == 4) {
        return DType::Float32;
    } else {
        return DType::BFloat16;
    }
}

// The sum over the row's group: a warp sum, then (WARPS > 1, one group per block) through shared memory.
template <int WARPS>
__device__ inline float group_sum(float v) {
    v = warp_sum(v);
    if constexpr (WARPS == 1) {
        return v;
    } else {
        __shared__ float partial[WARPS];
        const int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0) partial[warp] = v;
        __syncthreads();
        float total = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) total += partial[w];
        __syncthreads();  // `partial` is reused by the next call
        return total;
    }
}

// Thread t's share of the row at `base` into registers (v), as load_row reads it, and nothing else: a prefetch.
template <typename T, int VECS, int WARPS>
__device__ __forceinline__ void load_row_values(const T* __restrict__ x, std::size_t base, int hidden, int t,
                                                float (&v)[VECS][kWidth<T>]) {
    constexpr int W = kWidth<T>;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * 32 * WARPS + t) * W;
        if (c < hidden) load_any<W>(x, dtype_of<T>(), base + c, v[k]);
    }
}

// Thread t's share of the row at `base` into registers (v), and the row's mean and rstd: the mean, then the
// variance of v - mean (two passes over the registers, float32), rstd = rsqrt(variance + eps). Both forward
// kernels start a row with it. kRms (RMSNorm): mean 0 and no pass for it; the squares as fused multiply-adds
// (__fmaf_rn, so that nvcc's contraction cannot differ from the host twin's std::fma) and rstd = 1 / sqrt(mean
// square + eps), correctly rounded as RMSNorm's plain kernel and twin take it.
// kLoaded: v already holds the row (load_row_values: a prefetch), only the statistics are computed.
template <typename T, int VECS, int WARPS, bool kRms = false, bool kLoaded = false>
__device__ __forceinline__ void load_row(const T* __restrict__ x, std::size_t base, int hidden, float eps, int t,
                                         float (&v)[VECS][kWidth<T>], float& mean, float& rstd) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
            if constexpr (!kLoaded) load_any<W>(x, dtype_of<T>(), base + c, v[k]);
            if constexpr (!kRms) {
#pragma unroll
                for (int j = 0; j < W; ++j) sum += v[k][j];
            }
        }
    }
    float squares = 0.0f;
    if constexpr (kRms) {
        mean = 0.0f;
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
            const int c = (k * kGroupThreads + t) * W;
            if (c < hidden) {
#pragma unroll
                for (int j = 0; j < W; ++j) squares = __fmaf_rn(v[k][j], v[k][j], squares);
            }
        }
        rstd = 1.0f / sqrtf(group_sum<WARPS>(squares) / hidden + eps);
        return;
    }
    mean = group_sum<WARPS>(sum) / hidden;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float d = v[k][j] - mean;
                squares += d * d;
            }
        }
    }
    rstd = rsqrtf(group_sum<WARPS>(squares) / hidden + eps);
}

// y = (v - mean) · rstd · gamma + beta for the W columns from c, stored to out (at `at`) unless out is null:
// both forward kernels' output step. kRms: y = (v · rstd) · gamma, each product rounded (RMSNorm has no mean and no
// beta; beta is not read).
template <int W, bool kRms = false>
__device__ __forceinline__ void normalize(const float (&v)[W], float mean, float rstd, const void* __restrict__ gamma,
                                          const void* __restrict__ beta, DType param_dtype, int c, void* out, DType out_dtype,
                                          std::size_t at, float (&y)[W]) {
    float g[W];
    load_any<W>(gamma, param_dtype, c, g);
    if constexpr (kRms) {
#pragma unroll
        for (int j = 0; j < W; ++j) y[j] = __fmul_rn(v[j], rstd) * g[j];
    } else {
        float b[W];
        load_any<W>(beta, param_dtype, c, b);
#pragma unroll
        for (int j = 0; j < W; ++j) y[j] = (v[j] - mean) * rstd * g[j] + b[j];
    }
    if (out != nullptr) store_any<W>(out, out_dtype, at, y);
}

// The row's saved statistics (RMSNorm saves no mean: mean_out null).
__device__ __forceinline__ void save_statistics(int row, float mean, float rstd, float* __restrict__ mean_out,
                                                float* __restrict__ rstd_out) {
    if (mean_out != nullptr) mean_out[row] = mean;
    rstd_out[row] = rstd;
}

// kRms: RMSNorm's forward (load_row's and normalize's kRms; beta and mean_out null). fresh.scale set (q null then):
// current scaling's scale of out from the largest |y| as out stores it (current_scale_epilogue.cuh).
template <typename T, int VECS, int WARPS, bool kRms = false>
__global__ void __launch_bounds__(kThreads<WARPS>)
    layer_norm_forward(const T* __restrict__ x, const void* __restrict__ gamma, const void* __restrict__ beta, DType param_dtype,
                       int rows, int hidden, float eps, void* out, DType out_dtype, std::uint8_t* q, const float* scale,
                       Fp8Type type, float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                       CurrentScaleOut fresh) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    const int group = threadIdx.x / kGroupThreads;
    const int t = threadIdx.x % kGroupThreads;
    const float s = q != nullptr ? *scale : 1.0f;
    unsigned local = 0;
    for (int row = blockIdx.x * kGroups<WARPS> + group; row < rows; row += gridDim.x * kGroups<WARPS>) {
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        float v[VECS][W];
        float mean = 0.0f;
        float rstd = 0.0f;
        load_row<T, VECS, WARPS, kRms>(x, base, hidden, eps, t, v, mean, rstd);
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
            const int c = (k * kGroupThreads + t) * W;
            if (c < hidden) {
                float y[W];
                normalize<W, kRms>(v[k], mean, rstd, gamma, beta, param_dtype, c, out, out_dtype, base + c, y);
                if (q != nullptr) {
                    std::uint8_t bytes[W];
#pragma unroll
                    for (int j = 0; j < W; ++j) {
                        bytes[j] = fp8_from_float(y[j] * s, type);
                        local = max(local, abs_bits(y[j]));
                    }
                    if constexpr (W == 8) {
                        *reinterpret_cast<uint2*>(q + base + c) = *reinterpret_cast<const uint2*>(bytes);
                    } else {
                        *reinterpret_cast<std::uint32_t*>(q + base + c) = *reinterpret_cast<const std::uint32_t*>(bytes);
                    }
                } else if (fresh.scale != nullptr) {
#pragma unroll
                    for (int j = 0; j < W; ++j) local = max(local, abs_bits(as_stored_in(y[j], out_dtype)));
                }
            }
        }
        if (t == 0) save_statistics(row, mean, rstd, mean_out, rstd_out);
    }
    // One or the other: both share combine_block_amax's shared words (a *_current_scale call has no FP8 output).
    if (q != nullptr) {
        combine_block_amax(local, amax);
    } else {
        finish_current_scale(local, fresh);
    }
}

// One row of layer_norm_forward_transposed by its group (thread t of kGroupThreads): layer_norm_forward's
// row, term for term (load_row, normalize; out, q, mean and rstd written), plus the row's FP8 bytes into
// stage[0, hidden). Only the FP8 writes differ from layer_norm_forward's loop body, which stays a loop of
// its own: building that kernel on this function allocated its registers differently (up to 73 where it
// takes 64). With WARPS > 1 every thread of the block calls it (group_sum synchronizes).
// kLoaded: v holds the row already (the caller's prefetch); else it is loaded here.
template <typename T, int VECS, int WARPS, bool kRms, bool kLoaded>
__device__ inline void forward_row_staged(const T* __restrict__ x, const void* __restrict__ gamma, const void* __restrict__ beta,
                                          DType param_dtype, int row, int hidden, float eps, void* out, DType out_dtype,
                                          std::uint8_t* __restrict__ q, float s, Fp8Type type, unsigned& local,
                                          float* __restrict__ mean_out, float* __restrict__ rstd_out, std::uint8_t* stage, int t,
                                          float (&v)[VECS][kWidth<T>]) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    float mean = 0.0f;
    float rstd = 0.0f;
    load_row<T, VECS, WARPS, kRms, kLoaded>(x, base, hidden, eps, t, v, mean, rstd);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
            float y[W];
            normalize<W, kRms>(v[k], mean, rstd, gamma, beta, param_dtype, c, out, out_dtype, base + c, y);
            std::uint32_t words[W / 4];  // the FP8 bytes, 4 to a word
#pragma unroll
            for (int w = 0; w < W / 4; ++w) {
                words[w] = 0u;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float yj = y[4 * w + i];
                    words[w] |= static_cast<std::uint32_t>(fp8_from_float(yj * s, type)) << (8 * i);
                    local = max(local, abs_bits(yj));
                }
            }
            if constexpr (W == 8) {
                *reinterpret_cast<uint2*>(q + base + c) = make_uint2(words[0], words[1]);
            } else {
                *reinterpret_cast<std::uint32_t*>(q + base + c) = words[0];
            }
            // 4-byte stores: the stage's rows are 4-byte aligned (staged_transpose_pitch).
#pragma unroll
            for (int w = 0; w < W / 4; ++w) *reinterpret_cast<std::uint32_t*>(stage + c + 4 * w) = words[w];
        }
    }
    if (t == 0) save_statistics(row, mean, rstd, mean_out, rstd_out);
}

// The forward with the FP8 output's transposed copy q_t [hidden, rows]: a block owns bands of band_rows
// consecutive rows (a multiple of 8; bands blockIdx.x, + gridDim.x, ...), its groups take the band's rows
// (forward_row_staged, the same arithmetic as layer_norm_forward) and stage their FP8 bytes in shared memory
// (band_rows x pitch bytes, dynamic), from which the band's columns go to q_t as runs of band_rows bytes. kRms:
// RMSNorm's (as layer_norm_forward's).
template <typename T, int VECS, int WARPS, bool kRms = false>
__global__ void __launch_bounds__(kThreads<WARPS>)
    layer_norm_forward_transposed(const T* __restrict__ x, const void* __restrict__ gamma, const void* __restrict__ beta,
                                  DType param_dtype, int rows, int hidden, float eps, void* out, DType out_dtype,
                                  std::uint8_t* __restrict__ q, std::uint8_t* __restrict__ q_t, const float* scale, Fp8Type type,
                                  float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out, int band_rows,
                                  int pitch) {
    extern __shared__ __align__(16) std::uint8_t fp8_stage[];  // [band_rows][pitch]
    constexpr int kGroupThreads = 32 * WARPS;
    const int group = threadIdx.x / kGroupThreads;
    const int t = threadIdx.x % kGroupThreads;
    constexpr bool kPrefetch = layer_norm_forward_prefetches(VECS, kWidth<T>);
    const float s = *scale;
    unsigned local = 0;
    const int bands = (rows + band_rows - 1) / band_rows;
    // A group's rows in turn: r0 + i for i = group, group + groups, ... of each of the block's bands. kPrefetch: the next
    // of them is loaded before the current row's work (its statistics, stores and FP8 bytes), so a group waits for
    // memory about once per band rather than once per row; each row's arithmetic is the same.
    const auto has_row = [&](int band, int i) { return band < bands && i < band_rows && band * band_rows + i < rows; };
    float v[VECS][kWidth<T>];
    if constexpr (kPrefetch) {
        if (has_row(static_cast<int>(blockIdx.x), group)) {
            load_row_values<T, VECS, WARPS>(x, static_cast<std::size_t>(static_cast<int>(blockIdx.x) * band_rows + group) * hidden,
                                            hidden, t, v);
        }
    }
    for (int band = blockIdx.x; band < bands; band += gridDim.x) {
        const int r0 = band * band_rows;
        // With WARPS > 1 the block is one group: the break below is uniform across it.
        for (int i = group; i < band_rows && r0 + i < rows; i += kGroups<WARPS>) {
            float ahead[VECS][kWidth<T>];
            if constexpr (kPrefetch) {
                const bool same_band = has_row(band, i + kGroups<WARPS>);
                const int next_band = same_band ? band : band + static_cast<int>(gridDim.x);
                const int next_i = same_band ? i + kGroups<WARPS> : group;
                if (has_row(next_band, next_i)) {
                    load_row_values<T, VECS, WARPS>(x, static_cast<std::size_t>(next_band * band_rows + next_i) * hidden, hidden, t,
                                                    ahead);
                }
            }
            forward_row_staged<T, VECS, WARPS, kRms, kPrefetch>(x, gamma, beta, param_dtype, r0 + i, hidden, eps, out, out_dtype, q, s,
                                                               type, local, mean_out, rstd_out,
                                                               fp8_stage + static_cast<std::size_t>(i) * pitch, t, v);
            if constexpr (kPrefetch) {
#pragma unroll
                for (int k = 0; k < VECS; ++k) {
#pragma unroll
                    for (int j = 0; j < kWidth<T>; ++j) v[k][j] = ahead[k][j];
                }
            }
        }
        __syncthreads();
        write_staged_transpose(fp8_stage, pitch, band_rows, hidden, q_t, rows, r0, 0);
        __syncthreads();  // the stage is refilled by the next band
    }
    combine_block_amax(local, amax);
}

// A float as a T holds it (bfloat16: rounded to nearest even).
template <typename T>
__device__ inline float as_stored(float v) {
    if constexpr (sizeof(T) == 4) {
        return v;
    } else {
        return __bfloat162float(__float2bfloat16(v));
    }
}

// The backward's per-thread state: the thread's gamma and its running dgamma, dbeta and (kSum) dx column sums.
template <typename T, int VECS, bool kSum>
struct BackwardSums {
    float g[VECS][kWidth<T>];
    float dgamma[VECS][kWidth<T>] = {};
    float dbeta[VECS][kWidth<T>] = {};
    float dsum[kSum ? VECS : 1][kWidth<T>] = {};
};

template <typename T, int VECS, int WARPS, bool kSum>
__device__ __forceinline__ void load_gamma(const void* gamma, DType param_dtype, int hidden, int t, BackwardSums<T, VECS, kSum>& s) {
    constexpr int W = kWidth<T>;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * 32 * WARPS + t) * W;
        if (c < hidden) load_any<W>(gamma, param_dtype, c, s.g[k]);
    }
}

// One row's inputs as thread t of its group holds them: its columns of x and dy as floats, of dresidual (the skip
// connection's gradient; kSkip and set) and the row's mean (0 where mean is null: RMSNorm) and rstd. Loads issued
// together, so one memory latency per row; layer_norm_backward issues the next row's while it works on this one
// (kPrefetch, which also takes dresidual ahead; without it dresidual is read when dx is written, keeping it out of the
// registers held across the row's sums).
template <typename T, int VECS>
struct RowInputs {
    float x[VECS][kWidth<T>];
    float d[VECS][kWidth<T>];
    float skip[VECS][kWidth<T>];
    float mu;
    float r;
};

template <typename T, int VECS, int WARPS, bool kSkip>
__device__ __forceinline__ void load_row_inputs(const void* __restrict__ dy, DType dy_dtype, const T* __restrict__ x, const T* dresidual,
                                                const float* __restrict__ mean, const float* __restrict__ rstd, int row, int hidden,
                                                int t, RowInputs<T, VECS>& in) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    in.mu = mean != nullptr ? mean[row] : 0.0f;
    in.r = rstd[row];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
            load_any<W>(x, dtype_of<T>(), base + c, in.x[k]);
            load_any<W>(dy, dy_dtype, base + c, in.d[k]);
            if constexpr (kSkip) {
                if (dresidual != nullptr) load_any<W>(dresidual, dtype_of<T>(), base + c, in.skip[k]);
            }
        }
    }
}

// Row `row` (at base = row · hidden) by its group's thread t from its loaded inputs: dx of the thread's columns
// (dresidual added, the skip connection's gradient, before the store; it may alias dx: each thread reads its columns of
// a row before it writes them) stored to dx; dgamma, dbeta and (kSum) the column sums of dx as stored accumulate; then
// sink(k, c, v) gets each vector of dx as stored in T as soon as it is stored (so no row of them stays live in
// registers). kRms: RMSNorm's backward, dx = r · (dy · gamma - xhat · mean(dy · gamma · xhat)) with xhat = x · r:
// LayerNorm's with mu = 0 and mean_g = 0 (x - 0 and v - 0 are exact), and no dbeta. With WARPS > 1 every thread of the
// block calls it (group_sum synchronizes). kSkipLoaded: dresidual's columns are in `in` (load_row_inputs with kSkip);
// else read here.
template <typename T, int VECS, int WARPS, bool kSum, bool kRms, bool kSkipLoaded, typename Sink>
__device__ __forceinline__ void backward_row_loaded(RowInputs<T, VECS>& in, int hidden, std::size_t base, int t, T* dx,
                                                    const T* dresidual, BackwardSums<T, VECS, kSum>& s, const Sink& sink) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    float (&xhat)[VECS][W] = in.x;  // x, then xhat in place
    const float (&d)[VECS][W] = in.d;
    const float mu = in.mu;
    const float r = in.r;
    float sum_g = 0.0f;
    float sum_gx = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
#pragma unroll
            for (int j = 0; j < W; ++j) {
                xhat[k][j] = (xhat[k][j] - mu) * r;
                const float gj = d[k][j] * s.g[k][j];
                if constexpr (!kRms) sum_g += gj;
                sum_gx += gj * xhat[k][j];
                s.dgamma[k][j] += d[k][j] * xhat[k][j];
                if constexpr (!kRms) s.dbeta[k][j] += d[k][j];
            }
        }
    }
    float mean_g = 0.0f;
    if constexpr (!kRms) mean_g = group_sum<WARPS>(sum_g) / hidden;
    const float mean_gx = group_sum<WARPS>(sum_gx) / hidden;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int c = (k * kGroupThreads + t) * W;
        if (c < hidden) {
            float out[W];
#pragma unroll
            for (int j = 0; j < W; ++j) out[j] = r * (d[k][j] * s.g[k][j] - mean_g - xhat[k][j] * mean_gx);
            if (dresidual != nullptr) {
                if constexpr (!kSkipLoaded) load_any<W>(dresidual, dtype_of<T>(), base + c, in.skip[k]);
#pragma unroll
                for (int j = 0; j < W; ++j) out[j] += in.skip[k][j];
            }
            store_any<W>(dx, dtype_of<T>(), base + c, out);
#pragma unroll
            for (int j = 0; j < W; ++j) {
                out[j] = as_stored<T>(out[j]);
                if constexpr (kSum) s.dsum[k][j] += out[j];
            }
            sink(k, c, out);
        }
    }
}

// The block's partial rows (dgamma's partial[blockIdx.x], dbeta's partial[gridDim.x + blockIdx.x], kSum: the dx
// sums' partial[2 · gridDim.x + blockIdx.x]): the groups of a block add theirs through shared memory (`sums`, [2 or
// 3][hidden] floats), group by group from 0; then dgamma, dbeta (and dsum) finished by class (finish_dparams_by_class).
// kRms: dgamma's row alone (sums [1][hidden]).
template <typename T, int VECS, int WARPS, bool kSum, bool kRms>
__device__ __forceinline__ void write_partial_rows(const BackwardSums<T, VECS, kSum>& s, int hidden, int group, int t, float* sums,
                                                   const DparamsTarget& dparams) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    constexpr int kGroupCount = kGroups<WARPS>;
    float* dgamma_row = dparams.partial + static_cast<std::size_t>(blockIdx.x) * hidden;
    float* dbeta_row = dparams.partial + static_cast<std::size_t>(gridDim.x + blockIdx.x) * hidden;
    float* dsum_row = dparams.partial + static_cast<std::size_t>(2 * gridDim.x + blockIdx.x) * hidden;
    if constexpr (kGroupCount == 1) {
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
            const int c = (k * kGroupThreads + t) * W;
            if (c < hidden) {
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    dgamma_row[c + j] = s.dgamma[k][j];
                    if constexpr (!kRms) dbeta_row[c + j] = s.dbeta[k][j];
                    if constexpr (kSum) dsum_row[c + j] = s.dsum[k][j];
                }
            }
        }
    } else {
        for (int g2 = 0; g2 < kGroupCount; ++g2) {
            if (group == g2) {
#pragma unroll
                for (int k = 0; k < VECS; ++k) {
                    const int c = (k * kGroupThreads + t) * W;
                    if (c < hidden) {
#pragma unroll
                        for (int j = 0; j < W; ++j) {
                            sums[c + j] = (g2 == 0 ? 0.0f : sums[c + j]) + s.dgamma[k][j];
                            if constexpr (!kRms) sums[hidden + c + j] = (g2 == 0 ? 0.0f : sums[hidden + c + j]) + s.dbeta[k][j];
                            if constexpr (kSum) {
                                sums[2 * hidden + c + j] = (g2 == 0 ? 0.0f : sums[2 * hidden + c + j]) + s.dsum[k][j];
                            }
                        }
                    }
                }
            }
            __syncthreads();
        }
        for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
            dgamma_row[c] = sums[c];
            if constexpr (!kRms) dbeta_row[c] = sums[hidden + c];
            if constexpr (kSum) dsum_row[c] = sums[2 * hidden + c];
        }
    }
    finish_dparams_by_class<kRms ? 1 : (kSum ? 3 : 2)>(dparams, hidden, static_cast<int>(blockIdx.x));
}

// dx of every row the block handles (rows blockIdx.x · groups + group, + gridDim.x · groups, ...), and the block's
// partial dgamma and dbeta over those rows, finished by class (dparams.partials == gridDim.x) unless dparams.dgamma is
// null. kCast: dx is also a Linear's output gradient (layer_norm_backward_cast_dbias): its copy (as stored) in
// cast_dtype to cast_out (null: none) and its column sums, finished into dparams.dsum with the others. kRms: RMSNorm's
// backward (mean unused, dparams.dbeta null: dgamma's partial rows only); with kCast the copy alone (rms_norm_backward_cast:
// RMSNorm's models have no biases, so no column sums). A thread loads its next row's inputs before
// it works on the current one (kPrefetch: where the registers allow, layer_norm_backward_prefetches), so that a row's
// memory latency overlaps the previous row's arithmetic and sums instead of following them; the arithmetic and its
// order are the same either way. kFresh: current scaling's scale of dx from its largest |value| as stored
// into fresh (current_scale_epilogue.cuh), the Linear's FP8 cast following with it; a template flag so that the other
// forms keep their registers (the seed's float32 cast form took 135 with it compiled in, 128 without: 3 blocks per SM
// instead of 4).
template <typename T, int VECS, int WARPS, bool kCast, bool kRms = false, bool kFresh = false>
__global__ void __launch_bounds__(kThreads<WARPS>)
    layer_norm_backward(const void* __restrict__ dy, DType dy_dtype, const T* __restrict__ x, const float* __restrict__ mean,
                        const float* __restrict__ rstd, const void* __restrict__ gamma, DType param_dtype, int rows, int hidden,
                        T* dx, const T* dresidual, DparamsTarget dparams, void* cast_out, DType cast_dtype, CurrentScaleOut fresh) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    constexpr int kGroupCount = kGroups<WARPS>;
    constexpr bool kPrefetch = layer_norm_backward_prefetches(VECS, W, WARPS);
    constexpr bool kSum = kCast && !kRms;  // dx's column sums (a bias gradient)
    extern __shared__ float sums[];  // [1, 2 or 3][hidden], with several groups
    const int group = threadIdx.x / kGroupThreads;
    const int t = threadIdx.x % kGroupThreads;
    const float* row_mean = kRms ? nullptr : mean;
    BackwardSums<T, VECS, kSum> s;
    load_gamma<T, VECS, WARPS>(gamma, param_dtype, hidden, t, s);
    // 64-bit steps: rows near INT_MAX would wrap an int's row + stride.
    const long long stride = static_cast<long long>(gridDim.x) * kGroupCount;
    long long row = static_cast<long long>(blockIdx.x) * kGroupCount + group;
    RowInputs<T, VECS> in;
    unsigned local = 0;  // kFresh: the largest |dx| as stored, as bits
    if (row < rows) {
        load_row_inputs<T, VECS, WARPS, kPrefetch>(dy, dy_dtype, x, dresidual, row_mean, rstd, static_cast<int>(row), hidden, t, in);
    }
    for (; row < rows; row += stride) {
        const long long next = row + stride;
        RowInputs<T, VECS> ahead;
        if constexpr (kPrefetch) {
            if (next < rows) {
                load_row_inputs<T, VECS, WARPS, true>(dy, dy_dtype, x, dresidual, row_mean, rstd, static_cast<int>(next), hidden, t,
                                                      ahead);
            }
        }
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        backward_row_loaded<T, VECS, WARPS, kSum, kRms, kPrefetch>(in, hidden, base, t, dx, dresidual, s, [&](int, int c, const float (&v)[W]) {
            if constexpr (kCast) {
                if (cast_out != nullptr) store_any<W>(cast_out, cast_dtype, base + c, v);
            }
            if constexpr (kFresh) {
#pragma unroll
                for (int j = 0; j < W; ++j) local = max(local, abs_bits(v[j]));
            }
        });
        if (next < rows) {
            if constexpr (kPrefetch) {
                in = ahead;
            } else {
                load_row_inputs<T, VECS, WARPS, false>(dy, dy_dtype, x, dresidual, row_mean, rstd, static_cast<int>(next), hidden, t, in);
            }
        }
    }
    write_partial_rows<T, VECS, WARPS, kSum, kRms>(s, hidden, group, t, sums, dparams);
    if constexpr (kFresh) finish_current_scale(local, fresh);
}

// The banded backward's grid (layer_norm_backward_quantized, below): its band of rows, the stage's pitch, its blocks (one
// per partial row at most: bands k, k + blocks, ...) and its dynamic shared memory (`sum_rows` rows of sums where a block
// has several row groups, then the stage). LayerNorm's has 3 rows of sums, RMSNorm's 1.
struct BandedGrid {
    int band, pitch, blocks;
    std::size_t shared;
};
template <int WARPS>
BandedGrid banded_grid(std::size_t rows, std::size_t hidden, int partials, int sum_rows) {
    BandedGrid g{};
    g.band = layer_norm_backward_band_rows(rows, hidden);
    g.pitch = staged_transpose_pitch(static_cast<int>(hidden));
    const std::size_t bands = (rows + static_cast<std::size_t>(g.band) - 1) / static_cast<std::size_t>(g.band);
    g.blocks = static_cast<int>(bands < static_cast<std::size_t>(partials) ? bands : static_cast<std::size_t>(partials));
    g.shared = (kGroups<WARPS> > 1 ? static_cast<std::size_t>(sum_rows) * hidden * sizeof(float) : 0) +
               static_cast<std::size_t>(g.band) * static_cast<std::size_t>(g.pitch);
    return g;
}

// The backward whose dx is an FP8 Linear's output gradient (layer_norm_backward_quantize_dbias): beside dx, q = fp8(dx
// as stored · scale[0]) [rows, hidden], its transposed copy q_t [hidden, rows], max |dx| combined into amax (when set)
// and dx's column sums, finished into dparams.dsum. The block takes bands of band_rows consecutive rows (bands
// blockIdx.x, + gridDim.x, ...; band_rows a multiple of 8), its groups the band's rows (row r0 + i by group i %
// groups), and stages the band's FP8 bytes in shared memory ([band_rows][pitch] bytes after the partial sums' [3][hidden]
// floats where the block has several groups), from which the band's columns go to q_t as runs of band_rows bytes.
// kRms: RMSNorm's backward (rms_norm_backward_quantize: mean null, dgamma's partial rows alone, no column sums; its
// sums [1][hidden] before the stage).
template <typename T, int VECS, int WARPS, bool kRms = false>
__global__ void __launch_bounds__(kThreads<WARPS>)
    layer_norm_backward_quantized(const void* __restrict__ dy, DType dy_dtype, const T* __restrict__ x, const float* __restrict__ mean,
                                  const float* __restrict__ rstd, const void* __restrict__ gamma, DType param_dtype, int rows,
                                  int hidden, T* dx, const T* dresidual, DparamsTarget dparams, std::uint8_t* __restrict__ q,
                                  std::uint8_t* __restrict__ q_t, const float* scale, Fp8Type type, float* amax, int band_rows,
                                  int pitch) {
    constexpr int W = kWidth<T>;
    constexpr int kGroupThreads = 32 * WARPS;
    constexpr int kGroupCount = kGroups<WARPS>;
    constexpr bool kSum = !kRms;
    constexpr bool kPrefetch = layer_norm_backward_prefetches(VECS, W, WARPS);
    extern __shared__ __align__(16) float shared[];
    float* sums = shared;  // [3][hidden] (RMSNorm: [1][hidden]) with several groups
    std::uint8_t* stage = reinterpret_cast<std::uint8_t*>(shared + (kGroupCount > 1 ? (kRms ? 1 : 3) * hidden : 0));
    const int group = threadIdx.x / kGroupThreads;
    const int t = threadIdx.x % kGroupThreads;
    const float sc = *scale;
    unsigned local = 0;
    BackwardSums<T, VECS, kSum> s;
    load_gamma<T, VECS, WARPS>(gamma, param_dtype, hidden, t, s);
    const int bands = (rows + band_rows - 1) / band_rows;
    // A group's rows in turn: r0 + i for i = group, group + groups, ... of each of the block's bands. kPrefetch: the next
    // of them (in this band or the next) is loaded, dresidual with it, before the current row's work, as
    // layer_norm_backward does; the arithmetic and its order are the same either way.
    const auto has_row = [&](int band, int i) { return band < bands && i < band_rows && band * band_rows + i < rows; };
    RowInputs<T, VECS> in;
    if constexpr (kPrefetch) {
        if (has_row(static_cast<int>(blockIdx.x), group)) {
            load_row_inputs<T, VECS, WARPS, true>(dy, dy_dtype, x, dresidual, mean, rstd, static_cast<int>(blockIdx.x) * band_rows + group,
                                                  hidden, t, in);
        }
    }
    for (int band = blockIdx.x; band < bands; band += gridDim.x) {
        const int r0 = band * band_rows;
        // With WARPS > 1 the block is one group: the loop's end is uniform across it.
        for (int i = group; i < band_rows && r0 + i < rows; i += kGroupCount) {
            const int row = r0 + i;
            const std::size_t base = static_cast<std::size_t>(row) * hidden;
            std::uint8_t* stage_row = stage + static_cast<std::size_t>(i) * pitch;
            RowInputs<T, VECS> ahead;
            if constexpr (kPrefetch) {
                const bool same_band = has_row(band, i + kGroupCount);
                const int next_band = same_band ? band : band + static_cast<int>(gridDim.x);
                const int next_i = same_band ? i + kGroupCount : group;
                if (has_row(next_band, next_i)) {
                    load_row_inputs<T, VECS, WARPS, true>(dy, dy_dtype, x, dresidual, mean, rstd, next_band * band_rows + next_i, hidden,
                                                          t, ahead);
                }
            } else {
                load_row_inputs<T, VECS, WARPS, false>(dy, dy_dtype, x, dresidual, mean, rstd, row, hidden, t, in);
            }
            backward_row_loaded<T, VECS, WARPS, kSum, kRms, kPrefetch>(in, hidden, base, t, dx, dresidual, s,
                                         [&](int, int c, const float (&v)[W]) {
                                             std::uint32_t words[W / 4];  // the FP8 bytes, 4 to a word
#pragma unroll
                                             for (int w = 0; w < W / 4; ++w) {
                                                 words[w] = 0u;
#pragma unroll
                                                 for (int b = 0; b < 4; ++b) {
                                                     const float e = v[4 * w + b];
                                                     words[w] |= static_cast<std::uint32_t>(fp8_from_float(e * sc, type)) << (8 * b);
                                                     local = max(local, abs_bits(e));
                                                 }
                                             }
                                             if constexpr (W == 8) {
                                                 *reinterpret_cast<uint2*>(q + base + c) = make_uint2(words[0], words[1]);
                                             } else {
                                                 *reinterpret_cast<std::uint32_t*>(q + base + c) = words[0];
                                             }
#pragma unroll
                                             for (int w = 0; w < W / 4; ++w) {
                                                 *reinterpret_cast<std::uint32_t*>(stage_row + c + 4 * w) = words[w];
                                             }
                                         });
            if constexpr (kPrefetch) in = ahead;
        }
        __syncthreads();
        write_staged_transpose(stage, pitch, band_rows, hidden, q_t, rows, r0, 0);
        __syncthreads();  // the stage is refilled by the next band
    }
    combine_block_amax(local, amax);
    write_partial_rows<T, VECS, WARPS, kSum, kRms>(s, hidden, group, t, sums, dparams);
}

}  // namespace tewb::kernels::detail::fast
