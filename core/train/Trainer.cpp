#include "core/train/Trainer.h"

#include <chrono>
#include <cmath>
#include <new>
#include <sstream>

#include <unistd.h>

#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#ifdef TEWB_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/common/Error.h"
#include "core/common/StepSegments.h"
#include "core/common/TextTable.h"
#include "core/device/PeakThroughput.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/model/FlopCount.h"
#include "core/model/MemoryEstimate.h"
#include "core/model/MiniGpt.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/results/Summary.h"
#include "core/train/AutocastScope.h"
#include "core/train/FusedAdamW.h"
#include "core/train/StepGraph.h"
#include "core/train/StepTimer.h"
#include "core/train/SyntheticData.h"

namespace tewb {

namespace {

using Clock = std::chrono::steady_clock;

// A pool of distinct batches the steps cycle through; capped so huge configurations do not spend
// memory on data (the model learns the corpus either way).
constexpr int kMaxPoolBatches = 64;
constexpr std::int64_t kMaxPoolBytes = 256LL << 20;

std::string hostname() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

std::string shape_text(const RunConfig& c) {
    std::ostringstream out;
    out << "batch " << c.batch << ", seq " << c.model.seq << ", hidden " << c.model.hidden << ", " << c.model.layers
        << " layers, vocab " << c.model.vocab;
    return out.str();
}

struct TrainingData {
    at::Tensor pool;  // [batches, batch, seq + 1] int64 on the run's device
    int batches = 0;
};

TrainingData make_training_data(const RunConfig& c, const at::Device& device) {
    const std::int64_t row = c.model.seq + 1;
    const std::int64_t batch_bytes = static_cast<std::int64_t>(c.batch) * row * 8;
    const int batches = static_cast<int>(std::max<std::int64_t>(
        1, std::min<std::int64_t>({c.total_steps(), kMaxPoolBatches, kMaxPoolBytes / std::max<std::int64_t>(batch_bytes, 1)})));
    std::vector<std::int64_t> tokens = make_synthetic_tokens({c.model.vocab, batches * c.batch, static_cast<int>(row), c.seed});
    at::Tensor cpu = at::from_blob(tokens.data(), {batches, c.batch, row}, at::kLong).clone();
    return {cpu.to(device), batches};
}

// The training loop proper. Model, optimizer and activations live in this frame, so by the time an
// exception reaches Trainer::run they are freed and the GPU cache can be emptied.
class TrainingLoop {
public:
    TrainingLoop(const RunConfig& config, const TeOps& ops, RunRecord& record, const TrainerCallbacks& callbacks,
                 const std::atomic<bool>* cancel, bool& announced)
        : announced_(announced),
          config_(config),
          ops_(ops),
          record_(record),
          callbacks_(callbacks),
          cancel_(cancel),
          device_(config.device == DeviceKind::Cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU)) {}

