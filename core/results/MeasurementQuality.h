#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tewb {

// How far a run's step times can be trusted: how much they varied, and what else the machine (and on a GPU
// the device) was doing while they were timed. Recorded per run (Execution::quality; a record without it,
// from before it was kept, is "not measured", never clean). The rule that calls a run noisy lives here only
// (judge_quality); docs/benchmarks.md, "Measurement quality", explains the thresholds.
struct MeasurementQuality {
    // Sample standard deviation / mean of the timed steps' ms; nothing for fewer than 2 timed steps.
    std::optional<double> cv;
    // The machine over the timed steps (/proc): other processes' CPU time as cores kept busy on average, and
    // the 1-minute load average at their end against the cores online. `machine_note`: why a figure is missing.
    std::optional<double> others_cpu_cores;
    std::optional<double> load_average;
    int cores = 0;
    std::string machine_note;
    // LibTorch's intra-op threads the run computed with (a CPU run's own share of the cores; a data-parallel
    // rank takes cores / N); 0 in records from before it was kept.
    int threads = 0;
    // The GPU (NVML, sampled at the start and the end of the timed steps) on CUDA runs. `gpu_applies` is false on
    // the CPU; `gpu_measured` false where NVML did not answer, `gpu_note` saying why (or that it does not apply).
    bool gpu_applies = false;
    bool gpu_measured = false;
    std::string gpu_note;
    int gpu_other_processes = 0;                    // the most seen at either sample
    std::vector<std::string> gpu_throttle_reasons;  // the union of both samples' active reasons, in words
    std::optional<unsigned> sm_clock_mhz;           // at the end
    std::optional<unsigned> max_sm_clock_mhz;
    // judge_quality's verdict and its reasons in words ("step times vary by 14 % (CV)").
    bool noisy = false;
    std::vector<std::string> reasons;

    friend bool operator==(const MeasurementQuality&, const MeasurementQuality&) = default;
};

// The thresholds. Step times whose CV exceeds 10 % (pyperf warns at the same share of the mean) are noisy.
// The run was disturbed, and is noisy too, when other processes kept more than half a core busy on average,
// when the 1-minute load average exceeded 1.25 per core online (the run's own threads count in it, so a CPU
// run that uses every core holds it near the cores by itself; a quarter more means other threads waited),
// when another process computed on the same GPU, or when the GPU reported a clock-event reason that is not
// part of normal operation (device/GpuContention's throttle_reason_is_benign: idling, the application-clock
// or display-clock setting).
inline constexpr double kNoisyCv = 0.10;
inline constexpr double kDisturbingOtherCores = 0.5;
inline constexpr double kDisturbingLoadPerCore = 1.25;

// Sets `noisy` and `reasons` from the measured figures (figures that are missing add no reason).
void judge_quality(MeasurementQuality& quality);

// Whether a record's quality says noisy (a record without one is not noisy, only not measured).
bool is_noisy(const std::optional<MeasurementQuality>& quality);
// The table cell: "3.1%", "14.2% noisy", "noisy" (disturbed, CV unknown), "-" (nothing measured).
std::string quality_cell(const std::optional<MeasurementQuality>& quality);
// The reasons in one line: "step times vary by 14 % (CV); other processes used 1.3 cores"; for a record without
// a quality, "measurement quality not recorded (an older record)"; empty for a clean run.
std::string quality_reasons_text(const std::optional<MeasurementQuality>& quality);
// Every figure in words for a tooltip or a report: CV, the machine's load, the GPU's, and the verdict.
std::string quality_details_text(const std::optional<MeasurementQuality>& quality);
// A name marked as noisy: "te bf16 (noisy)"; unchanged when not noisy.
std::string noisy_name(const std::string& name, const std::optional<MeasurementQuality>& quality);

}  // namespace tewb
