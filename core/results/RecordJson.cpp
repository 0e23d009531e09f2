#include "core/results/RecordJson.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/common/Choice.h"
#include "core/common/NumberText.h"
#include "core/config/RunSettings.h"

// Writing records as JSON; reading them back: RecordJsonRead.cpp.

namespace tewb {

using nlohmann::json;

namespace {

json number(double value) {
    if (const auto word = non_finite_text(value)) {
        return *word;
    }
    return value;
}

// A float32 value as the shortest decimal that reads back as the same float (0.02, not 0.0199999995529651).
json float_number(float value) {
    if (const auto word = non_finite_text(value)) {
        return *word;
    }
    return std::strtod(shortest_text(value).c_str(), nullptr);
}

json setting_json(const SettingValue& value) {
    return std::visit(
        [](const auto& v) -> json {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) {
                return number(v);
            } else {
                return json(v);
            }
        },
        value);
}

json optional_number(const std::optional<double>& value) {
    return value ? number(*value) : json(nullptr);
}

json optional_text(const std::string& value) {
    return value.empty() ? json(nullptr) : json(value);
}

// Reads one JSON object, remembering where it is so every error names the exact path.

json fp8_samples_json(const std::vector<Fp8SlotSample>& samples) {
    json amax = json::array(), scale = json::array(), saturated = json::array(), underflow = json::array();
    bool inspected = true;
    for (const Fp8SlotSample& s : samples) {
        amax.push_back(float_number(s.amax));
        scale.push_back(float_number(s.scale));
        inspected = inspected && s.saturated && s.underflow;
        saturated.push_back(s.saturated ? float_number(*s.saturated) : json(nullptr));
        underflow.push_back(s.underflow ? float_number(*s.underflow) : json(nullptr));
    }
    json out{{"amax", std::move(amax)}, {"scale", std::move(scale)}};
    if (inspected) {
        out["saturated"] = std::move(saturated);
        out["underflow"] = std::move(underflow);
    }
    // The quantization errors (inspection): written when every slot has them this step.
    const auto errors = [&](const std::string& key, const auto& field) {
        json values = json::array();
        for (const Fp8SlotSample& s : samples) {
            if (!field(s)) return;
            values.push_back(float_number(*field(s)));
        }
        if (!samples.empty()) out[key] = std::move(values);
    };
    errors("rel_mse", [](const Fp8SlotSample& s) { return s.rel_mse; });
    for (const WhatIf w : kWhatIfs) {
        errors(std::string(to_string(w)) + "_rel_mse", [w](const Fp8SlotSample& s) { return s.what_if(w); });
    }
    return out;
}

json breakdown_json(const StepBreakdown& b) {
    json out = json::object();
    for (const StepSegment segment : kStepSegments) out[std::string(to_string(segment)) + "_ms"] = number(b.at(segment));
    return out;
}

json numbers(const std::vector<double>& values) {
    json out = json::array();
    for (const double v : values) out.push_back(number(v));
    return out;
}

json dist_json(const DistExecution& d) {
    return json{{"world_size", d.world_size},
                {"backend", d.backend},
                {"bucket_mb", number(d.bucket_mb)},
                {"buckets", d.buckets},
                {"allreduce_bytes", d.allreduce_bytes},
                {"amax_reduction", d.amax_reduction},
                {"buckets_started_during_backward", d.buckets_started_during_backward},
                {"rank_mean_ms", numbers(d.rank_mean_ms)},
                {"scaling_efficiency", optional_number(d.scaling_efficiency)},
                {"baseline_run_id", optional_text(d.baseline_run_id)},
                {"baseline_noisy", d.baseline_noisy},
                {"baseline_threads", d.baseline_threads}};
}

json optional_clock(const std::optional<unsigned>& mhz) {
    return mhz ? json(*mhz) : json(nullptr);
}

json quality_json(const MeasurementQuality& q) {
    return json{{"cv", optional_number(q.cv)},
                {"others_cpu_cores", optional_number(q.others_cpu_cores)},
                {"load_average", optional_number(q.load_average)},
                {"cores", q.cores},
                {"threads", q.threads},
                {"machine_note", optional_text(q.machine_note)},
                {"gpu_applies", q.gpu_applies},
                {"gpu_measured", q.gpu_measured},
                {"gpu_note", optional_text(q.gpu_note)},
                {"gpu_other_processes", q.gpu_other_processes},
                {"gpu_throttle_reasons", q.gpu_throttle_reasons},
                {"sm_clock_mhz", optional_clock(q.sm_clock_mhz)},
                {"max_sm_clock_mhz", optional_clock(q.max_sm_clock_mhz)},
                {"noisy", q.noisy},
                {"reasons", q.reasons}};
}

json fallbacks_json(const std::vector<Fallback>& fallbacks) {
    json out = json::array();
    for (const Fallback& f : fallbacks) out.push_back({{"op", f.op}, {"reason", f.reason}, {"count", f.count}});
    return out;
}

json ledger_json(const Ledger& l) {
    json waits = json::array();
    for (const LedgerRow& row : l.host_waits) {
        waits.push_back({{"layer", row.layer}, {"scope", row.scope}, {"op", row.op}, {"calls", row.calls}});
    }
    json rows = json::array();
    for (const LedgerRow& row : l.rows) {
        rows.push_back({{"layer", row.layer},
                        {"scope", row.scope},
                        {"op", row.op},
                        {"work", to_string(row.work)},
                        {"calls", row.calls},
                        {"launches", row.launches},
                        {"launches_known", row.launches_known},
                        {"bytes_read", row.bytes_read},
                        {"bytes_written", row.bytes_written}});
    }
    return json{{"step", l.step},
                {"source", l.source},
                {"layers", l.layers},
                {"rows", rows},
                {"launches_per_layer", number(l.launches_per_layer)},
                {"bytes_per_layer", number(l.bytes_per_layer)},
                {"saved_bytes_per_layer", number(l.saved_bytes_per_layer)},
                {"saved_bytes_by_layer", l.saved_bytes_by_layer},
                {"launches_per_step", l.launches_per_step},
                {"bytes_per_step", l.bytes_per_step},
                {"unknown_launches_per_step", l.unknown_launches_per_step},
                {"host_waits", waits}};
}

json kernel_times_json(const std::vector<KernelTime>& times) {
    json out = json::array();
    for (const KernelTime& k : times) {
        out.push_back({{"name", k.name}, {"launches", k.launches}, {"total_us", number(k.total_us)}, {"work", to_string(k.work)}});
    }
    return out;
}

json kernel_profile_json(const KernelProfile& p) {
    json by_op = json::array();
    for (const OpLaunches& o : p.launches_by_op) {
        by_op.push_back({{"op", o.op}, {"kernels", o.kernels}, {"memsets", o.memsets}, {"copies", o.copies}});
    }
    return json{{"step", p.step},
                {"source", p.source},
                {"step_ms", number(p.step_ms)},
                {"trace_path", p.trace_path},
                {"kernels", kernel_times_json(p.kernels)},
                {"op_ranges", kernel_times_json(p.op_ranges)},
                {"launches_by_op", by_op}};
}

}  // namespace