    void run() {
        torch::AutoGradMode grad_mode(true);
        const OpsScope ops_scope(ops_);  // the run's one choice of kernels or reference, for every module
        std::shared_ptr<CausalLm> model = make_model(config_.backend, config_.model, config_.seed);
        model->to(device_);
        FusedAdamW optimizer(model->parameters(), AdamWSettings{config_.lr});
        const TrainingData data = make_training_data(config_, device_);
        const bool fp8 = config_.precision == Precision::Fp8;
        // FP8 on a GPU keeps the non-GEMM math in BF16, as Transformer Engine is used; on the CPU (emulation) in FP32.
        const bool autocast = config_.precision == Precision::Bf16 || (fp8 && device_.is_cuda());
        const Fp8ScopeSettings fp8_settings{config_.fp8, config_.inspect_fp8};
        const std::shared_ptr<Fp8Context> fp8_state = fp8 ? model->fp8_context() : nullptr;
        if (fp8_state) {
            record_.fp8_slots = fp8_state->quantized_slots(config_.fp8);
        }
        announce();

        // A CUDA graph run lives on a side stream from here on (StepGraph.h); the warm-up steps run there eagerly.
        const GraphDecision graph_plan = decide_cuda_graph(config_);
        const std::unique_ptr<StepGraph> graph = graph_plan.use ? make_step_graph(device_) : nullptr;
        at::Tensor static_batch;  // the graph's input: each timed step's batch is copied in before the replay
        at::Tensor static_loss;   // the graph's loss, rewritten by every replay

        // One training step as it is run eagerly and as it is captured: forward, loss, backward (FP8: the
        // backward slots update when it finishes), AdamW.
        const auto train_step = [&](const at::Tensor& batch) {
            const at::Tensor inputs = batch.narrow(1, 0, config_.model.seq);
            const at::Tensor targets = batch.narrow(1, 1, config_.model.seq);
            at::Tensor loss;
            {
                AutocastScope autocast_scope(autocast, device_.type());
                at::Tensor logits;
                {
                    Fp8Scope fp8_scope(fp8, fp8_settings);
                    logits = model->forward(inputs);
                }
                loss = at::cross_entropy_loss(logits.reshape({-1, config_.model.vocab}), targets.reshape({-1}));
            }
            enter_segment(StepSegment::Backward);
            loss.backward();
            enter_segment(StepSegment::Optimizer);
            optimizer.step();
            return loss.detach();
        };

        std::uint64_t launches_at_timed_start = 0;
        const std::unique_ptr<StepTimer> timer =
            make_step_timer(device_, config_.total_steps(), fp8_state ? fp8_state->statistics_rows() : 0);
        timer->reset_peak_memory();
        start_ = Clock::now();
        for (int k = 0; k < config_.total_steps(); ++k) {
            if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
                record_.status = RunStatus::Cancelled;
                break;
            }
            if (k == config_.warmup) {
                launches_at_timed_start = ops_.kernel_launches();
                timer->reset_peak_memory();
                if (fp8_state) fp8_state->take_inspection_ms();  // the timed steps' inspection only
            }
            const at::Tensor batch = data.pool[k % data.batches];
            at::Tensor loss;
            if (graph && k >= config_.warmup) {
                if (!graph->captured()) {
                    // Gradients start unset, so the captured backward allocates them in the graph's memory,
                    // where every replay rewrites them (no zero_grad between replays).
                    static_batch = batch.clone();
                    optimizer.zero_grad();
                    graph->capture([&] { static_loss = train_step(static_batch); });
                    record_.execution.graph_kernels = graph->kernel_nodes();
                    record_.execution.cuda_graph_note =
                        graph_plan.reason + "; " + std::to_string(graph->kernel_nodes()) + " kernels per step";
                } else {
                    static_batch.copy_(batch, /*non_blocking=*/true);
                }
                timer->begin_step(k, /*segmented=*/false);
                graph->replay();
                loss = static_loss;
            } else {
                timer->begin_step(k, /*segmented=*/true);
                const SegmentSinkScope segments(timer.get());
                optimizer.zero_grad();
                loss = train_step(batch);
            }
            if (auto reading = timer->end_step(k, loss, fp8_state ? fp8_state->statistics() : at::Tensor())) {
                report(*reading);
            }
        }
        if (auto reading = timer->finish()) {
            report(*reading);
        }
        const int timed = static_cast<int>(record_.steps.size()) - config_.warmup;
        if (!graph && !ops_.is_reference() && config_.backend == Backend::Te && timed > 0) {
            record_.execution.fused_launches_per_step =
                static_cast<double>(ops_.kernel_launches() - launches_at_timed_start) / timed;
        }
        if (fp8_state && config_.inspect_fp8 && device_.is_cpu() && timed > 0) {
            record_.execution.fp8_inspection_ms = fp8_state->take_inspection_ms() / timed;
        }
        if (record_.status == RunStatus::Running) {
            record_.status = RunStatus::Finished;
        }
    }

private:
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
        record_.steps.push_back(metrics);
        if (callbacks_.on_step) {
            callbacks_.on_step(metrics);
        }
    }

    bool& announced_;
    const RunConfig& config_;
    const TeOps& ops_;
    RunRecord& record_;
    const TrainerCallbacks& callbacks_;
    const std::atomic<bool>* cancel_;
    at::Device device_;
    Clock::time_point start_;
};

void empty_gpu_cache([[maybe_unused]] bool cuda) {
#ifdef TEWB_TORCH_HAS_CUDA
    if (cuda) {
        c10::cuda::CUDACachingAllocator::emptyCache();
    }
#endif
}

