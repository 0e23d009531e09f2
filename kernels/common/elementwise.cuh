#pragma once

// Device helpers shared by the op families: loads and stores in a dtype chosen at run time (the branch is
// uniform across a launch), FP8 conversion, and the block-wide amax combine.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "tewb_kernels/cast.h"
#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

__device__ inline float to_float(float v) {
    return v;
}
__device__ inline float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ inline float to_float(__half v) {
    return __half2float(v);
}

__device__ inline float load(const void* p, DType dtype, std::size_t i) {
    switch (dtype) {
        case DType::Float32: return static_cast<const float*>(p)[i];
        case DType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
        case DType::Float16: return __half2float(static_cast<const __half*>(p)[i]);
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
    return 0.0f;
}

__device__ inline void store(void* p, DType dtype, std::size_t i, float v) {
    switch (dtype) {
        case DType::Float32: static_cast<float*>(p)[i] = v; break;
        case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v); break;
        case DType::Float16: static_cast<__half*>(p)[i] = __float2half(v); break;
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
}

__host__ __device__ inline std::uint8_t fp8_from_float(float v, Fp8Type type) {
    return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, type == Fp8Type::E4M3 ? __NV_E4M3 : __NV_E5M2);
}

// |v| as bits: for non-negative floats integer order is float order, and every NaN orders above inf.
__device__ inline unsigned abs_bits(float v) {
    return __float_as_uint(v) & 0x7fffffffu;
}

__device__ inline float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// The block's largest `bits`, combined into *amax (when not null) with one atomic per block. Every thread
// of the block must call it: it synchronizes. Blocks of at most 1024 threads.
__device__ inline void combine_block_amax(unsigned bits, float* amax) {
    for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
    __shared__ unsigned warp_max[32];
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    if (thread % 32 == 0) warp_max[thread / 32] = bits;
    __syncthreads();
    if (thread < 32) {
        bits = thread < warps ? warp_max[thread] : 0u;
        for (int offset = 16; offset > 0; offset /= 2) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
        if (thread == 0 && amax != nullptr) atomicMax(reinterpret_cast<unsigned*>(amax), bits);
    }
}

// PAIRS bfloat16 pairs as 2 * PAIRS floats (v[2i], v[2i + 1] from h[i]), and back (rounded to nearest even,
// NaN to 0x7fff): the one bfloat16 unpack and pack loop of the vectorised loads and stores.
template <int PAIRS>
__device__ inline void unpack_bf16x2(const __nv_bfloat162* h, float* v) {
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        const float2 f = __bfloat1622float2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}

template <int PAIRS>
__device__ inline void pack_bf16x2(const float* v, __nv_bfloat162* h) {
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
}

// 16 bytes as 4 float32 or 8 bfloat16 values, and back (bfloat16 rounded to nearest even, NaN to 0x7fff).
__device__ inline void unpack(const uint4& u, float (&v)[4]) {
    v[0] = __uint_as_float(u.x);
    v[1] = __uint_as_float(u.y);
    v[2] = __uint_as_float(u.z);
    v[3] = __uint_as_float(u.w);
}

// Through the four words (a bfloat16 is the top half of its float32): reading u as __nv_bfloat162 pairs let the
// compiler split a 16-byte load from global memory into four 4-byte loads (PTX ld.global.v2.u16).
__device__ inline void unpack(const uint4& u, float (&v)[8]) {
    const unsigned words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[2 * i] = __uint_as_float(words[i] << 16);
        v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
}

__device__ inline uint4 pack(const float (&v)[4]) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
}

__device__ inline uint4 pack(const float (&v)[8]) {
    uint4 u;
    pack_bf16x2<4>(v, reinterpret_cast<__nv_bfloat162*>(&u));
    return u;
}

// A thread's n (<= W, 4 or 8) FP8 bytes of a row at q: one W-byte store where `vector` (q W-byte aligned, n == W), byte
// by byte elsewhere.
template <int W>
__device__ inline void store_fp8_piece(std::uint8_t* q, const std::uint8_t* bytes, int n, bool vector) {
    static_assert(W == 4 || W == 8);
    if (vector) {
        if constexpr (W == 8) {
            *reinterpret_cast<uint2*>(q) = *reinterpret_cast<const uint2*>(bytes);
        } else {
            *reinterpret_cast<std::uint32_t*>(q) = *reinterpret_cast<const std::uint32_t*>(bytes);
        }
    } else {
        for (int i = 0; i < n; ++i) q[i] = bytes[i];
    }
}

}  // namespace tewb::kernels::detail
