// The GEMM's rule table (gemm_rules.h). Where the rules come from:
// - CUDA 13's cublasLt.h (/usr/local/cuda/include): EPILOGUE_AUX_LD "must be divisible by 8 and be no less
//   than the number of rows in the output matrix" (our n); BIAS_DATA_TYPE is D's type "with the following
//   exceptions: ... fp8 kernels with an output type of CUDA_R_32F, CUDA_R_8F_E4M3 or CUDA_R_8F_E5M2" (they take
//   a 16-bit bias); EPILOGUE_AUX_DATA_TYPE defaults to D's type, and FP8-output kernels take only an FP8 or
//   16-bit aux "with some restrictions"; the scale modes VEC128_32F and BLK128x128_32F.
// - NVIDIA's cuBLAS documentation (cublasLtMatmul, FP8 section) could not be read through this project's
//   search tool (only its table of contents is stored); from it as used elsewhere: FP8 operands only in the
//   TN layout, no E5M2 x E5M2, C in bfloat16/float16 for an FP8 D, bias bfloat16 for bfloat16/float32 D,
//   compute capability 8.9 and up; the block modes on Hopper only. Transformer Engine's cuBLASLt GEMM (read
//   through the search tool) fuses GELU_AUX_BIAS into FP8 forward GEMMs with a 16-bit aux but computes the
//   backward's bias gradients outside the GEMM for FP8 (no DGELU_BGRAD or BGRADB with FP8 operands), and
//   refuses an FP8 aux. So FP8 here takes BIAS and GELU_AUX_BIAS (not with an FP8 D), nothing with a
//   gradient; block-scaled GEMMs bias only. Conservative where unverified: a refusal makes the caller run
//   the composition, an unsupported launch would fail on the GPU.
// - The H200 run (docs/benchmarks.md): an FP8 GEMM with a float32 bias had no algorithm (status 15), an FP8
//   D whose C shared its address with a bfloat16 layout failed (status 7), BGRADB with a not stored
//   transposed failed (status 15).
#include "tewb_kernels/gemm_rules.h"

#include <cstdint>
#include <cstdio>
#include <utility>

#include "common/arguments.h"
#include "tewb_kernels/mx.h"

namespace tewb::kernels {

namespace {

constexpr std::uintptr_t kAlignment = 16;

// Float8BlockScaling's modes (the microscaling ones are is_mx).
bool is_block(ScaleMode m) {
    return m == ScaleMode::Block1x128 || m == ScaleMode::Block128x128;
}

bool is_mx(ScaleMode m) {
    return m == ScaleMode::Mxfp8Block32 || m == ScaleMode::Nvfp4Block16;
}

bool known(DType t) {
    return t == DType::Float32 || t == DType::BFloat16 || t == DType::Float8E4M3 || t == DType::Float8E5M2 ||
           t == DType::Float4E2M1x2;
}

bool known(ScaleMode m) {
    return m == ScaleMode::Tensor || m == ScaleMode::Block1x128 || m == ScaleMode::Block128x128 || is_mx(m);
}

bool known(Epilogue e) {
    return e == Epilogue::None || e == Epilogue::Bias || e == Epilogue::GeluAuxBias || e == Epilogue::DGeluBGrad ||
           e == Epilogue::BGradB;
}

bool known(Accumulation a) {
    return a == Accumulation::Fast || a == Accumulation::Split;
}

const char* name(Epilogue e) {
    return epilogue_name(e);
}

std::string address(const void* p) {
    char text[2 + 2 * sizeof(std::uintptr_t) + 1];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
    return text;
}

std::optional<GemmRefusal> refuse(GemmRule rule, std::string message) {
    return GemmRefusal{rule, std::move(message)};
}

bool needs_bias(Epilogue e) {
    return e == Epilogue::Bias || e == Epilogue::GeluAuxBias;
}

bool needs_aux(Epilogue e) {
    return e == Epilogue::GeluAuxBias || e == Epilogue::DGeluBGrad;
}

bool needs_bias_grad(Epilogue e) {
    return e == Epilogue::DGeluBGrad || e == Epilogue::BGradB;
}

std::optional<GemmRefusal> block_refusal(const GemmCall& g) {
    if (!is_block(g.a.scale_mode) || !is_block(g.b.scale_mode)) {
        return refuse(GemmRule::BlockAndTensorScaleMix,
                      "block-scaled and tensor-scaled operands do not mix; allowed: both operands per tensor, or both per block");
    }
    if (g.a.scale_mode == ScaleMode::Block128x128 && g.b.scale_mode == ScaleMode::Block128x128) {
        return refuse(GemmRule::Block128x128Twice, "128x128 x 128x128 block scales have no cuBLASLt kernel; allowed: 1x128 x "
                                                   "128x128, 128x128 x 1x128, 1x128 x 1x128");
    }
    if (g.k() % 128 != 0) {
        return refuse(GemmRule::BlockKNotMultipleOf128,
                      "block-scaled FP8 GEMMs need k to be a multiple of 128 (got k = " + std::to_string(g.k()) +
                          "); pad the operands or use per-tensor scaling");
    }
    if (g.options.accumulation != Accumulation::Split) {
        return refuse(GemmRule::BlockNeedsSplitAccumulation,
                      "block-scaled FP8 GEMMs accumulate split only; allowed: Accumulation::Split");
    }
    if (is_fp8(g.d.dtype)) {
        return refuse(GemmRule::BlockFp8Output, std::string("block-scaled FP8 GEMMs write float32 or bfloat16 (got d_type = ") +
                                                    to_string(g.d.dtype).data() + "); allowed d types: float32, bfloat16");
    }
    if (g.options.epilogue != Epilogue::None && g.options.epilogue != Epilogue::Bias) {
        return refuse(GemmRule::BlockEpilogue, std::string("block-scaled FP8 GEMMs take no epilogue but bias (got ") +
                                                   name(g.options.epilogue) + "); allowed: none, bias");
    }
    return std::nullopt;
}

std::optional<GemmRefusal> misaligned(const char* what, const void* p, std::uintptr_t alignment) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignment == 0) return std::nullopt;
    return refuse(GemmRule::Misaligned, std::string(what) + " (" + address(p) + ") is not " + std::to_string(alignment) +
                                            "-byte aligned; allowed: 16-byte aligned addresses for every pointer: matrices, "
                                            "vectors, block scales and the single float32 values (a per-tensor scale_inv, "
                                            "d_scale, d_amax), each of those in its own aligned slot (docs/kernels.md)");
}

