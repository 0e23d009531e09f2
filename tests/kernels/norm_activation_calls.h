#pragma once

// The host norms and activations (tewb_kernels/normalization.h, activation.h) called as their suites' cases are
// written: the saved statistics as float buffers of x's rows, the FP8 output as its buffers; each call builds the
// tensors its entry point takes.
#include <cstddef>

#include "tewb_kernels/activation.h"
#include "common/fp8_output.h"
#include "tewb_kernels/normalization.h"

namespace tewb::test::calls {

// The FP8 output's buffers as a tensor [rows, cols] (none when fp8 is null; a type outside Fp8Type as int64, which
// the entry points refuse).
inline kernels::Tensor fp8_of(const kernels::detail::Fp8Output* fp8, std::size_t rows, std::size_t cols) {
    if (fp8 == nullptr) return {};
    const kernels::DType dtype =
        fp8->type == kernels::Fp8Type::E4M3 || fp8->type == kernels::Fp8Type::E5M2 ? kernels::fp8_dtype(fp8->type) : kernels::DType::Int64;
    kernels::Tensor t = kernels::input(fp8->data, dtype, rows, cols);
    t.transposed = fp8->transposed;
    t.scale = const_cast<float*>(fp8->scale);
    t.amax = fp8->amax;
    return t;
}

// A statistics buffer of x's rows.
inline kernels::Tensor stats_of(const float* p, const kernels::Tensor& x) {
    return kernels::input(p, kernels::DType::Float32, 1, x.rows);
}

inline void layer_norm_forward(const kernels::Tensor& x, const kernels::Tensor& gamma, const kernels::Tensor& beta, float eps,
                               const kernels::Tensor& out, const kernels::detail::Fp8Output* fp8, float* mean, float* rstd) {
    kernels::host::layer_norm_forward(x, gamma, beta, eps, out, fp8_of(fp8, x.rows, x.cols), stats_of(mean, x), stats_of(rstd, x), {});
}

inline void layer_norm_backward(const kernels::Tensor& dy, const kernels::Tensor& x, const float* mean, const float* rstd,
                                const kernels::Tensor& gamma, const kernels::Tensor& dx, const kernels::Tensor& dgamma,
                                const kernels::Tensor& dbeta, const kernels::Workspace& workspace) {
    kernels::host::layer_norm_backward(dy, x, stats_of(mean, x), stats_of(rstd, x), gamma, dx, dgamma, dbeta, workspace, {});
}

inline void layer_norm_backward_add(const kernels::Tensor& dy, const kernels::Tensor& x, const float* mean, const float* rstd,
                                    const kernels::Tensor& gamma, const kernels::Tensor& dx, const kernels::Tensor& dresidual,
                                    const kernels::Tensor& dgamma, const kernels::Tensor& dbeta,
                                    const kernels::Workspace& workspace) {
    kernels::host::layer_norm_backward_add(dy, x, stats_of(mean, x), stats_of(rstd, x), gamma, dx, dresidual, dgamma, dbeta,
                                           workspace, {});
}

inline void rms_norm_forward(const kernels::Tensor& x, const kernels::Tensor& gamma, float eps, const kernels::Tensor& out,
                             const kernels::detail::Fp8Output* fp8, float* rstd) {
    kernels::host::rms_norm_forward(x, gamma, eps, out, fp8_of(fp8, x.rows, x.cols), stats_of(rstd, x), {});
}

inline void rms_norm_backward(const kernels::Tensor& dy, const kernels::Tensor& x, const float* rstd, const kernels::Tensor& gamma,
                              const kernels::Tensor& dx, const kernels::Tensor& dgamma, const kernels::Workspace& workspace) {
    kernels::host::rms_norm_backward(dy, x, stats_of(rstd, x), gamma, dx, dgamma, workspace, {});
}

inline void rms_norm_backward_add(const kernels::Tensor& dy, const kernels::Tensor& x, const float* rstd,
                                  const kernels::Tensor& gamma, const kernels::Tensor& dx, const kernels::Tensor& dresidual,
                                  const kernels::Tensor& dgamma, const kernels::Workspace& workspace) {
    kernels::host::rms_norm_backward_add(dy, x, stats_of(rstd, x), gamma, dx, dresidual, dgamma, workspace, {});
}

// out null: no high-precision output.
inline void gelu_forward(const void* x, kernels::DType x_dtype, std::size_t rows, std::size_t cols, void* out,
                         kernels::DType out_dtype, const kernels::detail::Fp8Output* fp8) {
    kernels::host::gelu_forward(kernels::input(x, x_dtype, rows, cols),
                                out != nullptr ? kernels::input(out, out_dtype, rows, cols) : kernels::Tensor{},
                                fp8_of(fp8, rows, cols), {});
}

inline void gelu_backward(const kernels::Tensor& dy, const kernels::Tensor& x, const kernels::Tensor& dx,
                          const kernels::detail::Fp8Output* fp8, const kernels::Tensor& dbias, const kernels::Workspace& workspace) {
    kernels::host::gelu_backward(dy, x, dx, fp8_of(fp8, x.rows, x.cols), dbias, workspace, {});
}

inline void swiglu_forward(const kernels::Tensor& in, const kernels::Tensor& out, const kernels::detail::Fp8Output* fp8) {
    kernels::host::swiglu_forward(in, out, fp8_of(fp8, in.rows, in.cols / 2), {});
}

inline void swiglu_backward(const kernels::Tensor& dy, const kernels::Tensor& in, const kernels::Tensor& din,
                            const kernels::detail::Fp8Output* fp8) {
    kernels::host::swiglu_backward(dy, in, din, fp8_of(fp8, in.rows, in.cols), {});
}

}  // namespace tewb::test::calls
