#include "ui/charts/ChartsPanel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

#include "core/results/MeasurementQuality.h"
#include "ui/common/RunColors.h"
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
    xAxis_->addItem(tr("time"));
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
    auto* reset = new QPushButton(tr("Reset zoom"), this);
    reset->setObjectName(QStringLiteral("resetZoom"));
    reset->setToolTip(tr("Drag a rectangle on a chart to zoom in, right click to zoom out"));
    row->addWidget(reset);
    row->addStretch();

    connect(xAxis_, &QComboBox::currentIndexChanged, this, &ChartControls::optionsChanged);
    connect(smoothing_, &QSlider::valueChanged, this, [this](int v) {
        smoothingValue_->setText(QString::number(v / 100.0, 'f', 2));
        Q_EMIT optionsChanged();
    });
    connect(logY_, &QCheckBox::toggled, this, &ChartControls::optionsChanged);
    connect(reset, &QPushButton::clicked, this, &ChartControls::resetZoomRequested);
}

PlotOptions ChartControls::options() const {
    PlotOptions o;
    o.x = xAxis_->currentIndex() == 1 ? XAxis::Time : XAxis::Step;
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
    legend_ = new QLabel(this);
    legend_->setObjectName(QStringLiteral("legend"));
    legend_->setWordWrap(true);
    layout->addWidget(legend_);
    for (const MetricSpec& spec : specs) {
        auto* view = new MetricChartView(spec, this);
        view->setObjectName(spec.id + QStringLiteral("Chart"));
        views_.push_back(view);
    }
    placeViews(maxColumns_);
    layout->addLayout(grid_, 1);

    connect(controls_, &ChartControls::optionsChanged, this, &ChartsPanel::applyOptions);
    connect(controls_, &ChartControls::resetZoomRequested, this, [this] {
        for (MetricChartView* v : views_) v->plot()->resetZoom();
        dirty_ = true;
        refreshIfDirty();
    });
    connect(runs_, &RunCollection::runAdded, this, &ChartsPanel::markDirty);
    connect(runs_, &RunCollection::runChanged, this, &ChartsPanel::markDirty);
    connect(runs_, &RunCollection::runRemoved, this, &ChartsPanel::markDirty);
    timer_.setInterval(kRefreshIntervalMs);
    connect(&timer_, &QTimer::timeout, this, &ChartsPanel::refreshIfDirty);
    timer_.start();
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
    for (MetricChartView* v : views_) v->plot()->setOptions(o);
    dirty_ = true;
    refreshIfDirty();
}

void ChartsPanel::setSpecs(const std::vector<MetricSpec>& specs) {
    for (std::size_t i = 0; i < specs.size() && i < views_.size(); ++i) views_[i]->plot()->setSpec(specs[i]);
    dirty_ = true;
    refreshIfDirty();
}

void ChartsPanel::refreshIfDirty() {
    if (!dirty_ || !isVisible()) return;  // a hidden panel catches up when shown
    dirty_ = false;
    ++refreshCount_;
    for (MetricChartView* v : views_) v->plot()->refresh(*runs_);
    QStringList items;
    const auto has_line = [this](int key) {
        for (const MetricChartView* v : views_) {
            for (const MetricPlot::Trace& t : v->plot()->traces()) {
                if (t.key == key && !t.raw.empty()) return true;
            }
        }
        return false;
    };
    for (const RunCollection::Entry& e : runs_->entries()) {
        if (legendOnlyRunsWithData_ && !has_line(e.key)) continue;
        // The line's own style: the second ten runs are drawn dash-dot.
        const QString line = run_line_style(e.colour) == Qt::SolidLine ? QStringLiteral("━") : QStringLiteral("━·");
        const std::string name =
            noisy_name(display_name(e.record), e.record.execution.quality) + std::string(unfinished_mark(e.record.status));
        items << QStringLiteral("<span style=\"color:%1; font-size:large\">%2</span>&nbsp;%3")
                     .arg(e.colour.name(), line, QString::fromStdString(name).toHtmlEscaped());
    }
    const auto& entries = runs_->entries();
    const bool validation =
        std::any_of(entries.begin(), entries.end(), [](const RunCollection::Entry& e) { return has_val_loss(e.record); });
    const QString notes = validation ? tr(" &nbsp; <i>dashed: warm-up · faint: raw values under smoothing · dotted with "
                                          "dots: validation loss (held-out tail of the token file)</i>")
                                     : tr(" &nbsp; <i>dashed: warm-up · faint: raw values under smoothing</i>");
    const QString legend = items.isEmpty() ? tr("No runs yet: queue one from the run setup, or open records (Ctrl+O).")
                                           : items.join(QStringLiteral(" &nbsp; ")) + notes;
    // Setting a rich-text label relayouts the window, even with the same text.
    if (legend != legend_->text()) legend_->setText(legend);
}

void ChartsPanel::placeViews(int columns) {
    columns_ = columns;
    for (MetricChartView* view : views_) grid_->removeWidget(view);
    for (std::size_t i = 0; i < views_.size(); ++i) {
        grid_->addWidget(views_[i], static_cast<int>(i) / columns, static_cast<int>(i) % columns);
    }
    // A row whose charts moved away must not keep its stretch or height.
    for (int row = 0; row < grid_->rowCount(); ++row) grid_->setRowStretch(row, row * columns < static_cast<int>(views_.size()) ? 1 : 0);
}

QSize ChartsPanel::minimumSizeHint() const {
    const QMargins margins = layout()->contentsMargins();
    int width = controls_->minimumSizeHint().width();
    for (const MetricChartView* view : views_) width = std::max(width, view->minimumWidth());
    return {width + margins.left() + margins.right(), QWidget::minimumSizeHint().height()};
}

void ChartsPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (views_.empty()) return;
    const int spacing = std::max(0, grid_->horizontalSpacing());
    const QMargins margins = layout()->contentsMargins();
    const int room = width() - margins.left() - margins.right();
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
