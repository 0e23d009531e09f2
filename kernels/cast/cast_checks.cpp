#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cast/cast_dbias_geometry.h"
#include "cast/cast_items.h"
#include "cast/row_sources.h"
#include "common/arguments.h"
#include "common/fail.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::detail {

namespace {

void check_input(const char* call, const Tensor& x) {
    if (x.dtype != DType::Float32 && x.dtype != DType::BFloat16 && x.dtype != DType::Float16) {
        fail(call, "x has dtype " + std::string(to_string(x.dtype)) + "; allowed: float32, bfloat16, float16");
    }
    check_buffer(call, x.data, "x", element_size(x.dtype));
}

// An FP8 output's type, scale and amax (what every per-tensor cast reads of it, whatever its size).
void check_fp8_scaling(const char* call, const Tensor& out) {
    if (!is_fp8(out.dtype)) fail(call, "out has dtype " + std::string(to_string(out.dtype)) + "; allowed: E4M3, E5M2");
    check_buffer(call, out.scale, "out.scale", alignof(float));
    if (out.amax != nullptr) check_buffer(call, out.amax, "out.amax", alignof(float));
}

void check_fp8_shape(const char* call, const Tensor& x, const Tensor& out) {
    check_shape(call, out, "out", x.rows, x.cols);
}

void check_cast_transpose_outputs(const char* call, const Tensor& out) {
    check_buffer(call, out.data, "out", 1);
    check_buffer(call, out.transposed, "out.transposed", 1);
    if (out.data == out.transposed) fail(call, "out and out.transposed are the same buffer");
}

// The cast_dbias kernel's int indices run a row group and a column tile past the last row and column.
void check_cast_dbias_dims(const char* call, std::size_t rows, std::size_t cols) {
    constexpr auto kMaxRows = static_cast<std::size_t>(std::numeric_limits<int>::max()) - cast_dbias_geometry::kGroups;
    constexpr auto kMaxCols = static_cast<std::size_t>(std::numeric_limits<int>::max()) - cast_dbias_geometry::kTileCols;
    if (rows > kMaxRows || cols > kMaxCols) {
        fail(call, "rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + "; allowed: rows at most " +
                       std::to_string(kMaxRows) + ", cols at most " + std::to_string(kMaxCols));
    }
}

// The bytes part `p` spans: its last row ends (rows - 1) strides and cols elements after its start.
std::size_t part_span_bytes(const Tensor& p) {
    return p.rows == 0 || p.cols == 0 ? 0 : ((p.rows - 1) * p.stride() + p.cols) * element_size(p.dtype);
}

// The parts of a stacked cast ("parts[i] ..."), and x [rows, count · cols] as the dense call would see it.
Tensor check_stacked_parts(const char* call, const Tensor* parts, std::size_t count, bool half_allowed) {
    if (count < 1 || count > kMaxStackedParts) {
        fail(call, "count = " + std::to_string(count) + "; allowed: 1 to " + std::to_string(kMaxStackedParts));
    }
    if (parts == nullptr) fail(call, "parts is null");
    const Tensor& first = parts[0];
    for (std::size_t i = 0; i < count; ++i) {
        const Tensor& p = parts[i];
        const std::string name = "parts[" + std::to_string(i) + "]";
        if (half_allowed) {
            if (p.dtype != DType::Float32 && p.dtype != DType::BFloat16 && p.dtype != DType::Float16) {
                fail(call, name + " has dtype " + std::string(to_string(p.dtype)) + "; allowed: float32, bfloat16, float16");
            }
        } else {
            check_float_or_bf16(call, p.dtype, name);
        }
        if (i > 0) {
            check_same_dtype(call, p.dtype, name, first.dtype, "parts[0]");
            check_shape(call, p, name, first.rows, first.cols);
        }
        if (p.row_stride != 0 && p.row_stride < p.cols) {
            fail(call, name + ".row_stride = " + std::to_string(p.row_stride) + "; allowed: 0 or at least cols (" +
                           std::to_string(p.cols) + ")");
        }
    }
    if (first.cols > 0 && count > std::numeric_limits<std::size_t>::max() / first.cols) fail(call, "count · cols overflows");
    Tensor x = input(first.data, first.dtype, first.rows, first.cols * count);
    check_dims(call, x.rows, x.cols);
    if (x.rows == 0 || x.cols == 0) return x;
    for (std::size_t i = 0; i < count; ++i) {
        const Tensor& p = parts[i];
        const std::string name = "parts[" + std::to_string(i) + "]";
        check_buffer(call, p.data, name, element_size(p.dtype));
        if (p.stride() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
            fail(call, name + ".row_stride = " + std::to_string(p.stride()) + "; allowed: at most 2^31 - 1");
        }
    }
    return x;
}

// No part shares a byte with [data, data + bytes) (an output).
void check_parts_apart(const char* call, const Tensor* parts, std::size_t count, const void* data, std::size_t bytes,
                       std::string_view name) {
    for (std::size_t i = 0; i < count; ++i) {
        if (overlap(parts[i].data, part_span_bytes(parts[i]), data, bytes)) {
            fail(call, "parts[" + std::to_string(i) + "] and " + std::string(name) + " overlap");
        }
    }
}

}  // namespace

