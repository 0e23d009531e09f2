#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor.h"

// The GEMM's arguments, shared by the cuBLASLt wrapper (gemm.h) and its host implementation
// (host/gemm.h); no CUDA here.
namespace tewb::kernels {

// Element types (dtype.h's DType): operands float32, bfloat16, E4M3 or E5M2; the rule table (gemm_rules.h) refuses
// the others.

// What runs after the product, in row-major terms (d is [m, n]):
//   None        d = a·bᵀ
//   Bias        d = a·bᵀ + bias[n]
//   GeluAuxBias aux = a·bᵀ + bias[n]; d = gelu(aux)            (the MLP's fc1 forward)
//   DGeluBGrad  d = (a·bᵀ) ⊙ gelu'(aux); bias_grad[n] = Σ_m d    (fc2's dgrad into fc1's bias gradient)
//   BGradB      d = a·bᵀ; bias_grad[m] = Σ_k a[m, k]            (a wgrad with a = dyᵀ: the bias gradient)
enum class Epilogue { None, Bias, GeluAuxBias, DGeluBGrad, BGradB };

// "none", "BIAS", "GELU_AUX_BIAS", "DGELU_BGRAD", "BGRADB": cuBLASLt's names, as messages and data files spell them.
constexpr const char* epilogue_name(Epilogue e) {
    switch (e) {
        case Epilogue::None: return "none";
        case Epilogue::Bias: return "BIAS";
        case Epilogue::GeluAuxBias: return "GELU_AUX_BIAS";
        case Epilogue::DGeluBGrad: return "DGELU_BGRAD";
        case Epilogue::BGradB: return "BGRADB";
    }
    return "unknown";
}

// Forward GEMMs may accumulate FP8 products in the tensor cores' fast mode; dgrad and wgrad keep full
// (split) accumulation, as Transformer Engine does.
enum class Accumulation { Fast, Split };

struct GemmOperand {
    const void* data = nullptr;
    DType type = DType::BFloat16;
    const float* scale_inv = nullptr;  // FP8 operands: the dequantization factor(s), device memory (see ScaleMode)
    // The operand is stored as its transpose: a as [k, m], b as [k, n], row-major (a backward's dy or x
    // as they are, no copy). Float32 and bfloat16 only: FP8 tensor cores take the K-contiguous layout.
    bool transposed = false;
    ScaleMode scale_mode = ScaleMode::Tensor;
};

// d[m, n] = a[m, k] · b[n, k]ᵀ, row-major and K-contiguous unless an operand says `transposed` (the "TN"
// layout FP8 tensor cores need), float32 accumulation, through cuBLASLt. a and b are both float32, both
// bfloat16, or both FP8 (not both E5M2); d is float32 or bfloat16, or FP8 for FP8 inputs (then d_scale is
// required and d_amax, when set, receives max |d| before scaling; E5M2 output needs an E5M2 operand). FP8
// GEMMs need m, n and k to be multiples of 16 and compute capability 8.9; other shapes are refused with a
// message (pad them, or use bfloat16). Every rule is in gemm_rules.h (one table for the device and the host
// path; a refusal throws GemmRefused naming the rule). Every pointer, scale_inv, d_scale, d_amax, bias,
// aux and bias_grad included, is a device pointer aligned to 16 bytes; the
// algorithm is chosen for each pointer's actual alignment (up to 256 bytes). The workspace is the
// caller's (one per stream: GEMMs on one stream may share it, GEMMs on two streams must not);
// gemm_workspace_bytes says how much cuBLASLt can use, and none works, more slowly. One cuBLASLt handle
// per device; descriptors and the chosen algorithm are cached per shape, types, layout, epilogue and
// alignment.
//
// Block-scaled operands (Float8BlockScaling): both operands block-scaled (1×128 × 128×128 for forward and
// dgrad, 1×128 × 1×128 for wgrad; 128×128 × 128×128 is refused, as cuBLASLt has no such kernel), k a
// multiple of 128, split accumulation, d float32 or bfloat16, no epilogue but bias, and compute
// capability 9.x (cuBLASLt offers these modes on Hopper only; block_gemm_supported says whether this
// device and cuBLASLt find an algorithm at all).
struct GemmArgs {
    std::size_t m = 0;
    std::size_t n = 0;
    std::size_t k = 0;
    GemmOperand a;
    GemmOperand b;
    void* d = nullptr;
    DType d_type = DType::BFloat16;
    const float* d_scale = nullptr;
    float* d_amax = nullptr;
    Epilogue epilogue = Epilogue::None;
    const void* bias = nullptr;      // Bias, GeluAuxBias: [n], of bias_type
    // The bias's dtype: d_type for float32 and bfloat16 operands, bfloat16 for FP8 operands (cuBLASLt's FP8
    // kernels take no other: a float32 bias found no algorithm on the H200). gemm_rules.h refuses the rest.
    DType bias_type = DType::BFloat16;
    void* bias_grad = nullptr;       // DGeluBGrad: [n]; BGradB: [m] (needs a.transposed); d_type
    void* aux = nullptr;             // GeluAuxBias (written), DGeluBGrad (read): [m, aux_ld], d_type (bfloat16 for FP8 d)
    // When set, the product is accumulated onto it: d = a·bᵀ (+ bias) + c, c [m, n] row-major in d's type (cuBLASLt's
    // C with beta = 1; a residual added in the GEMM instead of by a separate kernel). Float32 or bfloat16 d, per-tensor
    // or high-precision operands, epilogue None or Bias; c may be d itself.
    const void* c = nullptr;
    std::size_t aux_ld = 0;          // elements between aux rows: at least n, a multiple of 8
    Accumulation accumulation = Accumulation::Split;
    void* workspace = nullptr;       // device memory for cuBLASLt, 256-byte aligned; may be null with 0 bytes
    std::size_t workspace_bytes = 0;
};

}  // namespace tewb::kernels
