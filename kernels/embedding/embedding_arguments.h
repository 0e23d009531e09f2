#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

// The embedding's argument rules, one copy for the kernels (embedding_api.cpp) and the host implementation
// (embedding_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work, so
// that an empty call is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

// What an out-of-range token's forward row is filled with (a float32 quiet NaN; stored to bfloat16 as
// 0x7fff by the dtype's usual rounding), one value for both paths.
inline constexpr std::uint32_t kEmbeddingNaNBits = 0x7fc00000u;

// Work: rows = batch * seq > 0.
bool check_embedding_forward_arguments(const char* call, const TokensRef& tokens, const ConstTensorRef& table,
                                       const ConstTensorRef& positions, const TensorRef& out);

// Work: rows > 0, or dpositions set and seq > 0 (batch == 0 writes zeros to it).
bool check_embedding_backward_arguments(const char* call, const TokensRef& tokens, const ConstTensorRef& dy,
                                        const TensorRef& dtable, const TensorRef& dpositions);

}  // namespace tewb::kernels::detail
