#pragma once

// Token ids as the embedding and loss kernels walk them, made from an int64 tokens tensor (common/arguments.h's
// token_rows): row b's ids start at data + b * row_stride (row_stride >= seq; a narrow() of a trainer's
// [batch, seq + 1] batch has row_stride seq + 1).
#include <cstddef>
#include <cstdint>

namespace tewb::kernels::detail {

struct TokensRef {
    const std::int64_t* data = nullptr;
    std::size_t batch = 0;
    std::size_t seq = 0;
    std::size_t row_stride = 0;
};

}  // namespace tewb::kernels::detail
