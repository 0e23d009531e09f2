#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace tewb::kernels {

enum class GemmType { Float32, BFloat16, E4M3, E5M2 };

// What runs after the product, in row-major terms (d is [m, n]):
//   None        d = a·bᵀ
//   Bias        d = a·bᵀ + bias[n]
//   GeluAuxBias aux = a·bᵀ + bias[n]; d = gelu(aux)            (the MLP's fc1 forward)
//   DGeluBGrad  d = (a·bᵀ) ⊙ gelu'(aux); bias_grad[n] = Σ_m d    (fc2's dgrad into fc1's bias gradient)
//   BGradB      d = a·bᵀ; bias_grad[m] = Σ_k a[m, k]            (a wgrad with a = dyᵀ: the bias gradient)
enum class Epilogue { None, Bias, GeluAuxBias, DGeluBGrad, BGradB };

// Forward GEMMs may accumulate FP8 products in the tensor cores' fast mode; dgrad and wgrad keep full
// (split) accumulation, as Transformer Engine does.
enum class Accumulation { Fast, Split };

struct GemmOperand {
    const void* data = nullptr;
    GemmType type = GemmType::BFloat16;
    const float* scale_inv = nullptr;  // FP8 operands: the dequantization factor (device scalar)
    // The operand is stored as its transpose: a as [k, m], b as [k, n], row-major (a backward's dy or x
    // as they are, no copy). Float32 and bfloat16 only: FP8 tensor cores take the K-contiguous layout.
    bool transposed = false;
};

// d[m, n] = a[m, k] · b[n, k]ᵀ, row-major and K-contiguous unless an operand says `transposed` (the "TN"
// layout FP8 tensor cores need), float32 accumulation, through cuBLASLt. a and b are both float32, both
// bfloat16, or both FP8 (not both E5M2); d is float32 or bfloat16, or FP8 for FP8 inputs (then d_scale is
// required and d_amax, when set, receives max |d| before scaling; E5M2 output needs an E5M2 operand). FP8
// GEMMs need m, n and k to be multiples of 16 and compute capability 8.9; other shapes are refused with a
// message (pad them, or use bfloat16). Every pointer is a device pointer aligned to 16 bytes; the
// algorithm is chosen for each pointer's actual alignment (up to 256 bytes). The workspace is the
// caller's (one per stream: GEMMs on one stream may share it, GEMMs on two streams must not);
// gemm_workspace_bytes says how much cuBLASLt can use, and none works, more slowly. One cuBLASLt handle
// per device; descriptors and the chosen algorithm are cached per shape, types, layout, epilogue and
// alignment.
struct GemmArgs {
    std::size_t m = 0;
    std::size_t n = 0;
    std::size_t k = 0;
    GemmOperand a;
    GemmOperand b;
    void* d = nullptr;
    GemmType d_type = GemmType::BFloat16;
    const float* d_scale = nullptr;
    float* d_amax = nullptr;
    Epilogue epilogue = Epilogue::None;
    const void* bias = nullptr;      // Bias, GeluAuxBias: [n]; bfloat16 for FP8 operands (cuBLASLt's FP8 kernels
                                     // take no other), else d_type
    void* bias_grad = nullptr;       // DGeluBGrad: [n]; BGradB: [m] (needs a.transposed); d_type
    void* aux = nullptr;             // GeluAuxBias (written), DGeluBGrad (read): [m, aux_ld], d_type (bfloat16 for FP8 d)
    std::size_t aux_ld = 0;          // elements between aux rows: at least n, a multiple of 8
    Accumulation accumulation = Accumulation::Split;
    void* workspace = nullptr;       // device memory for cuBLASLt, 256-byte aligned; may be null with 0 bytes
    std::size_t workspace_bytes = 0;
};

// The workspace cuBLASLt can use on `device`: 32 MiB at compute capability 9.0 and up, 4 MiB below.
std::size_t gemm_workspace_bytes(int device);

void gemm(const GemmArgs& args, cudaStream_t stream);

// How many descriptor sets the cache holds (all devices): for tests and the self-test's report.
std::size_t gemm_cache_size();

}  // namespace tewb::kernels
