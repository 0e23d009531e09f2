#pragma once

#include <optional>

#include <QChartView>

#include "ui/charts/MetricPlot.h"

class QGraphicsLineItem;
class QGraphicsTextItem;
class QMenu;

namespace tewb::ui {

// A MetricPlot on screen: rubber-band zoom, and a crosshair that follows the mouse with every run's value at that
// step, token count or time, the line nearest the pointer drawn wider. (QXYSeries::hovered only reports enter and
// leave in Qt Charts 6.4, so the crosshair maps mouse positions itself.) A right click opens the chart's menu (zoom
// out, its own log y and y range, enlarge, own window); a double click asks to enlarge the chart.
class MetricChartView : public QChartView {
    Q_OBJECT

public:
    explicit MetricChartView(MetricSpec spec, QWidget* parent = nullptr);

    MetricPlot* plot() const { return plot_; }
    // The crosshair's text for x (in axis units): the snapped x, then each run's value there, highest first, names
    // shortened and rows cut ("… and 3 more") to `most` rows (0: as many as the plot's height holds); the run
    // `highlight` in bold.
    QString crosshairText(double x, int highlight = 0, int most = 0) const;
    void showCrosshairAt(double x, std::optional<double> pointerY = std::nullopt);
    void hideCrosshair();
    bool crosshairVisible() const;
    // Where the crosshair's label is, in chart coordinates (inside the plot area).
    QRectF crosshairLabelRect() const;
    // The run whose value at x lies nearest the pointer's height y (chart coordinates); 0 when none has one.
    int nearestRunAt(double x, double pointerY) const;

    // This chart's own log y choice; nullopt follows the panel's.
    std::optional<bool> ownLogY() const { return ownLogY_; }
    void setOwnLogY(std::optional<bool> on) { ownLogY_ = on; }
    // Whether the menu offers "Enlarge" or "Show every chart" (the panel says which), or neither (own window).
    enum class EnlargeOffer { Enlarge, Restore, None };
    void setEnlargeOffer(EnlargeOffer offer) { enlargeOffer_ = offer; }
    // The chart's menu, as a right click opens it (tests trigger its actions by their object names).
    QMenu* buildMenu();

Q_SIGNALS:
    void enlargeToggled();
    void ownWindowRequested();
    // The chart's own log y changed: the panel applies its options again.
    void ownOptionsChanged();

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    // The runs with a value at the snapped x: (trace, its point there).
    struct ValueAt {
        const MetricPlot::Trace* trace;
        QPointF point;
    };
    double snap(double x) const;
    int rowsThatFit() const;
    std::vector<ValueAt> valuesAt(double snapped) const;
    void askForYRange();

    MetricPlot* plot_;
    QGraphicsLineItem* line_;
    QGraphicsTextItem* label_;
    std::optional<bool> ownLogY_;
    EnlargeOffer enlargeOffer_ = EnlargeOffer::Enlarge;
};

}  // namespace tewb::ui
