#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/BuildInfo.h"
#include "core/common/Choice.h"
#include "core/common/StepSegments.h"
#include "core/device/Capability.h"
#include "core/device/DeviceInfo.h"
#include "core/fp8/Fp8Stats.h"
#include "core/ledger/Ledger.h"
#include "core/config/RunConfig.h"
#include "core/results/MeasurementQuality.h"
#include "core/results/RunWords.h"

namespace tewb {

enum class Phase { Warmup, Timed };
enum class RunStatus { Running, Finished, Cancelled, Failed };
enum class MemoryMetric { CudaPeakAllocated, CpuPeakRss };

struct StepMetrics {
    int step = 0;  // 1-based over warm-up and timed steps
    Phase phase = Phase::Warmup;
    double loss = 0;
    double step_ms = 0;
    std::uint64_t mem_bytes = 0;  // peak so far (GPU: since the timed phase began, for timed steps)
    double tokens_per_s = 0;
    double elapsed_ms = 0;  // wall time since the first step started, when this step was known
    std::vector<Fp8SlotSample> fp8;  // FP8 runs: one per RunRecord::fp8_slots entry, same order
    // Where the step's time went (forward, backward, optimizer, FP8 bookkeeping); eager steps only: a
    // CUDA-graph replay is one launch and is not split.
    std::optional<StepBreakdown> breakdown;
    // A data-parallel job: every rank's time for this step, rank order (the record's step_ms is rank 0's).
    std::vector<double> rank_ms;
    // Runs on a token file: the mean loss over the held-out tail's evaluation batches, on the steps that
    // evaluated (every config.data.eval_every steps and the last); empty on the others.
    std::optional<double> val_loss;

    friend bool operator==(const StepMetrics&, const StepMetrics&) = default;
};

// Over the timed steps only. Optional fields are empty when they cannot be known (no timed step
// completed; MFU on a device missing from the peak table).
struct RunSummary {
    int timed_steps = 0;
    std::optional<double> mean_ms;
    std::optional<double> median_ms;
    std::optional<double> p90_ms;
    std::optional<double> tokens_per_s;
    std::optional<double> tflops;
    std::optional<double> mfu;
    std::uint64_t peak_mem_bytes = 0;
    std::optional<double> final_loss;
    // Runs on a token file: the last evaluated validation loss (StepMetrics::val_loss) and its step.
    std::optional<double> final_val_loss;
    std::optional<int> final_val_step;
    // The mean time per segment, and over which steps: "timed steps", or for a CUDA-graph run (whose
    // replays are not split) "eager warm-up steps", whose launch overhead the graph removes.
    std::optional<StepBreakdown> breakdown;
    std::string breakdown_source;

    friend bool operator==(const RunSummary&, const RunSummary&) = default;
};

struct WeightsDigest {
    double sum = 0;
    double sum_abs = 0;
    double sum_squares = 0;
    friend bool operator==(const WeightsDigest&, const WeightsDigest&) = default;
};

// How a data-parallel job ran (RunConfig::dist says what was asked).
struct DistExecution {
    int world_size = 1;
    std::string backend;  // "gloo" | "nccl"
    double bucket_mb = 0;
    int buckets = 0;      // gradient buckets per step
    std::uint64_t allreduce_bytes = 0;  // gradient bytes each rank all-reduces per step (every bucket)
    bool amax_reduction = false;
    // In the last timed step: buckets whose all-reduce started from a gradient hook, before the backward
    // ended (communication overlapping computation).
    int buckets_started_during_backward = 0;
    std::vector<double> rank_mean_ms;           // mean ms per timed step, per rank
    std::optional<double> scaling_efficiency;   // the 1-process run's mean ms / this job's (same per-rank batch)
    std::string baseline_run_id;                // that 1-process run, when measured
    bool baseline_noisy = false;                // that run's measurement was noisy (MeasurementQuality)
    int baseline_threads = 0;                   // that run's LibTorch threads (0: not known, an older record)

