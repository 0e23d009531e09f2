// Softmax cross-entropy, one launch forward and one backward. A block of 8 warps per row (a block takes rows
// b, b + gridDim.x, ...), 16-byte loads where every row starts 16-byte aligned. The forward reads each row
// once: each thread keeps an online (max, sum of exp(x - max)) pair over its vectors, the pairs combine by
// the warp's butterfly and then the warps in order (the host twin's order, loss_host.cpp); thread 0 writes
// lse and adds the row's loss to its block's double sum; the last block to arrive adds the blocks' sums in
// block order and writes the mean. The backward is elementwise from the saved lse. The forward with the
// gradient is the forward's kernel that, once a row's lse is known, runs the backward's row loop (the same
// __device__ function) over the row in place, re-reading it (from L2).
#include <cuda_bf16.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "common/alignment.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "loss/loss_call.h"
#include "loss/loss_rule.h"
#include "tewb_kernels/loss.h"

namespace tewb::kernels::detail {

namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kCrossEntropyThreads);
constexpr unsigned kWarps = static_cast<unsigned>(kCrossEntropyWarps);
constexpr unsigned kUnroll = 4;                    // vectors a thread loads before using them (in order): loads in flight
constexpr std::size_t kMaxBackwardBlocks = 65536;  // the backward's blocks loop over rows beyond this
constexpr unsigned kFullWarp = 0xffffffffu;

// The forward's arrival counter: zero at module load, reset by the last block of every launch (the pattern
// and its one-stream caveat of common/column_sum.cuh).
__device__ unsigned cross_entropy_arrivals;

__device__ inline float quiet_nan() {
    return __int_as_float(0x7fc00000);
}

// The largest logit seen (never NaN: it only moves to a larger one; from -FLT_MAX so that a -inf logit adds
// exp(-inf) = 0 and an empty pair combines as 0) and the sum of exp(x - max) over the logits seen.
struct OnlineSum {
    float max;
    float sum;
};

template <int W>
__device__ inline void add_vector(OnlineSum& acc, const float (&x)[W]) {
    float top = x[0];
#pragma unroll
    for (int k = 1; k < W; ++k) top = fmaxf(top, x[k]);
    if (top > acc.max) {
        acc.sum = __fmul_rn(acc.sum, expf(acc.max - top));  // rounded apart from the additions below, as the host
        acc.max = top;
    }
#pragma unroll
    for (int k = 0; k < W; ++k) acc.sum = __fadd_rn(acc.sum, expf(x[k] - acc.max));
}

// Commutes bit for bit (no fused multiply-add: __fmul_rn, __fadd_rn), so both lanes of a butterfly pair agree.
__device__ inline OnlineSum combine(const OnlineSum& a, const OnlineSum& b) {
    const float top = fmaxf(a.max, b.max);
    return {top, __fadd_rn(__fmul_rn(a.sum, expf(a.max - top)), __fmul_rn(b.sum, expf(b.max - top)))};
}

// W consecutive elements of T at p (W > 1: p aligned to W elements) in one load of their 16 bytes (8 for bfloat16 W ==
// 4), kept as loaded while a thread's other loads are in flight and turned into floats where used: a bfloat16 vector
// holds 4 registers until then, not 8.
template <typename T, int W>
struct Loaded {
    static constexpr std::size_t kBytes = W * sizeof(T);
    static_assert(W == 1 || kBytes == 16 || kBytes == 8, "single elements, or vectors of 8 or 16 bytes");
    using Word = std::conditional_t<W == 1, T, std::conditional_t<kBytes == 16, uint4, uint2>>;
    Word word;
};

template <typename T, int W>
__device__ inline Loaded<T, W> load_word(const T* p) {
    return {*reinterpret_cast<const typename Loaded<T, W>::Word*>(p)};
}

template <typename T, int W>
__device__ inline void to_floats(const Loaded<T, W>& loaded, float (&v)[W]) {
    if constexpr (W == 1) {
        v[0] = to_float(loaded.word);
    } else if constexpr (Loaded<T, W>::kBytes == 16) {
        unpack(loaded.word, v);  // elementwise.cuh's: through the words, so the load stays one 16-byte load
    } else {  // 4 bfloat16 values in two words, the same way
        const unsigned words[2] = {loaded.word.x, loaded.word.y};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            v[2 * i] = __uint_as_float(words[i] << 16);
            v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
        }
    }
}

