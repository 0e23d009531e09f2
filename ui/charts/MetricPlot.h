#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include <QChart>
#include <QColor>
#include <QImage>
#include <QPointF>

#include "ui/charts/MetricSpec.h"
#include "ui/runs/RunCollection.h"

class QAbstractAxis;
class QPainter;
class QAreaSeries;
class QLineSeries;
class QValueAxis;

namespace tewb::ui {

// One metric of every run, overlaid: the whole Qt Charts dependency of the workbench sits behind this
// class and MetricChartView, so the chart backend can change in one place.
// Per run: the line (smoothed when smoothing is on) dashed over warm-up steps and solid over timed steps,
// and the raw values as a faint line while smoothing is on. refresh() replaces each series' points,
// decimated to about two per pixel column; axes move only when their rounded range changes.
class MetricPlot : public QChart {
    Q_OBJECT

public:
    // One run's points on this chart, before decimation (what the crosshair reads).
    struct Trace {
        int key = 0;
        QString name;
        QColor colour;
        std::vector<QPointF> raw;
        std::vector<QPointF> shown;  // smoothed, or raw when smoothing is off
        std::size_t warmup_points = 0;
        // The repeats of one configuration are drawn as one trace: the median over repeats per step, and a
        // band from the lowest to the highest repeat (band_lo/band_hi, same x as raw).
        // A data-parallel job's trace has a band too: from its fastest to its slowest rank (MetricSpec::spread).
        bool band = false;
        bool band_of_ranks = false;
        int repeats = 1;
        std::vector<QPointF> band_lo;
        std::vector<QPointF> band_hi;
        // The spec's companion values of a run (its validation loss): a dotted line with a marker per value, keyed
        // by the negated run key.
        bool companion = false;
    };

    explicit MetricPlot(MetricSpec spec, QGraphicsItem* parent = nullptr);

    const MetricSpec& spec() const { return spec_; }
    void setSpec(MetricSpec spec);
    const PlotOptions& options() const { return options_; }
    void setOptions(const PlotOptions& options);

    // Rebuilds every series from `runs`. Cheap enough for a 5-10 Hz timer.
    void refresh(const RunCollection& runs);
    const std::vector<Trace>& traces() const { return traces_; }
    int valuesAtFloor() const { return valuesAtFloor_; }
    std::size_t pointsDrawn() const;  // over all series, after decimation

    bool isZoomed() const { return zoomed_; }
    void resetZoom();

    // Runs left out of this chart (hidden from the legend), by run key.
    void setHiddenRuns(std::set<int> keys);
    // The run whose lines are drawn wider (the one nearest the pointer); 0: none.
    void setHighlighted(int key);
    int highlighted() const { return highlighted_; }
    // A y range of this chart's own, or the data's range (nullopt); a zoom still zooms inside it.
    void setYRange(std::optional<YRange> range);
    const std::optional<YRange>& yRange() const { return yRange_; }

    // Renders a detached copy of this chart (same metric and options, fresh data) at `logical` size,
    // `scale` pixels per unit, without any window: what PNG export uses.
    // With `legend`, the image ends with the legend (wrapped over as many rows as the names need).
    QImage renderImage(const RunCollection& runs, QSize logical, qreal scale, bool legend = true) const;

protected:
    void resizeEvent(QGraphicsSceneResizeEvent* event) override;

private:
    struct Lines {
        QLineSeries* raw = nullptr;
        QLineSeries* warmup = nullptr;
        QLineSeries* timed = nullptr;
        QAreaSeries* band = nullptr;  // created when the trace is a group of repeats
        // What the series show now; a refresh with the same inputs leaves them alone.
        struct Drawn {
            std::size_t points = 0;
            double x_min = 0;
            double x_max = 0;
            int columns = 0;
            PlotOptions options;
            QColor colour;
            QString name;
            double last_value = 0;
            int repeats = 1;
            bool operator==(const Drawn&) const = default;
        };
        std::optional<Drawn> drawn;
    };

    void installAxes();
    // An axis range changed: the user's zoom, unless the plot set it; its ticks are rounded once the zoom is done.
    void userZoomed();
    Lines& linesFor(const Trace& trace);
    void buildTraces(const RunCollection& runs);
    // The run's trace and, where the spec has a companion and the run has its values, the companion's.
    Trace traceOf(const RunCollection::Entry& entry, bool companion, std::vector<int>& steps) const;
    void removeSeriesOfGoneRuns();
    void drawTrace(const Trace& trace, double xMin, double xMax, int columns);
    void applyRanges();
    void setAxisRange(QAbstractAxis* axis, double lo, double hi, int ticks);
    void updateTitle();
    void applyUnit();
    qreal penWidth(int key) const;
    bool yRangeApplies() const;
    bool applyYRange();

    MetricSpec spec_;
    PlotOptions options_;
    std::vector<Trace> traces_;
    std::map<int, Lines> lines_;
    QValueAxis* xAxis_ = nullptr;
    QAbstractAxis* yAxis_ = nullptr;
    bool yIsLog_ = false;
    QString unit_;  // the y axis's title for the runs shown
    bool unitInTitle_ = false;
    bool zoomed_ = false;
    bool applyingRange_ = false;
    bool roundingPending_ = false;
    int valuesAtFloor_ = 0;
    std::set<int> hidden_;
    int highlighted_ = 0;
    std::optional<YRange> yRange_;
    int plannedSteps_ = 10;  // steps of the longest running run: the step axis covers it from the start
};

// The legend exported images carry instead of Qt Charts' legend: a line in each run's colour and its name
// (runs without points here are left out; a companion's line dotted with a marker), wrapped into as many rows as
// `width` needs, then the "dashed: warm-up" note. legend_height says how tall that is; paint_legend paints it into `area` and
// returns the names it drew, in order (every trace with points: nothing is cut).
qreal legend_height(const std::vector<MetricPlot::Trace>& traces, qreal width);
QStringList paint_legend(QPainter& painter, const std::vector<MetricPlot::Trace>& traces, const QRectF& area, bool dark);

}  // namespace tewb::ui
