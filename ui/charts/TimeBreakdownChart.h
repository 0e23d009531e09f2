#pragma once

#include <vector>

#include <QChartView>
#include <QPointer>
#include <QStringList>

#include "core/results/RunRecord.h"

class QBarSet;
class QValueAxis;

namespace tewb::ui {

// Where each run's step time goes: one horizontal stacked bar per run (forward, backward, optimizer, FP8
// bookkeeping; mean ms per step from core's summary), in the comparison view beside the table, so a user
// sees why one configuration is faster. A run without a breakdown (still in its first step, or a record
// from before breakdowns existed) gets an empty bar and says so in its label.
class TimeBreakdownChart : public QChartView {
    Q_OBJECT

public:
    explicit TimeBreakdownChart(QWidget* parent = nullptr);

    // Records in display order, with their current summaries.
    void show(const std::vector<RunRecord>& records);
    void setDark(bool dark);

    // What the bars show, for tests: the category labels (top to bottom) and, per segment (forward,
    // backward, optimizer, fp8), the ms of each run in `labels` order.
    const QStringList& labels() const { return labels_; }
    std::vector<double> values(StepSegment segment) const;
    // The hover text of run `row` (top to bottom) in `segment`: its ms, share of the step and which steps.
    QString segmentToolTip(int row, StepSegment segment) const;
    // The legend's entries that are shown (segments no run spends time in are left out).
    QStringList legendLabels() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    void fitToContents();

    std::vector<RunRecord> records_;
    QStringList labels_;
    std::vector<QBarSet*> sets_;  // one per StepSegment, owned by the chart's series
    QPointer<QValueAxis> msAxis_;
    double longest_ = 0;  // the longest step, ms
    bool dark_ = false;
};

}  // namespace tewb::ui
