#pragma once

// The host casts (tewb_kernels/cast.h) called with raw buffers, as the cast suites' cases are written: each call
// builds the tensors its entry point takes, so a case reads as the buffers it checks.
#include <cstddef>

#include "cast/cast_items.h"
#include "common/fp8_output.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"

namespace tewb::test::calls {

using kernels::DType;
using kernels::Fp8Type;
using kernels::Tensor;
// A block cast's outputs as buffers (the kernels' own view of them, cast/cast_items.h).
using BlockCastOutput = kernels::detail::BlockCastOutput;

// An FP8 output's buffers: data, its transposed copy, scale, amax and type (the kernels' own view of one).
using Fp8Out = kernels::detail::Fp8Output;

// A high-precision tensor's buffer and shape.
struct Buffer2d {
    const void* data = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
};

// An FP8 type's element type; a value outside Fp8Type as int64 (refused as not FP8).
inline DType fp8_or_refused(Fp8Type type) {
    return type == Fp8Type::E4M3 || type == Fp8Type::E5M2 ? kernels::fp8_dtype(type) : DType::Int64;
}

inline Tensor as_tensor(const Buffer2d& b) {
    return kernels::input(b.data, b.dtype, b.rows, b.cols);
}

inline Tensor fp8_out(const Fp8Out& o, std::size_t rows, std::size_t cols) {
    Tensor t = kernels::input(o.data, fp8_or_refused(o.type), rows, cols);
    t.transposed = o.transposed;
    t.scale = const_cast<float*>(o.scale);
    t.amax = o.amax;
    return t;
}

inline void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type type, float* amax) {
    kernels::host::cast_to_fp8(kernels::input(x, dtype, 1, n), fp8_out({out, nullptr, scale, amax, type}, 1, n), {});
}

inline void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                                  void* out_t, Fp8Type type, float* amax) {
    kernels::host::cast_transpose_to_fp8(kernels::input(x, dtype, rows, cols), fp8_out({out, out_t, scale, amax, type}, rows, cols),
                                         {});
}

inline void cast_transpose_dbias_to_fp8(const Buffer2d& x, const Fp8Out& out, const Buffer2d& dbias,
                                        const kernels::Workspace& workspace) {
    kernels::host::cast_transpose_dbias_to_fp8(as_tensor(x), fp8_out(out, x.rows, x.cols), as_tensor(dbias), workspace, {});
}

// element_bytes 1, 2 and 4 as an FP8, a bfloat16 and a float32 tensor; any other as int64 (refused).
inline void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out) {
    const DType dtype = element_bytes == 1   ? DType::Float8E4M3
                        : element_bytes == 2 ? DType::BFloat16
                        : element_bytes == 4 ? DType::Float32
                                             : DType::Int64;
    kernels::host::transpose(kernels::input(x, dtype, rows, cols), kernels::input(out, dtype, cols, rows), {});
}

// block_rows 1 and 128 as their scale layouts; any other as a per-tensor scale (refused).
inline kernels::ScaleMode block_mode(int block_rows) {
    return block_rows == 1 ? kernels::ScaleMode::Block1x128
           : block_rows == 128 ? kernels::ScaleMode::Block128x128
                               : kernels::ScaleMode::Tensor;
}

inline Tensor block_out(const BlockCastOutput& o, std::size_t rows, std::size_t cols, int block_rows) {
    Tensor t = kernels::input(o.data, fp8_or_refused(o.type), rows, cols);
    t.scale_inv = o.scale_inv;
    t.transposed = o.transposed;
    t.transposed_scale_inv = o.transposed_scale_inv;
    t.amax = o.amax;
    t.scale_mode = block_mode(block_rows);
    return t;
}

inline void block_cast_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                              const BlockCastOutput& out) {
    const Tensor dbias = out.dbias != nullptr ? kernels::input(out.dbias, DType::Float32, 1, cols) : Tensor{};
    kernels::host::block_cast_to_fp8(kernels::input(x, dtype, rows, cols), block_out(out, rows, cols, block_rows), power_of_two,
                                     dbias, {out.dbias_workspace, out.dbias_workspace_bytes}, {});
}

}  // namespace tewb::test::calls
