#include "core/fp8/Fp8State.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include <ATen/ops/cat.h>
#include <ATen/ops/div.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/engine.h>

#include "core/common/Error.h"
#include "core/fp8/ScaleUpdate.h"

#if defined(TEWB_HAVE_KERNELS) && defined(TEWB_TORCH_HAS_CUDA)
#include <ATen/cuda/CUDAContext.h>

#include "tewb_kernels/recipe.h"
#define TEWB_RECIPE_KERNEL 1
#endif

namespace tewb {

namespace {

constexpr int kForwardSlotsPerGemm = 3;
constexpr int kBackwardSlotsPerGemm = 2;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

at::TensorOptions float_on(const c10::Device& device) {
    return at::TensorOptions().dtype(at::kFloat).device(device);
}

// The same update with LibTorch ops (CPU, older GPUs, builds without kernels): the rule of ScaleUpdate
// on every slot at once, bit for bit.
void update_with_tensor_ops(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                            float numerator) {
    const at::Tensor staged = history.select(1, 0);
    if (recipe.scaling == ScalingKind::Current) {
        staged.zero_();
        scale_inv.copy_(at::reciprocal(scale));
        return;
    }
    const std::int64_t len = history.size(1);
    const at::Tensor ran = staged != 0;  // a NaN counts as having run
    at::Tensor window = staged;
    if (recipe.algo == AmaxAlgo::Max && len > 1) {
        window = at::maximum(history.narrow(1, 1, len - 1).amax(1), staged);  // NaN propagates
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

// The whole update of a pass's bank in one launch of the recipe kernel, on LibTorch's current stream.
// Only for CUDA tensors on GPUs the kernels are built for (compute capability 8.0 and up); returns false
// where the tensor ops must do it.
bool update_with_kernel([[maybe_unused]] at::Tensor& history, [[maybe_unused]] at::Tensor& scale,
                        [[maybe_unused]] at::Tensor& scale_inv, [[maybe_unused]] const Fp8Recipe& recipe,
                        [[maybe_unused]] float numerator) {
#ifdef TEWB_RECIPE_KERNEL
    if (!history.is_cuda() || !history.is_contiguous() || !scale.is_contiguous() || !scale_inv.is_contiguous()) {
        return false;
    }
    if (at::cuda::getDeviceProperties(history.get_device())->major < 8) {
        return false;
    }
    const kernels::ScalingRule rule = recipe.scaling == ScalingKind::Current ? kernels::ScalingRule::Current
                                      : recipe.algo == AmaxAlgo::Max         ? kernels::ScalingRule::DelayedMax
                                                                             : kernels::ScalingRule::DelayedMostRecent;
    kernels::update_scaling(history.data_ptr<float>(), scale.data_ptr<float>(), scale_inv.data_ptr<float>(),
                            static_cast<int>(history.size(0)), static_cast<int>(history.size(1)), numerator, rule,
                            at::cuda::getCurrentCUDAStream(history.get_device()).stream());
    return true;
#else
    return false;
#endif
}

}  // namespace

Fp8Context::GemmSlots Fp8Context::add_gemm(const std::string& module) {
    if (prepared_) {
        throw std::logic_error("Fp8Context::add_gemm(" + module + "): the FP8 state is already in use");
    }
    const int gemm = static_cast<int>(modules_.size());
    modules_.push_back(module);
    return {gemm * kForwardSlotsPerGemm, gemm * kBackwardSlotsPerGemm};
}

void Fp8Context::prepare(const Fp8Recipe& recipe, bool inspect, const c10::Device& device) {
    const bool same_shape = prepared_ && forward_.history.size(1) == recipe.amax_history_len &&
                            forward_.history.device() == device;
    recipe_ = recipe;
    inspect_ = inspect;
    if (same_shape) {
        return;
    }
    const std::int64_t n = gemm_count();
    const std::int64_t slots[2] = {n * kForwardSlotsPerGemm, n * kBackwardSlotsPerGemm};
    Bank* banks[2] = {&forward_, &backward_};
    for (int b = 0; b < 2; ++b) {
        Bank& bank = *banks[b];
        bank.history = at::zeros({slots[b], recipe.amax_history_len}, float_on(device));
        bank.scale = at::ones({slots[b]}, float_on(device));
        bank.scale_inv = at::ones({slots[b]}, float_on(device));
        bank.counters = at::zeros({slots[b], 3}, float_on(device).dtype(at::kDouble));
        bank.last = at::zeros({slots[b], 4}, float_on(device));
        bank.last.select(1, 1).fill_(1.0);
        bank.last.narrow(1, 2, 2).fill_(kNan);
    }
    std::vector<std::int64_t> rows;
    for (std::int64_t g = 0; g < n; ++g) {
        rows.push_back(g * kForwardSlotsPerGemm + 0);
        rows.push_back(g * kForwardSlotsPerGemm + 1);
        rows.push_back(slots[0] + g * kBackwardSlotsPerGemm + 0);
    }
    statistics_rows_ = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
    prepared_ = true;
    ++generation_;
}

Fp8Dtype Fp8Context::dtype(Fp8Pass pass) const {
    return pass == Fp8Pass::Forward ? forward_dtype(recipe_.format) : backward_dtype(recipe_.format);
}

void Fp8Context::check_prepared(const char* what) const {
    if (!prepared_) {
        throw std::logic_error(std::string("Fp8Context::") + what + ": prepare() was not called");
    }
}

at::Tensor Fp8Context::scale(Fp8Pass pass, int slot) const {
    check_prepared("scale");
    return bank(pass).scale.select(0, slot);
}

void Fp8Context::record_amax(Fp8Pass pass, int slot, const at::Tensor& amax) {
    check_prepared("record_amax");
    at::Tensor staging = bank(pass).history.select(0, slot).select(0, 0);
    staging.copy_(at::maximum(staging, amax));
}

void Fp8Context::set_scale(Fp8Pass pass, int slot, const at::Tensor& scale) {
    check_prepared("set_scale");
    bank(pass).scale.select(0, slot).copy_(scale);
}

void Fp8Context::count(Fp8Pass pass, int slot, const at::Tensor& saturated, const at::Tensor& underflow, std::int64_t numel) {
    check_prepared("count");
    at::Tensor row = bank(pass).counters.select(0, slot);
    row.select(0, 0).add_(saturated);
    row.select(0, 1).add_(underflow);
    row.select(0, 2).add_(static_cast<double>(numel));
}

void Fp8Context::update(Fp8Pass pass) {
    if (!prepared_) {
        return;
    }
    Bank& b = bank(pass);
    const at::Tensor staged = b.history.select(1, 0);

    // Statistics of this step, before the state moves on.
    b.last.select(1, 0).copy_(staged);
    b.last.select(1, 1).copy_(b.scale);
    if (inspect_) {
        const at::Tensor elements = b.counters.select(1, 2);
        const at::Tensor seen = elements > 0;
        const at::Tensor nan = at::full({}, kNan, b.counters.options());
        b.last.select(1, 2).copy_(at::where(seen, b.counters.select(1, 0) / elements, nan));
        b.last.select(1, 3).copy_(at::where(seen, b.counters.select(1, 1) / elements, nan));
        b.counters.zero_();
    } else {
        b.last.narrow(1, 2, 2).fill_(kNan);
    }

    const float numerator = scale_numerator(fp8_max(dtype(pass)), recipe_.margin);
    if (!update_with_kernel(b.history, b.scale, b.scale_inv, recipe_, numerator)) {
        update_with_tensor_ops(b.history, b.scale, b.scale_inv, recipe_, numerator);
    }
    if (pass == Fp8Pass::Forward) {
        ++generation_;
    }
}

void Fp8Context::request_backward_update() {
    if (backward_update_queued_.exchange(true)) {
        return;
    }
    std::weak_ptr<Fp8Context> weak = weak_from_this();
    torch::autograd::Engine::get_default_engine().queue_callback([weak] {
        if (const std::shared_ptr<Fp8Context> self = weak.lock()) {
            self->backward_update_queued_.store(false);
            self->update(Fp8Pass::Backward);
        }
    });
}

std::vector<Fp8SlotInfo> Fp8Context::quantized_slots(const Fp8Recipe& recipe) const {
    std::vector<Fp8SlotInfo> slots;
    for (const std::string& module : modules_) {
        slots.push_back({module, SlotRole::Input, forward_dtype(recipe.format)});
        slots.push_back({module, SlotRole::Weight, forward_dtype(recipe.format)});
        slots.push_back({module, SlotRole::GradOutput, backward_dtype(recipe.format)});
    }
    return slots;
}

at::Tensor Fp8Context::statistics() const {
    check_prepared("statistics");
    return at::cat({forward_.last, backward_.last}, 0).index_select(0, statistics_rows_);
}

}  // namespace tewb
