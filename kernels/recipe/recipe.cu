// The FP8 scale update of every slot of a pass in one launch: one block per slot. Bytes: each history
// row read once (twice for max) and written once; the launch, not the traffic, is the cost at MiniGPT's
// ~150 slots.
#include "common/check.h"
#include "common/stream.cuh"
#include "recipe/recipe_call.h"
#include "recipe/recipe_math.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 128;

__device__ float block_window_max(float value) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value = window_max(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    __shared__ float warp_max[kThreads / 32];
    __shared__ float result;
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) warp_max[warp] = value;
    __syncthreads();
    if (warp == 0) {
        value = lane < kThreads / 32 ? warp_max[lane] : warp_max[0];
        for (int offset = 16; offset > 0; offset /= 2) {
            value = window_max(value, __shfl_xor_sync(0xffffffffu, value, offset));
        }
        if (lane == 0) result = value;
    }
    __syncthreads();
    return result;
}

__global__ void update_scaling_kernel(float* __restrict__ history, float* __restrict__ scale, float* __restrict__ scale_inv,
                                      int history_len, float numerator, ScalingRule rule, RecordPointers record,
                                      SlotStrides strides) {
    const int slot_index = blockIdx.x;
    float* h = history + static_cast<long long>(slot_index) * strides.history;
    const long long slot = static_cast<long long>(slot_index) * strides.scale;  // scale, scale_inv and kept
    const float staged = h[0];  // the same value for every thread: the branches below are uniform
    const bool block = rule == ScalingRule::BlockPowerOfTwo || rule == ScalingRule::BlockExact;
    float* row = record.statistics != nullptr ? record.statistics + static_cast<long long>(slot_index) * record.statistics_stride : nullptr;
    // The record is read before anything changes: every thread read `staged` above, and only thread 0 writes.
    if (threadIdx.x == 0) {
        if (row != nullptr) {
            row[0] = staged;
            if (!block) row[1] = scale[slot];
        }
        if (record.kept_scale_inv != nullptr) record.kept_scale_inv[slot] = scale_inv[slot];
    }
    if (block) {
        if (threadIdx.x == 0) {
            scale[slot] = block_slot_scale(numerator, staged, rule == ScalingRule::BlockPowerOfTwo);
            if (row != nullptr) row[1] = scale[slot];
        }
    } else if (rule != ScalingRule::Current && slot_ran(staged)) {
        float window = staged;
        if (rule == ScalingRule::DelayedMax) {
            float local = staged;
            for (int i = 1 + threadIdx.x; i < history_len; i += blockDim.x) local = window_max(local, h[i]);
            window = block_window_max(local);  // ends with a barrier: every read is done before the roll
        }
        // Roll left by one over 1..L-1, a tile at a time: a tile reads its right neighbours, waits, writes.
        for (int start = 1; start < history_len - 1; start += blockDim.x) {
            const int i = start + threadIdx.x;
            const bool active = i < history_len - 1;
            const float next = active ? h[i + 1] : 0.0f;
            __syncthreads();
            if (active) h[i] = next;
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (history_len > 1) h[history_len - 1] = staged;
            scale[slot] = next_scale(numerator, window, scale[slot]);
        }
    }
    if (threadIdx.x == 0) {
        h[0] = 0.0f;
        scale_inv[slot] = 1.0f / scale[slot];
    }
}

__global__ void current_scale_kernel(const float* __restrict__ amax, float numerator, float* __restrict__ scale,
                                     float* __restrict__ scale_inv, float* __restrict__ staging) {
    current_scale_values(*amax, numerator, scale, scale_inv, staging);
}

void launch_current_scale(const float* amax, float numerator, float* scale, float* scale_inv, float* staging,
                          cudaStream_t stream) {
    current_scale_kernel<<<1, 1, 0, stream>>>(amax, numerator, scale, scale_inv, staging);
    check_last_launch("tewb::kernels::current_scale");
}

void launch_update_scaling(const ScaleUpdateCall& a, cudaStream_t stream) {
    update_scaling_kernel<<<a.slots, kThreads, 0, stream>>>(a.history, a.scale, a.scale_inv, a.history_len, a.numerator, a.rule,
                                                            a.record, a.strides);
    check_last_launch("tewb::kernels::update_scaling");
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void update_scaling(const Tensor& history, const Tensor& scale, const Tensor& scale_inv, float numerator, ScalingRule rule,
                    const ScaleUpdateRecord& record, Stream stream) {
    const auto a =
        detail::scale_update_call("tewb::kernels::update_scaling", history, scale, scale_inv, numerator, rule, record);
    if (a) detail::launch_update_scaling(*a, detail::cuda_stream(stream));
}

void current_scale(const Tensor& amax, float numerator, const Tensor& scale, const Tensor& scale_inv, const Tensor& staging,
                   Stream stream) {
    const auto a = detail::current_scale_call("tewb::kernels::current_scale", amax, numerator, scale, scale_inv, staging);
    detail::launch_current_scale(a.amax, a.numerator, a.scale, a.scale_inv, a.staging, detail::cuda_stream(stream));
}

}  // namespace tewb::kernels
