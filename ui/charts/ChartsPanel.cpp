#include "ui/charts/ChartsPanel.h"

#include <algorithm>
#include <array>

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QVBoxLayout>

#include "core/results/MeasurementQuality.h"
#include "ui/charts/RunLegend.h"
#include "ui/common/RunColors.h"
#include "ui/common/ScrollArea.h"
#include "ui/common/ValidationLoss.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

ChartControls::ChartControls(QWidget* parent) : QWidget(parent) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("X axis:"), this));
    xAxis_ = new QComboBox(this);
    xAxis_->setObjectName(QStringLiteral("xAxis"));
    xAxis_->addItem(tr("step"));
    xAxis_->addItem(tr("tokens"));
    xAxis_->addItem(tr("time"));
    xAxis_->setToolTip(tr("step: the run's step number · tokens: tokens trained, every rank's (thousands) · time: "
                          "wall-clock seconds since the run started"));
    row->addWidget(xAxis_);
    row->addSpacing(12);
    row->addWidget(new QLabel(tr("Smoothing:"), this));
    smoothing_ = new QSlider(Qt::Horizontal, this);
    smoothing_->setObjectName(QStringLiteral("smoothing"));
    smoothing_->setRange(0, 95);
    smoothing_->setToolTip(tr("Debiased exponential moving average; the raw values stay as a faint line"));
    smoothing_->setMaximumWidth(160);
    row->addWidget(smoothing_);
    smoothingValue_ = new QLabel(QStringLiteral("0.00"), this);
    smoothingValue_->setMinimumWidth(32);
    row->addWidget(smoothingValue_);
    row->addSpacing(12);
    logY_ = new QCheckBox(tr("Log y"), this);
    logY_->setObjectName(QStringLiteral("logY"));
    logY_->setToolTip(tr("Logarithmic y axis; values ≤ 0 are drawn at the axis floor and counted in the title"));
    row->addWidget(logY_);
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("runFilter"));
    filter_->setPlaceholderText(tr("Filter runs"));
    filter_->setClearButtonEnabled(true);
    filter_->setMaximumWidth(160);
    filter_->setToolTip(tr("Only the runs whose names contain this text (any case) are drawn and listed"));
    row->addWidget(filter_);
    auto* reset = new QPushButton(tr("Reset zoom"), this);
    reset->setObjectName(QStringLiteral("resetZoom"));
    reset->setToolTip(tr("Drag a rectangle on a chart to zoom in; right click a chart to zoom out, set its own log y "
                         "or y range, or open it in a window of its own; double click enlarges it"));
    row->addWidget(reset);
    showAll_ = new QPushButton(tr("Show every chart"), this);
    showAll_->setObjectName(QStringLiteral("showEveryChart"));
    showAll_->setToolTip(tr("One chart is enlarged: show every chart again (or double click it)"));
    showAll_->hide();
    row->addWidget(showAll_);
    row->addStretch();

    connect(xAxis_, &QComboBox::currentIndexChanged, this, &ChartControls::optionsChanged);
    connect(smoothing_, &QSlider::valueChanged, this, [this](int v) {
        smoothingValue_->setText(QString::number(v / 100.0, 'f', 2));
        Q_EMIT optionsChanged();
    });
    connect(logY_, &QCheckBox::toggled, this, &ChartControls::optionsChanged);
    connect(filter_, &QLineEdit::textChanged, this, &ChartControls::filterChanged);
    connect(reset, &QPushButton::clicked, this, &ChartControls::resetZoomRequested);
}

PlotOptions ChartControls::options() const {
    PlotOptions o;
    o.x = std::array{XAxis::Step, XAxis::Tokens, XAxis::Time}[static_cast<std::size_t>(std::clamp(xAxis_->currentIndex(), 0, 2))];
    o.smoothing = smoothing_->value() / 100.0;
    o.log_y = logY_->isChecked();
    o.dark = dark_;
    return o;
}

void ChartControls::setLogY(bool on) {
    logY_->setChecked(on);
}

