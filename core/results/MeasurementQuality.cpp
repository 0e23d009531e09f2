#include "core/results/MeasurementQuality.h"

#include <algorithm>

#include "core/common/TextTable.h"
#include "core/device/GpuContention.h"

namespace tewb {

namespace {

std::string percent(double share) {
    return format_fixed(share * 100.0, 1, " %");
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
    std::string out;
    for (const std::string& part : parts) {
        if (!out.empty()) out += separator;
        out += part;
    }
    return out;
}

std::string cores_words(int cores) {
    return std::to_string(cores) + (cores == 1 ? " core" : " cores");
}

}  // namespace

void judge_quality(MeasurementQuality& q) {
    q.reasons.clear();
    if (q.cv && *q.cv > kNoisyCv) {
        q.reasons.push_back("step times vary by " + percent(*q.cv) + " (CV; noisy above " + percent(kNoisyCv) + ")");
    }
    if (q.others_cpu_cores && *q.others_cpu_cores > kDisturbingOtherCores) {
        q.reasons.push_back("other processes used " + format_fixed(q.others_cpu_cores, 1) + " cores");
    }
    if (q.load_average && q.cores > 0 && *q.load_average > kDisturbingLoadPerCore * static_cast<double>(q.cores)) {
        q.reasons.push_back("the load average was " + format_fixed(q.load_average, 1) + " on " + cores_words(q.cores));
    }
    if (q.gpu_measured && q.gpu_other_processes > 0) {
        q.reasons.push_back(std::to_string(q.gpu_other_processes) +
                            (q.gpu_other_processes == 1 ? " other process" : " other processes") + " computed on the GPU");
    }
    std::vector<std::string> throttles;
    for (const std::string& reason : q.gpu_throttle_reasons) {
        if (!throttle_reason_is_benign(reason)) throttles.push_back(reason);
    }
    if (q.gpu_measured && !throttles.empty()) q.reasons.push_back("the GPU lowered its clocks (" + join(throttles, ", ") + ")");
    q.noisy = !q.reasons.empty();
}

bool is_noisy(const std::optional<MeasurementQuality>& q) {
    return q && q->noisy;
}

std::string quality_cell(const std::optional<MeasurementQuality>& q) {
    if (!q) return "-";
    if (!q->cv) return q->noisy ? "noisy" : "-";
    return format_fixed(*q->cv * 100.0, 1, "%") + (q->noisy ? " noisy" : "");
}

std::string quality_reasons_text(const std::optional<MeasurementQuality>& q) {
    if (!q) return "measurement quality not recorded (an older record)";
    return join(q->reasons, "; ");
}

std::string quality_details_text(const std::optional<MeasurementQuality>& q) {
    if (!q) return "Measurement quality: not recorded (an older record), so not known to be clean.";
    std::vector<std::string> parts;
    parts.push_back(q->cv ? "step times' CV " + percent(*q->cv) : "step times' CV not measured (fewer than 2 timed steps)");
    if (q->others_cpu_cores) parts.push_back("other processes " + format_fixed(q->others_cpu_cores, 2) + " cores busy");
    if (q->load_average) parts.push_back("load average " + format_fixed(q->load_average, 2) + " on " + cores_words(q->cores));
    if (q->threads > 0) parts.push_back(std::to_string(q->threads) + (q->threads == 1 ? " LibTorch thread" : " LibTorch threads"));
    if (!q->machine_note.empty()) parts.push_back("machine load: " + q->machine_note);
    if (!q->gpu_applies) {
        parts.push_back("GPU contention: does not apply (a CPU run)");
    } else if (!q->gpu_measured) {
        parts.push_back("GPU contention not measured: " + q->gpu_note);
    } else {
        std::string gpu = std::to_string(q->gpu_other_processes) + " other processes on the GPU";
        gpu += q->gpu_throttle_reasons.empty() ? ", no clock-event reasons"
                                               : ", clock events: " + join(q->gpu_throttle_reasons, ", ");
        if (q->sm_clock_mhz) gpu += ", SM clock " + std::to_string(*q->sm_clock_mhz) + " MHz";
        if (q->max_sm_clock_mhz) gpu += " of " + std::to_string(*q->max_sm_clock_mhz) + " MHz";
        parts.push_back(gpu);
    }
    const std::string verdict = q->noisy ? "Noisy: " + join(q->reasons, "; ") + "." : "Not noisy.";
    return verdict + " Measured: " + join(parts, "; ") + ".";
}

std::string noisy_name(const std::string& name, const std::optional<MeasurementQuality>& q) {
    return is_noisy(q) ? name + " (noisy)" : name;
}

}  // namespace tewb