// Every pointer, 16 bytes: matrices, epilogue vectors and block-scale arrays for cuBLASLt's vector loads (its
// block-scaling layouts require 16), and the single float32 values read by pointer (a per-tensor scale_inv,
// d_scale, d_amax) too: on the H200 (2026-12-04) cublasLtMatmul refused an FP8 GEMM with status 15 whose weight
// scale_inv sat 4 bytes into a packed float array, after its heuristic and cublasLtMatmulAlgoCheck had accepted
// it; the same call with the scale copied to an aligned slot ran. The FP8 state keeps each scale in its own
// 256-byte slot (core/fp8/Fp8State.h).
std::optional<GemmRefusal> alignment_refusal(const GemmCall& g, bool fp8) {
    struct Used {
        const char* what;
        const void* pointer;
        std::uintptr_t alignment;
    };
    Used used[11];
    int count = 0;
    used[count++] = {"a", g.a.data, kAlignment};
    used[count++] = {"b", g.b.data, kAlignment};
    used[count++] = {"d", g.d.data, kAlignment};
    if (fp8) {
        used[count++] = {"a.scale_inv", g.a.scale_inv, kAlignment};
        used[count++] = {"b.scale_inv", g.b.scale_inv, kAlignment};
    }
    if (is_fp8(g.d.dtype)) {
        used[count++] = {"d_scale", g.d.scale, kAlignment};
        if (g.d.amax != nullptr) used[count++] = {"d_amax", g.d.amax, kAlignment};
    }
    if (needs_bias(g.options.epilogue)) used[count++] = {"bias", g.epilogue.bias.data, kAlignment};
    if (needs_aux(g.options.epilogue)) used[count++] = {"aux", g.epilogue.aux.data, kAlignment};
    if (needs_bias_grad(g.options.epilogue)) used[count++] = {"bias_grad", g.epilogue.bias_grad.data, kAlignment};
    if (g.epilogue.c.data != nullptr) used[count++] = {"c", g.epilogue.c.data, kAlignment};
    if (g.options.alpha != nullptr) used[count++] = {"alpha", g.options.alpha, kAlignment};
    for (int i = 0; i < count; ++i) {
        if (auto refusal = misaligned(used[i].what, used[i].pointer, used[i].alignment)) return refusal;
    }
    return std::nullopt;
}

std::optional<GemmRefusal> epilogue_buffer_refusal(const GemmCall& g) {
    const std::string epilogue = std::string("the ") + name(g.options.epilogue) + " epilogue needs ";
    if (g.options.epilogue == Epilogue::Bias && g.epilogue.bias.data == nullptr) {
        return refuse(GemmRule::EpilogueBufferMissing, "the bias epilogue needs a 16-byte aligned bias ([n]); got none");
    }
    if (g.options.epilogue == Epilogue::GeluAuxBias && g.epilogue.bias.data == nullptr) {
        return refuse(GemmRule::EpilogueBufferMissing, epilogue + "a 16-byte aligned bias ([n]); got none");
    }
    if (needs_aux(g.options.epilogue)) {
        if (g.epilogue.aux.data == nullptr) {
            return refuse(GemmRule::EpilogueBufferMissing,
                          epilogue + "a 16-byte aligned aux tensor ([m, n], GELU's input); got none");
        }
        if (g.epilogue.aux.stride() < g.n() || g.epilogue.aux.stride() % 8 != 0) {
            return refuse(GemmRule::AuxLeadingDimension,
                          "aux's row stride (cuBLASLt's aux_ld) is " + std::to_string(g.epilogue.aux.stride()) +
                              "; allowed: at least n = " + std::to_string(g.n()) + " and a multiple of 8");
        }
    }
    if (needs_bias_grad(g.options.epilogue) && g.epilogue.bias_grad.data == nullptr) {
        return refuse(GemmRule::EpilogueBufferMissing, epilogue + "a 16-byte aligned bias_grad ([" +
                                                           (g.options.epilogue == Epilogue::BGradB ? "m" : "n") + "]); got none");
    }
    return std::nullopt;
}

}  // namespace

