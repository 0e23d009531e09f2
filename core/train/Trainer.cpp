#include "core/train/Trainer.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <deque>
#include <map>
#include <new>
#include <optional>
#include <sstream>

#include <cxxabi.h>
#include <unistd.h>

#include <ATen/ops/from_blob.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#ifdef TEWB_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "core/common/Error.h"
#include "core/device/HostMemory.h"
#include "core/common/StepSegments.h"
#include "core/dist/DistJob.h"
#include "core/dist/GradientBuckets.h"
#include "core/common/TextTable.h"
#include "core/device/PeakThroughput.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/ledger/Ledger.h"
#include "core/model/AttentionBackend.h"
#include "core/model/FlopCount.h"
#include "core/config/MemoryEstimate.h"
#include "core/config/RunFacts.h"
#include "core/data/StepBatches.h"
#include "core/data/TokenBatches.h"
#include "core/data/TokenFile.h"
#include "core/model/MiniGpt.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/modules/ops/ParameterCopies.h"
#include "core/results/LedgerReport.h"
#include "core/results/RunWords.h"
#include "core/results/Summary.h"
#include "core/modules/autograd/Functions.h"
#include "core/train/AutocastScope.h"
#include "core/train/CpuThreads.h"
#include "core/train/FusedAdamW.h"
#include "core/train/QualityProbe.h"
#include "core/train/ResolvedRun.h"
#include "core/train/RunFailure.h"
#include "core/train/StepGraph.h"
#include "core/train/StepProfiler.h"
#include "core/train/StepTimer.h"

namespace tewb {

namespace {

using Clock = std::chrono::steady_clock;

std::string hostname() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

std::string shape_text(const RunConfig& c) {
    std::ostringstream out;
    out << "batch " << c.batch << ", seq " << c.model.seq << ", hidden " << c.model.hidden << ", " << c.model.layers
        << " layers, vocab " << c.model.vocab;
    return out.str();
}

// The training loop proper. Model, optimizer and activations live in this frame, so by the time an
// exception reaches Trainer::run they are freed and the GPU cache can be emptied.
class TrainingLoop {
public:
    TrainingLoop(const ResolvedRun& run, const TeOps& ops, RunRecord& record, const TrainerCallbacks& callbacks,
                 const std::atomic<bool>* cancel, bool& announced, DistJob* job, const TokenFile* file)
        : announced_(announced),
          run_(run),
          config_(run.config),
          facts_(run.facts),
          ops_(ops),
          record_(record),
          callbacks_(callbacks),
          cancel_(cancel),
          job_(job),
          file_(file),
          device_(run.cuda() ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(run.device_index)) : at::Device(at::kCPU)) {}

    void run() {
        torch::AutoGradMode grad_mode(true);
        if (job_ && device_.is_cpu()) {
            // CPU ranks on one machine share its cores: each takes its part instead of all of them each.
            set_cpu_threads(std::max(1, hardware_threads() / job_->world_size()));
        }
        const OpsScope ops_scope(ops_);  // the run's one choice of kernels or reference, for every module
        ParameterCopies parameter_copies;  // low-precision weights and biases, cast once per step (ParameterCopies.h)
        const ParameterCopiesScope copies_scope(parameter_copies);
        Session s(parameter_copies);
        set_up(s);
        for (int k = 0; k < config_.total_steps(); ++k) {
            if (stop_before_step()) break;
            if (k == config_.warmup) {
                s.launches_at_timed_start = ops_.kernel_launches();
                s.probe->start();
                s.timer->reset_peak_memory();
                if (s.fp8_state) s.fp8_state->take_inspection_ms();  // the timed steps' inspection only
            }
            const at::Tensor batch = s.data->batch(k);
            const at::Tensor loss = s.graph && k >= config_.warmup ? graph_step(s, k, batch) : eager_step(s, k, batch);
            std::function<at::Tensor()> statistics;
            if (s.fp8_state) statistics = [&] { return s.fp8_state->statistics(); };
            std::optional<StepReading> reading = s.timer->end_step(k, loss, statistics);
            // After the step's end is taken and before the next step begins: no step's time includes it.
            if (s.next_evaluation < s.evaluations.size() && s.evaluations[s.next_evaluation] == k + 1) {
                evaluate(s, k);
                ++s.next_evaluation;
            }
            if (reading) report(*reading);
        }
        finish(s);
    }

private:
    // What one run's steps share, created by set_up in this order and destroyed in the reverse one.
    struct Session {
        explicit Session(ParameterCopies& copies) : parameter_copies(copies) {}

