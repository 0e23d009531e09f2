#include "embedding/embedding_arguments.h"
#include "embedding/embedding_launch.h"
#include "tewb_kernels/embedding.h"

namespace tewb::kernels {

void embedding_forward(const std::int64_t* tokens, std::size_t token_row_stride, std::size_t batch, std::size_t seq,
                       const void* table, const void* positions, DType dtype, std::size_t vocab, std::size_t hidden, void* out,
                       cudaStream_t stream) {
    if (!detail::check_embedding_forward_arguments("tewb::kernels::embedding_forward", tokens, token_row_stride, batch, seq, table,
                                                   positions, dtype, vocab, hidden, out)) {
        return;
    }
    detail::launch_embedding_forward(tokens, token_row_stride, batch, seq, table, positions, dtype, vocab, hidden, out, stream);
}

void embedding_backward(const std::int64_t* tokens, std::size_t token_row_stride, std::size_t batch, std::size_t seq,
                        const void* dy, DType dy_dtype, std::size_t vocab, std::size_t hidden, float* dtable, void* dpositions,
                        DType dpositions_dtype, cudaStream_t stream) {
    if (!detail::check_embedding_backward_arguments("tewb::kernels::embedding_backward", tokens, token_row_stride, batch, seq, dy,
                                                    dy_dtype, vocab, hidden, dtable, dpositions, dpositions_dtype)) {
        return;
    }
    detail::launch_embedding_backward(tokens, token_row_stride, batch, seq, dy, dy_dtype, vocab, hidden, dtable, dpositions,
                                      dpositions_dtype, stream);
}

}  // namespace tewb::kernels
