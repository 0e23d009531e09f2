#include "core/results/RecordJson.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/Choice.h"
#include "core/common/Error.h"
#include "core/common/NumberText.h"
#include "core/config/RunSettings.h"

// Reading records from JSON, with every value checked and every problem named by its path; writing them:
// RecordJson.cpp.

namespace tewb {

using nlohmann::json;

namespace {

class Reader {
public:
    Reader(const json& object, std::string path, std::string_view source)
        : object_(object), path_(std::move(path)), source_(source) {
        if (!object_.is_object()) {
            fail(path_, "expected an object, found " + std::string(object_.type_name()));
        }
    }

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw DataError(std::string(source_) + ": " + where + ": " + what);
    }

    const json& get(const char* key) const {
        const auto it = object_.find(key);
        if (it == object_.end()) {
            fail(at(key), "missing");
        }
        return *it;
    }
    bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }
    std::string at(const char* key) const { return path_ + "." + key; }

    std::string text(const char* key) const {
        const json& value = get(key);
        if (!value.is_string()) {
            fail(at(key), "expected a string, found " + std::string(value.type_name()));
        }
        return value.get<std::string>();
    }
    std::string optional_text(const char* key) const { return has(key) ? text(key) : std::string{}; }

    double real(const char* key) const { return real_value(get(key), at(key)); }
    std::optional<double> optional_real(const char* key) const {
        return has(key) ? std::optional<double>(real(key)) : std::nullopt;
    }

    std::int64_t integer(const char* key, std::int64_t min, std::int64_t max) const {
        return integer_value(get(key), at(key), min, max);
    }

    bool boolean(const char* key) const {
        const json& value = get(key);
        if (!value.is_boolean()) {
            fail(at(key), "expected true or false, found " + std::string(value.type_name()));
        }
        return value.get<bool>();
    }

    Reader object(const char* key) const { return Reader(get(key), at(key), source_); }
    // The array's elements, each an object read with its own path ("$.steps[3]").
    std::vector<Reader> objects(const char* key) const {
        const json& values = array(key);
        std::vector<Reader> out;
        out.reserve(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) out.emplace_back(values[i], at(key) + "[" + std::to_string(i) + "]", source_);
        return out;
    }

    std::vector<double> reals(const char* key) const {
        std::vector<double> out;
        const json& values = array(key);
        for (std::size_t i = 0; i < values.size(); ++i) out.push_back(real_value(values[i], at(key) + "[" + std::to_string(i) + "]"));
        return out;
    }

    std::vector<std::int64_t> integers(const char* key, std::int64_t min, std::int64_t max) const {
        std::vector<std::int64_t> out;
        const json& values = array(key);
        for (std::size_t i = 0; i < values.size(); ++i) {
            out.push_back(integer_value(values[i], at(key) + "[" + std::to_string(i) + "]", min, max));
        }
        return out;
    }

    std::vector<std::string> texts(const char* key) const {
        std::vector<std::string> out;
        const json& values = array(key);
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (!values[i].is_string()) fail(at(key) + "[" + std::to_string(i) + "]", "expected a string");
            out.push_back(values[i].get<std::string>());
        }
        return out;
    }

    const json& array(const char* key) const {
        const json& value = get(key);
        if (!value.is_array()) {
            fail(at(key), "expected an array, found " + std::string(value.type_name()));
        }
        return value;
    }

    template <typename Parse>
    auto choice(const char* key, Parse parse) const {
        const std::string value = text(key);
        try {
            return parse(at(key), value);
        } catch (const ConfigError& e) {
            throw DataError(std::string(source_) + ": " + e.what());  // the message already names the path
        }
    }

    std::string_view source() const { return source_; }