std::string_view to_string(GemmRule rule) {
    switch (rule) {
        case GemmRule::UnknownValue: return "UnknownValue";
        case GemmRule::TensorShape: return "TensorShape";
        case GemmRule::EmptyK: return "EmptyK";
        case GemmRule::SizeOver32Bits: return "SizeOver32Bits";
        case GemmRule::OperandTypesMix: return "OperandTypesMix";
        case GemmRule::E5M2TimesE5M2: return "E5M2TimesE5M2";
        case GemmRule::Fp8OutputNeedsFp8Operands: return "Fp8OutputNeedsFp8Operands";
        case GemmRule::E5M2OutputNeedsE5M2Operand: return "E5M2OutputNeedsE5M2Operand";
        case GemmRule::Fp8OperandTransposed: return "Fp8OperandTransposed";
        case GemmRule::BlockScaleNeedsFp8: return "BlockScaleNeedsFp8";
        case GemmRule::BlockAndTensorScaleMix: return "BlockAndTensorScaleMix";
        case GemmRule::Block128x128Twice: return "Block128x128Twice";
        case GemmRule::BlockKNotMultipleOf128: return "BlockKNotMultipleOf128";
        case GemmRule::BlockNeedsSplitAccumulation: return "BlockNeedsSplitAccumulation";
        case GemmRule::BlockFp8Output: return "BlockFp8Output";
        case GemmRule::BlockEpilogue: return "BlockEpilogue";
        case GemmRule::MxScaleModeMix: return "MxScaleModeMix";
        case GemmRule::MxOperandType: return "MxOperandType";
        case GemmRule::MxKNotMultipleOf32: return "MxKNotMultipleOf32";
        case GemmRule::MxOutput: return "MxOutput";
        case GemmRule::MxEpilogue: return "MxEpilogue";
        case GemmRule::AlphaUse: return "AlphaUse";
        case GemmRule::Fp8ShapeNotMultipleOf16: return "Fp8ShapeNotMultipleOf16";
        case GemmRule::Fp8ScaleInvMissing: return "Fp8ScaleInvMissing";
        case GemmRule::Fp8OutputScaleMissing: return "Fp8OutputScaleMissing";
        case GemmRule::Fp8OutputEpilogue: return "Fp8OutputEpilogue";
        case GemmRule::NullOperand: return "NullOperand";
        case GemmRule::EpilogueBufferMissing: return "EpilogueBufferMissing";
        case GemmRule::AuxLeadingDimension: return "AuxLeadingDimension";
        case GemmRule::Misaligned: return "Misaligned";
        case GemmRule::BiasType: return "BiasType";
        case GemmRule::EpilogueTensorType: return "EpilogueTensorType";
        case GemmRule::Fp8Epilogue: return "Fp8Epilogue";
        case GemmRule::BGradBNeedsTransposedA: return "BGradBNeedsTransposedA";
        case GemmRule::COperandLayout: return "COperandLayout";
        case GemmRule::AccumulateUse: return "AccumulateUse";
        case GemmRule::Workspace: return "Workspace";
        case GemmRule::Fp8NeedsCC89: return "Fp8NeedsCC89";
        case GemmRule::BlockScalingNeedsCC9x: return "BlockScalingNeedsCC9x";
        case GemmRule::MxNeedsCC10: return "MxNeedsCC10";
        case GemmRule::NoAlgorithm: return "NoAlgorithm";
        case GemmRule::MatmulRefused: return "MatmulRefused";
    }
    return "unknown GemmRule";
}

std::size_t block_scale_entries(ScaleMode mode, std::size_t rows, std::size_t k) {
    const std::size_t k_blocks = (k + 127) / 128;
    const auto round_up_4 = [](std::size_t x) { return (x + 3) / 4 * 4; };
    switch (mode) {
        case ScaleMode::Tensor: return 1;
        case ScaleMode::Block1x128: return k_blocks * round_up_4(rows);
        case ScaleMode::Block128x128: return (rows + 127) / 128 * round_up_4(k_blocks);
        case ScaleMode::Mxfp8Block32: return mx_scale_rows(rows) * mx_scale_cols(k, kMxfp8BlockSize);
        case ScaleMode::Nvfp4Block16: return mx_scale_rows(rows) * mx_scale_cols(k, kNvfp4BlockSize);
    }
    return 1;
}

