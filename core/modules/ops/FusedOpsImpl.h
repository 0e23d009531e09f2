#pragma once

// The class behind fused_host_ops() / fused_cuda_ops() (FusedOps.h), shared by the files that implement it
// (one concern each): FusedOps.cpp (operand checks, launching, FP8 outputs), FusedGemms.cpp,
// FusedNormActivation.cpp, FusedRmsNormSwiglu.cpp, FusedRotary.cpp, FusedAttention.cpp, FusedCasts.cpp, FusedMicroscaling.cpp, FusedModelEnds.cpp
// (embedding, loss, optimizer). Internal to
// core/modules/ops.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ATen/record_function.h>

#include "core/fp8/BlockScaling.h"
#include "core/ledger/Ledger.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/TeOps.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/gemm_types.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "tewb_kernels/tensor.h"

#ifdef TEWB_FUSED_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

// One argument list for both implementations of a kernel (declared once, tewb_kernels/entry_points.h): the host
// twin over CPU tensors, the CUDA one on LibTorch's current stream over CUDA tensors. `where` picks; `reads` and
// `writes` are the tensors the call reads and writes, for the launch ledger's bytes. The file using it includes
// the kernel's header (tewb_kernels/<op>.h).
#ifdef TEWB_FUSED_CUDA
#define TEWB_KERNEL(where, reads, writes, fn, ...)                                                           \
    run_kernel("tewb::" #fn, where, reads, writes, [&] { kernels::host::fn(__VA_ARGS__, kernels::Stream{}); }, \
               [&](cudaStream_t stream) { kernels::fn(__VA_ARGS__, kernels::Stream{stream}); })