private:
    // A whole number in [min, max]; one too large for 64 bits (which the parser keeps as a floating-point number) is
    // out of range too, and the message names the value.
    std::int64_t integer_value(const json& value, const std::string& where, std::int64_t min, std::int64_t max) const {
        const std::string allowed = "; allowed: " + std::to_string(min) + " to " + std::to_string(max);
        if (value.is_number_float() && std::isfinite(value.get<double>()) && value.get<double>() == std::floor(value.get<double>()) &&
            std::abs(value.get<double>()) >= 9.2e18) {
            fail(where, value.dump() + " is out of range" + allowed);
        }
        if (!value.is_number_integer()) {
            fail(where, "expected a whole number, found " + std::string(value.type_name()));
        }
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
            fail(where, std::to_string(value.get<std::uint64_t>()) + " is out of range" + allowed);
        }
        const auto result = value.get<std::int64_t>();
        if (result < min || result > max) {
            fail(where, std::to_string(result) + " is out of range" + allowed);
        }
        return result;
    }

    double real_value(const json& value, const std::string& where) const {
        if (value.is_number()) {
            return value.get<double>();
        }
        if (value.is_string()) {
            const std::string text = value.get<std::string>();
            if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
            if (text == "inf") return std::numeric_limits<double>::infinity();
            if (text == "-inf") return -std::numeric_limits<double>::infinity();
        }
        fail(where, "expected a number (or \"nan\", \"inf\", \"-inf\"), found " +
                        (value.is_string() ? "\"" + value.get<std::string>() + "\"" : std::string(value.type_name())));
    }

    const json& object_;
    std::string path_;
    std::string_view source_;
};

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();


DeviceInfo read_device(const Reader& r) {
    DeviceInfo d;
    d.gpu_name = r.optional_text("name");
    if (r.has("compute_capability")) {
        const std::string cc = r.text("compute_capability");
        int major = 0;
        int minor = 0;
        char dot = 0;
        std::istringstream in(cc);
        if (!(in >> major >> dot >> minor) || dot != '.' || !in.eof()) {
            r.fail(r.at("compute_capability"), "'" + cc + "' is not of the form MAJOR.MINOR, e.g. \"9.0\"");
        }
        d.compute_capability = ComputeCapability{major, minor};
    }
    d.sm_count = static_cast<int>(r.integer("sm_count", 0, kIntMax));
    d.memory_total_bytes = static_cast<std::uint64_t>(r.integer("memory_total_bytes", 0, kInt64Max));
    d.memory_free_bytes = static_cast<std::uint64_t>(r.integer("memory_free_bytes", 0, kInt64Max));
    d.driver_version = r.optional_text("driver_version");
    d.cuda_runtime_version = r.optional_text("cuda_runtime_version");
    d.cublaslt_version = r.optional_text("cublaslt_version");
    d.cublaslt_library = r.optional_text("cublaslt_library");
    d.libtorch_version = r.optional_text("libtorch_version");
    d.gpu_count = r.has("gpu_count") ? static_cast<int>(r.integer("gpu_count", 0, kIntMax)) : (d.has_gpu() ? 1 : 0);
    d.gpu_error = r.optional_text("gpu_error");
    d.cpu_model = r.optional_text("cpu_model");
    d.cpu_threads = r.has("cpu_threads") ? static_cast<int>(r.integer("cpu_threads", 0, kIntMax)) : 0;
    return d;
}

void read_setting(const Reader& r, const RunSetting& s, RunConfig& c) {
    const char* key = s.json_key.data();  // the table's keys are literals
    if (!r.has(key) && s.when_absent) {
        s.set(c, *s.when_absent, r.at(key));
        return;
    }
    switch (s.kind) {
    case SettingKind::Choice:
        r.choice(key, [&](const std::string& where, const std::string& text) {
            s.set(c, text, where);
            return true;
        });
        return;
    case SettingKind::Text:
        s.set(c, r.text(key), r.at(key));
        return;
    case SettingKind::Integer:
        s.set(c, r.integer(key, s.stored->min, s.stored->max), r.at(key));
        return;
    case SettingKind::Real:
        s.set(c, r.real(key), r.at(key));
        return;
    case SettingKind::Switch:
    case SettingKind::Presence:
        s.set(c, r.boolean(key), r.at(key));
        return;
    }
}

