#pragma once

#include <optional>
#include <vector>

#include <QImage>
#include <QWidget>

#include "core/results/Fp8Summary.h"
#include "ui/charts/MetricSpec.h"

class QComboBox;
class QScrollArea;
class QLabel;
class QTableWidget;

namespace tewb::ui {

class BlockScaleHistogram;
class RunCollection;

// The heat map of one FP8 run: a row per cast slot, a column per step, each cell coloured by the chosen
// metric (a perceptual blue→yellow scale between the metric's range over the run; grey where there is no
// value, e.g. a run that did not inspect its casts). Hovering names the slot, the step and the value;
// clicking a row emits the slot.
class Fp8HeatMap : public QWidget {
    Q_OBJECT

public:
    explicit Fp8HeatMap(QWidget* parent = nullptr);
    void show(const RunRecord* record, Fp8Metric metric);
    // The map as an image (what the widget paints) of `size` logical pixels, `scale` image pixels each. Rows shorter than a label's line
    // (a `size` too low for every slot) are drawn, but only every n-th row is labelled and the colour bar's
    // line says so.
    QImage render(QSize size, qreal scale = 1.0) const;
    // The height that gives every row a whole label line, at any width.
    int fullHeight() const;
    // The row labels a map of `size` paints, in order: every slot's full name when the size allows.
    QStringList labelsAt(QSize size) const;
    // Whether any cell has a value (an uninspected run has no SNR, saturation or underflow: the map then says so).
    bool hasValues() const { return hasValues_; }
    // The cell's value under `metric`, row = slot, column = step index; nothing where empty.
    std::optional<double> value(int row, int column) const;
    int rows() const { return static_cast<int>(cells_.size()); }
    int columns() const { return cells_.empty() ? 0 : static_cast<int>(cells_.front().size()); }
    std::pair<double, double> range() const { return {lo_, hi_}; }

Q_SIGNALS:
    void slotClicked(int row);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    // Paints the map and returns the row labels it drew.
    QStringList paintMap(QPainter& painter, QSize size) const;
    std::optional<std::pair<int, int>> cellAt(QPoint position) const;

    std::vector<QString> rowNames_;
    std::vector<int> steps_;
    std::vector<std::vector<std::optional<double>>> cells_;
    double lo_ = 0;
    double hi_ = 1;
    bool hasValues_ = false;  // some cell has a value of the metric (an uninspected run has no SNR, saturation...)
    bool log_ = false;  // amax and scale span decades
    QString metricName_;
};

// The FP8 inspector under the FP8 charts: run and metric pickers, the heat map, the what-if table (per slot:
// median SNR as cast and under current, block, MXFP8 and NVFP4 scaling, worst saturation, which recipe would have
// erred least; core's fp8_slot_digests) and, for inspected runs of a recipe with block scales, the block scales'
// histogram of the picked slot. Clicking a heat-map row or a table row picks that slot here and in the FP8 charts.
class Fp8Inspector : public QWidget {
    Q_OBJECT

public:
    explicit Fp8Inspector(RunCollection* runs, QWidget* parent = nullptr);
    Fp8HeatMap* heatMap() const { return heatMap_; }
    QComboBox* runPicker() const { return runBox_; }
    QComboBox* metricPicker() const { return metricBox_; }
    QTableWidget* whatIfTable() const { return table_; }
    BlockScaleHistogram* blockScales() const { return scales_; }
    // Picks the slot in row `row` of the run's slots (as a click on the map or the table does).
    void pickSlot(int row);

Q_SIGNALS:
    void slotPicked(Fp8SlotKey slot);

private:
    void updateRuns();
    void updateView();
    void updateBlockScales();
    const RunRecord* currentRecord() const;

    RunCollection* runs_;
    QComboBox* runBox_;
    QComboBox* metricBox_;
    QLabel* note_;
    Fp8HeatMap* heatMap_;
    QScrollArea* heatScroll_;
    QTableWidget* table_;
    BlockScaleHistogram* scales_;
    int pickedRow_ = 0;
    std::vector<int> keys_;  // the runs with FP8 statistics, in the picker's order
};

}  // namespace tewb::ui
