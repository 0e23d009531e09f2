#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "amax/current_scale_target.h"
#include "common/arguments.h"
#include "common/fail.h"
#include "normalization/normalization_call.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels::detail {

namespace {

// What both norms' backward passes check first: x's shape, then the dtypes of dy, x and dx (one), gamma and dgamma
// (one).
void check_backward_types(const char* call, const Tensor& dy, const Tensor& x, const Tensor& dx, const Tensor& gamma,
                          const Tensor& dgamma) {
    check_dims(call, x.rows, x.cols);
    if (x.cols == 0) fail(call, "hidden = 0; allowed: 1 or more");
    check_float_or_bf16(call, x.dtype, "x and dx");
    check_same_dtype(call, dx.dtype, "dx", x.dtype, "x");
    check_float_or_bf16(call, dy.dtype, "dy");
    check_float_or_bf16(call, gamma.dtype, "gamma");
    check_same_dtype(call, dgamma.dtype, "dgamma", gamma.dtype, "gamma");
}

bool check_layer_norm_forward_arguments(const char* call, const LayerNormForwardCall& a) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    check_dims(call, rows, hidden);
    if (hidden == 0) fail(call, "hidden = 0; allowed: 1 or more");
    if (!(a.eps > 0.0f) || !std::isfinite(a.eps))
        fail(call, "eps = " + std::to_string(a.eps) + "; allowed: a finite value above 0");
    if (a.out.data == nullptr && a.fp8.data == nullptr) fail(call, "no output: out and fp8 are both null");
    check_float_or_bf16(call, a.x.dtype, "x");
    check_float_or_bf16(call, a.gamma.dtype, "gamma and beta");
    check_same_dtype(call, a.beta.dtype, "beta", a.gamma.dtype, "gamma");
    if (a.out.data != nullptr) check_float_or_bf16(call, a.out.dtype, "out");
    check_shape(call, a.gamma, "gamma", 1, hidden);
    check_shape(call, a.beta, "beta", 1, hidden);
    if (a.out.data != nullptr) check_shape(call, a.out, "out", rows, hidden);
    if (rows == 0) return false;
    check_buffer(call, a.x.data, "x", element_size(a.x.dtype));
    check_buffer(call, a.gamma.data, "gamma", element_size(a.gamma.dtype));
    check_buffer(call, a.beta.data, "beta", element_size(a.gamma.dtype));
    if (a.out.data != nullptr) check_buffer(call, a.out.data, "out", element_size(a.out.dtype));
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    check_buffer(call, a.mean, "mean", alignof(float));
    check_buffer(call, a.rstd, "rstd", alignof(float));
    return true;
}

bool check_layer_norm_backward_arguments(const char* call, const LayerNormBackwardCall& a, std::size_t needed_workspace,
                                         const char* size_function = "layer_norm_backward_workspace_bytes") {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    check_backward_types(call, a.dy, a.x, a.dx, a.gamma, a.dgamma);
    check_same_dtype(call, a.dbeta.dtype, "dbeta", a.gamma.dtype, "gamma");
    for (const auto& [tensor, name] : {std::pair<Tensor, const char*>{a.dy, "dy"}, {a.dx, "dx"}}) {
        check_shape(call, tensor, name, rows, hidden);
    }
    for (const auto& [tensor, name] :
         {std::pair<Tensor, const char*>{a.gamma, "gamma"}, {a.dgamma, "dgamma"}, {a.dbeta, "dbeta"}}) {
        check_shape(call, tensor, name, 1, hidden);
    }
    if (rows == 0) return false;
    check_buffer(call, a.dy.data, "dy", element_size(a.dy.dtype));
    for (const auto& [pointer, name] :
         {std::pair<const void*, const char*>{a.x.data, "x"}, std::pair<const void*, const char*>{a.dx.data, "dx"}}) {
        check_buffer(call, pointer, name, element_size(a.x.dtype));
    }
    check_buffer(call, a.mean, "mean", alignof(float));
    check_buffer(call, a.rstd, "rstd", alignof(float));
    for (const auto& [pointer, name] : {std::pair<const void*, const char*>{a.gamma.data, "gamma"},
                                        std::pair<const void*, const char*>{a.dgamma.data, "dgamma"},
                                        std::pair<const void*, const char*>{a.dbeta.data, "dbeta"}}) {
        check_buffer(call, pointer, name, element_size(a.gamma.dtype));
    }
    check_workspace(call, a.workspace.data, a.workspace.bytes, needed_workspace, size_function);
    return true;
}

