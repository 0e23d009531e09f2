#pragma once

// The CUDA a kernel source needs to run on the CPU, for the tests/kernels/tst_*_emulated tests (no GPU needed): a
// block is blockDim.x × blockDim.y fibers on the calling thread (emulated_runtime.cpp), each with a stack of its own, switched only
// where a CUDA thread waits (__syncthreads, __syncwarp, a shuffle), so a block costs no OS thread and no futex; a
// shuffle goes through a per-warp exchange array, blocks run one after another (so a static `__shared__` array is the
// running block's, and atomics need no lock). This directory comes first on those tests' include path, so the
// kernel's <mma.h>, <cuda_bf16.h>, <cuda_runtime_api.h> and the rest are these stand-ins; only what the emulated
// sources and the common headers they include use is here.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))  // as CUDA defines it: anywhere among the decl-specifiers
#define __shared__ static  // the running block's: blocks run one after another

struct EmulatedDim3 {
    unsigned x = 0, y = 0, z = 0;
};
extern EmulatedDim3 threadIdx, blockIdx;  // the running fiber's; its block's
extern EmulatedDim3 blockDim, gridDim;

struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
inline uint2 make_uint2(unsigned x, unsigned y) {
    return {x, y};
}
struct dim3 {
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    unsigned x, y, z;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
    return {x, y, z, w};
}
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
    return {x, y, z, w};
}

inline unsigned __float_as_uint(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
// Byte i of the result is byte (s >> 4i) & 7 of the 8 bytes b:a (a's bytes 0..3, b's 4..7), as CUDA's (bit 3 of a
// selector nibble is ignored).
inline unsigned __byte_perm(unsigned a, unsigned b, unsigned s) {
    const unsigned long long both = (static_cast<unsigned long long>(b) << 32) | a;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((both >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
    return r;
}
inline float __fmul_rn(float a, float b) {
    return a * b;  // the test's sources are built without contraction
}
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline float __fmaf_rn(float a, float b, float c) {
    return std::fma(a, b, c);
}
// 1 / sqrt correctly rounded, as the host twins take it: CUDA's rsqrtf (2 ulp) is not emulated.
inline float rsqrtf(float v) {
    return 1.0f / std::sqrt(v);
}
inline unsigned max(unsigned a, unsigned b) {
    return a > b ? a : b;
}
inline int min(int a, int b) {
    return a < b ? a : b;
}
inline long long min(long long a, long long b) {
    return a < b ? a : b;
}
// One fiber runs at a time (and one block), so the atomics need no lock.
inline unsigned atomicMax(unsigned* p, unsigned v) {
    const unsigned old = *p;
    if (v > old) *p = v;
    return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    const unsigned old = *p;
    *p = old + v;
    return old;
}
inline float atomicAdd(float* p, float v) {
    const float old = *p;
    *p = old + v;
    return old;
}
inline unsigned atomicExch(unsigned* p, unsigned v) {
    const unsigned old = *p;
    *p = v;
    return old;
}
inline void __threadfence() {}  // blocks run one after another: every earlier block's writes are done
inline float __ldcg(const float* p) {
    return *p;
}
inline float4 __ldcg(const float4* p) {
    return *p;
}
inline double __ldcg(const double* p) {
    return *p;
}
inline float __ldg(const float* p) {  // the read-only data cache's load
    return *p;
}
inline uint4 __ldg(const uint4* p) {
    return *p;
}

namespace emulated {

// The running block's barriers (emulated_runtime.cpp): the calling fiber waits until every thread of the block (of
// warp `warp`) has arrived; a block whose threads cannot all arrive aborts with what each was waiting for.
void sync_block();
void sync_warp(unsigned warp);
extern std::uint64_t* shuffle_slots;   // one a thread of the running block
extern unsigned char* dynamic_shared;  // the block's `extern __shared__` bytes

}  // namespace emulated

// The thread's place in its block, x fastest: warps are 32 consecutive places (a 32 x 8 block's rows are warps).
inline unsigned emulated_thread() {
    return threadIdx.y * blockDim.x + threadIdx.x;
}

inline void __syncthreads() {
    emulated::sync_block();
}
inline void __syncwarp(unsigned = 0xffffffffu) {
    emulated::sync_warp(emulated_thread() / 32);
}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int offset) {
    static_assert(sizeof(T) <= 8);
    const unsigned thread = emulated_thread();
    const unsigned lane = thread % 32;
    const unsigned warp = thread / 32;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    emulated::shuffle_slots[thread] = bits;
    emulated::sync_warp(warp);
    bits = emulated::shuffle_slots[warp * 32 + (lane ^ static_cast<unsigned>(offset))];
    emulated::sync_warp(warp);  // no lane overwrites its slot before every lane has read
    T r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}
