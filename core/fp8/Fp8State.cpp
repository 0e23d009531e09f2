#include "core/common/StepSegments.h"
#include "core/fp8/Fp8State.h"

#include <cmath>
#include <limits>

#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/engine.h>

#include "core/common/Error.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/ledger/Ledger.h"


namespace tewb {

namespace {

constexpr int kForwardSlotsPerGemm = 3;
constexpr int kBackwardSlotsPerGemm = 2;
constexpr int kStatisticsSlotsPerGemm = 3;  // input, weight, grad-output: the slots our modules cast into
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

at::TensorOptions float_on(const c10::Device& device) {
    return at::TensorOptions().dtype(at::kFloat).device(device);
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

// [slots] values of `fill`, each at the start of its own kSlotBytes slot (the scale storage contract).
at::Tensor slotted(std::int64_t slots, float fill, const c10::Device& device) {
    return at::full({slots, Fp8Context::kSlotBytes / static_cast<std::int64_t>(sizeof(float))}, fill, float_on(device))
        .select(1, 0);
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

void Fp8Context::prepare(const Fp8Recipe& recipe, bool inspect, const c10::Device& device, const Fp8StateOps& ops) {
    ops_ = &ops;
    const bool same_shape = prepared_ && forward_.history.size(1) == recipe.amax_history_len &&
                            forward_.history.device() == device;
    const bool stops_inspecting = prepared_ && inspect_ && !inspect;
    // The block scales' histogram describes one recipe's inspected casts: it starts again with another recipe or a
    // new stretch of inspection.
    if (prepared_ && (!(recipe == recipe_) || (inspect && !inspect_))) {
        for (Bank* bank : {&forward_, &backward_}) bank->scale_bins = at::Tensor();
    }
    recipe_ = recipe;
    inspect_ = inspect;
    if (same_shape) {
        if (stops_inspecting) {
            for (Bank* bank : {&forward_, &backward_}) bank->last.narrow(1, 2, kStatisticsColumns - 2).fill_(kNan);
        }
        return;
    }
    const std::int64_t n = gemm_count();
    const std::int64_t slots[2] = {n * kForwardSlotsPerGemm, n * kBackwardSlotsPerGemm};
    Bank* banks[2] = {&forward_, &backward_};
    for (int b = 0; b < 2; ++b) {
        Bank& bank = *banks[b];
        const std::int64_t row = round_up(recipe.amax_history_len, kSlotBytes / static_cast<std::int64_t>(sizeof(float)));
        bank.history = at::zeros({slots[b], row}, float_on(device)).narrow(1, 0, recipe.amax_history_len);
        bank.scale = slotted(slots[b], 1.0f, device);
        bank.scale_inv = slotted(slots[b], 1.0f, device);
        for (at::Tensor& kept : bank.kept) kept = slotted(slots[b], 1.0f, device);
        bank.next_kept = 0;
        bank.counters = at::zeros({slots[b], kCounters}, float_on(device).dtype(at::kDouble));
        bank.scale_bins = at::Tensor();  // sized by the first count_block_scales
        bank.last = at::zeros({slots[b], kStatisticsColumns}, float_on(device));
        bank.last.select(1, 1).fill_(1.0);
        bank.last.narrow(1, 2, kStatisticsColumns - 2).fill_(kNan);
    }
    std::vector<std::int64_t> rows;
    for (std::int64_t g = 0; g < n; ++g) {
        rows.push_back(g * kForwardSlotsPerGemm + 0);
        rows.push_back(g * kForwardSlotsPerGemm + 1);
        rows.push_back(slots[0] + g * kBackwardSlotsPerGemm + 0);
    }
    statistics_rows_ = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
    updates_[0] = updates_[1] = 0;
    prepared_ = true;
    ++generation_;
    ++scale_changes_;
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

Fp8Context::LiveScaleInv Fp8Context::live_scale_inv(Fp8Pass pass, int slot) const {
    check_prepared("live_scale_inv");
    const Bank& b = bank(pass);
    return {b.scale_inv.select(0, slot), b.kept[b.next_kept].select(0, slot)};
}

void Fp8Context::record_amax(Fp8Pass pass, int slot, const at::Tensor& amax) {
    check_prepared("record_amax");
    const LedgerScope scope("fp8_amax");
    at::Tensor staging = bank(pass).history.select(0, slot).select(0, 0);
    staging.copy_(at::maximum(staging, amax));
}

void Fp8Context::set_scale(Fp8Pass pass, int slot, const at::Tensor& scale) {
    check_prepared("set_scale");
    bank(pass).scale.select(0, slot).copy_(scale);
}

void Fp8Context::count(Fp8Pass pass, int slot, const at::Tensor& saturated, const at::Tensor& underflow, std::int64_t numel) {
    check_prepared("count");
    const LedgerScope scope("fp8_amax");
    at::Tensor row = bank(pass).counters.select(0, slot);
    row.select(0, 0).add_(saturated);
    row.select(0, 1).add_(underflow);
    row.select(0, 2).add_(static_cast<double>(numel));
}

void Fp8Context::count_errors(Fp8Pass pass, int slot, const CastErrors& errors) {
    check_prepared("count_errors");
    const LedgerScope scope("fp8_amax");
    at::Tensor row = bank(pass).counters.select(0, slot);
    row.select(0, 3).add_(errors.error);
    row.select(0, 4).add_(errors.signal);
    for (std::size_t w = 0; w < kWhatIfCount; ++w) row.select(0, 5 + static_cast<std::int64_t>(w)).add_(errors.what_if[w]);
}

void Fp8Context::count_block_scales(Fp8Pass pass, int slot, const at::Tensor& bins) {
    check_prepared("count_block_scales");
    const LedgerScope scope("fp8_amax");
    Bank& b = bank(pass);
    if (!b.scale_bins.defined()) {
        b.scale_bins = at::zeros({b.counters.size(0), Fp8ScaleHistogram::kBins + 1}, b.counters.options());
    }
    const at::Tensor flat = bins.reshape({-1});
    b.scale_bins.select(0, slot).index_add_(0, flat, at::ones({flat.numel()}, b.counters.options()));
}

std::vector<Fp8ScaleHistogram> Fp8Context::block_scale_histograms() const {
    if (!prepared_ || (!forward_.scale_bins.defined() && !backward_.scale_bins.defined())) return {};
    const auto bins_of = [](const Bank& bank) {
        return bank.scale_bins.defined() ? bank.scale_bins
                                         : at::zeros({bank.counters.size(0), Fp8ScaleHistogram::kBins + 1}, bank.counters.options());
    };
    const at::Tensor all = at::cat({bins_of(forward_), bins_of(backward_)}, 0)
                               .index_select(0, statistics_rows_)
                               .to(at::kCPU)
                               .to(at::kLong)
                               .contiguous();
    std::vector<Fp8ScaleHistogram> out(static_cast<std::size_t>(all.size(0)));
    const std::int64_t* values = all.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::int64_t* row = values + static_cast<std::int64_t>(i) * (Fp8ScaleHistogram::kBins + 1);
        Fp8ScaleHistogram& h = out[i];
        h.empty_blocks = row[Fp8ScaleHistogram::kBins];
        int first = 0, last = Fp8ScaleHistogram::kBins - 1;
        while (first <= last && row[first] == 0) ++first;
        while (last >= first && row[last] == 0) --last;
        h.lowest_exponent = first <= last ? Fp8ScaleHistogram::kLowestExponent + first : 0;
        h.counts.assign(row + first, row + last + 1);
    }
    return out;
}

SlotRole Fp8Context::role_of(Fp8Pass pass, int slot) {
    if (pass == Fp8Pass::Backward) return slot % 2 == 0 ? SlotRole::GradOutput : SlotRole::GradInput;
    switch (slot % 3) {
        case 0: return SlotRole::Input;
        case 1: return SlotRole::Weight;
        default: return SlotRole::Output;
    }
}

void Fp8Context::update(Fp8Pass pass) {
    if (!prepared_) {
        return;
    }
    const SegmentGuard bookkeeping(StepSegment::Fp8);
    const LedgerScope scope(pass == Fp8Pass::Forward ? "fp8_update_forward" : "fp8_update_backward");
    Bank& b = bank(pass);
    if (amax_reducer_) amax_reducer_(b.history.select(1, 0));
    const at::Tensor staged = b.history.select(1, 0);

    // Inspection's statistics of this step (columns 2 on; without inspection they stay NaN, set at prepare).
    if (inspect_) {
        const at::Tensor elements = b.counters.select(1, 2);
        const at::Tensor seen = elements > 0;
        const at::Tensor nan = at::full({}, kNan, b.counters.options());
        b.last.select(1, 2).copy_(at::where(seen, b.counters.select(1, 0) / elements, nan));
        b.last.select(1, 3).copy_(at::where(seen, b.counters.select(1, 1) / elements, nan));
        const at::Tensor signal = b.counters.select(1, 4);
        // Counter 3 (this cast) and 5… (the what-ifs) over the signal (counter 4) → columns 4….
        for (int column = 4; column < kStatisticsColumns; ++column) {
            const int counter = column == 4 ? 3 : column;
            b.last.select(1, column).copy_(at::where(seen, b.counters.select(1, counter) / signal, nan));
        }
        b.counters.zero_();
    }

    // The update writes the amax and scale columns of the statistics before the state moves on and, under
    // delayed scaling, keeps what the casts handed out as live scale_invs for their later consumers (current
    // and block scaling hand out their own tensors: nothing to keep). Block scaling has no margin; its update
    // sets the slot's scale from the staged amax (the scale of the block holding it): block casts record only
    // their tensor's amax.
    UpdateRecord record;
    record.statistics = b.last;
    record.dtype = dtype(pass);
    const bool block = recipe_.scaling == ScalingKind::Block;
    if (recipe_.scaling == ScalingKind::Delayed) {
        record.kept_scale_inv = b.kept[b.next_kept];
        b.next_kept = 1 - b.next_kept;
    }
    ops_->update_scaling(b.history, b.scale, b.scale_inv, recipe_,
                         block ? fp8_max(dtype(pass)) : scale_numerator(fp8_max(dtype(pass)), recipe_.margin), record);
    ++updates_[pass == Fp8Pass::Forward ? 0 : 1];
    ++scale_changes_;
    if (pass == Fp8Pass::Forward) {
        ++generation_;
    }
}

bool Fp8Context::calibrating(Fp8Pass pass) const {
    return recipe_.scaling == ScalingKind::Delayed && recipe_.calibrate_first_step && updates_[pass == Fp8Pass::Forward ? 0 : 1] == 0;
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

std::int64_t Fp8Context::statistics_rows() const {
    return gemm_count() * kStatisticsSlotsPerGemm;
}

std::vector<Fp8SlotSample> Fp8Context::read_statistics(const float* values, std::int64_t rows) {
    std::vector<Fp8SlotSample> samples(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i) {
        const float* row = values + kStatisticsColumns * i;
        Fp8SlotSample& sample = samples[static_cast<std::size_t>(i)];
        sample.amax = row[0];
        sample.scale = row[1];
        if (!std::isnan(row[2])) sample.saturated = row[2];
        if (!std::isnan(row[3])) sample.underflow = row[3];
        if (!std::isnan(row[4])) sample.rel_mse = row[4];
        for (std::size_t w = 0; w < kWhatIfCount; ++w) {
            const float value = row[5 + w];
            if (!std::isnan(value)) sample.what_if_rel_mse[w] = value;
        }
    }
    return samples;
}

}  // namespace tewb