std::uint32_t pointer_alignment(const void* pointer) {
    const auto at = reinterpret_cast<std::uintptr_t>(pointer);
    std::uint32_t a = 256;
    while (a > 1 && at % a != 0) a /= 2;
    return a;
}

std::string describe_gemm(const GemmCall& g) {
    const auto alignment = [](const void* p) { return std::to_string(pointer_alignment(p)); };
    const auto mode = [](ScaleMode m) {
        return m == ScaleMode::Block1x128     ? "1x128"
               : m == ScaleMode::Block128x128 ? "128x128"
               : m == ScaleMode::Mxfp8Block32 ? "MXFP8 1x32"
               : m == ScaleMode::Nvfp4Block16 ? "NVFP4 1x16"
                                              : "tensor";
    };
    std::string text = std::string(to_string(g.a.dtype).data()) + " x " + to_string(g.b.dtype).data() + " -> " +
                       to_string(g.d.dtype).data() + ", m = " + std::to_string(g.m()) + ", n = " + std::to_string(g.n()) +
                       ", k = " + std::to_string(g.k());
    const bool fp8 = is_fp8(g.a.dtype) || g.a.dtype == DType::Float4E2M1x2;
    if (fp8) text += std::string(", scales ") + mode(g.a.scale_mode) + " x " + mode(g.b.scale_mode);
    if (g.options.a_transposed || g.options.b_transposed) {
        text += std::string(", stored transposed: ") + (g.options.a_transposed ? (g.options.b_transposed ? "a, b" : "a") : "b");
    }
    text += std::string(", epilogue ") + name(g.options.epilogue);
    if (g.epilogue.c.data != nullptr) text += ", accumulating onto c";
    text += "; alignment (bytes): a " + alignment(g.a.data) + ", b " + alignment(g.b.data) + ", d " + alignment(g.d.data);
    const std::pair<const char*, const void*> others[] = {{"a.scale_inv", fp8 ? g.a.scale_inv : nullptr},
                                                          {"b.scale_inv", fp8 ? g.b.scale_inv : nullptr},
                                                          {"d_scale", is_fp8(g.d.dtype) ? g.d.scale : nullptr},
                                                          {"d_amax", g.d.amax},
                                                          {"bias", g.epilogue.bias.data},
                                                          {"aux", g.epilogue.aux.data},
                                                          {"bias_grad", g.epilogue.bias_grad.data},
                                                          {"c", g.epilogue.c.data},
                                                          {"workspace", g.workspace.data}};
    for (const auto& [what, pointer] : others) {
        if (pointer != nullptr) text += std::string(", ") + what + " " + alignment(pointer);
    }
    return text;
}

bool gemm_can_be_timed(const GemmCall& g) {
    const void* reads[] = {g.epilogue.c.data, g.a.data, g.b.data, g.epilogue.aux.data, g.epilogue.bias.data};
    for (const void* read : reads) {
        if (read != nullptr && read == g.d.data) return false;
    }
    return g.epilogue.bias_grad.data == nullptr ||
           (g.epilogue.bias_grad.data != g.a.data && g.epilogue.bias_grad.data != g.b.data);
}

GemmCOperand gemm_c_operand(const GemmCall& g) {
    if (g.epilogue.c.data != nullptr) return {g.epilogue.c.data, g.epilogue.c.dtype};
    if (is_fp8(g.d.dtype)) return {nullptr, DType::BFloat16};
    return {g.d.data, g.d.dtype};
}

std::optional<GemmRefusal> gemm_c_refusal(const GemmCall& g, const GemmCOperand& c) {
    const DType allowed = is_fp8(g.d.dtype) ? DType::BFloat16 : g.d.dtype;
    if (c.type != allowed) {
        return refuse(GemmRule::COperandLayout, std::string("C in ") + to_string(c.type).data() + " with a " +
                                                    to_string(g.d.dtype).data() + " output; allowed: C in " +
                                                    to_string(allowed).data() + " (D's type, bfloat16 for an FP8 output)");
    }
    if (c.data != nullptr && c.data == g.d.data && c.type != g.d.dtype) {
        return refuse(GemmRule::COperandLayout, std::string("C would share d's address (") + address(g.d.data) + ") as " +
                                                    to_string(c.type).data() + " while D is " + to_string(g.d.dtype).data() +
                                                    "; cuBLASLt needs C and D at one address to share one layout (status 7 "
                                                    "on the H200); allowed: no C pointer for an FP8 output");
    }
    return std::nullopt;
}

