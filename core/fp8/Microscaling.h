#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "core/fp8/Fp8Format.h"

namespace tewb {

// Blackwell's microscaling formats in LibTorch operators on any device: the reference the kernels (tewb_kernels/mx.h)
// are held to bit for bit, and what an emulated run computes with. MXFP8: E4M3 or E5M2 values with a power-of-two scale
// per 32 consecutive values of a row (the OCP MX v1.0 rule); NVFP4: E2M1 values with an E4M3 scale per 16 values of a
// row (or per 16 × 16 tile) and a float32 scale for the whole tensor (NVIDIA's recipe, as Transformer Engine computes
// it). Formulas and special values: docs/kernels.md, "Microscaling formats".
enum class MxFormat { Mxfp8, Nvfp4 };

// A quantized 2-D tensor in the reference's plain form: one element per value and the block scales as a float32
// matrix (the kernels pack E2M1 two to a byte and lay the scales out for cuBLASLt; mx_from_kernel_layout reads them).
struct MxQuantized {
    MxFormat format = MxFormat::Mxfp8;
    // MXFP8: Float8_e4m3fn / Float8_e5m2 [rows, cols]. NVFP4: uint8 E2M1 codes [rows, cols] (sign in bit 3).
    at::Tensor data;
    // float32 [rows, ceil(cols / block)]: each block's scale as a value (2^e for E8M0, NaN for its NaN code; the E4M3
    // scale's value for NVFP4). With 16 × 16 tiles each row holds its tile's scale.
    at::Tensor block_scale;
    // NVFP4: s_dec, a float32 scalar tensor (what the whole tensor's values are multiplied by last). MXFP8: undefined.
    at::Tensor tensor_scale_inv;
    Fp8Dtype dtype = Fp8Dtype::E4M3;  // MXFP8's element type
};

inline constexpr std::int64_t kMxfp8Block = 32;
inline constexpr std::int64_t kNvfp4Block = 16;

// `x` 2-D, any float dtype (ConfigError otherwise).
MxQuantized mxfp8_quantize(const at::Tensor& x, Fp8Dtype dtype);
// Round to nearest even; `amax` is max |x| of the tensor (a float32 scalar tensor, as abs_max leaves it). Stochastic
// rounding is the kernels' (its random stream is theirs; tst_microscaling holds the two to the same statistics).
MxQuantized nvfp4_quantize(const at::Tensor& x, const at::Tensor& amax, bool tiles_16x16);
// The same with stochastic rounding from the kernels' seeded stream (tewb_kernels/mx.h, Nvfp4Cast: the value at index i
// draws position offset + i), through their host implementation (x copied to the CPU and back where it is elsewhere).
MxQuantized nvfp4_quantize_stochastic(const at::Tensor& x, const at::Tensor& amax, bool tiles_16x16, std::uint64_t seed,
                                      std::uint64_t offset);

// The values in float32: data · block scale (· s_dec), each product exact but the last.
at::Tensor mx_dequantize(const MxQuantized& q);
// a [M, K] times b [N, K] transposed as a block-scaled GEMM computes it, emulated: the products of the blockwise
// dequantized values summed in float32, then NVFP4's two tensor scales applied once (cuBLASLt's alpha).
at::Tensor mx_gemm_reference(const MxQuantized& a, const MxQuantized& b);

// The scale a slot's statistics show for a microscaling cast, from the tensor's amax: MXFP8's 1 / X of the block holding
// the amax, NVFP4's tensor scale s_enc (float32, the amax's shape).
at::Tensor mx_statistics_scale(const at::Tensor& amax, MxFormat format, Fp8Dtype dtype);

// E2M1: the codes of float32 values rounded to nearest even (saturating at 6, NaN to +6, the sign kept), and back.
at::Tensor e2m1_codes(const at::Tensor& values);
at::Tensor e2m1_values(const at::Tensor& codes);

// The 16-point random Hadamard transform along rows (cols a multiple of 16), summed as the kernel does, in float32.
at::Tensor hadamard16_reference(const at::Tensor& x, std::uint16_t signs);

// The kernels' outputs in the reference's form: `bytes` uint8 [rows, value bytes] (NVFP4 packed), `scales` uint8 in
// cuBLASLt's layout ([mx_scale_rows(rows), mx_scale_cols(cols, block)]), `s_dec` NVFP4's tensor scale (else undefined).
MxQuantized mx_from_kernel_layout(MxFormat format, Fp8Dtype dtype, const at::Tensor& bytes, const at::Tensor& scales,
                                  std::int64_t rows, std::int64_t cols, const at::Tensor& s_dec);

}  // namespace tewb