void check_dresidual(const char* call, const LayerNormBackwardCall& a) {
    if (a.dresidual.data == nullptr) return;
    check_same_dtype(call, a.dresidual.dtype, "dresidual", a.x.dtype, "x");
    check_shape(call, a.dresidual, "dresidual", a.x.rows, a.x.cols);
    check_buffer(call, a.dresidual.data, "dresidual", element_size(a.x.dtype));
}

// The hand-over forms' shared part: the backward's own arguments with their larger workspace, and dbias (float32
// [1, hidden]). False when there are no rows.
bool check_handover_backward(const char* call, const LayerNormBackwardCall& a, const Tensor& dbias) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    if (dbias.dtype != DType::Float32) fail(call, "dbias has dtype " + std::string(to_string(dbias.dtype)) + "; allowed: float32");
    check_shape(call, dbias, "dbias", 1, hidden);
    if (!check_layer_norm_backward_arguments(call, a, layer_norm_backward_cast_dbias_workspace_bytes(rows, hidden),
                                             "layer_norm_backward_cast_dbias_workspace_bytes")) {
        return false;
    }
    check_dresidual(call, a);
    return true;
}

bool check_rms_norm_forward_arguments(const char* call, const RmsNormForwardCall& a) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    check_dims(call, rows, hidden);
    if (hidden == 0) fail(call, "hidden = 0; allowed: 1 or more");
    if (!(a.eps > 0.0f) || !std::isfinite(a.eps))
        fail(call, "eps = " + std::to_string(a.eps) + "; allowed: a finite value above 0");
    if (a.out.data == nullptr && a.fp8.data == nullptr) fail(call, "no output: out and fp8 are both null");
    check_float_or_bf16(call, a.x.dtype, "x");
    check_float_or_bf16(call, a.gamma.dtype, "gamma");
    if (a.out.data != nullptr) check_float_or_bf16(call, a.out.dtype, "out");
    check_shape(call, a.gamma, "gamma", 1, hidden);
    if (a.out.data != nullptr) check_shape(call, a.out, "out", rows, hidden);
    if (rows == 0) return false;
    check_buffer(call, a.x.data, "x", element_size(a.x.dtype));
    check_buffer(call, a.gamma.data, "gamma", element_size(a.gamma.dtype));
    if (a.out.data != nullptr) check_buffer(call, a.out.data, "out", element_size(a.out.dtype));
    if (a.fp8.data != nullptr) check_fp8_output(call, a.fp8);
    check_buffer(call, a.rstd, "rstd", alignof(float));
    return true;
}

bool check_rms_norm_backward_arguments(const char* call, const RmsNormBackwardCall& a, std::size_t needed_workspace) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    check_backward_types(call, a.dy, a.x, a.dx, a.gamma, a.dgamma);
    if (a.dresidual.data != nullptr) check_same_dtype(call, a.dresidual.dtype, "dresidual", a.x.dtype, "x");
    check_shape(call, a.dy, "dy", rows, hidden);
    check_shape(call, a.dx, "dx", rows, hidden);
    if (a.dresidual.data != nullptr) check_shape(call, a.dresidual, "dresidual", rows, hidden);
    check_shape(call, a.gamma, "gamma", 1, hidden);
    check_shape(call, a.dgamma, "dgamma", 1, hidden);
    if (rows == 0) return false;
    check_buffer(call, a.dy.data, "dy", element_size(a.dy.dtype));
    check_buffer(call, a.x.data, "x", element_size(a.x.dtype));
    check_buffer(call, a.dx.data, "dx", element_size(a.x.dtype));
    if (a.dresidual.data != nullptr) check_buffer(call, a.dresidual.data, "dresidual", element_size(a.x.dtype));
    check_buffer(call, a.rstd, "rstd", alignof(float));
    check_buffer(call, a.gamma.data, "gamma", element_size(a.gamma.dtype));
    check_buffer(call, a.dgamma.data, "dgamma", element_size(a.gamma.dtype));
    check_workspace(call, a.workspace.data, a.workspace.bytes, needed_workspace, "rms_norm_backward_workspace_bytes");
    return true;
}

}  // namespace

