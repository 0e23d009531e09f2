#include "embedding/embedding_arguments.h"
#include "embedding/embedding_launch.h"
#include "tewb_kernels/embedding.h"

namespace tewb::kernels {

void embedding_forward(const TokensRef& tokens, const ConstTensorRef& table, const ConstTensorRef& positions,
                       const TensorRef& out, cudaStream_t stream) {
    if (!detail::check_embedding_forward_arguments("tewb::kernels::embedding_forward", tokens, table, positions, out)) return;
    detail::launch_embedding_forward(tokens, table, positions, out, stream);
}

void embedding_backward(const TokensRef& tokens, const ConstTensorRef& dy, const TensorRef& dtable, const TensorRef& dpositions,
                        cudaStream_t stream) {
    if (!detail::check_embedding_backward_arguments("tewb::kernels::embedding_backward", tokens, dy, dtable, dpositions)) return;
    detail::launch_embedding_backward(tokens, dy, dtable, dpositions, stream);
}

}  // namespace tewb::kernels
