#pragma once

#include <set>
#include <vector>

#include <QPointer>
#include <QTimer>
#include <QWidget>

#include "ui/charts/MetricChartView.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSlider;

namespace tewb::ui {

class RunCollection;

class RunLegend;

// The chart controls shared by a group of charts: x axis by step, tokens or time, smoothing, log y (every chart of
// the group; a chart's own menu overrides it for that chart), a run filter, reset zoom, and "Show every chart" while
// one is enlarged.
class ChartControls : public QWidget {
    Q_OBJECT

public:
    explicit ChartControls(QWidget* parent = nullptr);
    PlotOptions options() const;
    void setLogY(bool on);

Q_SIGNALS:
    void optionsChanged();
    void resetZoomRequested();
    void filterChanged();

private:
    QComboBox* xAxis_;
    QSlider* smoothing_;
    QLabel* smoothingValue_;
    QCheckBox* logY_;
    QPushButton* showAll_;
    QLineEdit* filter_;
    bool dark_ = false;

    friend class ChartsPanel;
};

// A group of metric charts over the same runs: redrawn from the RunCollection by a timer (8 Hz) when
// something changed, never per step. The charts sit in a scroll area of their own under a legend of fixed height,
// so the panel's minimum is small (a splitter above or below it moves; the charts keep their legible minimum and
// scroll) and a longer legend never pushes them.
// A chart can be enlarged to the whole area (double click) or opened in its own window; runs can be hidden from
// every chart of the group by the legend.
class ChartsPanel : public QWidget {
    Q_OBJECT

public:
    static constexpr int kRefreshIntervalMs = 125;
    static constexpr int kLeastChartAreaHeight = 160;

    ChartsPanel(RunCollection* runs, std::vector<MetricSpec> specs, int columns, QWidget* parent = nullptr);

    const std::vector<MetricChartView*>& views() const { return views_; }
    // The charts in windows of their own that are still open.
    std::vector<MetricChartView*> ownWindowViews() const;
    RunLegend* legend() const { return legend_; }
    QScrollArea* chartArea() const { return scroll_; }
    // The chart shown alone, or nullptr when every chart is shown.
    MetricChartView* enlarged() const { return enlarged_; }
    void setEnlarged(MetricChartView* view);
    MetricChartView* openInOwnWindow(MetricChartView* view);
    const std::set<int>& hiddenRuns() const { return hidden_; }
    void toggleRun(int key);
    void showOnly(int key);
    void showEveryRun();
    ChartControls* controls() const { return controls_; }
    PlotOptions options() const;
    void setDark(bool dark);
    // Redraws now if anything changed since the last redraw.
    void refreshIfDirty();
    void markDirty() { dirty_ = ownWindowsDirty_ = true; }
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
    void applyOptions(MetricChartView* view, const PlotOptions& panel);
    void placeViews(int columns);
    // A chart's own options (every chart), and enlarge / own window (the charts of the grid).
    void connectView(MetricChartView* view);
    void connectGridView(MetricChartView* view);
    void hiddenChanged();
    // Runs the filter leaves out (their names lack its text); with the ones hidden from the legend, what no chart draws.
    std::set<int> filteredOut() const;
    std::set<int> notDrawn() const;
    std::vector<MetricChartView*> everyView() const;

    RunCollection* runs_;
    ChartControls* controls_;
    RunLegend* legend_;
    std::vector<MetricChartView*> views_;
    std::vector<QPointer<MetricChartView>> ownWindows_;
    MetricChartView* enlarged_ = nullptr;
    std::set<int> hidden_;
    QScrollArea* scroll_;
    QGridLayout* grid_;
    bool lastPanelLogY_ = false;
    int maxColumns_;
    int columns_ = 0;
    QTimer timer_;
    bool dirty_ = true;
    bool ownWindowsDirty_ = true;
    bool legendOnlyRunsWithData_ = false;
    bool dark_ = false;
    int refreshCount_ = 0;
};

}  // namespace tewb::ui
