#include "core/train/Trainer.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <new>
#include <optional>
#include <sstream>

#include <sys/resource.h>
#include <unistd.h>

#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

#ifdef TEWB_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/common/Error.h"
#include "core/device/PeakThroughput.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/model/MiniGpt.h"
#include "core/modules/ops/TeOps.h"
#include "core/results/Summary.h"
#include "core/train/AutocastScope.h"
#include "core/train/FlopCount.h"
#include "core/train/FusedAdamW.h"
#include "core/train/SyntheticData.h"

namespace tewb {

namespace {

using Clock = std::chrono::steady_clock;

// A pool of distinct batches the steps cycle through; capped so huge configurations do not spend
// memory on data (the model learns the corpus either way).
constexpr int kMaxPoolBatches = 64;
constexpr std::int64_t kMaxPoolBytes = 256LL << 20;

// The process's peak resident set size (VmHWM). Linux lets a process reset it to the current RSS, so
// each run (and its timed phase) gets its own peak even when several runs share one process; where the
// reset is refused the peak stays process-wide, which only overstates.
void reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    clear_refs << "5";
}

std::uint64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoull(line.substr(6)) * 1024;  // reported in kB
        }
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

std::string hostname() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

// Reads the FP8 statistics tensor ([slots, 4]: amax, scale, saturated, underflow) of one step.
std::vector<Fp8SlotSample> read_fp8_samples(const float* values, std::int64_t slots) {
    std::vector<Fp8SlotSample> samples(static_cast<std::size_t>(slots));
    for (std::int64_t i = 0; i < slots; ++i) {
        const float* row = values + 4 * i;
        Fp8SlotSample& sample = samples[static_cast<std::size_t>(i)];
        sample.amax = row[0];
        sample.scale = row[1];
        if (!std::isnan(row[2])) sample.saturated = row[2];
        if (!std::isnan(row[3])) sample.underflow = row[3];
    }
    return samples;
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
    TrainingLoop(const RunConfig& config, RunRecord& record, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel,
                 bool& announced)
        : announced_(announced),
          config_(config),
          record_(record),
          callbacks_(callbacks),
          cancel_(cancel),
          cuda_(config.device == DeviceKind::Cuda),
          device_(cuda_ ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU)) {}

    void run() {
        torch::AutoGradMode grad_mode(true);
        std::shared_ptr<CausalLm> model = make_model(config_.backend, config_.model, config_.seed);
        model->to(device_);
        FusedAdamW optimizer(model->parameters(), AdamWSettings{config_.lr});
        const TrainingData data = make_training_data(config_, device_);
        const bool fp8 = config_.precision == Precision::Fp8;
        // FP8 on a GPU keeps the non-GEMM math in BF16, as Transformer Engine is used; on the CPU (emulation) in FP32.
        const bool autocast = config_.precision == Precision::Bf16 || (fp8 && cuda_);
        const Fp8ScopeSettings fp8_settings{config_.fp8, config_.inspect_fp8};
        fp8_ = fp8 ? model->fp8_context() : nullptr;
        if (fp8_) {
            record_.fp8_slots = fp8_->quantized_slots(config_.fp8);
        }
        announce();
        const std::int64_t vocab = config_.model.vocab;

#ifdef TEWB_TORCH_HAS_CUDA
        std::optional<at::Tensor> host_losses;
        std::vector<at::cuda::CUDAEvent> starts;
        std::vector<at::cuda::CUDAEvent> ends;
        if (cuda_) {
            c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
            host_losses = at::empty({config_.total_steps()}, at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
            if (fp8_) {
                const std::int64_t slots = 3 * fp8_->gemm_count();
                host_fp8_ = at::empty({config_.total_steps(), slots, 4}, at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
            }
            for (int i = 0; i < 2; ++i) {
                starts.emplace_back(cudaEventDefault);
                ends.emplace_back(cudaEventDefault);
            }
        }
#endif
        if (!cuda_) {
            reset_peak_rss();
        }
        start_ = Clock::now();
        std::vector<std::uint64_t> pending_mem(2, 0);
        [[maybe_unused]] int launched = 0;
        for (int k = 0; k < config_.total_steps(); ++k) {
            if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
                record_.status = RunStatus::Cancelled;
                break;
            }
            const Phase phase = k < config_.warmup ? Phase::Warmup : Phase::Timed;
            if (!cuda_ && k == config_.warmup) {
                reset_peak_rss();
            }
#ifdef TEWB_TORCH_HAS_CUDA
            if (cuda_ && k == config_.warmup) {
                c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
            }
#endif
            const at::Tensor batch = data.pool[k % data.batches];
            const at::Tensor inputs = batch.narrow(1, 0, config_.model.seq);
            const at::Tensor targets = batch.narrow(1, 1, config_.model.seq);
            const Clock::time_point host_start = Clock::now();
#ifdef TEWB_TORCH_HAS_CUDA
            if (cuda_) {
                starts[k % 2].record();
            }
#endif
            optimizer.zero_grad();
            at::Tensor loss;
            {
                AutocastScope autocast_scope(autocast, device_.type());
                at::Tensor logits;
                {
                    Fp8Scope fp8_scope(fp8, fp8_settings);
                    logits = model->forward(inputs);
                }
                loss = at::cross_entropy_loss(logits.reshape({-1, vocab}), targets.reshape({-1}));
            }
            loss.backward();  // FP8: the backward slots update when it finishes, before the optimizer step
            optimizer.step();
#ifdef TEWB_TORCH_HAS_CUDA
            if (cuda_) {
                host_losses->select(0, k).copy_(loss.detach(), /*non_blocking=*/true);
                if (fp8_) {
                    host_fp8_.select(0, k).copy_(fp8_->statistics(), /*non_blocking=*/true);
                }
                ends[k % 2].record();
                pending_mem[k % 2] = cuda_peak_allocated();
                launched = k + 1;
                if (k > 0) {
                    finish_cuda_step(k - 1, *host_losses, starts[(k - 1) % 2], ends[(k - 1) % 2], pending_mem[(k - 1) % 2]);
                }
                continue;
            }
#endif
            const float value = loss.item<float>();
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - host_start).count();
            std::vector<Fp8SlotSample> samples;
            if (fp8_) {
                const at::Tensor stats = fp8_->statistics().contiguous();
                samples = read_fp8_samples(stats.data_ptr<float>(), stats.size(0));
            }
            report(k, phase, value, ms, peak_rss_bytes(), std::move(samples));
        }
#ifdef TEWB_TORCH_HAS_CUDA
        if (cuda_ && static_cast<int>(record_.steps.size()) < launched) {
            const int k = launched - 1;  // the one step still in flight
            finish_cuda_step(k, *host_losses, starts[k % 2], ends[k % 2], pending_mem[k % 2]);
        }
#endif
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

    bool& announced_;
#ifdef TEWB_TORCH_HAS_CUDA
    std::uint64_t cuda_peak_allocated() const {
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
        const auto& aggregate = stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
        return static_cast<std::uint64_t>(aggregate.peak);
    }

    void finish_cuda_step(int k, const at::Tensor& host_losses, at::cuda::CUDAEvent& start, at::cuda::CUDAEvent& end,
                          std::uint64_t mem) {
        end.synchronize();
        const double ms = start.elapsed_time(end);
        const float value = host_losses.data_ptr<float>()[k];
        std::vector<Fp8SlotSample> samples;
        if (fp8_) {
            samples = read_fp8_samples(host_fp8_.select(0, k).data_ptr<float>(), host_fp8_.size(1));
        }
        report(k, k < config_.warmup ? Phase::Warmup : Phase::Timed, value, ms, mem, std::move(samples));
    }
#endif

    void report(int k, Phase phase, float loss, double step_ms, std::uint64_t mem, std::vector<Fp8SlotSample> fp8) {
        if (!std::isfinite(loss)) {
            std::ostringstream message;
            message << "loss became " << loss << " at step " << k + 1 << " (" << to_string(config_.precision) << ", lr "
                    << config_.lr << "); lower --lr or use --precision fp32";
            throw NumericsError(message.str());
        }
        StepMetrics metrics;
        metrics.step = k + 1;
        metrics.phase = phase;
        metrics.loss = loss;
        metrics.step_ms = step_ms;
        metrics.mem_bytes = mem;
        metrics.tokens_per_s = step_ms > 0 ? static_cast<double>(config_.tokens_per_step()) / (step_ms / 1000.0) : 0.0;
        metrics.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
        metrics.fp8 = std::move(fp8);
        record_.steps.push_back(metrics);
        if (callbacks_.on_step) {
            callbacks_.on_step(metrics);
        }
    }

    const RunConfig& config_;
    RunRecord& record_;
    const TrainerCallbacks& callbacks_;
    const std::atomic<bool>* cancel_;
    bool cuda_;
    at::Device device_;
    Clock::time_point start_;
    std::shared_ptr<Fp8Context> fp8_;  // FP8 runs only
    at::Tensor host_fp8_;              // CUDA FP8 runs: pinned [steps, slots, 4] statistics, read with each step's loss
};