        ParameterCopies& parameter_copies;
        std::shared_ptr<CausalLm> model;
        std::unique_ptr<FusedAdamW> optimizer;
        std::unique_ptr<StepBatches> data;
        std::vector<int> evaluations;  // a token file's: the steps (1-based) whose end evaluates the held-out loss
        std::size_t next_evaluation = 0;
        std::unique_ptr<GradientBuckets> buckets;
        bool fp8 = false;
        bool autocast = false;
        Fp8ScopeSettings fp8_settings;
        std::shared_ptr<Fp8Context> fp8_state;
        GraphDecision graph_plan;
        std::unique_ptr<StepGraph> graph;
        at::Tensor static_batch;  // the graph's input: each timed step's batch is copied in before the replay
        at::Tensor static_loss;   // the graph's loss, rewritten by every replay
        std::unique_ptr<StepTimer> timer;
        std::uint64_t launches_at_timed_start = 0;
        std::unique_ptr<QualityProbe> probe;  // what else the machine and the GPU did during the timed steps
    };

    // The model (weights broadcast from rank 0 in a job), the optimizer, the data, a job's gradient buckets,
    // the FP8 state; then on_start, then a CUDA graph run's side stream, the step timer and the clock.
    void set_up(Session& s) {
        s.model = make_model(config_.backend, config_.model, config_.seed);
        s.model->to(device_);
        if (job_) {
            std::vector<at::Tensor> state = s.model->parameters();
            for (const at::Tensor& buffer : s.model->buffers()) state.push_back(buffer);
            torch::NoGradGuard no_grad;
            broadcast_from_rank0(*job_, state);
        }
        // The te backend steps through its ops (the fused ops: one launch, the bfloat16 copies included); torch
        // through LibTorch's fused AdamW.
        s.optimizer = std::make_unique<FusedAdamW>(s.model->parameters(), AdamWSettings{config_.lr},
                                                   config_.backend == Backend::Te ? &ops_ : nullptr);
        s.data = std::make_unique<StepBatches>(config_, file_, device_, job_ ? job_->rank() : 0);
        if (file_) s.evaluations = evaluation_steps(config_.total_steps(), config_.data.eval_every);
        if (job_) {
            s.buckets = std::make_unique<GradientBuckets>(s.model->parameters(), *job_,
                                                          static_cast<std::size_t>(config_.dist.bucket_mb * (1 << 20)));
        }
        s.fp8 = facts_.precision == Precision::Fp8;
        // FP8's non-GEMM math is BF16 on the CPU too (RunFacts), so that a CPU run's dtypes, bytes and saved bytes
        // are the GPU's (the launch ledger's FP8 targets are held there).
        s.autocast = facts_.compute == ComputeDtype::BFloat16;
        s.fp8_settings = Fp8ScopeSettings{config_.fp8, config_.inspect_fp8};
        s.fp8_state = s.fp8 ? s.model->fp8_context() : nullptr;
        if (s.fp8_state) {
            record_.fp8_slots = s.fp8_state->quantized_slots(config_.fp8);
            if (job_ && config_.dist.amax_reduction) {
                DistJob* job = job_;
                s.fp8_state->set_amax_reducer([job](const at::Tensor& staged) { max_over_ranks_nan_wins(*job, staged); });
            }
        }
        announce();

        // A CUDA graph run lives on a side stream from here on (StepGraph.h); the warm-up steps run there eagerly.
        s.graph_plan = run_.graph;
        s.graph = s.graph_plan.use ? make_step_graph(device_) : nullptr;
        // The step's AdamW writes the FP8 weight copies the next forward reads, into new tensors: a captured
        // forward would read the buffers of the step before the capture in every replay. A graph run's forward
        // casts them itself (into the graph's pool), as before that lever.
        s.optimizer->set_write_fp8_copies(s.graph == nullptr && !callbacks_.graph_shaped_steps);
        s.timer = make_step_timer(device_, config_.total_steps(), s.fp8_state ? s.fp8_state->statistics_rows() : 0);
        s.timer->reset_peak_memory();
        s.probe = device_.is_cuda() ? std::make_unique<QualityProbe>(device_.index(), job_ ? idle_job_processes_on(job_->env, device_.index())
                                                                                           : std::vector<int>{})
                                    : std::make_unique<QualityProbe>(std::nullopt);
        start_ = Clock::now();
    }

