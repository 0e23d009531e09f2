#pragma once

#include <cstddef>

#include <algorithm>
#include <optional>

#include "common/fp8_output.h"
#include "recipe/recipe_call.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/tensor.h"

// One normalization call's checked arguments as the kernels (normalization.cu, rms_norm.cu) and their host twins
// (normalization_host.cpp, rms_norm_host.cpp) work on them, and the rules that make them (normalization_checks.cpp):
// each fails with KernelError "<call>: <what>" and gives nothing when there is no work (rows == 0), so an empty call
// is refused or accepted the same way on both paths.
namespace tewb::kernels::detail {

// x gives [rows, hidden]; the FP8 output's data null: none; mean and rstd the statistics' float32 data.
struct LayerNormForwardCall {
    Tensor x;
    Tensor gamma;
    Tensor beta;
    float eps = 0.0f;
    Tensor out;  // data null: no high-precision output
    Fp8Output fp8{};  // data null: no FP8 output
    float* mean = nullptr;
    float* rstd = nullptr;
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

struct LayerNormBackwardCall {
    Tensor dy;
    Tensor x;
    const float* mean = nullptr;
    const float* rstd = nullptr;
    Tensor gamma;
    Tensor dx;
    Tensor dresidual;  // data null: nothing added to dx
    Tensor dgamma;
    Tensor dbeta;
    Workspace workspace;
};

// Rows of partial dgamma (and dbeta) sums the backward passes write: min(max(rows, 1), 256).
constexpr std::size_t kMaxNormPartials = 256;
constexpr int norm_backward_chunks(std::size_t rows) {
    return static_cast<int>(std::clamp<std::size_t>(rows, 1, kMaxNormPartials));
}

std::optional<LayerNormForwardCall> layer_norm_forward_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                            const Tensor& beta, float eps, const Tensor& out, const Tensor& fp8,
                                                            const Tensor& mean, const Tensor& rstd);
// The *_current_scale forms: the forward's checks with out required and no FP8 output, and current scaling's targets
// (current_scale_targets), none of which may lie in x, gamma, beta, out, mean or rstd. Nothing when rows == 0 (the
// entry point then writes the scale of amax 0, as abs_max_current_scale of an empty tensor does).
std::optional<LayerNormForwardCall> layer_norm_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                                          const Tensor& beta, float eps, const Tensor& out,
                                                                          const CurrentScaleTarget& target, const Tensor& mean,
                                                                          const Tensor& rstd);
// dresidual: data null for layer_norm_backward (nothing to add).
std::optional<LayerNormBackwardCall> layer_norm_backward_call(const char* call, const Tensor& dy, const Tensor& x,
                                                              const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                                              const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                                              const Tensor& dbeta, const Workspace& workspace);

// layer_norm_backward_cast_dbias's: the backward's own arguments (norm; its workspace the larger one), dx's copy for
// the Linear's GEMMs (grad; data null: none) and dx's column sums (dbias, float32 [1, hidden]).
struct LayerNormBackwardCastCall {
    LayerNormBackwardCall norm;
    Tensor grad;
    Tensor dbias;
    CurrentScaleCall fresh{};  // scale null: none (layer_norm_backward_cast_dbias_current_scale sets it; amax unused)
};

std::optional<LayerNormBackwardCastCall> layer_norm_backward_cast_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                       const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                                                       const Tensor& dx, const Tensor& dresidual,
                                                                       const Tensor& dgamma, const Tensor& dbeta, const Tensor& grad,
                                                                       const Tensor& dbias, const Workspace& workspace);

// layer_norm_backward_cast_dbias_current_scale's: layer_norm_backward_cast_call's checks without the copy (grad), dx's
// current-scaling target (amax/current_scale_target.h; none of its floats in the call's tensors or workspace). Nothing
// when rows == 0.
std::optional<LayerNormBackwardCastCall> layer_norm_backward_cast_current_scale_call(
    const char* call, const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
    const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta, const CurrentScaleTarget& target, const Tensor& dbias,
    const Workspace& workspace);

// layer_norm_backward_quantize_dbias's: the backward's arguments, the FP8 gradient (data and transposed required) and
// dx's column sums (dbias, float32 [1, hidden]).
struct LayerNormBackwardQuantizeCall {
    LayerNormBackwardCall norm;
    Fp8Output fp8;
    Tensor dbias;
};

std::optional<LayerNormBackwardQuantizeCall> layer_norm_backward_quantize_call(
    const char* call, const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
    const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta, const Tensor& fp8, const Tensor& dbias, const Workspace& workspace);

// The hand-over forms' plain path: the workspace after the backward's own partial rows (for the Linear's cast), and
// the FP8 output as a tensor again (for cast_transpose_dbias_to_fp8).
Workspace after_backward_rows(const LayerNormBackwardCall& a);
Tensor fp8_output_tensor(const Fp8Output& fp8, std::size_t rows, std::size_t cols);

// RMSNorm's calls (tewb_kernels/normalization.h's rms_norm_*).
struct RmsNormForwardCall {
    Tensor x;
    Tensor gamma;
    float eps = 0.0f;
    Tensor out;  // data null: no high-precision output
    Fp8Output fp8{};  // data null: no FP8 output
    float* rstd = nullptr;
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

struct RmsNormBackwardCall {
    Tensor dy;
    Tensor x;
    const float* rstd = nullptr;
    Tensor gamma;
    Tensor dx;
    Tensor dresidual;  // data null: nothing added to dx
    Tensor dgamma;
    Workspace workspace;
    CurrentScaleCall fresh{};  // scale null: none (rms_norm_backward_current_scale sets it)
    Tensor grad{};             // rms_norm_backward_cast: dx's copy for the Linear's GEMMs (data null: none)
    Fp8Output fp8{};           // rms_norm_backward_quantize: dx cast for the FP8 Linear (data null: none)
};

std::optional<RmsNormForwardCall> rms_norm_forward_call(const char* call, const Tensor& x, const Tensor& gamma, float eps,
                                                        const Tensor& out, const Tensor& fp8, const Tensor& rstd);
std::optional<RmsNormForwardCall> rms_norm_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                                      float eps, const Tensor& out, const CurrentScaleTarget& target,
                                                                      const Tensor& rstd);
std::optional<RmsNormBackwardCall> rms_norm_backward_call(const char* call, const Tensor& dy, const Tensor& x,
                                                          const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                          const Tensor& dresidual, const Tensor& dgamma,
                                                          const Workspace& workspace);
// rms_norm_backward_cast's: the backward's checks and grad's (float32 or bfloat16 [rows, hidden], apart from every other
// tensor and the workspace). rms_norm_backward_quantize's: the backward's and the FP8 gradient's (data, transposed and
// scale required, apart from every other tensor and the workspace).
std::optional<RmsNormBackwardCall> rms_norm_backward_cast_call(const char* call, const Tensor& dy, const Tensor& x,
                                                               const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                               const Tensor& dresidual, const Tensor& dgamma, const Tensor& grad,
                                                               const Workspace& workspace);
std::optional<RmsNormBackwardCall> rms_norm_backward_quantize_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                   const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                                   const Tensor& dresidual, const Tensor& dgamma, const Tensor& fp8,
                                                                   const Workspace& workspace);
// rms_norm_backward_current_scale's: the call's checks, then the target's (amax/current_scale_target.h); nothing when
// there are no rows.
std::optional<RmsNormBackwardCall> rms_norm_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                        const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                                        const Tensor& dresidual, const Tensor& dgamma,
                                                                        const CurrentScaleTarget& target, const Workspace& workspace);

}  // namespace tewb::kernels::detail
