#include "core/modules/ops/FusedOps.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ATen/record_function.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/reciprocal.h>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/ledger/Ledger.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ParameterCopies.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/host/activation.h"
#include "tewb_kernels/host/amax.h"
#include "tewb_kernels/host/cast.h"
#include "tewb_kernels/host/cast_multi.h"
#include "tewb_kernels/host/adamw.h"
#include "tewb_kernels/host/embedding.h"
#include "tewb_kernels/host/loss.h"
#include "tewb_kernels/host/gemm.h"
#include "tewb_kernels/host/normalization.h"
#include "tewb_kernels/host/recipe.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

#ifdef TEWB_FUSED_CUDA
#include <map>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/adamw.h"
#include "tewb_kernels/embedding.h"
#include "tewb_kernels/loss.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/recipe.h"
#endif

// One argument list for both implementations of a kernel: the host one over CPU tensors, the CUDA one
// (the same arguments and LibTorch's current stream) over CUDA tensors. `where` picks; `reads` and `writes`
// are the tensors the call reads and writes, for the launch ledger's bytes.
#ifdef TEWB_FUSED_CUDA
#define TEWB_KERNEL(where, reads, writes, fn, ...)                                                    \
    run_kernel("tewb::" #fn, where, reads, writes, [&] { kernels::host::fn(__VA_ARGS__); },           \
               [&](cudaStream_t stream) { kernels::fn(__VA_ARGS__, stream); })
#else
#define TEWB_KERNEL(where, reads, writes, fn, ...) \
    run_kernel("tewb::" #fn, where, reads, writes, [&] { kernels::host::fn(__VA_ARGS__); })
#endif

namespace tewb {

namespace {

using Tensors = std::initializer_list<at::Tensor>;
// Why an operand does not fit the kernels; nothing when it does.
using Misfit = std::optional<std::string>;

bool float_or_bf16(at::ScalarType t) {
    return t == at::kFloat || t == at::kBFloat16;
}

bool aligned16(const at::Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

std::size_t rows_of(const at::Tensor& t) {
    return static_cast<std::size_t>(t.size(0));
}

std::size_t cols_of(const at::Tensor& t) {
    return static_cast<std::size_t>(t.size(1));
}

// A GEMM operand as cuBLASLt (and the host GEMM) can read it without a copy: row-major as it is, or the
// transposed view of a row-major matrix (the backward's weightᵀ), read as stored.
struct Stored {
    bool fits = false;
    bool transposed = false;
};

Stored stored_layout(const at::Tensor& t) {
    if (t.dim() != 2 || t.numel() == 0) return {};
    if (t.is_contiguous()) return {true, false};
    if (t.t().is_contiguous()) return {true, true};
    return {};
}

#ifdef TEWB_FUSED_CUDA
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
#endif

std::uint64_t bytes_of(const std::vector<at::Tensor>& tensors) {
    std::uint64_t total = 0;
    for (const at::Tensor& t : tensors) {
        if (t.defined()) total += static_cast<std::uint64_t>(t.numel()) * static_cast<std::uint64_t>(t.element_size());
    }
    return total;
}

class FusedOps final : public TeOps {
public:
    explicit FusedOps(OpsKind kind) : kind_(kind) {}

    std::string_view name() const override { return "fused"; }
    OpsKind kind() const override { return kind_; }
    bool block_gemms_native() const override {
#ifdef TEWB_FUSED_CUDA
        if (kind_ == OpsKind::FusedCuda) return kernels::block_gemm_supported(c10::cuda::current_device());
#endif
        return false;  // the host GEMM computes block-scaled products in float32: emulated
    }
    std::uint64_t kernel_launches() const override { return kernels::launch_count(); }

    at::Tensor abs_max(const at::Tensor& x) const override {
        const auto dtype = x.scalar_type();
        if (Misfit m = device_misfit(x, "x")) return fall_back("abs_max", *m, [&] { return abs_max_reference(x); });
        if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) {
            return fall_back("abs_max", "x is " + std::string(c10::toString(dtype)) + " (the kernel takes float32, bfloat16, float16)",
                             [&] { return abs_max_reference(x); });
        }
        const at::Tensor contiguous = x.contiguous();
        at::Tensor out = at::empty({}, x.options().dtype(at::kFloat));
        TEWB_KERNEL(x, Tensors{contiguous}, Tensors{out}, abs_max, contiguous.data_ptr(), kernel_dtype(dtype),
                    static_cast<std::size_t>(contiguous.numel()), out.data_ptr<float>());
        return out;
    }

    // Every slot of the pass, with its statistics and kept scale_invs, in one launch of the recipe kernel.
    void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                        float numerator, const UpdateRecord& record) const override {
        Misfit m = device_misfit(history, "the amax history");
        if (!m && (!history.is_contiguous() || !scale.is_contiguous() || !scale_inv.is_contiguous())) {
            m = "the FP8 state is not contiguous";
        }
        const at::Tensor& statistics = record.statistics;
        const at::Tensor& kept = record.kept_scale_inv;
        if (!m && statistics.defined() &&
            (statistics.dim() != 2 || statistics.size(1) < 2 || statistics.stride(1) != 1 ||
             statistics.size(0) != history.size(0) || statistics.scalar_type() != at::kFloat || device_misfit(statistics, "statistics"))) {
            m = "the statistics are not [slots, >= 2] float32 rows on the state's device";
        }
        if (!m && kept.defined() && (!kept.is_contiguous() || kept.numel() != scale_inv.numel() || device_misfit(kept, "kept"))) {
            m = "the kept scale_invs are not a contiguous [slots] tensor on the state's device";
        }
        if (m) {
            fall_back("update_scaling", *m, [&] {
                update_scaling_reference(history, scale, scale_inv, recipe, numerator, record);
                return 0;
            });
            return;
        }
        kernels::ScaleUpdateRecord written;
        if (statistics.defined()) {
            written.statistics = statistics.data_ptr<float>();
            written.statistics_stride = static_cast<int>(statistics.stride(0));
        }
        if (kept.defined()) written.kept_scale_inv = kept.data_ptr<float>();
        const kernels::ScalingRule rule =
            recipe.scaling == ScalingKind::Block   ? (recipe.block_power_of_two ? kernels::ScalingRule::BlockPowerOfTwo
                                                                                : kernels::ScalingRule::BlockExact)
            : recipe.scaling == ScalingKind::Current ? kernels::ScalingRule::Current
            : recipe.algo == AmaxAlgo::Max           ? kernels::ScalingRule::DelayedMax
                                                     : kernels::ScalingRule::DelayedMostRecent;
        TEWB_KERNEL(history, (Tensors{history, scale, scale_inv}), (Tensors{history, scale, scale_inv}), update_scaling,
                    history.data_ptr<float>(), scale.data_ptr<float>(), scale_inv.data_ptr<float>(),
                    static_cast<int>(history.size(0)), static_cast<int>(history.size(1)), numerator, rule, written);
    }

    LayerNormResult layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                       at::ScalarType out_dtype) const override {
        Misfit m = matrix_misfit(x, "x");
        if (!m) m = params_misfit(gamma, beta, x);
        if (!m && !float_or_bf16(out_dtype)) m = "the output dtype is not float32 or bfloat16";
        if (m) {
            return fall_back("layer_norm_forward", *m,
                             [&] { return reference_ops().layer_norm_forward(x, gamma, beta, eps, out_dtype); });
        }
        const std::int64_t rows = x.size(0);
        const std::int64_t hidden = x.size(1);
        LayerNormResult r;
        r.out = at::empty({rows, hidden}, x.options().dtype(out_dtype));
        r.mean = at::empty({rows}, x.options().dtype(at::kFloat));
        r.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
        TEWB_KERNEL(x, (Tensors{x, gamma, beta}), (Tensors{r.out, r.mean, r.rstd}), layer_norm_forward, x.data_ptr(),
                    kernel_dtype(x.scalar_type()), gamma.data_ptr(), beta.data_ptr(), kernel_dtype(gamma.scalar_type()),
                    rows_of(x), cols_of(x), static_cast<float>(eps), r.out.data_ptr(), kernel_dtype(out_dtype), nullptr,
                    r.mean.data_ptr<float>(), r.rstd.data_ptr<float>());
        return r;
    }

    LayerNormGrads layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                       const at::Tensor& gamma) const override {
        return norm_backward(dy, x, mean, rstd, gamma, at::Tensor());
    }

    // The skip connection's gradient added to dx in the same kernel (layer_norm_backward_add).
    LayerNormGrads layer_norm_backward_add(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                           const at::Tensor& gamma, const at::Tensor& dresidual) const override {
        return norm_backward(dy, x, mean, rstd, gamma, dresidual);
    }

    at::Tensor gelu_forward(const at::Tensor& x) const override {
        if (Misfit m = matrix_misfit(x, "x")) {
            return fall_back("gelu_forward", *m, [&] { return reference_ops().gelu_forward(x); });
        }
        at::Tensor y = at::empty_like(x);
        TEWB_KERNEL(x, Tensors{x}, Tensors{y}, gelu_forward, x.data_ptr(), kernel_dtype(x.scalar_type()), rows_of(x), cols_of(x),
                    y.data_ptr(), kernel_dtype(x.scalar_type()), nullptr);
        return y;
    }

    at::Tensor gelu_backward(const at::Tensor& dy, const at::Tensor& x) const override {
        Misfit m = matrix_misfit(x, "x");
        if (!m) m = matrix_misfit(dy, "dy");
        if (!m && (dy.sizes() != x.sizes() || dy.scalar_type() != x.scalar_type())) m = "dy and x differ in shape or dtype";
        if (m) return fall_back("gelu_backward", *m, [&] { return reference_ops().gelu_backward(dy, x); });
        at::Tensor dx = at::empty_like(x);
        TEWB_KERNEL(x, (Tensors{dy, x}), Tensors{dx}, gelu_backward, dy.data_ptr(), x.data_ptr(), kernel_dtype(x.scalar_type()),
                    rows_of(x), cols_of(x), dx.data_ptr(), nullptr, nullptr, kernels::DType::Float32, nullptr, 0);
        return dx;
    }

    // Either operand may be the transposed view of a row-major matrix (the backward's weightᵀ): the GEMM
    // reads it as stored. The bias goes into the epilogue.
    at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                    at::ScalarType out_dtype) const override {
        return hp_gemm("gemm", a, b, bias, out_dtype, at::Tensor(), [&] { return reference_ops().gemm(a, b, bias, out_dtype); });
    }

    // The residual accumulated in the GEMM (C, beta = 1): the output in the residual's dtype, written once.
    at::Tensor gemm_add(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias, at::ScalarType product_dtype,
                        const at::Tensor& residual) const override {
        const auto reference = [&] { return reference_ops().gemm_add(a, b, bias, product_dtype, residual); };
        if (Misfit m = residual_misfit(residual, a.size(0), b.size(0))) return fall_back("gemm_add", *m, reference);
        return hp_gemm("gemm_add", a, b, bias, residual.scalar_type(), residual, reference);
    }

    // Delayed (per-tensor) scaling accumulates the residual in the FP8 GEMM; block-scaled GEMMs add it separately
    // (cuBLASLt's C with block scales is not used here: gemm_rules.h).
    at::Tensor fp8_gemm_add(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                            const std::optional<at::Tensor>& bias, at::ScalarType product_dtype, Accumulation accumulation,
                            const at::Tensor& residual) const override {
        if (a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1) {
            return TeOps::fp8_gemm_add(a, a_scale_inv, b, b_scale_inv, bias, product_dtype, accumulation, residual);
        }
        const auto reference = [&] {
            return reference_ops().fp8_gemm_add(a, a_scale_inv, b, b_scale_inv, bias, product_dtype, accumulation, residual);
        };
        if (Misfit m = residual_misfit(residual, a.size(0), b.size(0))) return fall_back("fp8_gemm_add", *m, reference);
        return fp8_gemm_into("fp8_gemm_add", a, a_scale_inv, b, b_scale_inv, bias, residual.scalar_type(), accumulation, residual,
                             reference);
    }

