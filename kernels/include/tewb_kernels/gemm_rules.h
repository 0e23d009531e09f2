#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tewb_kernels/gemm_types.h"
#include "tewb_kernels/kernel_error.h"

// What the GEMM accepts, as one table shared by its CUDA entry point (cuBLASLt) and its host twin (gemm.h); no
// CUDA here. The host target holds every rule but the compute-capability ones, so a
// combination cuBLASLt would refuse is refused on the CPU first, with the same rule and message.
namespace tewb::kernels {

enum class GemmRule {
    UnknownValue,                // an enum field outside its enumerators
    TensorShape,                 // b's k not a's, d (or c) not [m, n], a vector not its length, a strided a, b, d or c
    EmptyK,                      // k = 0
    SizeOver32Bits,              // m, n or k beyond INT32_MAX
    OperandTypesMix,             // a and b not both float32, both bfloat16 or both FP8
    E5M2TimesE5M2,               // no FP8 GEMM for E5M2 x E5M2
    Fp8OutputNeedsFp8Operands,   // an FP8 d with float32 or bfloat16 operands
    E5M2OutputNeedsE5M2Operand,  // E4M3 x E4M3 -> E5M2
    Fp8OperandTransposed,        // FP8 only in the TN layout
    BlockScaleNeedsFp8,          // a block scale mode on a float32 / bfloat16 operand
    BlockAndTensorScaleMix,      // one operand block-scaled, the other per tensor
    Block128x128Twice,           // 128x128 x 128x128: no cuBLASLt kernel
    BlockKNotMultipleOf128,
    BlockNeedsSplitAccumulation,
    BlockFp8Output,              // block-scaled GEMMs write float32 or bfloat16
    BlockEpilogue,               // block-scaled GEMMs take no epilogue but bias
    MxScaleModeMix,              // a microscaling mode on one operand only, or MXFP8 with NVFP4
    MxOperandType,               // MXFP8 scales on data not E4M3/E5M2, NVFP4 scales on data not E2M1x2, or E2M1x2 without them
    MxKNotMultipleOf32,          // microscaling GEMMs: k a multiple of 32
    MxOutput,                    // microscaling GEMMs write float32 or bfloat16
    MxEpilogue,                  // microscaling GEMMs take no epilogue but bias, and no c
    AlphaUse,                    // alpha without microscaling operands
    Fp8ShapeNotMultipleOf16,
    Fp8ScaleInvMissing,
    Fp8OutputScaleMissing,       // FP8 d without d.scale
    Fp8OutputEpilogue,           // FP8 d takes no epilogue but bias
    NullOperand,                 // a's, b's or d's data null
    EpilogueBufferMissing,       // bias, aux or bias_grad the epilogue needs is null
    AuxLeadingDimension,         // aux's row stride < n or not a multiple of 8
    Misaligned,                  // a pointer not 16-byte aligned
    BiasType,                    // bias's dtype not d's (float32/bfloat16 operands) or not bfloat16 (FP8)
    EpilogueTensorType,          // aux or bias_grad not in d's dtype (bfloat16 for an FP8 d)
    Fp8Epilogue,                 // an epilogue cuBLASLt's FP8 GEMMs do not document (DGELU_BGRAD)
    BGradBNeedsTransposedA,      // BGRADB sums a over k: a stored [k, m]
    COperandLayout,              // C at D's address with another layout, or a C type the output does not take
    AccumulateUse,               // c (d += a·bᵀ) with an FP8 d, block scales, or an epilogue other than none or bias
    Workspace,                   // workspace bytes > 0 without 256-byte aligned memory
    Fp8NeedsCC89,                // device target: FP8 below compute capability 8.9
    BlockScalingNeedsCC9x,       // device target: block scaling off Hopper
    MxNeedsCC10,                 // device target: microscaling off compute capability 10.x
    NoAlgorithm,                 // cuBLASLt's heuristic found none (or said CUBLAS_STATUS_NOT_SUPPORTED)
    MatmulRefused,               // device target: cublasLtMatmul refused a call its heuristic accepted (status 15 or 7)
};

// The enumerator's name, e.g. "BiasType".
std::string_view to_string(GemmRule rule);

// Where the GEMM runs: the host implementation (no compute-capability limits), or a GPU of compute
// capability cc_major.cc_minor.
struct GemmTarget {
    bool host = true;
    int cc_major = 0;
    int cc_minor = 0;
};

struct GemmRefusal {
    GemmRule rule;
    std::string message;  // which value, why, and what is allowed; without the entry point's name
};

// The first rule `call` breaks on `target`, in the table's order; none when the GEMM can run.
std::optional<GemmRefusal> gemm_refusal(const GemmCall& call, const GemmTarget& target);

// The C operand the wrapper hands cuBLASLt: the call's c in its dtype when set (read, beta = 1); else (beta = 0:
// never read, but it must describe a valid matrix) d itself in d's dtype, or, for an FP8 d, no pointer in bfloat16
// (cuBLASLt's FP8-output kernels take a bfloat16 C, and C at D's address must share D's layout: the H200
// refused that with status 7).
struct GemmCOperand {
    const void* data = nullptr;
    DType type = DType::BFloat16;
};
GemmCOperand gemm_c_operand(const GemmCall& call);

// Whether running the call more than once leaves what running it once does, so its plan may be timed on it
// (gemm.h, set_gemm_autotune): not when d is read as well as written (accumulated onto c = d, or d the same memory
// as a, b, aux or the bias).
bool gemm_can_be_timed(const GemmCall& call);
// The COperandLayout rule on a given C choice (gemm_refusal applies it to gemm_c_operand's).
std::optional<GemmRefusal> gemm_c_refusal(const GemmCall& call, const GemmCOperand& c);

// A refusal as an error: the rule travels with it, so callers never match messages.
class GemmRefused : public KernelError {
public:
    GemmRefused(GemmRule rule, const std::string& what) : KernelError(what), rule_(rule) {}
    GemmRule rule() const noexcept { return rule_; }

private:
    GemmRule rule_;
};

// The largest power of two up to 256 that divides the address (256 for null): what cuBLASLt's alignment
// preferences distinguish, and what describe_gemm reports.
std::uint32_t pointer_alignment(const void* pointer);

// The call as a refusal or a fallback names it: types, m/n/k, scale modes, epilogue, and the alignment of every
// pointer it passes (the largest power of two up to 256 dividing the address), e.g. "E4M3 x E4M3 -> bfloat16,
// m = 3072, n = 768, k = 768, epilogue BIAS; alignment (bytes): a 256, b 256, d 256, a.scale_inv 256,
// b.scale_inv 4, bias 256" (d's scale and amax are named d_scale and d_amax, as the journal names them).
std::string describe_gemm(const GemmCall& call);

// Throws GemmRefused with "<call>: <message>".
[[noreturn]] void throw_gemm_refused(std::string_view call, const GemmRefusal& refusal);

}  // namespace tewb::kernels