std::optional<LayerNormForwardCall> layer_norm_forward_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                            const Tensor& beta, float eps, const Tensor& out, const Tensor& fp8,
                                                            const Tensor& mean, const Tensor& rstd) {
    const LayerNormForwardCall a{x,
                                 gamma,
                                 beta,
                                 eps,
                                 out,
                                 fp8_output(call, fp8, "fp8", x.rows, x.cols),
                                 float_vector(call, mean, "mean", x.rows),
                                 float_vector(call, rstd, "rstd", x.rows)};
    if (!check_layer_norm_forward_arguments(call, a)) return std::nullopt;
    return a;
}

std::optional<LayerNormBackwardCall> layer_norm_backward_call(const char* call, const Tensor& dy, const Tensor& x,
                                                              const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                                              const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                                              const Tensor& dbeta, const Workspace& workspace) {
    const LayerNormBackwardCall a{dy,
                                  x,
                                  float_vector(call, mean, "mean", x.rows),
                                  float_vector(call, rstd, "rstd", x.rows),
                                  gamma,
                                  dx,
                                  dresidual,
                                  dgamma,
                                  dbeta,
                                  workspace};
    if (!check_layer_norm_backward_arguments(call, a, layer_norm_backward_workspace_bytes(x.rows, x.cols))) return std::nullopt;
    check_dresidual(call, a);
    return a;
}

std::optional<LayerNormBackwardCastCall> layer_norm_backward_cast_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                       const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                                                       const Tensor& dx, const Tensor& dresidual,
                                                                       const Tensor& dgamma, const Tensor& dbeta, const Tensor& grad,
                                                                       const Tensor& dbias, const Workspace& workspace) {
    const LayerNormBackwardCastCall a{{dy, x, float_vector(call, mean, "mean", x.rows), float_vector(call, rstd, "rstd", x.rows), gamma,
                                       dx, dresidual, dgamma, dbeta, workspace},
                                      grad,
                                      dbias};
    const std::size_t rows = x.rows;
    const std::size_t hidden = x.cols;
    if (grad.data != nullptr) {
        check_float_or_bf16(call, grad.dtype, "grad");
        check_shape(call, grad, "grad", rows, hidden);
    }
    if (!check_handover_backward(call, a.norm, dbias)) return std::nullopt;
    check_buffer(call, dbias.data, "dbias", alignof(float));
    const std::pair<Tensor, const char*> inputs[] = {{dy, "dy"}, {x, "x"}, {dx, "dx"}, {dresidual, "dresidual"}};
    if (grad.data != nullptr) {
        check_buffer(call, grad.data, "grad", element_size(grad.dtype));
        for (const auto& [t, name] : inputs) {
            if (overlap(grad.data, tensor_bytes(grad), t.data, tensor_bytes(t))) fail(call, std::string("grad and ") + name + " overlap");
        }
    }
    for (const auto& [t, name] : inputs) {
        if (overlap(dbias.data, tensor_bytes(dbias), t.data, tensor_bytes(t))) fail(call, std::string("dbias and ") + name + " overlap");
    }
    if (overlap(dbias.data, tensor_bytes(dbias), grad.data, grad.data != nullptr ? tensor_bytes(grad) : 0)) fail(call, "dbias and grad overlap");
    if (overlap(dbias.data, tensor_bytes(dbias), workspace.data, workspace.bytes)) fail(call, "dbias and the workspace overlap");
    return a;
}