namespace {

// The rules of gemm_refusal, each group in the order gemm_refusal applies them.

std::optional<GemmRefusal> unknown_value_refusal(const GemmCall& g) {
    const DType bias = needs_bias(g.options.epilogue) ? g.epilogue.bias.dtype : DType::BFloat16;
    if (!known(g.a.dtype) || !known(g.b.dtype) || !known(g.d.dtype) || !known(bias)) {
        return refuse(GemmRule::UnknownValue, std::string("a, b, d and bias have dtypes ") + to_string(g.a.dtype).data() + ", " +
                                                  to_string(g.b.dtype).data() + ", " + to_string(g.d.dtype).data() + ", " +
                                                  to_string(bias).data() + "; each allowed: float32, bfloat16, E4M3, E5M2");
    }
    if (!known(g.a.scale_mode) || !known(g.b.scale_mode)) {
        return refuse(GemmRule::UnknownValue, "unknown ScaleMode; allowed: Tensor, Block1x128, Block128x128, Mxfp8Block32, Nvfp4Block16");
    }
    if (!known(g.options.epilogue)) {
        return refuse(GemmRule::UnknownValue, "unknown epilogue; allowed: None, Bias, GeluAuxBias, DGeluBGrad, BGradB");
    }
    if (!known(g.options.accumulation)) return refuse(GemmRule::UnknownValue, "unknown accumulation; allowed: Fast, Split");
    return std::nullopt;
}

// The shapes the tensors give m, n and k must agree; the GEMM reads a, b, d and c as contiguous row-major matrices.
std::optional<GemmRefusal> tensor_shape_refusal(const GemmCall& g) {
    if (g.b_k() != g.k()) {
        const bool a_t = g.options.a_transposed;
        const bool b_t = g.options.b_transposed;
        const std::string stored =
            a_t || b_t ? std::string(" (stored transposed: ") + (a_t ? (b_t ? "a, b" : "a") : "b") + ")" : "";
        return refuse(GemmRule::TensorShape, "a is " + detail::shape_text(g.a) + " and b " + detail::shape_text(g.b) + stored +
                                                 ": a's k is " + std::to_string(g.k()) + ", b's " + std::to_string(g.b_k()) +
                                                 "; allowed: the same k");
    }
    const std::string mn = detail::shape_text(g.m(), g.n());
    if (g.d.rows != g.m() || g.d.cols != g.n()) {
        return refuse(GemmRule::TensorShape, "d is " + detail::shape_text(g.d) + "; allowed: [m, n] = " + mn);
    }
    if (g.epilogue.c.data != nullptr && (g.epilogue.c.rows != g.m() || g.epilogue.c.cols != g.n())) {
        return refuse(GemmRule::TensorShape, "c is " + detail::shape_text(g.epilogue.c) + "; allowed: [m, n] = " + mn);
    }
    const std::pair<const char*, const Tensor*> contiguous[] = {{"a", &g.a},
                                                                {"b", &g.b},
                                                                {"d", &g.d},
                                                                {"c", &g.epilogue.c},
                                                                {"bias", &g.epilogue.bias},
                                                                {"bias_grad", &g.epilogue.bias_grad}};
    for (const auto& [what, t] : contiguous) {
        if (t->stride() != t->cols) {
            return refuse(GemmRule::TensorShape, std::string(what) + " has a row stride of " + std::to_string(t->stride()) +
                                                     " elements for " + std::to_string(t->cols) +
                                                     " columns; allowed: contiguous rows (row_stride 0 or cols)");
        }
    }
    const Epilogue e = g.options.epilogue;
    if (needs_bias(e) && g.epilogue.bias.data != nullptr && g.epilogue.bias.numel() != g.n()) {
        return refuse(GemmRule::TensorShape,
                      "bias has " + std::to_string(g.epilogue.bias.numel()) + " elements; allowed: n = " + std::to_string(g.n()));
    }
    if (needs_bias_grad(e) && g.epilogue.bias_grad.data != nullptr) {
        const std::size_t want = e == Epilogue::BGradB ? g.m() : g.n();
        if (g.epilogue.bias_grad.numel() != want) {
            return refuse(GemmRule::TensorShape, "bias_grad has " + std::to_string(g.epilogue.bias_grad.numel()) +
                                                     " elements; allowed: " + (e == Epilogue::BGradB ? "m = " : "n = ") +
                                                     std::to_string(want));
        }
    }
    if (needs_aux(e) && g.epilogue.aux.data != nullptr && (g.epilogue.aux.rows != g.m() || g.epilogue.aux.cols != g.n())) {
        return refuse(GemmRule::TensorShape, "aux is " + detail::shape_text(g.epilogue.aux) + "; allowed: [m, n] = " + mn +
                                                 " (with any row stride the AuxLeadingDimension rule allows)");
    }
    return std::nullopt;
}

std::optional<GemmRefusal> size_refusal(const GemmCall& g) {
    if (g.k() == 0) return refuse(GemmRule::EmptyK, "k = 0; allowed: 1 or more");
    if (g.m() > INT32_MAX || g.n() > INT32_MAX || g.k() > INT32_MAX) {
        return refuse(GemmRule::SizeOver32Bits, "m = " + std::to_string(g.m()) + ", n = " + std::to_string(g.n()) +
                                                    ", k = " + std::to_string(g.k()) + ": m, n and k must each fit in 32 bits");
    }
    return std::nullopt;
}

// Microscaling operands: both in one mode on the data it takes, k whole blocks, a float32 or bfloat16 output, no epilogue
// but bias and no c; alpha only with them.
std::optional<GemmRefusal> mx_refusal(const GemmCall& g) {
    const bool a_mx = is_mx(g.a.scale_mode);
    const bool b_mx = is_mx(g.b.scale_mode);
    if (g.options.alpha != nullptr && !a_mx) {
        return refuse(GemmRule::AlphaUse, "alpha is set with operands that are not microscaled; allowed: alpha with MXFP8 or "
                                          "NVFP4 operands (NVFP4's tensor scales), none otherwise");
    }
    const bool fp4 = g.a.dtype == DType::Float4E2M1x2;
    if (!a_mx && !b_mx && !fp4) return std::nullopt;
    if (a_mx != b_mx || g.a.scale_mode != g.b.scale_mode) {
        return refuse(GemmRule::MxScaleModeMix, "microscaling scales on one operand and not the other (or MXFP8 with NVFP4); "
                                                "allowed: both operands Mxfp8Block32 or both Nvfp4Block16");
    }
    const bool nvfp4 = g.a.scale_mode == ScaleMode::Nvfp4Block16;
    if (nvfp4 != fp4 || (!nvfp4 && !is_fp8(g.a.dtype))) {
        return refuse(GemmRule::MxOperandType, std::string("operands of ") + to_string(g.a.dtype).data() +
                                                   (a_mx ? (nvfp4 ? " with NVFP4 scales" : " with MXFP8 scales") : " without their scales") +
                                                   "; allowed: E4M3 or E5M2 with ScaleMode::Mxfp8Block32, E2M1x2 with "
                                                   "ScaleMode::Nvfp4Block16");
    }
    if (g.k() % 32 != 0) {
        return refuse(GemmRule::MxKNotMultipleOf32, "microscaling GEMMs need k to be a multiple of 32 (got k = " +
                                                        std::to_string(g.k()) + "); pad the operands");
    }
    if (g.d.dtype != DType::Float32 && g.d.dtype != DType::BFloat16) {
        return refuse(GemmRule::MxOutput, std::string("microscaling GEMMs write float32 or bfloat16 here (got ") +
                                              to_string(g.d.dtype).data() + ")");
    }
    if ((g.options.epilogue != Epilogue::None && g.options.epilogue != Epilogue::Bias) || g.epilogue.c.data != nullptr) {
        return refuse(GemmRule::MxEpilogue, std::string("microscaling GEMMs take no epilogue but bias and no c (got ") +
                                                epilogue_name(g.options.epilogue) + (g.epilogue.c.data != nullptr ? ", c" : "") +
                                                "); allowed: none, bias");
    }
    return std::nullopt;
}

// Which operand and output types combine, in which layout and with which scale modes.
std::optional<GemmRefusal> type_refusal(const GemmCall& g, bool fp8) {
    const bool fp4 = g.a.dtype == DType::Float4E2M1x2 || g.b.dtype == DType::Float4E2M1x2;
    if (is_fp8(g.a.dtype) != is_fp8(g.b.dtype) || (!is_fp8(g.a.dtype) && g.a.dtype != g.b.dtype) || (fp4 && g.a.dtype != g.b.dtype)) {
        return refuse(GemmRule::OperandTypesMix, std::string("operand types ") + to_string(g.a.dtype).data() + " and " +
                                                     to_string(g.b.dtype).data() +
                                                     " do not mix; allowed: both float32, both bfloat16, both FP8 or both E2M1x2");
    }
    if (auto refusal = mx_refusal(g)) return refusal;
    if (g.a.dtype == DType::Float8E5M2 && g.b.dtype == DType::Float8E5M2) {
        return refuse(GemmRule::E5M2TimesE5M2, "E5M2 x E5M2 has no FP8 GEMM; allowed: E4M3 x E4M3, E4M3 x E5M2");
    }
    if (is_fp8(g.d.dtype) && !fp8) {
        return refuse(GemmRule::Fp8OutputNeedsFp8Operands, std::string("an FP8 output needs FP8 operands (got ") +
                                                               to_string(g.a.dtype).data() + " -> " +
                                                               to_string(g.d.dtype).data() + "); allowed for " +
                                                               to_string(g.a.dtype).data() + ": float32 or bfloat16 output");
    }
    if (g.d.dtype == DType::Float8E5M2 && g.a.dtype != DType::Float8E5M2 && g.b.dtype != DType::Float8E5M2) {
        return refuse(GemmRule::E5M2OutputNeedsE5M2Operand,
                      "E4M3 x E4M3 has no E5M2 output in cuBLASLt; allowed for E4M3 x E4M3: E4M3, bfloat16 or float32 output");
    }
    if (fp8 && (g.options.a_transposed || g.options.b_transposed)) {
        return refuse(GemmRule::Fp8OperandTransposed,
                      std::string("FP8 operands must be K-contiguous (options.a_transposed and b_transposed false; got ") +
                          (g.options.a_transposed ? "a" : "b") +
                          " transposed): FP8 tensor cores take the TN layout only; pass the "
                          "FP8 transposed copy instead");
    }
    if (!fp8 && (is_block(g.a.scale_mode) || is_block(g.b.scale_mode))) {
        return refuse(GemmRule::BlockScaleNeedsFp8,
                      "block scale modes apply to FP8 operands only; allowed for float32 and bfloat16: ScaleMode::Tensor");
    }
    if (fp8 && (is_block(g.a.scale_mode) || is_block(g.b.scale_mode))) {
        if (auto refusal = block_refusal(g)) return refusal;
    }
    return std::nullopt;
}

// FP8 operands' shapes and scales, an FP8 output's scale and epilogue.
std::optional<GemmRefusal> fp8_refusal(const GemmCall& g, bool fp8) {
    if (fp8) {
        if (g.m() % 16 != 0 || g.n() % 16 != 0 || g.k() % 16 != 0) {
            return refuse(GemmRule::Fp8ShapeNotMultipleOf16,
                          "FP8 GEMMs need m, n and k to be multiples of 16 (got m = " + std::to_string(g.m()) + ", n = " +
                              std::to_string(g.n()) + ", k = " + std::to_string(g.k()) + "); pad the operands or use bfloat16");
        }
        if (g.a.scale_inv == nullptr || g.b.scale_inv == nullptr) {
            return refuse(GemmRule::Fp8ScaleInvMissing, std::string("FP8 operands need their scale_inv pointers (") +
                                                            (g.a.scale_inv == nullptr ? "a" : "b") + ".scale_inv is null)");
        }
    }
    if (is_fp8(g.d.dtype)) {
        if (g.d.scale == nullptr) {
            return refuse(GemmRule::Fp8OutputScaleMissing, "an FP8 output needs d.scale (the quantization scale, one float32)");
        }
        if (g.options.epilogue != Epilogue::None && g.options.epilogue != Epilogue::Bias) {
            return refuse(GemmRule::Fp8OutputEpilogue, std::string("an FP8 output takes no epilogue but bias (got ") +
                                                           name(g.options.epilogue) + "); allowed with FP8 d: none, bias");
        }
    }
    return std::nullopt;
}

std::optional<GemmRefusal> null_operand_refusal(const GemmCall& g) {
    if (g.a.data == nullptr || g.b.data == nullptr || g.d.data == nullptr) {
        return refuse(GemmRule::NullOperand, std::string("a, b and d must not be null (") +
                                                 (g.a.data == nullptr ? "a" : g.b.data == nullptr ? "b" : "d") + " is)");
    }
    return std::nullopt;
}

// The epilogue's bias type and the epilogues cuBLASLt refuses for these operands.
std::optional<GemmRefusal> epilogue_refusal(const GemmCall& g, bool fp8) {
    if (needs_bias(g.options.epilogue)) {
        const DType allowed = fp8 ? DType::BFloat16 : g.d.dtype;
        if (g.epilogue.bias.dtype != allowed) {
            return refuse(GemmRule::BiasType,
                          std::string("bias has dtype ") + to_string(g.epilogue.bias.dtype).data() + " with " +
                              to_string(g.a.dtype).data() + " operands and a " + to_string(g.d.dtype).data() +
                              " output; allowed: " + to_string(allowed).data() +
                              (fp8 ? " (cuBLASLt's FP8 kernels take a bfloat16 bias only: a float32 one found no algorithm "
                                     "on the H200, status 15)"
                                   : " (the bias is in d's type)"));
        }
    }
    if (fp8 && (g.options.epilogue == Epilogue::DGeluBGrad || g.options.epilogue == Epilogue::BGradB)) {
        return refuse(GemmRule::Fp8Epilogue, std::string("FP8 operands take no ") + name(g.options.epilogue) +
                                                 " epilogue (cuBLASLt documents no gradient epilogue for FP8 GEMMs); allowed "
                                                 "with FP8 operands: none, bias, GELU_AUX_BIAS");
    }
    if (g.options.epilogue == Epilogue::BGradB && !g.options.a_transposed) {
        return refuse(GemmRule::BGradBNeedsTransposedA,
                      "the BGRADB epilogue sums a over k and needs a stored transposed ([k, m], options.a_transposed = true); "
                      "cuBLASLt has no algorithm otherwise (status 15 on the H200)");
    }
    const DType side = is_fp8(g.d.dtype) ? DType::BFloat16 : g.d.dtype;
    const std::pair<const char*, const Tensor*> side_tensors[] = {
        {"aux", needs_aux(g.options.epilogue) ? &g.epilogue.aux : nullptr},
        {"bias_grad", needs_bias_grad(g.options.epilogue) ? &g.epilogue.bias_grad : nullptr}};
    for (const auto& [what, t] : side_tensors) {
        if (t != nullptr && t->dtype != side) {
            return refuse(GemmRule::EpilogueTensorType, std::string(what) + " has dtype " + to_string(t->dtype).data() +
                                                            " with a " + to_string(g.d.dtype).data() + " output; allowed: " +
                                                            to_string(side).data() + " (d's type, bfloat16 for an FP8 d)");
        }
    }
    return std::nullopt;
}

std::optional<GemmRefusal> accumulate_refusal(const GemmCall& g) {
    if (g.epilogue.c.data == nullptr) return std::nullopt;
    // Unverified on a GPU beyond these: cuBLASLt documents C for the high-precision and per-tensor FP8 kernels
    // with a float32 or 16-bit D; nothing here needs it with an FP8 D, block scales or a gradient epilogue.
    if (is_fp8(g.d.dtype) || is_block(g.a.scale_mode) ||
        (g.options.epilogue != Epilogue::None && g.options.epilogue != Epilogue::Bias)) {
        return refuse(GemmRule::AccumulateUse,
                      std::string("c (accumulating d += a·bᵀ) with ") +
                          (is_fp8(g.d.dtype)          ? std::string("an FP8 output")
                           : is_block(g.a.scale_mode) ? std::string("block-scaled operands")
                                                      : std::string("the ") + name(g.options.epilogue) + " epilogue") +
                          "; allowed: a float32 or bfloat16 output, per-tensor scales, epilogue none or bias");
    }
    return std::nullopt;
}

std::optional<GemmRefusal> workspace_refusal(const GemmCall& g) {
    if (g.workspace.bytes != 0 &&
        (g.workspace.data == nullptr || reinterpret_cast<std::uintptr_t>(g.workspace.data) % 256 != 0)) {
        return refuse(GemmRule::Workspace, "workspace.data = " + address(g.workspace.data) +
                                               " with workspace.bytes = " + std::to_string(g.workspace.bytes) +
                                               ": the workspace must be 256-byte aligned device memory (or none: "
                                               "workspace.bytes = 0)");
    }
    return std::nullopt;
}

// What the GPU's compute capability allows (not applied on the host target).
std::optional<GemmRefusal> compute_capability_refusal(const GemmCall& g, bool fp8, const GemmTarget& target) {
    if (target.host) return std::nullopt;
    const int cc = target.cc_major * 10 + target.cc_minor;
    const std::string this_gpu = std::to_string(target.cc_major) + "." + std::to_string(target.cc_minor);
    if (fp8 && cc < 89) {
        return refuse(GemmRule::Fp8NeedsCC89,
                      "FP8 GEMMs need compute capability 8.9 or newer; this GPU has " + this_gpu + " (use bfloat16)");
    }
    if (fp8 && is_block(g.a.scale_mode) && target.cc_major != 9) {
        return refuse(GemmRule::BlockScalingNeedsCC9x,
                      "block-scaled FP8 GEMMs run on compute capability 9.x (Hopper) only; "
                      "this GPU has " +
                          this_gpu + " (use per-tensor scaling)");
    }
    // Unverified on a GPU: Transformer Engine runs both formats' GEMMs on 10.x and turns MXFP8 off from 12.0 on.
    if (is_mx(g.a.scale_mode) && target.cc_major != 10) {
        return refuse(GemmRule::MxNeedsCC10, "MXFP8 and NVFP4 GEMMs run on compute capability 10.x (Blackwell) only; this GPU has " +
                                                 this_gpu + " (the recipes emulate them elsewhere)");
    }
    return std::nullopt;
}

}  // namespace

