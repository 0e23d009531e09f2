#include <limits>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "embedding/embedding_call.h"

namespace tewb::kernels::detail {

namespace {

constexpr auto kMaxIndex = static_cast<std::size_t>(std::numeric_limits<int>::max());

// The shape both directions share: hidden and vocab at least 1, rows = batch * seq and every size within the
// kernels' int range, the token rows at least seq apart.
void check_sizes(const char* call, std::size_t token_row_stride, std::size_t batch, std::size_t seq, std::size_t vocab,
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

bool check_embedding_forward_arguments(const char* call, const TokensRef& tokens, const Tensor& table,
                                       const Tensor& positions, const Tensor& out) {
    const std::size_t hidden = table.cols;
    const DType dtype = table.dtype;
    check_sizes(call, tokens.row_stride, tokens.batch, tokens.seq, table.rows, hidden);
    check_float_or_bf16(call, dtype, "table, positions and out");
    const bool with_positions = positions.data != nullptr;
    if (with_positions) check_same_dtype(call, positions.dtype, "positions", dtype, "table");
    check_same_dtype(call, out.dtype, "out", dtype, "table");
    if (with_positions) check_shape(call, positions, "positions", tokens.seq, hidden);
    check_shape(call, out, "out", tokens.batch * tokens.seq, hidden);
    if (tokens.batch * tokens.seq == 0) return false;
    check_buffer(call, tokens.data, "tokens", alignof(std::int64_t));
    check_buffer(call, table.data, "table", element_size(dtype));
    if (with_positions) check_buffer(call, positions.data, "positions", element_size(dtype));
    check_buffer(call, out.data, "out", element_size(dtype));
    return true;
}

bool check_embedding_backward_arguments(const char* call, const TokensRef& tokens, const Tensor& dy,
                                        const Tensor& dtable, const Tensor& dpositions) {
    const std::size_t batch = tokens.batch;
    const std::size_t seq = tokens.seq;
    const std::size_t hidden = dy.cols;
    check_sizes(call, tokens.row_stride, batch, seq, dtable.rows, hidden);
    if (dtable.data == nullptr && dpositions.data == nullptr) fail(call, "no output: dtable and dpositions are both null");
    check_float_or_bf16(call, dy.dtype, "dy");
    if (dpositions.data != nullptr) check_float_or_bf16(call, dpositions.dtype, "dpositions");
    check_shape(call, dy, "dy", batch * seq, hidden);
    if (dtable.data != nullptr) {
        if (dtable.dtype != DType::Float32) {
            fail(call, "dtable has dtype " + std::string(to_string(dtable.dtype)) + "; allowed: float32 (it accumulates)");
        }
        check_shape(call, dtable, "dtable", dtable.rows, hidden);
    }
    if (dpositions.data != nullptr) check_shape(call, dpositions, "dpositions", seq, hidden);
    const bool rows = batch * seq > 0;
    if (!rows && (dpositions.data == nullptr || seq == 0)) return false;
    if (rows) {
        check_buffer(call, tokens.data, "tokens", alignof(std::int64_t));
        check_buffer(call, dy.data, "dy", element_size(dy.dtype));
    }
    if (dtable.data != nullptr) check_buffer(call, dtable.data, "dtable", alignof(float));
    if (dpositions.data != nullptr) check_buffer(call, dpositions.data, "dpositions", element_size(dpositions.dtype));
    return true;
}

}  // namespace tewb::kernels::detail
