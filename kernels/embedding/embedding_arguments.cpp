#include "embedding/embedding_arguments.h"

#include <limits>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

constexpr auto kMaxIndex = static_cast<std::size_t>(std::numeric_limits<int>::max());

// The shape both directions share: hidden and vocab at least 1, rows = batch * seq and every size within the
// kernels' int range, the token rows at least seq apart.
void check_shape(const char* call, std::size_t token_row_stride, std::size_t batch, std::size_t seq, std::size_t vocab,
                 std::size_t hidden) {
    if (hidden == 0) fail(call, "hidden = 0; allowed: 1 or more");
    if (vocab == 0) fail(call, "vocab = 0; allowed: 1 or more");
    check_dims(call, vocab, hidden);
    if (batch > kMaxIndex || seq > kMaxIndex || (seq != 0 && batch > kMaxIndex / seq)) {
        fail(call, "batch = " + std::to_string(batch) + ", seq = " + std::to_string(seq) +
                       "; allowed: batch * seq at most " + std::to_string(kMaxIndex));
    }
    check_dims(call, batch * seq, hidden);
    if (token_row_stride < seq || token_row_stride > kMaxIndex) {
        fail(call, "token_row_stride = " + std::to_string(token_row_stride) + "; allowed: from seq = " + std::to_string(seq) +
                       " to " + std::to_string(kMaxIndex));
    }
}

}  // namespace

bool check_embedding_forward_arguments(const char* call, const std::int64_t* tokens, std::size_t token_row_stride,
                                       std::size_t batch, std::size_t seq, const void* table, const void* positions, DType dtype,
                                       std::size_t vocab, std::size_t hidden, const void* out) {
    check_shape(call, token_row_stride, batch, seq, vocab, hidden);
    check_float_or_bf16(call, dtype, "table, positions and out");
    if (batch * seq == 0) return false;
    check_buffer(call, tokens, "tokens", alignof(std::int64_t));
    check_buffer(call, table, "table", element_size(dtype));
    check_buffer(call, positions, "positions", element_size(dtype));
    check_buffer(call, out, "out", element_size(dtype));
    return true;
}

bool check_embedding_backward_arguments(const char* call, const std::int64_t* tokens, std::size_t token_row_stride,
                                        std::size_t batch, std::size_t seq, const void* dy, DType dy_dtype, std::size_t vocab,
                                        std::size_t hidden, const float* dtable, const void* dpositions,
                                        DType dpositions_dtype) {
    check_shape(call, token_row_stride, batch, seq, vocab, hidden);
    if (dtable == nullptr && dpositions == nullptr) fail(call, "no output: dtable and dpositions are both null");
    check_float_or_bf16(call, dy_dtype, "dy");
    if (dpositions != nullptr) check_float_or_bf16(call, dpositions_dtype, "dpositions");
    const bool rows = batch * seq > 0;
    if (!rows && (dpositions == nullptr || seq == 0)) return false;
    if (rows) {
        check_buffer(call, tokens, "tokens", alignof(std::int64_t));
        check_buffer(call, dy, "dy", element_size(dy_dtype));
    }
    if (dtable != nullptr) check_buffer(call, dtable, "dtable", alignof(float));
    if (dpositions != nullptr) check_buffer(call, dpositions, "dpositions", element_size(dpositions_dtype));
    return true;
}

}  // namespace tewb::kernels::detail
