#include "ui/charts/MetricPlot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QAreaSeries>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QScopedValueRollback>
#include <QValueAxis>

#include "core/common/Statistics.h"
#include "ui/charts/SeriesMath.h"
#include "ui/common/RunColors.h"
#include "ui/common/Theme.h"
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


// Folds the traces of each repeat group (2 or more members present) into one: per step, the median of
// the members' values (and of their x, which differs between repeats on the time axis), and the band
// between the lowest and highest member.
std::vector<MetricPlot::Trace> merge_repeats(std::vector<MetricPlot::Trace> traces, const std::vector<std::string>& groups,
                                             const std::vector<std::vector<int>>& steps) {
    std::vector<MetricPlot::Trace> out;
    std::vector<bool> used(traces.size(), false);
    for (std::size_t i = 0; i < traces.size(); ++i) {
        if (used[i]) continue;
        std::vector<std::size_t> members{i};
        if (!groups[i].empty()) {
            for (std::size_t j = i + 1; j < traces.size(); ++j) {
                if (groups[j] == groups[i]) members.push_back(j);
            }
        }
        for (const std::size_t m : members) used[m] = true;
        if (members.size() < 2) {
            out.push_back(std::move(traces[i]));
            continue;
        }
        MetricPlot::Trace merged;
        merged.key = traces[i].key;
        merged.companion = traces[i].companion;
        merged.colour = traces[i].colour;
        merged.band = true;
        merged.repeats = static_cast<int>(members.size());
        merged.name = QCoreApplication::translate("MetricPlot", "%1 (median of %2)").arg(traces[i].name).arg(members.size());
        std::map<int, std::pair<std::vector<double>, std::vector<double>>> byStep;  // step -> (xs, ys)
        int lastWarmupStep = 0;
        for (const std::size_t m : members) {
            for (std::size_t k = 0; k < traces[m].raw.size(); ++k) {
                auto& [xs, ys] = byStep[steps[m][k]];
                xs.push_back(traces[m].raw[k].x());
                ys.push_back(traces[m].raw[k].y());
            }
            if (traces[m].warmup_points > 0) lastWarmupStep = std::max(lastWarmupStep, steps[m][traces[m].warmup_points - 1]);
        }
        for (const auto& [step, values] : byStep) {
            const double x = median_of(values.first);
            merged.raw.emplace_back(x, median_of(values.second));
            merged.band_lo.emplace_back(x, *std::min_element(values.second.begin(), values.second.end()));
            merged.band_hi.emplace_back(x, *std::max_element(values.second.begin(), values.second.end()));
            if (step <= lastWarmupStep) merged.warmup_points = merged.raw.size();
        }
        out.push_back(std::move(merged));
    }
    return out;
}

}  // namespace

MetricPlot::MetricPlot(MetricSpec spec, QGraphicsItem* parent) : QChart(parent), spec_(std::move(spec)), unit_(spec_.unit) {
    setAnimationOptions(QChart::NoAnimation);
    // Qt Charts' default margins (20 px on a side) took a fifth of a small chart's plot area.
    setMargins(QMargins(4, 4, 10, 4));
    // One legend for all charts lives beside them (and is painted into exports): per-chart legends
    // crowd small charts and do not lay out in a detached scene.
    legend()->hide();
    installAxes();
    updateTitle();
}

void MetricPlot::setSpec(MetricSpec spec) {
    spec_ = std::move(spec);
    unit_ = spec_.unit;
    if (yAxis_) applyUnit();
    zoomed_ = false;
    updateTitle();
}

void MetricPlot::setOptions(const PlotOptions& options) {
    const bool themeChanged = options.dark != options_.dark;
    const bool axesChanged = options.log_y != options_.log_y || options.x != options_.x;
    options_ = options;
    if (themeChanged) {
        style_chart(this, options_.dark);
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
        connect(xAxis_, &QValueAxis::rangeChanged, this, [this] { userZoomed(); });
    }
    xAxis_->setTitleText(x_axis_title(options_.x));
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
            connect(axis, &QLogValueAxis::rangeChanged, this, [this] { userZoomed(); });
            yAxis_ = axis;
        } else {
            auto* axis = new QValueAxis(this);
            axis->setLabelFormat(QStringLiteral("%g"));
            connect(axis, &QValueAxis::rangeChanged, this, [this] { userZoomed(); });
            yAxis_ = axis;
        }
        yIsLog_ = options_.log_y;
        addAxis(yAxis_, Qt::AlignLeft);
        for (QAbstractSeries* s : all) s->attachAxis(yAxis_);
    }
    applyUnit();
    style_chart(this, options_.dark);
}

