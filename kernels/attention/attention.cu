// Causal attention for short sequences: one block of 4 warps per (sequence, head) holds the whole sequence in shared
// memory, so the forward and the backward are one launch each with no float32 accumulator in global memory (cuDNN's
// and FlashAttention's backward run a pre-pass for delta, a memset and a conversion of dq besides the kernel). Grouped
// queries: the backward's block takes a key/value head's query heads in turn, dk's and dv's float32 sums kept between
// them in a workspace (written before read: no memset). The
// products run on the tensor cores (nvcuda::wmma, 16 × 16 × 16 bfloat16 tiles, float32 sums); the softmax,
// the masks and the roundings in float32 as attention.h writes them. Rows past seq are zero in shared memory and
// never stored; the tiles above the diagonal are never computed. The *_current_scale forms (kFresh) also take the largest
// |value| they store and write current scaling's scale of their output (amax/current_scale_epilogue.cuh).
#include <mma.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "amax/current_scale_epilogue.cuh"
#include "attention/attention_call.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/fail.h"
#include "common/stream.cuh"

namespace tewb::kernels::detail {

namespace {

using namespace nvcuda;
using bf16 = __nv_bfloat16;

constexpr int kTile = static_cast<int>(kAttentionTile);
constexpr int kThreads = 32 * kAttentionWarps;
constexpr int kMaxPerLane = static_cast<int>((kAttentionMaxSeq + 31) / 32);

using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
using RowA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using ColA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using RowB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using ColB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;

// A matrix's rows as the kernels read them (HeadRows with the element type) and whether 16-byte accesses line up.
struct Rows {
    bf16* data;
    std::size_t stride;
    bool vector;
};

struct Geometry {
    int batch, seq, heads, kv_heads, head_dim, padded_seq;
    float scale;
};

__device__ inline float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// The first element of row i of head h of sequence b.
__device__ inline std::size_t row_start(const Rows& m, const Geometry& g, int b, int h, int i) {
    return (static_cast<std::size_t>(b) * g.seq + i) * m.stride + static_cast<std::size_t>(h) * g.head_dim;
}

// Shared matrices' rows are padded (kAttentionPadBf16 / kAttentionPadFloat elements) so that the tensor cores'
// loads of 8 rows do not all fall into the same banks.
__device__ inline int head_ld(const Geometry& g) {
    return g.head_dim + static_cast<int>(kAttentionPadBf16);
}

// The sequence's rows of one head into shared memory [padded_seq, head_ld], rows past seq zero. All threads. A thread
// issues up to kLoadBatch 16-byte loads before its first store (its chunks idx, idx + blockDim.x, ...: the seed's
// 96 rows of 64 take 6 a thread, one batch), so it waits for memory once per batch rather than once per chunk: with a
// load and its shared-memory store one after another, each store waited for its load before the next load could issue.
// 6, not more: a batch of 8 took the plain backward from 48 to 124 registers (80 with 6), which would bind the blocks
// per SM at short sequences, where shared memory allows more than 3.
constexpr int kLoadBatch = 6;

__device__ void load_head(const Rows& m, const Geometry& g, int b, int h, bf16* out) {
    const int chunks = g.head_dim / 8;  // 16-byte chunks of a row (head_dim is a multiple of 16)
    const int total = g.padded_seq * chunks;
    const int step = static_cast<int>(blockDim.x);
    for (int first = threadIdx.x; first < total; first += kLoadBatch * step) {
        uint4 values[kLoadBatch];
#pragma unroll
        for (int t = 0; t < kLoadBatch; ++t) {
            const int idx = first + t * step;
            const int i = idx / chunks;
            values[t] = make_uint4(0, 0, 0, 0);
            if (idx < total && i < g.seq) {
                const bf16* src = m.data + row_start(m, g, b, h, i) + idx % chunks * 8;
                if (m.vector) {
                    values[t] = *reinterpret_cast<const uint4*>(src);
                } else {
                    alignas(16) bf16 e[8];
#pragma unroll
                    for (int u = 0; u < 8; ++u) e[u] = src[u];
                    values[t] = *reinterpret_cast<const uint4*>(e);
                }
            }
        }
#pragma unroll
        for (int t = 0; t < kLoadBatch; ++t) {
            const int idx = first + t * step;
            if (idx < total) *reinterpret_cast<uint4*>(out + idx / chunks * head_ld(g) + idx % chunks * 8) = values[t];
        }
    }
}

// A warp's 16 × 16 float32 tile (stage, leading dimension 16) times `factor`, rounded to bfloat16, into rows
// row0.. and columns col0.. of one head of m; rows past seq are not stored. Each lane: 8 consecutive columns of a row.
// kFresh: the largest |value| the lane stores (as bfloat16) into stored_max.
template <bool kFresh>
__device__ void store_tile(const float* stage, float factor, const Rows& m, const Geometry& g, int b, int h, int row0, int col0,
                           unsigned& stored_max) {
    const int lane = threadIdx.x % 32;
    const int r = lane / 2;
    const int c = lane % 2 * 8;
    if (row0 + r >= g.seq) return;
    float v[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) v[t] = stage[r * kTile + c + t] * factor;
    if constexpr (kFresh) {
#pragma unroll
        for (int t = 0; t < 8; ++t) stored_max = max(stored_max, abs_bits(as_stored_in(v[t], DType::BFloat16)));
    }
    bf16* dst = m.data + row_start(m, g, b, h, row0 + r) + col0 + c;
    if (m.vector) {
        *reinterpret_cast<uint4*>(dst) = pack(v);
    } else {
#pragma unroll
        for (int t = 0; t < 8; ++t) dst[t] = __float2bfloat16(v[t]);
    }
}

// A finished accumulator through the warp's stage tile into m (all lanes of the warp).
template <bool kFresh>
__device__ void store_accumulator(const Accumulator& acc, float* stage, float factor, const Rows& m, const Geometry& g, int b,
                                  int h, int row0, int col0, unsigned& stored_max) {
    wmma::store_matrix_sync(stage, acc, kTile, wmma::mem_row_major);
    __syncwarp();
    store_tile<kFresh>(stage, factor, m, g, b, h, row0, col0, stored_max);
    __syncwarp();
}

// S tile (rb, kb) = a[rb] · b[kb]ᵀ over head_dim: a and b [padded_seq, head_dim] bfloat16 in shared memory, rows
// ld elements apart.
__device__ void scores_tile(const bf16* a, const bf16* bm, int head_dim, int ld, int rb, int kb, Accumulator& acc) {
    wmma::fill_fragment(acc, 0.0f);
    for (int dt = 0; dt < head_dim / kTile; ++dt) {
        RowA fa;
        ColB fb;
        wmma::load_matrix_sync(fa, a + rb * kTile * ld + dt * kTile, ld);
        wmma::load_matrix_sync(fb, bm + kb * kTile * ld + dt * kTile, ld);
        wmma::mma_sync(acc, fa, fb, acc);
    }
}

// The triangle's tiles (rb, kb), kb <= rb, numbered row by row.
__device__ inline void triangle_tile(int t, int& rb, int& kb) {
    rb = static_cast<int>((sqrtf(8.0f * t + 1.0f) - 1.0f) * 0.5f);
    while (rb * (rb + 1) / 2 > t) --rb;
    while ((rb + 1) * (rb + 2) / 2 <= t) ++rb;
    kb = t - rb * (rb + 1) / 2;
}

// acc = Σ_{kb = 0}^{last} A[:, kb] · x[kb, dt]: A a row block of 16 rows, row-major with rows lda apart (its column
// tiles side by side), x [padded_seq, head_dim] in shared memory with rows ld apart.
__device__ void sum_row_tiles(const bf16* a, int lda, const bf16* x, int ld, int last, int dt, Accumulator& acc) {
    wmma::fill_fragment(acc, 0.0f);
    for (int kb = 0; kb <= last; ++kb) {
        RowA fa;
        RowB fb;
        wmma::load_matrix_sync(fa, a + kb * kTile, lda);
        wmma::load_matrix_sync(fb, x + kb * kTile * ld + dt * kTile, ld);
        wmma::mma_sync(acc, fa, fb, acc);
    }
}

// acc += Σ_{rb = kb}^{blocks − 1} P[rb, kb]ᵀ · x[rb, dt]: P [padded_seq, padded_seq] row-major with rows ldp apart, read
// transposed tile by tile (the keys' side of the causal triangle).
__device__ void sum_column_tiles(const bf16* p, int ldp, const bf16* x, int ld, int kb, int blocks, int dt, Accumulator& acc) {
    for (int rb = kb; rb < blocks; ++rb) {
        ColA fa;
        RowB fb;
        wmma::load_matrix_sync(fa, p + rb * kTile * ldp + kb * kTile, ldp);
        wmma::load_matrix_sync(fb, x + rb * kTile * ld + dt * kTile, ld);
        wmma::mma_sync(acc, fa, fb, acc);
    }
}

// The warp's tiles (rb, kb <= rb) of the causal triangle, round robin over the block's warps: s = a[rb] · b[kb]ᵀ through
// the warp's stage tile, then cell(i, j, s) for each of the 8 elements a lane holds (query i, key j).
template <typename Cell>
__device__ void for_triangle_tiles(const bf16* a, const bf16* bm, int head_dim, int ld, int blocks, float* stage, Cell&& cell) {
    const int lane = threadIdx.x % 32;
    const int r = lane / 2;
    const int c = lane % 2 * 8;
    for (int t = threadIdx.x / 32; t < blocks * (blocks + 1) / 2; t += kAttentionWarps) {
        int rb, kb;
        triangle_tile(t, rb, kb);
        Accumulator acc;
        scores_tile(a, bm, head_dim, ld, rb, kb, acc);
        wmma::store_matrix_sync(stage, acc, kTile, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int e = 0; e < 8; ++e) cell(rb * kTile + r, kb * kTile + c + e, stage[r * kTile + c + e]);
        __syncwarp();
    }
}

struct ForwardArgs {
    Geometry g;
    Rows q, k, v, o;
    float* lse;
    AttentionForwardSmem smem;
    CurrentScaleOut fresh;  // kFresh: o's scale
};

template <bool kFresh>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(ForwardArgs a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const Geometry& g = a.g;
    const int b = blockIdx.x / g.heads;
    const int h = blockIdx.x % g.heads;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    auto* qs = reinterpret_cast<bf16*>(smem + a.smem.q);
    auto* ks = reinterpret_cast<bf16*>(smem + a.smem.k);
    auto* vs = reinterpret_cast<bf16*>(smem + a.smem.v);
    auto* scores = reinterpret_cast<float*>(smem + a.smem.scores + warp * a.smem.scores_bytes);
    auto* stage = reinterpret_cast<float*>(smem + a.smem.stage) + warp * kTile * kTile;
    const int kv_head = h / (g.heads / g.kv_heads);  // grouped queries share it (as enable_gqa)
    load_head(a.q, g, b, h, qs);
    load_head(a.k, g, b, kv_head, ks);
    load_head(a.v, g, b, kv_head, vs);
    __syncthreads();

    const int blocks = g.padded_seq / kTile;
    const int ld = head_ld(g);
    const int lds = g.padded_seq + static_cast<int>(kAttentionPadFloat);  // a score row's floats
    unsigned stored_max = 0;
    // A warp takes whole row blocks, dealt longest first and back and forth (attention_forward_row_block).
    for (int round = 0;; ++round) {
        const int rb = attention_forward_row_block(blocks, warp, round);
        if (rb < 0) break;
        for (int kb = 0; kb <= rb; ++kb) {
            Accumulator acc;
            scores_tile(qs, ks, g.head_dim, ld, rb, kb, acc);
            wmma::store_matrix_sync(scores + kb * kTile, acc, lds, wmma::mem_row_major);
        }
        __syncwarp();
        const int cols = (rb + 1) * kTile;
        for (int r = 0; r < kTile; ++r) {
            const int i = rb * kTile + r;
            float* row = scores + r * lds;
            float s[kMaxPerLane];
            float m = -INFINITY;
#pragma unroll
            for (int t = 0; t < kMaxPerLane; ++t) {
                const int j = lane + 32 * t;
                const bool valid = j < cols && j <= i && i < g.seq;
                s[t] = valid ? __fmul_rn(row[j], g.scale) : -INFINITY;
                m = fmaxf(m, s[t]);
            }
            m = warp_max(m);
            float l = 0.0f;
#pragma unroll
            for (int t = 0; t < kMaxPerLane; ++t) {
                s[t] = s[t] == -INFINITY ? 0.0f : expf(s[t] - m);
                l += s[t];
            }
            l = warp_sum(l);
            __syncwarp();  // every lane has read the row's floats: P (bfloat16) goes over them
            auto* p = reinterpret_cast<bf16*>(row);
#pragma unroll
            for (int t = 0; t < kMaxPerLane; ++t) {
                const int j = lane + 32 * t;
                if (j < cols) p[j] = __float2bfloat16(i < g.seq ? s[t] / l : 0.0f);
            }
            if (lane == 0 && i < g.seq) a.lse[static_cast<std::size_t>(blockIdx.x) * g.seq + i] = m + logf(l);
        }
        __syncwarp();
        // o[rb] = P[rb] · v, P read as bfloat16 rows of 2 · lds elements (its float rows' first halves).
        const auto* p = reinterpret_cast<const bf16*>(scores);
        for (int dt = 0; dt < g.head_dim / kTile; ++dt) {
            Accumulator acc;
            sum_row_tiles(p, 2 * lds, vs, ld, rb, dt, acc);
            store_accumulator<kFresh>(acc, stage, 1.0f, a.o, g, b, h, rb * kTile, dt * kTile, stored_max);  // ends with __syncwarp
        }
    }
    if constexpr (kFresh) finish_current_scale(stored_max, a.fresh);
}

struct BackwardArgs {
    Geometry g;
    Rows q, k, v, o, d_o, dq, dk, dv;
    const float* lse;
    float* workspace;  // grouped queries: each block's dv and dk sums (attention_workspace_floats_per_block)
    AttentionBackwardSmem smem;
    CurrentScaleOut fresh;  // kFresh: the scale of dq, dk and dv together
};

// dk's or dv's tile (kb, dt) after one query head of its group: back into the block's workspace until the group's last
// head, which rounds it (times factor) into m. Each warp owns the same tiles for every head, and the heads are block
// barriers apart, so no other warp touches them in between (and a warp's global writes are visible to it after them).
template <bool kFresh>
__device__ void finish_key_tile(const Accumulator& acc, float* sums, bool last, float* stage, float factor, const Rows& m,
                                const Geometry& g, int b, int h, int row0, int col0, unsigned& stored_max) {
    if (!last) {
        wmma::store_matrix_sync(sums + row0 * g.head_dim + col0, acc, g.head_dim, wmma::mem_row_major);
        return;
    }
    store_accumulator<kFresh>(acc, stage, factor, m, g, b, h, row0, col0, stored_max);
}

// The tile's starting sum: zero for a group's first query head, else what the earlier heads left in the workspace.
__device__ inline void start_key_tile(Accumulator& acc, const float* sums, bool first, const Geometry& g, int row0, int col0) {
    if (first) {
        wmma::fill_fragment(acc, 0.0f);
    } else {
        wmma::load_matrix_sync(acc, sums + row0 * g.head_dim + col0, g.head_dim, wmma::mem_row_major);
    }
}

// One block per (sequence, key/value head): its query heads one after another (one without grouped queries), dk and dv
// summed over them (in the workspace between heads) and stored after the last.
template <bool kFresh>
__global__ void __launch_bounds__(kThreads) attention_backward_kernel(BackwardArgs a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const Geometry& g = a.g;
    const int b = blockIdx.x / g.kv_heads;
    const int kv_head = blockIdx.x % g.kv_heads;
    const int group = g.heads / g.kv_heads;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int sp = g.padded_seq;
    const int D = g.head_dim;
    const int ld = head_ld(g);
    const int ldp = sp + static_cast<int>(kAttentionPadBf16);  // P's rows
    auto* as = reinterpret_cast<bf16*>(smem + a.smem.a);
    auto* ks = reinterpret_cast<bf16*>(smem + a.smem.k);
    auto* dos = reinterpret_cast<bf16*>(smem + a.smem.d_o);
    auto* ps = reinterpret_cast<bf16*>(smem + a.smem.p);
    auto* lse = reinterpret_cast<float*>(smem + a.smem.lse);
    auto* delta = reinterpret_cast<float*>(smem + a.smem.delta);
    auto* stage = reinterpret_cast<float*>(smem + a.smem.stage) + warp * kTile * kTile;
    // This block's dv sums, then its dk sums ([padded_seq, head_dim] float32 each); unused without grouped queries.
    float* dv_sums = a.workspace == nullptr ? nullptr
                                            : a.workspace + static_cast<std::size_t>(blockIdx.x) * 2 * sp * D;
    float* dk_sums = dv_sums == nullptr ? nullptr : dv_sums + static_cast<std::size_t>(sp) * D;
    load_head(a.k, g, b, kv_head, ks);

    const int blocks = sp / kTile;
    const int d_tiles = D / kTile;
    unsigned stored_max = 0;
    for (int member = 0; member < group; ++member) {
        const int h = kv_head * group + member;
        const bool first = member == 0;
        const bool last = member == group - 1;
        const std::size_t lse_row = static_cast<std::size_t>(b) * g.heads + h;
        if (!first) __syncthreads();  // the previous head's last phase has read q and dS
        load_head(a.q, g, b, h, as);
        load_head(a.d_o, g, b, h, dos);
        __syncthreads();
        // delta_i = Σ_d d_o · o, a warp per row (d_o from shared memory, o from global).
        for (int i = warp; i < sp; i += kAttentionWarps) {
            float sum = 0.0f;
            if (i < g.seq) {
                const bf16* o_row = a.o.data + row_start(a.o, g, b, h, i);
                for (int d = lane; d < D; d += 32) sum += __bfloat162float(dos[i * ld + d]) * __bfloat162float(o_row[d]);
            }
            sum = warp_sum(sum);
            if (lane == 0) {
                delta[i] = sum;
                lse[i] = i < g.seq ? a.lse[lse_row * g.seq + i] : 0.0f;
            }
        }
        __syncthreads();

        // 1. P = bfloat16(exp(q kᵀ · scale − lse)) on the causal triangle (0 above the diagonal and past seq).
        for_triangle_tiles(as, ks, D, ld, blocks, stage, [&](int i, int j, float s) {
            const float p = i < g.seq && j <= i ? expf(__fmul_rn(s, g.scale) - lse[i]) : 0.0f;
            ps[i * ldp + j] = __float2bfloat16(p);
        });
        __syncthreads();
        load_head(a.v, g, b, kv_head, as);  // v over q, while phase 2 (which reads neither) runs
        // 2. dv[kb] (+)= Σ_{rb >= kb} P[rb, kb]ᵀ d_o[rb], the longest sums first.
        for (int item = warp; item < blocks * d_tiles; item += kAttentionWarps) {
            const int kb = item / d_tiles;
            const int dt = item % d_tiles;
            Accumulator acc;
            start_key_tile(acc, dv_sums, first, g, kb * kTile, dt * kTile);
            sum_column_tiles(ps, ldp, dos, ld, kb, blocks, dt, acc);
            finish_key_tile<kFresh>(acc, dv_sums, last, stage, 1.0f, a.dv, g, b, kv_head, kb * kTile, dt * kTile,
                                    stored_max);
        }
        __syncthreads();
        // 3. dS = bfloat16(P · (d_o vᵀ − delta)) over P, tile by tile.
        for_triangle_tiles(dos, as, D, ld, blocks, stage, [&](int i, int j, float dp) {
            bf16& cell = ps[i * ldp + j];
            cell = __float2bfloat16(__bfloat162float(cell) * (dp - delta[i]));
        });
        __syncthreads();
        load_head(a.q, g, b, h, as);
        __syncthreads();
        // 4. dq[rb] = scale · Σ_{kb <= rb} dS[rb, kb] k[kb] and dk[kb] (+)= scale · Σ_{rb >= kb} dS[rb, kb]ᵀ q[rb] (the
        // factor applied once, after the group's last head), alternating, the longest sums first.
        const int outputs = blocks * d_tiles;
        for (int item = warp; item < 2 * outputs; item += kAttentionWarps) {
            const int n = item / 2;
            const int dt = n % d_tiles;
            Accumulator acc;
            if (item % 2 == 0) {
                const int rb = blocks - 1 - n / d_tiles;
                sum_row_tiles(ps + rb * kTile * ldp, ldp, ks, ld, rb, dt, acc);
                store_accumulator<kFresh>(acc, stage, g.scale, a.dq, g, b, h, rb * kTile, dt * kTile, stored_max);
            } else {
                const int kb = n / d_tiles;
                start_key_tile(acc, dk_sums, first, g, kb * kTile, dt * kTile);
                sum_column_tiles(ps, ldp, as, ld, kb, blocks, dt, acc);
                finish_key_tile<kFresh>(acc, dk_sums, last, stage, g.scale, a.dk, g, b, kv_head, kb * kTile, dt * kTile,
                                        stored_max);
            }
        }
    }
    if constexpr (kFresh) finish_current_scale(stored_max, a.fresh);
}

Geometry geometry_of(const AttentionGeometry& g) {
    return {static_cast<int>(g.batch),    static_cast<int>(g.seq),        static_cast<int>(g.heads), static_cast<int>(g.kv_heads),
            static_cast<int>(g.head_dim), static_cast<int>(g.padded_seq), g.scale};
}

// 16-byte loads and stores where the head's rows start 16 bytes apart and the matrix does.
Rows rows_of(const HeadRows& m) {
    const bool vector = reinterpret_cast<std::uintptr_t>(m.data) % 16 == 0 && m.stride % 8 == 0;
    return {static_cast<bf16*>(m.data), m.stride, vector};
}

// The kernels' dynamic shared memory limit, raised once per device to the rule's limit and never lowered: the
// attribute belongs to the kernel for the whole process, so setting each call's own size would let a smaller call
// shrink it under a larger one launched from another thread (or replayed from a CUDA graph). After the first call on
// a device, one atomic load. One flag per kernel (the template's argument: a kernel's kFresh and plain forms are two
// kernels of one type). The attribute is the rule's dynamic bytes (the limit less kAttentionStaticSharedReserve), so
// the hand-off's static words fit beside them: the attribute and a kernel's static shared memory together may not
// exceed the device's opt-in limit.
template <auto kernel>
void allow_shared_bytes(std::size_t bytes, const char* call) {
    if (!attention_needs_raised_limit(bytes)) return;
    constexpr int kDevices = 64;
    static std::array<std::atomic<bool>, kDevices> raised{};
    static std::mutex mutex;
    int device = 0;
    check_cuda(cudaGetDevice(&device), call, "cudaGetDevice");
    const bool tracked = device >= 0 && device < kDevices;
    if (tracked && raised[static_cast<std::size_t>(device)].load(std::memory_order_acquire)) return;
    const std::lock_guard<std::mutex> lock(mutex);
    // The reserve holds what ptxas gave the kernel (256 bytes for the hand-off forms at sm_90): checked once, so a
    // change that outgrows it fails here with its figure instead of as a refused launch.
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kernel), call, "cudaFuncGetAttributes");
    if (attributes.sharedSizeBytes > kAttentionStaticSharedReserve) {
        fail(call, "the kernel's static shared memory (" + std::to_string(attributes.sharedSizeBytes) +
                       " bytes) exceeds kAttentionStaticSharedReserve (" + std::to_string(kAttentionStaticSharedReserve) + ")");
    }
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kAttentionSharedBytesLimit - kAttentionStaticSharedReserve)),
               call, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    if (tracked) raised[static_cast<std::size_t>(device)].store(true, std::memory_order_release);
}

