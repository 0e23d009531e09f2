#pragma once
// The runtime calls the kernel sources make, and the launch: blocks one after another, each as blockDim.x × blockDim.y fibers on a
// fresh dynamic shared buffer of exactly the requested size, filled with 0xff bytes (NaN as bfloat16 and float32), so
// a read of shared memory nothing wrote shows. A launch over 48 KiB without the kernel's raised limit, or over 99 KiB,
// aborts, as a GPU of compute capability 8.6 or 8.9 would refuse it. `launch` takes one argument struct (attention.cu's
// launch statement is replaced by it); `launcher(kernel, grid, block, shared, stream)(args...)` is what a
// `kernel<<<grid, block, shared, stream>>>(args...)` statement becomes in the other emulated sources (tests/CMakeLists.txt
// rewrites them), over a grid of x × y blocks of x × y threads (whole warps).
#include <cstdio>
#include <cstdlib>

#include "emulated_cuda.h"

#define CUDART_VERSION 13000  // the toolkit the kernels are built with (cast_multi.cu asks for 12.1 or later)

typedef enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct CUstream_st* cudaStream_t;
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 } cudaFuncAttribute;
// The emulation cannot know a kernel's static shared memory (its `__shared__` arrays are the running block's): 0.
struct cudaFuncAttributes {
    std::size_t sharedSizeBytes = 0;
};

namespace emulated {
cudaError_t set_max_dynamic_shared(const void* kernel, int bytes);
int max_dynamic_shared(const void* kernel);

// Runs `body` as each of `threads` fibers of every one of `blocks` blocks, blocks one after another (blockIdx from
// gridDim, threadIdx from blockDim), each block on `shared_bytes` of dynamic shared memory freshly filled with 0xff.
void run_blocks(unsigned blocks, unsigned threads, std::size_t shared_bytes, void (*body)(const void*), const void* context);

// Runs `body()` as every thread of every block of the grid, blocks one after another. A kernel whose threads do not all
// reach the same __syncthreads (one that returns early before one) aborts, naming the threads left waiting.
template <typename Body>
void run_grid(const void* kernel, dim3 grid, dim3 block_shape, std::size_t shared_bytes, const Body& body) {
    const unsigned threads = block_shape.x * block_shape.y;
    const int limit = max_dynamic_shared(kernel);
    if ((shared_bytes > 48 * 1024 && static_cast<int>(shared_bytes) > limit) || shared_bytes > 99 * 1024) {
        std::fprintf(stderr, "emulated launch: %zu bytes of dynamic shared memory, the kernel's limit %d (at most 99 KiB)\n",
                     shared_bytes, limit);
        std::abort();
    }
    if (grid.z != 1 || block_shape.z != 1 || threads == 0 || threads > 1024 || threads % 32 != 0) {
        std::fprintf(stderr, "emulated launch: grid z %u, block %u x %u x %u: not emulated (z 1, whole warps, at most 1024 threads)\n",
                     grid.z, block_shape.x, block_shape.y, block_shape.z);
        std::abort();
    }
    gridDim = {grid.x, grid.y, 1};
    blockDim = {block_shape.x, block_shape.y, 1};
    const auto call = [](const void* b) { (*static_cast<const Body*>(b))(); };
    run_blocks(grid.x * grid.y, threads, shared_bytes, call, &body);
}

template <typename Args>
void launch(void (*kernel)(Args), unsigned grid, unsigned threads, std::size_t shared_bytes, const Args& args) {
    run_grid(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(threads), shared_bytes, [&] { kernel(args); });
}

template <typename... Params>
struct Launcher {
    void (*kernel)(Params...);
    dim3 grid;
    dim3 block;
    std::size_t shared_bytes;
    template <typename... Args>
    void operator()(const Args&... args) const {
        run_grid(reinterpret_cast<const void*>(kernel), grid, block, shared_bytes, [&] { kernel(args...); });
    }
};

template <typename... Params>
Launcher<Params...> launcher(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes = 0,
                             cudaStream_t = nullptr) {
    return {kernel, grid, block, shared_bytes};
}
}  // namespace emulated

inline cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, F*) {
    *attributes = cudaFuncAttributes{};
    return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncSetAttribute(F* kernel, cudaFuncAttribute, int value) {
    return emulated::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), value);
}