private:
    // dy may differ from x in dtype: a float32 residual stream with a bfloat16 gradient under autocast.
    // dresidual, when defined, is added to dx in the kernel.
    LayerNormGrads norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                                 const at::Tensor& gamma, const at::Tensor& dresidual) const {
        const bool add = dresidual.defined();
        const char* op = add ? "layer_norm_backward_add" : "layer_norm_backward";
        Misfit m = matrix_misfit(x, "x");
        if (!m) m = matrix_misfit(dy, "dy");
        if (!m && dy.sizes() != x.sizes()) m = "dy and x differ in shape";
        if (!m) m = params_misfit(gamma, gamma, x);
        if (!m && (!stats_fit(mean, x) || !stats_fit(rstd, x))) m = "mean or rstd is not float32 [rows] on x's device";
        if (!m && add && (matrix_misfit(dresidual, "dresidual") || dresidual.sizes() != x.sizes() ||
                          dresidual.scalar_type() != x.scalar_type())) {
            m = "dresidual is not a row-major matrix of x's shape and dtype on x's device";
        }
        if (m) {
            return fall_back(op, *m, [&] {
                return add ? reference_ops().layer_norm_backward_add(dy, x, mean, rstd, gamma, dresidual)
                           : reference_ops().layer_norm_backward(dy, x, mean, rstd, gamma);
            });
        }
        const std::size_t rows = rows_of(x);
        const std::size_t hidden = cols_of(x);
        LayerNormGrads g;
        g.dx = at::empty_like(x);
        g.dgamma = at::empty_like(gamma);
        g.dbeta = at::empty_like(gamma);
        const std::size_t bytes = kernels::host::layer_norm_backward_workspace_bytes(rows, hidden);
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
        if (add) {
            TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma, dresidual}), (Tensors{g.dx, g.dgamma, g.dbeta}), layer_norm_backward_add,
                        dy.data_ptr(), kernel_dtype(dy.scalar_type()), x.data_ptr(), kernel_dtype(x.scalar_type()),
                        mean.data_ptr<float>(), rstd.data_ptr<float>(), gamma.data_ptr(), kernel_dtype(gamma.scalar_type()), rows,
                        hidden, g.dx.data_ptr(), dresidual.data_ptr(), g.dgamma.data_ptr(), g.dbeta.data_ptr(), workspace.data_ptr(),
                        bytes);
        } else {
            TEWB_KERNEL(x, (Tensors{dy, x, mean, rstd, gamma}), (Tensors{g.dx, g.dgamma, g.dbeta}), layer_norm_backward,
                        dy.data_ptr(), kernel_dtype(dy.scalar_type()), x.data_ptr(), kernel_dtype(x.scalar_type()),
                        mean.data_ptr<float>(), rstd.data_ptr<float>(), gamma.data_ptr(), kernel_dtype(gamma.scalar_type()), rows,
                        hidden, g.dx.data_ptr(), g.dgamma.data_ptr(), g.dbeta.data_ptr(), workspace.data_ptr(), bytes);
        }
        return g;
    }

    // A GEMM's output added to `residual` in the GEMM: a row-major [m, n] float32 or bfloat16 matrix on this
    // implementation's device.
    Misfit residual_misfit(const at::Tensor& residual, std::int64_t m, std::int64_t n) const {
        if (Misfit misfit = matrix_misfit(residual, "the residual")) return misfit;
        if (residual.size(0) != m || residual.size(1) != n) return std::string("the residual's shape is not the GEMM output's");
        return std::nullopt;
    }

    template <typename Reference>
    at::Tensor hp_gemm(const char* op, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                       at::ScalarType out_dtype, const at::Tensor& residual, Reference&& reference) const {
        const Stored a_layout = stored_layout(a);
        const Stored b_layout = stored_layout(b);
        Misfit m = device_misfit(a, "a");
        if (!m) m = device_misfit(b, "b");
        if (!m && (!a_layout.fits || !b_layout.fits)) m = "an operand is neither row-major nor a transposed row-major matrix";
        if (!m && (a.size(1) != b.size(1) || a.scalar_type() != b.scalar_type() || !float_or_bf16(a.scalar_type()))) {
            m = "the operands differ in k or dtype, or are not float32 or bfloat16";
        }
        if (!m && !(out_dtype == a.scalar_type() || out_dtype == at::kFloat)) m = "the output dtype is neither the operands' nor float32";
        if (m) return fall_back(op, *m, reference);
        at::Tensor d = at::empty({a.size(0), b.size(0)}, a.options().dtype(out_dtype));
        // hp_args takes the operands as stored.
        kernels::GemmArgs g = hp_args(a_layout.transposed ? a.t() : a, a_layout.transposed, b_layout.transposed ? b.t() : b,
                                      b_layout.transposed, d, out_dtype);
        at::Tensor bias_c;
        if (bias && bias->defined()) {
            bias_c = parameter_copy(*bias, out_dtype).contiguous();
            g.epilogue = kernels::Epilogue::Bias;
            g.bias = bias_c.data_ptr();
            g.bias_type = gemm_type(out_dtype);
        }
        if (residual.defined()) g.c = residual.data_ptr();
        if (Misfit refused = run_gemm(g, a, Tensors{a, b, bias_c, residual}, Tensors{d})) return fall_back(op, *refused, reference);
        return d;
    }

