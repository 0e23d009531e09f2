// The fused ops' FP8 casts and FP8 state (FusedOpsImpl.h): amax, the recipe's scale update, per-tensor casts
// (one by one and many weights in one launch) and Float8BlockScaling's block casts.
#include <algorithm>
#include <cstdint>
#include <optional>

#include <ATen/ops/empty.h>

#include "core/fp8/ScaleUpdate.h"
#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/recipe.h"

namespace tewb::fused_ops {

namespace {

kernels::ScalingRule scaling_rule(const Fp8Recipe& recipe) {
    return recipe.scaling == ScalingKind::Block
               ? (recipe.block_power_of_two ? kernels::ScalingRule::BlockPowerOfTwo : kernels::ScalingRule::BlockExact)
           : recipe.scaling == ScalingKind::Current ? kernels::ScalingRule::Current
           : recipe.algo == AmaxAlgo::Max           ? kernels::ScalingRule::DelayedMax
                                                    : kernels::ScalingRule::DelayedMostRecent;
}

}  // namespace

at::Tensor FusedOps::abs_max(const at::Tensor& x) const {
    const auto dtype = x.scalar_type();
    if (Misfit m = device_misfit(x, "x")) return fall_back("abs_max", *m, [&] { return abs_max_reference(x); });
    if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) {
        return fall_back("abs_max",
                         "x is " + std::string(c10::toString(dtype)) + " (the kernel takes float32, bfloat16, float16)",
                         [&] { return abs_max_reference(x); });
    }
    const at::Tensor contiguous = x.contiguous();
    at::Tensor out = at::empty({}, x.options().dtype(at::kFloat));
    kernels::Tensor tensor = kernel_tensor(contiguous);
    tensor.amax = out.data_ptr<float>();
    TEWB_KERNEL(x, Tensors{contiguous}, Tensors{out}, abs_max, tensor);
    return out;
}

// Every slot of the pass, with its statistics and kept scale_invs, in one launch of the recipe kernel. The
// slots may be strided (the FP8 state keeps each in its own aligned slot): rows of the history, and one stride
// shared by scale, scale_inv and the kept scale_invs.
void FusedOps::update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                              float numerator, const UpdateRecord& record) const {
    // The microscaling recipes keep no scale of their own: the update only records each slot's amax and the scale the
    // statistics show, a few tensor ops per pass that the recipe kernel has no rule for (not a fallback).
    if (is_microscaling(recipe.scaling)) {
        update_scaling_reference(history, scale, scale_inv, recipe, numerator, record);
        return;
    }
    Misfit m = device_misfit(history, "the amax history");
    const at::Tensor& kept = record.kept_scale_inv;
    if (!m && (history.dim() != 2 || history.stride(1) != 1 || scale.dim() != 1 || scale_inv.dim() != 1 ||
               scale.stride(0) != scale_inv.stride(0) || scale.stride(0) < 1 ||
               (kept.defined() && (kept.dim() != 1 || kept.stride(0) != scale.stride(0))))) {
        m = "the FP8 state is not [slots, L] rows and [slots] scales of one stride";
    }
    const at::Tensor& statistics = record.statistics;
    if (!m && statistics.defined() &&
        (statistics.dim() != 2 || statistics.size(1) < 2 || statistics.stride(1) != 1 || statistics.size(0) != history.size(0) ||
         statistics.scalar_type() != at::kFloat || device_misfit(statistics, "statistics"))) {
        m = "the statistics are not [slots, >= 2] float32 rows on the state's device";
    }
    if (!m && kept.defined() && (kept.numel() != scale_inv.numel() || device_misfit(kept, "kept"))) {
        m = "the kept scale_invs are not a [slots] tensor on the state's device";
    }
    if (m) {
        fall_back("update_scaling", *m, [&] {
            update_scaling_reference(history, scale, scale_inv, recipe, numerator, record);
            return 0;
        });
        return;
    }
    // The rows as the kernel takes them: history [slots, L] and the scales [slots, 1], each with its row stride.
    const auto rows = [](const at::Tensor& t, std::int64_t cols) {
        kernels::Tensor k = kernels::input(t.data_ptr(), kernels::DType::Float32, static_cast<std::size_t>(t.size(0)),
                                           static_cast<std::size_t>(cols));
        k.row_stride = static_cast<std::size_t>(t.stride(0));
        return k;
    };
    kernels::ScaleUpdateRecord written;
    if (statistics.defined()) written.statistics = rows(statistics, statistics.size(1));
    if (kept.defined()) written.kept_scale_inv = rows(kept, 1);
    TEWB_KERNEL(history, (Tensors{history, scale, scale_inv}), (Tensors{history, scale, scale_inv}), update_scaling,
                rows(history, history.size(1)), rows(scale, 1), rows(scale_inv, 1), numerator, scaling_rule(recipe), written);
}