ChartsPanel::ChartsPanel(RunCollection* runs, std::vector<MetricSpec> specs, int columns, QWidget* parent)
    : QWidget(parent), runs_(runs), controls_(new ChartControls(this)), grid_(new QGridLayout),
      maxColumns_(std::max(1, columns)) {
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(controls_);
    legend_ = new RunLegend(this);
    layout->addWidget(legend_);
    for (const MetricSpec& spec : specs) {
        auto* view = new MetricChartView(spec, this);
        view->setObjectName(spec.id + QStringLiteral("Chart"));
        views_.push_back(view);
        connectGridView(view);
    }
    auto* charts = new QWidget(this);
    charts->setObjectName(QStringLiteral("charts"));
    charts->setLayout(grid_);
    grid_->setContentsMargins(0, 0, 0, 0);
    placeViews(maxColumns_);
    scroll_ = scroll_area_for(charts, QStringLiteral("chartArea"), false, this);
    // However small the splitter makes the panel, a good part of a chart stays in view (its plot area scrolls, it is
    // never squeezed below 360×180 px).
    scroll_->setMinimumHeight(kLeastChartAreaHeight);
    layout->addWidget(scroll_, 1);

    connect(controls_, &ChartControls::optionsChanged, this, qOverload<>(&ChartsPanel::applyOptions));
    connect(controls_, &ChartControls::resetZoomRequested, this, [this] {
        for (MetricChartView* v : everyView()) v->plot()->resetZoom();
        markDirty();
        refreshIfDirty();
    });
    connect(controls_->showAll_, &QPushButton::clicked, this, [this] { setEnlarged(nullptr); });
    connect(controls_, &ChartControls::filterChanged, this, &ChartsPanel::hiddenChanged);
    connect(legend_, &RunLegend::visibilityToggled, this, &ChartsPanel::toggleRun);
    connect(legend_, &RunLegend::soloRequested, this, &ChartsPanel::showOnly);
    connect(legend_, &RunLegend::showAllRequested, this, &ChartsPanel::showEveryRun);
    connect(runs_, &RunCollection::runAdded, this, &ChartsPanel::markDirty);
    connect(runs_, &RunCollection::runChanged, this, &ChartsPanel::markDirty);
    connect(runs_, &RunCollection::runRemoved, this, [this](int key) {
        hidden_.erase(key);
        markDirty();
    });
    timer_.setInterval(kRefreshIntervalMs);
    connect(&timer_, &QTimer::timeout, this, &ChartsPanel::refreshIfDirty);
    timer_.start();
}

void ChartsPanel::connectView(MetricChartView* view) {
    connect(view, &MetricChartView::ownOptionsChanged, this, [this, view] {
        applyOptions(view, options());
        view->plot()->refresh(*runs_);
    });
}

void ChartsPanel::connectGridView(MetricChartView* view) {
    connectView(view);
    connect(view, &MetricChartView::enlargeToggled, this, [this, view] { setEnlarged(enlarged_ == view ? nullptr : view); });
    connect(view, &MetricChartView::ownWindowRequested, this, [this, view] { openInOwnWindow(view); });
}

std::vector<MetricChartView*> ChartsPanel::ownWindowViews() const {
    std::vector<MetricChartView*> open;
    for (const QPointer<MetricChartView>& v : ownWindows_) {
        if (v) open.push_back(v);
    }
    return open;
}

std::vector<MetricChartView*> ChartsPanel::everyView() const {
    std::vector<MetricChartView*> all = views_;
    for (MetricChartView* v : ownWindowViews()) all.push_back(v);
    return all;
}

void ChartsPanel::setEnlarged(MetricChartView* view) {
    if (view && std::find(views_.begin(), views_.end(), view) == views_.end()) return;
    enlarged_ = view;
    for (MetricChartView* v : views_) {
        v->setEnlargeOffer(view == v ? MetricChartView::EnlargeOffer::Restore : MetricChartView::EnlargeOffer::Enlarge);
    }
    controls_->showAll_->setVisible(view != nullptr);
    placeViews(columns_ > 0 ? columns_ : maxColumns_);
    dirty_ = true;  // decimation follows the new width
    refreshIfDirty();
}