// The run's ops: chosen once here and carried (OpsScope) to every module of the run.
const TeOps& ops_for_run(const RunConfig& c) {
    return select_ops(c.device == DeviceKind::Cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
}

std::string implementation_text(const RunConfig& c, const TeOps& ops) {
    const bool graph = decide_cuda_graph(c).use;
    const std::string model = (c.backend == Backend::Te ? "te-" + std::string(ops.name()) : std::string("torch")) +
                              (graph ? ", cuda graph" : c.backend == Backend::Te ? "" : "-eager");
    switch (c.precision) {
        case Precision::Bf16: return model + ", bf16 autocast";
        case Precision::Fp8: {
            std::ostringstream out;
            const bool emulated = fp8_gemms_emulated(ops, c.fp8.scaling);
            out << model << ", fp8" << (emulated ? " emulated" : "") << " (" << to_string(c.fp8.scaling) << " scaling, "
                << to_string(c.fp8.format);
            if (c.fp8.scaling == ScalingKind::Block) {
                out << ", 1x128 / 128x128 blocks, " << (c.fp8.block_power_of_two ? "power-of-two" : "exact") << " scales";
            }
            if (c.fp8.scaling == ScalingKind::Delayed) {
                out << ", history " << c.fp8.amax_history_len << ", " << to_string(c.fp8.algo) << ", margin " << c.fp8.margin;
            }
            out << ")" << (c.device == DeviceKind::Cuda ? ", bf16 autocast" : ", fp32 elsewhere");
            return out.str();
        }
        default: return model + ", fp32";
    }
}

RunRecord run_header(const RunConfig& resolved, const DeviceInfo& device, const TeOps& ops) {
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

    const bool cuda = resolved.device == DeviceKind::Cuda;
    Execution& execution = record.execution;
    execution.device = cuda ? "cuda:0" : "cpu";
    execution.implementation = implementation_text(resolved, ops);
    execution.fp8_emulated = resolved.precision == Precision::Fp8 && fp8_gemms_emulated(ops, resolved.fp8.scaling);
    const GraphDecision graph = decide_cuda_graph(resolved);
    execution.cuda_graph = graph.use;
    execution.cuda_graph_note = graph.reason;
    execution.memory_metric = cuda ? MemoryMetric::CudaPeakAllocated : MemoryMetric::CpuPeakRss;
    execution.flops_per_step = training_flops_per_step(resolved.model, resolved.batch);
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

RunRecord make_run_header(const RunConfig& resolved, const DeviceInfo& device) {
    return run_header(resolved, device, ops_for_run(resolved));
}

namespace {
std::string out_of_memory_message(const RunConfig& resolved, const RunRecord& record, const DeviceInfo& device,
                                  const char* where) {
    const MemoryEstimate need =
        estimate_training_memory(resolved.model, resolved.batch, resolved.precision != Precision::Fp32);
    std::string message = std::string(where) + " out of memory at step " + std::to_string(record.steps.size() + 1) +
                          " (" + shape_text(resolved) + "; estimated need " + format_bytes(need.total_bytes());
    if (std::string_view(where) == "GPU" && device.memory_total_bytes > 0) {
        message += ", GPU memory " + format_bytes(device.memory_total_bytes);
    }
    return message + "): lower --batch, --seq or the model size";
}
}  // namespace

Trainer::Trainer(DeviceInfo device) : device_(std::move(device)) {}

RunRecord Trainer::run(const RunConfig& config, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) const {
    const RunConfig resolved = resolve(config, device_);
    const TeOps& ops = ops_for_run(resolved);
    RunRecord record = run_header(resolved, device_, ops);
    const bool cuda = resolved.device == DeviceKind::Cuda;
    const auto fail = [&](const std::string& kind, const std::string& message) {
        record.status = RunStatus::Failed;
        record.error_kind = kind;
        record.message = message;
        empty_gpu_cache(cuda);
    };
    bool announced = false;
    try {
        TrainingLoop(resolved, ops, record, callbacks, cancel, announced).run();
    } catch (const NumericsError& e) {
        fail("numerics", e.what());
    } catch (const c10::OutOfMemoryError&) {
        // LibTorch's own text is the caching allocator's statistics: not what a user can act on.
        fail("out_of_memory", out_of_memory_message(resolved, record, device_, "GPU"));
    } catch (const std::bad_alloc&) {
        fail("out_of_memory", out_of_memory_message(resolved, record, device_, "host"));
    } catch (const c10::Error& e) {
        const std::string text = e.what_without_backtrace();
        if (text.find("not enough memory") != std::string::npos || text.find("out of memory") != std::string::npos) {
            fail("out_of_memory", out_of_memory_message(resolved, record, device_, cuda ? "GPU" : "host"));
        } else {
            fail("runtime", "LibTorch error at step " + std::to_string(record.steps.size() + 1) + ": " + first_line(text));
        }
    } catch (const ConfigError&) {
        throw;
    } catch (const std::exception& e) {
        fail("runtime", std::string("error at step ") + std::to_string(record.steps.size() + 1) + ": " + e.what());
    }
    if (!announced && callbacks.on_start) {  // building the model failed: on_start still comes, once
        callbacks.on_start(record);
    }
    if (record.execution.cuda_graph && !record.execution.graph_kernels) {  // planned, never captured
        record.execution.cuda_graph = false;
        record.execution.cuda_graph_note = "no CUDA graph: the run ended before the capture (" +
                                           std::to_string(record.steps.size()) + " steps ran eagerly)";
    }
    record.summary = summarize(record.steps, record.config, record.execution);
    return record;
}

}  // namespace tewb