#else
#define TEWB_KERNEL(where, reads, writes, fn, ...) \
    run_kernel("tewb::" #fn, where, reads, writes, [&] { kernels::host::fn(__VA_ARGS__, kernels::Stream{}); })
#endif

namespace tewb::fused_ops {

using Tensors = std::initializer_list<at::Tensor>;
// Why an operand does not fit the kernels; nothing when it does.
using Misfit = std::optional<std::string>;

inline bool float_or_bf16(at::ScalarType t) {
    return t == at::kFloat || t == at::kBFloat16;
}

inline std::size_t rows_of(const at::Tensor& t) {
    return static_cast<std::size_t>(t.size(0));
}

inline std::size_t cols_of(const at::Tensor& t) {
    return static_cast<std::size_t>(t.size(1));
}

// The elements between two tokens' rows of t [batch, seq, heads, head_dim] read as [batch · seq, heads · head_dim]:
// each token's heads · head_dim values contiguous and the tokens one stride apart (at least a row), as the fused
// projection hands q, k and v out and the attention's backward leaves their gradients; nothing where they are not (an
// expanded tensor, a transposed one). FusedCasts.cpp.
std::optional<std::int64_t> token_row_stride(const at::Tensor& t);

// A byte buffer of `bytes` on `like`'s device (a kernel's workspace).
at::Tensor byte_buffer(std::size_t bytes, const at::Tensor& like);

std::uint64_t bytes_of(const std::vector<at::Tensor>& tensors);

#ifdef TEWB_FUSED_CUDA
inline cudaStream_t stream_of(const at::Tensor& t) {
    return at::cuda::getCurrentCUDAStream(t.get_device()).stream();
}
#endif

class FusedOps final : public TeOps {
public:
    explicit FusedOps(OpsKind kind) : kind_(kind) {}

    std::string_view name() const override { return "fused"; }
    OpsKind kind() const override { return kind_; }
    bool block_gemms_native() const override;
    std::uint64_t kernel_launches() const override { return kernels::launch_count(); }

    // FusedCasts.cpp
    at::Tensor abs_max(const at::Tensor& x) const override;
    void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe, float numerator,
                        const UpdateRecord& record) const override;
    Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const override;
    Fp8Tensor quantize_with_handed_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, const at::Tensor& scale_inv,
                                         bool with_transpose) const override;
    std::vector<Fp8Tensor> quantize_weights(const std::vector<WeightCast>& casts) const override;
    Fp8GradWithBias quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const override;
    GradWithBias cast_dbias(const at::Tensor& dy, at::ScalarType dtype) const override;
    GradWithBias stack_heads_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, at::ScalarType dtype,
                                   bool with_bias_grad) const override;
    Fp8GradWithBias stack_heads_quantize_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                               const Fp8Quantizer& quantizer, bool with_bias_grad,
                                               const at::Tensor& handed_scale_inv) const override;

    // FusedNormActivation.cpp
    LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                       at::ScalarType out_dtype) const override;
    LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                       const at::Tensor& gamma) const override;
    LayerNormGrads layer_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                           const at::Tensor& rstd, const at::Tensor& gamma,
                                           const at::Tensor& dresidual) const override;
    std::optional<LayerNormGradsWithCast> layer_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                                                   const at::Tensor& rstd, const at::Tensor& gamma,
                                                                   const at::Tensor& dresidual, at::ScalarType dtype,
                                                                   bool with_bias_grad) const override;
    std::optional<LayerNormGradsWithFp8> layer_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                                                      const at::Tensor& rstd, const at::Tensor& gamma,
                                                                      const at::Tensor& dresidual, const Fp8Quantizer& quantizer,
                                                                      bool with_bias_grad) const override;
    at::Tensor gelu_forward(const at::Tensor& x) const override;
    at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const override;
    Fp8Tensor layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                  at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                  LayerNormResult& ln) const override;
    Fp8Tensor gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const override;
    Fp8GradWithBias gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x,
                                           const Fp8Quantizer& quantizer) const override;

    // FusedRmsNormSwiglu.cpp
    RmsNormResult rms_norm_forward(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype) const override;
    std::optional<LayerNormGradsWithCast> rms_norm_backward_cast(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                                 const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                 at::ScalarType dtype, bool with_bias_grad) const override;
    std::optional<LayerNormGradsWithFp8> rms_norm_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                                    const at::Tensor& gamma, const at::Tensor& dresidual,
                                                                    const Fp8Quantizer& quantizer, bool with_bias_grad) const override;
    RmsNormGrads rms_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                   const at::Tensor& gamma) const override;
    RmsNormGrads rms_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                                       const at::Tensor& dresidual) const override;
    Fp8Tensor rms_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, double eps, at::ScalarType out_dtype,
                                const Fp8Quantizer& quantizer, bool keep_output, RmsNormResult& rn) const override;
    at::Tensor swiglu_forward(const at::Tensor& in) const override;
    at::Tensor swiglu_backward(const at::Tensor& dy, const at::Tensor& in) const override;
    Fp8Tensor swiglu_quantize(const at::Tensor& in, const Fp8Quantizer& quantizer) const override;
    Fp8Tensor swiglu_backward_quantize(const at::Tensor& dy, const at::Tensor& in, const Fp8Quantizer& quantizer) const override;

    // FusedRotary.cpp
    RotaryHandOver rotary_handing_over(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                                       bool inverse, const Fp8Quantizer& quantizer) const override;
    Misfit rotary_misfit(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads) const;
    at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, std::int64_t rotated_heads,
                      bool inverse) const override;

    // FusedAttention.cpp
    bool owns_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const override;
    AttentionResult attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                      const Fp8Quantizer* out_scale) const override;
    AttentionGrads attention_backward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const AttentionResult& forward,
                                      const at::Tensor& d_out, double scale, const Fp8Quantizer* grad_scale) const override;

    // FusedGemms.cpp
    at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    at::ScalarType out_dtype) const override;
    at::Tensor gemm_add(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                        at::ScalarType product_dtype, const at::Tensor& residual) const override;
    at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                        const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                        Accumulation accumulation) const override;
    at::Tensor fp8_gemm_add(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                            const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType product_dtype,
                            Accumulation accumulation, const at::Tensor& residual) const override;
    GeluGemmResult gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             at::ScalarType out_dtype) const override;
    GradWithBias gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                            at::ScalarType out_dtype) const override;
    GradWithBias wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool with_bias) const override;

    // FusedModelEnds.cpp
    at::Tensor embedding_forward(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens) const override;
    at::Tensor embedding_backward(const at::Tensor& dy, const at::Tensor& tokens, at::Tensor& dtable,
                                  at::ScalarType positions_dtype) const override;
    at::Tensor cross_entropy_with_grad(at::Tensor& logits, const at::Tensor& targets) const override;
    std::vector<Fp8Tensor> adamw_step(at::TensorList params, at::TensorList grads, at::TensorList exp_avg,
                                      at::TensorList exp_avg_sq, const at::Tensor& step, at::TensorList copies,
                                      const std::vector<OptimizerFp8Cast>& fp8, const AdamWHyper& hyper) const override;

