#pragma once

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

// A model's input: a token embedding plus (GPT) a learned position embedding, rows = batch * seq.
//
// tokens is an int64 tensor [batch, seq], read strided: row r's token is
// tokens.data[(r / seq) * tokens.stride() + r % seq] (a trainer hands a narrow() of its [batch, seq + 1] token
// tensor, row_stride seq + 1). table [vocab, hidden], positions [seq, hidden] (one row per position of the
// sequence) and out [rows, hidden] are row-major in one dtype, float32 or bfloat16.
//
// A token outside [0, vocab) is not an error (a kernel cannot throw): the forward writes that out row as NaN
// (float32 0x7fc00000, bfloat16 0x7fff) and the backward leaves it out of dtable. Shapes, dtypes, null and
// misaligned pointers are argument errors (KernelError) found before any launch. Device pointers.
//
// The host twins count the launches the CUDA path makes for the same arguments: one each, none where there is
// nothing to do. Exactness against the CUDA kernels: the forward (one float32 add, one rounding) and dpositions (float32
// from 0, batches in ascending order, one rounding) bit for bit; an out-of-range token's NaN row with the
// same bits (float32 0x7fc00000, bfloat16 0x7fff). dtable: the host adds the rows in index order, the GPU's
// atomics in any order, so the two agree bit for bit where each token occurs at most once and otherwise
// within the bound embedding_backward states.
TEWB_ENTRY_POINTS(
// One launch: out[r, :] = table[token(r), :] + positions[r % seq, :], a float32 add rounded once to the
// dtype (bit for bit the host twin's). positions.data null: a model without learned positions (Llama's rotary
// embeddings), out[r, :] = table[token(r), :] as stored; its shape and dtype are then not read. 16-byte loads and stores where hidden is a multiple of 16 / element
// size and table, positions and out are 16-byte aligned; one element per thread elsewhere. rows == 0 does
// nothing.
void embedding_forward(const Tensor& tokens, const Tensor& table, const Tensor& positions, const Tensor& out, Stream stream);

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
void embedding_backward(const Tensor& tokens, const Tensor& dy, const Tensor& dtable, const Tensor& dpositions, Stream stream);
)