RunConfig read_config(const Reader& r) {
    RunConfig c;
    for (const SettingSection section : setting_sections()) {
        const char* object = section_key(section).data();  // the keys are literals
        if (section != SettingSection::Config && !r.has(object)) continue;
        const Reader in = section == SettingSection::Config ? r : r.object(object);
        for (const RunSetting& s : run_settings()) {
            if (s.section == section) read_setting(in, s, c);
        }
    }
    return c;
}

std::vector<float> read_floats(const Reader& r, const char* key, std::size_t expected) {
    const json& values = r.array(key);
    if (values.size() != expected) {
        r.fail(r.at(key), std::to_string(values.size()) + " values; expected one per FP8 slot (" + std::to_string(expected) + ")");
    }
    std::vector<float> out;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const json wrapped{{"v", values[i]}};
        out.push_back(static_cast<float>(Reader(wrapped, r.at(key) + "[" + std::to_string(i) + "]", r.source()).real("v")));
    }
    return out;
}

std::vector<Fp8SlotSample> read_fp8_samples(const Reader& r, std::size_t slots) {
    const std::vector<float> amax = read_floats(r, "amax", slots);
    const std::vector<float> scale = read_floats(r, "scale", slots);
    std::vector<float> saturated, underflow;
    if (r.has("saturated")) saturated = read_floats(r, "saturated", slots);
    if (r.has("underflow")) underflow = read_floats(r, "underflow", slots);
    std::vector<float> rel_mse;
    if (r.has("rel_mse")) rel_mse = read_floats(r, "rel_mse", slots);
    std::array<std::vector<float>, kWhatIfCount> what_if;
    for (std::size_t w = 0; w < kWhatIfCount; ++w) {
        const std::string key = std::string(to_string(kWhatIfs[w])) + "_rel_mse";
        if (r.has(key.c_str())) what_if[w] = read_floats(r, key.c_str(), slots);
    }
    std::vector<Fp8SlotSample> samples(slots);
    for (std::size_t i = 0; i < slots; ++i) {
        samples[i].amax = amax[i];
        samples[i].scale = scale[i];
        if (!saturated.empty()) samples[i].saturated = saturated[i];
        if (!underflow.empty()) samples[i].underflow = underflow[i];
        if (!rel_mse.empty()) samples[i].rel_mse = rel_mse[i];
        for (std::size_t w = 0; w < kWhatIfCount; ++w) {
            if (!what_if[w].empty()) samples[i].what_if_rel_mse[w] = what_if[w][i];
        }
    }
    return samples;
}

// The block scales' histograms of an inspected run: one per FP8 slot, each inside the bins' range and with at most
// kMaxBlocks blocks (2^50: far more than any run casts, and small enough that a role's slots add up without overflow).
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 50;
std::vector<Fp8ScaleHistogram> read_block_scales(const Reader& r, std::size_t slots) {
    const std::vector<Reader> entries = r.objects("fp8_block_scales");
    if (entries.size() != slots) {
        r.fail(r.at("fp8_block_scales"),
               std::to_string(entries.size()) + " histograms; expected one per FP8 slot (" + std::to_string(slots) + ")");
    }
    constexpr int lowest = Fp8ScaleHistogram::kLowestExponent;
    constexpr int highest = lowest + Fp8ScaleHistogram::kBins - 1;
    std::vector<Fp8ScaleHistogram> out;
    for (const Reader& e : entries) {
        Fp8ScaleHistogram h;
        h.lowest_exponent = static_cast<int>(e.integer("lowest_exponent", lowest, highest));
        h.counts = e.integers("counts", 0, kMaxBlocks);
        h.empty_blocks = e.integer("empty_blocks", 0, kMaxBlocks);
        if (h.blocks() > kMaxBlocks) {
            e.fail(e.at("counts"), std::to_string(h.blocks()) + " blocks in all; allowed: at most " + std::to_string(kMaxBlocks) +
                                       " (more than any run casts)");
        }
        if (h.lowest_exponent + static_cast<std::int64_t>(h.counts.size()) - 1 > highest) {
            e.fail(e.at("counts"), std::to_string(h.counts.size()) + " binades from 2^" + std::to_string(h.lowest_exponent) +
                                       " reach past 2^" + std::to_string(highest) + ", the last bin");
        }
        out.push_back(std::move(h));
    }
    return out;
}