    // Whether the run stops before its next step: a cancel (in a job, one every rank agreed on after the same step).
    bool stop_before_step() {
        const bool cancel_here = cancel_ != nullptr && cancel_->load(std::memory_order_relaxed);
        if (job_) {
            cancel_asked_ = cancel_here;  // agreed on inside the step; every rank stops after the same one
            // The agreed flag of the step before the last: its all-reduce finished before the last step's work, so
            // reading it does not wait for the GPU (reading the last step's flag inside it made the host wait for the
            // backward and the all-reduces before it could launch the optimizer). Every rank reads the same step's
            // flag before the same step, so every rank still stops after the same one: two steps after the cancel.
            while (agreed_cancels_.size() > 1) {
                if (agreed_cancels_.front().item<float>() > 0) cancel_agreed_ = true;
                agreed_cancels_.pop_front();
            }
            if (cancel_agreed_) {
                record_.status = RunStatus::Cancelled;
                return true;
            }
        } else if (cancel_here) {
            record_.status = RunStatus::Cancelled;
            return true;
        }
        return false;
    }

    // One training step as it is run eagerly and as it is captured: forward, loss, backward (FP8: the
    // backward slots update when it finishes), AdamW.
    at::Tensor train_step(Session& s, const at::Tensor& batch) {
        const at::Tensor inputs = batch.narrow(1, 0, config_.model.seq);
        const at::Tensor targets = batch.narrow(1, 1, config_.model.seq);
        at::Tensor loss;
        {
            AutocastScope autocast_scope(s.autocast, device_.type());
            Fp8Scope fp8_scope(s.fp8, s.fp8_settings);
            loss = s.model->loss(inputs, targets);
        }
        s.parameter_copies.release_forward_fp8();  // the backward reads the weights' transposed FP8 copies only
        enter_segment(StepSegment::Backward);
        if (s.buckets) s.buckets->begin_step();
        // A seed of our own: the engine makes none, and a fused head knows its gradient is exactly 1.
        loss.backward(unit_loss_gradient(loss.device()));
        if (s.buckets) {
            enter_segment(StepSegment::Communication);
            s.buckets->finish_step();
            loss = agree_on_loss_and_cancel(loss.detach());
        }
        enter_segment(StepSegment::Optimizer);
        {
            const LedgerScope optimizer_scope("optimizer");
            s.optimizer->step();
        }
        return loss.detach();
    }

    // A timed step of a graph run: the first captures the step (and says what the graph holds), the others
    // copy their batch in and replay it.
    at::Tensor graph_step(Session& s, int k, const at::Tensor& batch) {
        if (!s.graph->captured()) {
            // Gradients start unset, so the captured backward allocates them in the graph's memory,
            // where every replay rewrites them (no zero_grad between replays).
            s.static_batch = batch.clone();
            s.optimizer->zero_grad();
            s.graph->capture([&] { s.static_loss = train_step(s, s.static_batch); });
            record_.execution.graph_kernels = s.graph->kernel_nodes();
            record_.execution.graph_pool_bytes = s.graph->pool_bytes();
            record_.execution.cuda_graph_note = s.graph_plan.reason + "; " + std::to_string(s.graph->kernel_nodes()) +
                                                " kernels per step";
            if (const std::optional<std::uint64_t> pool = s.graph->pool_bytes()) {
                record_.execution.cuda_graph_note +=
                    "; its memory pool " + format_fixed(static_cast<double>(*pool) / (1 << 20), 1) + " MiB (part of the peak memory)";
            }
        } else {
            s.static_batch.copy_(batch, /*non_blocking=*/true);
        }
        s.timer->begin_step(k, /*segmented=*/false);
        s.graph->replay();
        return s.static_loss;
    }