bool stacked_parts_aligned(const Tensor* parts, std::size_t count, std::size_t bytes) {
    for (std::size_t i = 0; i < count; ++i) {
        const auto address = reinterpret_cast<std::uintptr_t>(parts[i].data);
        if (address % bytes != 0 || (parts[i].stride() * element_size(parts[i].dtype)) % bytes != 0) return false;
    }
    return true;
}

Tensor check_stacked_cast_dbias(const char* call, const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias,
                                const Workspace& workspace) {
    const Tensor x = check_stacked_parts(call, parts, count, /*half_allowed=*/false);
    check_cast_dbias_dims(call, x.rows, x.cols);
    check_float_or_bf16(call, out.dtype, "out");
    check_shape(call, out, "out", x.rows, x.cols);
    check_float_or_bf16(call, dbias.dtype, "dbias");
    check_shape(call, dbias, "dbias", 1, x.cols);
    if (x.rows == 0 || x.cols == 0) return x;
    const std::size_t out_bytes = x.numel() * element_size(out.dtype);
    const std::size_t dbias_bytes = x.cols * element_size(dbias.dtype);
    check_buffer(call, out.data, "out (the stacked copy is required)", element_size(out.dtype));
    check_buffer(call, dbias.data, "dbias", element_size(dbias.dtype));
    if (overlap(out.data, out_bytes, dbias.data, dbias_bytes)) fail(call, "out and dbias overlap");
    const std::size_t needed = cast_dbias_workspace_bytes(x.rows, x.cols);
    check_workspace(call, workspace.data, workspace.bytes, needed, "cast_dbias_workspace_bytes");
    if (overlap(workspace.data, needed, dbias.data, dbias_bytes)) fail(call, "dbias and the workspace overlap");
    check_parts_apart(call, parts, count, out.data, out_bytes, "out");
    check_parts_apart(call, parts, count, dbias.data, dbias_bytes, "dbias");
    check_parts_apart(call, parts, count, workspace.data, needed, "the workspace");
    return x;
}

Tensor check_stacked_cast_transpose_dbias(const char* call, const Tensor* parts, std::size_t count, const Tensor& out,
                                          const Tensor& dbias, const Workspace& workspace) {
    const Tensor x = check_stacked_parts(call, parts, count, /*half_allowed=*/true);
    if (dbias.data != nullptr) {
        check_cast_transpose_dbias(call, x, out, dbias, workspace);
    } else {
        check_cast_transpose(call, x, out);
    }
    if (x.rows == 0 || x.cols == 0) return x;
    check_parts_apart(call, parts, count, out.data, x.numel(), "out");
    check_parts_apart(call, parts, count, out.transposed, x.numel(), "out.transposed");
    if (dbias.data != nullptr) {
        check_parts_apart(call, parts, count, dbias.data, x.cols * element_size(dbias.dtype), "dbias");
        check_parts_apart(call, parts, count, workspace.data, cast_transpose_dbias_workspace_bytes(x.rows, x.cols), "the workspace");
    }
    return x;
}

int block_rows(const Tensor& out) {
    return out.scale_mode == ScaleMode::Block128x128 ? 128 : 1;
}

void check_cast(const char* call, const Tensor& x, const Tensor& out) {
    check_fp8_scaling(call, out);
    if (out.numel() != x.numel()) {
        fail(call, "out has " + std::to_string(out.numel()) + " elements; allowed: x's " + std::to_string(x.numel()));
    }
    if (x.numel() == 0) return;
    check_input(call, x);
    check_buffer(call, out.data, "out", 1);
}

void check_cast_transpose(const char* call, const Tensor& x, const Tensor& out) {
    check_fp8_scaling(call, out);
    check_dims(call, x.rows, x.cols);
    check_fp8_shape(call, x, out);
    if (x.rows == 0 || x.cols == 0) return;
    check_input(call, x);
    check_cast_transpose_outputs(call, out);
}

void check_cast_transpose_dbias(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias,
                                const Workspace& workspace) {
    check_fp8_scaling(call, out);
    check_dims(call, x.rows, x.cols);
    check_fp8_shape(call, x, out);
    check_float_or_bf16(call, dbias.dtype, "dbias");
    check_shape(call, dbias, "dbias", 1, x.cols);
    if (x.rows == 0 || x.cols == 0) return;
    check_input(call, x);
    check_cast_transpose_outputs(call, out);
    check_buffer(call, dbias.data, "dbias", element_size(dbias.dtype));
    check_workspace(call, workspace.data, workspace.bytes, cast_transpose_dbias_workspace_bytes(x.rows, x.cols),
                    "cast_transpose_dbias_workspace_bytes");
}

