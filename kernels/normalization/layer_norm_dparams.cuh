#pragma once

// dgamma and dbeta finished in the LayerNorm backward's own launch, from the partial rows its blocks wrote
// (workspace [2 * partials, hidden] float32: dgamma's rows 0 .. partials - 1, then dbeta's), in the order
// of the separate final kernel (layer_norm_dparams_final_kernel, normalization.cu) so the bits are the same:
// per column, 8 running sums from 0.0f, sum w adding the partial rows k = w, w + 8, w + 16, ... in that
// order; then the 8 sums added in order from 0.0f.
//
// The blocks that finish are chosen by the arrival counters of common/column_sum.cuh (same release/acquire
// order, same self-reset), so the kernels here share their translation unit's counters and rules.
//   - Per column tile (finish_dparams_tile): a grid [column tiles x chunks] whose last block of a tile sums
//     that tile's columns, the 8 sums side by side (the plain kernel).
//   - By class (finish_dparams_by_class): a 1-D grid whose block k wrote full partial rows k. The last block
//     of class w (the blocks k = w mod 8) sums class w's chain into partial row w (and dbeta's row
//     partials + w), the rows it alone reads; the last of those class finishers adds the (at most 8) class
//     rows. One block summing every partial row would read 2 * partials * hidden floats alone (1.5 MiB at
//     hidden 768); by class, 8 blocks share that and the last reads 2 * 8 * hidden.
#include <cstddef>
#include <cstdint>

#include "common/column_sum.cuh"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

inline constexpr int kDparamsClasses = 8;  // the final kernel's warps: its summation order
// Counters by class: 0 .. 7 for the classes, 8 for the class finishers.
inline constexpr int kDparamsFinalCounter = kDparamsClasses;
static_assert(kDparamsFinalCounter < static_cast<int>(kColumnSumCounters), "the by-class finish needs 9 arrival counters");

// Where the backward's dgamma and dbeta go. dgamma null: the partial rows only (a plain grid with more
// column tiles than kColumnSumCounters; the final kernel sums them in a second launch).
struct DparamsTarget {
    float* partial = nullptr;  // [2 * partials, hidden] float32 ([3 * partials, hidden] with dsum)
    int partials = 0;          // partial rows of each of dgamma and dbeta: blocks (fast) or row chunks (plain)
    void* dgamma = nullptr;    // [hidden], param_dtype
    void* dbeta = nullptr;
    DType param_dtype = DType::Float32;
    // The fast kernel only: a third sum (dx's column sums, a Linear's bias gradient: layer_norm_backward_cast_dbias),
    // float32 [hidden], its partial rows after dbeta's and finished in the same order. Null: two sums.
    float* dsum = nullptr;
    // dbeta null (RMSNorm's backward on the fast kernel): one sum, dgamma's partial rows alone.
};

