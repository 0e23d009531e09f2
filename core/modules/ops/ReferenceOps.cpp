#include "core/modules/ops/ReferenceOps.h"

#include <chrono>
#include <limits>

#include <ATen/ops/addmm.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/gelu_backward.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/native_layer_norm_backward.h>
#include <ATen/ops/reciprocal.h>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/Inspection.h"
#include "core/fp8/Microscaling.h"
#include "core/fp8/ScaleUpdate.h"
#include "tewb_kernels/mx.h"

namespace tewb {

at::ScalarType to_scalar_type(Fp8Dtype dtype) {
    return dtype == Fp8Dtype::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

namespace {
at::Tensor dequantized_operand(const at::Tensor& data, const at::Tensor& scale_inv);
}

at::Tensor Fp8Tensor::dequantize() const {
    if (mx) {
        const at::Tensor as_2d = data.dim() == 2 ? data : data.reshape({-1, data.size(-1)});
        return mx_dequantize({*mx, as_2d, scale_inv, tensor_scale_inv, dtype}).reshape(data.sizes());
    }
    if (scale_inv.numel() > 1) return dequantized_operand(data.dim() == 2 ? data : data.reshape({-1, data.size(-1)}), scale_inv)
                                          .reshape(data.sizes());
    return data.to(at::kFloat) * scale_inv;
}

Fp8Tensor Fp8Tensor::kept_past_update() const {
    Fp8Tensor kept = *this;
    if (scale_inv_after_update.defined()) {
        kept.scale_inv = scale_inv_after_update;
        kept.scale_inv_after_update = at::Tensor();
    }
    return kept;
}

LayerNormResult ReferenceOps::layer_norm_forward(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                 double eps, at::ScalarType out_dtype) const {
    auto [out, mean, rstd] =
        at::native_layer_norm(x.to(at::kFloat), {x.size(-1)}, gamma.to(at::kFloat), beta.to(at::kFloat), eps);
    return {out.to(out_dtype), mean.reshape({-1}), rstd.reshape({-1})};
}

LayerNormGrads ReferenceOps::layer_norm_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean,
                                                 const at::Tensor& rstd, const at::Tensor& gamma) const {
    const at::Tensor gamma32 = gamma.to(at::kFloat);
    // The bias argument only tells the op that dbeta is wanted and its shape, which is gamma's.
    auto [dx, dgamma, dbeta] =
        at::native_layer_norm_backward(dy.to(at::kFloat), x.to(at::kFloat), {x.size(-1)}, mean.reshape({-1, 1}),
                                       rstd.reshape({-1, 1}), gamma32, gamma32, {true, true, true});
    return {dx.to(x.scalar_type()), dgamma.to(gamma.scalar_type()), dbeta.to(gamma.scalar_type())};
}

at::Tensor ReferenceOps::gelu_forward(const at::Tensor& x) const {
    return at::gelu(x.to(at::kFloat), "tanh").to(x.scalar_type());
}

at::Tensor ReferenceOps::gelu_backward(const at::Tensor& dy, const at::Tensor& x) const {
    return at::gelu_backward(dy.to(at::kFloat), x.to(at::kFloat), "tanh").to(x.scalar_type());
}

at::Tensor ReferenceOps::gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                              at::ScalarType out_dtype) const {
    // In the operands' dtype, as LibTorch (and autocast) run a linear layer: BLAS accumulates in float32.
    const at::Tensor product = bias ? at::addmm(bias->to(a.scalar_type()), a, b.t()) : at::mm(a, b.t());
    return product.to(out_dtype);
}

at::Tensor ReferenceOps::abs_max(const at::Tensor& x) const {
    return abs_max_reference(x);
}

void ReferenceOps::update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                                  float numerator, const UpdateRecord& record) const {
    update_scaling_reference(history, scale, scale_inv, recipe, numerator, record);
}

Fp8Tensor ReferenceOps::quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const {
    return quantize_reference(x, quantizer, with_transpose, *this);
}

