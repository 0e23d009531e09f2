#include "cast/cast_arguments.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cast/cast_dbias_geometry.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto begin_a = reinterpret_cast<std::uintptr_t>(a);
    const auto begin_b = reinterpret_cast<std::uintptr_t>(b);
    return begin_a < begin_b + b_bytes && begin_b < begin_a + a_bytes;
}

void check_input(const char* call, const void* x, DType dtype) {
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
        fail(call, "unsupported input dtype (allowed: float32, bfloat16, float16)");
    }
    check_buffer(call, x, "x", element_size(dtype));
}

void check_fp8_outputs(const char* call, const float* scale, Fp8Type type, const float* amax) {
    if (type != Fp8Type::E4M3 && type != Fp8Type::E5M2) fail(call, "unsupported FP8 type (allowed: E4M3, E5M2)");
    check_buffer(call, scale, "scale", alignof(float));
    if (amax != nullptr) check_buffer(call, amax, "amax", alignof(float));
}

void check_cast_transpose_outputs(const char* call, const void* out, const void* out_t) {
    check_buffer(call, out, "out", 1);
    check_buffer(call, out_t, "out_t", 1);
    if (out == out_t) fail(call, "out and out_t are the same buffer");
}

}  // namespace

void check_cast_arguments(const char* call, const void* x, DType dtype, std::size_t n, const float* scale, const void* out,
                          Fp8Type out_type, const float* amax) {
    check_fp8_outputs(call, scale, out_type, amax);
    if (n == 0) return;
    check_input(call, x, dtype);
    check_buffer(call, out, "out", 1);
}

void check_cast_transpose_arguments(const char* call, const void* x, DType dtype, std::size_t rows, std::size_t cols,
                                    const float* scale, const void* out, const void* out_t, Fp8Type out_type, const float* amax) {
    check_fp8_outputs(call, scale, out_type, amax);
    check_dims(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    check_input(call, x, dtype);
    check_cast_transpose_outputs(call, out, out_t);
}

void check_cast_transpose_dbias_arguments(const char* call, const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                          const Workspace& workspace, std::size_t needed_workspace_bytes) {
    check_fp8_outputs(call, out.scale, out.type, out.amax);
    check_dims(call, x.rows, x.cols);
    check_float_or_bf16(call, dbias.dtype, "dbias");
    check_shape(call, dbias, "dbias", 1, x.cols);
    if (x.rows == 0 || x.cols == 0) return;
    check_input(call, x.data, x.dtype);
    check_cast_transpose_outputs(call, out.data, out.transposed);
    check_buffer(call, dbias.data, "dbias", element_size(dbias.dtype));
    check_workspace(call, workspace.data, workspace.bytes, needed_workspace_bytes, "cast_transpose_dbias_workspace_bytes");
}

void check_cast_dbias_arguments(const char* call, const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias,
                                const Workspace& workspace) {
    // The kernel's int indices run a row group and a column tile past the last row and column.
    constexpr auto kMaxRows = static_cast<std::size_t>(std::numeric_limits<int>::max()) - cast_dbias_geometry::kGroups;
    constexpr auto kMaxCols = static_cast<std::size_t>(std::numeric_limits<int>::max()) - cast_dbias_geometry::kTileCols;
    if (x.rows > kMaxRows || x.cols > kMaxCols) {
        fail(call, "rows = " + std::to_string(x.rows) + ", cols = " + std::to_string(x.cols) + "; allowed: rows at most " +
                       std::to_string(kMaxRows) + ", cols at most " + std::to_string(kMaxCols));
    }
    check_float_or_bf16(call, x.dtype, "x");
    if (out.data != nullptr) {
        check_float_or_bf16(call, out.dtype, "out");
        check_shape(call, out, "out", x.rows, x.cols);
    }
    check_float_or_bf16(call, dbias.dtype, "dbias");
    check_shape(call, dbias, "dbias", 1, x.cols);
    if (x.rows == 0 || x.cols == 0) return;
    check_buffer(call, x.data, "x", element_size(x.dtype));
    const std::size_t x_bytes = x.rows * x.cols * element_size(x.dtype);
    const std::size_t dbias_bytes = x.cols * element_size(dbias.dtype);
    if (out.data != nullptr) {
        check_buffer(call, out.data, "out", element_size(out.dtype));
        if (overlap(x.data, x_bytes, out.data, x.rows * x.cols * element_size(out.dtype))) {
            fail(call, "x and out overlap (the cast is not in place)");
        }
        if (overlap(out.data, x.rows * x.cols * element_size(out.dtype), dbias.data, dbias_bytes)) fail(call, "out and dbias overlap");
    }
    check_buffer(call, dbias.data, "dbias", element_size(dbias.dtype));
    if (overlap(x.data, x_bytes, dbias.data, dbias_bytes)) fail(call, "x and dbias overlap");
    const std::size_t needed = cast_dbias_workspace(x.rows, x.cols);
    check_workspace(call, workspace.data, workspace.bytes, needed, "cast_dbias_workspace_bytes");
    if (overlap(workspace.data, needed, dbias.data, dbias_bytes)) fail(call, "dbias and the workspace overlap");
}

std::size_t cast_dbias_workspace(std::size_t rows, std::size_t cols) {
    return cast_dbias_geometry::chunks(rows) * cols * sizeof(float);
}

void check_transpose_arguments(const char* call, const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols,
                               const void* out) {
    if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4) {
        fail(call, "element_bytes = " + std::to_string(element_bytes) + "; allowed: 1, 2 or 4");
    }
    check_dims(call, rows, cols);
    if (rows == 0 || cols == 0) return;
    check_buffer(call, x, "x", element_bytes);
    check_buffer(call, out, "out", element_bytes);
    if (x == out) fail(call, "x and out are the same buffer (the transpose is not in place)");
}