MetricChartView* ChartsPanel::openInOwnWindow(MetricChartView* source) {
    auto* window = new QWidget(this, Qt::Window);
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->setObjectName(QStringLiteral("chartWindow"));
    window->setWindowTitle(tr("%1 — TE Workbench").arg(source->plot()->spec().title));
    auto* box = new QVBoxLayout(window);
    auto* view = new MetricChartView(source->plot()->spec(), window);
    view->setObjectName(source->objectName());
    view->setEnlargeOffer(MetricChartView::EnlargeOffer::None);
    view->setOwnLogY(source->ownLogY());
    view->plot()->setYRange(source->plot()->yRange());
    box->addWidget(view);
    std::erase_if(ownWindows_, [](const QPointer<MetricChartView>& v) { return v.isNull(); });
    ownWindows_.emplace_back(view);
    connectView(view);
    applyOptions(view, options());
    view->plot()->setHiddenRuns(notDrawn());
    window->resize(900, 560);
    window->show();
    view->plot()->refresh(*runs_);
    return view;
}

void ChartsPanel::toggleRun(int key) {
    if (!hidden_.erase(key)) hidden_.insert(key);
    hiddenChanged();
}

// Only `key` shown; when it already is the only one (every other run the legend names hidden), every run again.
// Runs the legend does not name (the FP8 charts': runs without FP8 statistics) have no line to hide.
void ChartsPanel::showOnly(int key) {
    std::set<int> others;
    for (const RunLegend::Entry& e : legend_->entries()) {
        if (e.key != key) others.insert(e.key);
    }
    const bool alone = std::all_of(others.begin(), others.end(), [this](int k) { return hidden_.count(k) > 0; });
    hidden_ = alone ? std::set<int>{} : others;
    hiddenChanged();
}

void ChartsPanel::showEveryRun() {
    hidden_.clear();
    hiddenChanged();
}

void ChartsPanel::hiddenChanged() {
    markDirty();
    refreshIfDirty();
}

// The run's name as the legend and the charts say it.
namespace {
QString shown_name(const RunCollection::Entry& e) {
    return QString::fromStdString(noisy_name(display_name(e.record), e.record.execution.quality) +
                                  std::string(unfinished_mark(e.record.status)));
}
}  // namespace

std::set<int> ChartsPanel::filteredOut() const {
    std::set<int> out;
    const QString filter = controls_->filter_->text().trimmed();
    if (filter.isEmpty()) return out;
    for (const RunCollection::Entry& e : runs_->entries()) {
        if (!shown_name(e).contains(filter, Qt::CaseInsensitive)) out.insert(e.key);
    }
    return out;
}

std::set<int> ChartsPanel::notDrawn() const {
    std::set<int> out = filteredOut();
    out.insert(hidden_.begin(), hidden_.end());
    return out;
}

PlotOptions ChartsPanel::options() const {
    return controls_->options();
}

void ChartsPanel::setDark(bool dark) {
    controls_->dark_ = dark;
    applyOptions();
}

void ChartsPanel::applyOptions() {
    const PlotOptions o = options();
    // The panel's log y sets every chart's: a chart's own choice lasts until then.
    if (o.log_y != lastPanelLogY_) {
        lastPanelLogY_ = o.log_y;
        for (MetricChartView* v : everyView()) v->setOwnLogY(std::nullopt);
    }
    for (MetricChartView* v : everyView()) applyOptions(v, o);
    markDirty();
    refreshIfDirty();
}

void ChartsPanel::applyOptions(MetricChartView* view, const PlotOptions& panel) {
    PlotOptions o = panel;
    o.log_y = view->ownLogY().value_or(panel.log_y);
    // A typed range that a log axis cannot show (lowest y ≤ 0) gives way to the data's range.
    if (o.log_y && view->plot()->yRange() && view->plot()->yRange()->lo <= 0) view->plot()->setYRange(std::nullopt);
    view->plot()->setOptions(o);
}

void ChartsPanel::setSpecs(const std::vector<MetricSpec>& specs) {
    for (std::size_t i = 0; i < specs.size() && i < views_.size(); ++i) views_[i]->plot()->setSpec(specs[i]);
    markDirty();
    refreshIfDirty();
}