void empty_gpu_cache([[maybe_unused]] bool cuda) {
#ifdef TEWB_TORCH_HAS_CUDA
    if (cuda) {
        c10::cuda::CUDACachingAllocator::emptyCache();
    }
#endif
}

std::string te_ops_name(const RunConfig& c) {
    return std::string(ops_for(c.device == DeviceKind::Cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU)).name());
}

std::string implementation_text(const RunConfig& c) {
    const std::string model = c.backend == Backend::Te ? "te-" + te_ops_name(c) : "torch-eager";
    switch (c.precision) {
        case Precision::Bf16: return model + ", bf16 autocast";
        case Precision::Fp8: {
            std::ostringstream out;
            out << model << ", fp8" << (te_ops_name(c) == "reference" ? " emulated" : "") << " ("
                << to_string(c.fp8.scaling) << " scaling, " << to_string(c.fp8.format);
            if (c.fp8.scaling == ScalingKind::Delayed) {
                out << ", history " << c.fp8.amax_history_len << ", " << to_string(c.fp8.algo) << ", margin " << c.fp8.margin;
            }
            out << ")" << (c.device == DeviceKind::Cuda ? ", bf16 autocast" : ", fp32 elsewhere");
            return out.str();
        }
        default: return model + ", fp32";
    }
}

}  // namespace

