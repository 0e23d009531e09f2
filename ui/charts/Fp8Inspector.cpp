#include "ui/charts/Fp8Inspector.h"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include "core/common/TextTable.h"
#include "ui/charts/BlockScaleHistogram.h"
#include "ui/charts/PaintedImage.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

constexpr int kLabelWidth = 230;
constexpr int kTopMargin = 18;
constexpr int kBarHeight = 14;
constexpr int kMapTop = kTopMargin + kBarHeight + 8;
// Row labels: a size that reads at print size, and rows at least one label line tall (a shorter row clipped
// the labels' underscores).
constexpr int kLabelPixels = 11;
constexpr int kRowHeight = 15;

// A perceptual dark blue → teal → yellow scale (close to viridis) at t in [0, 1].
QColor colour_at(double t) {
    static const QColor stops[] = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140), QColor(94, 201, 98),
                                   QColor(253, 231, 37)};
    t = std::clamp(t, 0.0, 1.0) * 4.0;
    const int i = std::min(3, static_cast<int>(t));
    const double f = t - i;
    const QColor& a = stops[i];
    const QColor& b = stops[i + 1];
    return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * f, a.greenF() + (b.greenF() - a.greenF()) * f,
                            a.blueF() + (b.blueF() - a.blueF()) * f);
}

QString number_text(std::optional<double> v, int decimals = 1) {
    return v ? QString::fromStdString(format_fixed(v, decimals)) : QStringLiteral("–");
}

}  // namespace

Fp8HeatMap::Fp8HeatMap(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("fp8HeatMap"));
    setMouseTracking(true);
    setMinimumHeight(160);
}

void Fp8HeatMap::show(const RunRecord* record, Fp8Metric metric) {
    rowNames_.clear();
    steps_.clear();
    cells_.clear();
    metricName_ = QString::fromUtf8(to_string(metric).data());
    log_ = metric == Fp8Metric::Amax || metric == Fp8Metric::Scale;
    if (record) {
        for (const Fp8SlotInfo& slot : record->fp8_slots) {
            rowNames_.push_back(QStringLiteral("%1 · %2").arg(QString::fromStdString(slot.module),
                                                             QString::fromUtf8(to_string(slot.role).data())));
        }
        for (const StepMetrics& step : record->steps) steps_.push_back(step.step);
        cells_.assign(rowNames_.size(), std::vector<std::optional<double>>(steps_.size()));
        for (std::size_t c = 0; c < record->steps.size(); ++c) {
            const StepMetrics& step = record->steps[c];
            for (std::size_t r = 0; r < rowNames_.size() && r < step.fp8.size(); ++r) {
                std::optional<double> v = fp8_metric_value(step.fp8[r], metric);
                if (v && (!std::isfinite(*v) || (log_ && *v <= 0))) v.reset();
                cells_[r][c] = v;
            }
        }
    }
    lo_ = std::numeric_limits<double>::infinity();
    hi_ = -std::numeric_limits<double>::infinity();
    for (const auto& row : cells_) {
        for (const auto& v : row) {
            if (!v) continue;
            lo_ = std::min(lo_, *v);
            hi_ = std::max(hi_, *v);
        }
    }
    hasValues_ = lo_ <= hi_;
    if (!hasValues_) {
        lo_ = 0;
        hi_ = 1;
    }
    setMinimumHeight(fullHeight());
    update();
}

std::optional<double> Fp8HeatMap::value(int row, int column) const {
    if (row < 0 || row >= rows() || column < 0 || column >= columns()) return std::nullopt;
    return cells_[static_cast<std::size_t>(row)][static_cast<std::size_t>(column)];
}

int Fp8HeatMap::fullHeight() const {
    return kMapTop + std::max(4, static_cast<int>(rowNames_.size())) * kRowHeight + 4;
}

QStringList Fp8HeatMap::labelsAt(QSize size) const {
    QImage scratch(QSize(8, 8), QImage::Format_ARGB32_Premultiplied);
    QPainter painter(&scratch);
    return paintMap(painter, size);
}

