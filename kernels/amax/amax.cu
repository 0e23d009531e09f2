// max |x| over a tensor. Bytes: n * element_size read once; no FLOPs to speak of, so the floor is the
// read bandwidth. Works on the bit pattern of |x|: for non-negative IEEE floats integer order equals
// float order, and a (positive) NaN orders above +inf, so NaN propagates without a branch. One launch, no memset:
// the blocks combine into a scratch word of this translation unit, and the last block to arrive writes the result
// and clears the scratch for the next launch (column_sum.cuh's arrival counter; the same rule: abs_max calls do not
// run concurrently, as one training run issues them on one stream). Reads in 16-byte loads, four in flight per thread.
// abs_max_current_scale: the same launch, whose last block (the one that holds the amax) also applies current
// scaling's rule (recipe_math.h, as recipe.cu's current_scale) — one launch where a current-scaling cast took two.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "amax/amax_items.h"
#include "recipe/recipe_math.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;  // per tensor: past it the blocks walk the tensor in strides
constexpr int kUnroll = 4;        // 16-byte loads a thread has in flight before it takes their maxima

// Tensor i of a launch combines into scratch word i, and its blocks take arrival counter i (column_sum.cuh's, this
// translation unit's own); zero at module load, and the last block of each tensor leaves both zero again.
static __device__ unsigned amax_scratch[kAbsMaxItemsPerLaunch];

// One tensor of a launch: x's elements, where its amax goes (null: not written) and what the last block does with the
// amax besides (scale null: nothing; else current scaling's rule), and its blocks [first_block, first_block + blocks).
struct AmaxItem {
    const void* x;
    std::size_t n;
    unsigned* amax_bits;
    float* scale;
    float* scale_inv;
    float* staging;
    float numerator;
    DType dtype;
    int first_block;
    int blocks;
};

template <int kCapacity>
struct AmaxBatch {
    AmaxItem items[kCapacity];
    int count;
};
static_assert(sizeof(AmaxBatch<kAbsMaxItemsPerLaunch>) <= 32764, "kernel parameters are limited to 32764 bytes");

// The largest |v| bit pattern of 16 bytes of T.
__device__ inline unsigned abs_bits_of(const uint4& u, const float*) {
    float v[4];
    unpack(u, v);
    return max(max(abs_bits(v[0]), abs_bits(v[1])), max(abs_bits(v[2]), abs_bits(v[3])));
}

__device__ inline unsigned abs_bits_of(const uint4& u, const __nv_bfloat16*) {
    float v[8];
    unpack(u, v);
    unsigned bits = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) bits = max(bits, abs_bits(v[i]));
    return bits;
}

// Through the words, as elementwise.cuh's bfloat16 unpack: one 16-byte load, not eight 2-byte ones.
__device__ inline unsigned abs_bits_of(const uint4& u, const __half*) {
    const unsigned words[4] = {u.x, u.y, u.z, u.w};
    unsigned bits = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        bits = max(bits, abs_bits(__half2float(__ushort_as_half(static_cast<unsigned short>(words[i] & 0xffffu)))));
        bits = max(bits, abs_bits(__half2float(__ushort_as_half(static_cast<unsigned short>(words[i] >> 16)))));
    }
    return bits;
}

// This thread's largest |x| bits over its share of x (block `block` of `blocks`): x in 16-byte loads from its first
// 16-byte boundary on; the elements before it (head) and after the last whole vector (tail), fewer than 16 / sizeof(T)
// each, by the first threads of block 0. A max does not depend on the order, so the result is the host twin's
// whatever the split.
template <typename T>
__device__ unsigned thread_abs_bits(const T* __restrict__ x, std::size_t n, int block, int blocks) {
    constexpr std::size_t kPer = 16 / sizeof(T);
    const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(x) % 16) / sizeof(T);
    const std::size_t head = misaligned == 0 ? 0 : std::min(n, kPer - misaligned);
    const std::size_t vectors = (n - head) / kPer;
    const std::size_t tail = head + vectors * kPer;
    const uint4* __restrict__ body = reinterpret_cast<const uint4*>(x + head);
    const T* tag = nullptr;
    unsigned local = 0;
    const std::size_t thread = static_cast<std::size_t>(block) * blockDim.x + threadIdx.x;
    const std::size_t stride = static_cast<std::size_t>(blocks) * blockDim.x;
    std::size_t i = thread;
    for (; i + (kUnroll - 1) * stride < vectors; i += kUnroll * stride) {
        uint4 u[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) u[k] = body[i + k * stride];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) local = max(local, abs_bits_of(u[k], tag));
    }
    for (; i < vectors; i += stride) local = max(local, abs_bits_of(body[i], tag));
    if (thread < head) local = max(local, abs_bits(to_float(x[thread])));
    if (thread < n - tail) local = max(local, abs_bits(to_float(x[tail + thread])));
    return local;
}