StepBreakdown read_breakdown(const Reader& r) {
    StepBreakdown b;
    for (const StepSegment segment : kStepSegments) {
        const std::string key = std::string(to_string(segment)) + "_ms";
        if (segment == StepSegment::Communication && !r.has(key.c_str())) continue;  // records before data parallelism
        b.at(segment) = r.real(key.c_str());
    }
    return b;
}

std::vector<Fallback> read_fallbacks(const Reader& exe) {
    std::vector<Fallback> out;
    for (const Reader& f : exe.objects("fallbacks")) {
        out.push_back({f.text("op"), f.text("reason"), f.integer("count", 0, kInt64Max)});
    }
    return out;
}

KernelProfile read_kernel_profile(const Reader& r) {
    KernelProfile p;
    p.step = static_cast<int>(r.integer("step", 1, kIntMax));
    p.source = r.text("source");
    p.step_ms = r.real("step_ms");
    if (!(p.step_ms >= 0)) r.fail(r.at("step_ms"), "expected a duration of 0 ms or more");
    p.trace_path = r.text("trace_path");
    const auto times = [](const Reader& from, const char* key) {
        std::vector<KernelTime> out;
        for (const Reader& k : from.objects(key)) {
            KernelTime row{k.text("name"), static_cast<std::uint64_t>(k.integer("launches", 0, kInt64Max)), k.real("total_us")};
            if (!(row.total_us >= 0)) k.fail(k.at("total_us"), "expected a duration of 0 or more");
            if (k.has("work")) {  // absent before memsets and copies were told from kernels
                const auto work = launch_work_from(k.text("work"));
                if (!work) k.fail(k.at("work"), "expected kernel, helper, memset or copy");
                row.work = *work;
            }
            out.push_back(std::move(row));
        }
        return out;
    };
    p.kernels = times(r, "kernels");
    if (r.has("op_ranges")) p.op_ranges = times(r, "op_ranges");
    if (r.has("launches_by_op")) {
        for (const Reader& o : r.objects("launches_by_op")) {
            const auto count = [&o](const char* key) { return static_cast<std::uint64_t>(o.integer(key, 0, kInt64Max)); };
            p.launches_by_op.push_back({o.text("op"), count("kernels"), count("memsets"), count("copies")});
        }
    }
    return p;
}