RunRecord make_run_header(const RunConfig& resolved, const DeviceInfo& device) {
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
    execution.implementation = implementation_text(resolved);
    execution.fp8_emulated = resolved.precision == Precision::Fp8 && te_ops_name(resolved) == "reference";
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

Trainer::Trainer(DeviceInfo device) : device_(std::move(device)) {}

RunRecord Trainer::run(const RunConfig& config, const TrainerCallbacks& callbacks, const std::atomic<bool>* cancel) const {
    const RunConfig resolved = resolve(config, device_);
    RunRecord record = make_run_header(resolved, device_);
    const bool cuda = resolved.device == DeviceKind::Cuda;
    const auto fail = [&](const std::string& kind, const std::string& message) {
        record.status = RunStatus::Failed;
        record.error_kind = kind;
        record.message = message;
        empty_gpu_cache(cuda);
    };
    bool announced = false;
    try {
        TrainingLoop(resolved, record, callbacks, cancel, announced).run();
    } catch (const NumericsError& e) {
        fail("numerics", e.what());
    } catch (const c10::OutOfMemoryError& e) {
        fail("out_of_memory",
             "GPU out of memory at step " + std::to_string(record.steps.size() + 1) + " (" + shape_text(resolved) +
                 "): lower --batch, --seq or the model size. LibTorch: " + first_line(e.what_without_backtrace()));
    } catch (const std::bad_alloc&) {
        fail("out_of_memory", "host out of memory at step " + std::to_string(record.steps.size() + 1) + " (" +
                                  shape_text(resolved) + "): lower --batch, --seq or the model size");
    } catch (const c10::Error& e) {
        fail("runtime",
             "LibTorch error at step " + std::to_string(record.steps.size() + 1) + ": " + first_line(e.what_without_backtrace()));
    } catch (const ConfigError&) {
        throw;
    } catch (const std::exception& e) {
        fail("runtime", std::string("error at step ") + std::to_string(record.steps.size() + 1) + ": " + e.what());
    }
    if (!announced && callbacks.on_start) {  // building the model failed: on_start still comes, once
        callbacks.on_start(record);
    }
    record.summary = summarize(record.steps, record.config, record.execution);
    return record;
}

}  // namespace tewb