std::optional<LayerNormBackwardCastCall> layer_norm_backward_cast_current_scale_call(
    const char* call, const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
    const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta, const CurrentScaleTarget& target, const Tensor& dbias,
    const Workspace& workspace) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, dx, "dx",
                                                            {{dy, "dy"}, {x, "x"}, {mean, "mean"}, {rstd, "rstd"}, {gamma, "gamma"},
                                                             {dresidual, "dresidual"}, {dgamma, "dgamma"}, {dbeta, "dbeta"}, {dbias, "dbias"}},
                                                            workspace);
    std::optional<LayerNormBackwardCastCall> a =
        layer_norm_backward_cast_call(call, dy, x, mean, rstd, gamma, dx, dresidual, dgamma, dbeta, Tensor{}, dbias, workspace);
    if (a) a->fresh = t;
    return a;
}

std::optional<LayerNormBackwardQuantizeCall> layer_norm_backward_quantize_call(
    const char* call, const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
    const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta, const Tensor& fp8, const Tensor& dbias, const Workspace& workspace) {
    const std::size_t rows = x.rows;
    const std::size_t hidden = x.cols;
    if (fp8.data == nullptr) fail(call, "fp8 is null (the FP8 gradient is required)");
    const LayerNormBackwardQuantizeCall a{{dy, x, float_vector(call, mean, "mean", x.rows), float_vector(call, rstd, "rstd", x.rows),
                                           gamma, dx, dresidual, dgamma, dbeta, workspace},
                                          fp8_output(call, fp8, "fp8", rows, hidden),
                                          dbias};
    if (!check_handover_backward(call, a.norm, dbias)) return std::nullopt;
    if (a.fp8.transposed == nullptr) fail(call, "fp8.transposed is null (the FP8 Linear's wgrad reads it)");
    check_fp8_output(call, a.fp8);
    if (a.fp8.scale == nullptr) fail(call, "fp8.scale is null");
    check_buffer(call, dbias.data, "dbias", alignof(float));
    // The banded kernel's band count (rows + band - 1) / band in an int.
    if (rows > static_cast<std::size_t>(std::numeric_limits<int>::max()) - 32) {
        fail(call, "rows = " + std::to_string(rows) + "; allowed: at most 2^31 - 33");
    }
    const std::size_t n = rows * hidden;
    if (overlap(a.fp8.data, n, a.fp8.transposed, n)) fail(call, "fp8 and fp8.transposed overlap");
    const std::pair<Tensor, const char*> others[] = {{dy, "dy"},         {x, "x"},         {dx, "dx"}, {dresidual, "dresidual"},
                                                     {dgamma, "dgamma"}, {dbeta, "dbeta"}, {dbias, "dbias"}};
    for (const auto& [t, name] : others) {
        if (overlap(a.fp8.data, n, t.data, tensor_bytes(t))) fail(call, std::string("fp8 and ") + name + " overlap");
        if (overlap(a.fp8.transposed, n, t.data, tensor_bytes(t))) fail(call, std::string("fp8.transposed and ") + name + " overlap");
        if (t.data != dbias.data && overlap(dbias.data, hidden * 4, t.data, tensor_bytes(t))) {
            fail(call, std::string("dbias and ") + name + " overlap");
        }
    }
    if (overlap(a.fp8.data, n, workspace.data, workspace.bytes)) fail(call, "fp8 and the workspace overlap");
    if (overlap(a.fp8.transposed, n, workspace.data, workspace.bytes)) fail(call, "fp8.transposed and the workspace overlap");
    if (overlap(dbias.data, hidden * 4, workspace.data, workspace.bytes)) fail(call, "dbias and the workspace overlap");
    return a;
}


std::optional<LayerNormForwardCall> layer_norm_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                                          const Tensor& beta, float eps, const Tensor& out,
                                                                          const CurrentScaleTarget& target, const Tensor& mean,
                                                                          const Tensor& rstd) {
    const CurrentScaleCall t = checked_current_scale_target(call, target, out, "out",
                                                            {{x, "x"}, {gamma, "gamma"}, {beta, "beta"}, {mean, "mean"}, {rstd, "rstd"}});
    std::optional<LayerNormForwardCall> a = layer_norm_forward_call(call, x, gamma, beta, eps, out, Tensor{}, mean, rstd);
    if (a) a->fresh = t;
    return a;
}