namespace dparams {

__device__ inline int block_thread() {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

__device__ inline int block_threads() {
    return blockDim.x * blockDim.y * blockDim.z;
}

__device__ inline void add(float& sum, float v) {
    sum += v;
}

__device__ inline void add(float4& sum, const float4& v) {
    sum.x += v.x;
    sum.y += v.y;
    sum.z += v.z;
    sum.w += v.w;
}

template <typename Vec>
__device__ inline Vec zero() {
    if constexpr (sizeof(Vec) == sizeof(float)) {
        return 0.0f;
    } else {
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// Class w's chain of each sum (dgamma, dbeta and, when kSums is 3, dsum) into rows w, partials + w (and
// 2 · partials + w; kSums 1: dgamma's alone): Vec float4 where the rows are 16-byte aligned (hidden a multiple of 4, the workspace aligned),
// float elsewhere; each of a float4's lanes is its own column's chain, so both give the same bits. Loads in batches
// of kMembers (L2, never a stale L1 line: __ldcg) so that they overlap; the additions stay in order. A thread reads
// its columns of row w before it overwrites them, and no other block reads class w's rows.
// kSums a template parameter: the loads in flight are this launch's most registers (3 sums: 96 as float4), and the
// backward's whole kernel is allocated for them.
template <typename Vec, int kSums>
__device__ inline void sum_class(float* partial, int partials, int hidden, int w) {
    constexpr int kLanes = static_cast<int>(sizeof(Vec) / sizeof(float));
    constexpr int kMembers = 8;
    const int vectors = hidden / kLanes;
    const auto row = [&](int k) { return reinterpret_cast<Vec*>(partial + static_cast<std::size_t>(k) * hidden); };
    for (int j = block_thread(); j < vectors; j += block_threads()) {
        Vec acc[kSums];
#pragma unroll
        for (int s = 0; s < kSums; ++s) acc[s] = zero<Vec>();
        int k = w;
        for (; k + kDparamsClasses * (kMembers - 1) < partials; k += kDparamsClasses * kMembers) {
            Vec v[kSums][kMembers];
#pragma unroll
            for (int s = 0; s < kSums; ++s) {
#pragma unroll
                for (int m = 0; m < kMembers; ++m) v[s][m] = __ldcg(row(s * partials + k + kDparamsClasses * m) + j);
            }
#pragma unroll
            for (int s = 0; s < kSums; ++s) {
#pragma unroll
                for (int m = 0; m < kMembers; ++m) add(acc[s], v[s][m]);
            }
        }
        for (; k < partials; k += kDparamsClasses) {
#pragma unroll
            for (int s = 0; s < kSums; ++s) add(acc[s], __ldcg(row(s * partials + k) + j));
        }
#pragma unroll
        for (int s = 0; s < kSums; ++s) row(s * partials + w)[j] = acc[s];
    }
}

}  // namespace dparams

// The by-class finish (the fast kernel): called by every thread of block `block` (of target.partials, a
// 1-D grid) after its threads wrote partial row `block` of each of its kSums sums: dgamma's (kSums 1: RMSNorm, dbeta
// null), dbeta's at partials + `block` (2), dsum's at 2 · partials + `block` (3, target.dsum set). It synchronizes; a
// uniform branch around it is fine. Needs hidden a multiple of 4 for the 16-byte path (the fast kernel's rows
// are); falls back to float loads where the workspace is not 16-byte aligned. Leaves partial rows
// w < min(partials, 8) (and partials + w) holding the class sums.
template <int kSums>
__device__ inline void finish_dparams_by_class(const DparamsTarget& target, int hidden, int block) {
    if (target.dgamma == nullptr) return;
    const int partials = target.partials;
    const int w = block % kDparamsClasses;
    const int members = (partials - w + kDparamsClasses - 1) / kDparamsClasses;
    if (!last_block_to_arrive(w, members)) return;
    const bool aligned = hidden % 4 == 0 && reinterpret_cast<std::uintptr_t>(target.partial) % 16 == 0;
    constexpr int sums = kSums;
    if (aligned) {
        dparams::sum_class<float4, kSums>(target.partial, partials, hidden, w);
    } else {
        dparams::sum_class<float, kSums>(target.partial, partials, hidden, w);
    }
    // Classes without a member (partials < 8) keep the final kernel's 0.0f sums: adding those is exact
    // (a sum that starts at +0.0f is never -0.0f), so they are left out.
    const int classes = min(partials, kDparamsClasses);
    if (!last_block_to_arrive(kDparamsFinalCounter, classes)) return;
    for (int c = dparams::block_thread(); c < hidden; c += dparams::block_threads()) {
        float g[kDparamsClasses];
        float b[kDparamsClasses];
        float d[kDparamsClasses];
#pragma unroll
        for (int v = 0; v < kDparamsClasses; ++v) {
            if (v < classes) {
                g[v] = __ldcg(target.partial + static_cast<std::size_t>(v) * hidden + c);
                if (sums >= 2) b[v] = __ldcg(target.partial + static_cast<std::size_t>(partials + v) * hidden + c);
                if (sums == 3) d[v] = __ldcg(target.partial + static_cast<std::size_t>(2 * partials + v) * hidden + c);
            }
        }
        float dgamma = 0.0f;
        float dbeta = 0.0f;
        float dsum = 0.0f;
#pragma unroll
        for (int v = 0; v < kDparamsClasses; ++v) {
            if (v < classes) {
                dgamma += g[v];
                if (sums >= 2) dbeta += b[v];
                if (sums == 3) dsum += d[v];
            }
        }
        store(target.dgamma, target.param_dtype, static_cast<std::size_t>(c), dgamma);
        if (sums >= 2) store(target.dbeta, target.param_dtype, static_cast<std::size_t>(c), dbeta);
        if (sums == 3) target.dsum[c] = dsum;
    }
}

// The per-tile finish (the plain kernel): called by every thread of a block of column tile `tile` (of a
// grid whose target.partials blocks per tile each wrote their chunk's partial rows for the tile's columns
// [c0, c0 + width)); the tile's last block writes dgamma and dbeta of those columns. tile <
// kColumnSumCounters when target.dgamma is set.
__device__ inline void finish_dparams_tile(const DparamsTarget& target, int hidden, int tile, int c0, int width) {
    if (target.dgamma == nullptr) return;
    const int partials = target.partials;
    if (!last_block_to_arrive(tile, partials)) return;
    for (int j = dparams::block_thread(); j < width; j += dparams::block_threads()) {
        const float* column = target.partial + c0 + j;
        const auto at = [&](int k) { return column + static_cast<std::size_t>(k) * hidden; };
        float g[kDparamsClasses] = {};
        float b[kDparamsClasses] = {};
        int k = 0;
        for (; k + kDparamsClasses <= partials; k += kDparamsClasses) {
            float vg[kDparamsClasses];
            float vb[kDparamsClasses];
#pragma unroll
            for (int w = 0; w < kDparamsClasses; ++w) {
                vg[w] = __ldcg(at(k + w));
                vb[w] = __ldcg(at(partials + k + w));
            }
#pragma unroll
            for (int w = 0; w < kDparamsClasses; ++w) {
                g[w] += vg[w];
                b[w] += vb[w];
            }
        }
#pragma unroll
        for (int w = 0; w < kDparamsClasses; ++w) {
            if (k + w < partials) {
                g[w] += __ldcg(at(k + w));
                b[w] += __ldcg(at(partials + k + w));
            }
        }
        float dgamma = 0.0f;
        float dbeta = 0.0f;
#pragma unroll
        for (int w = 0; w < kDparamsClasses; ++w) {
            dgamma += g[w];
            dbeta += b[w];
        }
        store(target.dgamma, target.param_dtype, static_cast<std::size_t>(c0 + j), dgamma);
        store(target.dbeta, target.param_dtype, static_cast<std::size_t>(c0 + j), dbeta);
    }
}

}  // namespace tewb::kernels::detail