Ledger read_ledger(const Reader& r) {
    const auto count = [](const Reader& from, const char* key) {
        return static_cast<std::uint64_t>(from.integer(key, 0, kInt64Max));
    };
    Ledger l;
    l.step = static_cast<int>(r.integer("step", 1, kIntMax));
    l.source = r.text("source");
    l.layers = static_cast<int>(r.integer("layers", 0, kIntMax));
    for (const Reader& row : r.objects("rows")) {
        LaunchWork work = LaunchWork::Kernel;  // records from before the GPU's other work had rows of its own
        if (row.has("work")) {
            const auto parsed = launch_work_from(row.text("work"));
            if (!parsed) row.fail(row.at("work"), "expected kernel, helper, memset or copy");
            work = *parsed;
        }
        l.rows.push_back({static_cast<int>(row.integer("layer", -1, kIntMax)), row.text("scope"), row.text("op"), work,
                          count(row, "calls"), count(row, "launches"), row.boolean("launches_known"),
                          count(row, "bytes_read"), count(row, "bytes_written")});
    }
    l.launches_per_layer = r.real("launches_per_layer");
    l.bytes_per_layer = r.real("bytes_per_layer");
    l.saved_bytes_per_layer = r.real("saved_bytes_per_layer");
    const json& saved = r.array("saved_bytes_by_layer");
    for (std::size_t i = 0; i < saved.size(); ++i) {
        if (!saved[i].is_number_integer()) {
            r.fail(r.at("saved_bytes_by_layer") + "[" + std::to_string(i) + "]", "expected a whole number");
        }
        l.saved_bytes_by_layer.push_back(saved[i].get<std::int64_t>());
    }
    l.launches_per_step = count(r, "launches_per_step");
    l.bytes_per_step = count(r, "bytes_per_step");
    l.unknown_launches_per_step = count(r, "unknown_launches_per_step");
    if (r.has("host_waits")) {  // absent in records from before they were counted
        for (const Reader& row : r.objects("host_waits")) {
            LedgerRow wait;
            wait.layer = static_cast<int>(row.integer("layer", -1, kIntMax));
            wait.scope = row.text("scope");
            wait.op = row.text("op");
            wait.calls = count(row, "calls");
            l.host_waits.push_back(std::move(wait));
        }
    }
    return l;
}

DistExecution read_dist(const Reader& r) {
    DistExecution d;
    d.world_size = static_cast<int>(r.integer("world_size", 1, kIntMax));
    d.backend = r.text("backend");
    d.bucket_mb = r.real("bucket_mb");
    d.buckets = static_cast<int>(r.integer("buckets", 0, kIntMax));
    if (r.has("allreduce_bytes")) d.allreduce_bytes = static_cast<std::uint64_t>(r.integer("allreduce_bytes", 0, kInt64Max));
    d.amax_reduction = r.boolean("amax_reduction");
    d.buckets_started_during_backward = static_cast<int>(r.integer("buckets_started_during_backward", 0, kIntMax));
    d.rank_mean_ms = r.reals("rank_mean_ms");
    d.scaling_efficiency = r.optional_real("scaling_efficiency");
    d.baseline_run_id = r.optional_text("baseline_run_id");
    d.baseline_noisy = r.has("baseline_noisy") && r.boolean("baseline_noisy");
    d.baseline_threads = r.has("baseline_threads") ? static_cast<int>(r.integer("baseline_threads", 0, kIntMax)) : 0;
    return d;
}

// Measurement quality: a figure that is there must be a finite number of 0 or more.
MeasurementQuality read_quality(const Reader& r) {
    const auto figure = [&r](const char* key) {
        const std::optional<double> v = r.optional_real(key);
        if (v && !(std::isfinite(*v) && *v >= 0)) r.fail(r.at(key), "expected a finite number of 0 or more");
        return v;
    };
    const auto clock = [&r](const char* key) {
        return r.has(key) ? std::optional<unsigned>(static_cast<unsigned>(r.integer(key, 0, 1'000'000))) : std::nullopt;
    };
    MeasurementQuality q;
    q.cv = figure("cv");
    q.others_cpu_cores = figure("others_cpu_cores");
    q.load_average = figure("load_average");
    q.cores = static_cast<int>(r.integer("cores", 0, kIntMax));
    q.threads = r.has("threads") ? static_cast<int>(r.integer("threads", 0, kIntMax)) : 0;  // absent in older records
    q.machine_note = r.optional_text("machine_note");
    q.gpu_applies = r.boolean("gpu_applies");
    q.gpu_measured = r.boolean("gpu_measured");
    q.gpu_note = r.optional_text("gpu_note");
    q.gpu_other_processes = static_cast<int>(r.integer("gpu_other_processes", 0, kIntMax));
    q.gpu_throttle_reasons = r.texts("gpu_throttle_reasons");
    q.sm_clock_mhz = clock("sm_clock_mhz");
    q.max_sm_clock_mhz = clock("max_sm_clock_mhz");
    q.noisy = r.boolean("noisy");
    q.reasons = r.texts("reasons");
    return q;
}