    // An eager step, timed by segment; the ledger's step also records every launch and byte.
    at::Tensor eager_step(Session& s, int k, const at::Tensor& batch) {
        s.timer->begin_step(k, /*segmented=*/true);
        const SegmentSinkScope segments(s.timer.get());
        // The ledger's callbacks cost time: one eager step records it, never a timed one when a warm-up
        // step exists.
        std::optional<LedgerRecording> ledger;
        if (k == ledger_step()) ledger.emplace(device_.is_cuda(), device_.is_cuda() ? device_.index() : 0);
        {
            const LedgerScope optimizer_scope("optimizer");
            s.optimizer->zero_grad();
        }
        const at::Tensor loss = train_step(s, batch);
        if (ledger) record_ledger(ledger->finish(), k);
        return loss;
    }

    // After the last step: the timer's last reading, a job's figures, the weights' digest, launches per step,
    // the inspection's cost, a traced step when asked for, and the status.
    void finish(Session& s) {
        if (auto reading = s.timer->finish()) {
            report(*reading);
        }
        s.probe->stop();
        std::uint64_t sibling_jiffies = 0;  // a job's other ranks: CPU time of the measurement, not of other work
        if (job_) {
            gather_job_figures(s.buckets->last_step(), static_cast<int>(s.buckets->bucket_count()));
            if (record_.execution.dist) record_.execution.dist->allreduce_bytes = s.buckets->bytes();
            const auto own = gather_at_rank0(*job_, "own_cpu_jiffies", {static_cast<double>(s.probe->own_jiffies())});
            for (std::size_t r = 1; r < own.size(); ++r) {
                if (!own[r].empty()) sibling_jiffies += static_cast<std::uint64_t>(own[r].front());
            }
        }
        record_.execution.quality = s.probe->quality(record_.steps, sibling_jiffies);
        WeightsDigest digest;
        for (const at::Tensor& p : s.model->parameters()) {
            const at::Tensor d = p.detach().to(at::kDouble);
            digest.sum += d.sum().item<double>();
            digest.sum_abs += d.abs().sum().item<double>();
            digest.sum_squares += d.pow(2).sum().item<double>();
        }
        record_.execution.weights_digest = digest;
        const int timed = static_cast<int>(record_.steps.size()) - config_.warmup;
        if (!s.graph && !ops_.is_reference() && config_.backend == Backend::Te && timed > 0) {
            record_.execution.fused_launches_per_step =
                static_cast<double>(ops_.kernel_launches() - s.launches_at_timed_start) / timed;
        }
        if (s.fp8_state && config_.inspect_fp8) record_.fp8_block_scales = s.fp8_state->block_scale_histograms();
        if (s.fp8_state && config_.inspect_fp8 && device_.is_cpu() && timed > 0) {
            record_.execution.fp8_inspection_ms = s.fp8_state->take_inspection_ms() / timed;
        }
        if (!callbacks_.profile_trace.empty() && record_.status == RunStatus::Running) {
            profile_one_step([&] {
                const int k = config_.total_steps();
                const at::Tensor batch = s.data->batch(k);
                if (s.graph && s.graph->captured()) {
                    s.static_batch.copy_(batch, /*non_blocking=*/true);
                    s.graph->replay();
                } else {
                    s.optimizer->zero_grad();
                    train_step(s, batch);
                }
            });
        }
        if (record_.status == RunStatus::Running) {
            record_.status = RunStatus::Finished;
        }
    }

    // `te-bench run --profile`: one more step of the timed steps' kind, traced, after the statistics and the
    // weights digest (so neither changes). The run is kept when the trace fails; the record says why.
    void profile_one_step(const std::function<void()>& step) {
        try {
            synchronize_device();
            std::optional<StepProfiler> profiler(std::in_place, device_.is_cuda());
            const Clock::time_point begin = Clock::now();
            step();
            synchronize_device();
            const double step_ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
            record_.execution.kernel_profile = profiler->finish(config_.total_steps() + 1, step_ms, callbacks_.profile_trace);
        } catch (const DataError& e) {
            record_.execution.kernel_profile_error = e.what();
        }
    }

