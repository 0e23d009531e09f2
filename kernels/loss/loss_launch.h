#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/loss.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in loss_api.cpp. One launch each.
void launch_cross_entropy_forward(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                                  const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride, float* lse,
                                  float* loss, double* partial, cudaStream_t stream);
void launch_cross_entropy_backward(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                                   const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride, const float* lse,
                                   const float* grad_loss, void* dlogits, DType dlogits_dtype, cudaStream_t stream);
void launch_cross_entropy_forward_with_grad(void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab,
                                            const std::int64_t* targets, std::size_t seq, std::size_t target_row_stride,
                                            float* lse, float* loss, double* partial, cudaStream_t stream);

}  // namespace tewb::kernels::detail
