#include "core/modules/ops/FusedOps.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include "core/fp8/BlockScaling.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/recipe.h"

namespace tewb {

namespace {

bool float_or_bf16(at::ScalarType t) {
    return t == at::kFloat || t == at::kBFloat16;
}

bool aligned16(const at::Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

// A 2-D, row-major CUDA tensor the kernels can take as it is.
bool plain_matrix(const at::Tensor& t) {
    return t.is_cuda() && t.dim() == 2 && t.is_contiguous() && t.size(0) > 0 && t.size(1) > 0;
}

cudaStream_t stream_of(const at::Tensor& t) {
    return at::cuda::getCurrentCUDAStream(t.get_device()).stream();
}

// cuBLASLt's workspace: one per (device, stream), from LibTorch's caching allocator, so that it shows in
// the peak-memory figures and two streams never share one. Kept for the process, like the streams.
const at::Tensor& gemm_workspace(const at::Tensor& like) {
    static std::mutex mutex;
    static std::map<std::pair<int, cudaStream_t>, at::Tensor> workspaces;
    const int device = like.get_device();
    const cudaStream_t stream = stream_of(like);
    const std::lock_guard<std::mutex> lock(mutex);
    at::Tensor& w = workspaces[{device, stream}];
    if (!w.defined()) {
        w = at::empty({static_cast<std::int64_t>(kernels::gemm_workspace_bytes(device))}, like.options().dtype(at::kByte));
    }
    return w;
}

class FusedOps final : public TeOps {
public:
    std::string_view name() const override { return "fused"; }
    bool is_reference() const override { return false; }
    bool block_gemms_native() const override { return kernels::block_gemm_supported(c10::cuda::current_device()); }
    std::uint64_t kernel_launches() const override { return kernels::launch_count(); }

    at::Tensor abs_max(const at::Tensor& x) const override {
        const auto dtype = x.scalar_type();
        if (!x.is_cuda() || (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf)) {
            return abs_max_reference(x);
        }
        const c10::cuda::CUDAGuard guard(x.device());
        const at::Tensor contiguous = x.contiguous();
        at::Tensor out = at::empty({}, x.options().dtype(at::kFloat));
        kernels::abs_max(contiguous.data_ptr(), kernel_dtype(dtype), static_cast<std::size_t>(contiguous.numel()),
                         out.data_ptr<float>(), stream_of(x));
        return out;
    }

    // Every slot of the pass in one launch of the recipe kernel.
    void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                        float numerator) const override {
        if (!history.is_cuda() || !history.is_contiguous() || !scale.is_contiguous() || !scale_inv.is_contiguous()) {
            update_scaling_reference(history, scale, scale_inv, recipe, numerator);
            return;
        }
        const c10::cuda::CUDAGuard guard(history.device());
        const kernels::ScalingRule rule = recipe.scaling != ScalingKind::Delayed ? kernels::ScalingRule::Current
                                          : recipe.algo == AmaxAlgo::Max         ? kernels::ScalingRule::DelayedMax
                                                                                 : kernels::ScalingRule::DelayedMostRecent;
        kernels::update_scaling(history.data_ptr<float>(), scale.data_ptr<float>(), scale_inv.data_ptr<float>(),
                                static_cast<int>(history.size(0)), static_cast<int>(history.size(1)), numerator, rule,
                                stream_of(history));
    }

    LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                       at::ScalarType out_dtype) const override {
        if (!plain_matrix(x) || !float_or_bf16(x.scalar_type()) || !float_or_bf16(out_dtype) || !params_fit(gamma, beta, x)) {
            return reference_ops().layer_norm_forward(x, gamma, beta, eps, out_dtype);
        }
        const c10::cuda::CUDAGuard guard(x.device());
        const std::int64_t rows = x.size(0);
        const std::int64_t hidden = x.size(1);
        LayerNormResult r;
        r.out = at::empty({rows, hidden}, x.options().dtype(out_dtype));
        r.mean = at::empty({rows}, x.options().dtype(at::kFloat));
        r.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
        kernels::layer_norm_forward(x.data_ptr(), kernel_dtype(x.scalar_type()), gamma.data_ptr(), beta.data_ptr(),
                                    kernel_dtype(gamma.scalar_type()), static_cast<std::size_t>(rows),
                                    static_cast<std::size_t>(hidden), static_cast<float>(eps), r.out.data_ptr(),
                                    kernel_dtype(out_dtype), nullptr, r.mean.data_ptr<float>(), r.rstd.data_ptr<float>(),
                                    stream_of(x));
        return r;
    }

    LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                       const at::Tensor& gamma) const override {
        // dy may differ from x in dtype: a float32 residual stream with a bfloat16 gradient under autocast.
        const bool fits = plain_matrix(x) && plain_matrix(dy) && dy.sizes() == x.sizes() && dy.device() == x.device() &&
                          float_or_bf16(x.scalar_type()) && float_or_bf16(dy.scalar_type()) && params_fit(gamma, gamma, x) &&
                          stats_fit(mean, x) && stats_fit(rstd, x);
        if (!fits) return reference_ops().layer_norm_backward(dy, x, mean, rstd, gamma);
        const c10::cuda::CUDAGuard guard(x.device());
        const auto rows = static_cast<std::size_t>(x.size(0));
        const auto hidden = static_cast<std::size_t>(x.size(1));
        LayerNormGrads g;
        g.dx = at::empty_like(x);
        g.dgamma = at::empty_like(gamma);
        g.dbeta = at::empty_like(gamma);
        const std::size_t bytes = kernels::layer_norm_backward_workspace_bytes(rows, hidden);
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
        kernels::layer_norm_backward(dy.data_ptr(), kernel_dtype(dy.scalar_type()), x.data_ptr(), kernel_dtype(x.scalar_type()),
                                     mean.data_ptr<float>(),
                                     rstd.data_ptr<float>(), gamma.data_ptr(), kernel_dtype(gamma.scalar_type()), rows, hidden,
                                     g.dx.data_ptr(), g.dgamma.data_ptr(), g.dbeta.data_ptr(), workspace.data_ptr(), bytes,
                                     stream_of(x));
        return g;
    }

    at::Tensor gelu_forward(const at::Tensor& x) const override {
        if (!plain_matrix(x) || !float_or_bf16(x.scalar_type())) return reference_ops().gelu_forward(x);
        const c10::cuda::CUDAGuard guard(x.device());
        at::Tensor y = at::empty_like(x);
        kernels::gelu_forward(x.data_ptr(), kernel_dtype(x.scalar_type()), static_cast<std::size_t>(x.size(0)),
                              static_cast<std::size_t>(x.size(1)), y.data_ptr(), kernel_dtype(x.scalar_type()), nullptr,
                              stream_of(x));
        return y;
    }