std::optional<GemmRefusal> gemm_refusal(const GemmCall& g, const GemmTarget& target) {
    if (auto refusal = unknown_value_refusal(g)) return refusal;
    // Quantized operands (FP8, or NVFP4's E2M1 pairs): the TN layout, scale_invs, a bfloat16 bias, no gradient epilogue.
    const bool fp8 = is_fp8(g.a.dtype) || is_fp8(g.b.dtype) || g.a.dtype == DType::Float4E2M1x2 || g.b.dtype == DType::Float4E2M1x2;
    if (auto refusal = null_operand_refusal(g)) return refusal;
    if (auto refusal = tensor_shape_refusal(g)) return refusal;
    if (auto refusal = size_refusal(g)) return refusal;
    if (auto refusal = type_refusal(g, fp8)) return refusal;
    if (auto refusal = fp8_refusal(g, fp8)) return refusal;
    if (auto refusal = epilogue_buffer_refusal(g)) return refusal;
    if (auto refusal = alignment_refusal(g, fp8)) return refusal;
    if (auto refusal = epilogue_refusal(g, fp8)) return refusal;
    if (auto refusal = accumulate_refusal(g)) return refusal;
    if (auto refusal = gemm_c_refusal(g, gemm_c_operand(g))) return refusal;
    if (auto refusal = workspace_refusal(g)) return refusal;
    return compute_capability_refusal(g, fp8, target);
}

void throw_gemm_refused(std::string_view call, const GemmRefusal& refusal) {
    throw GemmRefused(refusal.rule, std::string(call) + ": " + refusal.message);
}

}  // namespace tewb::kernels