// The unit goes on the y axis, or into the chart's title where the plot is too short for it (an elided
// "cross…" says nothing).
void MetricPlot::applyUnit() {
    const double room = plotArea().height();
    const bool fits = room <= 0 || QFontMetricsF(yAxis_->titleFont()).horizontalAdvance(unit_) + 8 <= room;
    const QString axisTitle = fits ? unit_ : QString();
    if (yAxis_->titleText() != axisTitle) yAxis_->setTitleText(axisTitle);
    if (unitInTitle_ == fits) {
        unitInTitle_ = !fits;
        updateTitle();
    }
}

void MetricPlot::updateTitle() {
    QString title = spec_.title;
    if (unitInTitle_) title += QStringLiteral(" (%1)").arg(unit_);
    if (yRangeApplies()) title += tr(" · y range fixed");
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
    buildTraces(runs);
    removeSeriesOfGoneRuns();
    applyRanges();
    const auto* x = static_cast<QValueAxis*>(xAxis_);
    const int columns = std::max(50, static_cast<int>(plotArea().width()));
    for (const Trace& t : traces_) drawTrace(t, x->min(), x->max(), columns);
    applyUnit();
    updateTitle();
}

MetricPlot::Trace MetricPlot::traceOf(const RunCollection::Entry& entry, bool companion, std::vector<int>& steps) const {
    Trace trace;
    trace.key = companion ? -entry.key : entry.key;
    trace.companion = companion;
    trace.name = QString::fromStdString(noisy_name(display_name(entry.record), entry.record.execution.quality) +
                                        std::string(unfinished_mark(entry.record.status)));
    if (companion) trace.name += spec_.companion_suffix;
    trace.colour = entry.colour;
    const auto& value = companion ? spec_.companion : spec_.value;
    for (const StepMetrics& step : entry.record.steps) {
        const std::optional<double> v = value(entry.record, step);
        if (!v) continue;
        const double x = x_of(options_.x, entry.record, step);
        trace.raw.emplace_back(x, *v);
        if (spec_.spread && !companion) {
            if (const auto spread = spec_.spread(entry.record, step)) {
                trace.band = trace.band_of_ranks = true;
                trace.band_lo.emplace_back(x, spread->first);
                trace.band_hi.emplace_back(x, spread->second);
            }
        }
        steps.push_back(step.step);
        if (step.phase == Phase::Warmup && !companion) trace.warmup_points = trace.raw.size();
    }
    return trace;
}

// One trace per run (repeats merged into their median), smoothed, and clamped for a log axis; after them the
// companions of the runs that have its values (a few evaluations: drawn as they are, never smoothed).
void MetricPlot::buildTraces(const RunCollection& runs) {
    traces_.clear();
    plannedSteps_ = 10;
    std::vector<const RunRecord*> shown;
    std::vector<std::string> groups;
    std::vector<std::vector<int>> steps;
    std::vector<Trace> companions;
    std::vector<std::string> companionGroups;
    std::vector<std::vector<int>> companionSteps;
    for (const RunCollection::Entry& entry : runs.entries()) {
        if (hidden_.count(entry.key) > 0) continue;
        shown.push_back(&entry.record);
        const std::string group = entry.record.repeat ? entry.record.repeat->group : std::string();
        if (entry.record.status == RunStatus::Running) {
            plannedSteps_ = std::max(plannedSteps_, entry.record.config.total_steps());
        }
        groups.push_back(group);
        steps.emplace_back();
        traces_.push_back(traceOf(entry, false, steps.back()));
        if (!spec_.companion) continue;
        std::vector<int> at;
        Trace companion = traceOf(entry, true, at);
        if (companion.raw.empty()) continue;
        companions.push_back(std::move(companion));
        companionGroups.push_back(group);
        companionSteps.push_back(std::move(at));
    }
    traces_ = merge_repeats(std::move(traces_), groups, steps);
    if (spec_.unit_for) unit_ = spec_.unit_for(shown);
    for (Trace& trace : traces_) {
        trace.shown = options_.smoothing > 0 ? smooth_debiased_ema(trace.raw, options_.smoothing) : trace.raw;
    }
    for (Trace& companion : merge_repeats(std::move(companions), companionGroups, companionSteps)) {
        companion.shown = companion.raw;
        traces_.push_back(std::move(companion));
    }

    valuesAtFloor_ = 0;
    if (options_.log_y) {
        std::vector<std::vector<QPointF>> all;
        for (const Trace& t : traces_) all.push_back(t.raw);
        const double floor = floor_for_log(all);
        for (Trace& t : traces_) {
            valuesAtFloor_ += clamp_for_log(t.raw, floor);
            clamp_for_log(t.shown, floor);
            clamp_for_log(t.band_lo, floor);
            clamp_for_log(t.band_hi, floor);
        }
    }
}