    at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const override {
        if (!plain_matrix(x) || !plain_matrix(dy) || dy.sizes() != x.sizes() || dy.scalar_type() != x.scalar_type() ||
            !float_or_bf16(x.scalar_type())) {
            return reference_ops().gelu_backward(dy, x);
        }
        const c10::cuda::CUDAGuard guard(x.device());
        at::Tensor dx = at::empty_like(x);
        kernels::gelu_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(x.scalar_type()), static_cast<std::size_t>(x.size(0)),
                               static_cast<std::size_t>(x.size(1)), dx.data_ptr(), nullptr, nullptr, kernels::DType::Float32,
                               nullptr, 0, stream_of(x));
        return dx;
    }

    at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    at::ScalarType out_dtype) const override {
        // Transposed views (the backward's weightᵀ and inputᵀ) and mixed dtypes go to LibTorch's own
        // GEMM, which takes any layout; the kernel path adds the bias in its epilogue.
        const bool fits = plain_matrix(a) && plain_matrix(b) && a.size(1) == b.size(1) && a.scalar_type() == b.scalar_type() &&
                          float_or_bf16(a.scalar_type()) && out_dtype == a.scalar_type() && aligned16(a) && aligned16(b);
        if (!fits) return reference_ops().gemm(a, b, bias, out_dtype);
        return run_gemm(a, nullptr, b, nullptr, bias, out_dtype, kernels::Accumulation::Split);
    }

    Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const override {
        Fp8Context& context = *quantizer.context;
        // Current scaling and a calibrating first step derive the scale from x first, and inspection counts
        // per element: the reference does all three (with this amax kernel).
        const bool kernel_input = plain_matrix(x) && float_or_bf16(x.scalar_type()) && !context.inspect();
        if (kernel_input && context.recipe().scaling == ScalingKind::Block) return quantize_blocks(x, quantizer, with_transpose);
        if (!kernel_input || context.recipe().scaling != ScalingKind::Delayed || context.calibrating(quantizer.pass)) {
            return quantize_reference(x, quantizer, with_transpose, *this);
        }
        const c10::cuda::CUDAGuard guard(x.device());
        const Fp8Dtype dtype = quantizer.dtype();
        const at::Tensor scale = context.scale(quantizer.pass, quantizer.slot);
        // The staging entry of the slot's amax history: the kernel combines x's amax into it.
        at::Tensor staging = context.history(quantizer.pass).select(0, quantizer.slot).select(0, 0);
        Fp8Tensor out;
        out.dtype = dtype;
        out.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(dtype)));
        const kernels::Fp8Type type = kernel_fp8_type(dtype);
        const auto rows = static_cast<std::size_t>(x.size(0));
        const auto cols = static_cast<std::size_t>(x.size(1));
        if (with_transpose) {
            out.transposed = at::empty({x.size(1), x.size(0)}, out.data.options());
            kernels::cast_transpose_to_fp8(x.data_ptr(), kernel_dtype(x.scalar_type()), rows, cols, scale.data_ptr<float>(),
                                           out.data.data_ptr(), out.transposed.data_ptr(), type, staging.data_ptr<float>(),
                                           stream_of(x));
        } else {
            kernels::cast_to_fp8(x.data_ptr(), kernel_dtype(x.scalar_type()), rows * cols, scale.data_ptr<float>(),
                                 out.data.data_ptr(), type, staging.data_ptr<float>(), stream_of(x));
        }
        hand_out_live_scale_inv(out, quantizer);
        return out;
    }

    at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                        const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                        Accumulation accumulation) const override {
        if (a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1) {
            return block_fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation);
        }
        const bool both_e5m2 = a.scalar_type() == at::kFloat8_e5m2 && b.scalar_type() == at::kFloat8_e5m2;
        const bool fits = plain_matrix(a) && plain_matrix(b) && a.size(1) == b.size(1) && a.size(0) % 16 == 0 &&
                          b.size(0) % 16 == 0 && a.size(1) % 16 == 0 && !both_e5m2 && float_or_bf16(out_dtype) &&
                          aligned16(a) && aligned16(b) && scalar_fits(a_scale_inv, a) && scalar_fits(b_scale_inv, a);
        if (!fits) return reference_ops().fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation);
        return run_gemm(a, &a_scale_inv, b, &b_scale_inv, bias, out_dtype,
                        accumulation == Accumulation::Fast ? kernels::Accumulation::Fast : kernels::Accumulation::Split);
    }

    // The LayerNorm kernel writes the FP8 GEMM input, its transposed copy and its amax (into the slot's
    // staging entry) in one pass; the high-precision output only when kept.
    Fp8Tensor layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                  at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                  LayerNormResult& ln) const override {
        if (!delayed_kernel_cast(x, quantizer) || !float_or_bf16(out_dtype) || !params_fit(gamma, beta, x)) {
            return TeOps::layer_norm_quantize(x, gamma, beta, eps, out_dtype, quantizer, keep_output, ln);
        }
        const c10::cuda::CUDAGuard guard(x.device());
        const std::int64_t rows = x.size(0);
        const std::int64_t hidden = x.size(1);
        ln.out = keep_output ? at::empty({rows, hidden}, x.options().dtype(out_dtype)) : at::Tensor();
        ln.mean = at::empty({rows}, x.options().dtype(at::kFloat));
        ln.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
        Fp8Tensor q = empty_fp8(x, quantizer);
        const kernels::Fp8Output fp8 = fp8_output(q, quantizer);
        kernels::layer_norm_forward(x.data_ptr(), kernel_dtype(x.scalar_type()), gamma.data_ptr(), beta.data_ptr(),
                                    kernel_dtype(gamma.scalar_type()), static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden),
                                    static_cast<float>(eps), keep_output ? ln.out.data_ptr() : nullptr, kernel_dtype(out_dtype),
                                    &fp8, ln.mean.data_ptr<float>(), ln.rstd.data_ptr<float>(), stream_of(x));
        hand_out_live_scale_inv(q, quantizer);
        return q;
    }

    // One GELU pass writes fc2's FP8 input and its transposed copy, no high-precision activation.
    Fp8Tensor gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const override {
        if (!delayed_kernel_cast(x, quantizer)) return TeOps::gelu_quantize(x, quantizer);
        const c10::cuda::CUDAGuard guard(x.device());
        Fp8Tensor q = empty_fp8(x, quantizer);
        const kernels::Fp8Output fp8 = fp8_output(q, quantizer);
        kernels::gelu_forward(x.data_ptr(), kernel_dtype(x.scalar_type()), static_cast<std::size_t>(x.size(0)),
                              static_cast<std::size_t>(x.size(1)), nullptr, kernel_dtype(x.scalar_type()), &fp8, stream_of(x));
        hand_out_live_scale_inv(q, quantizer);
        return q;
    }

    // One pass over dy and GELU's input: the FP8 gradient, its transposed copy, its amax and fc1's bias
    // gradient (float32, two-stage reduction).
    Fp8GradWithBias gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& quantizer) const override {
        if (!delayed_kernel_cast(x, quantizer) || !plain_matrix(dy) || dy.sizes() != x.sizes() || dy.scalar_type() != x.scalar_type()) {
            return TeOps::gelu_backward_quantize(dy, x, quantizer);
        }
        const auto rows = static_cast<std::size_t>(x.size(0));
        const auto cols = static_cast<std::size_t>(x.size(1));
        const std::size_t bytes = kernels::gelu_backward_workspace_bytes(rows, cols);
        return grad_with_bias(x, quantizer, bytes, [&](const kernels::Fp8Output& fp8, void* dbias, void* workspace) {
            kernels::gelu_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(x.scalar_type()), rows, cols, nullptr, &fp8, dbias,
                                   kernels::DType::Float32, workspace, bytes, stream_of(x));
        });
    }

    // One pass over dy: the FP8 gradient, its transposed copy, its amax and the bias gradient (float32,
    // two-stage reduction).
    Fp8GradWithBias quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const override {
        if (!delayed_kernel_cast(dy, quantizer)) return TeOps::quantize_dbias(dy, quantizer);
        const auto rows = static_cast<std::size_t>(dy.size(0));
        const auto cols = static_cast<std::size_t>(dy.size(1));
        const std::size_t bytes = kernels::cast_transpose_dbias_workspace_bytes(rows, cols);
        return grad_with_bias(dy, quantizer, bytes, [&](const kernels::Fp8Output& fp8, void* dbias, void* workspace) {
            kernels::cast_transpose_dbias_to_fp8(dy.data_ptr(), kernel_dtype(dy.scalar_type()), rows, cols, fp8.scale, fp8.data,
                                                 fp8.transposed, fp8.type, fp8.amax, dbias, kernels::DType::Float32, workspace,
                                                 bytes, stream_of(dy));
        });
    }

    // fc1 with GELU in cuBLASLt's epilogue (GELU_AUX_BIAS): the activation and GELU's input in one GEMM.
    GeluGemmResult gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             at::ScalarType out_dtype) const override {
        const bool fits = hp_operands(x, weight) && out_dtype == x.scalar_type() && bias.defined() && weight.size(0) % 8 == 0;
        if (!fits || epilogue_refused(kernels::Epilogue::GeluAuxBias)) return TeOps::gemm_gelu(x, weight, bias, out_dtype);
        const c10::cuda::CUDAGuard guard(x.device());
        GeluGemmResult r;
        r.activation = at::empty({x.size(0), weight.size(0)}, x.options().dtype(out_dtype));
        r.pre = at::empty_like(r.activation);
        const at::Tensor bias_c = bias.to(out_dtype).contiguous();
        kernels::GemmArgs g = hp_args(x, false, weight, false, r.activation, out_dtype);
        g.epilogue = kernels::Epilogue::GeluAuxBias;
        g.bias = bias_c.data_ptr();
        g.aux = r.pre.data_ptr();
        g.aux_ld = static_cast<std::size_t>(weight.size(0));
        if (!run_epilogue_gemm(g, x)) return TeOps::gemm_gelu(x, weight, bias, out_dtype);
        return r;
    }

    // fc2's dgrad with GELU's derivative and fc1's bias gradient in cuBLASLt's epilogue (DGELU_BGRAD); the
    // weight is read as stored ([out, in], the operand "transposed").
    GradWithBias gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                            at::ScalarType out_dtype) const override {
        const bool fits = hp_operands(dy, weight, /*same_k=*/false) && dy.size(1) == weight.size(0) && plain_matrix(pre) &&
                          pre.size(0) == dy.size(0) && pre.size(1) == weight.size(1) && pre.scalar_type() == out_dtype &&
                          out_dtype == dy.scalar_type() && weight.size(1) % 8 == 0 && aligned16(pre);
        if (!fits || epilogue_refused(kernels::Epilogue::DGeluBGrad)) return TeOps::gemm_dgelu(dy, weight, pre, out_dtype);
        const c10::cuda::CUDAGuard guard(dy.device());
        GradWithBias r;
        r.grad = at::empty({dy.size(0), weight.size(1)}, dy.options().dtype(out_dtype));
        r.bias_grad = at::empty({weight.size(1)}, dy.options().dtype(out_dtype));
        kernels::GemmArgs g = hp_args(dy, false, weight, true, r.grad, out_dtype);
        g.epilogue = kernels::Epilogue::DGeluBGrad;
        g.aux = pre.data_ptr();
        g.aux_ld = static_cast<std::size_t>(weight.size(1));
        g.bias_grad = r.bias_grad.data_ptr();
        if (!run_epilogue_gemm(g, dy)) return TeOps::gemm_dgelu(dy, weight, pre, out_dtype);
        return r;
    }

    // dyᵀ · x with both read as stored (rows × features: the operands "transposed") and, with a bias, dy's
    // column sums in cuBLASLt's epilogue (BGRADB), in the output's dtype.
    GradWithBias wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool with_bias) const override {
        const bool fits = hp_operands(dy, x, /*same_k=*/false) && dy.size(0) == x.size(0) && float_or_bf16(out_dtype) &&
                          (out_dtype == at::kFloat || out_dtype == dy.scalar_type());
        if (!fits || (with_bias && epilogue_refused(kernels::Epilogue::BGradB))) return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias);
        const c10::cuda::CUDAGuard guard(dy.device());
        GradWithBias r;
        r.grad = at::empty({dy.size(1), x.size(1)}, dy.options().dtype(out_dtype));
        kernels::GemmArgs g = hp_args(dy, true, x, true, r.grad, out_dtype);
        g.k = static_cast<std::size_t>(dy.size(0));
        if (with_bias) {
            r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(out_dtype));
            g.epilogue = kernels::Epilogue::BGradB;
            g.bias_grad = r.bias_grad.data_ptr();
        }
        if (!run_epilogue_gemm(g, dy)) return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias);
        return r;
    }