template <int W>
__device__ inline void store_vector(float* p, const float (&v)[W]) {
    if constexpr (W == 1) {
        *p = v[0];
    } else {
#pragma unroll
        for (int k = 0; k < W / 4; ++k) {
            reinterpret_cast<float4*>(p)[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        }
    }
}

template <int W>
__device__ inline void store_vector(__nv_bfloat16* p, const float (&v)[W]) {
    if constexpr (W == 1) {
        *p = __float2bfloat16(v[0]);
    } else {
        static_assert(W == 4 || W == 8, "bfloat16 vectors of 8 or 16 bytes");
        alignas(16) __nv_bfloat162 h[W / 2];  // read and written as one 8- or 16-byte word
#pragma unroll
        for (int k = 0; k < W / 2; ++k) h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
        if constexpr (W == 8) {
            *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
        } else {
            *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(h);
        }
    }
}

__device__ inline std::int64_t row_target(const std::int64_t* __restrict__ targets, unsigned row, unsigned seq,
                                          long long target_row_stride) {
    return targets[static_cast<long long>(row / seq) * target_row_stride + row % seq];
}

// One row's gradient, the block's threads striding its vectors as the forward does: dlogits = (exp(x - lse) -
// onehot) * scale, a NaN row for a target outside [0, vocab). No __restrict__ on logits and dlogits: they may be
// one buffer. Each thread reads its elements before it writes them, and no thread touches another's.
template <typename TIn, typename TOut, int W>
__device__ inline void write_row_gradient(const TIn* logits, TOut* dlogits, std::size_t base, unsigned vocab,
                                          std::int64_t target, float row_lse, float scale) {
    const float row_scale = target >= 0 && target < vocab ? scale : quiet_nan();
    const unsigned vectors = vocab / W;
    for (unsigned v0 = threadIdx.x; v0 < vectors; v0 += kUnroll * kThreads) {
        Loaded<TIn, W> loaded[kUnroll];
#pragma unroll
        for (unsigned u = 0; u < kUnroll; ++u) {
            const unsigned v = v0 + u * kThreads;
            if (v < vectors) loaded[u] = load_word<TIn, W>(logits + base + static_cast<std::size_t>(v) * W);
        }
#pragma unroll
        for (unsigned u = 0; u < kUnroll; ++u) {
            const unsigned v = v0 + u * kThreads;
            if (v >= vectors) continue;
            float values[W];
            to_floats(loaded[u], values);
#pragma unroll
            for (unsigned k = 0; k < W; ++k) {
                const float p = expf(values[k] - row_lse);
                const float onehot = static_cast<std::int64_t>(v * W + k) == target ? 1.0f : 0.0f;
                values[k] = (p - onehot) * row_scale;
            }
            store_vector<W>(dlogits + base + static_cast<std::size_t>(v) * W, values);
        }
    }
}

// The forward's body, inlined into its two kernels below (so the forward-only kernel keeps its const __restrict__
// logits). W: 16 / sizeof(T) where every row starts 16-byte aligned (loss_rule.h), else 1. `partial`: gridDim.x
// doubles. kWithGrad: once a row's lse is known, the block overwrites the row with its gradient for a loss
// gradient of 1 (Logits is then T*, the same buffer as the gradient).
template <typename T, int W, bool kWithGrad, typename Logits>
__device__ __forceinline__ void cross_entropy_forward_rows(Logits logits, unsigned rows, unsigned vocab,
                                                           const std::int64_t* __restrict__ targets, unsigned seq,
                                                           long long target_row_stride, float* __restrict__ lse,
                                                           float* __restrict__ loss, double* __restrict__ partial) {
    // Two buffers by row parity: a row's warps may write theirs while thread 0 still reads the previous row's.
    __shared__ OnlineSum warp_sums[2][kWarps];
    __shared__ float row_lses[2];  // kWithGrad: thread 0's lse for the block's other threads, by row parity as well
    // Unsigned indices: rows and vocab are at most INT_MAX, so an index plus a stride cannot wrap.
    const unsigned lane = threadIdx.x % 32;
    const unsigned warp = threadIdx.x / 32;
    const unsigned vectors = vocab / W;
    double block_sum = 0.0;  // thread 0's: the block's rows in order
    unsigned parity = 0;
    for (unsigned row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        const T* x = logits + static_cast<std::size_t>(row) * vocab;
        float target_logit = 0.0f;
        std::int64_t target = 0;  // thread 0's, and every thread's for the gradient
        if (kWithGrad || threadIdx.x == 0) target = row_target(targets, row, seq, target_row_stride);
        if (threadIdx.x == 0) {  // loaded first, so its latency hides behind the row's loads
            target_logit = target >= 0 && target < vocab ? to_float(x[target]) : quiet_nan();
        }
        OnlineSum acc{-FLT_MAX, 0.0f};
        for (unsigned v0 = threadIdx.x; v0 < vectors; v0 += kUnroll * kThreads) {
            Loaded<T, W> loaded[kUnroll];
#pragma unroll
            for (unsigned u = 0; u < kUnroll; ++u) {
                const unsigned v = v0 + u * kThreads;
                if (v < vectors) loaded[u] = load_word<T, W>(x + static_cast<std::size_t>(v) * W);
            }
#pragma unroll
            for (unsigned u = 0; u < kUnroll; ++u) {
                if (v0 + u * kThreads >= vectors) continue;
                float values[W];
                to_floats(loaded[u], values);
                add_vector<W>(acc, values);
            }
        }
        for (int offset = 16; offset > 0; offset /= 2) {
            const OnlineSum other{__shfl_xor_sync(kFullWarp, acc.max, offset), __shfl_xor_sync(kFullWarp, acc.sum, offset)};
            acc = combine(acc, other);
        }
        if (lane == 0) warp_sums[parity][warp] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            OnlineSum total = warp_sums[parity][0];
#pragma unroll
            for (unsigned w = 1; w < kWarps; ++w) total = combine(total, warp_sums[parity][w]);
            const float row_lse = total.max + logf(total.sum);
            lse[row] = row_lse;
            block_sum += static_cast<double>(row_lse - target_logit);
            if constexpr (kWithGrad) row_lses[parity] = row_lse;
        }
        if constexpr (kWithGrad) {
            // Publishes row_lses[parity]. And every thread has passed the barrier above, so every read of the row's
            // logits for the forward (the online sums, thread 0's target logit) is done before any thread
            // overwrites them. Thread 0 writes this slot again two rows on, past barriers that every thread
            // reaches only after it has read the slot.
            __syncthreads();
            write_row_gradient<T, T, W>(logits, logits, static_cast<std::size_t>(row) * vocab, vocab, target, row_lses[parity],
                                        1.0f / static_cast<float>(rows));
        }
    }
    if (threadIdx.x != 0) return;
    partial[blockIdx.x] = block_sum;
    // Release: the partial sum reaches L2 (device scope) before the ticket is taken.
    __threadfence();
    const unsigned ticket = atomicAdd(&cross_entropy_arrivals, 1u);
    if (ticket != gridDim.x - 1) return;
    // Acquire: the blocks that took the earlier tickets have their sums in L2; read them from there (__ldcg),
    // in batches so that the loads overlap, added in block order.
    __threadfence();
    constexpr int kBatch = 8;
    const unsigned blocks = gridDim.x;
    double total = 0.0;
    unsigned k = 0;
    for (; k + kBatch <= blocks; k += kBatch) {
        double v[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) v[b] = __ldcg(partial + k + b);
#pragma unroll
        for (int b = 0; b < kBatch; ++b) total += v[b];
    }
    for (; k < blocks; ++k) total += __ldcg(partial + k);
    *loss = static_cast<float>(total / static_cast<double>(rows));
    cross_entropy_arrivals = 0u;  // every block has arrived: none reads it again in this launch
}

