#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in embedding_api.cpp; each is one launch.
void launch_embedding_forward(const TokensRef& tokens, const ConstTensorRef& table, const ConstTensorRef& positions,
                              const TensorRef& out, cudaStream_t stream);
void launch_embedding_backward(const TokensRef& tokens, const ConstTensorRef& dy, const TensorRef& dtable,
                               const TensorRef& dpositions, cudaStream_t stream);

}  // namespace tewb::kernels::detail
