#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace tewb {

struct DistJob;

// Data parallelism's gradient all-reduce, overlapped with the backward as PyTorch's DDP does it: the
// parameters are grouped into buckets of about `bucket_bytes` in reverse order (the order their gradients
// arrive), each parameter's gradient accumulator gets a hook that marks the gradient in, and a bucket whose
// gradients are all in copies them into itself (one multi-tensor copy) and starts its all-reduce at once,
// while the backward is still running. Buckets start strictly in order, so every rank issues the same
// collectives in the same order. finish_step waits for them (the communication the backward did not hide;
// on NCCL the stream waits, not the host: DistJob.h, wait_for) and leaves each parameter's gradient as the
// average over ranks, a view into its bucket made once. The hooks run on the backward's thread, which also
// launches the backward's kernels, so a hook only marks its gradient in; the one that completes a bucket issues
// its copy and all-reduce (the host's time per step is what limits an eager step).
class GradientBuckets {
public:
    GradientBuckets(const std::vector<at::Tensor>& parameters, DistJob& job, std::size_t bucket_bytes);
    ~GradientBuckets();
    GradientBuckets(const GradientBuckets&) = delete;
    GradientBuckets& operator=(const GradientBuckets&) = delete;

    void begin_step();   // before the backward
    void finish_step();  // after it: the averaged gradients are in place when it returns

    struct StepStats {
        int buckets = 0;
        int started_during_backward = 0;  // started by a gradient hook, before finish_step
        double first_start_ms = -1;       // since begin_step
        double backward_end_ms = 0;       // finish_step's call, since begin_step
    };
    const StepStats& last_step() const { return stats_; }
    std::size_t bucket_count() const { return buckets_.size(); }
    std::uint64_t bytes() const;  // all buckets: what each rank all-reduces per step

private:
    struct Bucket {
        at::Tensor flat;
        std::vector<std::size_t> members;  // indices into params_
        int ready = 0;
        bool started = false;
        c10::intrusive_ptr<c10d::Work> work;
    };
    struct Slot {
        at::Tensor param;
        std::size_t bucket = 0;
        std::int64_t offset = 0;
        at::Tensor view;  // the parameter's place in its bucket, in the parameter's shape
        bool seen = false;
    };

    void on_gradient(std::size_t index);
    void start_ready_buckets(bool from_hook);
    void start(Bucket& bucket);

    DistJob& job_;
    std::vector<Slot> params_;
    std::vector<Bucket> buckets_;
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they hold the hooks
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    std::size_t next_to_start_ = 0;
    std::mutex mutex_;
    std::chrono::steady_clock::time_point step_start_;
    StepStats stats_;
};

}  // namespace tewb