json to_json(const DeviceInfo& d) {
    return json{{"name", optional_text(d.gpu_name)},
                {"compute_capability", d.compute_capability ? json(d.compute_capability->to_string()) : json(nullptr)},
                {"sm_count", d.sm_count},
                {"memory_total_bytes", d.memory_total_bytes},
                {"memory_free_bytes", d.memory_free_bytes},
                {"driver_version", optional_text(d.driver_version)},
                {"cuda_runtime_version", optional_text(d.cuda_runtime_version)},
                {"cublaslt_version", optional_text(d.cublaslt_version)},
                {"cublaslt_library", optional_text(d.cublaslt_library)},
                {"libtorch_version", optional_text(d.libtorch_version)},
                {"gpu_count", d.gpu_count},
                {"gpu_error", optional_text(d.gpu_error)},
                {"cpu_model", optional_text(d.cpu_model)},
                {"cpu_threads", d.cpu_threads}};
}

json to_json(const StoredRun& r) {
    return json{{"id", r.id},
                {"run_id", r.run_id},
                {"created_at", r.created_at},
                {"name", r.name},
                {"backend", r.backend},
                {"precision", r.precision},
                {"device", r.device},
                {"status", r.status},
                {"steps", r.steps},
                {"median_ms", r.median_ms ? json(*r.median_ms) : json()},
                {"final_loss", r.final_loss ? json(*r.final_loss) : json()},
                {"peak_mem_bytes", r.peak_mem_bytes},
                {"fp8_emulated", r.fp8_emulated}};
}

