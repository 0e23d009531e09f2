#include "core/dist/GradientBuckets.h"

#include <ATen/ops/_foreach_copy.h>
#include <ATen/ops/_foreach_zero.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "core/common/Error.h"
#include "core/dist/DistJob.h"

namespace tewb {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GradientBuckets::GradientBuckets(const std::vector<at::Tensor>& parameters, DistJob& job, std::size_t bucket_bytes)
    : job_(job) {
    // Reverse order: the last layers' gradients come first in the backward. A bucket holds one dtype on one
    // device and at least one parameter; the next parameter that would take it past `bucket_bytes` opens a new one.
    std::int64_t used = 0;  // elements in the last bucket
    for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
        if (!it->requires_grad()) continue;
        const bool same_kind = !buckets_.empty() && params_[buckets_.back().members.front()].param.scalar_type() == it->scalar_type() &&
                               params_[buckets_.back().members.front()].param.device() == it->device();
        const std::size_t after = static_cast<std::size_t>(used + it->numel()) * it->element_size();
        if (!same_kind || after > bucket_bytes) {
            buckets_.emplace_back();
            used = 0;
        }
        Slot slot;
        slot.param = *it;
        slot.bucket = buckets_.size() - 1;
        slot.offset = used;
        used += it->numel();
        buckets_.back().members.push_back(params_.size());
        params_.push_back(slot);
    }
    for (Bucket& bucket : buckets_) {
        std::int64_t total = 0;
        for (const std::size_t m : bucket.members) total += params_[m].param.numel();
        bucket.flat = at::zeros({total}, params_[bucket.members.front()].param.options().requires_grad(false));
        for (const std::size_t m : bucket.members) {
            Slot& slot = params_[m];
            slot.view = bucket.flat.narrow(0, slot.offset, slot.param.numel()).view(slot.param.sizes());
        }
    }
    for (std::size_t i = 0; i < params_.size(); ++i) {
        std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(params_[i].param);
        std::weak_ptr<bool> alive = alive_;
        accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i, alive](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
                if (alive.lock()) on_gradient(i);
                return outputs;
            }));
        accumulators_.push_back(std::move(accumulator));
    }
}

GradientBuckets::~GradientBuckets() {
    *alive_ = false;
    alive_.reset();  // the hooks see the weak pointer expire and do nothing
}

std::uint64_t GradientBuckets::bytes() const {
    std::uint64_t total = 0;
    for (const Bucket& bucket : buckets_) total += static_cast<std::uint64_t>(bucket.flat.numel()) * bucket.flat.element_size();
    return total;
}

void GradientBuckets::begin_step() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (Bucket& bucket : buckets_) {
        bucket.ready = 0;
        bucket.started = false;
        bucket.work.reset();
    }
    for (Slot& slot : params_) slot.seen = false;
    next_to_start_ = 0;
    stats_ = StepStats{};
    stats_.buckets = static_cast<int>(buckets_.size());
    step_start_ = std::chrono::steady_clock::now();
}

void GradientBuckets::on_gradient(std::size_t index) {
    const std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = params_[index];
    if (slot.seen) return;  // a parameter used twice in one step: its accumulator fires once per use
    if (!slot.param.grad().defined()) return;
    slot.seen = true;
    ++buckets_[slot.bucket].ready;
    start_ready_buckets(/*from_hook=*/true);
}

void GradientBuckets::start(Bucket& bucket) {
    std::vector<at::Tensor> places;
    std::vector<at::Tensor> grads;
    for (const std::size_t m : bucket.members) {
        const Slot& slot = params_[m];
        if (!slot.seen) continue;  // zeroed by finish_step
        const at::Tensor& grad = slot.param.grad();
        if (grad.is_same(slot.view)) continue;  // already in place
        places.push_back(slot.view);
        grads.push_back(grad);
    }
    if (!places.empty()) at::_foreach_copy_(places, grads);
    std::vector<at::Tensor> one{bucket.flat};
    c10d::AllreduceOptions options;
    options.reduceOp = average_op(job_);
    options.timeout = job_.timeout;
    run_collective(job_, "all-reducing a gradient bucket", [&] { bucket.work = job_.group->allreduce(one, options); });
    bucket.started = true;
}

void GradientBuckets::start_ready_buckets(bool from_hook) {
    while (next_to_start_ < buckets_.size()) {
        Bucket& bucket = buckets_[next_to_start_];
        if (from_hook && bucket.ready < static_cast<int>(bucket.members.size())) return;
        start(bucket);
        if (from_hook) {
            if (stats_.first_start_ms < 0) stats_.first_start_ms = ms_since(step_start_);
            ++stats_.started_during_backward;
        }
        ++next_to_start_;
    }
}

void GradientBuckets::finish_step() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stats_.backward_end_ms = ms_since(step_start_);
        // Parameters that got no gradient this step (unused) contribute zeros, so every rank's buckets match.
        std::vector<at::Tensor> unused;
        for (Slot& slot : params_) {
            if (!slot.seen) unused.push_back(slot.view);
        }
        if (!unused.empty()) at::_foreach_zero_(unused);
        start_ready_buckets(/*from_hook=*/false);
    }
    run_collective(job_, "waiting for the gradient all-reduce", [&] {
        for (Bucket& bucket : buckets_) wait_for(job_, *bucket.work);
    });
    if (average_needs_division(job_)) {
        const double world = static_cast<double>(job_.world_size());
        for (Bucket& bucket : buckets_) bucket.flat.div_(world);
    }
    for (Slot& slot : params_) {
        if (!slot.param.grad().is_same(slot.view)) slot.param.mutable_grad() = slot.view;
    }
}

}  // namespace tewb
