#include "ui/charts/MetricChartView.h"

#include <algorithm>
#include <cmath>

#include <QGraphicsLineItem>
#include <QGraphicsTextItem>
#include <QMouseEvent>

#include "ui/charts/SeriesMath.h"

namespace tewb::ui {

namespace {

// The point of `points` (sorted by x) nearest to x.
const QPointF* nearest(const std::vector<QPointF>& points, double x) {
    if (points.empty()) return nullptr;
    const auto it = std::lower_bound(points.begin(), points.end(), x, [](const QPointF& p, double v) { return p.x() < v; });
    if (it == points.begin()) return &*it;
    if (it == points.end()) return &points.back();
    return std::abs(it->x() - x) < std::abs((it - 1)->x() - x) ? &*it : &*(it - 1);
}

}  // namespace

MetricChartView::MetricChartView(MetricSpec spec, QWidget* parent)
    // The chart goes to the constructor: setChart() would orphan (and leak) the default chart QChartView makes.
    : QChartView(new MetricPlot(std::move(spec)), parent), plot_(static_cast<MetricPlot*>(chart())) {
    setRenderHint(QPainter::Antialiasing);
    setRubberBand(QChartView::RectangleRubberBand);
    setMouseTracking(true);
    setMinimumSize(220, 180);
    line_ = new QGraphicsLineItem(plot_);
    line_->setPen(QPen(QColor(128, 128, 128, 180), 1, Qt::DashLine));
    line_->setZValue(20);
    line_->hide();
    label_ = new QGraphicsTextItem(plot_);
    label_->setZValue(21);
    label_->hide();
}

QString MetricChartView::crosshairText(double x) const {
    double snapped = x;
    double best = std::numeric_limits<double>::infinity();
    for (const MetricPlot::Trace& t : plot_->traces()) {
        if (const QPointF* p = nearest(t.shown, x); p && std::abs(p->x() - x) < best) {
            best = std::abs(p->x() - x);
            snapped = p->x();
        }
    }
    const bool byStep = plot_->options().x == XAxis::Step;
    QString html = QStringLiteral("<b>%1</b>").arg(byStep ? tr("step %1").arg(std::lround(snapped))
                                                          : tr("%1 s").arg(snapped, 0, 'f', 2));
    // The runs that have a value at x, highest first (the order their lines stand in on the chart).
    std::vector<std::pair<double, QString>> rows;
    for (const MetricPlot::Trace& t : plot_->traces()) {
        const QPointF* p = nearest(t.shown, snapped);
        if (!p) continue;
        // A companion has values at a few steps only (evaluations): it is listed where it has one, never a
        // neighbouring step's value passed off as this one's.
        if (t.companion && p->x() != snapped) continue;
        // A run that ended before x (or started after it) has no value there: not its last value passed off as one.
        const double spacing = t.shown.size() > 1 ? (t.shown.back().x() - t.shown.front().x()) / (t.shown.size() - 1) : 0.0;
        if (snapped > t.shown.back().x() + spacing / 2 || snapped < t.shown.front().x() - spacing / 2) continue;
        rows.emplace_back(p->y(), QStringLiteral("<br><span style=\"color:%1\">■</span> %2: %3")
                                      .arg(t.colour.name(), t.name.toHtmlEscaped(), QString::number(p->y(), 'g', 5)));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& row : rows) html += row.second;
    return html;
}

void MetricChartView::showCrosshairAt(double x) {
    const QRectF area = plot_->plotArea();
    if (plot_->series().isEmpty()) return;
    const qreal px = plot_->mapToPosition(QPointF(x, 0)).x();
    line_->setLine(px, area.top(), px, area.bottom());
    line_->show();
    label_->setHtml(QStringLiteral("<div style=\"background-color:%1; padding:4px\">%2</div>")
                        .arg(palette().color(QPalette::ToolTipBase).name(), crosshairText(x)));
    label_->setDefaultTextColor(palette().color(QPalette::ToolTipText));
    label_->setPos(place_inside(area, label_->boundingRect().size(), QPointF(px, area.top() - 8)));
    label_->show();
}

void MetricChartView::hideCrosshair() {
    line_->hide();
    label_->hide();
}

QRectF MetricChartView::crosshairLabelRect() const {
    return label_->mapRectToParent(label_->boundingRect());
}

bool MetricChartView::crosshairVisible() const {
    return line_->isVisible();
}

void MetricChartView::mouseMoveEvent(QMouseEvent* event) {
    QChartView::mouseMoveEvent(event);
    const QPointF chartPos = plot_->mapFromScene(mapToScene(event->position().toPoint()));
    if (!plot_->plotArea().contains(chartPos) || plot_->traces().empty()) {
        hideCrosshair();
        return;
    }
    showCrosshairAt(plot_->mapToValue(chartPos).x());
}

void MetricChartView::leaveEvent(QEvent* event) {
    hideCrosshair();
    QChartView::leaveEvent(event);
}

}  // namespace tewb::ui
