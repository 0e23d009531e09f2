#include "ui/charts/TimeBreakdownChart.h"

#include <algorithm>

#include <QBarCategoryAxis>
#include <QBarLegendMarker>
#include <QBarSet>
#include <QChart>
#include <QGraphicsLayout>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QToolTip>
#include <QValueAxis>

#include "ui/charts/SeriesMath.h"
#include "ui/common/Theme.h"

namespace tewb::ui {

namespace {

// Fixed colours per segment (the runs' own colours are for runs, not for parts of a step).
QColor segment_colour(StepSegment segment) {
    switch (segment) {
        case StepSegment::Forward: return QColor(0x4c, 0x72, 0xb0);
        case StepSegment::Backward: return QColor(0xdd, 0x84, 0x52);
        case StepSegment::Communication: return QColor(0x81, 0x72, 0xb3);
        case StepSegment::Optimizer: return QColor(0x55, 0xa8, 0x68);
        case StepSegment::Fp8: return QColor(0xc4, 0x4e, 0x52);
    }
    return Qt::gray;
}

QString segment_label(StepSegment segment) {
    switch (segment) {
        case StepSegment::Forward: return TimeBreakdownChart::tr("forward");
        case StepSegment::Backward: return TimeBreakdownChart::tr("backward");
        case StepSegment::Communication: return TimeBreakdownChart::tr("communication (not hidden)");
        case StepSegment::Optimizer: return TimeBreakdownChart::tr("optimizer");
        case StepSegment::Fp8: return TimeBreakdownChart::tr("FP8 bookkeeping");
    }
    return {};
}

}  // namespace

TimeBreakdownChart::TimeBreakdownChart(QWidget* parent) : QChartView(parent) {
    setObjectName(QStringLiteral("timeBreakdown"));
    setRenderHint(QPainter::Antialiasing);
    setToolTip(tr("Mean ms per step spent in each part of the step (timed steps; for a CUDA-graph run the eager "
                  "warm-up steps, as a replay is one launch)"));
    rebuild();
}

void TimeBreakdownChart::show(const std::vector<RunRecord>& records) {
    // A live run changes its summary every refresh; the bars only when a breakdown or a name does.
    const auto same = [&] {
        if (records.size() != records_.size()) return false;
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (records[i].summary.breakdown != records_[i].summary.breakdown || display_name(records[i]) != display_name(records_[i]) ||
                records[i].config.inspect_fp8 != records_[i].config.inspect_fp8) {
                return false;
            }
        }
        return true;
    };
    if (same() && !sets_.empty()) return;
    records_ = records;
    rebuild();
}

void TimeBreakdownChart::setDark(bool dark) {
    dark_ = dark;
    rebuild();
}

std::vector<double> TimeBreakdownChart::values(StepSegment segment) const {
    std::vector<double> out;
    const QBarSet* set = sets_[static_cast<std::size_t>(segment)];
    for (int i = set->count() - 1; i >= 0; --i) out.push_back(set->at(i));  // the bars run bottom-up
    return out;
}

QString TimeBreakdownChart::segmentToolTip(int row, StepSegment segment) const {
    if (row < 0 || row >= static_cast<int>(records_.size())) return {};
    const RunRecord& r = records_[static_cast<std::size_t>(row)];
    if (!r.summary.breakdown) return tr("%1: no breakdown recorded").arg(QString::fromStdString(display_name(r)));
    const double total = r.summary.breakdown->total_ms();
    const double ms = r.summary.breakdown->at(segment);
    QString tip = tr("%1, %2: %3 ms per step (%4% of the step; %5)")
                      .arg(QString::fromStdString(display_name(r)), segment_label(segment), QString::number(ms, 'f', 2),
                           QString::number(total > 0 ? 100.0 * ms / total : 0.0, 'f', 0),
                           QString::fromStdString(r.summary.breakdown_source));
    if (r.config.inspect_fp8 && (segment == StepSegment::Forward || segment == StepSegment::Backward)) {
        tip += tr(". It includes FP8 inspection: every cast's saturation and underflow read back to the host (--inspect-fp8)");
    }
    return tip;
}

QStringList TimeBreakdownChart::legendLabels() const {
    QStringList out;
    if (!chart()) return out;
    for (const QLegendMarker* marker : chart()->legend()->markers()) {
        if (marker->isVisible()) out << marker->label();
    }
    return out;
}

void TimeBreakdownChart::rebuild() {
    auto* chart = new QChart;
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->setTitle(tr("Where the step time goes (ms per step)"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->legend()->setShowToolTips(true);
    // Tight margins: the axis keeps its numbers (Qt Charts elides them when the plot gets too short).
    chart->setMargins(QMargins(4, 2, 4, 2));
    chart->layout()->setContentsMargins(0, 0, 0, 0);
    auto* series = new QHorizontalStackedBarSeries;
    sets_.clear();
    labels_.clear();
    // Categories run bottom-up in a horizontal bar chart: add the runs in reverse so the first is on top.
    const int runs = static_cast<int>(records_.size());
    for (const StepSegment segment : kStepSegments) {
        auto* set = new QBarSet(segment_label(segment));
        set->setColor(segment_colour(segment));
        set->setBorderColor(segment_colour(segment));
        for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
            set->append(it->summary.breakdown ? it->summary.breakdown->at(segment) : 0.0);
        }
        connect(set, &QBarSet::hovered, this, [this, segment, runs](bool on, int index) {
            if (!on || index < 0 || index >= runs) return;
            QToolTip::showText(QCursor::pos(), segmentToolTip(runs - 1 - index, segment), this);
        });
        series->append(set);
        sets_.push_back(set);
    }
    longest_ = 0;
    for (const RunRecord& r : records_) {
        labels_.push_back(QString::fromStdString(display_name(r)) + (r.summary.breakdown ? QString() : tr(" (no breakdown)")) +
                          (r.config.inspect_fp8 ? tr(" (FP8 inspected)") : QString()));
        if (r.summary.breakdown) longest_ = std::max(longest_, r.summary.breakdown->total_ms());
    }
    QStringList categories(labels_.rbegin(), labels_.rend());
    chart->addSeries(series);
    // Segments no run spends time in (communication outside data-parallel jobs) leave the legend.
    for (QLegendMarker* marker : chart->legend()->markers(series)) {
        auto* bar = static_cast<QBarLegendMarker*>(marker);
        bool any = false;
        for (int i = 0; i < bar->barset()->count(); ++i) any = any || bar->barset()->at(i) > 0;
        marker->setVisible(any || runs == 0);
    }
    auto* runs_axis = new QBarCategoryAxis;
    runs_axis->append(categories.isEmpty() ? QStringList{tr("no runs")} : categories);
    chart->addAxis(runs_axis, Qt::AlignLeft);
    series->attachAxis(runs_axis);
    auto* ms_axis = new QValueAxis;
    const NiceRange range = fitted_range(0, longest_ > 0 ? longest_ : 1.0, ticks_for_length(width() - 160, 70, 6));
    ms_axis->setRange(0, range.hi);
    ms_axis->setTickCount(std::clamp(range.ticks, 2, 12));
    ms_axis->setLabelFormat(QStringLiteral("%.3g"));
    ms_axis->setTitleText(tr("ms per step"));
    chart->addAxis(ms_axis, Qt::AlignBottom);
    series->attachAxis(ms_axis);
    style_chart(chart, dark_);
    msAxis_ = ms_axis;
    QChart* old = this->chart();
    setChart(chart);
    delete old;
    fitToContents();
}

// Tall enough for a readable bar per run, wide enough for the longest run name and the legend's words.
void TimeBreakdownChart::fitToContents() {
    const QFontMetrics metrics(font());
    int names = 0;
    for (const QString& label : labels_) names = std::max(names, metrics.horizontalAdvance(label));
    int legend = 0;
    for (const QString& label : legendLabels()) legend += metrics.horizontalAdvance(label) + 40;
    setMinimumWidth(std::clamp(std::max(names + 220, legend + 40), 280, 640));
    setMinimumHeight(std::clamp(190 + 26 * static_cast<int>(labels_.size()), 220, 460));
}

void TimeBreakdownChart::resizeEvent(QResizeEvent* event) {
    QChartView::resizeEvent(event);
    if (!msAxis_) return;
    // Axis numbers do not overlap: as many ticks as the width has room for.
    const NiceRange range = fitted_range(0, longest_ > 0 ? longest_ : 1.0, ticks_for_length(width() - 160, 70, 6));
    if (msAxis_->max() != range.hi) msAxis_->setMax(range.hi);
    if (msAxis_->tickCount() != range.ticks) msAxis_->setTickCount(std::clamp(range.ticks, 2, 12));
}

}  // namespace tewb::ui
