#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels::detail {

// Arguments already checked by the entry points in embedding_api.cpp; each is one launch.
void launch_embedding_forward(const std::int64_t* tokens, std::size_t token_row_stride, std::size_t batch, std::size_t seq,
                              const void* table, const void* positions, DType dtype, std::size_t vocab, std::size_t hidden,
                              void* out, cudaStream_t stream);
void launch_embedding_backward(const std::int64_t* tokens, std::size_t token_row_stride, std::size_t batch, std::size_t seq,
                               const void* dy, DType dy_dtype, std::size_t vocab, std::size_t hidden, float* dtable,
                               void* dpositions, DType dpositions_dtype, cudaStream_t stream);

}  // namespace tewb::kernels::detail
