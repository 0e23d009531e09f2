#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"

namespace tewb::kernels {

// How an FP8 tensor's scale_inv is laid out. Tensor: one float32. The block modes are Float8BlockScaling's
// (cuBLASLt's VEC128_32F and BLK128x128_32F, Hopper only), for a tensor of `rows` rows and k columns, k a
// multiple of 128, scale_inv in the layout cuBLASLt reads:
//   Block1x128    one float32 per 128 consecutive elements of a row: [k / 128][round_up(rows, 4)], the
//                 row index contiguous (entry [kb][r] at kb · round_up(rows, 4) + r; padding unread);
//   Block128x128  one per 128 × 128 tile: [ceil(rows / 128)][round_up(k / 128, 4)], the k-block index
//                 contiguous.
// block_scale_entries (gemm_rules.cpp) gives the float32 count either needs. The microscaling modes (mx.h; cuBLASLt's
// VEC32_UE8M0 and VEC16_UE4M3, compute capability 10.x) hold bytes, not float32 (scale_inv points at them all the
// same), in mx.h's layout for a tensor of `rows` rows and k values a row:
//   Mxfp8Block32  one E8M0 scale per 32 values of a row (MXFP8: E4M3 or E5M2 data);
//   Nvfp4Block16  one E4M3 scale per 16 values of a row (NVFP4: E2M1x2 data; its tensor scales go into the GEMM's
//                 alpha); block_scale_entries counts their bytes.
enum class ScaleMode { Tensor, Block1x128, Block128x128, Mxfp8Block32, Nvfp4Block16 };

std::size_t block_scale_entries(ScaleMode mode, std::size_t rows, std::size_t k);

// A tensor as every entry point takes it, as Transformer Engine's NVTETensor: where its elements are, their type
// and its row-major shape [rows, cols] (a vector of n elements is [1, n]; a scalar [1, 1]), and, for an FP8
// tensor, its scaling. All pointers are device pointers for the CUDA entry points and host pointers for their
// host twins. An entry point's comment says which tensors it writes and which of the optional members it reads
// or writes; a member it does not name is not looked at. A tensor whose data may be null ("not wanted") says so
// there too; its dtype and shape are then not looked at.
struct Tensor {
    void* data = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    // FP8 (and amax-tracked) tensors: data = fp8(y * scale[0]) when written; y = data * scale_inv[0] when read
    // (block-scaled: scale_inv in scale_mode's layout); max |y| combined into amax[0] (the larger kept, a NaN
    // wins) when written.
    float* scale = nullptr;
    float* scale_inv = nullptr;
    float* amax = nullptr;
    ScaleMode scale_mode = ScaleMode::Tensor;
    // The same values as [cols, rows] (Transformer Engine's columnwise copy), and its block scales.
    void* transposed = nullptr;
    float* transposed_scale_inv = nullptr;
    // Elements between the starts of two rows when more than cols (0: cols, the rows are contiguous); a narrow()
    // of a wider matrix, such as a trainer's [batch, seq + 1] token batch read as [batch, seq].
    std::size_t row_stride = 0;

    std::size_t numel() const { return rows * cols; }
    std::size_t stride() const { return row_stride == 0 ? cols : row_stride; }
};

// A tensor the call only reads: the one place a const pointer becomes a Tensor's data (an entry point
// takes every tensor as const Tensor& and writes only those its comment names).
inline Tensor input(const void* data, DType dtype, std::size_t rows, std::size_t cols) {
    Tensor t;
    t.data = const_cast<void*>(data);
    t.dtype = dtype;
    t.rows = rows;
    t.cols = cols;
    return t;
}

// Where a call runs: a CUDA stream handle for the CUDA entry points, opaque so that no header needs CUDA;
// the host twins run on the calling thread and do not look at it.
struct Stream {
    void* handle = nullptr;
};

// Scratch memory the caller owns: at least what the entry point's *_workspace_bytes function returns.
struct Workspace {
    void* data = nullptr;
    std::size_t bytes = 0;
};

}  // namespace tewb::kernels
