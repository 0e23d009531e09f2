#pragma once

// Current scaling's scale from inside the kernel that produces the tensor (the amax hand-off): the launch's blocks
// combine the largest |value| they stored into a scratch word of the including translation unit, and the last block to
// arrive applies current scaling's rule (recipe_math.h, as abs_max_current_scale's last block) and clears the word, so
// the cast that follows needs no amax pass over the tensor of its own. The word and its arrival counter start at zero
// (module load) and the last block leaves them zero: kernels of one translation unit that use them do not run
// concurrently (one stream, as column_sum.cuh's counters).
#include "common/column_sum.cuh"
#include "common/elementwise.cuh"
#include "recipe/recipe_math.h"

namespace tewb::kernels::detail {

// Where the scale goes: scale null means no target (the kernel's plain form); staging may be null.
struct CurrentScaleOut {
    float numerator = 0.0f;
    float* scale = nullptr;
    float* scale_inv = nullptr;
    float* staging = nullptr;
};

static __device__ unsigned current_scale_amax_bits;
static __device__ unsigned current_scale_arrivals;

// Called once by every thread of every block of the launch, at the kernel's end (it synchronizes; `target` is the same
// for all), with the thread's largest |stored value| as bits (abs_bits: a NaN ranks above inf).
__device__ inline void finish_current_scale(unsigned bits, const CurrentScaleOut& target) {
    if (target.scale == nullptr) return;
    combine_block_amax(bits, reinterpret_cast<float*>(&current_scale_amax_bits));
    const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;  // the launches that take it have at most 2^31 - 1 blocks
    if (last_block_to_arrive_on(&current_scale_arrivals, blocks) && threadIdx.x + threadIdx.y + threadIdx.z == 0) {
        const unsigned all = atomicExch(&current_scale_amax_bits, 0u);
        current_scale_values(__uint_as_float(all), target.numerator, target.scale, target.scale_inv, target.staging);
    }
}

// v as a tensor of `dtype` stores it (bfloat16: rounded to nearest even), whose |v| the amax takes.
__device__ inline float as_stored_in(float v, DType dtype) {
    return dtype == DType::BFloat16 ? __bfloat162float(__float2bfloat16(v)) : v;
}

}  // namespace tewb::kernels::detail