template <typename T, int W>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_forward_kernel(const T* __restrict__ logits, unsigned rows, unsigned vocab,
                                 const std::int64_t* __restrict__ targets, unsigned seq, long long target_row_stride,
                                 float* __restrict__ lse, float* __restrict__ loss, double* __restrict__ partial) {
    cross_entropy_forward_rows<T, W, false>(logits, rows, vocab, targets, seq, target_row_stride, lse, loss, partial);
}

// The forward, then each row overwritten with its gradient (no __restrict__ on logits: it is read and written).
template <typename T, int W>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_forward_with_grad_kernel(T* logits, unsigned rows, unsigned vocab, const std::int64_t* __restrict__ targets,
                                           unsigned seq, long long target_row_stride, float* __restrict__ lse,
                                           float* __restrict__ loss, double* __restrict__ partial) {
    cross_entropy_forward_rows<T, W, true>(logits, rows, vocab, targets, seq, target_row_stride, lse, loss, partial);
}

template <typename TIn, typename TOut, int W>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_backward_kernel(const TIn* logits, unsigned rows, unsigned vocab, const std::int64_t* __restrict__ targets,
                                  unsigned seq, long long target_row_stride, const float* __restrict__ lse,
                                  const float* __restrict__ grad_loss, TOut* dlogits) {
    const float scale = *grad_loss / static_cast<float>(rows);
    for (unsigned row = blockIdx.x; row < rows; row += gridDim.x) {
        const std::int64_t target = row_target(targets, row, seq, target_row_stride);
        write_row_gradient<TIn, TOut, W>(logits, dlogits, static_cast<std::size_t>(row) * vocab, vocab, target, lse[row], scale);
    }
}