    void synchronize_device() const {
#ifdef TEWB_TORCH_HAS_CUDA
        if (device_.is_cuda()) c10::cuda::device_synchronize();
#endif
    }

    // The held-out tail's mean token loss (validation_offsets; every sequence weighs the same), stored for step k's
    // report. No grad; the run's autocast but no FP8 casts, and casts of its own (a ParameterCopies of the evaluation's),
    // so the FP8 scaling state (amax histories, scales) and the low-precision copies training continues from are as
    // they were: for an FP8 run it is the loss of its FP8-trained weights in BF16. One read back from the device.
    void evaluate(Session& s, int k) {
        torch::NoGradGuard no_grad;
        ParameterCopies own_copies;
        const ParameterCopiesScope copies_scope(own_copies);
        const AutocastScope autocast_scope(s.autocast, device_.type());
        const std::int64_t seq = config_.model.seq;
        at::Tensor sum;
        std::int64_t rows = 0;
        for (const at::Tensor& chunk : s.data->validation()) {
            const at::Tensor loss = s.model->loss(chunk.narrow(1, 0, seq), chunk.narrow(1, 1, seq)).to(at::kDouble) * chunk.size(0);
            sum = sum.defined() ? sum + loss : loss;
            rows += chunk.size(0);
        }
        if (rows > 0) val_losses_[k] = sum.item<double>() / static_cast<double>(rows);
    }

    // The ledger's step: the last warm-up step, or the first timed one when there is no warm-up.
    int ledger_step() const { return config_.warmup > 0 ? config_.warmup - 1 : 0; }

    void record_ledger(const LedgerMeasurement& measured, int k) {
        std::vector<LedgerRow> rows = measured.rows;
        std::string source = "eager step " + std::to_string(k + 1) +
                             (config_.warmup > 0 ? " (the last warm-up step)" : " (the first timed step: no warm-up steps)");
        if (run_.graph.use) source += "; the timed steps replay a CUDA graph";
        std::vector<std::int64_t> saved = measured.saved_bytes_per_layer;
        saved.resize(static_cast<std::size_t>(config_.model.layers), 0);
        record_.execution.ledger = make_ledger(std::move(rows), config_.model.layers, std::move(saved), k + 1, source);
        record_.execution.ledger->host_waits = measured.host_waits;
    }

    // A job's loss is the mean over its ranks, and a cancel on any rank is every rank's: one all-reduce
    // carries both (the flag read on the host two steps later, stop_before_step).
    at::Tensor agree_on_loss_and_cancel(const at::Tensor& loss) {
        const at::Tensor both = at::stack({loss.to(at::kFloat).reshape({}), at::scalar_tensor(cancel_asked_ ? 1.0f : 0.0f,
                                                                                              loss.options().dtype(at::kFloat))});
        const at::Tensor summed = mean_over_ranks(*job_, both);
        agreed_cancels_.push_back(summed[1]);  // read two steps later (stop_before_step), not here
        return summed[0].to(loss.scalar_type());
    }

    // After the last step, on every rank: each rank's step times reach rank 0, whose record gets them per
    // step and the job's figures.
    void gather_job_figures(const GradientBuckets::StepStats& last, int bucket_count) {
        std::vector<double> mine;
        for (const StepMetrics& s : record_.steps) mine.push_back(s.step_ms);
        const std::vector<std::vector<double>> all = gather_at_rank0(*job_, "step_ms", mine);
        DistExecution d;
        d.world_size = job_->world_size();
        d.backend = std::string(to_string(config_.dist.backend));
        d.bucket_mb = config_.dist.bucket_mb;
        d.buckets = bucket_count;
        d.amax_reduction = config_.dist.amax_reduction && config_.precision == Precision::Fp8;
        d.buckets_started_during_backward = last.started_during_backward;
        for (std::size_t r = 0; r < all.size(); ++r) {
            double sum = 0;
            int timed = 0;
            for (std::size_t i = 0; i < all[r].size() && i < record_.steps.size(); ++i) {
                record_.steps[i].rank_ms.resize(all.size());
                record_.steps[i].rank_ms[r] = all[r][i];
                if (record_.steps[i].phase == Phase::Timed) sum += all[r][i], ++timed;
            }
            d.rank_mean_ms.push_back(timed > 0 ? sum / timed : 0.0);
        }
        record_.execution.dist = d;
    }

