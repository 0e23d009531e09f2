#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/tensor_ref.h"

namespace tewb::kernels {

// GPT's input: a token embedding plus a learned position embedding, rows = batch * seq.
//
// Tokens are int64 [batch, seq] and read strided (TokensRef, tensor_ref.h): row r's token is
// tokens.data[(r / seq) * tokens.row_stride + r % seq] (a trainer hands a narrow() of its [batch, seq + 1] token
// tensor, row_stride seq + 1). table [vocab, hidden], positions [seq, hidden] (one row per position of the
// sequence) and out [rows, hidden] are row-major in one dtype, float32 or bfloat16.
//
// A token outside [0, vocab) is not an error (a kernel cannot throw): the forward writes that out row as NaN
// (float32 0x7fc00000, bfloat16 0x7fff) and the backward leaves it out of dtable. Shapes, dtypes, null and
// misaligned pointers are argument errors (KernelError) found before any launch. Device pointers.

// One launch: out[r, :] = table[token(r), :] + positions[r % seq, :], a float32 add rounded once to the
// dtype (bit for bit the host twin's). 16-byte loads and stores where hidden is a multiple of 16 / element
// size and table, positions and out are 16-byte aligned; one element per thread elsewhere. rows == 0 does
// nothing.
void embedding_forward(const TokensRef& tokens, const ConstTensorRef& table, const ConstTensorRef& positions,
                       const TensorRef& out, cudaStream_t stream);

// One launch, no workspace, from dy [rows, hidden] (float32 or bfloat16):
//   dtable [vocab, hidden] (float32; data null: not wanted, its rows still give vocab, the tokens' range):
//     dtable[token(r), :] += dy[r, :] for every row, ADDED to
//     what dtable holds (zeros, or another gradient of the same tied weight such as the LM head's dW). float
//     atomicAdd: where a token occurs more than once the order of its rows' additions is not deterministic,
//     so neither are the last bits (a token row hit k times lies within k * 2^-24 * (|dtable| + sum |dy|) of
//     the exact sum).
//   dpositions [seq, hidden] (float32 or bfloat16; data null: not wanted): dpositions[s, :] = sum over b of
//     dy[b * seq + s, :], WRITTEN (not accumulated), float32 from 0 in b order, then rounded once to its
//     dtype: deterministic, bit for bit the host twin's. batch == 0 writes zeros.
// At least one of dtable and dpositions. Nothing to do (no rows, and no dpositions or seq == 0): no launch.
void embedding_backward(const TokensRef& tokens, const ConstTensorRef& dy, const TensorRef& dtable, const TensorRef& dpositions,
                        cudaStream_t stream);

}  // namespace tewb::kernels
