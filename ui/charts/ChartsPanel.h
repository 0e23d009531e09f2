#pragma once

#include <vector>

#include <QTimer>
#include <QWidget>

#include "ui/charts/MetricChartView.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QSlider;

namespace tewb::ui {

class RunCollection;

// The chart controls shared by a group of charts: x axis by step or time, smoothing, log y, reset zoom.
class ChartControls : public QWidget {
    Q_OBJECT

public:
    explicit ChartControls(QWidget* parent = nullptr);
    PlotOptions options() const;
    void setLogY(bool on);

Q_SIGNALS:
    void optionsChanged();
    void resetZoomRequested();

private:
    QComboBox* xAxis_;
    QSlider* smoothing_;
    QLabel* smoothingValue_;
    QCheckBox* logY_;
    bool dark_ = false;

    friend class ChartsPanel;
};

// A group of metric charts over the same runs: redrawn from the RunCollection by a timer (8 Hz) when
// something changed, never per step.
class ChartsPanel : public QWidget {
    Q_OBJECT

public:
    static constexpr int kRefreshIntervalMs = 125;

    ChartsPanel(RunCollection* runs, std::vector<MetricSpec> specs, int columns, QWidget* parent = nullptr);

    const std::vector<MetricChartView*>& views() const { return views_; }
    ChartControls* controls() const { return controls_; }
    PlotOptions options() const;
    void setDark(bool dark);
    // Redraws now if anything changed since the last redraw.
    void refreshIfDirty();
    void markDirty() { dirty_ = true; }
    int refreshCount() const { return refreshCount_; }

protected:
    // Replaces the specs of the charts (the FP8 view switches slots this way).
    void setSpecs(const std::vector<MetricSpec>& specs);
    // The legend names only runs that have a line in some chart (the FP8 view: runs with FP8 statistics), not every
    // run shown.
    void setLegendOnlyRunsWithData(bool on) { legendOnlyRunsWithData_ = on; }
    RunCollection* runs() const { return runs_; }
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

public:
    // As narrow as one chart per row: the panel puts its charts in as many columns as its width holds (up to
    // the number it was made with), so a small screen gets rows of charts rather than a sideways scroll.
    QSize minimumSizeHint() const override;
    int columns() const { return columns_; }

private:
    void applyOptions();
    void placeViews(int columns);

    RunCollection* runs_;
    ChartControls* controls_;
    QLabel* legend_;
    std::vector<MetricChartView*> views_;
    QGridLayout* grid_;
    int maxColumns_;
    int columns_ = 0;
    QTimer timer_;
    bool dirty_ = true;
    bool legendOnlyRunsWithData_ = false;
    bool dark_ = false;
    int refreshCount_ = 0;
};

}  // namespace tewb::ui