StepMetrics read_step(const Reader& r) {
    StepMetrics s;
    s.step = static_cast<int>(r.integer("step", 1, kIntMax));
    s.phase = r.choice("phase", parse_name<Phase>);
    s.loss = r.real("loss");
    s.step_ms = r.real("step_ms");
    s.mem_bytes = static_cast<std::uint64_t>(r.integer("mem_bytes", 0, kInt64Max));
    s.tokens_per_s = r.has("tokens_per_s") ? r.real("tokens_per_s") : 0.0;
    s.elapsed_ms = r.has("elapsed_ms") ? r.real("elapsed_ms") : 0.0;
    if (r.has("breakdown")) s.breakdown = read_breakdown(r.object("breakdown"));
    if (r.has("rank_ms")) s.rank_ms = r.reals("rank_ms");
    s.val_loss = r.optional_real("val_loss");
    return s;
}

RunSummary read_summary(const Reader& r) {
    RunSummary s;
    s.timed_steps = static_cast<int>(r.integer("timed_steps", 0, kIntMax));
    s.mean_ms = r.optional_real("mean_ms");
    s.median_ms = r.optional_real("median_ms");
    s.p90_ms = r.optional_real("p90_ms");
    s.tokens_per_s = r.optional_real("tokens_per_s");
    s.tflops = r.optional_real("tflops");
    s.mfu = r.optional_real("mfu");
    s.peak_mem_bytes = static_cast<std::uint64_t>(r.integer("peak_mem_bytes", 0, kInt64Max));
    s.final_loss = r.optional_real("final_loss");
    s.final_val_loss = r.optional_real("final_val_loss");
    if (r.has("final_val_step")) s.final_val_step = static_cast<int>(r.integer("final_val_step", 1, kIntMax));
    if (r.has("breakdown")) {
        s.breakdown = read_breakdown(r.object("breakdown"));
        s.breakdown_source = r.optional_text("breakdown_source");
    }
    return s;
}

}  // namespace