    // on_start, once, after the model exists (so an FP8 record already lists its slots).
    void announce() {
        announced_ = true;
        if (callbacks_.on_start) {
            callbacks_.on_start(record_);
        }
    }

    void report(StepReading& reading) {
        const int k = reading.step;
        if (!std::isfinite(reading.loss)) {
            std::ostringstream message;
            message << "loss became " << reading.loss << " at step " << k + 1 << " (" << to_string(config_.precision)
                    << ", lr " << config_.lr << "); lower --lr or use --precision fp32";
            throw NumericsError(message.str());
        }
        StepMetrics metrics;
        metrics.step = k + 1;
        metrics.phase = k < config_.warmup ? Phase::Warmup : Phase::Timed;
        metrics.loss = reading.loss;
        metrics.step_ms = reading.step_ms;
        metrics.mem_bytes = reading.mem_bytes;
        metrics.tokens_per_s =
            reading.step_ms > 0 ? static_cast<double>(config_.tokens_per_step()) / (reading.step_ms / 1000.0) : 0.0;
        metrics.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
        metrics.fp8 = std::move(reading.fp8);
        metrics.breakdown = reading.breakdown;
        if (const auto val = val_losses_.find(k); val != val_losses_.end()) {
            metrics.val_loss = val->second;
            val_losses_.erase(val);
        }
        record_.steps.push_back(metrics);
        if (callbacks_.on_step) {
            callbacks_.on_step(metrics);
        }
    }