    friend bool operator==(const DistExecution&, const DistExecution&) = default;
};

// Where and how the run executed.
// A fused step that handed a call to the reference instead (an operand the kernels do not take, an epilogue
// cuBLASLt refused): which op, why, how often in the run.
struct Fallback {
    std::string op;
    std::string reason;
    std::int64_t count = 0;
    friend bool operator==(const Fallback&, const Fallback&) = default;
};

// The launch ledger of one eager step (core/ledger): every launch and the bytes it moves, per place and op.
// `layer` is the transformer layer (-1 outside the layers), `scope` the module inside it ("qkv", "attention",
// "qkv/fp8_amax") or the place outside ("embedding", "head", "loss", "optimizer", "fp8_update_forward", "other").
// Bytes come from the shapes and dtypes of the op's tensors: read = its inputs, written = its outputs (an
// in-place op writes its self). A row whose launch count is not known counted one launch per call that the
// ledger could not count (launches_known = false).
// The measurement's own rows (core/ledger), kept as they are.
using LedgerRow = LedgerEntry;

struct Ledger {
    int step = 0;        // 1-based step it was measured on
    std::string source;  // e.g. "eager step 3 (the last warm-up step)"
    int layers = 0;
    std::vector<LedgerRow> rows;
    // Per layer: the mean over the model's layers (rows with layer >= 0); per step: every row.
    double launches_per_layer = 0;
    double bytes_per_layer = 0;  // read + written
    double saved_bytes_per_layer = 0;
    std::vector<std::int64_t> saved_bytes_by_layer;  // each layer's, in layer order
    std::uint64_t launches_per_step = 0;
    std::uint64_t bytes_per_step = 0;            // read + written
    std::uint64_t unknown_launches_per_step = 0;  // launches in rows with launches_known = false
    // The calls inside the step that made the host wait for the device (item(), a tensor's truth value, nonzero,
    // a blocking device-to-host copy; on the CPU those that would), per place and op, `calls` each; empty when
    // none (and in records from before they were counted).
    std::vector<LedgerRow> host_waits;
    friend bool operator==(const Ledger&, const Ledger&) = default;
};

// One kernel (CUDA) or operator (CPU) of a profiled step: how often it ran and its summed duration.
struct KernelTime {
    std::string name;
    std::uint64_t launches = 0;
    double total_us = 0;
    LaunchWork work = LaunchWork::Kernel;  // on CUDA: a kernel, a memset or a copy (helpers are kernels to CUPTI)
    double mean_us() const { return launches > 0 ? total_us / static_cast<double>(launches) : 0.0; }
    friend bool operator==(const KernelTime&, const KernelTime&) = default;
};

// The GPU work of a profiled CUDA step launched from inside one operator: the outermost LibTorch operator or
// this project's kernel range around the launch, as the launch ledger attributes its rows (op "" for work
// launched outside any operator). What the check compares with the ledger, op by op.
struct OpLaunches {
    std::string op;
    std::uint64_t kernels = 0;
    std::uint64_t memsets = 0;
    std::uint64_t copies = 0;
    std::uint64_t total() const { return kernels + memsets + copies; }
    friend bool operator==(const OpLaunches&, const OpLaunches&) = default;
};

// `te-bench run --profile PATH`: one more step after the timed ones (the same kind: a graph replay when the
// timed steps replayed one), traced with LibTorch's Kineto profiler, outside the statistics and after the
// weights digest. The trace went to `trace_path`; `kernels` is its "top kernels" table: on CUDA the GPU
// kernels CUPTI saw (kernels, copies and sets), on the CPU the outermost LibTorch operators and this
// project's host kernels (what a CPU step spends its time in). `step_ms` is the profiled step's own wall
// time, profiler overhead included, so the shares add up to what the table covers.
struct KernelProfile {
    int step = 0;            // 1-based
    std::string source;      // what the rows are, e.g. "CUDA kernels (CUPTI)"
    double step_ms = 0;
    std::string trace_path;  // as given
    std::vector<KernelTime> kernels;  // largest total first
    // CUDA: the operators' and this project's ranges as the GPU timeline shows them (kept apart: not kernels),
    // and the GPU work per operator. Empty on the CPU and in records from before they were kept apart.
    std::vector<KernelTime> op_ranges;
    std::vector<OpLaunches> launches_by_op;  // most launches first
    double total_us() const;
    double share_of_step(const KernelTime& k) const { return step_ms > 0 ? k.total_us / (step_ms * 1000.0) : 0.0; }
    friend bool operator==(const KernelProfile&, const KernelProfile&) = default;
};

struct Execution {
    std::string device;          // "cuda:<the GPU it trained on>" ("cuda:0"; a rank's LOCAL_RANK) or "cpu"
    std::string implementation;  // which code ran the model, e.g. "torch-eager", "te-reference, fp8 ..."
    // FP8 casts were real but the GEMMs ran in float32 on dequantized values (the reference
    // implementation, e.g. on the CPU): the loss is FP8's, the timings are not FP8 speed.
    bool fp8_emulated = false;
    MemoryMetric memory_metric = MemoryMetric::CpuPeakRss;
    double flops_per_step = 0;          // analytic model FLOPs of one training step (see FlopCount.h)
    std::optional<double> peak_tflops;  // MFU denominator, when the device is in the peak table
    std::string peak_source;            // the peak table row used
    // Whether the timed steps replayed one captured CUDA graph; `cuda_graph_note` says why not, or how
    // many kernels the graph holds. graph_kernels: kernel nodes per step (every launch: LibTorch's,
    // cuBLAS's and ours), counted in the captured graph.
    bool cuda_graph = false;
    std::string cuda_graph_note;
    std::optional<int> graph_kernels;
    // The bytes the captured graph's private memory pool holds (its allocator segments, measured after the
    // capture): the part of the peak memory every replay reuses.
    std::optional<std::uint64_t> graph_pool_bytes;
    // Eager runs on the fused ops: launches per timed step of this project's kernels (casts, LayerNorm,
    // GELU, the FP8 scale update, cuBLASLt GEMMs through the wrapper, and for the te model its embedding, loss and
    // AdamW, and the attention where execution.attention_backend is "tewb"), counted by the kernels library;
    // LibTorch's own launches (its attention elsewhere) are not in it.
    std::optional<double> fused_launches_per_step;
    // LibTorch's scaled_dot_product_attention backend the attention ran on ("flash", "efficient", "cudnn",
    // "math", ...; model/AttentionBackend.h), or "tewb" where a te run's fused ops ran it on the project's own
    // kernels (kernels/attention); empty in records from before it was recorded.
    std::string attention_backend;
    std::optional<DistExecution> dist;
    // The weights after the last step, in three numbers (float64 sums over every parameter: of the values,
    // their magnitudes and their squares): two runs that end with the same weights have the same digest.
    std::optional<WeightsDigest> weights_digest;
    // With --inspect-fp8 on the CPU: host time per timed step spent inspecting the casts (counting,
    // quantization errors, the what-if recipes), which the step times include. Not measured on CUDA,
    // where that work is asynchronous.
    std::optional<double> fp8_inspection_ms;
    // te backend: which code ran its modules, "fused-cuda", "fused-host" or "reference" (empty for torch
    // and in records from before it was recorded), and every fallback of the fused path to the reference.
    std::string te_impl;
    std::vector<Fallback> fallbacks;
    // The launch ledger, measured on one eager step (not a timed one: its callbacks cost time); empty in records
    // from before it was recorded.
    std::optional<Ledger> ledger;
    // With a kernel trace asked for (`te-bench run --profile`): the profiled step's table; empty otherwise
    // and in records from before it existed. `kernel_profile_error`: why a trace that was asked for was not
    // written (the run itself is kept).
    std::optional<KernelProfile> kernel_profile;
    std::string kernel_profile_error;
    // How far the step times can be trusted (MeasurementQuality.h); empty for runs that never reached their
    // end and in records from before it was kept: "not measured", never clean.
    std::optional<MeasurementQuality> quality;