private:
    // Delayed scaling into a kernel that writes FP8 itself (the staging entry takes the amax); current and
    // block scaling, a calibrating first step, inspection and inputs the kernels do not take use the composition.
    static bool delayed_kernel_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) {
        const Fp8Context& context = *quantizer.context;
        return plain_matrix(x) && float_or_bf16(x.scalar_type()) && context.recipe().scaling == ScalingKind::Delayed &&
               !context.inspect() && !context.calibrating(quantizer.pass);
    }

    // The slot's scale_inv as it is (the recipe kernel wrote it): no reciprocal launched per cast. Consumers
    // after the pass's update take it from Fp8Tensor::kept_past_update().
    static void hand_out_live_scale_inv(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
        const Fp8Context::LiveScaleInv live = quantizer.context->live_scale_inv(quantizer.pass, quantizer.slot);
        q.scale_inv = live.now;
        q.scale_inv_after_update = live.after_update;
    }

    // A gradient like `like` cast into the quantizer's slot (with its transposed copy) and its float32 bias
    // gradient, both written by `launch(fp8 output, dbias, workspace)` with a scratch of `workspace_bytes`
    // for the kernels' two-stage column sums.
    template <typename Launch>
    static Fp8GradWithBias grad_with_bias(const at::Tensor& like, const Fp8Quantizer& quantizer, std::size_t workspace_bytes,
                                          Launch&& launch) {
        const c10::cuda::CUDAGuard guard(like.device());
        Fp8GradWithBias r;
        r.grad = empty_fp8(like, quantizer);
        r.bias_grad = at::empty({like.size(1)}, like.options().dtype(at::kFloat));
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(workspace_bytes)}, like.options().dtype(at::kByte));
        launch(fp8_output(r.grad, quantizer), r.bias_grad.data_ptr(), workspace.data_ptr());
        hand_out_live_scale_inv(r.grad, quantizer);
        return r;
    }

    static Fp8Tensor empty_fp8(const at::Tensor& x, const Fp8Quantizer& quantizer) {
        Fp8Tensor q;
        q.dtype = quantizer.dtype();
        q.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(q.dtype)));
        q.transposed = at::empty({x.size(1), x.size(0)}, q.data.options());
        return q;
    }

    static kernels::Fp8Output fp8_output(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
        Fp8Context& context = *quantizer.context;
        kernels::Fp8Output out;
        out.data = q.data.data_ptr();
        out.transposed = q.transposed.data_ptr();
        // The slot's live scale and staging entry: views into the context's state, valid for the launch.
        out.scale = context.scale(quantizer.pass, quantizer.slot).data_ptr<float>();
        out.amax = context.history(quantizer.pass).select(0, quantizer.slot).select(0, 0).data_ptr<float>();
        out.type = kernel_fp8_type(q.dtype);
        return out;
    }

    // Two high-precision operands the GEMM kernel takes as they are stored (same dtype, row-major, aligned).
    static bool hp_operands(const at::Tensor& a, const at::Tensor& b, bool same_k = true) {
        return plain_matrix(a) && plain_matrix(b) && a.scalar_type() == b.scalar_type() && float_or_bf16(a.scalar_type()) &&
               a.device() == b.device() && aligned16(a) && aligned16(b) && (!same_k || a.size(1) == b.size(1));
    }

    // d [m, n] = a · bᵀ with a [m, k] (or stored [k, m] when `a_transposed`) and b [n, k] (or [k, n]).
    static kernels::GemmArgs hp_args(const at::Tensor& a, bool a_transposed, const at::Tensor& b, bool b_transposed,
                                     const at::Tensor& d, at::ScalarType out_dtype) {
        kernels::GemmArgs g;
        g.m = static_cast<std::size_t>(d.size(0));
        g.n = static_cast<std::size_t>(d.size(1));
        g.k = static_cast<std::size_t>(a_transposed ? a.size(0) : a.size(1));
        g.a = {a.data_ptr(), gemm_type(a.scalar_type()), nullptr, a_transposed};
        g.b = {b.data_ptr(), gemm_type(b.scalar_type()), nullptr, b_transposed};
        g.d = d.data_ptr();
        g.d_type = gemm_type(out_dtype);
        return g;
    }

    // Epilogues cuBLASLt may not offer for some type combination on some GPU: the first "no algorithm" for
    // one turns it off for the process (with a line on stderr, and the self-test's rows say which), and
    // the composition runs instead. Any other error is an error.
    static std::mutex& refused_mutex() {
        static std::mutex m;
        return m;
    }
    static std::set<kernels::Epilogue>& refused() {
        static std::set<kernels::Epilogue> s;
        return s;
    }
    static bool epilogue_refused(kernels::Epilogue e) {
        const std::lock_guard<std::mutex> lock(refused_mutex());
        return refused().count(e) > 0;
    }
    static bool run_epilogue_gemm(kernels::GemmArgs g, const at::Tensor& like) {
        const at::Tensor& workspace = gemm_workspace(like);
        g.workspace = workspace.data_ptr();
        g.workspace_bytes = static_cast<std::size_t>(workspace.numel());
        try {
            kernels::gemm(g, stream_of(like));
            return true;
        } catch (const kernels::KernelError& e) {
            if (std::string(e.what()).find("has no algorithm") == std::string::npos) throw;
            const std::lock_guard<std::mutex> lock(refused_mutex());
            if (refused().insert(g.epilogue).second) {
                std::fprintf(stderr, "te-workbench: %s; this epilogue is computed separately from now on\n", e.what());
            }
            return false;
        }
    }

    // Float8BlockScaling's cast in the block cast kernel: the data along its rows (1×128 blocks; 128×128 for
    // weights) and, for the backward, x's transpose cast along its own rows. Same values and scales as
    // the reference (the self-test checks them bit for bit).
    Fp8Tensor quantize_blocks(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const {
        const c10::cuda::CUDAGuard guard(x.device());
        const Fp8Context& context = *quantizer.context;
        const int block_rows = Fp8Context::role_of(quantizer.pass, quantizer.slot) == SlotRole::Weight ? kWeightBlock.rows : 1;
        const bool pow2 = context.recipe().block_power_of_two;
        record_block_cast(abs_max(x), quantizer);
        Fp8Tensor out;
        out.dtype = quantizer.dtype();
        const kernels::Fp8Type type = kernel_fp8_type(out.dtype);
        const auto cast = [&](const at::Tensor& source, at::Tensor& data, at::Tensor& scale_inv) {
            const std::int64_t rows = source.size(0);
            const std::int64_t cols = source.size(1);
            data = at::empty({rows, cols}, source.options().dtype(to_scalar_type(out.dtype)));
            scale_inv = at::empty({(rows + block_rows - 1) / block_rows, (cols + 127) / 128}, source.options().dtype(at::kFloat));
            kernels::block_cast_to_fp8(source.data_ptr(), kernel_dtype(source.scalar_type()), static_cast<std::size_t>(rows),
                                       static_cast<std::size_t>(cols), block_rows, pow2, data.data_ptr(),
                                       scale_inv.data_ptr<float>(), type, stream_of(source));
        };
        cast(x, out.data, out.scale_inv);
        if (with_transpose) {
            at::Tensor xt = at::empty({x.size(1), x.size(0)}, x.options());
            kernels::transpose(x.data_ptr(), static_cast<std::size_t>(x.element_size()), static_cast<std::size_t>(x.size(0)),
                               static_cast<std::size_t>(x.size(1)), xt.data_ptr(), stream_of(x));
            cast(xt, out.transposed, out.transposed_scale_inv);
        }
        return out;
    }

    // Block-scaled operands: cuBLASLt's block modes where this GPU offers them and the shapes fit (k a
    // multiple of 128, m and n of 16), else the reference's emulation. The block shape of each operand
    // follows from its scales, as in the reference: one scale row per data row is 1×128.
    at::Tensor block_fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                              const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                              Accumulation accumulation) const {
        const auto block_of = [](const at::Tensor& data, const at::Tensor& scales) {
            return scales.dim() == 2 && scales.size(0) == data.size(0) ? kActivationBlock : kWeightBlock;
        };
        const BlockShape a_block = block_of(a, a_scale_inv);
        const BlockShape b_block = block_of(b, b_scale_inv);
        const bool fits = plain_matrix(a) && plain_matrix(b) && a.size(1) == b.size(1) && a.size(1) % 128 == 0 &&
                          a.size(0) % 16 == 0 && b.size(0) % 16 == 0 && a_scale_inv.dim() == 2 && b_scale_inv.dim() == 2 &&
                          !(a_block == kWeightBlock && b_block == kWeightBlock) && float_or_bf16(out_dtype) && aligned16(a) &&
                          aligned16(b) && a_scale_inv.is_cuda() && b_scale_inv.is_cuda() && block_gemms_native();
        if (!fits) return reference_ops().fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation);
        const at::Tensor a_scales = block_scales_for_gemm(a_scale_inv, a_block);
        const at::Tensor b_scales = block_scales_for_gemm(b_scale_inv, b_block);
        const auto mode = [](BlockShape block) {
            return block == kActivationBlock ? kernels::ScaleMode::Block1x128 : kernels::ScaleMode::Block128x128;
        };
        return run_gemm(a, &a_scales, b, &b_scales, bias, out_dtype, kernels::Accumulation::Split, mode(a_block), mode(b_block));
    }

    static bool params_fit(const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& x) {
        return gamma.is_cuda() && gamma.dim() == 1 && gamma.is_contiguous() && beta.is_contiguous() &&
               gamma.size(0) == x.size(1) && beta.sizes() == gamma.sizes() && beta.scalar_type() == gamma.scalar_type() &&
               float_or_bf16(gamma.scalar_type()) && gamma.device() == x.device();
    }

    static bool stats_fit(const at::Tensor& s, const at::Tensor& x) {
        return s.is_cuda() && s.is_contiguous() && s.scalar_type() == at::kFloat && s.numel() == x.size(0);
    }

    static bool scalar_fits(const at::Tensor& s, const at::Tensor& like) {
        return s.is_cuda() && s.numel() == 1 && s.scalar_type() == at::kFloat && s.device() == like.device();
    }

    static at::Tensor run_gemm(const at::Tensor& a, const at::Tensor* a_scale_inv, const at::Tensor& b,
                               const at::Tensor* b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                               kernels::Accumulation accumulation, kernels::ScaleMode a_mode = kernels::ScaleMode::Tensor,
                               kernels::ScaleMode b_mode = kernels::ScaleMode::Tensor) {
        const c10::cuda::CUDAGuard guard(a.device());
        at::Tensor d = at::empty({a.size(0), b.size(0)}, a.options().dtype(out_dtype));
        at::Tensor bias_c;
        kernels::GemmArgs g;
        g.m = static_cast<std::size_t>(a.size(0));
        g.n = static_cast<std::size_t>(b.size(0));
        g.k = static_cast<std::size_t>(a.size(1));
        g.a = {a.data_ptr(), gemm_type(a.scalar_type()), a_scale_inv ? a_scale_inv->data_ptr<float>() : nullptr, false, a_mode};
        g.b = {b.data_ptr(), gemm_type(b.scalar_type()), b_scale_inv ? b_scale_inv->data_ptr<float>() : nullptr, false, b_mode};
        g.d = d.data_ptr();
        g.d_type = gemm_type(out_dtype);
        g.accumulation = accumulation;
        if (bias && bias->defined()) {
            // The epilogue takes the bias in the output's dtype, and in bfloat16 for FP8 operands.
            const bool fp8 = a_scale_inv != nullptr;
            bias_c = bias->to(fp8 ? at::kBFloat16 : out_dtype).contiguous();
            g.epilogue = kernels::Epilogue::Bias;
            g.bias = bias_c.data_ptr();
        }
        const at::Tensor& workspace = gemm_workspace(a);
        g.workspace = workspace.data_ptr();
        g.workspace_bytes = static_cast<std::size_t>(workspace.numel());
        kernels::gemm(g, stream_of(a));
        return d;
    }
};

}  // namespace

const TeOps& fused_ops() {
    static const FusedOps ops;
    return ops;
}

}  // namespace tewb