// The cast kernels for every recipe: delayed scaling casts with the slot's scale and combine x's amax
// into the slot's staging entry in the same pass; current scaling and a calibrating first step take
// x's amax (kernel) first and derive the scale from it; block scaling runs the block cast. The
// transposed copy is always a contiguous tensor (cuBLASLt's FP8 GEMMs take TN only). Inspection counts
// on the side, with the reference's statistics.
Fp8Tensor FusedOps::quantize(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) const {
    if (Misfit m = matrix_misfit(x, "x")) {
        return fall_back("quantize", *m, [&] { return quantize_reference(x, quantizer, with_transpose, *this); });
    }
    Fp8Context& context = *quantizer.context;
    if (context.recipe().scaling == ScalingKind::Block) return quantize_blocks(x, quantizer, with_transpose);
    if (is_microscaling(context.recipe().scaling)) return quantize_microscaling(x, quantizer, with_transpose);
    const bool live = context.recipe().scaling == ScalingKind::Delayed && !context.calibrating(quantizer.pass);
    return cast_with_slot_scale(x, quantizer, with_transpose, live ? at::Tensor() : fresh_scale(x, quantizer));
}

// The slot's scale as x's producer wrote it (the amax hand-off): only where quantize would have taken it from x's amax,
// which the hand-off replaces (fresh_scale_cast); any other case casts as quantize does.
Fp8Tensor FusedOps::quantize_with_handed_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, const at::Tensor& scale_inv,
                                               bool with_transpose) const {
    if (!scale_inv.defined() || !fresh_scale_cast(x, quantizer)) return quantize(x, quantizer, with_transpose);
    return cast_with_slot_scale(x, quantizer, with_transpose, scale_inv);
}

// The cast itself, with the slot's scale as it stands: under delayed scaling (own_scale_inv undefined) x's amax goes into
// the slot's staging entry and the slot's live scale_inv is handed out; otherwise the scale was just set from x's amax
// (fresh_scale, or x's producer: the amax hand-off) and the cast's own scale_inv comes with it.
Fp8Tensor FusedOps::cast_with_slot_scale(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                                         const at::Tensor& own_scale_inv) const {
    Fp8Context& context = *quantizer.context;
    const Fp8Dtype dtype = quantizer.dtype();
    const bool live = !own_scale_inv.defined();
    // The slot's own scale (its aligned slot in the FP8 state) is what the cast reads, in every recipe.
    const at::Tensor scale = context.scale(quantizer.pass, quantizer.slot);
    float* staging = live ? staging_entry(quantizer).data_ptr<float>() : nullptr;
    Fp8Tensor out;
    out.dtype = dtype;
    out.data = at::empty(x.sizes(), x.options().dtype(to_scalar_type(dtype)));
    kernels::Tensor cast = kernel_tensor(out.data);
    cast.scale = scale.data_ptr<float>();
    cast.amax = staging;
    if (with_transpose) {
        out.transposed = at::empty({x.size(1), x.size(0)}, out.data.options());
        cast.transposed = out.transposed.data_ptr();
        TEWB_KERNEL(x, (Tensors{x, scale}), (Tensors{out.data, out.transposed}), cast_transpose_to_fp8, kernel_tensor(x), cast);
    } else {
        TEWB_KERNEL(x, (Tensors{x, scale}), Tensors{out.data}, cast_to_fp8, kernel_tensor(x), cast);
    }
    if (context.inspect()) inspect_tensor_cast(x, out.data, scale, quantizer);
    if (live) {
        hand_out_live_scale_inv(out, quantizer);
    } else {
        out.scale_inv = own_scale_inv;
    }
    return out;
}

