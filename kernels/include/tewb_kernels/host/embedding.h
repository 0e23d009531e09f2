#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

// The token + position embedding (tewb_kernels/embedding.h) over host memory: the same arguments, checks and
// semantics, minus the stream. Errors name "tewb::kernels::host::<function>". Each call counts the launches
// the CUDA path makes for the same arguments (launch_count.h): one each, none where there is nothing to do.
//
// Exactness against the CUDA kernels: the forward (one float32 add, one rounding) and dpositions (float32
// from 0, batches in ascending order, one rounding) bit for bit; an out-of-range token's NaN row with the
// same bits (float32 0x7fc00000, bfloat16 0x7fff). dtable: the host adds the rows in index order, the GPU's
// atomics in any order, so the two agree bit for bit where each token occurs at most once and otherwise
// within the bound the CUDA header states.
namespace tewb::kernels::host {

void embedding_forward(const TokensRef& tokens, const ConstTensorRef& table, const ConstTensorRef& positions,
                       const TensorRef& out);

void embedding_backward(const TokensRef& tokens, const ConstTensorRef& dy, const TensorRef& dtable, const TensorRef& dpositions);

}  // namespace tewb::kernels::host
