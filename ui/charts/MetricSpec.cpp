#include "ui/charts/MetricSpec.h"

#include <algorithm>
#include <cmath>

#include <QCoreApplication>
#include <QLocale>

namespace tewb::ui {

namespace {
QString tr(const char* text) {
    return QCoreApplication::translate("MetricSpec", text);
}
}  // namespace

MetricSpec loss_metric() {
    MetricSpec spec{QStringLiteral("loss"), tr("Loss"), tr("cross-entropy loss"),
                    [](const RunRecord&, const StepMetrics& s) -> std::optional<double> { return s.loss; }};
    spec.companion = [](const RunRecord&, const StepMetrics& s) { return s.val_loss; };
    spec.companion_suffix = tr(" (validation)");
    return spec;
}

MetricSpec step_ms_metric() {
    return {QStringLiteral("step_ms"), tr("Step time"), tr("ms per step"),
            [](const RunRecord&, const StepMetrics& s) -> std::optional<double> { return s.step_ms; },
            [](const RunRecord&, const StepMetrics& s) -> std::optional<std::pair<double, double>> {
                if (s.rank_ms.size() < 2) return std::nullopt;
                const auto [lo, hi] = std::minmax_element(s.rank_ms.begin(), s.rank_ms.end());
                return std::pair{*lo, *hi};
            }};
}

MetricSpec memory_metric() {
    MetricSpec spec{QStringLiteral("memory"), tr("Peak memory"), tr("MiB"),
                    [](const RunRecord&, const StepMetrics& s) -> std::optional<double> {
                        return static_cast<double>(s.mem_bytes) / (1024.0 * 1024.0);
                    }};
    spec.unit_for = memory_axis_title;
    spec.start_at_zero = true;
    return spec;
}

QString memory_axis_title(const std::vector<const RunRecord*>& runs) {
    const auto has = [&](MemoryMetric metric) {
        return std::any_of(runs.begin(), runs.end(), [&](const RunRecord* r) { return r->execution.memory_metric == metric; });
    };
    const bool cpu = has(MemoryMetric::CpuPeakRss);
    const bool gpu = has(MemoryMetric::CudaPeakAllocated);
    // Short: a small chart carries it in its title.
    if (cpu && gpu) return tr("MiB: RSS on CPU, CUDA allocator on GPU");
    if (gpu) return tr("CUDA allocator, MiB");
    if (cpu) return tr("process RSS, MiB");
    return tr("MiB");
}

MetricSpec fp8_metric(const Fp8SlotKey& slot, Fp8Quantity quantity) {
    const QString what = quantity == Fp8Quantity::Amax ? tr("amax") : tr("scale");
    MetricSpec spec;
    spec.id = quantity == Fp8Quantity::Amax ? QStringLiteral("fp8_amax") : QStringLiteral("fp8_scale");
    spec.title = QStringLiteral("%1 · %2 %3")
                     .arg(QString::fromStdString(slot.module), QString::fromUtf8(to_string(slot.role).data()), what);
    spec.unit = what;
    spec.value = [slot, quantity](const RunRecord& record, const StepMetrics& step) -> std::optional<double> {
        for (std::size_t i = 0; i < record.fp8_slots.size() && i < step.fp8.size(); ++i) {
            if (record.fp8_slots[i].module == slot.module && record.fp8_slots[i].role == slot.role) {
                return quantity == Fp8Quantity::Amax ? step.fp8[i].amax : step.fp8[i].scale;
            }
        }
        return std::nullopt;
    };
    return spec;
}

double x_of(XAxis axis, const RunRecord& run, const StepMetrics& step) {
    switch (axis) {
        case XAxis::Step: return step.step;
        case XAxis::Tokens: return static_cast<double>(step.step) * static_cast<double>(run.config.tokens_per_step()) / 1000.0;
        case XAxis::Time: return step.elapsed_ms / 1000.0;
    }
    return step.step;
}

QString x_axis_title(XAxis axis) {
    switch (axis) {
        case XAxis::Step: return tr("step");
        case XAxis::Tokens: return tr("tokens (thousands)");
        case XAxis::Time: return tr("time (s)");
    }
    return {};
}

namespace {
std::optional<double> finite_number(const QString& text) {
    bool ok = false;
    const double v = QLocale::c().toDouble(text.trimmed(), &ok);
    if (!ok || !std::isfinite(v)) return std::nullopt;
    return v;
}
}  // namespace

YRangeInput parse_y_range(const QString& lo, const QString& hi, bool log_y) {
    const std::optional<double> low = finite_number(lo);
    if (!low) return {std::nullopt, tr("lowest y '%1' is not a number (write e.g. 2.5 or 1e-3)").arg(lo.trimmed())};
    const std::optional<double> high = finite_number(hi);
    if (!high) return {std::nullopt, tr("highest y '%1' is not a number (write e.g. 2.5 or 1e-3)").arg(hi.trimmed())};
    if (!(*low < *high)) {
        return {std::nullopt, tr("lowest y %1 must be below highest y %2").arg(*low, 0, 'g', 6).arg(*high, 0, 'g', 6)};
    }
    if (log_y && *low <= 0) {
        return {std::nullopt, tr("lowest y %1 must be above 0 on a logarithmic axis").arg(*low, 0, 'g', 6)};
    }
    return {YRange{*low, *high}, {}};
}

}  // namespace tewb::ui