// Current scaling's (and a calibrating step's) scale from x itself: x's amax, and from it the slot's scale, a
// scale_inv of the cast's own and the slot's staged amax, in one launch (abs_max_current_scale): no LibTorch arithmetic
// and no host round trip per cast. The scale_inv is the cast's own because the GEMMs that read it may run after this
// slot's next cast. x: float32 or bfloat16 (matrix_misfit found it fit).
at::Tensor FusedOps::fresh_scale(const at::Tensor& x, const Fp8Quantizer& quantizer) const {
    FreshScale f = fresh_scale_item(x, quantizer);
    TEWB_KERNEL(x, (Tensors{x, f.slot_amax}), (Tensors{f.scale, f.own_scale_inv, f.slot_amax}), abs_max_current_scale, f.item.x,
                f.item.numerator, f.item.scale, f.item.scale_inv, f.item.staging);
    return f.own_scale_inv;
}

// x's fresh scale as the amax kernels take it (x gets no amax of its own: it goes into the scale and the staging entry),
// with the tensors it writes.
FusedOps::FreshScale FusedOps::fresh_scale_item(const at::Tensor& x, const Fp8Quantizer& quantizer) {
    const Fp8Context& context = *quantizer.context;
    const Fp8Dtype dtype = quantizer.dtype();
    FreshScale f;
    f.scale = context.scale(quantizer.pass, quantizer.slot);
    f.own_scale_inv = at::empty({}, x.options().dtype(at::kFloat));
    f.slot_amax = staging_entry(quantizer);
    f.item.x = kernel_tensor(x);
    f.item.numerator = context.recipe().scaling == ScalingKind::Current ? fp8_max(dtype)
                                                                        : scale_numerator(fp8_max(dtype), context.recipe().margin);
    f.item.scale = kernel_tensor(f.scale);
    f.item.scale_inv = kernel_tensor(f.own_scale_inv);
    f.item.staging = kernel_tensor(f.slot_amax);
    return f;
}

kernels::CurrentScaleTarget FusedOps::fresh_scale_target(const FreshScale& f) {
    kernels::CurrentScaleTarget t;
    t.numerator = f.item.numerator;
    t.scale = f.item.scale;
    t.scale_inv = f.item.scale_inv;
    t.staging = f.item.staging;
    return t;
}

// Current scaling (and a calibrating step): every weight's scale from its own amax in one multi-tensor launch, then
// every weight cast with its scale in another (one each per 64 weights), where each weight took two launches.
std::vector<Fp8Tensor> FusedOps::quantize_weights_fresh(const std::vector<WeightCast>& casts) const {
    std::vector<FreshScale> scales;
    std::vector<kernels::CurrentScaleItem> items;
    std::vector<at::Tensor> scale_reads;
    std::vector<at::Tensor> scale_writes;
    for (const WeightCast& c : casts) {
        scales.push_back(fresh_scale_item(c.weight, c.quantizer));
        items.push_back(scales.back().item);
        scale_reads.insert(scale_reads.end(), {c.weight, scales.back().slot_amax});
        scale_writes.insert(scale_writes.end(), {scales.back().scale, scales.back().own_scale_inv, scales.back().slot_amax});
    }
    TEWB_KERNEL(casts.front().weight, scale_reads, scale_writes, abs_max_current_scale_multi, items.data(), items.size());
    std::vector<Fp8Tensor> out;
    std::vector<kernels::Tensor> sources;
    std::vector<kernels::Tensor> targets;
    std::vector<at::Tensor> reads;
    std::vector<at::Tensor> writes;
    for (std::size_t i = 0; i < casts.size(); ++i) {
        Fp8Tensor q = empty_fp8(casts[i].weight, casts[i].quantizer);
        sources.push_back(kernel_tensor(casts[i].weight));
        targets.push_back(fp8_tensor(q, casts[i].quantizer));
        targets.back().amax = nullptr;  // the staging entry has the weight's amax already
        reads.insert(reads.end(), {casts[i].weight, scales[i].scale});
        writes.insert(writes.end(), {q.data, q.transposed});
        q.scale_inv = scales[i].own_scale_inv;
        out.push_back(std::move(q));
    }
    TEWB_KERNEL(casts.front().weight, reads, writes, cast_transpose_multi_to_fp8, sources.data(), targets.data(), sources.size());
    return out;
}

