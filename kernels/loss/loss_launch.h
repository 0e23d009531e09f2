#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/loss.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in loss_api.cpp. One launch each.
void launch_cross_entropy_forward(const ConstTensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                                  double* partial, cudaStream_t stream);
void launch_cross_entropy_backward(const ConstTensorRef& logits, const TokensRef& targets, const float* lse,
                                   const float* grad_loss, const TensorRef& dlogits, cudaStream_t stream);
void launch_cross_entropy_forward_with_grad(const TensorRef& logits, const TokensRef& targets, float* lse, float* loss,
                                            double* partial, cudaStream_t stream);

}  // namespace tewb::kernels::detail
