#pragma once

#include <QChartView>

#include "ui/charts/MetricPlot.h"

class QGraphicsLineItem;
class QGraphicsTextItem;

namespace tewb::ui {

// A MetricPlot on screen: rubber-band zoom (right click zooms out), and a crosshair that follows the
// mouse with every run's value at that step or time. (QXYSeries::hovered only reports enter and leave in
// Qt Charts 6.4, so the crosshair maps mouse positions itself.)
class MetricChartView : public QChartView {
    Q_OBJECT

public:
    explicit MetricChartView(MetricSpec spec, QWidget* parent = nullptr);

    MetricPlot* plot() const { return plot_; }
    // The crosshair's text for x (in axis units): the snapped x, then each run's value there.
    QString crosshairText(double x) const;
    void showCrosshairAt(double x);
    void hideCrosshair();
    bool crosshairVisible() const;
    // Where the crosshair's label is, in chart coordinates (inside the plot area).
    QRectF crosshairLabelRect() const;

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    MetricPlot* plot_;
    QGraphicsLineItem* line_;
    QGraphicsTextItem* label_;
};

}  // namespace tewb::ui
