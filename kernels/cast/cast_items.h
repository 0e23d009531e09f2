#pragma once

// What the cast kernels and their host twins work on once an entry point has checked its tensors: the block
// cast's outputs as one value (a kernel parameter) and the multi-tensor casts' items. Internal to kernels/cast;
// no CUDA here.
#include <cstddef>
#include <utility>
#include <vector>

#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels::detail {

// Where a block cast writes (block_cast_to_fp8's out, dbias and workspace), for x [rows, cols] in blocks of
// block_rows × 128; the pointers are the tensors' (cast.h says what each holds).
struct BlockCastOutput {
    void* data = nullptr;
    float* scale_inv = nullptr;
    void* transposed = nullptr;
    float* transposed_scale_inv = nullptr;
    float* amax = nullptr;
    Fp8Type type = Fp8Type::E4M3;
    float* dbias = nullptr;
    void* dbias_workspace = nullptr;
    std::size_t dbias_workspace_bytes = 0;
};

// Rows of partial column sums cast_transpose_dbias_to_fp8 writes: its tile rows of 32 walked by at most 64 blocks
// per column tile (its workspace holds chunks * cols floats).
inline constexpr std::size_t kCastTransposeDbiasMaxChunks = 64;
constexpr std::size_t cast_transpose_dbias_chunks(std::size_t rows) {
    const std::size_t tiles = (rows + 31) / 32;
    return tiles < 1 ? 1 : tiles > kCastTransposeDbiasMaxChunks ? kCastTransposeDbiasMaxChunks : tiles;
}

// A block cast's checked out, dbias and workspace as the kernels take them.
BlockCastOutput block_cast_output(const Tensor& out, const Tensor& dbias, const Workspace& dbias_workspace);

// One tensor of a multi-tensor cast + transpose: x [rows, cols] in `dtype`, cast with its own scale into out
// [rows, cols] and out_t [cols, rows], its amax combined into amax[0] when not null.
struct CastTransposeItem {
    const void* x = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    const float* scale = nullptr;
    void* out = nullptr;
    void* out_t = nullptr;
    Fp8Type type = Fp8Type::E4M3;
    float* amax = nullptr;
};

// One tensor of a multi-tensor block cast: x [rows, cols] (the call's dtype) and where its cast goes.
struct BlockCastItem {
    const void* x = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
    BlockCastOutput out;
};

// The multi-tensor casts' tensors (cast_multi.h), each checked as the one-tensor cast checks its arguments (the
// message names the tensor's index), x and out not null when count > 0; the tensors with elements, in order. The
// block cast's also need one dtype and one scale_mode, and have no bias gradient.
std::vector<CastTransposeItem> checked_multi_items(const char* call, const Tensor* x, const Tensor* out, std::size_t count);
std::vector<BlockCastItem> checked_block_multi_items(const char* call, const Tensor* x, const Tensor* out, std::size_t count);

// The cast + transpose kernel's tile: one thread block per 64 x 64 tile of an item.
constexpr std::size_t kCastMultiTile = 64;
std::size_t multi_tiles(const CastTransposeItem& item);
// One thread block per 128 x 128 tile of an item.
std::size_t block_multi_tiles(const BlockCastItem& item);

// How the checked items go into launches, as [first, last) ranges: at most kCastMultiItemsPerLaunch items and at
// most 2^31 - 1 tiles each (a grid's limit). The kernels launch these; the host twins count them.
std::vector<std::pair<std::size_t, std::size_t>> multi_launches(const std::vector<CastTransposeItem>& work);
std::vector<std::pair<std::size_t, std::size_t>> block_multi_launches(const std::vector<BlockCastItem>& work);

// The stacked casts' host twins: the parts' rows side by side as one dense [rows, count · cols] matrix in their dtype
// (the parts checked first).
std::vector<unsigned char> gather_stacked(const Tensor* parts, std::size_t count);

// host::block_cast_to_fp8's work without its argument checks or its launch count: for the multi-tensor cast's
// items (cast_multi_host.cpp), which count their own launches.
void host_block_cast(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                     const BlockCastOutput& out);

}  // namespace tewb::kernels::detail
