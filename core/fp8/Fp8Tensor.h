#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

#include "core/fp8/Fp8Format.h"
#include "core/fp8/Microscaling.h"

namespace tewb {

// A tensor cast to FP8 with its scale: high precision ≈ data * scale_inv. FP8 GEMMs on Hopper and Ada
// take the "TN" layout only, so a cast that feeds a backward GEMM also produces the transposed copy.
struct Fp8Tensor {
    at::Tensor data;        // Float8_e4m3fn or Float8_e5m2, row-major [rows, cols]
    at::Tensor transposed;  // [cols, rows], the same values; undefined unless requested (a view in the
                            // reference, a contiguous copy where a TN-only FP8 GEMM consumes it)
    at::Tensor scale_inv;   // float32 scalar, 1 / the scale the cast used (a copy: later updates do not touch it);
                            // block scaling: one per block (BlockScaling.h), [rows / block rows, cols / 128]
    Fp8Dtype dtype = Fp8Dtype::E4M3;
    at::Tensor transposed_scale_inv;  // block scaling: the transposed copy's own block scales (else undefined)
    // Set where scale_inv is a live view into the FP8 state (a delayed-scaling cast hands out the slot's
    // scale_inv instead of launching a reciprocal): where the same value is found after the pass's next
    // scale update (Fp8Context::live_scale_inv). Undefined where scale_inv is the cast's own tensor.
    at::Tensor scale_inv_after_update;
    // The microscaling recipes (core/fp8/Microscaling.h): which format this is. scale_inv and transposed_scale_inv then
    // hold each block's scale value ([rows, blocks] float32), data (and transposed) NVFP4's E2M1 codes as uint8, and
    // tensor_scale_inv / transposed_tensor_scale_inv NVFP4's tensor scales (each copy its own: the transposed copy may
    // have passed through the Hadamard transform first).
    std::optional<MxFormat> mx;
    at::Tensor tensor_scale_inv;
    at::Tensor transposed_tensor_scale_inv;

    // The scales that go with `transposed`: its own under block scaling, else the tensor's.
    const at::Tensor& transposed_scale() const { return transposed_scale_inv.defined() ? transposed_scale_inv : scale_inv; }
    // This tensor as a consumer after the pass's next scale update must hold it (the backward GEMMs of a
    // forward cast): scale_inv replaced by where its value is then (no copy, no launch).
    Fp8Tensor kept_past_update() const;

    at::Tensor dequantize() const;
};

at::ScalarType to_scalar_type(Fp8Dtype dtype);

}  // namespace tewb