namespace {

Environment read_environment(const Reader& env) {
    Environment environment;
    environment.device = read_device(env.object("device"));
    environment.mode = env.choice("mode", parse_name<Mode>);
    const json& reasons = env.array("reasons");
    for (std::size_t i = 0; i < reasons.size(); ++i) {
        if (!reasons[i].is_string()) {
            env.fail(env.at("reasons") + "[" + std::to_string(i) + "]", "expected a string");
        }
        environment.reasons.push_back(reasons[i].get<std::string>());
    }
    const Reader build = env.object("build");
    environment.build = BuildInfo{build.text("version"), build.text("commit"), build.optional_text("build_type"),
                                  build.optional_text("compiler"), build.boolean("cuda_kernels")};
    environment.hostname = env.optional_text("hostname");
    return environment;
}

Execution read_execution(const Reader& exe) {
    Execution execution;
    execution.device = exe.text("device");
    execution.implementation = exe.text("implementation");
    execution.memory_metric = exe.choice("memory_metric", parse_name<MemoryMetric>);
    execution.flops_per_step = exe.real("flops_per_step");
    execution.peak_tflops = exe.optional_real("peak_tflops");
    execution.peak_source = exe.optional_text("peak_source");
    execution.fp8_emulated = exe.has("fp8_emulated") && exe.boolean("fp8_emulated");
    execution.cuda_graph = exe.has("cuda_graph") && exe.boolean("cuda_graph");
    execution.cuda_graph_note = exe.optional_text("cuda_graph_note");
    execution.fp8_inspection_ms = exe.optional_real("fp8_inspection_ms");
    execution.fused_launches_per_step = exe.optional_real("fused_launches_per_step");
    execution.attention_backend = exe.optional_text("attention_backend");
    execution.te_impl = exe.optional_text("te_impl");  // empty: a torch run, or a record from before it was kept
    if (exe.has("fallbacks")) execution.fallbacks = read_fallbacks(exe);
    if (exe.has("ledger")) execution.ledger = read_ledger(exe.object("ledger"));  // absent in older records
    if (exe.has("kernel_profile")) execution.kernel_profile = read_kernel_profile(exe.object("kernel_profile"));
    execution.kernel_profile_error = exe.optional_text("kernel_profile_error");
    if (exe.has("dist")) execution.dist = read_dist(exe.object("dist"));
    if (exe.has("quality")) execution.quality = read_quality(exe.object("quality"));  // absent: not measured
    if (exe.has("weights_digest")) {
        const Reader w = exe.object("weights_digest");
        execution.weights_digest = WeightsDigest{w.real("sum"), w.real("sum_abs"), w.real("sum_squares")};
    }
    if (exe.has("graph_kernels")) {
        execution.graph_kernels = static_cast<int>(exe.integer("graph_kernels", 0, kIntMax));
    }
    if (exe.has("graph_pool_bytes")) {
        execution.graph_pool_bytes = static_cast<std::uint64_t>(exe.integer("graph_pool_bytes", 0, kInt64Max));
    }
    return execution;
}

// The FP8 slots, then the steps (whose FP8 samples have one value per slot), in increasing step order.
void read_slots_and_steps(const Reader& r, RunRecord& record) {
    if (r.has("fp8_slots")) {
        for (const Reader& slot : r.objects("fp8_slots")) {
            record.fp8_slots.push_back(
                {slot.text("module"), slot.choice("slot", parse_name<SlotRole>), slot.choice("dtype", parse_name<Fp8Dtype>)});
        }
    }
    int previous = 0;
    for (const Reader& step_reader : r.objects("steps")) {
        StepMetrics step = read_step(step_reader);
        if (step_reader.has("fp8")) {
            step.fp8 = read_fp8_samples(step_reader.object("fp8"), record.fp8_slots.size());
        }
        if (step.step <= previous) {
            step_reader.fail(step_reader.at("step"), std::to_string(step.step) + " does not follow step " +
                                                         std::to_string(previous) + "; steps must increase");
        }
        previous = step.step;
        record.steps.push_back(step);
    }
    if (r.has("fp8_block_scales")) record.fp8_block_scales = read_block_scales(r, record.fp8_slots.size());
}

DataFileInfo read_data_file(const Reader& r) {
    DataFileInfo d;
    d.name = r.text("name");
    d.size_bytes = static_cast<std::uint64_t>(r.integer("size_bytes", 1, kInt64Max));
    d.sha256 = r.text("sha256");
    if (d.sha256.size() != 64 || d.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
        r.fail(r.at("sha256"), "expected 64 lowercase hex digits");
    }
    d.format = r.choice("format", parse_name<TokenFormat>);
    if (d.format == TokenFormat::Auto) r.fail(r.at("format"), "auto is what was asked, not what was read; allowed: bytes, uint16, llmc");
    d.tokens = r.integer("tokens", 1, kInt64Max);
    d.val_tokens = r.integer("val_tokens", 0, d.tokens);
    d.max_token = static_cast<int>(r.integer("max_token", 0, kIntMax));
    return d;
}

RepeatInfo read_repeat(const Reader& repeat) {
    RepeatInfo info{repeat.text("group"), static_cast<int>(repeat.integer("index", 1, kMaxRepeats)),
                    static_cast<int>(repeat.integer("count", 1, kMaxRepeats))};
    if (info.index > info.count) {
        repeat.fail(repeat.at("index"), std::to_string(info.index) + " is past count " + std::to_string(info.count));
    }
    return info;
}

}  // namespace