// Each block finds its tensor (the items' first blocks, in order), takes the largest |x| of its share, and combines it
// into the tensor's scratch word; the tensor's last block to arrive hands the amax out (and the scale from it) and
// clears the word.
template <int kCapacity>
__global__ void __launch_bounds__(kThreads) abs_max_kernel(const __grid_constant__ AmaxBatch<kCapacity> batch) {
    int index = 0;
    while (index + 1 < batch.count && static_cast<int>(blockIdx.x) >= batch.items[index + 1].first_block) ++index;
    const AmaxItem& item = batch.items[index];
    const int block = static_cast<int>(blockIdx.x) - item.first_block;
    unsigned local = 0;
    switch (item.dtype) {
        case DType::BFloat16:
            local = thread_abs_bits(static_cast<const __nv_bfloat16*>(item.x), item.n, block, item.blocks);
            break;
        case DType::Float16: local = thread_abs_bits(static_cast<const __half*>(item.x), item.n, block, item.blocks); break;
        default: local = thread_abs_bits(static_cast<const float*>(item.x), item.n, block, item.blocks); break;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        local = max(local, __shfl_xor_sync(0xffffffffu, local, offset));
    }
    __shared__ unsigned warp_max[kThreads / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) {
        warp_max[warp] = local;
    }
    __syncthreads();
    if (warp == 0) {
        local = lane < kThreads / 32 ? warp_max[lane] : 0u;
        for (int offset = 16; offset > 0; offset /= 2) {
            local = max(local, __shfl_xor_sync(0xffffffffu, local, offset));
        }
        if (lane == 0) {
            atomicMax(&amax_scratch[index], local);
        }
    }
    if (last_block_to_arrive(index, item.blocks) && threadIdx.x == 0) {
        const unsigned bits = atomicExch(&amax_scratch[index], 0u);
        if (item.amax_bits != nullptr) *item.amax_bits = bits;
        if (item.scale != nullptr) current_scale_values(__uint_as_float(bits), item.numerator, item.scale, item.scale_inv, item.staging);
    }
}

// x's blocks: one 16-byte vector per thread up to kMaxBlocks; no elements: one block, which writes 0.
int blocks_for(const AbsMaxItem& x) {
    const std::size_t vectors = x.n / (16 / element_size(x.dtype));
    return static_cast<int>(std::clamp<std::size_t>((vectors + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

AmaxItem device_item(const AbsMaxItem& x, int first_block) {
    return {x.data, x.n, reinterpret_cast<unsigned*>(x.amax), x.scale, x.scale_inv, x.staging, x.numerator, x.dtype, first_block,
            blocks_for(x)};
}

void launch_one(const AbsMaxItem& x, cudaStream_t stream) {
    AmaxBatch<1> batch{};
    batch.items[0] = device_item(x, 0);
    batch.count = 1;
    abs_max_kernel<1><<<batch.items[0].blocks, kThreads, 0, stream>>>(batch);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void abs_max(const Tensor& x, Stream on) {
    constexpr const char* call = "tewb::kernels::abs_max";
    detail::check_abs_max(call, x);
    detail::launch_one(detail::abs_max_item(x), detail::cuda_stream(on));
    detail::check_last_launch(call);
}

void abs_max_current_scale(const Tensor& x, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                           Stream on) {
    constexpr const char* call = "tewb::kernels::abs_max_current_scale";
    const CurrentScaleItem item{x, numerator, scale, scale_inv, staging};
    detail::launch_one(detail::checked_current_scale_item(call, item), detail::cuda_stream(on));
    detail::check_last_launch(call);
}

void abs_max_current_scale_multi(const CurrentScaleItem* items, std::size_t count, Stream on) {
    constexpr const char* call = "tewb::kernels::abs_max_current_scale_multi";
    const std::vector<detail::AbsMaxItem> work = detail::checked_current_scale_items(call, items, count);
    const cudaStream_t stream = detail::cuda_stream(on);
    for (std::size_t first = 0; first < work.size(); first += kAbsMaxItemsPerLaunch) {
        detail::AmaxBatch<kAbsMaxItemsPerLaunch> batch{};
        int blocks = 0;
        for (std::size_t i = first; i < std::min(work.size(), first + kAbsMaxItemsPerLaunch); ++i) {
            batch.items[batch.count++] = detail::device_item(work[i], blocks);
            blocks += batch.items[batch.count - 1].blocks;
        }
        detail::abs_max_kernel<kAbsMaxItemsPerLaunch><<<blocks, detail::kThreads, 0, stream>>>(batch);
        detail::check_last_launch(call);
    }
}

}  // namespace tewb::kernels
