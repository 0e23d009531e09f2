#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <QString>

#include "core/fp8/Fp8Stats.h"
#include "core/results/RunRecord.h"

namespace tewb::ui {

// What one chart plots: a value per step of a run, with the words for its title and axis.
struct MetricSpec {
    QString id;     // file-name friendly: "loss", "step_ms", "memory", "fp8_amax"
    QString title;  // "Loss"
    QString unit;   // axis label: "ms per step"
    std::function<std::optional<double>(const RunRecord&, const StepMetrics&)> value;
    // Where a step has several values behind its one (the ranks of a data-parallel job): their lowest and
    // highest, drawn as a band around the run's line. Not set where a metric has none.
    std::function<std::optional<std::pair<double, double>>(const RunRecord&, const StepMetrics&)> spread = nullptr;
    // The axis title for the runs shown, where it depends on them (what peak memory measures differs between
    // CPU and GPU runs); `unit` where not set.
    std::function<QString(const std::vector<const RunRecord*>&)> unit_for = nullptr;
    // The y axis starts at zero (unless log or zoomed): a difference of a few MiB on 400 MiB of memory would
    // otherwise fill the chart's height.
    bool start_at_zero = false;
    // A second value of some steps, drawn beside each run's line in the run's colour (dotted, a marker at each
    // value) and named "<run><companion_suffix>": the held-out loss of runs on a token file. A run without such
    // values has no second line.
    std::function<std::optional<double>(const RunRecord&, const StepMetrics&)> companion = nullptr;
    QString companion_suffix = {};
};

MetricSpec loss_metric();  // with the validation loss as its companion
MetricSpec step_ms_metric();
MetricSpec memory_metric();  // MiB
// What peak memory measures for these runs: the process's RSS on the CPU, the CUDA allocator's peak on a GPU,
// and both named when both kinds are shown.
QString memory_axis_title(const std::vector<const RunRecord*>& runs);

// One FP8 slot, found by module and role so runs of the same model line up.
struct Fp8SlotKey {
    std::string module;
    SlotRole role = SlotRole::Input;
    friend bool operator==(const Fp8SlotKey&, const Fp8SlotKey&) = default;
};
enum class Fp8Quantity { Amax, Scale };
MetricSpec fp8_metric(const Fp8SlotKey& slot, Fp8Quantity quantity);

// What the x axis counts: steps, tokens trained (thousands; a data-parallel job's step trains every rank's tokens)
// or wall-clock seconds since the run started.
enum class XAxis { Step, Tokens, Time };
// The x value of one step of `run` on `axis`.
double x_of(XAxis axis, const RunRecord& run, const StepMetrics& step);
QString x_axis_title(XAxis axis);

// A y range a person typed for one chart (instead of the range that follows the data).
struct YRange {
    double lo = 0;
    double hi = 1;
    friend bool operator==(const YRange&, const YRange&) = default;
};
// The range typed as two numbers, or why it cannot be one (which value, why, what is allowed): both finite numbers,
// lo < hi, and on a logarithmic axis both > 0.
struct YRangeInput {
    std::optional<YRange> range;
    QString error;
};
YRangeInput parse_y_range(const QString& lo, const QString& hi, bool log_y);
struct PlotOptions {
    XAxis x = XAxis::Step;
    double smoothing = 0;  // EMA weight in [0, 1); 0 shows the raw line only
    bool log_y = false;
    bool dark = false;

    friend bool operator==(const PlotOptions&, const PlotOptions&) = default;
};

}  // namespace tewb::ui