template <typename T, int W, bool kWithGrad>
constexpr auto forward_kernel() {
    if constexpr (kWithGrad) {
        return &cross_entropy_forward_with_grad_kernel<T, W>;
    } else {
        return &cross_entropy_forward_kernel<T, W>;
    }
}

// X: const T for the forward, T for the forward with the gradient (which overwrites the logits).
template <typename X>
void forward_with(X* logits, std::size_t rows, std::size_t vocab, const std::int64_t* targets, std::size_t seq,
                  std::size_t target_row_stride, float* lse, float* loss, double* partial, cudaStream_t stream) {
    using T = std::remove_const_t<X>;
    constexpr bool kWithGrad = !std::is_const_v<X>;
    const auto blocks = static_cast<unsigned>(cross_entropy_blocks(rows));
    const auto r = static_cast<unsigned>(rows);
    const auto v = static_cast<unsigned>(vocab);
    const auto s = static_cast<unsigned>(seq);
    const auto stride = static_cast<long long>(target_row_stride);
    constexpr DType kDType = sizeof(T) == 4 ? DType::Float32 : DType::BFloat16;
    const auto kernel = cross_entropy_forward_width(kDType, vocab, logits) > 1 ? forward_kernel<T, 16 / sizeof(T), kWithGrad>()
                                                                                : forward_kernel<T, 1, kWithGrad>();
    kernel<<<blocks, kThreads, 0, stream>>>(logits, r, v, targets, s, stride, lse, loss, partial);
}

template <typename TIn, typename TOut>
void backward_with(const void* logits, std::size_t rows, std::size_t vocab, const std::int64_t* targets, std::size_t seq,
                   std::size_t target_row_stride, const float* lse, const float* grad_loss, void* dlogits, cudaStream_t stream) {
    // 16-byte vectors of the narrower dtype's width where both sides allow: 4 elements when either is float32.
    constexpr int kWidth = sizeof(TIn) == 4 || sizeof(TOut) == 4 ? 4 : 8;
    const bool vectorised =
        vocab % kWidth == 0 && aligned(logits, kWidth * sizeof(TIn)) && aligned(dlogits, kWidth * sizeof(TOut));
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>(rows, kMaxBackwardBlocks));
    const auto* x = static_cast<const TIn*>(logits);
    auto* d = static_cast<TOut*>(dlogits);
    const auto r = static_cast<unsigned>(rows);
    const auto v = static_cast<unsigned>(vocab);
    const auto s = static_cast<unsigned>(seq);
    const auto stride = static_cast<long long>(target_row_stride);
    const auto kernel = vectorised ? &cross_entropy_backward_kernel<TIn, TOut, kWidth> : &cross_entropy_backward_kernel<TIn, TOut, 1>;
    kernel<<<blocks, kThreads, 0, stream>>>(x, r, v, targets, s, stride, lse, grad_loss, d);
}

