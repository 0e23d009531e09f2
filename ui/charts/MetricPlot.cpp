#include "ui/charts/MetricPlot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QScopedValueRollback>
#include <QValueAxis>

#include "ui/charts/SeriesMath.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

constexpr int kRawAlpha = 70;

struct Extent {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    void add(double v) {
        if (!std::isfinite(v)) return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    bool valid() const { return lo <= hi; }
};

QList<QPointF> toList(const std::vector<QPointF>& points) {
    return QList<QPointF>(points.begin(), points.end());
}

}  // namespace

MetricPlot::MetricPlot(MetricSpec spec, QGraphicsItem* parent) : QChart(parent), spec_(std::move(spec)) {
    setAnimationOptions(QChart::NoAnimation);
    // One legend for all charts lives beside them (and is painted into exports): per-chart legends
    // crowd small charts and do not lay out in a detached scene.
    legend()->hide();
    installAxes();
    updateTitle();
}

void MetricPlot::setSpec(MetricSpec spec) {
    spec_ = std::move(spec);
    zoomed_ = false;
    updateTitle();
}

void MetricPlot::setOptions(const PlotOptions& options) {
    const bool themeChanged = options.dark != options_.dark;
    const bool axesChanged = options.log_y != options_.log_y || options.x != options_.x;
    options_ = options;
    if (themeChanged) {
        // setTheme() resets series colours and axis fonts; refresh() re-applies the run colours.
        setTheme(options_.dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
        setBackgroundRoundness(0);
        for (auto& [key, lines] : lines_) lines.drawn.reset();
    }
    if (axesChanged) {
        zoomed_ = false;
        installAxes();
    }
}

void MetricPlot::installAxes() {
    const QScopedValueRollback<bool> guard(applyingRange_, true);
    const QList<QAbstractSeries*> all = series();
    if (!xAxis_) {
        xAxis_ = new QValueAxis(this);
        xAxis_->setLabelFormat(QStringLiteral("%g"));
        addAxis(xAxis_, Qt::AlignBottom);
        connect(xAxis_, &QValueAxis::rangeChanged, this, [this] {
            if (!applyingRange_) zoomed_ = true;
        });
    }
    xAxis_->setTitleText(options_.x == XAxis::Step ? tr("step") : tr("time (s)"));
    if (!yAxis_ || yIsLog_ != options_.log_y) {
        if (yAxis_) {
            removeAxis(yAxis_);
            delete yAxis_;
        }
        if (options_.log_y) {
            auto* axis = new QLogValueAxis(this);
            axis->setBase(10);
            axis->setLabelFormat(QStringLiteral("%g"));
            axis->setMinorTickCount(-1);
            connect(axis, &QLogValueAxis::rangeChanged, this, [this] {
                if (!applyingRange_) zoomed_ = true;
            });
            yAxis_ = axis;
        } else {
            auto* axis = new QValueAxis(this);
            axis->setLabelFormat(QStringLiteral("%g"));
            connect(axis, &QValueAxis::rangeChanged, this, [this] {
                if (!applyingRange_) zoomed_ = true;
            });
            yAxis_ = axis;
        }
        yIsLog_ = options_.log_y;
        addAxis(yAxis_, Qt::AlignLeft);
        for (QAbstractSeries* s : all) s->attachAxis(yAxis_);
    }
    yAxis_->setTitleText(spec_.unit);
}

void MetricPlot::updateTitle() {
    QString title = spec_.title;
    if (options_.log_y && valuesAtFloor_ > 0) {
        title += tr(" — %n value(s) ≤ 0 drawn at the axis floor", nullptr, valuesAtFloor_);
    }
    setTitle(title);
}

MetricPlot::Lines& MetricPlot::linesFor(const Trace& trace) {
    Lines& lines = lines_[trace.key];
    if (!lines.timed) {
        const auto make = [this](const QString& name) {
            auto* s = new QLineSeries(this);
            s->setName(name);
            s->setUseOpenGL(false);  // OpenGL series crash offscreen and vanish from render()
            addSeries(s);
            s->attachAxis(xAxis_);
            s->attachAxis(yAxis_);
            return s;
        };
        lines.raw = make(trace.name + tr(" (raw)"));
        lines.warmup = make(trace.name + tr(" (warm-up)"));
        lines.timed = make(trace.name);
    }
    return lines;
}

void MetricPlot::refresh(const RunCollection& runs) {
    // Adding series and replacing points may move the axes; only the user's zoom counts as zooming.
    const QScopedValueRollback<bool> guard(applyingRange_, true);
    traces_.clear();
    plannedSteps_ = 10;
    for (const RunCollection::Entry& entry : runs.entries()) {
        if (entry.record.status == RunStatus::Running) {
            plannedSteps_ = std::max(plannedSteps_, entry.record.config.total_steps());
        }
        Trace trace;
        trace.key = entry.key;
        trace.name = QString::fromStdString(entry.record.config.name);
        trace.colour = entry.colour;
        for (const StepMetrics& step : entry.record.steps) {
            const std::optional<double> value = spec_.value(entry.record, step);
            if (!value) continue;
            const double x = options_.x == XAxis::Step ? step.step : step.elapsed_ms / 1000.0;
            trace.raw.emplace_back(x, *value);
            if (step.phase == Phase::Warmup) trace.warmup_points = trace.raw.size();
        }
        trace.shown = options_.smoothing > 0 ? smooth_debiased_ema(trace.raw, options_.smoothing) : trace.raw;
        traces_.push_back(std::move(trace));
    }

    valuesAtFloor_ = 0;
    if (options_.log_y) {
        std::vector<std::vector<QPointF>> all;
        for (const Trace& t : traces_) all.push_back(t.raw);
        const double floor = floor_for_log(all);
        for (Trace& t : traces_) {
            valuesAtFloor_ += clamp_for_log(t.raw, floor);
            clamp_for_log(t.shown, floor);
        }
    }

    // Series of runs that left the collection go with them.
    for (auto it = lines_.begin(); it != lines_.end();) {
        const bool present = std::any_of(traces_.begin(), traces_.end(), [&](const Trace& t) { return t.key == it->first; });
        if (present) {
            ++it;
            continue;
        }
        for (QLineSeries* s : {it->second.raw, it->second.warmup, it->second.timed}) {
            removeSeries(s);
            delete s;
        }
        it = lines_.erase(it);
    }

    applyRanges();
    const auto* x = static_cast<QValueAxis*>(xAxis_);
    const int columns = std::max(50, static_cast<int>(plotArea().width()));
    for (const Trace& t : traces_) {
        Lines& lines = linesFor(t);
        const bool smoothed = options_.smoothing > 0;
        // Replacing points and pens makes Qt Charts rebuild and repaint the series: skip runs that did
        // not change (finished runs while another one is live).
        const Lines::Drawn drawn{t.raw.size(), x->min(), x->max(), columns, options_, t.colour, t.name,
                                 t.raw.empty() ? 0.0 : t.raw.back().y()};
        if (lines.drawn == drawn) continue;
        lines.drawn = drawn;
        const std::size_t split = std::min(t.warmup_points, t.shown.size());
        std::vector<QPointF> warm(t.shown.begin(), t.shown.begin() + static_cast<std::ptrdiff_t>(split));
        // The timed line starts at the last warm-up point so the two join.
        std::vector<QPointF> timed(t.shown.begin() + static_cast<std::ptrdiff_t>(split > 0 ? split - 1 : 0), t.shown.end());
        if (split == t.shown.size()) timed.clear();
        lines.warmup->replace(toList(decimate_min_max(warm, x->min(), x->max(), columns)));
        lines.timed->replace(toList(decimate_min_max(timed, x->min(), x->max(), columns)));
        lines.raw->replace(smoothed ? toList(decimate_min_max(t.raw, x->min(), x->max(), columns)) : QList<QPointF>{});
        lines.raw->setVisible(smoothed);

        const QPen solid(t.colour, 2);
        if (lines.timed->pen() != solid) lines.timed->setPen(solid);
        const QPen dashed(t.colour, 2, Qt::DashLine);
        if (lines.warmup->pen() != dashed) lines.warmup->setPen(dashed);
        QColor faint = t.colour;
        faint.setAlpha(kRawAlpha);
        const QPen rawPen(faint, 1);
        if (lines.raw->pen() != rawPen) lines.raw->setPen(rawPen);
        if (lines.timed->name() != t.name) lines.timed->setName(t.name);
    }
    updateTitle();
}

void MetricPlot::applyRanges() {
    if (zoomed_) return;
    Extent xs;
    Extent ys;
    for (const Trace& t : traces_) {
        for (const auto* points : {&t.raw, &t.shown}) {
            for (const QPointF& p : *points) {
                xs.add(p.x());
                ys.add(p.y());
            }
        }
    }
    if (options_.x == XAxis::Step) {
        // The planned step count is known from the start: the x axis does not move while a run grows.
        xs.add(1);
        xs.add(plannedSteps_);
    }
    if (!xs.valid()) {
        xs = Extent{};
        xs.add(0);
        xs.add(1);
    }
    const NiceRange xr = nice_range(xs.lo, xs.hi, 6);
    setAxisRange(xAxis_, xr.lo, xr.hi, xr.ticks);
    if (!ys.valid()) {
        ys = Extent{};
        ys.add(options_.log_y ? 1 : 0);
        ys.add(options_.log_y ? 10 : 1);
    }
    const NiceRange yr = options_.log_y ? nice_log_range(ys.lo, ys.hi) : nice_range(ys.lo, ys.hi, 6);
    setAxisRange(yAxis_, yr.lo, yr.hi, yr.ticks);
}

void MetricPlot::setAxisRange(QAbstractAxis* axis, double lo, double hi, int ticks) {
    const QScopedValueRollback<bool> guard(applyingRange_, true);
    if (auto* value = qobject_cast<QValueAxis*>(axis)) {
        if (value->min() != lo || value->max() != hi) value->setRange(lo, hi);
        if (value->tickCount() != ticks) value->setTickCount(std::clamp(ticks, 2, 12));
    } else if (auto* log = qobject_cast<QLogValueAxis*>(axis)) {
        if (log->min() != lo || log->max() != hi) log->setRange(lo, hi);
    }
}

void MetricPlot::resetZoom() {
    zoomed_ = false;
    applyRanges();
}

std::size_t MetricPlot::pointsDrawn() const {
    std::size_t total = 0;
    for (const auto& [key, lines] : lines_) {
        for (const QLineSeries* s : {lines.raw, lines.warmup, lines.timed}) total += static_cast<std::size_t>(s->count());
    }
    return total;
}

QImage MetricPlot::renderImage(const RunCollection& runs, QSize logical, qreal scale) const {
    // A detached chart in its own scene: rendering a widget into a high-DPI image draws only a quarter
    // of the chart in Qt Charts 6.4, a scene scaled by the painter draws all of it.
    const int legendHeight = 30;
    const QSizeF chartSize(logical.width(), logical.height() - legendHeight);
    QGraphicsScene scene;
    auto* copy = new MetricPlot(spec_);
    scene.addItem(copy);
    copy->setOptions(options_);
    copy->setGeometry(QRectF(QPointF(0, 0), chartSize));
    copy->refresh(runs);  // the plot area is known now: decimate for this size
    copy->refresh(runs);
    QImage image(logical * scale, QImage::Format_ARGB32_Premultiplied);
    const QColor background = options_.dark ? QColor(0x26, 0x26, 0x26) : QColor(Qt::white);
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.scale(scale, scale);
    scene.render(&painter, QRectF(QPointF(0, 0), chartSize), QRectF(QPointF(0, 0), chartSize));
    paint_legend(painter, copy->traces(), QRectF(0, chartSize.height(), logical.width(), legendHeight), options_.dark);
    painter.end();
    return image;
}

void paint_legend(QPainter& painter, const std::vector<MetricPlot::Trace>& traces, const QRectF& area, bool dark) {
    painter.save();
    QFont font = painter.font();
    font.setPixelSize(13);
    painter.setFont(font);
    const QFontMetricsF metrics(font);
    const QColor text = dark ? QColor(0xee, 0xee, 0xee) : QColor(0x20, 0x20, 0x20);
    qreal x = area.left() + 16;
    const qreal y = area.center().y();
    for (const MetricPlot::Trace& t : traces) {
        if (t.raw.empty()) continue;
        const qreal width = 28 + metrics.horizontalAdvance(t.name) + 18;
        if (x + width > area.right()) break;
        painter.setPen(QPen(t.colour, 3));
        painter.drawLine(QPointF(x, y), QPointF(x + 20, y));
        painter.setPen(text);
        painter.drawText(QPointF(x + 26, y + metrics.ascent() / 2 - 1), t.name);
        x += width;
    }
    const QString note = QCoreApplication::translate("MetricPlot", "dashed: warm-up");
    const qreal noteWidth = metrics.horizontalAdvance(note);
    if (x + noteWidth + 16 <= area.right()) {
        painter.setPen(QColor(128, 128, 128));
        painter.drawText(QPointF(area.right() - noteWidth - 16, y + metrics.ascent() / 2 - 1), note);
    }
    painter.restore();
}

}  // namespace tewb::ui