    bool& announced_;
    const ResolvedRun& run_;
    const RunConfig& config_;
    const RunFacts& facts_;
    const TeOps& ops_;
    RunRecord& record_;
    const TrainerCallbacks& callbacks_;
    const std::atomic<bool>* cancel_;
    DistJob* job_;
    const TokenFile* file_;
    std::map<int, double> val_losses_;  // evaluated steps (0-based) not reported yet (a GPU step is read one step late)
    bool cancel_asked_ = false;
    bool cancel_agreed_ = false;
    std::deque<at::Tensor> agreed_cancels_;  // each step's agreed cancel flag (on the device) not read yet, oldest first
    at::Device device_;
    Clock::time_point start_;
};

// The run's ops, as its facts decided (a torch run's modules use none: it gets the reference): carried
// (OpsScope) to every module of the run.
const TeOps& ops_for_run(const RunFacts& facts) {
    return ops_of_kind(facts.te_ops.value_or(OpsKind::Reference));
}

std::string implementation_text(const ResolvedRun& run, const TeOps& ops) {
    const RunConfig& c = run.config;
    const RunFacts& facts = run.facts;
    const bool graph = run.graph.use;
    const std::string model = (c.backend == Backend::Te ? "te-" + std::string(ops.name()) : std::string("torch")) +
                              (graph ? ", cuda graph" : c.backend == Backend::Te ? "" : "-eager");
    switch (c.precision) {
        case Precision::Bf16: return model + ", bf16 autocast";
        case Precision::Fp8: {
            std::ostringstream out;
            out << model << ", " << fp8_implementation_words(facts.fp8_emulated) << " (" << to_string(c.fp8.scaling) << " scaling, "
                << to_string(c.fp8.format);
            if (c.fp8.scaling == ScalingKind::Block) {
                out << ", 1x128 / 128x128 blocks, " << (c.fp8.block_power_of_two ? "power-of-two" : "exact") << " scales";
            }
            if (c.fp8.scaling == ScalingKind::Mxfp8) out << ", 1x32 blocks, E8M0 scales (OCP rule)";
            if (c.fp8.scaling == ScalingKind::Nvfp4) {
                out << ", E2M1 values, E4M3 scales per 1x16 (16x16 for weights) and a float32 tensor scale, stochastic rounding "
                    << (c.fp8.nvfp4_stochastic_rounding ? "on" : "off") << ", Hadamard transform "
                    << (c.fp8.nvfp4_hadamard ? "on" : "off");
            }
            if (c.fp8.scaling == ScalingKind::Delayed) {
                out << ", history " << c.fp8.amax_history_len << ", " << to_string(c.fp8.algo) << ", margin " << c.fp8.margin;
                if (c.fp8.calibrate_first_step) out << ", first step calibrated";
            }
            out << "), bf16 autocast";
            return out.str();
        }
        default: return model + ", fp32";
    }
}

RunRecord run_header(const ResolvedRun& run, const DeviceInfo& device, const TeOps& ops) {
    const RunConfig& resolved = run.config;
    const RunFacts& facts = run.facts;
    RunRecord record;
    record.id = make_run_id();
    record.created_at = utc_timestamp_now();
    record.config = resolved;
    record.environment.device = device;
    const Capability capability = classify(device);
    record.environment.mode = capability.mode;
    record.environment.reasons = capability.reasons();
    record.environment.build = build_info();
    record.environment.hostname = hostname();

    const bool cuda = run.cuda();
    Execution& execution = record.execution;
    execution.device = run.device_name();
    execution.implementation = implementation_text(run, ops);
    if (facts.te_ops) execution.te_impl = std::string(to_string(*facts.te_ops));
    execution.fp8_emulated = facts.fp8_emulated;
    execution.cuda_graph = run.graph.use;
    execution.cuda_graph_note = run.graph.reason;
    execution.memory_metric = cuda ? MemoryMetric::CudaPeakAllocated : MemoryMetric::CpuPeakRss;
    execution.flops_per_step = training_flops_per_step(resolved.model, resolved.batch);
    // The attention's inputs come out of the qkv GEMM in the compute dtype.
    const bool bf16 = facts.compute == ComputeDtype::BFloat16;
    execution.attention_backend = attention_backend(resolved.model, resolved.batch, bf16 ? at::kBFloat16 : at::kFloat,
                                                    cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(run.device_index))
                                                         : c10::Device(c10::kCPU),
                                                    run.config.backend == Backend::Te ? &ops : nullptr);
    if (cuda) {
        if (const auto peak = find_peak_throughput(device.gpu_name)) {
            const double value = resolved.precision == Precision::Fp32 ? peak->fp32_tflops : peak->bf16_tflops;
            if (value > 0) {
                execution.peak_tflops = value;
                execution.peak_source = peak->device + (resolved.precision == Precision::Fp32 ? " FP32" : " BF16 dense");
            }
        }
    }
    return record;
}

}  // namespace

