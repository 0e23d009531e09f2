#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/dtype.h"

// The embedding's argument rules, one copy for the kernels (embedding_api.cpp) and the host implementation
// (embedding_host.cpp). Each fails with KernelError "<call>: <what>" and returns whether there is work, so
// that an empty call is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

// What an out-of-range token's forward row is filled with (a float32 quiet NaN; stored to bfloat16 as
// 0x7fff by the dtype's usual rounding), one value for both paths.
inline constexpr std::uint32_t kEmbeddingNaNBits = 0x7fc00000u;

// Work: rows = batch * seq > 0.
bool check_embedding_forward_arguments(const char* call, const std::int64_t* tokens, std::size_t token_row_stride,
                                       std::size_t batch, std::size_t seq, const void* table, const void* positions, DType dtype,
                                       std::size_t vocab, std::size_t hidden, const void* out);

// Work: rows > 0, or dpositions set and seq > 0 (batch == 0 writes zeros to it).
bool check_embedding_backward_arguments(const char* call, const std::int64_t* tokens, std::size_t token_row_stride,
                                        std::size_t batch, std::size_t seq, const void* dy, DType dy_dtype, std::size_t vocab,
                                        std::size_t hidden, const float* dtable, const void* dpositions,
                                        DType dpositions_dtype);

}  // namespace tewb::kernels::detail