    friend bool operator==(const Execution&, const Execution&) = default;
};

struct Environment {
    DeviceInfo device;
    Mode mode = Mode::Fallback;
    std::vector<std::string> reasons;
    BuildInfo build;
    std::string hostname;
};

// One of N repeats of the same configuration (`--repeat N`): the repeats share `group`, a random id, and
// are numbered 1..count in the order they ran.

struct RepeatInfo {
    std::string group;
    int index = 1;
    int count = 1;
    friend bool operator==(const RepeatInfo&, const RepeatInfo&) = default;
};

// Why a run failed, as its record says ("out_of_memory", "numerics", "runtime", "distributed").
enum class ErrorKind { OutOfMemory, Numerics, Runtime, Distributed };

// The token file a run trained on, as found before training (core/data/TokenFile.h): never its contents.
struct DataFileInfo {
    std::string name;         // the file's name, without its directory
    std::uint64_t size_bytes = 0;
    std::string sha256;       // lowercase hex of the whole file
    TokenFormat format = TokenFormat::Bytes;  // as read (never auto)
    std::int64_t tokens = 0;        // all of them
    std::int64_t val_tokens = 0;    // the held-out tail
    int max_token = 0;              // the largest token id (below config.model.vocab)

    friend bool operator==(const DataFileInfo&, const DataFileInfo&) = default;
};

struct RunRecord {
    static constexpr int kSchemaVersion = 1;