// Series of runs that left the collection go with them.
void MetricPlot::removeSeriesOfGoneRuns() {
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
        if (it->second.band) {
            removeSeries(it->second.band);
            delete it->second.band;
        }
        it = lines_.erase(it);
    }
}

void MetricPlot::drawTrace(const Trace& t, double xMin, double xMax, int columns) {
    Lines& lines = linesFor(t);
    const bool smoothed = options_.smoothing > 0;
    // Replacing points and pens makes Qt Charts rebuild and repaint the series: skip runs that did
    // not change (finished runs while another one is live).
    const Lines::Drawn drawn{t.raw.size(), xMin, xMax, columns, options_, t.colour, t.name,
                             t.raw.empty() ? 0.0 : t.raw.back().y(), t.repeats};
    if (lines.drawn == drawn) return;
    lines.drawn = drawn;
    const std::size_t split = std::min(t.warmup_points, t.shown.size());
    std::vector<QPointF> warm(t.shown.begin(), t.shown.begin() + static_cast<std::ptrdiff_t>(split));
    // The timed line starts at the last warm-up point so the two join.
    std::vector<QPointF> timed(t.shown.begin() + static_cast<std::ptrdiff_t>(split > 0 ? split - 1 : 0), t.shown.end());
    if (split == t.shown.size()) timed.clear();
    lines.warmup->replace(toList(decimate_min_max(warm, xMin, xMax, columns)));
    lines.timed->replace(toList(decimate_min_max(timed, xMin, xMax, columns)));
    lines.raw->replace(smoothed ? toList(decimate_min_max(t.raw, xMin, xMax, columns)) : QList<QPointF>{});
    lines.raw->setVisible(smoothed);

    // Runs 11-20 dash-dot, so 20 runs stay apart; a companion (the validation loss) dotted with its values marked.
    const QPen solid(t.colour, penWidth(t.key), t.companion ? Qt::DotLine : run_line_style(t.colour));
    if (lines.timed->pen() != solid) lines.timed->setPen(solid);
    if (t.companion && !lines.timed->pointsVisible()) {
        lines.timed->setPointsVisible(true);
        lines.timed->setMarkerSize(5);
    }
    const QPen dashed(t.colour, penWidth(t.key), Qt::DashLine);
    if (lines.warmup->pen() != dashed) lines.warmup->setPen(dashed);
    QColor faint = t.colour;
    faint.setAlpha(kRawAlpha);
    const QPen rawPen(faint, 1);
    if (lines.raw->pen() != rawPen) lines.raw->setPen(rawPen);
    if (lines.timed->name() != t.name) lines.timed->setName(t.name);
    if (t.band && !lines.band) {
        auto* upper = new QLineSeries(this);
        auto* lower = new QLineSeries(this);
        lines.band = new QAreaSeries(upper, lower);
        upper->setParent(lines.band);
        lower->setParent(lines.band);
        lines.band->setName(t.name + (t.band_of_ranks ? tr(" (min-max of ranks)") : tr(" (min-max of repeats)")));
        addSeries(lines.band);
        lines.band->attachAxis(xAxis_);
        lines.band->attachAxis(yAxis_);
    }
    if (lines.band) {
        lines.band->setVisible(t.band);
        lines.band->upperSeries()->replace(toList(t.band_hi));
        lines.band->lowerSeries()->replace(toList(t.band_lo));
        QColor fill = t.colour;
        fill.setAlpha(55);
        lines.band->setBrush(fill);
        lines.band->setPen(Qt::NoPen);
    }
}