QStringList Fp8HeatMap::paintMap(QPainter& painter, QSize size) const {
    painter.fillRect(QRect(QPoint(0, 0), size), palette().color(QPalette::Base));
    painter.setPen(palette().color(QPalette::Text));
    if (cells_.empty() || steps_.empty()) {
        painter.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, tr("No FP8 statistics in this run"));
        return {};
    }
    if (!hasValues_) {  // a grey map with a made-up 0 … 1 scale would say nothing
        painter.drawText(QRect(QPoint(8, 0), size - QSize(16, 0)), Qt::AlignCenter | Qt::TextWordWrap,
                         tr("No %1 in this run: it did not inspect its casts. Its amax and scale are known (pick them as the "
                            "colour).")
                             .arg(metricName_));
        return {};
    }
    const double cellW = std::max(1.0, (size.width() - kLabelWidth - 8.0) / static_cast<double>(steps_.size()));
    const double cellH = std::max(1.0, (size.height() - kMapTop - 4.0) / static_cast<double>(rowNames_.size()));
    const auto t_of = [&](double v) {
        if (hi_ <= lo_) return 0.5;
        return log_ ? (std::log10(v) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_)) : (v - lo_) / (hi_ - lo_);
    };
    for (std::size_t r = 0; r < cells_.size(); ++r) {
        for (std::size_t c = 0; c < steps_.size(); ++c) {
            const QRectF cell(kLabelWidth + c * cellW, kMapTop + r * cellH, cellW + 0.5, cellH + 0.5);
            painter.fillRect(cell, cells_[r][c] ? colour_at(t_of(*cells_[r][c])) : QColor(200, 200, 200));
        }
    }
    QFont small = painter.font();
    small.setPixelSize(kLabelPixels);
    painter.setFont(small);
    const QFontMetricsF metrics(small);
    const double line = metrics.height();
    // Where the rows are shorter than a label line (a map squeezed below fullHeight()), every n-th row is
    // labelled and the colour bar's text says so.
    const int every = cellH + 0.5 >= line ? 1 : static_cast<int>(std::ceil(line / cellH));
    QStringList drawn;
    for (std::size_t r = 0; r < rowNames_.size(); r += static_cast<std::size_t>(every)) {
        const QString label = metrics.elidedText(rowNames_[r], Qt::ElideMiddle, kLabelWidth - 8);
        const QRectF at(2, kMapTop + (r + 0.5) * cellH - line / 2, kLabelWidth - 6, line);
        painter.drawText(at, Qt::AlignRight | Qt::AlignVCenter | Qt::TextDontClip, label);
        drawn << label;
    }
    // The colour bar: range and metric.
    const QRectF bar(kLabelWidth, kTopMargin, 200, kBarHeight);
    for (int i = 0; i < 200; ++i) painter.fillRect(QRectF(bar.left() + i, bar.top(), 1.5, bar.height()), colour_at(i / 199.0));
    painter.drawText(QRectF(2, kTopMargin, kLabelWidth - 6, kBarHeight), Qt::AlignRight | Qt::AlignVCenter, metricName_);
    QString legend = tr("%1 … %2%3, steps %4–%5; grey: no value")
                         .arg(QString::number(lo_, 'g', 3), QString::number(hi_, 'g', 3), log_ ? tr(" (log)") : QString())
                         .arg(steps_.front())
                         .arg(steps_.back());
    if (every > 1) legend += tr("; one row in %1 labelled (hover for the others)").arg(every);
    painter.drawText(QPointF(bar.right() + 6, bar.bottom() - 2), legend);
    return drawn;
}

void Fp8HeatMap::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    paintMap(painter, size());
}

QImage Fp8HeatMap::render(QSize size, qreal scale) const {
    return painted_image(size, scale, [&](QPainter& painter) { paintMap(painter, size); });
}

std::optional<std::pair<int, int>> Fp8HeatMap::cellAt(QPoint p) const {
    if (cells_.empty() || steps_.empty()) return std::nullopt;
    const double cellW = std::max(1.0, (width() - kLabelWidth - 8.0) / static_cast<double>(steps_.size()));
    const double cellH = std::max(1.0, (height() - kMapTop - 4.0) / static_cast<double>(rowNames_.size()));
    const int row = static_cast<int>((p.y() - kMapTop) / cellH);
    const int column = p.x() < kLabelWidth ? 0 : static_cast<int>((p.x() - kLabelWidth) / cellW);
    if (p.y() < kMapTop || row >= rows() || column >= columns()) return std::nullopt;
    return std::make_pair(row, column);
}

void Fp8HeatMap::mouseMoveEvent(QMouseEvent* event) {
    if (const auto cell = cellAt(event->position().toPoint())) {
        const std::optional<double> v = value(cell->first, cell->second);
        QToolTip::showText(event->globalPosition().toPoint(),
                           tr("%1\nstep %2\n%3: %4")
                               .arg(rowNames_[static_cast<std::size_t>(cell->first)])
                               .arg(steps_[static_cast<std::size_t>(cell->second)])
                               .arg(metricName_, v ? QString::number(*v, 'g', 4) : tr("no value")),
                           this);
    }
}

void Fp8HeatMap::mousePressEvent(QMouseEvent* event) {
    if (const auto cell = cellAt(event->position().toPoint())) Q_EMIT slotClicked(cell->first);
}