// Delayed scaling: every weight in one multi-tensor launch (one per 64 weights), each cast with its slot's
// scale, its amax combined into its slot's staging entry and the slot's live scale_inv handed out, as
// quantize gives them one by one. Other recipes, a calibrating step and inspection cast one by one.
std::vector<Fp8Tensor> FusedOps::quantize_weights(const std::vector<WeightCast>& casts) const {
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
    const bool fresh = !casts.empty() && std::all_of(casts.begin(), casts.end(), [&](const WeightCast& c) {
        return fresh_scale_cast(c.weight, c.quantizer) && alike(c);
    });
    if (fresh) {
        // One launch sets every weight's scale, so no two may share a slot (a weight kept past its parameter's
        // replacement would): those cast one by one, each after the other.
        std::vector<const float*> slots;
        for (const WeightCast& c : casts) slots.push_back(staging_entry(c.quantizer).data_ptr<float>());
        std::sort(slots.begin(), slots.end());
        if (std::adjacent_find(slots.begin(), slots.end()) == slots.end()) return quantize_weights_fresh(casts);
    }
    const bool batched = !casts.empty() && std::all_of(casts.begin(), casts.end(), [&](const WeightCast& c) {
        return delayed_kernel_cast(c.weight, c.quantizer) && c.weight.device() == casts.front().weight.device();
    });
    if (!batched) return TeOps::quantize_weights(casts);
    std::vector<Fp8Tensor> out;
    std::vector<kernels::Tensor> sources;
    std::vector<kernels::Tensor> targets;
    std::vector<at::Tensor> reads;
    std::vector<at::Tensor> writes;
    for (const WeightCast& c : casts) {
        Fp8Tensor q = empty_fp8(c.weight, c.quantizer);
        sources.push_back(kernel_tensor(c.weight));
        targets.push_back(fp8_tensor(q, c.quantizer));
        reads.push_back(c.weight);
        writes.push_back(q.data);
        writes.push_back(q.transposed);
        out.push_back(std::move(q));
    }
    TEWB_KERNEL(casts.front().weight, reads, writes, cast_transpose_multi_to_fp8, sources.data(), targets.data(), sources.size());
    for (std::size_t i = 0; i < out.size(); ++i) hand_out_live_scale_inv(out[i], casts[i].quantizer);
    return out;
}

// One pass over dy: the FP8 gradient, its transposed copy, its amax and the bias gradient (float32,
// two-stage reduction).
Fp8GradWithBias FusedOps::quantize_dbias(const at::Tensor& dy, const Fp8Quantizer& quantizer) const {
    if (!matrix_misfit(dy, "dy") && quantizer.context->recipe().scaling == ScalingKind::Block) {
        Fp8GradWithBias r;
        r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(at::kFloat));
        r.grad = quantize_blocks(dy, quantizer, /*with_transpose=*/true, &r.bias_grad);
        return r;
    }
    // Delayed scaling casts with the slot's scale; current scaling and a calibrating step take dy's own first (one launch
    // more), and the same pass then casts and sums where a cast and LibTorch's sum were two.
    const bool fresh = !delayed_kernel_cast(dy, quantizer);
    if (fresh && !fresh_scale_cast(dy, quantizer)) return TeOps::quantize_dbias(dy, quantizer);
    return cast_dbias_with_slot_scale(dy, quantizer, fresh ? fresh_scale(dy, quantizer) : at::Tensor());
}