void MetricPlot::applyRanges() {
    if (zoomed_) return;
    Extent xs;
    Extent ys;
    for (const Trace& t : traces_) {
        for (const auto* points : {&t.raw, &t.shown, &t.band_lo, &t.band_hi}) {
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
    // As many ticks as the plot has room for: numbers of a small chart do not overlap.
    const QRectF area = plotArea();
    const NiceRange xr = fitted_range(xs.lo, xs.hi, area.width() > 0 ? ticks_for_length(area.width(), 55) : 6);
    setAxisRange(xAxis_, xr.lo, xr.hi, xr.ticks);
    if (!ys.valid()) {
        ys = Extent{};
        ys.add(options_.log_y ? 1 : 0);
        ys.add(options_.log_y ? 10 : 1);
    }
    if (spec_.start_at_zero && !options_.log_y && ys.lo > 0) ys.add(0);
    if (applyYRange()) return;
    const NiceRange yr = options_.log_y ? nice_log_range(ys.lo, ys.hi)
                                        : fitted_range(ys.lo, ys.hi, area.height() > 0 ? ticks_for_length(area.height(), 40) : 6);
    setAxisRange(yAxis_, yr.lo, yr.hi, yr.ticks);
}

bool MetricPlot::yRangeApplies() const {
    return yRange_ && (!options_.log_y || yRange_->lo > 0);
}

// The typed y range, exactly, its ticks at round values inside it (anchored on the round step, not on the typed
// ends: 0.1…0.47 ticks at 0.1, 0.2, …); false when there is none to apply.
bool MetricPlot::applyYRange() {
    auto* value = qobject_cast<QValueAxis*>(yAxis_);
    if (!yRangeApplies()) {
        if (value && value->tickType() != QValueAxis::TicksFixed) value->setTickType(QValueAxis::TicksFixed);
        return false;
    }
    const QScopedValueRollback<bool> guard(applyingRange_, true);
    if (auto* log = qobject_cast<QLogValueAxis*>(yAxis_)) {
        log->setRange(yRange_->lo, yRange_->hi);
        return true;
    }
    const double height = plotArea().height();
    const NiceRange round = nice_range(yRange_->lo, yRange_->hi, height > 0 ? ticks_for_length(height, 40) : 6);
    value->setRange(yRange_->lo, yRange_->hi);
    value->setTickAnchor(round.lo);
    value->setTickInterval((round.hi - round.lo) / std::max(1, round.ticks - 1));
    value->setTickType(QValueAxis::TicksDynamic);
    return true;
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

void MetricPlot::resizeEvent(QGraphicsSceneResizeEvent* event) {
    QChart::resizeEvent(event);
    if (!xAxis_ || !yAxis_) return;
    applyRanges();
    applyUnit();  // the tick count follows the plot's size
}

void MetricPlot::userZoomed() {
    if (applyingRange_) return;
    zoomed_ = true;
    // A rubber band leaves the axes at the pixels' values ("8.723…"): once it is done, both value axes get nice
    // round ticks around what was chosen.
    if (roundingPending_) return;
    roundingPending_ = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            roundingPending_ = false;
            const QScopedValueRollback<bool> guard(applyingRange_, true);
            for (QAbstractAxis* axis : {static_cast<QAbstractAxis*>(xAxis_), yAxis_}) {
                if (auto* value = qobject_cast<QValueAxis*>(axis)) value->applyNiceNumbers();
            }
        },
        Qt::QueuedConnection);
}

void MetricPlot::resetZoom() {
    zoomed_ = false;
    applyRanges();
}

void MetricPlot::setHiddenRuns(std::set<int> keys) {
    hidden_ = std::move(keys);
}

qreal MetricPlot::penWidth(int key) const {
    return highlighted_ != 0 && std::abs(key) == highlighted_ ? 4.0 : 2.0;
}

void MetricPlot::setHighlighted(int key) {
    if (key == highlighted_) return;
    highlighted_ = key;
    for (auto& [k, lines] : lines_) {
        for (QLineSeries* s : {lines.timed, lines.warmup}) {
            QPen pen = s->pen();
            if (pen.widthF() == penWidth(k)) continue;
            pen.setWidthF(penWidth(k));
            s->setPen(pen);
        }
    }
}

void MetricPlot::setYRange(std::optional<YRange> range) {
    yRange_ = range;
    updateTitle();
    // A zoom into x stays: only the y axis changes (to the range, or to the data's when it is cleared).
    if (!zoomed_) {
        applyRanges();
    } else if (!applyYRange()) {
        resetZoom();
    }
}

std::size_t MetricPlot::pointsDrawn() const {
    std::size_t total = 0;
    for (const auto& [key, lines] : lines_) {
        for (const QLineSeries* s : {lines.raw, lines.warmup, lines.timed}) total += static_cast<std::size_t>(s->count());
    }
    return total;
}

QImage MetricPlot::renderImage(const RunCollection& runs, QSize logical, qreal scale, bool legend) const {
    // A detached chart in its own scene: rendering a widget into a high-DPI image draws only a quarter
    // of the chart in Qt Charts 6.4, a scene scaled by the painter draws all of it.
    QGraphicsScene scene;
    auto* copy = new MetricPlot(spec_);
    scene.addItem(copy);
    copy->setOptions(options_);
    copy->setGeometry(QRectF(QPointF(0, 0), QSizeF(logical)));
    copy->refresh(runs);
    const qreal legendHeight = legend ? legend_height(copy->traces(), logical.width()) : 0;
    const QSizeF chartSize(logical.width(), std::max<qreal>(100, logical.height() - legendHeight));
    copy->setGeometry(QRectF(QPointF(0, 0), chartSize));
    copy->refresh(runs);  // the plot area is known now: decimate for this size
    // Qt Charts lays out axis titles and ranges on posted events: without them the image shows the first
    // pass (the spec's plain unit, ticks for another size).
    QCoreApplication::sendPostedEvents();
    copy->refresh(runs);
    QCoreApplication::sendPostedEvents();
    QImage image(logical * scale, QImage::Format_ARGB32_Premultiplied);
    const QColor background = chart_colours(options_.dark).background;
    image.fill(background);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.scale(scale, scale);
    scene.render(&painter, QRectF(QPointF(0, 0), chartSize), QRectF(QPointF(0, 0), chartSize));
    if (legend) paint_legend(painter, copy->traces(), QRectF(0, chartSize.height(), logical.width(), legendHeight), options_.dark);
    painter.end();
    return image;
}

namespace {

constexpr qreal kLegendRow = 24;
constexpr qreal kLegendPad = 16;

QFont legend_font() {
    QFont font;
    font.setPixelSize(13);
    return font;
}

QString warmup_note() {
    return QCoreApplication::translate("MetricPlot", "dashed: warm-up");
}

// Where each name goes: (row, x) per trace with points, and the note last.
struct LegendPlace {
    int row = 0;
    qreal x = 0;
};

std::vector<LegendPlace> legend_places(const std::vector<MetricPlot::Trace>& traces, qreal width, const QFontMetricsF& metrics) {
    std::vector<LegendPlace> places;
    int row = 0;
    qreal x = kLegendPad;
    const auto place = [&](qreal itemWidth) {
        if (x > kLegendPad && x + itemWidth > width - kLegendPad) {
            ++row;
            x = kLegendPad;
        }
        places.push_back({row, x});
        x += itemWidth;
    };
    for (const MetricPlot::Trace& t : traces) {
        if (t.raw.empty()) continue;
        place(28 + metrics.horizontalAdvance(t.name) + 18);
    }
    place(metrics.horizontalAdvance(warmup_note()) + 4);
    return places;
}

}  // namespace

qreal legend_height(const std::vector<MetricPlot::Trace>& traces, qreal width) {
    const std::vector<LegendPlace> places = legend_places(traces, width, QFontMetricsF(legend_font()));
    return (places.back().row + 1) * kLegendRow + 8;
}

QStringList paint_legend(QPainter& painter, const std::vector<MetricPlot::Trace>& traces, const QRectF& area, bool dark) {
    painter.save();
    const QFont font = legend_font();
    painter.setFont(font);
    const QFontMetricsF metrics(font);
    const QColor text = chart_colours(dark).text;
    const std::vector<LegendPlace> places = legend_places(traces, area.width(), metrics);
    QStringList drawn;
    std::size_t k = 0;
    const auto rowY = [&](int row) { return area.top() + 4 + row * kLegendRow + kLegendRow / 2; };
    for (const MetricPlot::Trace& t : traces) {
        if (t.raw.empty()) continue;
        const LegendPlace& at = places[k++];
        const qreal x = area.left() + at.x;
        const qreal y = rowY(at.row);
        painter.setPen(QPen(t.colour, 3, t.companion ? Qt::DotLine : run_line_style(t.colour)));
        painter.drawLine(QPointF(x, y), QPointF(x + 20, y));
        if (t.companion) {
            painter.setBrush(t.colour);
            painter.drawEllipse(QPointF(x + 10, y), 2.5, 2.5);
            painter.setBrush(Qt::NoBrush);
        }
        if (t.band) {  // a group's band is shown as a light box behind the line
            QColor fill = t.colour;
            fill.setAlpha(60);
            painter.fillRect(QRectF(x, y - 6, 20, 12), fill);
        }
        painter.setPen(text);
        painter.drawText(QPointF(x + 26, y + metrics.ascent() / 2 - 1), t.name);
        drawn << t.name;
    }
    painter.setPen(QColor(128, 128, 128));
    painter.drawText(QPointF(area.left() + places.back().x, rowY(places.back().row) + metrics.ascent() / 2 - 1), warmup_note());
    painter.restore();
    return drawn;
}

}  // namespace tewb::ui