public:

    // The cast kernels for every recipe: delayed scaling casts with the slot's scale and combine x's amax
    // into the slot's staging entry in the same pass; current scaling and a calibrating first step take
    // x's amax (kernel) first and derive the scale from it; block scaling runs the block cast. The
    // transposed copy is always a contiguous tensor (cuBLASLt's FP8 GEMMs take TN only). Inspection counts
    // on the side, with the reference's statistics.
    Fp8Tensor quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const override {
        if (Misfit m = matrix_misfit(x, "x")) {
            return fall_back("quantize", *m, [&] { return quantize_reference(x, quantizer, with_transpose, *this); });
        }
        Fp8Context& context = *quantizer.context;
        if (context.recipe().scaling == ScalingKind::Block) return quantize_blocks(x, quantizer, with_transpose);
        const Fp8Dtype dtype = quantizer.dtype();
        const bool live = context.recipe().scaling == ScalingKind::Delayed && !context.calibrating(quantizer.pass);
        at::Tensor scale;
        float* staging = nullptr;
        if (live) {
            scale = context.scale(quantizer.pass, quantizer.slot);
            staging = staging_entry(quantizer).data_ptr<float>();
        } else {
            const at::Tensor amax = abs_max(x);
            const float numerator = context.recipe().scaling == ScalingKind::Current
                                        ? fp8_max(dtype)
                                        : scale_numerator(fp8_max(dtype), context.recipe().margin);
            scale = current_scale_tensor(amax, numerator).contiguous();
            context.set_scale(quantizer.pass, quantizer.slot, scale);
            context.record_amax(quantizer.pass, quantizer.slot, amax);
        }
        Fp8Tensor out;
        out.dtype = dtype;
        out.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(dtype)));
        const kernels::Fp8Type type = kernel_fp8_type(dtype);
        if (with_transpose) {
            out.transposed = at::empty({x.size(1), x.size(0)}, out.data.options());
            TEWB_KERNEL(x, (Tensors{x, scale}), (Tensors{out.data, out.transposed}), cast_transpose_to_fp8, x.data_ptr(),
                        kernel_dtype(x.scalar_type()), rows_of(x), cols_of(x), scale.data_ptr<float>(), out.data.data_ptr(),
                        out.transposed.data_ptr(), type, staging);
        } else {
            TEWB_KERNEL(x, (Tensors{x, scale}), Tensors{out.data}, cast_to_fp8, x.data_ptr(), kernel_dtype(x.scalar_type()),
                        static_cast<std::size_t>(x.numel()), scale.data_ptr<float>(), out.data.data_ptr(), type, staging);
        }
        if (context.inspect()) inspect_tensor_cast(x, out.data, scale, quantizer);
        if (live) {
            hand_out_live_scale_inv(out, quantizer);
        } else {
            out.scale_inv = at::reciprocal(scale);
        }
        return out;
    }

    // Delayed scaling: every weight in one multi-tensor launch (one per 64 weights), each cast with its slot's
    // scale, its amax combined into its slot's staging entry and the slot's live scale_inv handed out, as
    // quantize gives them one by one. Other recipes, a calibrating step and inspection cast one by one.
    std::vector<Fp8Tensor> quantize_weights(const std::vector<WeightCast>& casts) const override {
        const auto alike = [&](const WeightCast& c) {
            return c.weight.device() == casts.front().weight.device() && c.weight.scalar_type() == casts.front().weight.scalar_type();
        };
        const bool blocks = !casts.empty() && std::all_of(casts.begin(), casts.end(), [&](const WeightCast& c) {
            const Fp8Context& context = *c.quantizer.context;
            return !matrix_misfit(c.weight, "weight") && alike(c) && context.recipe().scaling == ScalingKind::Block &&
                   !context.inspect() && Fp8Context::role_of(c.quantizer.pass, c.quantizer.slot) == SlotRole::Weight &&
                   context.recipe().block_power_of_two == casts.front().quantizer.context->recipe().block_power_of_two;
        });
        if (blocks) return quantize_weight_blocks(casts);
        const bool batched = !casts.empty() && std::all_of(casts.begin(), casts.end(), [&](const WeightCast& c) {
            return delayed_kernel_cast(c.weight, c.quantizer) && c.weight.device() == casts.front().weight.device();
        });
        if (!batched) return TeOps::quantize_weights(casts);
        std::vector<Fp8Tensor> out;
        std::vector<kernels::CastTransposeItem> items;
        std::vector<at::Tensor> reads;
        std::vector<at::Tensor> writes;
        for (const WeightCast& c : casts) {
            Fp8Tensor q = empty_fp8(c.weight, c.quantizer);
            const kernels::Fp8Output fp8 = fp8_output(q, c.quantizer);
            items.push_back({c.weight.data_ptr(), kernel_dtype(c.weight.scalar_type()), rows_of(c.weight), cols_of(c.weight), fp8.scale,
                             fp8.data, fp8.transposed, fp8.type, fp8.amax});
            reads.push_back(c.weight);
            writes.push_back(q.data);
            writes.push_back(q.transposed);
            out.push_back(std::move(q));
        }
        TEWB_KERNEL(casts.front().weight, reads, writes, cast_transpose_multi_to_fp8, items.data(), items.size());
        for (std::size_t i = 0; i < out.size(); ++i) hand_out_live_scale_inv(out[i], casts[i].quantizer);
        return out;
    }

    at::Tensor fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b, const at::Tensor& b_scale_inv,
                        const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                        Accumulation accumulation) const override {
        return fp8_gemm_into("fp8_gemm", a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation, at::Tensor(), [&] {
            return reference_ops().fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation);
        });
    }

