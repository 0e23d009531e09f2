#pragma once

// The GEMM suite's buffers and its rule table's cases: one valid call per operand kind (RuleBuffers) and, for every
// rule the host target applies, calls that break it and nothing before it (gemm_rule_cases).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernel_tensors.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/gemm_types.h"

namespace tewb::test::gemm_cases {

using namespace tewb::kernels;
using tewb::test::tensor;

// Bytes starting at a 64-byte boundary (every pointer the GEMM takes must be 16-byte aligned).
class Buffer {
public:
    explicit Buffer(std::size_t bytes = 0) : storage_(bytes + 64, 0) {}
    unsigned char* bytes() {
        const auto p = reinterpret_cast<std::uintptr_t>(storage_.data());
        return storage_.data() + ((p + 63) / 64 * 64 - p);
    }
    float* floats() { return reinterpret_cast<float*>(bytes()); }

private:
    std::vector<unsigned char> storage_;
};

// A valid FP8 call (m = n = 64, k = 128) over real buffers, for the rule cases to break one field at a time.
struct RuleBuffers {
    Buffer a{64 * 256}, b{64 * 256}, d{64 * 64 * 4}, scales{4096}, bias{1024}, aux{64 * 64 * 4}, bias_grad{1024}, small{64};
    Buffer workspace{1024};

    GemmCall fp8() {
        GemmCall g;
        g.a = tensor(a.bytes(), DType::Float8E4M3, 64, 128);
        g.a.scale_inv = scales.floats();
        g.b = tensor(b.bytes(), DType::Float8E4M3, 64, 128);
        g.b.scale_inv = scales.floats() + 4;
        g.d = tensor(d.bytes(), DType::BFloat16, 64, 64);
        return g;
    }
    GemmCall bf16() {
        GemmCall g = fp8();
        g.a = tensor(a.bytes(), DType::BFloat16, 64, 128);
        g.b = tensor(b.bytes(), DType::BFloat16, 64, 128);
        return g;
    }
    GemmCall block() {
        GemmCall g = fp8();
        g.a.scale_mode = ScaleMode::Block1x128;
        g.b.scale_mode = ScaleMode::Block128x128;
        return g;
    }
    // MXFP8 (E4M3 with E8M0 scales per 32, the bytes in `scales`) and NVFP4 (E2M1 pairs: [64, 64] bytes hold k = 128).
    GemmCall mx() {
        GemmCall g = fp8();
        g.a.scale_mode = g.b.scale_mode = ScaleMode::Mxfp8Block32;
        return g;
    }
    GemmCall nvfp4() {
        GemmCall g = fp8();
        g.a = tensor(a.bytes(), DType::Float4E2M1x2, 64, 64);
        g.b = tensor(b.bytes(), DType::Float4E2M1x2, 64, 64);
        g.a.scale_inv = scales.floats();
        g.b.scale_inv = scales.floats() + 4;
        g.a.scale_mode = g.b.scale_mode = ScaleMode::Nvfp4Block16;
        g.options.alpha = small.floats();
        return g;
    }
    // The epilogue's tensors in the shapes these calls take, in their d's bfloat16 unless told.
    Tensor bias_vector(DType type = DType::BFloat16) { return tensor(bias.bytes(), type, 1, 64); }
    Tensor aux_matrix(std::size_t row_stride = 64, DType type = DType::BFloat16) {
        Tensor t = tensor(aux.bytes(), type, 64, 64);
        t.row_stride = row_stride;
        return t;
    }
    Tensor bias_grad_vector(DType type = DType::BFloat16) { return tensor(bias_grad.bytes(), type, 1, 64); }
};

template <typename T>
T* offset(T* p, std::ptrdiff_t bytes) {
    return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) + bytes);
}

struct RuleCase {
    const char* name;
    GemmRule rule;
    std::function<GemmCall(RuleBuffers&)> args;
};