namespace {

// Σ (approx − x)², summed in float32 (LibTorch's pairwise sums: about 1e-6 relative at these sizes, far inside what
// an SNR in dB shows) and handed over as a float64 counter. `unit` divides both first: a relative error does not change
// under scaling, and values of order 1 neither overflow nor underflow when squared in float32.
at::Tensor squared_error(const at::Tensor& approx, const at::Tensor& xf, const at::Tensor& unit) {
    return ((approx - xf) / unit).square().sum().to(at::kDouble);
}

// What the cast erred (`back`: its values dequantized) and what each what-if recipe would have erred on the same
// tensor, added to the slot's counters.
void count_cast_errors(const at::Tensor& xf, const at::Tensor& back, const Fp8Quantizer& quantizer) {
    const at::Tensor as_2d = xf.dim() == 2 ? xf : xf.reshape({-1, xf.size(-1)});
    const SlotRole role = Fp8Context::role_of(quantizer.pass, quantizer.slot);
    const at::Tensor unit = xf.abs().amax().clamp_min(std::numeric_limits<float>::min());  // on the device: no sync
    Fp8Context::CastErrors errors{squared_error(back, xf, unit), (xf / unit).square().sum().to(at::kDouble), {}};
    for (std::size_t w = 0; w < kWhatIfCount; ++w) {
        errors.what_if[w] = squared_error(what_if_round_trip(as_2d, kWhatIfs[w], role, quantizer.dtype()), as_2d, unit);
    }
    quantizer.context->count_errors(quantizer.pass, quantizer.slot, errors);
}

// Host time of an inspection where its tensors are on the CPU (asynchronous CUDA work is not timed).
class InspectionTimer {
public:
    InspectionTimer(const at::Tensor& x, Fp8Context& context) : on_cpu_(x.is_cpu()), context_(context) {}
    ~InspectionTimer() {
        if (on_cpu_) {
            context_.add_inspection_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count());
        }
    }
    InspectionTimer(const InspectionTimer&) = delete;
    InspectionTimer& operator=(const InspectionTimer&) = delete;

private:
    bool on_cpu_;
    Fp8Context& context_;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace

void inspect_tensor_cast(const at::Tensor& x, const at::Tensor& data, const at::Tensor& scale, const Fp8Quantizer& quantizer) {
    Fp8Context& context = *quantizer.context;
    const InspectionTimer timer(x, context);
    const Fp8Dtype dtype = quantizer.dtype();
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor scaled = xf * scale;
    const at::Tensor saturated = (scaled.abs() > fp8_saturation_threshold(dtype)).sum().to(at::kDouble);
    const at::Tensor underflow = ((data.to(at::kFloat) == 0) & (x != 0)).sum().to(at::kDouble);
    context.count(quantizer.pass, quantizer.slot, saturated, underflow, x.numel());
    count_cast_errors(xf, data.to(at::kFloat) / scale, quantizer);
}

void inspect_block_cast(const at::Tensor& x, const BlockQuantized& q, const Fp8Quantizer& quantizer) {
    Fp8Context& context = *quantizer.context;
    const InspectionTimer timer(x, context);
    const at::Tensor xf = (x.dim() == 2 ? x : x.reshape({-1, x.size(-1)})).to(at::kFloat);
    const at::Tensor scaled = xf * expand_blocks(at::reciprocal(q.scale_inv), q.block, xf.size(0), xf.size(1));
    const at::Tensor saturated = (scaled.abs() > fp8_saturation_threshold(q.dtype)).sum().to(at::kDouble);
    const at::Tensor underflow = ((q.data.to(at::kFloat) == 0) & (xf != 0)).sum().to(at::kDouble);
    context.count(quantizer.pass, quantizer.slot, saturated, underflow, x.numel());
    count_cast_errors(xf, block_dequantize(q), quantizer);
    context.count_block_scales(quantizer.pass, quantizer.slot, block_scale_bins_of(q, xf));
}

// The microscaling inspection: saturated values (beyond the element format's largest after scaling), values cast to
// 0, the cast's error and the what-if recipes', and the block scales' histogram.
void inspect_microscaling_cast(const at::Tensor& x, const MxQuantized& q, const Fp8Quantizer& quantizer) {
    Fp8Context& context = *quantizer.context;
    const InspectionTimer timer(x, context);
    const at::Tensor xf = (x.dim() == 2 ? x : x.reshape({-1, x.size(-1)})).to(at::kFloat);
    const at::Tensor back = mx_dequantize(q);
    const at::Tensor codes = q.format == MxFormat::Mxfp8 ? q.data.to(at::kFloat).abs() : e2m1_values(q.data).abs();
    const float largest = q.format == MxFormat::Mxfp8 ? fp8_max(q.dtype) : 6.0f;
    const at::Tensor saturated = ((codes >= largest) & (back.abs() < xf.abs())).sum().to(at::kDouble);
    const at::Tensor underflow = (codes.eq(0) & (xf != 0)).sum().to(at::kDouble);
    context.count(quantizer.pass, quantizer.slot, saturated, underflow, x.numel());
    count_cast_errors(xf, back, quantizer);
    const bool tiles = q.format == MxFormat::Nvfp4 && Fp8Context::role_of(quantizer.pass, quantizer.slot) == SlotRole::Weight;
    context.count_block_scales(quantizer.pass, quantizer.slot, block_scale_bins_of(q, xf, tiles));
}

namespace {

// Float8BlockScaling: the data block-quantized along its rows (1×128; 128×128 for weights), the transposed
// copy quantized again along its own rows (as Transformer Engine's columnwise copy), per-block scale_inv.
Fp8Tensor quantize_blocks(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                          const Fp8StateOps& state_ops) {
    Fp8Context& context = *quantizer.context;
    const Fp8Dtype dtype = quantizer.dtype();
    const at::Tensor as_2d = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
    const bool weight = Fp8Context::role_of(quantizer.pass, quantizer.slot) == SlotRole::Weight;
    const BlockShape block = weight ? kWeightBlock : kActivationBlock;
    const bool pow2 = context.recipe().block_power_of_two;
    context.record_amax(quantizer.pass, quantizer.slot, state_ops.abs_max(x));
    const BlockQuantized q = block_quantize(as_2d, block, dtype, pow2);
    Fp8Tensor out;
    out.dtype = dtype;
    out.data = q.data.reshape(x.sizes());
    out.scale_inv = q.scale_inv;
    if (with_transpose) {
        const BlockQuantized t = block_quantize(as_2d.t(), block, dtype, pow2);
        out.transposed = t.data;
        out.transposed_scale_inv = t.scale_inv;
    }
    if (context.inspect()) inspect_block_cast(x, {q.data, q.scale_inv, block, dtype}, quantizer);
    return out;
}

// An FP8 GEMM operand as float32 values: data times its scale_inv, one scalar or one per block (the block
// shape follows from the scales' shape: 1 row per scale row for 1×128 blocks, else 128×128 tiles).
at::Tensor dequantized_operand(const at::Tensor& data, const at::Tensor& scale_inv) {
    const at::Tensor values = data.to(at::kFloat);
    if (scale_inv.dim() == 0 || scale_inv.numel() == 1) return values * scale_inv.reshape({});
    const BlockShape block = scale_inv.size(0) == data.size(0) ? kActivationBlock : kWeightBlock;
    return values * expand_blocks(scale_inv, block, data.size(0), data.size(1));
}

}  // namespace

namespace {

// One microscaling cast of a 2-D tensor: MXFP8, or NVFP4 with 16 × 16 tiles for weights, stochastic rounding for
// gradients (when on) and, for the transposed copy of an input or a gradient (the weight-gradient GEMM's operands),
// the Hadamard transform along its rows first (when on and the rows are whole runs of 16; its own tensor amax).
MxQuantized microscaling_cast(const at::Tensor& x, const at::Tensor& amax, const Fp8Quantizer& quantizer, bool transposed,
                              const Fp8StateOps& state_ops) {
    Fp8Context& context = *quantizer.context;
    const Fp8Recipe& recipe = context.recipe();
    if (recipe.scaling == ScalingKind::Mxfp8) return mxfp8_quantize(x, quantizer.dtype());
    const SlotRole role = Fp8Context::role_of(quantizer.pass, quantizer.slot);
    const bool tiles = role == SlotRole::Weight;
    at::Tensor source = x;
    at::Tensor source_amax = amax;
    if (transposed && role != SlotRole::Weight && recipe.nvfp4_hadamard && x.size(1) % 16 == 0) {
        source = hadamard16_reference(x, kernels::kHadamardSigns).to(x.scalar_type());
        source_amax = state_ops.abs_max(source);
    }
    if (role == SlotRole::GradOutput && recipe.nvfp4_stochastic_rounding) {
        const std::uint64_t offset = context.draw_random(static_cast<std::uint64_t>(source.numel()));
        return nvfp4_quantize_stochastic(source, source_amax, tiles, Fp8Context::kRandomSeed, offset);
    }
    return nvfp4_quantize(source, source_amax, tiles);
}

// The microscaling recipes: the tensor's amax recorded for the statistics, the data cast along its rows and, when
// asked, the transposed copy cast along its own rows (each copy blocked along the dimension its GEMM reduces).
Fp8Tensor quantize_microscaling(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                                const Fp8StateOps& state_ops) {
    Fp8Context& context = *quantizer.context;
    const at::Tensor as_2d = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
    const at::Tensor amax = state_ops.abs_max(x);
    context.record_amax(quantizer.pass, quantizer.slot, amax);
    const MxQuantized q = microscaling_cast(as_2d, amax, quantizer, false, state_ops);
    Fp8Tensor out;
    out.dtype = quantizer.dtype();
    out.mx = q.format;
    out.data = q.data.reshape(x.sizes());
    out.scale_inv = q.block_scale;
    out.tensor_scale_inv = q.tensor_scale_inv;
    if (with_transpose) {
        const MxQuantized t = microscaling_cast(as_2d.t(), amax, quantizer, true, state_ops);
        out.transposed = t.data;
        out.transposed_scale_inv = t.block_scale;
        out.transposed_tensor_scale_inv = t.tensor_scale_inv;
    }
    if (context.inspect()) inspect_microscaling_cast(x, q, quantizer);
    return out;
}

}  // namespace

Fp8Tensor quantize_reference(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                             const Fp8StateOps& state_ops) {
    if (is_microscaling(quantizer.context->recipe().scaling)) return quantize_microscaling(x, quantizer, with_transpose, state_ops);
    if (quantizer.context->recipe().scaling == ScalingKind::Block) return quantize_blocks(x, quantizer, with_transpose, state_ops);
    Fp8Context& context = *quantizer.context;
    const Fp8Dtype dtype = quantizer.dtype();
    const float max = fp8_max(dtype);
    const at::Tensor amax = state_ops.abs_max(x);
    const bool calibrating = context.calibrating(quantizer.pass);
    at::Tensor scale;
    if (context.recipe().scaling == ScalingKind::Current) {
        scale = current_scale_tensor(amax, max);
        context.set_scale(quantizer.pass, quantizer.slot, scale);
    } else if (calibrating) {
        // No history yet: the scale the update rule would derive from this amax alone (margin included).
        scale = current_scale_tensor(amax, scale_numerator(max, context.recipe().margin));
        context.set_scale(quantizer.pass, quantizer.slot, scale);
    } else {
        scale = context.scale(quantizer.pass, quantizer.slot).clone();
    }
    context.record_amax(quantizer.pass, quantizer.slot, amax);

    const at::Tensor scaled = x.to(at::kFloat) * scale;
    Fp8Tensor out;
    out.dtype = dtype;
    // Clamp first: LibTorch's float-to-FP8 conversion turns out-of-range values into NaN, not ±max.
    out.data = scaled.clamp(-max, max).to(to_scalar_type(dtype));
    if (context.inspect()) inspect_tensor_cast(x, out.data, scale, quantizer);
    if (with_transpose) {
        out.transposed = out.data.t();  // a view: LibTorch's GEMMs take either layout (cuBLASLt FP8 does not)
    }
    if (context.recipe().scaling == ScalingKind::Delayed && !calibrating) {
        // The slot's own scale_inv (the update wrote it as 1 / scale), as the fused casts hand it out.
        const Fp8Context::LiveScaleInv live = context.live_scale_inv(quantizer.pass, quantizer.slot);
        out.scale_inv = live.now;
        out.scale_inv_after_update = live.after_update;
    } else {
        out.scale_inv = at::reciprocal(scale);
    }
    return out;
}

at::Tensor ReferenceOps::fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                  const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias,
                                  at::ScalarType out_dtype, Accumulation) const {
    if (a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1) {
        // Block scaling: each block's scale applies to its own products, so dequantize, then multiply.
        at::Tensor out = at::mm(dequantized_operand(a, a_scale_inv), dequantized_operand(b, b_scale_inv).t());
        if (bias) out.add_(bias->to(at::kFloat));
        return out.to(out_dtype);
    }
    // Products of FP8 values are exact in float32; the sums accumulate in float32.
    at::Tensor out = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
    out.mul_(a_scale_inv * b_scale_inv);
    if (bias) {
        out.add_(bias->to(at::kFloat));
    }
    return out.to(out_dtype);
}

const TeOps& reference_ops() {
    static const ReferenceOps ops;
    return ops;
}

}  // namespace tewb