private:
    template <typename Reference>
    at::Tensor fp8_gemm_into(const char* op, const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                             const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                             Accumulation accumulation, const at::Tensor& residual, Reference&& reference) const {
        Misfit m = matrix_misfit_any_dtype(a, "a");
        if (!m) m = matrix_misfit_any_dtype(b, "b");
        if (!m && a.size(1) != b.size(1)) m = "a and b differ in k";
        if (!m && (device_misfit(a_scale_inv, "a's scale_inv") || device_misfit(b_scale_inv, "b's scale_inv"))) {
            m = "a scale_inv is not on the operands' device";
        }
        if (!m && !float_or_bf16(out_dtype)) m = "the output dtype is not float32 or bfloat16";
        if (m) return fall_back(op, *m, reference);
        const bool blocks = a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1;
        at::Tensor a_scales = a_scale_inv;
        at::Tensor b_scales = b_scale_inv;
        kernels::ScaleMode a_mode = kernels::ScaleMode::Tensor;
        kernels::ScaleMode b_mode = kernels::ScaleMode::Tensor;
        if (blocks) {
            if (kind_ == OpsKind::FusedCuda && !block_gemms_native()) {
                return fall_back(op, "this GPU has no block-scaled FP8 GEMM (cuBLASLt offers it on compute capability 9.x)",
                                 reference);
            }
            // The block shape of each operand follows from its scales, as in the reference: one scale row per
            // data row is 1×128.
            const auto block_of = [](const at::Tensor& data, const at::Tensor& scales) {
                return scales.dim() == 2 && scales.size(0) == data.size(0) ? kActivationBlock : kWeightBlock;
            };
            const auto mode = [](BlockShape block) {
                return block == kActivationBlock ? kernels::ScaleMode::Block1x128 : kernels::ScaleMode::Block128x128;
            };
            const BlockShape a_block = block_of(a, a_scale_inv);
            const BlockShape b_block = block_of(b, b_scale_inv);
            if (a_scale_inv.dim() != 2 || b_scale_inv.dim() != 2) return fall_back(op, "block scales are not 2-D", reference);
            a_scales = block_scales_for_gemm(a_scale_inv, a_block);
            b_scales = block_scales_for_gemm(b_scale_inv, b_block);
            a_mode = mode(a_block);
            b_mode = mode(b_block);
        } else if (a_scale_inv.scalar_type() != at::kFloat || b_scale_inv.scalar_type() != at::kFloat) {
            return fall_back(op, "a scale_inv is not float32", reference);
        }
        at::Tensor d = at::empty({a.size(0), b.size(0)}, a.options().dtype(out_dtype));
        kernels::GemmArgs g;
        g.m = rows_of(a);
        g.n = rows_of(b);
        g.k = cols_of(a);
        g.a = {a.data_ptr(), gemm_type(a.scalar_type()), a_scales.data_ptr<float>(), false, a_mode};
        g.b = {b.data_ptr(), gemm_type(b.scalar_type()), b_scales.data_ptr<float>(), false, b_mode};
        g.d = d.data_ptr();
        g.d_type = gemm_type(out_dtype);
        g.accumulation = accumulation == Accumulation::Fast && !blocks ? kernels::Accumulation::Fast : kernels::Accumulation::Split;
        at::Tensor bias_c;
        if (bias && bias->defined()) {
            // cuBLASLt's FP8 kernels take the bias in bfloat16 only (the H200 refused float32).
            bias_c = parameter_copy(*bias, at::kBFloat16).contiguous();
            g.epilogue = kernels::Epilogue::Bias;
            g.bias = bias_c.data_ptr();
            g.bias_type = kernels::GemmType::BFloat16;
        }
        if (residual.defined()) g.c = residual.data_ptr();
        if (Misfit refused = run_gemm(g, a, Tensors{a, b, a_scales, b_scales, bias_c, residual}, Tensors{d})) {
            return fall_back(op, *refused, reference);
        }
        return d;
    }