void check_cast_dbias(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace) {
    check_cast_dbias_dims(call, x.rows, x.cols);
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
    const std::size_t needed = cast_dbias_workspace_bytes(x.rows, x.cols);
    check_workspace(call, workspace.data, workspace.bytes, needed, "cast_dbias_workspace_bytes");
    if (overlap(workspace.data, needed, dbias.data, dbias_bytes)) fail(call, "dbias and the workspace overlap");
}

void check_transpose(const char* call, const Tensor& x, const Tensor& out) {
    const std::size_t element_bytes = element_size(x.dtype);
    if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4) {
        fail(call, "x has dtype " + std::string(to_string(x.dtype)) + "; allowed: one of 1, 2 or 4 bytes");
    }
    check_same_dtype(call, out.dtype, "out", x.dtype, "x");
    check_dims(call, x.rows, x.cols);
    check_shape(call, out, "out", x.cols, x.rows);
    if (x.rows == 0 || x.cols == 0) return;
    check_buffer(call, x.data, "x", element_bytes);
    check_buffer(call, out.data, "out", element_bytes);
    if (x.data == out.data) fail(call, "x and out are the same buffer (the transpose is not in place)");
}

void check_block_cast(const char* call, const Tensor& x, const Tensor& out, const Tensor& dbias,
                      const Workspace& dbias_workspace) {
    if (out.scale_mode != ScaleMode::Block1x128 && out.scale_mode != ScaleMode::Block128x128) {
        fail(call, "out.scale_mode is per tensor; allowed: Block1x128 or Block128x128");
    }
    if (!is_fp8(out.dtype)) fail(call, "out has dtype " + std::string(to_string(out.dtype)) + "; allowed: E4M3, E5M2");
    check_dims(call, x.rows, x.cols);
    check_shape(call, out, "out", x.rows, x.cols);
    if ((out.transposed == nullptr) != (out.transposed_scale_inv == nullptr)) {
        fail(call, "out.transposed and out.transposed_scale_inv come together (one of them is null)");
    }
    if (dbias.data != nullptr) {
        if (dbias.dtype != DType::Float32) fail(call, "dbias has dtype " + std::string(to_string(dbias.dtype)) + "; allowed: float32");
        check_shape(call, dbias, "dbias", 1, x.cols);
    }
    if (x.rows == 0 || x.cols == 0) return;
    // One thread block per 128 x 128 tile, in a one-dimensional grid.
    const std::size_t tiles = ((x.rows + 127) / 128) * ((x.cols + 127) / 128);
    if (tiles > 0x7fffffffu) fail(call, std::to_string(tiles) + " tiles of 128 x 128; allowed: at most 2^31 - 1");
    check_input(call, x);
    check_buffer(call, out.data, "out", 1);
    check_buffer(call, out.scale_inv, "out.scale_inv", alignof(float));
    if (out.transposed != nullptr) {
        check_buffer(call, out.transposed, "out.transposed", 1);
        check_buffer(call, out.transposed_scale_inv, "out.transposed_scale_inv", alignof(float));
        if (out.transposed == out.data) fail(call, "out and out.transposed are the same buffer");
        if (out.transposed_scale_inv == out.scale_inv) fail(call, "out.scale_inv and out.transposed_scale_inv are the same buffer");
    }
    if (out.amax != nullptr) check_buffer(call, out.amax, "out.amax", alignof(float));
    if (dbias.data != nullptr) {
        check_buffer(call, dbias.data, "dbias", alignof(float));
        const std::size_t needed = block_cast_dbias_workspace_bytes(x.rows, x.cols);
        if (dbias_workspace.bytes < needed) {
            fail(call, "dbias_workspace of " + std::to_string(dbias_workspace.bytes) + " bytes; needed: " +
                           std::to_string(needed) + " (block_cast_dbias_workspace_bytes)");
        }
        check_buffer(call, dbias_workspace.data, "dbias_workspace", alignof(float));
        if (dbias_workspace.data == dbias.data) fail(call, "dbias and dbias_workspace are the same buffer");
    }
}

BlockCastOutput block_cast_output(const Tensor& out, const Tensor& dbias, const Workspace& dbias_workspace) {
    BlockCastOutput o;
    o.data = out.data;
    o.scale_inv = out.scale_inv;
    o.transposed = out.transposed;
    o.transposed_scale_inv = out.transposed_scale_inv;
    o.amax = out.amax;
    o.type = fp8_type(out);
    o.dbias = static_cast<float*>(dbias.data);
    o.dbias_workspace = dbias.data != nullptr ? dbias_workspace.data : nullptr;
    o.dbias_workspace_bytes = dbias.data != nullptr ? dbias_workspace.bytes : 0;
    return o;
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return detail::cast_transpose_dbias_chunks(rows) * cols * sizeof(float);
}

std::size_t cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return detail::cast_dbias_geometry::chunks(rows) * cols * sizeof(float);
}

std::size_t block_cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    const std::size_t row_tiles = std::max<std::size_t>((rows + 127) / 128, 1);
    return row_tiles * cols * sizeof(float);
}

}  // namespace tewb::kernels