void check_block_cast_arguments(const char* call, const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows,
                                const BlockCastOutput& out) {
    if (block_rows != 1 && block_rows != 128) {
        fail(call, "block_rows = " + std::to_string(block_rows) + "; allowed: 1 (1x128 blocks) or 128 (128x128)");
    }
    if (out.type != Fp8Type::E4M3 && out.type != Fp8Type::E5M2) fail(call, "unsupported FP8 type (allowed: E4M3, E5M2)");
    check_dims(call, rows, cols);
    if ((out.transposed == nullptr) != (out.transposed_scale_inv == nullptr)) {
        fail(call, "transposed and transposed_scale_inv come together (one of them is null)");
    }
    if (rows == 0 || cols == 0) return;
    // One thread block per 128 x 128 tile, in a one-dimensional grid.
    const std::size_t tiles = ((rows + 127) / 128) * ((cols + 127) / 128);
    if (tiles > 0x7fffffffu) fail(call, std::to_string(tiles) + " tiles of 128 x 128; allowed: at most 2^31 - 1");
    check_input(call, x, dtype);
    check_buffer(call, out.data, "data", 1);
    check_buffer(call, out.scale_inv, "scale_inv", alignof(float));
    if (out.transposed != nullptr) {
        check_buffer(call, out.transposed, "transposed", 1);
        check_buffer(call, out.transposed_scale_inv, "transposed_scale_inv", alignof(float));
        if (out.transposed == out.data) fail(call, "data and transposed are the same buffer");
        if (out.transposed_scale_inv == out.scale_inv) fail(call, "scale_inv and transposed_scale_inv are the same buffer");
    }
    if (out.amax != nullptr) check_buffer(call, out.amax, "amax", alignof(float));
    if (out.dbias != nullptr) {
        check_buffer(call, out.dbias, "dbias", alignof(float));
        const std::size_t needed = block_cast_dbias_workspace(rows, cols);
        if (out.dbias_workspace_bytes < needed) {
            fail(call, "dbias_workspace_bytes = " + std::to_string(out.dbias_workspace_bytes) + "; needed: " +
                           std::to_string(needed) + " (block_cast_dbias_workspace_bytes)");
        }
        check_buffer(call, out.dbias_workspace, "dbias_workspace", alignof(float));
        if (out.dbias_workspace == out.dbias) fail(call, "dbias and dbias_workspace are the same buffer");
    }
}

std::size_t block_cast_dbias_workspace(std::size_t rows, std::size_t cols) {
    const std::size_t row_tiles = std::max<std::size_t>((rows + 127) / 128, 1);
    return row_tiles * cols * sizeof(float);
}

}  // namespace tewb::kernels::detail