public:

    // The LayerNorm kernel writes the FP8 GEMM input, its transposed copy and its amax (into the slot's
    // staging entry) in one pass; the high-precision output only when kept.
    Fp8Tensor layer_norm_quantize(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                                  at::ScalarType out_dtype, const Fp8Quantizer& quantizer, bool keep_output,
                                  LayerNormResult& ln) const override {
        if (!delayed_kernel_cast(x, quantizer) || !float_or_bf16(out_dtype) || params_misfit(gamma, beta, x)) {
            return TeOps::layer_norm_quantize(x, gamma, beta, eps, out_dtype, quantizer, keep_output, ln);
        }
        const std::int64_t rows = x.size(0);
        const std::int64_t hidden = x.size(1);
        ln.out = keep_output ? at::empty({rows, hidden}, x.options().dtype(out_dtype)) : at::Tensor();
        ln.mean = at::empty({rows}, x.options().dtype(at::kFloat));
        ln.rstd = at::empty({rows}, x.options().dtype(at::kFloat));
        Fp8Tensor q = empty_fp8(x, quantizer);
        const kernels::Fp8Output fp8 = fp8_output(q, quantizer);
        TEWB_KERNEL(x, (Tensors{x, gamma, beta}), (Tensors{ln.out, ln.mean, ln.rstd, q.data, q.transposed}), layer_norm_forward,
                    x.data_ptr(), kernel_dtype(x.scalar_type()), gamma.data_ptr(), beta.data_ptr(),
                    kernel_dtype(gamma.scalar_type()), rows_of(x), cols_of(x), static_cast<float>(eps),
                    keep_output ? ln.out.data_ptr() : nullptr, kernel_dtype(out_dtype), &fp8, ln.mean.data_ptr<float>(),
                    ln.rstd.data_ptr<float>());
        hand_out_live_scale_inv(q, quantizer);
        return q;
    }

    // One GELU pass writes fc2's FP8 input and its transposed copy, no high-precision activation.
    Fp8Tensor gelu_quantize(const at::Tensor& x, const Fp8Quantizer& quantizer) const override {
        if (!delayed_kernel_cast(x, quantizer)) return TeOps::gelu_quantize(x, quantizer);
        Fp8Tensor q = empty_fp8(x, quantizer);
        const kernels::Fp8Output fp8 = fp8_output(q, quantizer);
        TEWB_KERNEL(x, Tensors{x}, (Tensors{q.data, q.transposed}), gelu_forward, x.data_ptr(), kernel_dtype(x.scalar_type()),
                    rows_of(x), cols_of(x), nullptr, kernel_dtype(x.scalar_type()), &fp8);
        hand_out_live_scale_inv(q, quantizer);
        return q;
    }

    // One pass over dy and GELU's input: the FP8 gradient, its transposed copy, its amax and fc1's bias
    // gradient (float32, two-stage reduction).
    // Block scaling: the GELU backward writes the gradient and fc1's bias gradient in one launch, the block cast
    // follows (its blocks need the whole gradient's amaxes first).
    Fp8GradWithBias gelu_backward_quantize(const at::Tensor& dy, const at::Tensor& x, const Fp8Quantizer& quantizer) const override {
        const bool fits = !matrix_misfit(x, "x") && !matrix_misfit(dy, "dy") && dy.sizes() == x.sizes() &&
                          dy.scalar_type() == x.scalar_type();
        if (fits && quantizer.context->recipe().scaling == ScalingKind::Block) {
            const std::size_t rows = rows_of(x);
            const std::size_t cols = cols_of(x);
            const std::size_t bytes = kernels::host::gelu_backward_workspace_bytes(rows, cols);
            const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
            const at::Tensor dx = at::empty_like(x);
            at::Tensor bias_grad = at::empty({x.size(1)}, x.options().dtype(at::kFloat));
            TEWB_KERNEL(x, (Tensors{dy, x}), (Tensors{dx, bias_grad}), gelu_backward, dy.data_ptr(), x.data_ptr(),
                        kernel_dtype(x.scalar_type()), rows, cols, dx.data_ptr(), nullptr, bias_grad.data_ptr(),
                        kernels::DType::Float32, workspace.data_ptr(), bytes);
            return {quantize_blocks(dx, quantizer, /*with_transpose=*/true), bias_grad};
        }
        if (!fits || !delayed_kernel_cast(x, quantizer)) return TeOps::gelu_backward_quantize(dy, x, quantizer);
        const std::size_t rows = rows_of(x);
        const std::size_t cols = cols_of(x);
        const std::size_t bytes = kernels::host::gelu_backward_workspace_bytes(rows, cols);
        Fp8GradWithBias r = empty_grad_with_bias(x, quantizer);
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
        const kernels::Fp8Output fp8 = fp8_output(r.grad, quantizer);
        TEWB_KERNEL(x, (Tensors{dy, x}), (Tensors{r.grad.data, r.grad.transposed, r.bias_grad}), gelu_backward, dy.data_ptr(),
                    x.data_ptr(), kernel_dtype(x.scalar_type()), rows, cols, nullptr, &fp8, r.bias_grad.data_ptr(),
                    kernels::DType::Float32, workspace.data_ptr(), bytes);
        hand_out_live_scale_inv(r.grad, quantizer);
        return r;
    }

    // One pass over dy: the FP8 gradient, its transposed copy, its amax and the bias gradient (float32,
    // two-stage reduction).
    Fp8GradWithBias quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const override {
        if (!matrix_misfit(dy, "dy") && quantizer.context->recipe().scaling == ScalingKind::Block) {
            Fp8GradWithBias r;
            r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(at::kFloat));
            r.grad = quantize_blocks(dy, quantizer, /*with_transpose=*/true, &r.bias_grad);
            return r;
        }
        if (!delayed_kernel_cast(dy, quantizer)) return TeOps::quantize_dbias(dy, quantizer);
        const std::size_t rows = rows_of(dy);
        const std::size_t cols = cols_of(dy);
        const std::size_t bytes = kernels::host::cast_transpose_dbias_workspace_bytes(rows, cols);
        Fp8GradWithBias r = empty_grad_with_bias(dy, quantizer);
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, dy.options().dtype(at::kByte));
        const kernels::Fp8Output fp8 = fp8_output(r.grad, quantizer);
        TEWB_KERNEL(dy, Tensors{dy}, (Tensors{r.grad.data, r.grad.transposed, r.bias_grad}), cast_transpose_dbias_to_fp8,
                    dy.data_ptr(), kernel_dtype(dy.scalar_type()), rows, cols, fp8.scale, fp8.data, fp8.transposed, fp8.type,
                    fp8.amax, r.bias_grad.data_ptr(), kernels::DType::Float32, workspace.data_ptr(), bytes);
        hand_out_live_scale_inv(r.grad, quantizer);
        return r;
    }

    // fc1 with GELU in cuBLASLt's epilogue (GELU_AUX_BIAS): the activation and GELU's input in one GEMM.
    GeluGemmResult gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             at::ScalarType out_dtype) const override {
        const bool fits = hp_operands(x, weight) && out_dtype == x.scalar_type() && bias.defined() && weight.size(0) % 8 == 0;
        if (!fits) return TeOps::gemm_gelu(x, weight, bias, out_dtype);
        if (epilogue_refused(kernels::Epilogue::GeluAuxBias)) return composed("gemm_gelu", [&] { return TeOps::gemm_gelu(x, weight, bias, out_dtype); });
        GeluGemmResult r;
        r.activation = at::empty({x.size(0), weight.size(0)}, x.options().dtype(out_dtype));
        r.pre = at::empty_like(r.activation);
        const at::Tensor bias_c = parameter_copy(bias, out_dtype).contiguous();
        kernels::GemmArgs g = hp_args(x, false, weight, false, r.activation, out_dtype);
        g.epilogue = kernels::Epilogue::GeluAuxBias;
        g.bias = bias_c.data_ptr();
        g.bias_type = gemm_type(out_dtype);
        g.aux = r.pre.data_ptr();
        g.aux_ld = static_cast<std::size_t>(weight.size(0));
        if (Misfit refused = run_gemm(g, x, Tensors{x, weight, bias_c}, Tensors{r.activation, r.pre})) {
            refuse_epilogue(g.epilogue);
            return composed("gemm_gelu", [&] { return TeOps::gemm_gelu(x, weight, bias, out_dtype); });
        }
        return r;
    }

    // fc2's dgrad with GELU's derivative and fc1's bias gradient in cuBLASLt's epilogue (DGELU_BGRAD); the
    // weight is read as stored ([out, in], the operand "transposed").
    GradWithBias gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                            at::ScalarType out_dtype) const override {
        const bool fits = hp_operands(dy, weight, /*same_k=*/false) && dy.size(1) == weight.size(0) && !matrix_misfit(pre, "pre") &&
                          pre.size(0) == dy.size(0) && pre.size(1) == weight.size(1) && pre.scalar_type() == out_dtype &&
                          out_dtype == dy.scalar_type() && weight.size(1) % 8 == 0;
        if (!fits) return TeOps::gemm_dgelu(dy, weight, pre, out_dtype);
        if (epilogue_refused(kernels::Epilogue::DGeluBGrad)) {
            return composed("gemm_dgelu", [&] { return TeOps::gemm_dgelu(dy, weight, pre, out_dtype); });
        }
        GradWithBias r;
        r.grad = at::empty({dy.size(0), weight.size(1)}, dy.options().dtype(out_dtype));
        r.bias_grad = at::empty({weight.size(1)}, dy.options().dtype(out_dtype));
        kernels::GemmArgs g = hp_args(dy, false, weight, true, r.grad, out_dtype);
        g.epilogue = kernels::Epilogue::DGeluBGrad;
        g.aux = pre.data_ptr();
        g.aux_ld = static_cast<std::size_t>(weight.size(1));
        g.bias_grad = r.bias_grad.data_ptr();
        if (Misfit refused = run_gemm(g, dy, Tensors{dy, weight, pre}, Tensors{r.grad, r.bias_grad})) {
            refuse_epilogue(g.epilogue);
            return composed("gemm_dgelu", [&] { return TeOps::gemm_dgelu(dy, weight, pre, out_dtype); });
        }
        return r;
    }

    // dyᵀ · x with both read as stored (rows × features: the operands "transposed") and, with a bias, dy's
    // column sums in cuBLASLt's epilogue (BGRADB), in the output's dtype.
    GradWithBias wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool with_bias) const override {
        const bool fits = hp_operands(dy, x, /*same_k=*/false) && dy.size(0) == x.size(0) && float_or_bf16(out_dtype) &&
                          (out_dtype == at::kFloat || out_dtype == dy.scalar_type());
        if (!fits) return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias);
        if (with_bias && epilogue_refused(kernels::Epilogue::BGradB)) {
            return composed("wgrad_gemm", [&] { return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias); });
        }
        GradWithBias r;
        r.grad = at::empty({dy.size(1), x.size(1)}, dy.options().dtype(out_dtype));
        kernels::GemmArgs g = hp_args(dy, true, x, true, r.grad, out_dtype);
        g.k = rows_of(dy);
        if (with_bias) {
            r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(out_dtype));
            g.epilogue = kernels::Epilogue::BGradB;
            g.bias_grad = r.bias_grad.data_ptr();
        }
        if (Misfit refused = run_gemm(g, dy, Tensors{dy, x}, Tensors{r.grad, r.bias_grad})) {
            if (with_bias) refuse_epilogue(g.epilogue);
            return composed("wgrad_gemm", [&] { return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias); });
        }
        return r;
    }

    at::Tensor embedding_forward(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens) const override {
        Misfit m = matrix_misfit(table, "the token table");
        if (!m) m = tokens_misfit(tokens, "tokens");
        if (!m && (matrix_misfit(positions, "positions") || positions.scalar_type() != table.scalar_type() ||
                   positions.size(0) != tokens.size(1) || positions.size(1) != table.size(1) || positions.device() != table.device())) {
            m = "the position table is not a row-major [seq, hidden] matrix of the token table's dtype on its device";
        }
        if (!m && tokens.device() != table.device()) m = "the tokens are not on the table's device";
        if (m) {
            return fall_back("embedding_forward", *m, [&] { return reference_ops().embedding_forward(table, positions, tokens); });
        }
        const std::size_t batch = rows_of(tokens);
        const std::size_t seq = cols_of(tokens);
        at::Tensor out = at::empty({tokens.size(0) * tokens.size(1), table.size(1)}, table.options());
        TEWB_KERNEL(table, (Tensors{tokens, table, positions}), Tensors{out}, embedding_forward, tokens.data_ptr<std::int64_t>(),
                    row_stride(tokens), batch, seq, table.data_ptr(), positions.data_ptr(),
                    kernel_dtype(table.scalar_type()), rows_of(table), cols_of(table), out.data_ptr());
        return out;
    }

    // dtable accumulated with atomics on a GPU (order not fixed where a token repeats); dpositions summed in order.
    at::Tensor embedding_backward(const at::Tensor& dy, const at::Tensor& tokens, at::Tensor& dtable,
                                  at::ScalarType positions_dtype) const override {
        Misfit m = matrix_misfit(dy, "dy");
        if (!m) m = tokens_misfit(tokens, "tokens");
        if (!m && dy.size(0) != tokens.size(0) * tokens.size(1)) m = "dy has not one row per token";
        if (!m && (matrix_misfit(dtable, "the table's gradient") || dtable.scalar_type() != at::kFloat ||
                   dtable.size(1) != dy.size(1) || dtable.device() != dy.device())) {
            m = "the table's gradient is not a row-major float32 [vocab, hidden] matrix on dy's device";
        }
        if (!m && !float_or_bf16(positions_dtype)) m = "the position table is not float32 or bfloat16";
        if (!m && tokens.device() != dy.device()) m = "the tokens are not on dy's device";
        if (m) {
            return fall_back("embedding_backward", *m,
                             [&] { return reference_ops().embedding_backward(dy, tokens, dtable, positions_dtype); });
        }
        at::Tensor dpositions = at::empty({tokens.size(1), dy.size(1)}, dy.options().dtype(positions_dtype));
        TEWB_KERNEL(dy, (Tensors{tokens, dy, dtable}), (Tensors{dtable, dpositions}), embedding_backward,
                    tokens.data_ptr<std::int64_t>(), row_stride(tokens), rows_of(tokens), cols_of(tokens),
                    dy.data_ptr(), kernel_dtype(dy.scalar_type()), rows_of(dtable), cols_of(dtable), dtable.data_ptr<float>(),
                    dpositions.data_ptr(), kernel_dtype(positions_dtype));
        return dpositions;
    }

    // The loss and, over the logits, its gradient for a loss gradient of 1, in one launch.
    at::Tensor cross_entropy_with_grad(at::Tensor& logits, const at::Tensor& targets) const override {
        Misfit m = matrix_misfit(logits, "the logits");
        if (!m) m = tokens_misfit(targets, "the targets");
        if (!m && logits.size(0) != targets.size(0) * targets.size(1)) m = "the logits have not one row per target";
        if (!m && targets.device() != logits.device()) m = "the targets are not on the logits' device";
        if (m) return fall_back("cross_entropy_with_grad", *m, [&] { return reference_ops().cross_entropy_with_grad(logits, targets); });
        const std::size_t rows = rows_of(logits);
        const std::size_t vocab = cols_of(logits);
        at::Tensor loss = at::empty({}, logits.options().dtype(at::kFloat));
        at::Tensor lse = at::empty({logits.size(0)}, logits.options().dtype(at::kFloat));
        const std::size_t bytes = kernels::host::cross_entropy_forward_workspace_bytes(rows, vocab);
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, logits.options().dtype(at::kByte));
        TEWB_KERNEL(logits, (Tensors{logits, targets}), (Tensors{logits, loss}), cross_entropy_forward_with_grad, logits.data_ptr(),
                    kernel_dtype(logits.scalar_type()), rows, vocab, targets.data_ptr<std::int64_t>(), cols_of(targets),
                    row_stride(targets), lse.data_ptr<float>(), loss.data_ptr<float>(), workspace.data_ptr(),
                    bytes);
        return loss;
    }

    // The whole list in one launch (up to kernels::kAdamWTensorsPerLaunch tensors), the bfloat16 copies written by
    // the same pass.
    std::vector<Fp8Tensor> adamw_step(at::TensorList params, at::TensorList grads, at::TensorList exp_avg, at::TensorList exp_avg_sq,
                                      const at::Tensor& step, at::TensorList copies, const std::vector<OptimizerFp8Cast>& fp8,
                                      const AdamWHyper& hyper) const override {
        const auto reference = [&] { return reference_ops().adamw_step(params, grads, exp_avg, exp_avg_sq, step, copies, fp8, hyper); };
        Misfit m;
        if (params.empty()) m = "no parameters";
        if (!m && (grads.size() != params.size() || exp_avg.size() != params.size() || exp_avg_sq.size() != params.size() ||
                   copies.size() != params.size())) {
            m = "the lists differ in length";
        }
        if (!m && (device_misfit(step, "the step") || step.numel() != 1 || step.scalar_type() != at::kFloat)) {
            m = "the step is not one float32 on this implementation's device";
        }
        std::vector<at::Tensor> reads, writes{step};
        std::vector<kernels::AdamWTensor> table;
        for (std::size_t i = 0; !m && i < params.size(); ++i) {
            const at::Tensor* parts[] = {&params[i], &grads[i], &exp_avg[i], &exp_avg_sq[i]};
            for (const at::Tensor* t : parts) {
                if (device_misfit(*t, "a tensor") || !t->is_contiguous() || t->scalar_type() != at::kFloat ||
                    t->sizes() != params[i].sizes() || t->device() != step.device()) {
                    m = "parameter " + std::to_string(i) + "'s tensors are not contiguous float32 of one shape on the step's device";
                    break;
                }
            }
            const at::Tensor& copy = copies[i];
            if (!m && copy.defined() &&
                (!copy.is_contiguous() || copy.scalar_type() != at::kBFloat16 || copy.sizes() != params[i].sizes() ||
                 copy.device() != step.device())) {
                m = "parameter " + std::to_string(i) + "'s copy is not a contiguous bfloat16 tensor of its shape";
            }
            if (m) break;
            table.push_back({params[i].data_ptr<float>(), grads[i].data_ptr<float>(), exp_avg[i].data_ptr<float>(),
                             exp_avg_sq[i].data_ptr<float>(), copy.defined() ? copy.data_ptr() : nullptr,
                             static_cast<std::size_t>(params[i].numel())});
            reads.insert(reads.end(), {params[i], grads[i], exp_avg[i], exp_avg_sq[i]});
            writes.insert(writes.end(), {params[i], exp_avg[i], exp_avg_sq[i]});
            if (copy.defined()) writes.push_back(copy);
        }
        for (std::size_t i = 0; !m && i < fp8.size(); ++i) {
            if (fp8[i].param >= params.size()) m = "an FP8 copy names parameter " + std::to_string(fp8[i].param) + " of " + std::to_string(params.size());
        }
        if (m) return fall_back("adamw_step", *m, reference);
        // The FP8 copies a delayed-scaling cast kernel would write come out of the step's own pass over the new
        // weights; any other (inspected, calibrating, block-scaled) is cast after it as the next forward would.
        std::vector<Fp8Tensor> out(fp8.size());
        std::vector<std::size_t> cast_after;
        for (std::size_t i = 0; i < fp8.size(); ++i) {
            const at::Tensor& weight = params[fp8[i].param];
            kernels::AdamWTensor& entry = table[fp8[i].param];
            if (!delayed_kernel_cast(weight, fp8[i].quantizer) || entry.fp8.data != nullptr) {
                cast_after.push_back(i);
                continue;
            }
            out[i] = empty_fp8(weight, fp8[i].quantizer);
            entry.fp8 = fp8_output(out[i], fp8[i].quantizer);
            entry.rows = rows_of(weight);
            entry.cols = cols_of(weight);
            writes.insert(writes.end(), {out[i].data, out[i].transposed});
        }
        TEWB_KERNEL(step, reads, writes, adamw_step, table.data(), table.size(), step.data_ptr<float>(), hyper.lr, hyper.beta1,
                    hyper.beta2, hyper.weight_decay, hyper.eps);
        for (std::size_t i = 0; i < fp8.size(); ++i) {
            if (out[i].data.defined()) hand_out_live_scale_inv(out[i], fp8[i].quantizer);
        }
        if (!cast_after.empty()) {
            std::vector<WeightCast> casts;
            for (const std::size_t i : cast_after) casts.push_back({params[fp8[i].param], fp8[i].quantizer});
            std::vector<Fp8Tensor> values = quantize_weights(casts);
            for (std::size_t k = 0; k < cast_after.size(); ++k) out[cast_after[k]] = std::move(values[k]);
        }
        return out;
    }