Fp8GradWithBias FusedOps::cast_dbias_with_slot_scale(const at::Tensor& dy, const Fp8Quantizer& quantizer,
                                                     const at::Tensor& own_scale_inv) const {
    const bool fresh = own_scale_inv.defined();
    const std::size_t rows = rows_of(dy);
    const std::size_t cols = cols_of(dy);
    const std::size_t bytes = kernels::cast_transpose_dbias_workspace_bytes(rows, cols);
    Fp8GradWithBias r = empty_grad_with_bias(dy, quantizer);
    const at::Tensor workspace = byte_buffer(bytes, dy);
    kernels::Tensor grad = fp8_tensor(r.grad, quantizer);
    if (fresh) grad.amax = nullptr;  // the staging entry has dy's amax already
    TEWB_KERNEL(dy, Tensors{dy}, (Tensors{r.grad.data, r.grad.transposed, r.bias_grad}), cast_transpose_dbias_to_fp8,
                kernel_tensor(dy), grad, kernel_tensor(r.bias_grad), workspace_ref(workspace));
    if (fresh) {
        r.grad.scale_inv = own_scale_inv;
    } else {
        hand_out_live_scale_inv(r.grad, quantizer);
    }
    return r;
}

// One pass over dy: its copy in the GEMMs' dtype (none when it already is) and the bias gradient (float32).
GradWithBias FusedOps::cast_dbias(const at::Tensor& dy, at::ScalarType dtype) const {
    Misfit m = matrix_misfit(dy, "dy");
    if (!m && !float_or_bf16(dtype)) {
        m = "the GEMMs' dtype is " + std::string(c10::toString(dtype)) + " (the kernel writes float32, bfloat16)";
    }
    if (m) return fall_back("cast_dbias", *m, [&] { return reference_ops().cast_dbias(dy, dtype); });
    const bool cast = dy.scalar_type() != dtype;
    GradWithBias r;
    r.grad = cast ? at::empty(dy.sizes(), dy.options().dtype(dtype)) : dy;
    r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(at::kFloat));
    const at::Tensor workspace = byte_buffer(kernels::cast_dbias_workspace_bytes(rows_of(dy), cols_of(dy)), dy);
    const kernels::Tensor out = cast ? kernel_tensor(r.grad) : kernels::Tensor{};
    const std::vector<at::Tensor> writes = cast ? std::vector<at::Tensor>{r.grad, r.bias_grad} : std::vector<at::Tensor>{r.bias_grad};
    TEWB_KERNEL(dy, Tensors{dy}, writes, cast_dbias, kernel_tensor(dy), out, kernel_tensor(r.bias_grad), workspace_ref(workspace));
    return r;
}

std::optional<std::int64_t> token_row_stride(const at::Tensor& t) {
    const std::int64_t width = t.size(2) * t.size(3);
    if (t.stride(3) != 1 || (t.size(2) > 1 && t.stride(2) != t.size(3))) return std::nullopt;
    const std::int64_t tokens = t.size(0) * t.size(1);
    if (tokens == 1) return width;
    // One token per batch row: the batch stride is the row stride; else the seq stride, the batches one seq apart.
    const std::int64_t stride = t.size(1) == 1 ? t.stride(0) : t.stride(1);
    if (t.size(1) > 1 && t.size(0) > 1 && t.stride(0) != t.size(1) * stride) return std::nullopt;
    if (stride < width) return std::nullopt;
    return stride;
}

