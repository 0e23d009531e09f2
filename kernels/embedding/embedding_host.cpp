// The token + position embedding on the host, in embedding.cu's arithmetic: the forward's one float32 add,
// dpositions summed over the batch in ascending order from 0. dtable takes the rows in index order (the
// GPU's atomics take them in any order).
#include <cstdint>
#include <vector>

#include "common/arguments.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "embedding/embedding_call.h"
#include "tewb_kernels/embedding.h"

namespace tewb::kernels::host {

namespace {

// Row r's token, or -1 where it lies outside [0, vocab) (the kernels' rule).
std::int64_t token_of(const std::int64_t* tokens, std::size_t token_row_stride, std::size_t seq, std::size_t vocab,
                      std::size_t row) {
    const std::int64_t token = tokens[(row / seq) * token_row_stride + row % seq];
    return token >= 0 && static_cast<std::uint64_t>(token) < vocab ? token : -1;
}

}  // namespace

void embedding_forward(const Tensor& tokens_in, const Tensor& table_ref, const Tensor& positions_ref, const Tensor& out_ref,
                       Stream) {
    constexpr const char* call = "tewb::kernels::host::embedding_forward";
    const detail::TokensRef tokens_ref = detail::token_rows(call, tokens_in, "tokens");
    if (!detail::check_embedding_forward_arguments(call, tokens_ref, table_ref, positions_ref, out_ref)) return;
    const std::int64_t* tokens = tokens_ref.data;
    const std::size_t token_row_stride = tokens_ref.row_stride;
    const std::size_t seq = tokens_ref.seq;
    const void* table = table_ref.data;
    const void* positions = positions_ref.data;
    void* out = out_ref.data;
    const DType dtype = table_ref.dtype;
    const std::size_t vocab = table_ref.rows;
    const std::size_t hidden = table_ref.cols;
    const std::size_t rows = tokens_ref.batch * seq;
    const float nan = detail::bits_float(detail::kEmbeddingNaNBits);
    detail::parallel_for(rows, hidden * 3, [&](std::size_t first, std::size_t last) {
        std::vector<float> sum(hidden), position(hidden);
        for (std::size_t row = first; row < last; ++row) {
            const std::int64_t token = token_of(tokens, token_row_stride, seq, vocab, row);
            if (token < 0) {
                sum.assign(hidden, nan);
            } else {
                detail::load_floats(table, dtype, static_cast<std::size_t>(token) * hidden, hidden, sum.data());
                if (positions != nullptr) {
                    detail::load_floats(positions, dtype, (row % seq) * hidden, hidden, position.data());
                    for (std::size_t c = 0; c < hidden; ++c) sum[c] += position[c];
                }
            }
            detail::store_floats(out, dtype, row * hidden, hidden, sum.data());
        }
    });
    detail::note_launch();
}

void embedding_backward(const Tensor& tokens_in, const Tensor& dy_ref, const Tensor& dtable_ref, const Tensor& dpositions_ref,
                        Stream) {
    constexpr const char* call = "tewb::kernels::host::embedding_backward";
    const detail::TokensRef tokens_ref = detail::token_rows(call, tokens_in, "tokens");
    if (!detail::check_embedding_backward_arguments(call, tokens_ref, dy_ref, dtable_ref, dpositions_ref)) return;
    const std::int64_t* tokens = tokens_ref.data;
    const std::size_t token_row_stride = tokens_ref.row_stride;
    const std::size_t batch = tokens_ref.batch;
    const std::size_t seq = tokens_ref.seq;
    const void* dy = dy_ref.data;
    const DType dy_dtype = dy_ref.dtype;
    const std::size_t vocab = dtable_ref.rows;
    const std::size_t hidden = dy_ref.cols;
    auto* dtable = static_cast<float*>(dtable_ref.data);
    void* dpositions = dpositions_ref.data;
    const DType dpositions_dtype = dpositions_ref.dtype;
    const std::size_t rows = batch * seq;
    if (dpositions != nullptr) {
        // Each position's sum over the batch, b ascending from 0 (each GPU thread's loop for its element).
        detail::parallel_for(seq, batch * hidden, [&](std::size_t first, std::size_t last) {
            std::vector<float> sum(hidden), d(hidden);
            for (std::size_t s = first; s < last; ++s) {
                sum.assign(hidden, 0.0f);
                for (std::size_t b = 0; b < batch; ++b) {
                    detail::load_floats(dy, dy_dtype, (b * seq + s) * hidden, hidden, d.data());
                    for (std::size_t c = 0; c < hidden; ++c) sum[c] += d[c];
                }
                detail::store_floats(dpositions, dpositions_dtype, s * hidden, hidden, sum.data());
            }
        });
    }
    if (dtable != nullptr) {
        // Sequential: rows with the same token add into the same row of dtable, in index order.
        std::vector<float> d(hidden);
        for (std::size_t row = 0; row < rows; ++row) {
            const std::int64_t token = token_of(tokens, token_row_stride, seq, vocab, row);
            if (token < 0) continue;
            detail::load_floats(dy, dy_dtype, row * hidden, hidden, d.data());
            float* target = dtable + static_cast<std::size_t>(token) * hidden;
            for (std::size_t c = 0; c < hidden; ++c) target[c] += d[c];
        }
    }
    detail::note_launch();
}

}  // namespace tewb::kernels::host