std::optional<RmsNormForwardCall> rms_norm_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& gamma,
                                                                      float eps, const Tensor& out, const CurrentScaleTarget& target,
                                                                      const Tensor& rstd) {
    const CurrentScaleCall t =
        checked_current_scale_target(call, target, out, "out", {{x, "x"}, {gamma, "gamma"}, {rstd, "rstd"}});
    std::optional<RmsNormForwardCall> a = rms_norm_forward_call(call, x, gamma, eps, out, Tensor{}, rstd);
    if (a) a->fresh = t;
    return a;
}

std::optional<RmsNormForwardCall> rms_norm_forward_call(const char* call, const Tensor& x, const Tensor& gamma, float eps,
                                                        const Tensor& out, const Tensor& fp8, const Tensor& rstd) {
    const RmsNormForwardCall a{x, gamma, eps, out, fp8_output(call, fp8, "fp8", x.rows, x.cols),
                               float_vector(call, rstd, "rstd", x.rows)};
    if (!check_rms_norm_forward_arguments(call, a)) return std::nullopt;
    return a;
}

std::optional<RmsNormBackwardCall> rms_norm_backward_call(const char* call, const Tensor& dy, const Tensor& x,
                                                          const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                          const Tensor& dresidual, const Tensor& dgamma,
                                                          const Workspace& workspace) {
    const RmsNormBackwardCall a{dy, x, float_vector(call, rstd, "rstd", x.rows), gamma, dx, dresidual, dgamma, workspace};
    if (!check_rms_norm_backward_arguments(call, a, rms_norm_backward_workspace_bytes(x.rows, x.cols))) return std::nullopt;
    return a;
}

namespace {

// What a hand-over output (the copy or the FP8 bytes, `bytes` long from `data`) must stay apart from.
void check_apart_from_backward(const char* call, const void* data, std::size_t bytes, const char* name, const RmsNormBackwardCall& a,
                               const Tensor& rstd) {
    const std::pair<Tensor, const char*> others[] = {{a.dy, "dy"},       {a.x, "x"},         {rstd, "rstd"},     {a.gamma, "gamma"},
                                                     {a.dx, "dx"},       {a.dresidual, "dresidual"}, {a.dgamma, "dgamma"}};
    for (const auto& [t, other] : others) {
        if (overlap(data, bytes, t.data, tensor_bytes(t))) fail(call, std::string(name) + " and " + other + " overlap");
    }
    if (overlap(data, bytes, a.workspace.data, a.workspace.bytes)) fail(call, std::string(name) + " and the workspace overlap");
}

}  // namespace

std::optional<RmsNormBackwardCall> rms_norm_backward_cast_call(const char* call, const Tensor& dy, const Tensor& x,
                                                               const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                               const Tensor& dresidual, const Tensor& dgamma, const Tensor& grad,
                                                               const Workspace& workspace) {
    if (grad.data == nullptr && grad.numel() > 0) fail(call, "grad is null (the copy is this call's output)");
    check_float_or_bf16(call, grad.dtype, "grad");
    check_shape(call, grad, "grad", x.rows, x.cols);
    std::optional<RmsNormBackwardCall> a = rms_norm_backward_call(call, dy, x, rstd, gamma, dx, dresidual, dgamma, workspace);
    if (!a) return a;
    check_buffer(call, grad.data, "grad", element_size(grad.dtype));
    check_apart_from_backward(call, grad.data, tensor_bytes(grad), "grad", *a, rstd);
    a->grad = grad;
    return a;
}