private:
    // FusedOps.cpp: where the operands must be and what they must look like.
    bool on_host() const { return kind_ == OpsKind::FusedHost; }
    Misfit device_misfit(const at::Tensor& t, const char* what) const;
    Misfit matrix_misfit_any_dtype(const at::Tensor& t, const char* what) const;
    Misfit matrix_misfit(const at::Tensor& t, const char* what) const;
    Misfit params_misfit(const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& x) const;
    bool stats_fit(const at::Tensor& s, const at::Tensor& x) const;
    bool delayed_kernel_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) const;
    bool fresh_scale_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) const;
    // The slot's scale from x's amax (current scaling, a calibrating step); returns the cast's own scale_inv.
    at::Tensor fresh_scale(const at::Tensor& x, const Fp8Quantizer& quantizer) const;
    struct FreshScale {
        kernels::CurrentScaleItem item;
        at::Tensor scale;
        at::Tensor own_scale_inv;
        at::Tensor slot_amax;
    };
    static FreshScale fresh_scale_item(const at::Tensor& x, const Fp8Quantizer& quantizer);
    // current scaling's targets of a FreshScale as a producing kernel takes them (the amax hand-off).
    static kernels::CurrentScaleTarget fresh_scale_target(const FreshScale& f);
    Fp8Tensor cast_with_slot_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                                   const at::Tensor& own_scale_inv) const;
    // quantize_dbias's cast with the transposed copy and the column sums, with the slot's scale as it stands:
    // own_scale_inv undefined: delayed scaling's (the amax staged, the live scale_inv handed out); else the scale was just
    // set from dy's amax and own_scale_inv is the cast's.
    Fp8GradWithBias cast_dbias_with_slot_scale(const at::Tensor& dy, const Fp8Quantizer& quantizer,
                                               const at::Tensor& own_scale_inv) const;
    std::vector<Fp8Tensor> quantize_weights_fresh(const std::vector<WeightCast>& casts) const;
    bool hp_operands(const at::Tensor& a, const at::Tensor& b, bool same_k = true) const;

    // FusedOps.cpp: the FP8 outputs the kernels write.
    static void hand_out_live_scale_inv(Fp8Tensor& q, const Fp8Quantizer& quantizer);
    static Fp8Tensor empty_fp8(const at::Tensor& x, const Fp8Quantizer& quantizer);
    static Fp8GradWithBias empty_grad_with_bias(const at::Tensor& like, const Fp8Quantizer& quantizer);
    static at::Tensor staging_entry(const Fp8Quantizer& quantizer);
    // q [rows, cols] as the kernels write it: its data and transposed copy (when it has one), the slot's live scale
    // and staging entry (its amax).
    static kernels::Tensor fp8_tensor(Fp8Tensor& q, const Fp8Quantizer& quantizer);

    // FusedNormActivation.cpp
    Misfit norm_backward_misfit(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                const at::Tensor& gamma, const at::Tensor& dresidual) const;
    LayerNormGrads norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                 const at::Tensor& gamma, const at::Tensor& dresidual) const;

    // FusedRmsNormSwiglu.cpp
    RmsNormGrads rms_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                              const at::Tensor& dresidual) const;
    Misfit rms_backward_misfit(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, const at::Tensor& gamma,
                               const at::Tensor& dresidual) const;
    Misfit swiglu_backward_misfit(const at::Tensor& dy, const at::Tensor& in) const;

    // FusedGemms.cpp
    Misfit residual_misfit(const at::Tensor& residual, std::int64_t m, std::int64_t n) const;
    template <typename Reference>
    at::Tensor hp_gemm(const char* op, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                       at::ScalarType out_dtype, const at::Tensor& residual, Reference&& reference) const;
    template <typename Reference>
    at::Tensor fp8_gemm_into(const char* op, const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                             const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                             Accumulation accumulation, const at::Tensor& residual, Reference&& reference) const;
    // Runs the GEMM (noting it in an open GEMM journal, core/ledger/GemmJournal.h); a refusal is the Misfit.
    Misfit run_gemm(const char* op, kernels::GemmCall g, const at::Tensor& where, Tensors reads, Tensors writes) const;
    static bool epilogue_refused(kernels::Epilogue e);
    static void refuse_epilogue(kernels::Epilogue e);
    static kernels::GemmCall gemm_call(const at::Tensor& a, bool a_transposed, const at::Tensor& b, bool b_transposed,
                                       const at::Tensor& d);

    // FusedMicroscaling.cpp: MXFP8 and NVFP4.
    Fp8Tensor quantize_microscaling(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const;

    // FusedCasts.cpp: Float8BlockScaling's casts.
    struct BlockCastSetup {
        Fp8Tensor out;
        kernels::Tensor cast;
        at::Tensor staging;
        BlockShape block;
    };
    static BlockCastSetup block_cast_setup(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose);
    std::vector<Fp8Tensor> quantize_weight_blocks(const std::vector<WeightCast>& casts) const;
    Fp8Tensor quantize_blocks(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                              const at::Tensor* dbias = nullptr) const;

    // FusedModelEnds.cpp
    // int64 token ids [batch, seq], their rows t.stride(0) apart.
    static kernels::Tensor tokens_tensor(const at::Tensor& t);
    Misfit tokens_misfit(const at::Tensor& t, const char* what) const;

    template <typename Call>
    static auto fall_back(std::string_view op, const std::string& reason, Call&& call) -> std::invoke_result_t<Call> {
        note_fallback(op, reason);
        return call();
    }

    // A fused step built from this implementation's own primitives because cuBLASLt refused its epilogue:
    // still the fused path, but not fused as asked; counted like a fallback so a run never hides it.
    template <typename Call>
    static auto composed(std::string_view op, Call&& call) -> std::invoke_result_t<Call> {
        note_fallback(op, "the GEMM epilogue was refused (see stderr); composed of separate kernels");
        return call();
    }

    // Launches the host or the CUDA form of a kernel, by where `where` lives.
    template <typename Host, typename... Device>
    void run_kernel(const char* op, const at::Tensor& where, const std::vector<at::Tensor>& reads,
                    const std::vector<at::Tensor>& writes, Host&& host, Device&&... device) const {
        RECORD_USER_SCOPE(op);  // named in a kernel trace (te-bench run --profile) like LibTorch's operators
        const kernels::LaunchTally before = kernels::launch_tally();
        if (where.is_cpu()) {
            host();
        } else {
#ifdef TEWB_FUSED_CUDA
            const c10::cuda::CUDAGuard guard(where.device());
            (device(stream_of(where)), ...);
#else
            ((void)device, ...);
            throw kernels::KernelError(std::string("FusedOps: ") + op + " on " + where.device().str() +
                                       " in a build without CUDA kernels");
#endif
        }
        // The kernels count their own launches (the host implementations as many as the CUDA ones make).
        const kernels::LaunchTally ran = kernels::launch_tally() - before;
        note_own_kernel(op, {ran.kernels, ran.helpers, ran.memsets, ran.unobserved == 0}, bytes_of(reads), bytes_of(writes));
    }

    OpsKind kind_;
};

}  // namespace tewb::fused_ops
