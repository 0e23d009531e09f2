#include "common/column_sum.h"

#include "common/check.h"
#include "common/elementwise.cuh"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;

__global__ void column_sum_kernel(const float* __restrict__ partial, int cols, int chunks, void* out, DType out_dtype) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float sum = 0.0f;
    for (int k = 0; k < chunks; ++k) sum += partial[static_cast<std::size_t>(k) * cols + c];
    store(out, out_dtype, c, sum);
}

}  // namespace

void launch_column_sum(const float* partial, int chunks, std::size_t cols, void* out, DType out_dtype, cudaStream_t stream,
                       std::string_view call) {
    const auto blocks = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
    column_sum_kernel<<<blocks, kThreads, 0, stream>>>(partial, static_cast<int>(cols), chunks, out, out_dtype);
    check_last_launch(call);
}

}  // namespace tewb::kernels::detail