std::optional<RmsNormBackwardCall> rms_norm_backward_quantize_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                   const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                                   const Tensor& dresidual, const Tensor& dgamma, const Tensor& fp8,
                                                                   const Workspace& workspace) {
    const std::size_t rows = x.rows;
    const std::size_t hidden = x.cols;
    if (fp8.data == nullptr && rows * hidden > 0) fail(call, "fp8 is null (the FP8 gradient is this call's output)");
    const Fp8Output q = fp8_output(call, fp8, "fp8", rows, hidden);
    std::optional<RmsNormBackwardCall> a = rms_norm_backward_call(call, dy, x, rstd, gamma, dx, dresidual, dgamma, workspace);
    if (!a) return a;
    if (q.transposed == nullptr) fail(call, "fp8.transposed is null (the FP8 Linear's wgrad reads it)");
    check_fp8_output(call, q);
    if (q.scale == nullptr) fail(call, "fp8.scale is null");
    // The banded kernel's band count (rows + band - 1) / band in an int.
    if (rows > static_cast<std::size_t>(std::numeric_limits<int>::max()) - 32) {
        fail(call, "rows = " + std::to_string(rows) + "; allowed: at most 2^31 - 33");
    }
    const std::size_t n = rows * hidden;
    if (overlap(q.data, n, q.transposed, n)) fail(call, "fp8 and fp8.transposed overlap");
    check_apart_from_backward(call, q.data, n, "fp8", *a, rstd);
    check_apart_from_backward(call, q.transposed, n, "fp8.transposed", *a, rstd);
    // The scale is read while the kernel writes dx and the bytes, amax written by its blocks: apart from them all.
    const std::pair<const float*, const char*> scalars[] = {{q.scale, "fp8.scale"}, {q.amax, "fp8.amax"}};
    for (const auto& [f, name] : scalars) {
        if (f == nullptr) continue;
        if (overlap(f, sizeof(float), q.data, n) || overlap(f, sizeof(float), q.transposed, n)) {
            fail(call, std::string(name) + " lies in the FP8 bytes");
        }
        check_apart_from_backward(call, f, sizeof(float), name, *a, rstd);
    }
    a->fp8 = q;
    return a;
}

std::optional<RmsNormBackwardCall> rms_norm_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                        const Tensor& rstd, const Tensor& gamma, const Tensor& dx,
                                                                        const Tensor& dresidual, const Tensor& dgamma,
                                                                        const CurrentScaleTarget& target, const Workspace& workspace) {
    const CurrentScaleCall t = checked_current_scale_target(
        call, target, dx, "dx", {{dy, "dy"}, {x, "x"}, {rstd, "rstd"}, {gamma, "gamma"}, {dresidual, "dresidual"}, {dgamma, "dgamma"}},
        workspace);
    std::optional<RmsNormBackwardCall> a = rms_norm_backward_call(call, dy, x, rstd, gamma, dx, dresidual, dgamma, workspace);
    if (a) a->fresh = t;
    return a;
}

Workspace after_backward_rows(const LayerNormBackwardCall& a) {
    const std::size_t used = 2 * static_cast<std::size_t>(norm_backward_chunks(a.x.rows)) * a.x.cols * sizeof(float);
    return {static_cast<unsigned char*>(a.workspace.data) + used, a.workspace.bytes - used};
}

Tensor fp8_output_tensor(const Fp8Output& fp8, std::size_t rows, std::size_t cols) {
    Tensor t = input(fp8.data, fp8_dtype(fp8.type), rows, cols);
    t.transposed = fp8.transposed;
    t.scale = const_cast<float*>(fp8.scale);
    t.amax = fp8.amax;
    return t;
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

std::size_t layer_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return 2 * static_cast<std::size_t>(detail::norm_backward_chunks(rows)) * hidden * sizeof(float);
}

std::size_t layer_norm_backward_cast_dbias_workspace_bytes(std::size_t rows, std::size_t hidden) {
    // Three sets of partial rows on the fast kernel; the plain path's two, then cast_dbias's (at most as many rows).
    return 3 * static_cast<std::size_t>(detail::norm_backward_chunks(rows)) * hidden * sizeof(float);
}

std::size_t rms_norm_backward_workspace_bytes(std::size_t rows, std::size_t hidden) {
    return static_cast<std::size_t>(detail::norm_backward_chunks(rows)) * hidden * sizeof(float);
}

}  // namespace tewb::kernels