    int schema_version = kSchemaVersion;
    std::string id;          // random, unique across machines
    std::string created_at;  // ISO 8601, UTC
    RunConfig config;        // as resolved for the machine
    Environment environment;
    Execution execution;
    std::vector<StepMetrics> steps;
    std::vector<Fp8SlotInfo> fp8_slots;  // FP8 runs: the slots each step's `fp8` samples describe
    // Inspected runs of a recipe with block scales: one histogram per fp8_slots entry, same order (else empty).
    std::vector<Fp8ScaleHistogram> fp8_block_scales;
    RunSummary summary;
    RunStatus status = RunStatus::Running;
    std::optional<ErrorKind> error_kind;  // failed runs (mark_failed)
    std::string message;                  // failed runs: what went wrong and what to do
    std::optional<RepeatInfo> repeat;  // set when the run is one of several repeats
    std::optional<DataFileInfo> data_file;  // runs on a token file (config.data.path)
};

template <>
struct EnumNames<Phase> {
    static constexpr NameTable table{std::to_array<Named<Phase>>({{"warmup", Phase::Warmup}, {"timed", Phase::Timed}})};
};
template <>
struct EnumNames<RunStatus> {
    static constexpr NameTable table{std::to_array<Named<RunStatus>>({{"finished", RunStatus::Finished},
                                                                      {"cancelled", RunStatus::Cancelled},
                                                                      {"failed", RunStatus::Failed},
                                                                      {"running", RunStatus::Running}})};
};
template <>
struct EnumNames<MemoryMetric> {
    static constexpr NameTable table{std::to_array<Named<MemoryMetric>>(
        {{"cuda_peak_allocated", MemoryMetric::CudaPeakAllocated}, {"cpu_peak_rss", MemoryMetric::CpuPeakRss}})};
};
template <>
struct EnumNames<ErrorKind> {
    static constexpr NameTable table{std::to_array<Named<ErrorKind>>({{"out_of_memory", ErrorKind::OutOfMemory},
                                                                      {"numerics", ErrorKind::Numerics},
                                                                      {"runtime", ErrorKind::Runtime},
                                                                      {"distributed", ErrorKind::Distributed}})};
};

// The one way a run becomes a failed one: status Failed, why (`kind`) and what to do (`message`).
void mark_failed(RunRecord& record, ErrorKind kind, std::string message);

// Why a record read from a file may not enter the run store, or nothing. Beyond what reading checks
// (RecordJson.h): a finished, cancelled or failed run (not "running"), a UTC creation time, an id of
// letters, digits and '-', a name under --name's rule, a configuration inside today's limits, and times
// that are finite and not negative.
std::optional<std::string> import_problem(const RunRecord& record);

// display_name(name, emulated) and the other words for emulated runs: core/results/RunWords.h.
std::string display_name(const RunRecord& record);
// The same for a run not yet trained (a queued one) or known by its store row: its configured name with the
// emulated format ("FP8", "MXFP8", "NVFP4") its settings give.
std::string display_name(const RunConfig& config, bool fp8_emulated);
// What an emulated run's name calls its format: "MXFP8" or "NVFP4" for those recipes of an FP8 run, else "FP8".
std::string_view emulated_format(Precision precision, ScalingKind scaling);
// What a legend adds to a run's name when the run ended without finishing, so that its partial lines are not
// read as a finished run's: " (cancelled)" or " (failed)"; empty for a finished or running run.
std::string_view unfinished_mark(RunStatus status);

std::string make_run_id();
std::string utc_timestamp_now();

}  // namespace tewb