json capability_json(const DeviceInfo& device, const Capability& capability) {
    return json{{"mode", std::string(to_string(capability.mode))},
                {"te_capable", capability.te_capable},
                {"fp8_capable", capability.fp8_capable},
                {"reasons", capability.reasons()},
                {"device", to_json(device)}};
}

json to_json(const RunConfig& c) {
    json out = json::object();
    for (const RunSetting& s : run_settings()) {
        if (!setting_written(s, c)) continue;
        json& object = s.section == SettingSection::Config ? out : out[std::string(section_key(s.section))];
        object[std::string(s.json_key)] = setting_json(s.get(c));
    }
    return out;
}

namespace {
// The token file a run trained on, as described before training: never its contents.
json data_file_json(const DataFileInfo& d) {
    return json{{"name", d.name},
                {"size_bytes", d.size_bytes},
                {"sha256", d.sha256},
                {"format", std::string(to_string(d.format))},
                {"tokens", d.tokens},
                {"val_tokens", d.val_tokens},
                {"max_token", d.max_token}};
}
}  // namespace

json to_json(const RunSummary& s) {
    return json{{"timed_steps", s.timed_steps},
                {"mean_ms", optional_number(s.mean_ms)},
                {"median_ms", optional_number(s.median_ms)},
                {"p90_ms", optional_number(s.p90_ms)},
                {"tokens_per_s", optional_number(s.tokens_per_s)},
                {"tflops", optional_number(s.tflops)},
                {"mfu", optional_number(s.mfu)},
                {"peak_mem_bytes", s.peak_mem_bytes},
                {"final_loss", optional_number(s.final_loss)},
                {"final_val_loss", optional_number(s.final_val_loss)},
                {"final_val_step", s.final_val_step ? json(*s.final_val_step) : json(nullptr)},
                {"breakdown", s.breakdown ? breakdown_json(*s.breakdown) : json(nullptr)},
                {"breakdown_source", optional_text(s.breakdown_source)}};
}

