#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tokens.h"
#include "tewb_kernels/tensor.h"

// The embedding's argument rules, one copy for the kernels (embedding.cu) and the host twins (embedding_host.cpp),
// on the tokens as token_rows (common/arguments.h) makes them. Each fails with KernelError "<call>: <what>" and returns whether there is work, so
// that an empty call is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

// What an out-of-range token's forward row is filled with (a float32 quiet NaN; stored to bfloat16 as
// 0x7fff by the dtype's usual rounding), one value for both paths.
inline constexpr std::uint32_t kEmbeddingNaNBits = 0x7fc00000u;

// Work: rows = batch * seq > 0.
bool check_embedding_forward_arguments(const char* call, const TokensRef& tokens, const Tensor& table,
                                       const Tensor& positions, const Tensor& out);

// Work: rows > 0, or dpositions set and seq > 0 (batch == 0 writes zeros to it).
bool check_embedding_backward_arguments(const char* call, const TokensRef& tokens, const Tensor& dy,
                                        const Tensor& dtable, const Tensor& dpositions);

}  // namespace tewb::kernels::detail