void release_cached_gpu_memory() {
#ifdef TEWB_TORCH_HAS_CUDA
    c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

RunRecord make_run_header(const ResolvedRun& run, const DeviceInfo& device) {
    return run_header(run, device, ops_for_run(run.facts));
}

namespace {
// "rank 1: the job failed at step 7: <cause>", the cause's own "rank N: " kept where it has one.
std::string job_failure(const DistJob& job, const RunRecord& record, const std::string& cause) {
    const std::string step = "the job failed at step " + std::to_string(record.steps.size() + 1) + ": ";
    if (cause.rfind(job.who(), 0) == 0) return job.who() + step + cause.substr(job.who().size());
    return job.who() + step + cause;
}

std::string out_of_memory_message(const RunConfig& resolved, const RunRecord& record, const DeviceInfo& device,
                                  const char* where) {
    const MemoryEstimate need = estimate_training_memory(resolved);
    std::string message = std::string(where) + " out of memory at step " + std::to_string(record.steps.size() + 1) +
                          " (" + shape_text(resolved) + "; estimated need " + format_bytes(need.total_bytes());
    if (std::string_view(where) == "GPU" && device.memory_total_bytes > 0) {
        message += ", GPU memory " + format_bytes(device.memory_total_bytes);
    }
    return message + "): lower --batch, --seq or the model size";
}
}  // namespace

Trainer::Trainer(DeviceInfo device) : device_(std::move(device)) {}

namespace {
void refuse_a_job(const RunConfig& config) {
    if (config.dist.enabled()) {
        throw ConfigError("--nproc " + std::to_string(config.dist.nproc) +
                          ": a data-parallel run needs its processes (te-bench run --nproc, or a launcher such as torchrun)");
    }
}
}  // namespace

RunRecord Trainer::run(const RunConfig& config, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) const {
    refuse_a_job(config);  // before resolving: a job's other problems are not this one's
    return run(resolve_run(config, device_), callbacks, cancel);
}

RunRecord Trainer::run(const ResolvedRun& run, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) const {
    refuse_a_job(run.config);
    return run_impl(run, callbacks, cancel, nullptr);
}

RunRecord Trainer::run(const ResolvedRun& run, DistJob& job, const TrainerCallbacks& callbacks,
                       const std::atomic<bool>* cancel) const {
    return run_impl(run, callbacks, cancel, &job);
}

RunRecord Trainer::run_impl(const ResolvedRun& run, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel,
                            DistJob* job) const {
    const RunConfig& resolved = run.config;
    const RunFacts& facts = run.facts;
    // Free memory is the one fact that changes between deciding a run and starting it (a queued run, a repeat).
    if (const auto problem = memory_problem(resolved, device_, host_memory_available(), run.scope)) {
        throw ConfigError(*problem);
    }
    const TeOps& ops = ops_for_run(facts);
    RunRecord record = run_header(run, device_, ops);
    // Checked and described before any work, so a bad file is a ConfigError and on_start sees what it holds.
    std::optional<TokenFile> file;
    if (resolved.data.from_file()) {
        try {
            file.emplace(resolved.data, TokenFileNeeds{resolved.model.vocab, resolved.model.seq + 1,
                                                       static_cast<std::int64_t>(resolved.batch) * resolved.dist.world_size(), cancel});
        } catch (const TokenFileCancelled& e) {  // Ctrl-C while a large file is hashed: a cancelled run of no steps
            record.status = RunStatus::Cancelled;
            record.message = e.what();
            if (callbacks.on_start) callbacks.on_start(record);
            record.summary = summarize(record.steps, record.config, record.execution);
            return record;
        }
        record.data_file = file->info();
    }
    const bool cuda = facts.device == DeviceKind::Cuda;
    const auto fail = [&](ErrorKind kind, const std::string& message) {
        mark_failed(record, kind, message);
        if (cuda) release_cached_gpu_memory();
    };
    bool announced = false;
    clear_fallbacks();
    try {
        TrainingLoop(run, ops, record, callbacks, cancel, announced, job, file ? &*file : nullptr).run();
    } catch (const ConfigError&) {
        throw;
    } catch (const abi::__forced_unwind&) {
        throw;  // a thread being cancelled, not a failed run
    } catch (...) {  // every other exception, a non-std one included, ends this run only
        const RunFailure f = classify_failure(std::current_exception(), job != nullptr, cuda);
        const std::string step = std::to_string(record.steps.size() + 1);
        switch (f.kind) {
            case ErrorKind::OutOfMemory:
                // LibTorch's own text is the caching allocator's statistics: not what a user can act on.
                fail(f.kind, out_of_memory_message(resolved, record, device_, f.host_memory ? "host" : "GPU"));
                break;
            case ErrorKind::Distributed:
                fail(f.kind, job != nullptr ? job_failure(*job, record, f.detail) : f.detail);
                break;
            case ErrorKind::Numerics: fail(f.kind, f.detail); break;
            case ErrorKind::Runtime:
                fail(f.kind, (f.from_libtorch ? "LibTorch error at step " : "error at step ") + step + ": " + f.detail);
                break;
        }
    }
    if (!announced && callbacks.on_start) {  // building the model failed: on_start still comes, once
        callbacks.on_start(record);
    }
    if (record.execution.cuda_graph && !record.execution.graph_kernels) {  // planned, never captured
        record.execution.cuda_graph = false;
        record.execution.cuda_graph_note = "no CUDA graph: the run ended before the capture (" +
                                           std::to_string(record.steps.size()) + " steps ran eagerly)";
    }
    for (const FallbackTally& f : fallbacks_noted()) record.execution.fallbacks.push_back({f.op, f.reason, f.count});
    record.summary = summarize(record.steps, record.config, record.execution);
    return record;
}

}  // namespace tewb
