#include "ui/charts/MetricChartView.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QFontMetricsF>
#include <QGraphicsLineItem>
#include <QGraphicsTextItem>
#include <QMenu>
#include <QMouseEvent>

#include "ui/charts/SeriesMath.h"
#include "ui/charts/YRangeDialog.h"

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

constexpr qreal kLabelPadding = 4;

}  // namespace

MetricChartView::MetricChartView(MetricSpec spec, QWidget* parent)
    // The chart goes to the constructor: setChart() would orphan (and leak) the default chart QChartView makes.
    : QChartView(new MetricPlot(std::move(spec)), parent), plot_(static_cast<MetricPlot*>(chart())) {
    setRenderHint(QPainter::Antialiasing);
    setRubberBand(QChartView::RectangleRubberBand);
    setMouseTracking(true);
    // Room for a plot area of at least 360×180 px inside the title, the axes' numbers and their titles.
    setMinimumSize(475, 285);
    line_ = new QGraphicsLineItem(plot_);
    line_->setPen(QPen(QColor(128, 128, 128, 180), 1, Qt::DashLine));
    line_->setZValue(20);
    line_->hide();
    label_ = new QGraphicsTextItem(plot_);
    label_->setZValue(21);
    label_->hide();
}

double MetricChartView::snap(double x) const {
    double snapped = x;
    double best = std::numeric_limits<double>::infinity();
    for (const MetricPlot::Trace& t : plot_->traces()) {
        if (const QPointF* p = nearest(t.shown, x); p && std::abs(p->x() - x) < best) {
            best = std::abs(p->x() - x);
            snapped = p->x();
        }
    }
    return snapped;
}

std::vector<MetricChartView::ValueAt> MetricChartView::valuesAt(double snapped) const {
    std::vector<ValueAt> values;
    for (const MetricPlot::Trace& t : plot_->traces()) {
        const QPointF* p = nearest(t.shown, snapped);
        if (!p) continue;
        // A companion has values at a few steps only (evaluations): it is listed where it has one, never a
        // neighbouring step's value passed off as this one's.
        if (t.companion && p->x() != snapped) continue;
        // A run that ended before x (or started after it) has no value there: not its last value passed off as one.
        const double spacing = t.shown.size() > 1 ? (t.shown.back().x() - t.shown.front().x()) / (t.shown.size() - 1) : 0.0;
        if (snapped > t.shown.back().x() + spacing / 2 || snapped < t.shown.front().x() - spacing / 2) continue;
        values.push_back({&t, *p});
    }
    // Highest first: the order their lines stand in on the chart.
    std::stable_sort(values.begin(), values.end(), [](const ValueAt& a, const ValueAt& b) { return a.point.y() > b.point.y(); });
    return values;
}

int MetricChartView::rowsThatFit() const {
    const QRectF area = plot_->plotArea();
    const QFontMetricsF metrics(label_->font());
    return std::max(1, static_cast<int>((area.height() - 2 * kLabelPadding - 8) / metrics.lineSpacing()) - 1);
}

QString MetricChartView::crosshairText(double x, int highlight, int most) const {
    const double snapped = snap(x);
    QString heading;
    switch (plot_->options().x) {
        case XAxis::Step: heading = tr("step %1").arg(std::lround(snapped)); break;
        case XAxis::Tokens: heading = tr("%1 thousand tokens").arg(snapped, 0, 'g', 6); break;
        case XAxis::Time: heading = tr("%1 s").arg(snapped, 0, 'f', 2); break;
    }
    QString html = QStringLiteral("<b>%1</b>").arg(heading);
    const std::vector<ValueAt> values = valuesAt(snapped);
    // What fits inside the plot: names shortened in the middle to the width, rows up to the height.
    const QRectF area = plot_->plotArea();
    const QFont font = label_->font();
    const QFontMetricsF metrics(font);
    QFont bold = font;
    bold.setBold(true);
    const QFontMetricsF boldMetrics(bold);
    const qreal room = std::max<qreal>(80, area.width() - 2 * kLabelPadding - 2 * label_->document()->documentMargin() - 4);
    if (most <= 0) most = area.height() > 0 ? rowsThatFit() : static_cast<int>(values.size());
    const bool cut = static_cast<int>(values.size()) > most;
    const int shown = cut ? std::max(0, most - 1) : static_cast<int>(values.size());
    for (int i = 0; i < shown; ++i) {
        const ValueAt& v = values[static_cast<std::size_t>(i)];
        const QString number = QString::number(v.point.y(), 'g', 5);
        const bool strong = highlight != 0 && std::abs(v.trace->key) == highlight;
        const QFontMetricsF& m = strong ? boldMetrics : metrics;
        const qreal nameRoom = room - m.horizontalAdvance(QStringLiteral("■ : ") + number);
        const QString name = m.elidedText(v.trace->name, Qt::ElideMiddle, std::max<qreal>(30, nameRoom));
        const QString row = QStringLiteral("<span style=\"color:%1\">■</span> %2: %3")
                                .arg(v.trace->colour.name(), name.toHtmlEscaped(), number);
        html += QStringLiteral("<br>") + (strong ? QStringLiteral("<b>%1</b>").arg(row) : row);
    }
    if (cut) html += tr("<br><i>… and %n more</i>", nullptr, static_cast<int>(values.size()) - shown);
    return html;
}

int MetricChartView::nearestRunAt(double x, double pointerY) const {
    int key = 0;
    double best = std::numeric_limits<double>::infinity();
    for (const ValueAt& v : valuesAt(snap(x))) {
        const double distance = std::abs(plot_->mapToPosition(v.point).y() - pointerY);
        if (distance < best) {
            best = distance;
            key = std::abs(v.trace->key);
        }
    }
    return key;
}