Fp8Inspector::Fp8Inspector(RunCollection* runs, QWidget* parent) : QWidget(parent), runs_(runs) {
    setObjectName(QStringLiteral("fp8Inspector"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Inspector — run:"), this));
    runBox_ = new QComboBox(this);
    runBox_->setObjectName(QStringLiteral("fp8InspectorRun"));
    runBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    runBox_->setMinimumContentsLength(16);
    row->addWidget(runBox_, 1);
    row->addWidget(new QLabel(tr("colour:"), this));
    metricBox_ = new QComboBox(this);
    metricBox_->setObjectName(QStringLiteral("fp8InspectorMetric"));
    for (const Fp8Metric m : {Fp8Metric::SnrDb, Fp8Metric::CurrentSnrDb, Fp8Metric::BlockSnrDb, Fp8Metric::Mxfp8SnrDb,
                              Fp8Metric::Nvfp4SnrDb, Fp8Metric::Saturated, Fp8Metric::Underflow, Fp8Metric::Amax,
                              Fp8Metric::Scale}) {
        metricBox_->addItem(QString::fromUtf8(to_string(m).data()), static_cast<int>(m));
    }
    row->addWidget(metricBox_);
    layout->addLayout(row);
    note_ = new QLabel(this);
    note_->setWordWrap(true);
    layout->addWidget(note_);
    auto* split = new QSplitter(Qt::Vertical, this);
    // Every row keeps a readable label: a run with many slots scrolls rather than squeezing its rows.
    heatScroll_ = new QScrollArea(split);
    heatScroll_->setObjectName(QStringLiteral("fp8HeatMapScroll"));
    heatScroll_->setWidgetResizable(true);
    heatScroll_->setFrameShape(QFrame::NoFrame);
    heatScroll_->setMinimumHeight(140);
    heatMap_ = new Fp8HeatMap(heatScroll_);
    heatScroll_->setWidget(heatMap_);
    table_ = new QTableWidget(split);
    table_->setObjectName(QStringLiteral("fp8WhatIf"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    // The what-if table keeps its header and a few rows whatever the map needs (at 1024×700 the map took all but
    // one row); neither side collapses.
    scales_ = new BlockScaleHistogram(split);
    split->addWidget(heatScroll_);
    split->addWidget(table_);
    split->addWidget(scales_);
    split->setChildrenCollapsible(false);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 2);
    layout->addWidget(split, 1);

    connect(runBox_, &QComboBox::currentIndexChanged, this, &Fp8Inspector::updateView);
    connect(metricBox_, &QComboBox::currentIndexChanged, this, &Fp8Inspector::updateView);
    connect(runs_, &RunCollection::runAdded, this, &Fp8Inspector::updateRuns);
    connect(runs_, &RunCollection::runRemoved, this, &Fp8Inspector::updateRuns);
    connect(runs_, &RunCollection::runChanged, this, [this](int key) {
        const RunCollection::Entry* e = runs_->find(key);
        if (e && e->record.status != RunStatus::Running) updateRuns();  // a finished run: its full map
    });
    connect(heatMap_, &Fp8HeatMap::slotClicked, this, &Fp8Inspector::pickSlot);
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) { pickSlot(row); });
    updateRuns();
}

void Fp8Inspector::pickSlot(int row) {
    const RunRecord* r = currentRecord();
    if (!r || row < 0 || row >= static_cast<int>(r->fp8_slots.size())) return;
    pickedRow_ = row;
    updateBlockScales();
    const Fp8SlotInfo& info = r->fp8_slots[static_cast<std::size_t>(row)];
    Q_EMIT slotPicked(Fp8SlotKey{info.module, info.role});
}

// The picked slot's block scales where the run has them; hidden for runs without (one scale per tensor, or not
// inspected).
void Fp8Inspector::updateBlockScales() {
    const RunRecord* r = currentRecord();
    const bool shown = r && !r->fp8_block_scales.empty() && !r->fp8_slots.empty();
    scales_->setVisible(shown);
    if (!shown) {
        scales_->show(std::nullopt, QString());
        return;
    }
    const std::size_t row = static_cast<std::size_t>(
        std::clamp(pickedRow_, 0, static_cast<int>(std::min(r->fp8_slots.size(), r->fp8_block_scales.size())) - 1));
    const Fp8SlotInfo& info = r->fp8_slots[row];
    scales_->show(r->fp8_block_scales[row], QStringLiteral("%1 · %2").arg(QString::fromStdString(info.module),
                                                                        QString::fromUtf8(to_string(info.role).data())));
}

const RunRecord* Fp8Inspector::currentRecord() const {
    const int index = runBox_->currentIndex();
    if (index < 0 || index >= static_cast<int>(keys_.size())) return nullptr;
    const RunCollection::Entry* e = runs_->find(keys_[static_cast<std::size_t>(index)]);
    return e ? &e->record : nullptr;
}

void Fp8Inspector::updateRuns() {
    const int previous = runBox_->currentIndex() >= 0 && runBox_->currentIndex() < static_cast<int>(keys_.size())
                             ? keys_[static_cast<std::size_t>(runBox_->currentIndex())]
                             : -1;
    keys_.clear();
    {
        const QSignalBlocker block(runBox_);
        runBox_->clear();
        for (const RunCollection::Entry& e : runs_->entries()) {
            if (e.record.fp8_slots.empty()) continue;
            keys_.push_back(e.key);
            runBox_->addItem(QString::fromStdString(display_name(e.record)));
        }
        const auto it = std::find(keys_.begin(), keys_.end(), previous);
        runBox_->setCurrentIndex(keys_.empty() ? -1 : it == keys_.end() ? static_cast<int>(keys_.size()) - 1
                                                                            : static_cast<int>(it - keys_.begin()));
    }
    updateView();
}

void Fp8Inspector::updateView() {
    const RunRecord* r = currentRecord();
    const auto metric = static_cast<Fp8Metric>(metricBox_->currentData().toInt());
    heatMap_->show(r, metric);
    bool inspected = false;
    if (r) {
        for (const StepMetrics& s : r->steps) {
            for (const Fp8SlotSample& sample : s.fp8) inspected = inspected || sample.rel_mse.has_value();
        }
    }
    if (!r) {
        note_->setText(tr("No FP8 run shown. The inspector needs an FP8 run (te backend, FP8 precision)."));
    } else if (!inspected) {
        note_->setText(tr("This run did not inspect its casts: only amax and scale are known. Tick \"Inspect FP8 casts\" in "
                          "the run setup (or te-bench --inspect-fp8) for saturation, underflow, quantization SNR and the "
                          "what-if recipes."));
    } else {
        QString text = tr("What-if columns: the error current scaling, block scaling (1×128, weights 128×128, E4M3, "
                          "power-of-two scales), MXFP8 (E4M3, a power-of-two scale per 32 values) and NVFP4 (E2M1, an E4M3 "
                          "scale per 16 values, weights 16×16, and a tensor scale) would have made on the same tensors; "
                          "computed, not trained with.");
        if (!r->fp8_block_scales.empty()) text += tr(" Below the table: the block scales of the slot you click.");
        if (r->execution.fp8_inspection_ms && r->summary.mean_ms) {
            text += tr(" Inspection cost %1 ms of %2 ms per step.")
                        .arg(QString::number(*r->execution.fp8_inspection_ms, 'f', 1), QString::number(*r->summary.mean_ms, 'f', 1));
        }
        note_->setText(text);
    }
    const std::vector<Fp8SlotDigest> digests = r ? fp8_slot_digests(*r) : std::vector<Fp8SlotDigest>{};
    QStringList header{tr("slot"), tr("dtype"), tr("SNR dB")};
    for (const WhatIf w : kWhatIfs) header << tr("what-if %1 dB").arg(QString::fromUtf8(what_if_column(w).data()));
    header << tr("worst saturated %") << tr("least error");
    table_->clear();
    table_->setColumnCount(static_cast<int>(header.size()));
    table_->setHorizontalHeaderLabels(header);
    // (set here, with the header's labels in: its height is known now)
    table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + 4 * table_->verticalHeader()->defaultSectionSize() +
                             2 * table_->frameWidth());
    table_->setRowCount(static_cast<int>(digests.size()));
    for (std::size_t i = 0; i < digests.size(); ++i) {
        const Fp8SlotDigest& d = digests[i];
        QStringList cells{QStringLiteral("%1 · %2").arg(QString::fromStdString(d.slot.module), QString::fromUtf8(to_string(d.slot.role).data())),
                          QString::fromUtf8(to_string(d.slot.dtype).data()), number_text(d.snr_db)};
        for (const std::optional<double>& what_if : d.what_if_snr_db) cells << number_text(what_if);
        cells << (d.worst_saturated ? number_text(100.0 * *d.worst_saturated, 3) : QStringLiteral("–"))
              << (d.best.empty() ? QStringLiteral("–") : QString::fromStdString(d.best));
        for (int c = 0; c < static_cast<int>(header.size()); ++c) {
            table_->setItem(static_cast<int>(i), c, new QTableWidgetItem(cells[c]));
        }
    }
    table_->resizeColumnsToContents();
    updateBlockScales();
}

}  // namespace tewb::ui
