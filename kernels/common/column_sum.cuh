#pragma once

// Column sums (bias gradients) finished in the launch that computes them. Each thread block of a grid
// [column tiles x row chunks] writes its partial row (its chunk's sums of its tile's columns) to a float32
// workspace [chunks, cols]; the last block of a column tile to arrive then sums that tile's columns over all
// partial rows, k = 0, 1, ..., chunks - 1 in order from 0.0f: the same order, so the same bits, as the
// two-stage path's launch_column_sum (column_sum.h), and independent of which block arrives last.
//
// The arrival counters: one per column tile, a static __device__ array per translation unit that includes
// this header (this build has no relocatable device code), zero at module load. The last block resets its
// tile's counter to 0, so the next launch on the stream finds it zeroed (CUDA graph capture and replay
// too). Hence: kernels of one translation unit that use the counters must not run concurrently (two
// streams, two graphs replayed at once); one training run at a time issues them on one stream, as here.
// A launch that faults leaves the counters undefined, as the CUDA context itself.
#include <cstddef>

#include "common/column_sum_rule.h"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

static __device__ unsigned column_tile_arrivals[kColumnSumCounters];

// Where a kernel's column sums go. `out` null: the partial rows only (a grid with more column tiles than
// kColumnSumCounters; launch_column_sum adds them in a second launch).
struct ColumnSumTarget {
    float* partial = nullptr;  // [chunks, cols] float32
    void* out = nullptr;       // [cols], out_dtype
    DType out_dtype = DType::Float32;
};

// The arrival step alone, for kernels that finish their sums in an order of their own: called by every
// thread of the block (it synchronizes; a uniform branch around it is fine) after the block's threads have
// written what the finishing block reads. True, in every thread, for the last of the `arrivals` blocks of
// this launch that call it on `counter` (< kColumnSumCounters); that block then reads the others' writes
// with __ldcg. The last block resets the counter for the next launch (no other block of this launch
// touches it again). last_block_to_arrive_on takes a counter of the caller's own (a static __device__ word,
// zero at module load) instead of the column tiles' counter `counter`.
__device__ inline bool last_block_to_arrive_on(unsigned* counter, unsigned arrivals) {
    __shared__ bool last;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    // Release: this block's writes reach L2 (device scope) before its ticket is taken.
    __threadfence();
    __syncthreads();
    if (thread == 0) {
        const unsigned ticket = atomicAdd(counter, 1u);
        last = ticket == arrivals - 1u;
        if (last) *counter = 0u;
        // Acquire: the writes of the blocks that took the earlier tickets are read after this.
        __threadfence();
    }
    __syncthreads();
    return last;
}

__device__ inline bool last_block_to_arrive(int counter, int arrivals) {
    return last_block_to_arrive_on(&column_tile_arrivals[counter], static_cast<unsigned>(arrivals));
}

// Called by every thread of the block (it synchronizes; a uniform branch around it is fine), after the
// block's threads have written partial[chunk * cols + c] for the columns c of its tile. `tile` is the
// block's column tile (< kColumnSumCounters when target.out is set), `chunks` the blocks of that tile (the
// partial rows), [c0, c0 + width) the tile's columns. Returns with nothing to do when target.out is null.
__device__ inline void finish_column_sum(const ColumnSumTarget& target, int tile, int chunks, int cols, int c0, int width) {
    if (target.out == nullptr) return;
    if (!last_block_to_arrive(tile, chunks)) return;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    // The tile's columns, each over the partial rows in order. Loads in batches (L2, never a stale L1 line:
    // __ldcg) so that they overlap; the additions stay in order.
    constexpr int kBatch = 8;
    for (int j = thread; j < width; j += threads) {
        const float* column = target.partial + c0 + j;
        float sum = 0.0f;
        int k = 0;
        for (; k + kBatch <= chunks; k += kBatch) {
            float v[kBatch];
#pragma unroll
            for (int b = 0; b < kBatch; ++b) v[b] = __ldcg(column + static_cast<std::size_t>(k + b) * cols);
#pragma unroll
            for (int b = 0; b < kBatch; ++b) sum += v[b];
        }
        for (; k < chunks; ++k) sum += __ldcg(column + static_cast<std::size_t>(k) * cols);
        store(target.out, target.out_dtype, static_cast<std::size_t>(c0 + j), sum);
    }
}

}  // namespace tewb::kernels::detail