void MetricChartView::showCrosshairAt(double x, std::optional<double> pointerY) {
    const QRectF area = plot_->plotArea();
    if (plot_->series().isEmpty()) return;
    const int highlight = pointerY ? nearestRunAt(x, *pointerY) : 0;
    plot_->setHighlighted(highlight);
    const qreal px = plot_->mapToPosition(QPointF(x, 0)).x();
    line_->setLine(px, area.top(), px, area.bottom());
    line_->show();
    // Rows are cut by the font's line spacing; a bold row or a fallback font for "■" can make lines taller, so the
    // label loses rows until it really fits.
    for (int most = rowsThatFit();; --most) {
        label_->setHtml(QStringLiteral("<div style=\"background-color:%1; padding:%2px\">%3</div>")
                            .arg(palette().color(QPalette::ToolTipBase).name())
                            .arg(kLabelPadding)
                            .arg(crosshairText(x, highlight, most)));
        if (most <= 1 || label_->boundingRect().height() <= area.height()) break;
    }
    label_->setDefaultTextColor(palette().color(QPalette::ToolTipText));
    label_->setPos(place_inside(area, label_->boundingRect().size(), QPointF(px, pointerY.value_or(area.top() - 8))));
    label_->show();
}

void MetricChartView::hideCrosshair() {
    line_->hide();
    label_->hide();
    plot_->setHighlighted(0);
}

QRectF MetricChartView::crosshairLabelRect() const {
    return label_->mapRectToParent(label_->boundingRect());
}

bool MetricChartView::crosshairVisible() const {
    return line_->isVisible();
}

QMenu* MetricChartView::buildMenu() {
    auto* menu = new QMenu(this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    const auto add = [menu](const QString& text, const char* name) {
        QAction* action = menu->addAction(text);
        action->setObjectName(QString::fromLatin1(name));
        return action;
    };
    connect(add(tr("Zoom out"), "zoomOut"), &QAction::triggered, this, [this] { plot_->zoomOut(); });
    QAction* reset = add(tr("Reset zoom"), "resetZoom");
    reset->setEnabled(plot_->isZoomed());
    connect(reset, &QAction::triggered, this, [this] { plot_->resetZoom(); });
    menu->addSeparator();
    QAction* logY = add(tr("Log y (this chart)"), "logY");
    logY->setCheckable(true);
    logY->setChecked(plot_->options().log_y);
    connect(logY, &QAction::toggled, this, [this](bool on) {
        ownLogY_ = on;
        Q_EMIT ownOptionsChanged();
    });
    connect(add(tr("Y range…"), "yRange"), &QAction::triggered, this, &MetricChartView::askForYRange);
    QAction* automatic = add(tr("Y range from the data"), "yRangeAuto");
    automatic->setEnabled(plot_->yRange().has_value());
    connect(automatic, &QAction::triggered, this, [this] { plot_->setYRange(std::nullopt); });
    menu->addSeparator();
    if (enlargeOffer_ != EnlargeOffer::None) {
        const bool enlarge = enlargeOffer_ == EnlargeOffer::Enlarge;
        connect(add(enlarge ? tr("Enlarge (double click)") : tr("Show every chart (double click)"), "enlarge"),
                &QAction::triggered, this, &MetricChartView::enlargeToggled);
        connect(add(tr("Open in its own window"), "ownWindow"), &QAction::triggered, this,
                &MetricChartView::ownWindowRequested);
    }
    return menu;
}

void MetricChartView::askForYRange() {
    const auto* axis = plot_->axes(Qt::Vertical).isEmpty() ? nullptr : plot_->axes(Qt::Vertical).front();
    YRange current = plot_->yRange().value_or(YRange{});
    if (axis && !plot_->yRange()) {
        const QVariant lo = axis->property("min");
        const QVariant hi = axis->property("max");
        if (lo.isValid() && hi.isValid()) current = {lo.toDouble(), hi.toDouble()};
    }
    auto* dialog = new YRangeDialog(plot_->spec().title, current, plot_->options().log_y, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &YRangeDialog::rangeChosen, this, [this](const YRange& range) { plot_->setYRange(range); });
    dialog->open();
}

void MetricChartView::mousePressEvent(QMouseEvent* event) {
    // The right button opens the menu on release; QChartView would zoom out on it.
    if (event->button() == Qt::RightButton) {
        event->accept();
        return;
    }
    QChartView::mousePressEvent(event);
}

void MetricChartView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::RightButton) {
        event->accept();
        hideCrosshair();
        buildMenu()->popup(event->globalPosition().toPoint());
        return;
    }
    QChartView::mouseReleaseEvent(event);
}

void MetricChartView::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && enlargeOffer_ != EnlargeOffer::None) {
        event->accept();
        Q_EMIT enlargeToggled();
        return;
    }
    QChartView::mouseDoubleClickEvent(event);
}

void MetricChartView::mouseMoveEvent(QMouseEvent* event) {
    QChartView::mouseMoveEvent(event);
    const QPointF chartPos = plot_->mapFromScene(mapToScene(event->position().toPoint()));
    if (!plot_->plotArea().contains(chartPos) || plot_->traces().empty()) {
        hideCrosshair();
        return;
    }
    showCrosshairAt(plot_->mapToValue(chartPos).x(), chartPos.y());
}

void MetricChartView::leaveEvent(QEvent* event) {
    hideCrosshair();
    QChartView::leaveEvent(event);
}

}  // namespace tewb::ui