private:
    bool on_host() const { return kind_ == OpsKind::FusedHost; }

    // The distance between a [batch, seq] matrix's rows: LibTorch leaves a single row's stride free (an expand
    // can make it 0), the kernels take seq then.
    static std::size_t row_stride(const at::Tensor& t) {
        return static_cast<std::size_t>(t.size(0) > 1 ? t.stride(0) : t.size(1));
    }

    // int64 [batch, seq] token ids whose rows may be apart (a narrow of the trainer's [batch, seq + 1] batch).
    Misfit tokens_misfit(const at::Tensor& t, const char* what) const {
        if (Misfit m = device_misfit(t, what)) return m;
        if (t.dim() != 2 || t.numel() == 0) return std::string(what) + " are not a non-empty [batch, seq] matrix";
        if (t.scalar_type() != at::kLong) return std::string(what) + " are " + c10::toString(t.scalar_type()) + " (the kernels take int64)";
        if (t.stride(1) != 1 || (t.size(0) > 1 && t.stride(0) < t.size(1))) return std::string(what) + "' rows are not row-major";
        return std::nullopt;
    }

    // The tensor is where this implementation's kernels run: host memory for the host kernels, a CUDA
    // device for the CUDA ones.
    Misfit device_misfit(const at::Tensor& t, const char* what) const {
        if (on_host() ? t.is_cpu() : t.is_cuda()) return std::nullopt;
        return std::string(what) + " is on " + t.device().str() + " (the " + (on_host() ? "host" : "CUDA") + " kernels take " +
               (on_host() ? "cpu" : "cuda") + " tensors)";
    }

    Misfit matrix_misfit_any_dtype(const at::Tensor& t, const char* what) const {
        if (Misfit m = device_misfit(t, what)) return m;
        if (t.dim() != 2) return std::string(what) + " is not 2-D";
        if (!t.is_contiguous()) return std::string(what) + " is not contiguous";
        if (t.numel() == 0) return std::string(what) + " is empty";
        return std::nullopt;
    }

    // A 2-D, row-major, non-empty float32 or bfloat16 tensor on this implementation's device.
    Misfit matrix_misfit(const at::Tensor& t, const char* what) const {
        if (Misfit m = matrix_misfit_any_dtype(t, what)) return m;
        if (!float_or_bf16(t.scalar_type())) {
            return std::string(what) + " is " + c10::toString(t.scalar_type()) + " (the kernels take float32, bfloat16)";
        }
        return std::nullopt;
    }

    Misfit params_misfit(const at::Tensor& gamma, const at::Tensor& beta, const at::Tensor& x) const {
        if (Misfit m = device_misfit(gamma, "gamma")) return m;
        const bool fits = gamma.dim() == 1 && gamma.is_contiguous() && beta.is_contiguous() && gamma.size(0) == x.size(1) &&
                          beta.sizes() == gamma.sizes() && beta.scalar_type() == gamma.scalar_type() &&
                          float_or_bf16(gamma.scalar_type()) && gamma.device() == x.device();
        if (!fits) return std::string("gamma and beta are not contiguous [hidden] float32 or bfloat16 vectors of one dtype on x's device");
        return std::nullopt;
    }

    bool stats_fit(const at::Tensor& s, const at::Tensor& x) const {
        return !device_misfit(s, "s") && s.is_contiguous() && s.scalar_type() == at::kFloat && s.numel() == x.size(0) &&
               s.device() == x.device();
    }

    // Delayed scaling into a kernel that writes FP8 itself (the staging entry takes the amax); current and
    // block scaling, a calibrating first step and inspection compose the step from the primitives instead.
    bool delayed_kernel_cast(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
        const Fp8Context& context = *quantizer.context;
        return !matrix_misfit(x, "x") && context.recipe().scaling == ScalingKind::Delayed && !context.inspect() &&
               !context.calibrating(quantizer.pass);
    }

    // Two high-precision operands the GEMM takes as they are stored (same dtype, row-major, one device).
    bool hp_operands(const at::Tensor& a, const at::Tensor& b, bool same_k = true) const {
        return !matrix_misfit(a, "a") && !matrix_misfit(b, "b") && a.scalar_type() == b.scalar_type() && a.device() == b.device() &&
               (!same_k || a.size(1) == b.size(1));
    }

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
                    const std::vector<at::Tensor>& writes, Host&& host,
                    Device&&... device) const {
        RECORD_USER_SCOPE(op);  // named in a kernel trace (te-bench run --profile) like LibTorch's operators
        const std::uint64_t launches_before = kernels::launch_count();
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
        note_own_kernel(op, kernels::launch_count() - launches_before, bytes_of(reads), bytes_of(writes));
    }

    // The GEMM on this implementation's device; a refusal by the rule table (or cuBLASLt finding no
    // algorithm) is returned as the reason, any other failure is an error.
    Misfit run_gemm(kernels::GemmArgs g, const at::Tensor& where, Tensors reads, Tensors writes) const {
#ifdef TEWB_FUSED_CUDA
        if (!where.is_cpu()) {
            const at::Tensor& workspace = gemm_workspace(where);
            g.workspace = workspace.data_ptr();
            g.workspace_bytes = static_cast<std::size_t>(workspace.numel());
        }
#endif
        try {
            TEWB_KERNEL(where, reads, writes, gemm, g);
            return std::nullopt;
        } catch (const kernels::GemmRefused& refused) {
            return std::string("cuBLASLt refuses it (") + std::string(kernels::to_string(refused.rule())) + ")";
        }
    }

    // Epilogues cuBLASLt refused (the rule table or its heuristic) stay off for the process, with one line
    // on stderr; the step is then composed of separate kernels.
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
    static void refuse_epilogue(kernels::Epilogue e) {
        const std::lock_guard<std::mutex> lock(refused_mutex());
        if (refused().insert(e).second) {
            std::fprintf(stderr, "te-workbench: cuBLASLt refused a GEMM epilogue (%d); it is computed separately from now on\n",
                         static_cast<int>(e));
        }
    }

    // The slot's scale_inv as it is (the recipe kernel wrote it): no reciprocal launched per cast. Consumers
    // after the pass's update take it from Fp8Tensor::kept_past_update().
    static void hand_out_live_scale_inv(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
        const Fp8Context::LiveScaleInv live = quantizer.context->live_scale_inv(quantizer.pass, quantizer.slot);
        q.scale_inv = live.now;
        q.scale_inv_after_update = live.after_update;
    }

    static Fp8Tensor empty_fp8(const at::Tensor& x, const Fp8Quantizer& quantizer) {
        Fp8Tensor q;
        q.dtype = quantizer.dtype();
        q.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(q.dtype)));
        q.transposed = at::empty({x.size(1), x.size(0)}, q.data.options());
        return q;
    }

    static Fp8GradWithBias empty_grad_with_bias(const at::Tensor& like, const Fp8Quantizer& quantizer) {
        Fp8GradWithBias r;
        r.grad = empty_fp8(like, quantizer);
        r.bias_grad = at::empty({like.size(1)}, like.options().dtype(at::kFloat));
        return r;
    }

    // The staging entry of the slot's amax history (a view into the context's state): a cast kernel combines
    // its input's amax into it.
    static at::Tensor staging_entry(const Fp8Quantizer& quantizer) {
        return quantizer.context->history(quantizer.pass).select(0, quantizer.slot).select(0, 0);
    }

    static kernels::Fp8Output fp8_output(Fp8Tensor& q, const Fp8Quantizer& quantizer) {
        Fp8Context& context = *quantizer.context;
        kernels::Fp8Output out;
        out.data = q.data.data_ptr();
        out.transposed = q.transposed.data_ptr();
        // The slot's live scale and staging entry: views into the context's state, valid for the launch.
        out.scale = context.scale(quantizer.pass, quantizer.slot).data_ptr<float>();
        out.amax = staging_entry(quantizer).data_ptr<float>();
        out.type = kernel_fp8_type(q.dtype);
        return out;
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

    // Float8BlockScaling's cast in one launch of the block cast kernel: the data along its rows (1×128
    // blocks; 128×128 for weights), for the backward x's transpose cast along its own rows, both scales
    // already in cuBLASLt's layout, and the tensor's amax into the slot's staging entry (the statistics).
    // Same values and scales as the reference (bit for bit).
    // With `dbias` (float32 [cols]), the same launch also writes x's column sums (a Linear's bias gradient).
    // Block scaling: every weight's 128 x 128 block cast (data, transposed copy, both scale arrays, amax) in one
    // multi-tensor launch per 64 weights.
    std::vector<Fp8Tensor> quantize_weight_blocks(const std::vector<WeightCast>& casts) const {
        std::vector<Fp8Tensor> out;
        std::vector<kernels::BlockCastItem> items;
        std::vector<at::Tensor> reads;
        std::vector<at::Tensor> writes;
        for (const WeightCast& c : casts) {
            BlockCastSetup setup = block_cast_setup(c.weight, c.quantizer, /*with_transpose=*/true);
            items.push_back({c.weight.data_ptr(), rows_of(c.weight), cols_of(c.weight), setup.cast});
            reads.push_back(c.weight);
            for (const at::Tensor& t : {setup.out.data, setup.out.scale_inv, setup.out.transposed, setup.out.transposed_scale_inv}) {
                writes.push_back(t);
            }
            out.push_back(std::move(setup.out));
        }
        const at::Tensor& front = casts.front().weight;
        TEWB_KERNEL(front, reads, writes, block_cast_multi_to_fp8, items.data(), items.size(), kernel_dtype(front.scalar_type()),
                    kWeightBlock.rows, casts.front().quantizer.context->recipe().block_power_of_two);
        return out;
    }

    // A block cast's outputs for x under the quantizer's slot, allocated, and where the kernel writes them.
    struct BlockCastSetup {
        Fp8Tensor out;
        kernels::BlockCastOutput cast;
        at::Tensor staging;
        BlockShape block;
    };
    static BlockCastSetup block_cast_setup(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) {
        const bool weight = Fp8Context::role_of(quantizer.pass, quantizer.slot) == SlotRole::Weight;
        const BlockShape block = weight ? kWeightBlock : kActivationBlock;
        const std::int64_t rows = x.size(0);
        const std::int64_t cols = x.size(1);
        Fp8Tensor out;
        out.dtype = quantizer.dtype();
        out.data = at::empty({rows, cols}, x.options().dtype(to_scalar_type(out.dtype)));
        out.scale_inv = empty_block_scales(rows, cols, block, x.options());
        kernels::BlockCastOutput cast;
        cast.data = out.data.data_ptr();
        cast.scale_inv = out.scale_inv.data_ptr<float>();
        cast.type = kernel_fp8_type(out.dtype);
        if (with_transpose) {
            out.transposed = at::empty({cols, rows}, out.data.options());
            out.transposed_scale_inv = empty_block_scales(cols, rows, block, x.options());
            cast.transposed = out.transposed.data_ptr();
            cast.transposed_scale_inv = out.transposed_scale_inv.data_ptr<float>();
        }
        const at::Tensor staging = staging_entry(quantizer);
        cast.amax = staging.data_ptr<float>();
        return {out, cast, staging, block};
    }

    Fp8Tensor quantize_blocks(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                              const at::Tensor* dbias = nullptr) const {
        Fp8Context& context = *quantizer.context;
        BlockCastSetup setup = block_cast_setup(x, quantizer, with_transpose);
        Fp8Tensor& out = setup.out;
        kernels::BlockCastOutput& cast = setup.cast;
        const at::Tensor& staging = setup.staging;
        const BlockShape block = setup.block;
        at::Tensor workspace;
        if (dbias != nullptr) {
            const std::size_t bytes = kernels::host::block_cast_dbias_workspace_bytes(rows_of(x), cols_of(x));
            workspace = at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
            cast.dbias = dbias->data_ptr<float>();
            cast.dbias_workspace = workspace.data_ptr();
            cast.dbias_workspace_bytes = bytes;
        }
        TEWB_KERNEL(x, Tensors{x},
                    (Tensors{out.data, out.scale_inv, out.transposed, out.transposed_scale_inv, staging,
                             dbias != nullptr ? *dbias : at::Tensor()}),
                    block_cast_to_fp8, x.data_ptr(), kernel_dtype(x.scalar_type()), rows_of(x), cols_of(x), block.rows,
                    context.recipe().block_power_of_two, cast);
        if (context.inspect()) inspect_block_cast(x, {out.data, out.scale_inv, block, out.dtype}, quantizer);
        return out;
    }

    OpsKind kind_;
};

}  // namespace

const TeOps& fused_host_ops() {
    static const FusedOps ops(OpsKind::FusedHost);
    return ops;
}

#ifdef TEWB_FUSED_CUDA
const TeOps& fused_cuda_ops() {
    static const FusedOps ops(OpsKind::FusedCuda);
    return ops;
}
#endif

}  // namespace tewb