// The one launch statement of both kernels (tests/kernels/tst_attention_emulated runs this file on the CPU and puts its
// own launch in this line's place).
template <typename Args>
void launch(void (*kernel)(Args), unsigned blocks, std::size_t shared_bytes, cudaStream_t stream, const Args& args) {
    kernel<<<blocks, kThreads, shared_bytes, stream>>>(args);
}

// The forward's blocks: one per (sequence, query head).
unsigned forward_blocks(const AttentionGeometry& g) {
    return static_cast<unsigned>(g.batch * g.heads);
}

// The backward's: one per (sequence, key/value head), its query heads in turn.
unsigned backward_blocks(const AttentionGeometry& g) {
    return static_cast<unsigned>(g.batch * g.kv_heads);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

namespace {

template <bool kFresh>
void launch_forward(const detail::AttentionForwardCall& a, const detail::CurrentScaleOut& fresh, Stream stream, const char* call) {
    detail::ForwardArgs args{detail::geometry_of(a.g), detail::rows_of(a.q), detail::rows_of(a.k), detail::rows_of(a.v),
                             detail::rows_of(a.o),     a.lse,                detail::attention_forward_smem(a.g.seq, a.g.head_dim),
                             fresh};
    detail::allow_shared_bytes<detail::attention_forward_kernel<kFresh>>(args.smem.total, call);
    detail::launch(detail::attention_forward_kernel<kFresh>, detail::forward_blocks(a.g), args.smem.total, detail::cuda_stream(stream),
                   args);
    detail::check_last_launch(call);
}

template <bool kFresh>
void launch_backward(const detail::AttentionBackwardCall& a, const detail::CurrentScaleOut& fresh, Stream stream,
                     const char* call) {
    const detail::BackwardArgs args{detail::geometry_of(a.g), detail::rows_of(a.q),   detail::rows_of(a.k),
                                    detail::rows_of(a.v),      detail::rows_of(a.o),   detail::rows_of(a.d_o),
                                    detail::rows_of(a.dq),     detail::rows_of(a.dk),  detail::rows_of(a.dv),
                                    a.lse,                     a.workspace,
                                    detail::attention_backward_smem(a.g.seq, a.g.head_dim),
                                    fresh};
    detail::allow_shared_bytes<detail::attention_backward_kernel<kFresh>>(args.smem.total, call);
    detail::launch(detail::attention_backward_kernel<kFresh>, detail::backward_blocks(a.g), args.smem.total,
                   detail::cuda_stream(stream), args);
    detail::check_last_launch(call);
}

detail::CurrentScaleOut out_of(const detail::CurrentScaleCall& t) {
    return {t.numerator, t.scale, t.scale_inv, t.staging};
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads, const Tensor& o,
                       const Tensor& lse, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::attention_forward";
    if (const auto a = detail::attention_forward_call(kCall, q, k, v, heads, o, lse)) launch_forward<false>(*a, {}, stream, kCall);
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                        const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv, const Workspace& workspace, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::attention_backward";
    if (const auto a = detail::attention_backward_call(kCall, q, k, v, o, d_o, lse, heads, dq, dk, dv, workspace)) {
        launch_backward<false>(*a, {}, stream, kCall);
    }
}

void attention_forward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads,
                                     const Tensor& o, const Tensor& lse, const CurrentScaleTarget& target, Stream stream) {
    constexpr const char* kCall = "tewb::kernels::attention_forward_current_scale";
    detail::CurrentScaleCall fresh;
    if (const auto a = detail::attention_forward_current_scale_call(kCall, q, k, v, heads, o, lse, target, fresh)) {
        launch_forward<true>(*a, out_of(fresh), stream, kCall);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(o, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void attention_backward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                                      const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                                      const Tensor& dv, const Workspace& workspace, const CurrentScaleTarget& target,
                                      Stream stream) {
    constexpr const char* kCall = "tewb::kernels::attention_backward_current_scale";
    detail::CurrentScaleCall fresh;
    if (const auto a = detail::attention_backward_current_scale_call(kCall, q, k, v, o, d_o, lse, heads, dq, dk, dv, workspace,
                                                                     target, fresh)) {
        launch_backward<true>(*a, out_of(fresh), stream, kCall);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        abs_max_current_scale(dq, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels
