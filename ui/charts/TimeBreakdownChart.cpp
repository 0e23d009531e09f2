#include "ui/charts/TimeBreakdownChart.h"

#include <algorithm>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QHorizontalStackedBarSeries>
#include <QToolTip>
#include <QValueAxis>

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
    setMinimumWidth(220);
    setToolTip(tr("Mean ms per step spent in each part of the step (timed steps; for a CUDA-graph run the eager "
                  "warm-up steps, as a replay is one launch)"));
    rebuild();
}

void TimeBreakdownChart::show(const std::vector<RunRecord>& records) {
    // A live run changes its summary every refresh; the bars only when a breakdown or a name does.
    const auto same = [&] {
        if (records.size() != records_.size()) return false;
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (records[i].summary.breakdown != records_[i].summary.breakdown || display_name(records[i]) != display_name(records_[i])) {
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

void TimeBreakdownChart::rebuild() {
    auto* chart = new QChart;
    chart->setTheme(dark_ ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setTitle(tr("Where the step time goes (ms)"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* series = new QHorizontalStackedBarSeries;
    sets_.clear();
    labels_.clear();
    // Categories run bottom-up in a horizontal bar chart: add the runs in reverse so the first is on top.
    std::vector<const RunRecord*> order;
    for (auto it = records_.rbegin(); it != records_.rend(); ++it) order.push_back(&*it);
    for (const StepSegment segment : kStepSegments) {
        auto* set = new QBarSet(segment_label(segment));
        set->setColor(segment_colour(segment));
        set->setBorderColor(segment_colour(segment));
        for (const RunRecord* r : order) set->append(r->summary.breakdown ? r->summary.breakdown->at(segment) : 0.0);
        connect(set, &QBarSet::hovered, this, [this, set, order, segment](bool on, int index) {
            if (!on || index < 0 || index >= static_cast<int>(order.size())) return;
            const RunSummary& s = order[static_cast<std::size_t>(index)]->summary;
            const double total = s.breakdown ? s.breakdown->total_ms() : 0.0;
            const double ms = set->at(index);
            QToolTip::showText(QCursor::pos(), tr("%1, %2: %3 ms (%4% of the step; %5)")
                                                   .arg(QString::fromStdString(display_name(*order[static_cast<std::size_t>(index)])),
                                                        segment_label(segment), QString::number(ms, 'f', 2),
                                                        QString::number(total > 0 ? 100.0 * ms / total : 0.0, 'f', 0),
                                                        QString::fromStdString(s.breakdown_source)));
        });
        series->append(set);
        sets_.push_back(set);
    }
    QStringList categories;
    double longest = 0;
    for (const RunRecord* r : order) {
        QString name = QString::fromStdString(display_name(*r));
        if (!r->summary.breakdown) name += tr(" (no breakdown)");
        categories.push_back(name);
        if (r->summary.breakdown) longest = std::max(longest, r->summary.breakdown->total_ms());
    }
    for (auto it = categories.rbegin(); it != categories.rend(); ++it) labels_.push_back(*it);
    chart->addSeries(series);
    auto* runs_axis = new QBarCategoryAxis;
    runs_axis->append(categories.isEmpty() ? QStringList{tr("no runs")} : categories);
    chart->addAxis(runs_axis, Qt::AlignLeft);
    series->attachAxis(runs_axis);
    auto* ms_axis = new QValueAxis;
    ms_axis->setRange(0, longest > 0 ? longest * 1.05 : 1.0);
    ms_axis->setLabelFormat(QStringLiteral("%.3g"));
    chart->addAxis(ms_axis, Qt::AlignBottom);
    series->attachAxis(ms_axis);
    QChart* old = this->chart();
    setChart(chart);
    delete old;
}

}  // namespace tewb::ui