// Each case's call breaks the named rule and no rule the table applies before it.
inline std::vector<RuleCase> gemm_rule_cases() {
    return {
        {"unknown type", GemmRule::UnknownValue, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = static_cast<DType>(9); return g; }},
        {"unknown epilogue", GemmRule::UnknownValue, [](RuleBuffers& r) { auto g = r.fp8(); g.options.epilogue = static_cast<Epilogue>(9); return g; }},
        {"b's k not a's", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.b.cols = 64; return g; }},
        {"b stored transposed without its shape", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.options.b_transposed = true; return g; }},
        {"d not [m, n]", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.d.rows = 32; return g; }},
        {"c not [m, n]", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.epilogue.c = tensor(r.aux.bytes(), DType::BFloat16, 64, 32); return g; }},
        {"a strided", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.a.row_stride = 256; return g; }},
        {"bias strided", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::Bias; g.epilogue.bias = tensor(r.bias.bytes(), DType::BFloat16, 2, 32); g.epilogue.bias.row_stride = 64; return g; }},
        {"bias of n + 1 elements", GemmRule::TensorShape, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::Bias; g.epilogue.bias = tensor(r.bias.bytes(), DType::BFloat16, 1, 65); return g; }},
        {"k = 0", GemmRule::EmptyK, [](RuleBuffers& r) { auto g = r.bf16(); g.a.cols = g.b.cols = 0; return g; }},
        {"m over 32 bits", GemmRule::SizeOver32Bits, [](RuleBuffers& r) { auto g = r.bf16(); g.a.rows = g.d.rows = std::size_t{1} << 31; return g; }},
        {"types mix", GemmRule::OperandTypesMix, [](RuleBuffers& r) { auto g = r.fp8(); g.b.dtype = DType::BFloat16; return g; }},
        {"float32 x bfloat16", GemmRule::OperandTypesMix, [](RuleBuffers& r) { auto g = r.bf16(); g.a.dtype = DType::Float32; return g; }},
        {"E5M2 x E5M2", GemmRule::E5M2TimesE5M2, [](RuleBuffers& r) { auto g = r.fp8(); g.a.dtype = g.b.dtype = DType::Float8E5M2; return g; }},
        {"FP8 d from bfloat16", GemmRule::Fp8OutputNeedsFp8Operands, [](RuleBuffers& r) { auto g = r.bf16(); g.d.dtype = DType::Float8E4M3; return g; }},
        {"E5M2 d from E4M3", GemmRule::E5M2OutputNeedsE5M2Operand, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E5M2; g.d.scale = r.scales.floats(); return g; }},
        {"FP8 a transposed", GemmRule::Fp8OperandTransposed, [](RuleBuffers& r) { auto g = r.fp8(); g.options.a_transposed = true; std::swap(g.a.rows, g.a.cols); return g; }},
        {"FP8 b transposed", GemmRule::Fp8OperandTransposed, [](RuleBuffers& r) { auto g = r.fp8(); g.options.b_transposed = true; std::swap(g.b.rows, g.b.cols); return g; }},
        {"block scale on bfloat16", GemmRule::BlockScaleNeedsFp8, [](RuleBuffers& r) { auto g = r.bf16(); g.a.scale_mode = ScaleMode::Block1x128; return g; }},
        {"block x tensor", GemmRule::BlockAndTensorScaleMix, [](RuleBuffers& r) { auto g = r.block(); g.b.scale_mode = ScaleMode::Tensor; return g; }},
        {"128x128 twice", GemmRule::Block128x128Twice, [](RuleBuffers& r) { auto g = r.block(); g.a.scale_mode = ScaleMode::Block128x128; return g; }},
        {"block k = 80", GemmRule::BlockKNotMultipleOf128, [](RuleBuffers& r) { auto g = r.block(); g.a.cols = g.b.cols = 80; return g; }},
        {"block fast", GemmRule::BlockNeedsSplitAccumulation, [](RuleBuffers& r) { auto g = r.block(); g.options.accumulation = Accumulation::Fast; return g; }},
        {"block FP8 d", GemmRule::BlockFp8Output, [](RuleBuffers& r) { auto g = r.block(); g.d.dtype = DType::Float8E4M3; g.d.scale = r.scales.floats(); return g; }},
        {"block GELU", GemmRule::BlockEpilogue, [](RuleBuffers& r) { auto g = r.block(); g.options.epilogue = Epilogue::GeluAuxBias; return g; }},
        {"FP8 m = 40", GemmRule::Fp8ShapeNotMultipleOf16, [](RuleBuffers& r) { auto g = r.fp8(); g.a.rows = g.d.rows = 40; return g; }},
        {"FP8 k = 72", GemmRule::Fp8ShapeNotMultipleOf16, [](RuleBuffers& r) { auto g = r.fp8(); g.a.cols = g.b.cols = 72; return g; }},
        {"no scale_inv", GemmRule::Fp8ScaleInvMissing, [](RuleBuffers& r) { auto g = r.fp8(); g.b.scale_inv = nullptr; return g; }},
        {"FP8 d without d_scale", GemmRule::Fp8OutputScaleMissing, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E4M3; return g; }},
        {"FP8 d with GELU", GemmRule::Fp8OutputEpilogue, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E4M3; g.d.scale = r.scales.floats(); g.options.epilogue = Epilogue::GeluAuxBias; return g; }},
        {"null d", GemmRule::NullOperand, [](RuleBuffers& r) { auto g = r.bf16(); g.d.data = nullptr; return g; }},
        {"a not given (null, [0, 0])", GemmRule::NullOperand, [](RuleBuffers& r) { auto g = r.bf16(); g.a = {}; return g; }},
        {"bias missing", GemmRule::EpilogueBufferMissing, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::Bias; return g; }},
        {"aux missing", GemmRule::EpilogueBufferMissing, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); return g; }},
        {"bias_grad missing", GemmRule::EpilogueBufferMissing, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::DGeluBGrad; g.epilogue.aux = r.aux_matrix(); return g; }},
        {"aux_ld < n", GemmRule::AuxLeadingDimension, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::DGeluBGrad; g.epilogue.aux = r.aux_matrix(56); g.epilogue.bias_grad = r.bias_grad_vector(); return g; }},
        {"aux_ld not a multiple of 8", GemmRule::AuxLeadingDimension, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::DGeluBGrad; g.epilogue.aux = r.aux_matrix(65); g.epilogue.bias_grad = r.bias_grad_vector(); return g; }},
        {"a misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.bf16(); g.a.data = offset(g.a.data, 8); return g; }},
        {"a.scale_inv misaligned (2-byte aligned only)", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.fp8(); g.a.scale_inv = offset(g.a.scale_inv, 2); return g; }},
        {"b.scale_inv misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.fp8(); g.b.scale_inv = offset(g.b.scale_inv, 1); return g; }},
        {"block scale misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.block(); g.b.scale_inv = offset(g.b.scale_inv, 4); return g; }},
        {"d_scale misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E4M3; g.d.scale = offset(r.scales.floats(), 2); return g; }},
        {"d_amax misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E4M3; g.d.scale = r.scales.floats(); g.d.amax = offset(r.small.floats(), 2); return g; }},
        {"bias misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::Bias; g.epilogue.bias = r.bias_vector(); g.epilogue.bias.data = offset(r.bias.bytes(), 2); return g; }},
        {"aux misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); g.epilogue.aux = r.aux_matrix(); g.epilogue.aux.data = offset(r.aux.bytes(), 8); return g; }},
        {"bias_grad misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.bf16(); g.options.a_transposed = true; std::swap(g.a.rows, g.a.cols); g.options.epilogue = Epilogue::BGradB; g.epilogue.bias_grad = r.bias_grad_vector(); g.epilogue.bias_grad.data = offset(r.bias_grad.bytes(), 4); return g; }},
        {"H200 1: FP8 with a float32 bias", GemmRule::BiasType, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float32; g.options.epilogue = Epilogue::Bias; g.epilogue.bias = r.bias_vector(DType::Float32); return g; }},
        {"bfloat16 bias with float32 d", GemmRule::BiasType, [](RuleBuffers& r) { auto g = r.bf16(); g.a.dtype = g.b.dtype = DType::Float32; g.d.dtype = DType::Float32; g.options.epilogue = Epilogue::Bias; g.epilogue.bias = r.bias_vector(); return g; }},
        {"float32 aux with a bfloat16 d", GemmRule::EpilogueTensorType, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); g.epilogue.aux = r.aux_matrix(64, DType::Float32); return g; }},
        {"E4M3 aux with FP8 operands", GemmRule::EpilogueTensorType, [](RuleBuffers& r) { auto g = r.fp8(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); g.epilogue.aux = r.aux_matrix(64, DType::Float8E4M3); return g; }},
        {"float32 bias_grad with a bfloat16 d", GemmRule::EpilogueTensorType, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::DGeluBGrad; g.epilogue.aux = r.aux_matrix(); g.epilogue.bias_grad = r.bias_grad_vector(DType::Float32); return g; }},
        {"FP8 DGELU_BGRAD", GemmRule::Fp8Epilogue, [](RuleBuffers& r) { auto g = r.fp8(); g.options.epilogue = Epilogue::DGeluBGrad; g.epilogue.aux = r.aux_matrix(); g.epilogue.bias_grad = r.bias_grad_vector(); return g; }},
        {"FP8 BGRADB", GemmRule::Fp8Epilogue, [](RuleBuffers& r) { auto g = r.fp8(); g.options.epilogue = Epilogue::BGradB; g.epilogue.bias_grad = r.bias_grad_vector(); return g; }},
        {"H200 3: BGRADB with a as stored [m, k]", GemmRule::BGradBNeedsTransposedA, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::BGradB; g.epilogue.bias_grad = r.bias_grad_vector(); return g; }},
        {"c with an FP8 d", GemmRule::AccumulateUse, [](RuleBuffers& r) { auto g = r.fp8(); g.d.dtype = DType::Float8E4M3; g.d.scale = r.scales.floats(); g.epilogue.c = tensor(r.aux.bytes(), DType::Float8E4M3, 64, 64); return g; }},
        {"c with block scales", GemmRule::AccumulateUse, [](RuleBuffers& r) { auto g = r.block(); g.epilogue.c = tensor(r.aux.bytes(), DType::BFloat16, 64, 64); return g; }},
        {"c with GELU", GemmRule::AccumulateUse, [](RuleBuffers& r) { auto g = r.bf16(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); g.epilogue.aux = r.aux_matrix(); g.epilogue.c = g.d; return g; }},
        {"MXFP8 scales on one operand", GemmRule::MxScaleModeMix, [](RuleBuffers& r) { auto g = r.mx(); g.b.scale_mode = ScaleMode::Tensor; return g; }},
        {"MXFP8 x NVFP4 scales", GemmRule::MxScaleModeMix, [](RuleBuffers& r) { auto g = r.mx(); g.b.scale_mode = ScaleMode::Nvfp4Block16; return g; }},
        {"NVFP4 scales on E4M3", GemmRule::MxOperandType, [](RuleBuffers& r) { auto g = r.mx(); g.a.scale_mode = g.b.scale_mode = ScaleMode::Nvfp4Block16; return g; }},
        {"MXFP8 scales on bfloat16", GemmRule::MxOperandType, [](RuleBuffers& r) { auto g = r.bf16(); g.a.scale_mode = g.b.scale_mode = ScaleMode::Mxfp8Block32; return g; }},
        {"E2M1 without its scales", GemmRule::MxOperandType, [](RuleBuffers& r) { auto g = r.nvfp4(); g.a.scale_mode = g.b.scale_mode = ScaleMode::Tensor; g.options.alpha = nullptr; return g; }},
        {"E2M1 x E4M3", GemmRule::OperandTypesMix, [](RuleBuffers& r) { auto g = r.nvfp4(); g.b = r.fp8().b; return g; }},
        {"MXFP8 k = 48", GemmRule::MxKNotMultipleOf32, [](RuleBuffers& r) { auto g = r.mx(); g.a.cols = g.b.cols = 48; return g; }},
        {"MXFP8 to E4M3", GemmRule::MxOutput, [](RuleBuffers& r) { auto g = r.mx(); g.d.dtype = DType::Float8E4M3; g.d.scale = r.scales.floats(); return g; }},
        {"NVFP4 with GELU", GemmRule::MxEpilogue, [](RuleBuffers& r) { auto g = r.nvfp4(); g.options.epilogue = Epilogue::GeluAuxBias; g.epilogue.bias = r.bias_vector(); g.epilogue.aux = r.aux_matrix(); return g; }},
        {"MXFP8 onto c", GemmRule::MxEpilogue, [](RuleBuffers& r) { auto g = r.mx(); g.epilogue.c = tensor(r.aux.bytes(), DType::BFloat16, 64, 64); return g; }},
        {"alpha with FP8", GemmRule::AlphaUse, [](RuleBuffers& r) { auto g = r.fp8(); g.options.alpha = r.small.floats(); return g; }},
        {"alpha misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.nvfp4(); g.options.alpha = offset(r.small.floats(), 4); return g; }},
        {"c misaligned", GemmRule::Misaligned, [](RuleBuffers& r) { auto g = r.bf16(); g.epilogue.c = tensor(offset(r.aux.bytes(), 8), DType::BFloat16, 64, 64); return g; }},
        {"workspace misaligned", GemmRule::Workspace, [](RuleBuffers& r) { auto g = r.bf16(); g.workspace = {offset(r.workspace.bytes(), 16), 512}; return g; }},
        {"workspace bytes without memory", GemmRule::Workspace, [](RuleBuffers& r) { auto g = r.bf16(); g.workspace.bytes = 512; return g; }},
    };
}

}  // namespace tewb::test::gemm_cases
