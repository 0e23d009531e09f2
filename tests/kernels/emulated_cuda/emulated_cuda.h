#pragma once

// The CUDA a kernel source needs to run on the CPU, for tests/kernels/tst_attention_emulated (no GPU needed): a block
// is blockDim.x std::threads, __syncthreads and __syncwarp are barriers (a mutex and a condition variable, so
// ThreadSanitizer sees their ordering), a shuffle goes through a per-warp exchange array. This directory comes first
// on that test's include path, so the kernel's <mma.h>, <cuda_bf16.h>, <cuda_runtime_api.h> and the rest are these
// stand-ins; only what attention.cu and the common headers it includes use is here.
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static  // reached only by common/elementwise.cuh's block amax, which the attention does not call

struct EmulatedDim3 {
    unsigned x = 0, y = 0, z = 0;
};
extern thread_local EmulatedDim3 threadIdx, blockIdx;
extern EmulatedDim3 blockDim, gridDim;

struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
    return {x, y, z, w};
}
struct alignas(8) float2 {
    float x, y;
};

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
inline float __fmul_rn(float a, float b) {
    return a * b;  // the test's sources are built without contraction
}
inline unsigned max(unsigned a, unsigned b) {
    return a > b ? a : b;
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
    const unsigned old = *p;
    if (v > old) *p = v;
    return old;
}

namespace emulated {

class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        const unsigned long generation = generation_;
        if (++count_ == n_) {
            count_ = 0;
            ++generation_;
            released_.notify_all();
            return;
        }
        released_.wait(lock, [&] { return generation_ != generation; });
    }

private:
    std::mutex mutex_;
    std::condition_variable released_;
    int n_;
    int count_ = 0;
    unsigned long generation_ = 0;
};

// One running block: its barrier, one per warp, and the warps' shuffle slots.
struct Block {
    explicit Block(int threads) : block(threads), slots(static_cast<std::size_t>(threads)) {
        for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
    }
    Barrier block;
    std::vector<std::unique_ptr<Barrier>> warps;
    std::vector<std::uint64_t> slots;
};
extern thread_local Block* current_block;
extern thread_local unsigned char* dynamic_shared;  // the block's `extern __shared__` bytes

}  // namespace emulated

inline void __syncthreads() {
    emulated::current_block->block.wait();
}
inline void __syncwarp(unsigned = 0xffffffffu) {
    emulated::current_block->warps[threadIdx.x / 32]->wait();
}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int offset) {
    static_assert(sizeof(T) <= 8);
    emulated::Block& b = *emulated::current_block;
    const unsigned lane = threadIdx.x % 32;
    const unsigned warp = threadIdx.x / 32;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    b.slots[threadIdx.x] = bits;
    b.warps[warp]->wait();
    bits = b.slots[warp * 32 + (lane ^ static_cast<unsigned>(offset))];
    b.warps[warp]->wait();  // no lane overwrites its slot before every lane has read
    T r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
}
