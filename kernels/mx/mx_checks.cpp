#include <cstdint>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "mx/mx_call.h"

namespace tewb::kernels::detail {

namespace {

void check_input(const char* call, const Tensor& x) {
    check_float_or_bf16(call, x.dtype, "x");
    check_dims(call, x.rows, x.cols);
    if (x.stride() != x.cols) fail(call, "x has a row stride; allowed: contiguous rows");
    if (x.numel() > 0) check_buffer(call, x.data, "x", element_size(x.dtype));
}

// One output and its scales: the values `dtype`-typed and [rows, value_cols], the scales `scale_dtype`-typed in mx.h's
// layout for `block_size`-value blocks of [rows, cols] values.
MxOutput output(const char* call, const Tensor& out, const Tensor& scales, const std::string& name, DType scale_dtype,
                std::size_t rows, std::size_t cols, std::size_t value_cols, std::size_t block_size) {
    MxOutput o;
    o.rows = rows;
    o.cols = cols;
    o.scale_cols = mx_scale_cols(cols, block_size);
    if (out.data == nullptr) return {};
    check_shape(call, out, name, rows, value_cols);
    if (out.stride() != out.cols) fail(call, name + " has a row stride; allowed: contiguous rows");
    const std::string scales_name = name == "out" ? "scales" : "scales_transposed";
    if (scales.dtype != scale_dtype) {
        fail(call, scales_name + " has dtype " + std::string(to_string(scales.dtype)) + "; allowed: " +
                       std::string(to_string(scale_dtype)));
    }
    if (scales.rows != mx_scale_rows(rows) || scales.cols != o.scale_cols) {
        fail(call, scales_name + " is " + shape_text(scales.rows, scales.cols) + "; allowed: " +
                       shape_text(mx_scale_rows(rows), o.scale_cols) + " (rows padded to 128, blocks to 4: mx.h)");
    }
    if (rows > 0 && cols > 0) {
        check_buffer(call, out.data, name, 1);
        check_buffer(call, scales.data, scales_name, 1);
    }
    o.data = static_cast<std::uint8_t*>(out.data);
    o.scales = static_cast<std::uint8_t*>(scales.data);
    return o;
}

}  // namespace

Mxfp8CastCall mxfp8_cast_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& scales,
                              const Tensor& out_transposed, const Tensor& scales_transposed) {
    check_input(call, x);
    if (!is_fp8(out.dtype)) fail(call, "out has dtype " + std::string(to_string(out.dtype)) + "; allowed: E4M3, E5M2");
    if (out.data == nullptr && x.numel() > 0) fail(call, "out is a null pointer");
    Mxfp8CastCall c;
    c.x = x.data;
    c.x_dtype = x.dtype;
    c.rows = x.rows;
    c.cols = x.cols;
    c.type = fp8_type(out);
    c.emax = c.type == Fp8Type::E4M3 ? 8 : 15;
    if (out.amax != nullptr) check_buffer(call, out.amax, "out.amax", alignof(float));
    c.amax = out.amax;
    c.rowwise = output(call, out, scales, "out", DType::Float8E8M0, x.rows, x.cols, x.cols, kMxfp8BlockSize);
    if (out_transposed.data != nullptr) {
        check_same_dtype(call, out_transposed.dtype, "out_transposed", out.dtype, "out");
        c.columnwise = output(call, out_transposed, scales_transposed, "out_transposed", DType::Float8E8M0, x.cols, x.rows,
                              x.rows, kMxfp8BlockSize);
    }
    return c;
}

Nvfp4CastCall nvfp4_cast_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& scales,
                              const Tensor& out_transposed, const Tensor& scales_transposed, const Nvfp4Cast& options) {
    check_input(call, x);
    check_buffer(call, x.amax, "x.amax", alignof(float));
    const std::string packed = "allowed: E2M1x2 (two E2M1 values a byte)";
    if (out.dtype != DType::Float4E2M1x2) fail(call, "out has dtype " + std::string(to_string(out.dtype)) + "; " + packed);
    if (out.data == nullptr && x.numel() > 0) fail(call, "out is a null pointer");
    check_buffer(call, out.scale_inv, "out.scale_inv", alignof(float));
    Nvfp4CastCall c;
    c.x = x.data;
    c.x_dtype = x.dtype;
    c.rows = x.rows;
    c.cols = x.cols;
    c.global_amax = x.amax;
    c.s_dec = out.scale_inv;
    c.options = options;
    c.rowwise = output(call, out, scales, "out", DType::Float8E4M3, x.rows, x.cols, (x.cols + 1) / 2, kNvfp4BlockSize);
    if (out_transposed.data != nullptr) {
        if (out_transposed.dtype != DType::Float4E2M1x2) {
            fail(call, "out_transposed has dtype " + std::string(to_string(out_transposed.dtype)) + "; " + packed);
        }
        c.columnwise = output(call, out_transposed, scales_transposed, "out_transposed", DType::Float8E4M3, x.cols, x.rows,
                              (x.rows + 1) / 2, kNvfp4BlockSize);
    }
    return c;
}

HadamardCall hadamard16_call(const char* call, const Tensor& x, const Tensor& out, std::uint16_t signs) {
    check_input(call, x);
    check_float_or_bf16(call, out.dtype, "out");
    check_shape(call, out, "out", x.rows, x.cols);
    if (out.stride() != out.cols) fail(call, "out has a row stride; allowed: contiguous rows");
    if (x.cols % 16 != 0) fail(call, "x has " + std::to_string(x.cols) + " columns; allowed: a multiple of 16");
    if (x.numel() > 0) check_buffer(call, out.data, "out", element_size(out.dtype));
    if (out.data == x.data && x.numel() > 0 && out.dtype != x.dtype) {
        fail(call, "out is x's memory in another dtype; allowed in place: the same dtype");
    }
    return {x.data, x.dtype, out.data, out.dtype, x.rows, x.cols, signs};
}

}  // namespace tewb::kernels::detail
