#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/entry_points.h"
#include "tewb_kernels/tensor.h"

// Blackwell's microscaling formats, cast on any GPU (and by the host twins on any CPU):
//   MXFP8 (OCP Microscaling v1.0): E4M3 or E5M2 values, one E8M0 scale (a power of two) per 32 consecutive values
//         of a row;
//   NVFP4 (NVIDIA): E2M1 values (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) two to a byte, one E4M3 scale per
//         16 consecutive values of a row (or per 16 × 16 tile), and one float32 scale for the whole tensor;
// and the 16-point random Hadamard transform NVFP4 applies to the weight-gradient GEMM's inputs. The formulas, the
// special values and how each is checked: docs/kernels.md, "Microscaling formats".
namespace tewb::kernels {

inline constexpr std::size_t kMxfp8BlockSize = 32;
inline constexpr std::size_t kNvfp4BlockSize = 16;

// The block scales of a [rows, cols] tensor as cuBLASLt's block-scaled GEMMs read them (VEC32_UE8M0 for MXFP8,
// VEC16_UE4M3 for NVFP4): one byte per (row, block of the row), rows padded to a multiple of 128 and blocks to a
// multiple of 4, in 512-byte tiles of 128 rows × 4 blocks stored tile row by tile row; within a tile the scale of
// (row r, block c) sits at (r % 32) · 16 + (r % 128) / 32 · 4 + c % 4. Padding bytes are written as 0. A transposed
// copy's scales are laid out the same way for the transposed matrix.
constexpr std::size_t mx_scale_rows(std::size_t rows) {
    return (rows + 127) / 128 * 128;
}
constexpr std::size_t mx_scale_cols(std::size_t cols, std::size_t block_size) {
    return ((cols + block_size - 1) / block_size + 3) / 4 * 4;
}
constexpr std::size_t mx_scale_offset(std::size_t row, std::size_t block, std::size_t scale_cols) {
    return ((row / 128) * (scale_cols / 4) + block / 4) * 512 + (row % 32) * 16 + (row % 128) / 32 * 4 + block % 4;
}

// How an NVFP4 cast rounds and blocks.
struct Nvfp4Cast {
    // One scale per 16 × 16 tile (Transformer Engine's choice for weights: the row-wise and the transposed copy then
    // share their scales) instead of one per 16 values of a row.
    bool tiles_16x16 = false;
    // Stochastic rounding (Transformer Engine's choice for gradients): a value between two neighbours a < hi rounds
    // up with probability (|v| - a) / (hi - a), from 24 random bits of Philox4x32-10 keyed by `seed`; the value at
    // row-major index i of the data draws counter (offset + i) / 4, word (offset + i) % 4, and the transposed copy's
    // value at index j draws offset + rows · cols + j. So a cast's bits depend on (seed, offset) only, never on how
    // the work is split. Otherwise round to nearest, ties to even.
    bool stochastic_rounding = false;
    std::uint64_t seed = 0;
    std::uint64_t offset = 0;
};

// Transformer Engine's sign vector for the 16-point transform (bit i set: entry i is -1).
inline constexpr std::uint16_t kHadamardSigns = 0xD7E8;

}  // namespace tewb::kernels

TEWB_ENTRY_POINTS(
// MXFP8. x [rows, cols]: float32 or bfloat16. out [rows, cols]: E4M3 or E5M2; its scales (dtype E8M0, shaped
// [mx_scale_rows(rows), mx_scale_cols(cols, 32)]) in mx_scale_offset's layout; out.amax, when set, combined with
// max |x| (a NaN wins). out_transposed [cols, rows] with scales_transposed ([mx_scale_rows(cols), mx_scale_cols(rows,
// 32)]): the same values cast along the columns of x (each of its rows blocked on its own), same dtype as out; data
// null: not wanted. Per block of up to 32 values (the last block of a row may be shorter), the OCP rule: with m the
// largest |v|, the scale is X = 2^(floor(log2 m) - emax), emax 8 for E4M3 and 15 for E5M2, its exponent clamped to
// [-127, 127]; a block of zeros gets 2^-127 (code 0); a NaN or an infinity makes the block's scale NaN (code 0xFF)
// and every value in it NaN. Each value is v / X rounded to nearest even and saturated to the format's largest
// finite value (m / X lies in [2^emax, 2^(emax + 1)), so the block's largest values above 448 (E4M3) saturate).
// Every pointer aligned to its element; one launch per output.
void mxfp8_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, Stream stream);

// NVFP4. x [rows, cols]: float32 or bfloat16, x.amax required (read): max |x| of the whole tensor, as abs_max
// leaves it. out: E2M1x2 [rows, ceil(cols / 2)], value 2i of a row in the low four bits of byte i, an odd row's last
// high nibble 0; scales: E4M3 [mx_scale_rows(rows), mx_scale_cols(cols, 16)] in mx_scale_offset's layout; out.scale_inv
// (required) receives the tensor's decode scale s_dec. out_transposed/scales_transposed: the same for x's transpose
// ([cols, ceil(rows / 2)] and [mx_scale_rows(cols), mx_scale_cols(rows, 16)]), the same s_dec; data null: not wanted.
// As Transformer Engine computes it, in float32: s_enc = min(448 · 6 / amax, FLT_MAX) (1 where amax is 0 or that is
// 0; a NaN amax gives FLT_MAX), s_dec = 1 / s_enc; per block of up to 16 values (16 × 16 with tiles_16x16) with b
// its largest |v|, the scale sf = e4m3(b · (s_enc · (1 / 6))) (nearest even, saturated to 448, NaN kept), each value
// e2m1(v · min(1 / (sf · s_dec), FLT_MAX)) (nearest even or stochastic, |v| above 6 saturated to 6, NaN to +6, the
// sign kept: -0 is 0x8, as CUDA's conversion writes it). A value decodes as e2m1 · sf · s_dec. One launch per output.
void nvfp4_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, const Nvfp4Cast& options, Stream stream);

// The 16-point random Hadamard transform of each run of 16 values along x's rows: y_j = (Σ_i s_i x_i H_ij) / 4 with
// H the Sylvester Hadamard matrix (H_ij = (-1)^popcount(i & j)) and s_i = -1 where bit i of `signs` is set. The sum
// runs over i = 0..15 in float32 in that order, then the exact division by 4. x, out [rows, cols], cols a multiple
// of 16, float32 or bfloat16 each; out may be x itself. Orthogonal: applied to both inputs of a GEMM along k, it
// leaves their product as it was (up to rounding). One launch.
void hadamard16(const Tensor& x, const Tensor& out, std::uint16_t signs, Stream stream);
)
