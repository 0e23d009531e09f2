#pragma once

#include <cstddef>

#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/tensor.h"

// The GEMM's arguments beside its tensors, shared by its two implementations (gemm.h) and its rule table
// (gemm_rules.h); no CUDA here.
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

// How the GEMM reads its operands and how it accumulates.
struct GemmOptions {
    Epilogue epilogue = Epilogue::None;
    Accumulation accumulation = Accumulation::Split;
    // The operand's tensor holds its transpose: a as [k, m], b as [k, n], row-major (a backward's dy or x as
    // they are, no copy; Transformer Engine's transa/transb). Float32 and bfloat16 only: FP8 tensor cores take
    // the K-contiguous layout (pass the FP8 tensor's transposed copy as a tensor of its own instead).
    bool a_transposed = false;
    bool b_transposed = false;
    // When set, the product is multiplied by alpha[0] before the epilogue (cuBLASLt's alpha, read from memory:
    // NVFP4's two tensor scales s_dec_a · s_dec_b). Microscaling operands only; a 16-byte aligned float32.
    const float* alpha = nullptr;
};

// The tensors the product's epilogue reads or writes; one the call does not use has null data and is not looked at.
struct GemmEpilogueTensors {
    // Bias, GeluAuxBias: n elements (any [rows, cols] with rows · cols = n). In d's dtype for float32 and bfloat16
    // operands, bfloat16 for FP8 operands (cuBLASLt's FP8 kernels take no other: a float32 bias found no algorithm
    // on the H200).
    Tensor bias;
    // GeluAuxBias (written), DGeluBGrad (read): GELU's input, [m, n] with a row stride (cuBLASLt's aux_ld) of at
    // least n and a multiple of 8; d's dtype, bfloat16 for an FP8 d.
    Tensor aux;
    // DGeluBGrad: n elements; BGradB: m elements (needs a_transposed); d's dtype, bfloat16 for an FP8 d.
    Tensor bias_grad;
    // When set, the product is accumulated onto it: d = a·bᵀ (+ bias) + c, c [m, n] row-major in d's dtype
    // (cuBLASLt's C with beta = 1; a residual added in the GEMM instead of by a separate kernel). Float32 or
    // bfloat16 d, per-tensor or high-precision operands, epilogue None or Bias; c may be d itself.
    Tensor c;
};

// One GEMM call, as the entry points (gemm.h) assemble it from their arguments and the rule table, the
// description and the GEMM journal read it: d [m, n] = a · bᵀ with a [m, k] and b [n, k] (each stored transposed
// where the options say), m and k read from a's shape and n from b's.
//
// a and b are both float32, both bfloat16, or both FP8 (not both E5M2), each with its scale_inv (and scale_mode)
// when FP8; d is float32 or bfloat16, or FP8 for FP8 inputs (then d.scale is required and d.amax, when set,
// receives max |d| before scaling; E5M2 output needs an E5M2 operand). a, b, d and c are contiguous (row_stride
// 0 or cols). FP8 GEMMs need m, n and k to be multiples of 16 and compute capability 8.9; other shapes are
// refused with a message (pad them, or use bfloat16). Every rule is in gemm_rules.h (one table for the device and
// the host path; a refusal throws GemmRefused naming the rule). Every pointer, scales, amax, the epilogue's
// tensors and c included, is aligned to 16 bytes; the algorithm is chosen for each pointer's actual alignment (up
// to 256 bytes). The workspace is the caller's (one per stream: GEMMs on one stream may share it, GEMMs on two
// streams must not); gemm_workspace_bytes says how much cuBLASLt can use, and none works, more slowly. One
// cuBLASLt handle per device; descriptors and the chosen algorithm are cached per shape, types, layout, epilogue
// and alignment.
//
// Block-scaled operands (Float8BlockScaling, the tensor's scale_mode): both operands block-scaled (1×128 × 128×128
// for forward and dgrad, 1×128 × 1×128 for wgrad; 128×128 × 128×128 is refused, as cuBLASLt has no such kernel),
// k a multiple of 128, split accumulation, d float32 or bfloat16, no epilogue but bias, and compute capability 9.x
// (cuBLASLt offers these modes on Hopper only; block_gemm_supported says whether this device and cuBLASLt find an
// algorithm at all).
struct GemmCall {
    Tensor a;
    Tensor b;
    Tensor d;
    GemmEpilogueTensors epilogue;
    GemmOptions options;
    Workspace workspace;

    // E2M1x2 data holds two values a byte: its k is twice its columns.
    std::size_t m() const { return options.a_transposed ? a.cols : a.rows; }
    std::size_t k() const { return options.a_transposed ? a.rows : a.cols * values_per_byte(a.dtype); }
    std::size_t n() const { return options.b_transposed ? b.cols : b.rows; }
    // k as b's shape says it (the TensorShape rule refuses a call where it is not k()).
    std::size_t b_k() const { return options.b_transposed ? b.rows : b.cols * values_per_byte(b.dtype); }
    static std::size_t values_per_byte(DType t) { return t == DType::Float4E2M1x2 ? 2 : 1; }
};

}  // namespace tewb::kernels
