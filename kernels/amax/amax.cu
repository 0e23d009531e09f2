// max |x| over a tensor. Bytes: n * element_size read once; no FLOPs to speak of, so the floor is the
// read bandwidth. Works on the bit pattern of |x|: for non-negative IEEE floats integer order equals
// float order, and a (positive) NaN orders above +inf, so NaN propagates without a branch. One launch, no memset:
// the blocks combine into a scratch word of this translation unit, and the last block to arrive writes the result
// and clears the scratch for the next launch (column_sum.cuh's arrival counter; the same rule: abs_max calls do not
// run concurrently, as one training run issues them on one stream).
#include <algorithm>

#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;
constexpr int kAmaxCounter = 0;  // this translation unit's arrival counter (column_sum.cuh)

static __device__ unsigned amax_scratch;  // zero at module load; the last block of each launch leaves it zero

template <typename T>
__global__ void abs_max_kernel(const T* __restrict__ x, std::size_t n, unsigned* __restrict__ amax_bits) {
    unsigned local = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        local = max(local, abs_bits(to_float(x[i])));
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
            atomicMax(&amax_scratch, local);
        }
    }
    if (last_block_to_arrive(kAmaxCounter, static_cast<int>(gridDim.x)) && threadIdx.x == 0) {
        *amax_bits = atomicExch(&amax_scratch, 0u);
    }
}

template <typename T>
void launch_typed(const void* x, std::size_t n, float* amax_out, cudaStream_t stream) {
    const std::size_t wanted = (n + kThreads - 1) / kThreads;
    const int blocks = static_cast<int>(std::clamp<std::size_t>(wanted, 1, kMaxBlocks));  // no elements: one block writes 0
    abs_max_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), n, reinterpret_cast<unsigned*>(amax_out));
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void abs_max(const Tensor& x, Stream on) {
    constexpr const char* call = "tewb::kernels::abs_max";
    detail::check_abs_max(call, x);
    const cudaStream_t stream = detail::cuda_stream(on);
    const std::size_t n = x.numel();
    switch (x.dtype) {
        case DType::BFloat16: detail::launch_typed<__nv_bfloat16>(x.data, n, x.amax, stream); break;
        case DType::Float16: detail::launch_typed<__half>(x.data, n, x.amax, stream); break;
        default: detail::launch_typed<float>(x.data, n, x.amax, stream); break;
    }
    detail::check_last_launch(call);
}

}  // namespace tewb::kernels