template <typename TIn>
void backward_to(DType dlogits_dtype, const void* logits, std::size_t rows, std::size_t vocab, const std::int64_t* targets,
                 std::size_t seq, std::size_t target_row_stride, const float* lse, const float* grad_loss, void* dlogits,
                 cudaStream_t stream) {
    if (dlogits_dtype == DType::Float32) {
        backward_with<TIn, float>(logits, rows, vocab, targets, seq, target_row_stride, lse, grad_loss, dlogits, stream);
    } else {
        backward_with<TIn, __nv_bfloat16>(logits, rows, vocab, targets, seq, target_row_stride, lse, grad_loss, dlogits, stream);
    }
}

void launch_cross_entropy_forward(const Tensor& logits, const TokensRef& targets, float* lse, float* loss,
                                  double* partial, cudaStream_t stream) {
    if (logits.dtype == DType::Float32) {
        forward_with(static_cast<const float*>(logits.data), logits.rows, logits.cols, targets.data, targets.seq,
                     targets.row_stride, lse, loss, partial, stream);
    } else {
        forward_with(static_cast<const __nv_bfloat16*>(logits.data), logits.rows, logits.cols, targets.data, targets.seq,
                     targets.row_stride, lse, loss, partial, stream);
    }
    check_last_launch("tewb::kernels::cross_entropy_forward");
}

void launch_cross_entropy_forward_with_grad(const Tensor& logits, const TokensRef& targets, float* lse, float* loss,
                                            double* partial, cudaStream_t stream) {
    if (logits.dtype == DType::Float32) {
        forward_with(static_cast<float*>(logits.data), logits.rows, logits.cols, targets.data, targets.seq, targets.row_stride,
                     lse, loss, partial, stream);
    } else {
        forward_with(static_cast<__nv_bfloat16*>(logits.data), logits.rows, logits.cols, targets.data, targets.seq,
                     targets.row_stride, lse, loss, partial, stream);
    }
    check_last_launch("tewb::kernels::cross_entropy_forward_with_grad");
}

void launch_cross_entropy_backward(const Tensor& logits, const TokensRef& targets, const float* lse,
                                   const float* grad_loss, const Tensor& dlogits, cudaStream_t stream) {
    if (logits.dtype == DType::Float32) {
        backward_to<float>(dlogits.dtype, logits.data, logits.rows, logits.cols, targets.data, targets.seq, targets.row_stride,
                           lse, grad_loss, dlogits.data, stream);
    } else {
        backward_to<__nv_bfloat16>(dlogits.dtype, logits.data, logits.rows, logits.cols, targets.data, targets.seq,
                                   targets.row_stride, lse, grad_loss, dlogits.data, stream);
    }
    check_last_launch("tewb::kernels::cross_entropy_backward");
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                           const Workspace& workspace, Stream stream) {
    const auto a = detail::cross_entropy_forward_call("tewb::kernels::cross_entropy_forward", logits, targets, lse, loss, workspace,
                                                      /*with_grad=*/false);
    detail::launch_cross_entropy_forward(a.logits, a.targets, a.lse, a.loss, static_cast<double*>(a.workspace.data),
                                         detail::cuda_stream(stream));
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_loss,
                            const Tensor& dlogits, Stream stream) {
    const auto a =
        detail::cross_entropy_backward_call("tewb::kernels::cross_entropy_backward", logits, targets, lse, grad_loss, dlogits);
    detail::launch_cross_entropy_backward(a.logits, a.targets, a.lse, a.grad_loss, a.dlogits, detail::cuda_stream(stream));
}

void cross_entropy_forward_with_grad(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                                     const Workspace& workspace, Stream stream) {
    const auto a = detail::cross_entropy_forward_call("tewb::kernels::cross_entropy_forward_with_grad", logits, targets, lse, loss,
                                                      workspace, /*with_grad=*/true);
    detail::launch_cross_entropy_forward_with_grad(a.logits, a.targets, a.lse, a.loss, static_cast<double*>(a.workspace.data),
                                                   detail::cuda_stream(stream));
}

}  // namespace tewb::kernels