namespace {

// Why dq, dk and dv cannot be read where they lie by the stacked casts: each must be [batch, seq, heads, head_dim] of
// one shape and dtype (float32 or bfloat16), non-empty, with token rows as token_row_stride reads them.
std::optional<std::string> heads_misfit(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv) {
    for (const at::Tensor* t : {&dq, &dk, &dv}) {
        if (t->dim() != 4 || t->sizes() != dq.sizes() || t->scalar_type() != dq.scalar_type() || t->device() != dq.device()) {
            return std::string("dq, dk and dv are not [batch, seq, heads, head_dim] of one shape, dtype and device");
        }
        if (t->numel() == 0) return std::string("dq, dk and dv are empty");
        if (!token_row_stride(*t)) {
            return std::string("a token's heads are not contiguous in dq, dk or dv, or its tokens not one row stride apart");
        }
    }
    if (!float_or_bf16(dq.scalar_type())) {
        return "dq is " + std::string(c10::toString(dq.scalar_type())) + " (the kernels take float32, bfloat16)";
    }
    return std::nullopt;
}

// dq, dk and dv (heads_misfit found them fit) as the one contiguous [batch · seq, 3 · width] matrix they are views of,
// side by side in that order; nothing when they are not.
std::optional<at::Tensor> stacked_whole(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv) {
    const std::int64_t width = dq.size(2) * dq.size(3);
    const std::int64_t rows = dq.size(0) * dq.size(1);
    const auto* base = static_cast<const std::uint8_t*>(dq.data_ptr());
    const auto bytes = static_cast<std::ptrdiff_t>(width * static_cast<std::int64_t>(dq.element_size()));
    const bool adjacent = dk.data_ptr() == base + bytes && dv.data_ptr() == base + 2 * bytes &&
                          dk.storage().is_alias_of(dq.storage()) && dv.storage().is_alias_of(dq.storage());
    for (const at::Tensor* t : {&dq, &dk, &dv}) {
        if (rows > 1 && token_row_stride(*t) != 3 * width) return std::nullopt;
    }
    if (!adjacent) return std::nullopt;
    return dq.as_strided({rows, 3 * width}, {3 * width, 1});
}

// One of them as the kernels' part: [batch · seq, heads · head_dim], its tokens token_row_stride apart (heads_misfit
// found them fit).
kernels::Tensor head_rows(const at::Tensor& t) {
    kernels::Tensor k = kernels::input(t.data_ptr(), kernel_dtype(t.scalar_type()), static_cast<std::size_t>(t.size(0) * t.size(1)),
                                       static_cast<std::size_t>(t.size(2) * t.size(3)));
    k.row_stride = static_cast<std::size_t>(*token_row_stride(t));
    return k;
}

}  // namespace

GradWithBias FusedOps::stack_heads_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv, at::ScalarType dtype,
                                         bool with_bias_grad) const {
    Misfit m = device_misfit(dq, "dq");
    if (!m) m = heads_misfit(dq, dk, dv);
    if (!m && !float_or_bf16(dtype)) {
        m = "the GEMMs' dtype is " + std::string(c10::toString(dtype)) + " (the kernel writes float32, bfloat16)";
    }
    if (m) return fall_back("stack_heads_dbias", *m, [&] { return TeOps::stack_heads_dbias(dq, dk, dv, dtype, with_bias_grad); });
    const std::int64_t rows = dq.size(0) * dq.size(1);
    const std::int64_t cols = 3 * dq.size(2) * dq.size(3);
    // Already stacked (the attention kernels' backward writes dq, dk and dv side by side in one [rows, 3 · width]):
    // nothing to copy; the cast, if any, and the sums in one cast_dbias, or no launch at all.
    if (const std::optional<at::Tensor> whole = stacked_whole(dq, dk, dv)) {
        if (with_bias_grad || dtype != dq.scalar_type()) {
            GradWithBias r = cast_dbias(*whole, dtype);
            if (!with_bias_grad) r.bias_grad = at::Tensor();
            return r;
        }
        return {*whole, at::Tensor()};
    }
    GradWithBias r;
    r.grad = at::empty({rows, cols}, dq.options().dtype(dtype));
    // The kernel always sums; without a bias the sums go to scratch (the same launch, a row of floats more).
    r.bias_grad = at::empty({cols}, dq.options().dtype(at::kFloat));
    const at::Tensor workspace = byte_buffer(kernels::cast_dbias_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), dq);
    const kernels::Tensor parts[] = {head_rows(dq), head_rows(dk), head_rows(dv)};
    TEWB_KERNEL(dq, (Tensors{dq, dk, dv}), (Tensors{r.grad, r.bias_grad}), stacked_cast_dbias, parts, 3, kernel_tensor(r.grad),
                kernel_tensor(r.bias_grad), workspace_ref(workspace));
    if (!with_bias_grad) r.bias_grad = at::Tensor();
    return r;
}

