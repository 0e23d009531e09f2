#pragma once
// The runtime calls the kernel sources make, and the launch: blocks one after another, each as blockDim.x threads on a
// fresh dynamic shared buffer of exactly the requested size, filled with 0xff bytes (NaN as bfloat16 and float32), so
// a read of shared memory nothing wrote shows. A launch over 48 KiB without the kernel's raised limit, or over 99 KiB,
// aborts, as a GPU of compute capability 8.6 or 8.9 would refuse it.
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include "emulated_cuda.h"

typedef enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct CUstream_st* cudaStream_t;
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 } cudaFuncAttribute;

namespace emulated {
cudaError_t set_max_dynamic_shared(const void* kernel, int bytes);
int max_dynamic_shared(const void* kernel);

template <typename Args>
void launch(void (*kernel)(Args), unsigned grid, unsigned threads, std::size_t shared_bytes, const Args& args) {
    const int limit = max_dynamic_shared(reinterpret_cast<const void*>(kernel));
    if ((shared_bytes > 48 * 1024 && static_cast<int>(shared_bytes) > limit) || shared_bytes > 99 * 1024) {
        std::fprintf(stderr, "emulated launch: %zu bytes of dynamic shared memory, the kernel's limit %d (at most 99 KiB)\n",
                     shared_bytes, limit);
        std::abort();
    }
    gridDim = {grid, 1, 1};
    blockDim = {threads, 1, 1};
    for (unsigned bx = 0; bx < grid; ++bx) {
        struct Free {
            void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t(128)); }
        };
        const std::unique_ptr<unsigned char[], Free> shared(
            static_cast<unsigned char*>(::operator new[](shared_bytes, std::align_val_t(128))));
        std::memset(shared.get(), 0xff, shared_bytes);
        Block block(static_cast<int>(threads));
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (unsigned t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                threadIdx = {t, 0, 0};
                blockIdx = {bx, 0, 0};
                current_block = &block;
                dynamic_shared = shared.get();
                kernel(args);
            });
        }
        for (std::thread& thread : pool) thread.join();
    }
}
}  // namespace emulated

inline cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute, int value) {
    return emulated::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
}