RunRecord record_from_json(const json& document, std::string_view source) {
    const Reader r(document, "$", source);
    RunRecord record;
    record.schema_version = static_cast<int>(r.integer("schema_version", 1, kIntMax));
    if (record.schema_version != RunRecord::kSchemaVersion) {
        r.fail(r.at("schema_version"), "version " + std::to_string(record.schema_version) +
                                           " is not supported; this build reads version " +
                                           std::to_string(RunRecord::kSchemaVersion) + " (a newer te-workbench wrote it?)");
    }
    record.id = r.text("id");
    if (record.id.empty()) {
        r.fail(r.at("id"), "must not be empty");
    }
    record.created_at = r.text("created_at");
    record.status = r.choice("status", parse_name<RunStatus>);
    if (r.has("error_kind")) record.error_kind = r.choice("error_kind", parse_name<ErrorKind>);
    record.message = r.optional_text("message");
    record.config = read_config(r.object("config"));
    record.environment = read_environment(r.object("environment"));
    record.execution = read_execution(r.object("execution"));
    read_slots_and_steps(r, record);
    record.summary = read_summary(r.object("summary"));
    if (r.has("repeat")) record.repeat = read_repeat(r.object("repeat"));
    if (r.has("data_file")) record.data_file = read_data_file(r.object("data_file"));
    return record;
}

RunConfig config_from_json_text(std::string_view text, std::string_view source) {
    json document;
    try {
        document = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        throw DataError(std::string(source) + ": not valid JSON (" + e.what() + ")");
    }
    return read_config(Reader(document, "$", source));
}

RunRecord record_from_json_text(std::string_view text, std::string_view source) {
    json document;
    try {
        document = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past a double
        throw DataError(std::string(source) + ": not valid JSON (" + e.what() + ")");
    }
    return record_from_json(document, source);
}

namespace {
json parse_file(const std::string& path) {
    // Checked before opening: a directory reads as garbage and a FIFO with no writer blocks forever.
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
        throw DataError(path + ": cannot be reached (" + ec.message() + ")");
    }
    if (!std::filesystem::exists(status)) {
        throw DataError(path + ": no such file");
    }
    if (!std::filesystem::is_regular_file(status)) {
        throw DataError(path + ": is " +
                        (std::filesystem::is_directory(status) ? std::string("a directory")
                         : std::filesystem::is_fifo(status)    ? std::string("a FIFO")
                                                               : std::string("not a regular file")) +
                        "; allowed: a JSON file written by te-bench run --json or history export");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw DataError(path + ": cannot be opened for reading");
    }
    try {
        return json::parse(in);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past a double
        throw DataError(path + ": not valid JSON (" + e.what() + ")");
    }
}
}  // namespace

RunRecord read_record_file(const std::string& path) {
    return record_from_json(parse_file(path), path);
}

std::vector<RunRecord> read_record_files(const std::string& path) {
    const json document = parse_file(path);
    std::vector<RunRecord> records;
    // `te-bench compare --json` writes {"baseline": ..., "runs": [records], "skipped": [...]}: its records are
    // the runs. A record itself always has a schema_version.
    if (document.is_object() && !document.contains("schema_version") && document.contains("runs")) {
        const json& runs = document["runs"];
        if (!runs.is_array()) {
            throw DataError(path + ": \"runs\" is " + std::string(runs.is_object() ? "an " : "a ") + runs.type_name() + ", not a list of run records; allowed: one record, a list "
                            "of records, or te-bench compare --json's {\"runs\": [records]}");
        }
        for (std::size_t i = 0; i < runs.size(); ++i) {
            records.push_back(record_from_json(runs[i], path + " runs[" + std::to_string(i) + "]"));
        }
        return records;
    }
    if (!document.is_array()) {
        records.push_back(record_from_json(document, path));
        return records;
    }
    for (std::size_t i = 0; i < document.size(); ++i) {
        records.push_back(record_from_json(document[i], path + " [" + std::to_string(i) + "]"));
    }
    return records;
}

}  // namespace tewb
