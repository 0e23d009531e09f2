#pragma once

#include <cstddef>
#include <cstdint>

#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/mx.h"

// The microscaling casts' checked calls (mx_checks.cpp builds them from the entry points' tensors), shared by the
// kernels (mx.cu) and the host twins (mx_host.cpp).
namespace tewb::kernels::detail {

// One output of a cast: [rows, cols] values (NVFP4: packed, ceil(cols / 2) bytes a row) and their block scales in
// mx.h's layout ([mx_scale_rows(rows), scale_cols] bytes). Not wanted when data is null.
struct MxOutput {
    std::uint8_t* data = nullptr;
    std::uint8_t* scales = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::size_t scale_cols = 0;
};

struct Mxfp8CastCall {
    const void* x = nullptr;
    DType x_dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    Fp8Type type = Fp8Type::E4M3;
    int emax = 8;  // the largest power of two of the element format
    float* amax = nullptr;
    MxOutput rowwise;
    MxOutput columnwise;  // the transposed copy: [cols, rows]
};

struct Nvfp4CastCall {
    const void* x = nullptr;
    DType x_dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    const float* global_amax = nullptr;
    float* s_dec = nullptr;
    Nvfp4Cast options;
    MxOutput rowwise;
    MxOutput columnwise;
};

struct HadamardCall {
    const void* x = nullptr;
    DType x_dtype = DType::Float32;
    void* out = nullptr;
    DType out_dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::uint16_t signs = 0;
};

Mxfp8CastCall mxfp8_cast_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& scales,
                              const Tensor& out_transposed, const Tensor& scales_transposed);
Nvfp4CastCall nvfp4_cast_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& scales,
                              const Tensor& out_transposed, const Tensor& scales_transposed, const Nvfp4Cast& options);
HadamardCall hadamard16_call(const char* call, const Tensor& x, const Tensor& out, std::uint16_t signs);

}  // namespace tewb::kernels::detail