void ChartsPanel::refreshIfDirty() {
    if (!dirty_ && !ownWindowsDirty_) return;
    // Charts in their own windows follow the runs whether or not the panel's tab is shown.
    const std::set<int> notShown = notDrawn();
    if (ownWindowsDirty_) {
        ownWindowsDirty_ = false;
        for (MetricChartView* v : ownWindowViews()) {
            v->plot()->setHiddenRuns(notShown);
            v->plot()->refresh(*runs_);
        }
    }
    if (!dirty_ || !isVisible()) return;  // a hidden panel catches up when shown
    dirty_ = false;
    ++refreshCount_;
    for (MetricChartView* v : views_) {
        v->plot()->setHiddenRuns(notShown);
        v->plot()->refresh(*runs_);
    }
    const std::set<int> filtered = filteredOut();
    std::vector<RunLegend::Entry> items;
    const auto has_line = [this](int key) {
        for (const MetricChartView* v : views_) {
            for (const MetricPlot::Trace& t : v->plot()->traces()) {
                if (t.key == key && !t.raw.empty()) return true;
            }
        }
        return false;
    };
    for (const RunCollection::Entry& e : runs_->entries()) {
        // A hidden run keeps its entry (to show it again), also where only runs with data are named.
        if (legendOnlyRunsWithData_ && hidden_.count(e.key) == 0 && !has_line(e.key)) continue;
        if (filtered.count(e.key) > 0) continue;  // the filter's: not listed while it is typed
        items.push_back({e.key, shown_name(e), e.colour});
    }
    const auto& entries = runs_->entries();
    const bool validation =
        std::any_of(entries.begin(), entries.end(), [](const RunCollection::Entry& e) { return has_val_loss(e.record); });
    const QString notes =
        items.empty() ? tr("No runs yet: queue one from the run setup, or open records (Ctrl+O).")
        : validation  ? tr("dashed: warm-up · faint: raw values under smoothing · dotted with dots: validation loss "
                          "(held-out tail of the token file)")
                      : tr("dashed: warm-up · faint: raw values under smoothing");
    const QString filterNote =
        filtered.empty()      ? QString()
        : filtered.size() == 1 ? tr("1 run filtered out by \"%1\" · ").arg(controls_->filter_->text().trimmed())
                               : tr("%1 runs filtered out by \"%2\" · ").arg(filtered.size()).arg(controls_->filter_->text().trimmed());
    legend_->setRuns(items, hidden_, filterNote + notes);
}

void ChartsPanel::placeViews(int columns) {
    columns_ = columns;
    for (MetricChartView* view : views_) grid_->removeWidget(view);
    if (enlarged_) {
        for (MetricChartView* view : views_) view->setVisible(view == enlarged_);
        grid_->addWidget(enlarged_, 0, 0);
        for (int row = 0; row < grid_->rowCount(); ++row) grid_->setRowStretch(row, row == 0 ? 1 : 0);
        return;
    }
    for (std::size_t i = 0; i < views_.size(); ++i) {
        views_[i]->setVisible(true);
        grid_->addWidget(views_[i], static_cast<int>(i) / columns, static_cast<int>(i) % columns);
    }
    // A row whose charts moved away must not keep its stretch or height.
    for (int row = 0; row < grid_->rowCount(); ++row) grid_->setRowStretch(row, row * columns < static_cast<int>(views_.size()) ? 1 : 0);
}

QSize ChartsPanel::minimumSizeHint() const {
    const QMargins margins = layout()->contentsMargins();
    int width = controls_->minimumSizeHint().width();
    // The chart area has no sideways scroll bar: room for one chart and the upright scroll bar beside it.
    const int bar = scroll_->verticalScrollBar()->sizeHint().width();
    for (const MetricChartView* view : views_) width = std::max(width, view->minimumWidth() + bar);
    return {width + margins.left() + margins.right(), QWidget::minimumSizeHint().height()};
}

void ChartsPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (views_.empty()) return;
    const int spacing = std::max(0, grid_->horizontalSpacing());
    const QMargins margins = layout()->contentsMargins();
    const int room = width() - margins.left() - margins.right() - scroll_->verticalScrollBar()->sizeHint().width();
    const int fit = (room + spacing) / (views_.front()->minimumWidth() + spacing);
    const int columns = std::clamp(fit, 1, maxColumns_);
    if (columns != columns_) placeViews(columns);
}

void ChartsPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    dirty_ = true;  // decimation depends on the plot width, known once shown
    refreshIfDirty();
}

}  // namespace tewb::ui
