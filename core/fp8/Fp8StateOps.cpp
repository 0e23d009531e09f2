#include "core/fp8/Fp8StateOps.h"

#include <cfloat>
#include <limits>

#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/div.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/isneginf.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/Microscaling.h"

namespace tewb {

namespace {

class ReferenceStateOps final : public Fp8StateOps {
public:
    at::Tensor abs_max(const at::Tensor& x) const override { return abs_max_reference(x); }
    void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                        float numerator, const UpdateRecord& record) const override {
        update_scaling_reference(history, scale, scale_inv, recipe, numerator, record);
    }
};

}  // namespace

at::Tensor abs_max_reference(const at::Tensor& x) {
    if (x.numel() == 0) {
        return at::zeros({}, x.options().dtype(at::kFloat));
    }
    return at::amax(at::abs(x.to(at::kFloat)).reshape({-1}), {0});
}

// The rule of ScaleUpdate on every slot at once, bit for bit.
void update_scaling_reference(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                              float numerator, const UpdateRecord& record) {
    const at::Tensor staged = history.select(1, 0);
    const bool block = recipe.scaling == ScalingKind::Block;
    if (record.statistics.defined()) {
        record.statistics.select(1, 0).copy_(staged);
        if (!block) record.statistics.select(1, 1).copy_(scale);
    }
    if (record.kept_scale_inv.defined()) record.kept_scale_inv.copy_(scale_inv);
    if (block) {
        scale.copy_(block_statistics_scale(staged, numerator, recipe.block_power_of_two));
        if (record.statistics.defined()) record.statistics.select(1, 1).copy_(scale);
    }
    if (is_microscaling(recipe.scaling)) {  // what the block holding the amax (MXFP8) or the tensor (NVFP4) was scaled by
        const MxFormat format = recipe.scaling == ScalingKind::Mxfp8 ? MxFormat::Mxfp8 : MxFormat::Nvfp4;
        scale.copy_(mx_statistics_scale(staged, format, record.dtype));
        if (record.statistics.defined()) record.statistics.select(1, 1).copy_(scale);
    }
    if (recipe.scaling != ScalingKind::Delayed) {  // current and block scaling keep no history
        staged.zero_();
        scale_inv.copy_(at::reciprocal(scale));
        return;
    }
    const std::int64_t len = history.size(1);
    const at::Tensor ran = staged != 0;  // a NaN counts as having run
    at::Tensor window = staged;
    if (recipe.algo == AmaxAlgo::Max && len > 1) {
        // Transformer Engine's fmaxf reduction: NaN entries are passed over, NaN only when all are. Amaxes
        // are >= 0, inf or NaN, so -inf stands for "NaN" while reducing and maps back afterwards.
        const at::Tensor whole = history;  // staged and h[1..L-1]: the whole row
        const at::Tensor neg_inf = at::scalar_tensor(-std::numeric_limits<float>::infinity(), whole.options());
        const at::Tensor reduced = at::where(at::isnan(whole), neg_inf, whole).amax(1);
        window = at::where(at::isneginf(reduced), at::scalar_tensor(std::numeric_limits<float>::quiet_NaN(), whole.options()),
                           reduced);
    }
    at::Tensor candidate = at::div(at::full_like(window, numerator), window);  // float32, exactly as the host rule
    candidate = at::where(at::isinf(candidate), at::scalar_tensor(FLT_MAX, candidate.options()), candidate);
    const at::Tensor usable = ran & at::isfinite(window) & (window > 0);
    at::Tensor rolled = at::zeros_like(history);
    if (len > 1) {
        rolled.narrow(1, 1, len - 2).copy_(history.narrow(1, 2, len - 2));
        rolled.select(1, len - 1).copy_(staged);
    }
    history.copy_(at::where(ran.unsqueeze(1), rolled, history));
    scale.copy_(at::where(usable, candidate, scale));
    scale_inv.copy_(at::reciprocal(scale));
}

const Fp8StateOps& reference_state_ops() {
    static const ReferenceStateOps ops;
    return ops;
}

}  // namespace tewb