Fp8GradWithBias FusedOps::stack_heads_quantize_dbias(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                                     const Fp8Quantizer& quantizer, bool with_bias_grad,
                                                     const at::Tensor& handed_scale_inv) const {
    // Delayed scaling reads dq, dk and dv where they lie (its scale is known before the pass). The other recipes cast the
    // stacked gradient as quantize_dbias and quantize do: where dq, dk and dv already lie side by side (the attention
    // kernels' backward writes them so) as a view of it, without a stack.
    Misfit m = device_misfit(dq, "dq");
    if (!m) m = heads_misfit(dq, dk, dv);
    const Fp8Context& context = *quantizer.context;
    if (m || context.recipe().scaling != ScalingKind::Delayed || context.inspect() || context.calibrating(quantizer.pass)) {
        if (m) {
            return fall_back("stack_heads_quantize_dbias", *m, [&] {
                return TeOps::stack_heads_quantize_dbias(dq, dk, dv, quantizer, with_bias_grad, handed_scale_inv);
            });
        }
        if (const std::optional<at::Tensor> whole = stacked_whole(dq, dk, dv)) {
            // The attention's backward wrote the scale already (the amax hand-off): the cast without an amax pass.
            const bool handed = handed_scale_inv.defined() && fresh_scale_cast(*whole, quantizer);
            if (with_bias_grad) return handed ? cast_dbias_with_slot_scale(*whole, quantizer, handed_scale_inv) : quantize_dbias(*whole, quantizer);
            return {handed ? cast_with_slot_scale(*whole, quantizer, /*with_transpose=*/true, handed_scale_inv)
                           : quantize(*whole, quantizer, /*with_transpose=*/true),
                    at::Tensor()};
        }
        return TeOps::stack_heads_quantize_dbias(dq, dk, dv, quantizer, with_bias_grad, handed_scale_inv);
    }
    const std::int64_t rows = dq.size(0) * dq.size(1);
    const std::int64_t cols = 3 * dq.size(2) * dq.size(3);
    Fp8GradWithBias r;
    r.grad.dtype = quantizer.dtype();
    r.grad.data = at::empty({rows, cols}, dq.options().dtype(to_scalar_type(r.grad.dtype)));
    r.grad.transposed = at::empty({cols, rows}, r.grad.data.options());
    at::Tensor workspace;
    kernels::Tensor dbias;
    if (with_bias_grad) {
        r.bias_grad = at::empty({cols}, dq.options().dtype(at::kFloat));
        workspace = byte_buffer(kernels::cast_transpose_dbias_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), dq);
        dbias = kernel_tensor(r.bias_grad);
    }
    const kernels::Tensor parts[] = {head_rows(dq), head_rows(dk), head_rows(dv)};
    const std::vector<at::Tensor> writes =
        with_bias_grad ? std::vector<at::Tensor>{r.grad.data, r.grad.transposed, r.bias_grad} : std::vector<at::Tensor>{r.grad.data, r.grad.transposed};
    TEWB_KERNEL(dq, (Tensors{dq, dk, dv}), writes, stacked_cast_transpose_dbias_to_fp8, parts, 3, fp8_tensor(r.grad, quantizer), dbias,
                workspace.defined() ? workspace_ref(workspace) : kernels::Workspace{});
    hand_out_live_scale_inv(r.grad, quantizer);
    return r;
}