json to_json(const RunRecord& record) {
    json steps = json::array();
    for (const StepMetrics& s : record.steps) {
        json step{{"step", s.step},
                  {"phase", std::string(to_string(s.phase))},
                  {"loss", number(s.loss)},
                  {"step_ms", number(s.step_ms)},
                  {"mem_bytes", s.mem_bytes},
                  {"tokens_per_s", number(s.tokens_per_s)},
                  {"elapsed_ms", number(s.elapsed_ms)}};
        if (!s.fp8.empty()) {
            step["fp8"] = fp8_samples_json(s.fp8);
        }
        if (s.breakdown) step["breakdown"] = breakdown_json(*s.breakdown);
        if (!s.rank_ms.empty()) step["rank_ms"] = numbers(s.rank_ms);
        if (s.val_loss) step["val_loss"] = number(*s.val_loss);
        steps.push_back(std::move(step));
    }
    json fp8_slots = json::array();
    for (const Fp8SlotInfo& slot : record.fp8_slots) {
        fp8_slots.push_back(
            {{"module", slot.module}, {"slot", std::string(to_string(slot.role))}, {"dtype", std::string(to_string(slot.dtype))}});
    }
    json block_scales = nullptr;
    if (!record.fp8_block_scales.empty()) {
        block_scales = json::array();
        for (const Fp8ScaleHistogram& h : record.fp8_block_scales) {
            block_scales.push_back({{"lowest_exponent", h.lowest_exponent}, {"counts", h.counts}, {"empty_blocks", h.empty_blocks}});
        }
    }
    const Environment& env = record.environment;
    const Execution& exe = record.execution;
    return json{
        {"schema_version", record.schema_version},
        {"id", record.id},
        {"created_at", record.created_at},
        {"status", std::string(to_string(record.status))},
        {"error_kind", record.error_kind ? json(std::string(to_string(*record.error_kind))) : json(nullptr)},
        {"message", optional_text(record.message)},
        {"config", to_json(record.config)},
        {"environment",
         {{"device", to_json(env.device)},
          {"mode", std::string(to_string(env.mode))},
          {"reasons", env.reasons},
          {"build",
           {{"version", env.build.version},
            {"commit", env.build.commit},
            {"build_type", env.build.build_type},
            {"compiler", env.build.compiler},
            {"cuda_kernels", env.build.cuda_kernels}}},
          {"hostname", env.hostname}}},
        {"execution",
         {{"device", exe.device},
          {"implementation", exe.implementation},
          {"memory_metric", std::string(to_string(exe.memory_metric))},
          {"flops_per_step", number(exe.flops_per_step)},
          {"peak_tflops", optional_number(exe.peak_tflops)},
          {"peak_source", optional_text(exe.peak_source)},
          {"fp8_emulated", exe.fp8_emulated},
          {"cuda_graph", exe.cuda_graph},
          {"cuda_graph_note", optional_text(exe.cuda_graph_note)},
          {"graph_kernels", exe.graph_kernels ? json(*exe.graph_kernels) : json(nullptr)},
          {"graph_pool_bytes", exe.graph_pool_bytes ? json(*exe.graph_pool_bytes) : json(nullptr)},
          {"fp8_inspection_ms", optional_number(exe.fp8_inspection_ms)},
          {"fused_launches_per_step", optional_number(exe.fused_launches_per_step)},
          {"attention_backend", optional_text(exe.attention_backend)},
          {"te_impl", optional_text(exe.te_impl)},
          {"fallbacks", fallbacks_json(exe.fallbacks)},
          {"ledger", exe.ledger ? ledger_json(*exe.ledger) : json(nullptr)},
          {"kernel_profile", exe.kernel_profile ? kernel_profile_json(*exe.kernel_profile) : json(nullptr)},
          {"kernel_profile_error", optional_text(exe.kernel_profile_error)},
          {"dist", exe.dist ? dist_json(*exe.dist) : json(nullptr)},
          {"quality", exe.quality ? quality_json(*exe.quality) : json(nullptr)},
          {"weights_digest", exe.weights_digest ? json{{"sum", number(exe.weights_digest->sum)},
                                                       {"sum_abs", number(exe.weights_digest->sum_abs)},
                                                       {"sum_squares", number(exe.weights_digest->sum_squares)}}
                                                : json(nullptr)}}},
        {"fp8_slots", std::move(fp8_slots)},
        {"fp8_block_scales", std::move(block_scales)},
        {"steps", std::move(steps)},
        {"summary", to_json(record.summary)},
        {"repeat", record.repeat ? json{{"group", record.repeat->group}, {"index", record.repeat->index},
                                        {"count", record.repeat->count}}
                                 : json(nullptr)},
        {"data_file", record.data_file ? data_file_json(*record.data_file) : json(nullptr)},
    };
}

std::string record_to_json_text(const RunRecord& record) {
    return to_json(record).dump(2) + "\n";
}

std::string records_to_json_text(const std::vector<RunRecord>& records) {
    if (records.size() == 1) {
        return record_to_json_text(records.front());
    }
    json document = json::array();
    for (const RunRecord& r : records) {
        document.push_back(to_json(r));
    }
    return document.dump(2) + "\n";
}

std::string config_to_json_text(const RunConfig& config) {
    return to_json(config).dump();
}

}  // namespace tewb