// Block scaling: every weight's 128 x 128 block cast (data, transposed copy, both scale arrays, amax) in one
// multi-tensor launch per 64 weights.
std::vector<Fp8Tensor> FusedOps::quantize_weight_blocks(const std::vector<WeightCast>& casts) const {
    std::vector<Fp8Tensor> out;
    std::vector<kernels::Tensor> sources;
    std::vector<kernels::Tensor> targets;
    std::vector<at::Tensor> reads;
    std::vector<at::Tensor> writes;
    for (const WeightCast& c : casts) {
        BlockCastSetup setup = block_cast_setup(c.weight, c.quantizer, /*with_transpose=*/true);
        sources.push_back(kernel_tensor(c.weight));
        targets.push_back(setup.cast);
        reads.push_back(c.weight);
        for (const at::Tensor& t : {setup.out.data, setup.out.scale_inv, setup.out.transposed, setup.out.transposed_scale_inv}) {
            writes.push_back(t);
        }
        out.push_back(std::move(setup.out));
    }
    const at::Tensor& front = casts.front().weight;
    TEWB_KERNEL(front, reads, writes, block_cast_multi_to_fp8, sources.data(), targets.data(), sources.size(),
                casts.front().quantizer.context->recipe().block_power_of_two);
    return out;
}

// A block cast's outputs for x under the quantizer's slot, allocated, and where the kernel writes them.
FusedOps::BlockCastSetup FusedOps::block_cast_setup(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose) {
    const bool weight = Fp8Context::role_of(quantizer.pass, quantizer.slot) == SlotRole::Weight;
    const BlockShape block = weight ? kWeightBlock : kActivationBlock;
    const std::int64_t rows = x.size(0);
    const std::int64_t cols = x.size(1);
    Fp8Tensor out;
    out.dtype = quantizer.dtype();
    out.data = at::empty({rows, cols}, x.options().dtype(to_scalar_type(out.dtype)));
    out.scale_inv = empty_block_scales(rows, cols, block, x.options());
    kernels::Tensor cast = kernel_tensor(out.data);
    cast.scale_inv = out.scale_inv.data_ptr<float>();
    cast.scale_mode = kernels::block_scale_mode(block.rows);
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

// Float8BlockScaling's cast in one launch of the block cast kernel: the data along its rows (1×128
// blocks; 128×128 for weights), for the backward x's transpose cast along its own rows, both scales
// already in cuBLASLt's layout, and the tensor's amax into the slot's staging entry (the statistics).
// Same values and scales as the reference (bit for bit).
// With `dbias` (float32 [cols]), the same launch also writes x's column sums (a Linear's bias gradient).
Fp8Tensor FusedOps::quantize_blocks(const at::Tensor& x, const Fp8Quantizer& quantizer, bool with_transpose,
                                    const at::Tensor* dbias) const {
    Fp8Context& context = *quantizer.context;
    BlockCastSetup setup = block_cast_setup(x, quantizer, with_transpose);
    Fp8Tensor& out = setup.out;
    const at::Tensor& staging = setup.staging;
    const BlockShape block = setup.block;
    at::Tensor workspace;
    kernels::Tensor bias_grad;
    if (dbias != nullptr) {
        workspace = byte_buffer(kernels::block_cast_dbias_workspace_bytes(rows_of(x), cols_of(x)), x);
        bias_grad = kernel_tensor(*dbias);
    }
    TEWB_KERNEL(x, Tensors{x},
                (Tensors{out.data, out.scale_inv, out.transposed, out.transposed_scale_inv, staging,
                         dbias != nullptr ? *dbias : at::Tensor()}),
                block_cast_to_fp8, kernel_tensor(x), setup.cast, context.recipe().block_power_of_two, bias_grad,
                workspace.defined() ? workspace_ref(workspace) : kernels::Workspace{});
    if (context.inspect()) inspect_block_cast(x, {out.data, out.scale_inv, block, out.dtype}, quantizer);
    return out;
}

}  // namespace tewb::fused_ops
