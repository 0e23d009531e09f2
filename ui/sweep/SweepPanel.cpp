#include "ui/sweep/SweepPanel.h"

#include <algorithm>

#include <QAction>
#include <QBuffer>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGraphicsScene>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMainWindow>
#include <QMessageBox>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableWidget>
#include <QValueAxis>
#include <QVBoxLayout>

#include "core/common/Error.h"
#include "core/common/TextTable.h"
#include "core/results/AtomicFile.h"
#include "core/results/RunRecord.h"
#include "ui/common/RememberedFolder.h"
#include "ui/common/RunColors.h"
#include "ui/charts/SeriesMath.h"
#include "ui/common/Theme.h"
#include "ui/export/Export.h"
#include "ui/export/SaveNotice.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunMirror.h"

namespace tewb::ui {

SweepPanel::SweepPanel(RunCollection* dashboard, RunCollection* sweepRuns, QWidget* parent)
    : QWidget(parent), runs_(sweepRuns), mirror_(new RunMirror(sweepRuns, dashboard, this)) {
    setObjectName(QStringLiteral("sweep"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Where does a precision start to pay? Each size is trained briefly by the baseline (its "
                                "backend in BF16 on a GPU, FP32 on the CPU) and by the backend in each precision; the chart "
                                "shows the speedup per size. A te baseline with FP8 alone asks where FP8 pays over te's own "
                                "BF16. Layers, vocabulary, device, seed and the FP8 recipe come from the run "
                                "setup; heads = hidden / 64."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    hidden_ = new QLineEdit(QStringLiteral("256,512,768,1024,2048,4096"), this);
    hidden_->setObjectName(QStringLiteral("sweepHidden"));
    batch_ = new QLineEdit(this);
    batch_->setObjectName(QStringLiteral("sweepBatch"));
    batch_->setPlaceholderText(tr("the run setup's batch"));
    seq_ = new QLineEdit(this);
    seq_->setObjectName(QStringLiteral("sweepSeq"));
    seq_->setPlaceholderText(tr("the run setup's sequence length"));
    backend_ = new QComboBox(this);
    backend_->setObjectName(QStringLiteral("sweepBackend"));
    backend_->addItem(tr("TE modules (te)"), static_cast<int>(Backend::Te));
    backend_->addItem(tr("LibTorch (torch)"), static_cast<int>(Backend::Torch));
    baseline_ = new QComboBox(this);
    baseline_->setObjectName(QStringLiteral("sweepBaseline"));
    baseline_->addItem(tr("LibTorch (torch)"), static_cast<int>(Backend::Torch));
    baseline_->addItem(tr("TE modules (te)"), static_cast<int>(Backend::Te));
    baseline_->setToolTip(tr("The backend every size's speedup is measured against, in BF16 on a GPU (FP32 on the CPU). "
                             "torch: what the TE modules gain over plain LibTorch. te: what FP8 gains over the TE modules' "
                             "own BF16 (tick FP8 alone)."));
    auto* precisions = new QHBoxLayout;
    fp32_ = new QCheckBox(tr("FP32"), this);
    bf16_ = new QCheckBox(tr("BF16"), this);
    fp8_ = new QCheckBox(tr("FP8"), this);
    bf16_->setChecked(true);
    fp8_->setChecked(true);
    for (QCheckBox* box : {fp32_, bf16_, fp8_}) precisions->addWidget(box);
    precisions->addStretch();
    warmup_ = new QSpinBox(this);
    warmup_->setRange(0, 1000);
    warmup_->setValue(3);
    iters_ = new QSpinBox(this);
    iters_->setRange(1, 10000);
    iters_->setValue(10);
    repeats_ = new QSpinBox(this);
    repeats_->setObjectName(QStringLiteral("sweepRepeats"));
    repeats_->setRange(1, kMaxRepeats);
    repeats_->setValue(1);
    repeats_->setToolTip(tr("Runs of each configuration at each size, alternating within the size. A size counts as paying "
                            "only where the speedup's 95% interval is above 1 and no run was noisy; with one run the "
                            "interval comes from its timed steps, with repeats from the repeats."));
    form->addRow(tr("Hidden sizes:"), hidden_);
    form->addRow(tr("Batch sizes:"), batch_);
    form->addRow(tr("Sequence lengths:"), seq_);
    form->addRow(tr("Backend:"), backend_);
    form->addRow(tr("Baseline:"), baseline_);
    form->addRow(tr("Precisions:"), precisions);
    form->addRow(tr("Warm-up steps per run:"), warmup_);
    form->addRow(tr("Timed steps per run:"), iters_);
    form->addRow(tr("Repeats per size:"), repeats_);
    layout->addLayout(form);

    auto* buttons = new QHBoxLayout;
    run_ = new QPushButton(tr("Run sweep"), this);
    run_->setObjectName(QStringLiteral("runSweep"));
    exportPng_ = new QPushButton(tr("Export PNG…"), this);
    exportCsv_ = new QPushButton(tr("Export CSV…"), this);
    exportPng_->setEnabled(false);
    exportCsv_->setEnabled(false);
    progress_ = new QLabel(this);
    progress_->setObjectName(QStringLiteral("sweepProgress"));
    progress_->setWordWrap(true);  // a long saved-to path wraps instead of widening the tab
    buttons->addWidget(run_);
    buttons->addWidget(exportPng_);
    buttons->addWidget(exportCsv_);
    buttons->addWidget(progress_, 1);
    buildDashboardSwitch(buttons);
    layout->addLayout(buttons);

    statement_ = new QLabel(this);
    statement_->setObjectName(QStringLiteral("sweepStatement"));
    statement_->setWordWrap(true);
    statement_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(statement_);

    chart_ = new QChart;
    chart_->setTitle(tr("Speedup against the baseline per size"));
    chart_->setAnimationOptions(QChart::NoAnimation);
    chartView_ = new QChartView(chart_, this);
    chartView_->setRenderHint(QPainter::Antialiasing);
    chartView_->setMinimumSize(460, 365);  // a plot area of at least 360×180 px inside the title, axes and legend
    chart_->legend()->setAlignment(Qt::AlignBottom);
    chart_->legend()->setShowToolTips(true);
    style_chart(chart_, dark_);
    table_ = new QTableWidget(this);
    table_->setObjectName(QStringLiteral("sweepTable"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(chartView_);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    connect(run_, &QPushButton::clicked, this, &SweepPanel::runRequested);
    connect(runs_, &RunCollection::runAdded, this, &SweepPanel::onRunChanged);
    connect(runs_, &RunCollection::runChanged, this, &SweepPanel::onRunChanged);
    connect(exportPng_, &QPushButton::clicked, this, [this] { exportWithDialog(true); });
    connect(exportCsv_, &QPushButton::clicked, this, [this] { exportWithDialog(false); });
}

void SweepPanel::buildDashboardSwitch(QLayout* layout) {
    showOnDashboard_ = new QCheckBox(tr("Show sweep runs on the dashboard"), this);
    showOnDashboard_->setObjectName(QStringLiteral("showSweepRuns"));
    showOnDashboard_->setToolTip(tr("A sweep's runs stay in this tab so they do not crowd the dashboard's charts and "
                                    "table; tick to show them there too (named after their sweep)."));
    showOnDashboardAction_ = new QAction(showOnDashboard_->text(), this);
    showOnDashboardAction_->setObjectName(QStringLiteral("showSweepRunsAction"));
    showOnDashboardAction_->setCheckable(true);
    showOnDashboardAction_->setToolTip(showOnDashboard_->toolTip());
    connect(showOnDashboard_, &QCheckBox::toggled, showOnDashboardAction_, &QAction::setChecked);
    connect(showOnDashboardAction_, &QAction::toggled, showOnDashboard_, &QCheckBox::setChecked);
    connect(showOnDashboardAction_, &QAction::toggled, mirror_, &RunMirror::setEnabled);
    layout->addWidget(showOnDashboard_);
}

void SweepPanel::exportWithDialog(bool png) {
    const QString path = png ? choose_save_file(this, tr("Export sweep chart"), QStringLiteral("sweep.png"),
                                                tr("PNG images (*.png)"))
                             : choose_save_file(this, tr("Export sweep table"), QStringLiteral("sweep.csv"),
                                                tr("CSV files (*.csv)"));
    if (path.isEmpty()) return;
    QString error;
    if (png ? exportPng(path, &error) : exportCsv(path, &error)) {
        progress_->setText(saved_message(path));  // stays until the next sweep's progress
        if (auto* main = qobject_cast<QMainWindow*>(window())) {
            main->statusBar()->showMessage(saved_message(path), SaveNotice::kStatusMs);
        }
    } else {
        progress_->setText(not_saved_message(path, error));
        QMessageBox::warning(this, tr("Export failed"), not_saved_message(path, error));
    }
}

QCheckBox* SweepPanel::precisionBox(Precision p) const {
    return p == Precision::Fp32 ? fp32_ : p == Precision::Bf16 ? bf16_ : fp8_;
}

SweepSpec SweepPanel::spec(const RunConfig& base) const {
    SweepSpec spec;
    spec.base = base;
    spec.base.warmup = warmup_->value();
    spec.base.iters = iters_->value();
    spec.repeats = repeats_->value();
    spec.hidden = parse_int_list("Hidden sizes", hidden_->text().trimmed().toStdString());
    if (!batch_->text().trimmed().isEmpty()) spec.batch = parse_int_list("Batch sizes", batch_->text().trimmed().toStdString());
    if (!seq_->text().trimmed().isEmpty()) spec.seq = parse_int_list("Sequence lengths", seq_->text().trimmed().toStdString());
    spec.backend = static_cast<Backend>(backend_->currentData().toInt());
    spec.baseline_backend = static_cast<Backend>(baseline_->currentData().toInt());
    // The run setup's TE implementation is for te runs: a sweep without any takes none (the CLI refuses an explicit one).
    if (spec.backend == Backend::Torch && spec.baseline_backend == Backend::Torch) spec.base.te_impl = TeImpl::Auto;
    spec.precisions.clear();
    for (const Precision p : {Precision::Fp32, Precision::Bf16, Precision::Fp8}) {
        if (precisionBox(p)->isChecked()) spec.precisions.push_back(p);
    }
    if (spec.precisions.empty()) throw ConfigError("Precisions: tick at least one of FP32, BF16, FP8");
    return spec;
}

QString SweepPanel::newSweepName() {
    sweepName_ = tr("Sweep %1").arg(++sweeps_);
    return sweepName_;
}

void SweepPanel::follow(std::vector<SweepRun> plan) {
    plan_ = std::move(plan);
    keys_.assign(plan_.size(), std::nullopt);
    result_.reset();
    done_ = false;
    run_->setEnabled(false);
    update();
}

void SweepPanel::onRunChanged(int key) {
    if (plan_.empty() || done_) return;
    const RunCollection::Entry* e = runs_->find(key);
    if (!e || e->sweep != sweepName_) return;  // an earlier sweep's run
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (keys_[i] == key) {
            update();
            return;
        }
    }
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (!keys_[i] && !plan_[i].skip_reason && plan_[i].config.name == e->record.config.name) {
            keys_[i] = key;
            break;
        }
    }
    update();
}

void SweepPanel::queueDrained() {
    // The queue ran dry with runs of the sweep missing (cleared or cancelled before they began): show
    // what there is; the missing sizes read "not run".
    if (plan_.empty() || done_) return;
    done_ = true;
    run_->setEnabled(true);
    showResult();
    Q_EMIT finished();
}

void SweepPanel::update() {
    std::size_t toRun = 0;
    std::size_t ended = 0;
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (plan_[i].skip_reason) continue;
        ++toRun;
        const RunCollection::Entry* e = keys_[i] ? runs_->find(*keys_[i]) : nullptr;
        if (e && e->record.status != RunStatus::Running) ++ended;
    }
    progress_->setText(tr("%1: %2 of %3 runs done").arg(sweepName_).arg(ended).arg(toRun));
    if (ended == toRun && !done_) {
        done_ = true;
        run_->setEnabled(true);
        showResult();
        Q_EMIT finished();
    }
}

void SweepPanel::showResult() {
    std::vector<std::optional<RunRecord>> records(plan_.size());
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (const RunCollection::Entry* e = keys_[i] ? runs_->find(*keys_[i]) : nullptr) records[i] = e->record;
    }
    result_ = analyze_sweep(plan_, records);
    const SweepResult& r = *result_;

    QStringList lines;
    if (const std::optional<std::string> cut = r.cut_short_statement()) lines << QString::fromStdString(*cut).toHtmlEscaped();
    for (const std::string& s : r.break_even_statements()) lines << QString::fromStdString(s).toHtmlEscaped();
    for (const std::string& s : r.skipped) lines << tr("Skipped %1").arg(QString::fromStdString(s).toHtmlEscaped());
    statement_->setText(lines.join(QStringLiteral("<br>")));
    drawChart(*result_);
    fillTable(*result_);
    exportPng_->setEnabled(true);
    exportCsv_->setEnabled(true);
}

QString SweepPanel::chartTitle(const SweepResult& r) const {
    QString baseline = tr("the baseline");
    for (const SweepRun& run : plan_) {
        if (!run.baseline) continue;
        baseline = QStringLiteral("%1 %2")
                       .arg(QString::fromUtf8(to_string(run.config.backend).data()),
                            QString::fromUtf8(to_string(run.config.precision).data()).toUpper());
        break;
    }
    const QString device = r.device.empty() ? tr("device unknown") : QString::fromStdString(r.device);
    const QString basis = r.repeats > 1 ? tr("%1 repeats per size").arg(r.repeats) : tr("one run per size");
    int noisy = 0;
    for (const SweepCell& c : r.cells) noisy += c.noisy && c.speedup ? 1 : 0;
    const QString noise = noisy > 0 ? tr(", %n noisy", nullptr, noisy) : tr(", none noisy");
    return tr("Speedup against %1 per size · %2 · %3%4").arg(baseline, device, basis, noise);
}

void SweepPanel::drawChart(const SweepResult& r) {
    chart_->setTitle(chartTitle(r));
    // x: the hidden size when only it varies, else the analytic GFLOP per step; both on a log axis.
    bool onlyHidden = true;
    for (const SweepPoint& p : r.points) {
        onlyHidden = onlyHidden && p.batch == r.points.front().batch && p.seq == r.points.front().seq;
    }
    chart_->removeAllSeries();
    for (QAbstractAxis* axis : chart_->axes()) {
        chart_->removeAxis(axis);
        delete axis;
    }
    auto* x = new QLogValueAxis;
    x->setBase(2);
    x->setMinorTickCount(0);
    x->setLabelFormat(QStringLiteral("%g"));
    x->setTitleText(onlyHidden ? tr("hidden size") : tr("GFLOP per training step"));
    auto* y = new QValueAxis;
    y->setTitleText(tr("speedup (×)"));  // short: the chart's title says against what; a long one was elided
    chart_->addAxis(x, Qt::AlignBottom);
    chart_->addAxis(y, Qt::AlignLeft);
    double yMax = 1.2;
    double xMin = 0;
    double xMax = 0;
    const auto xOf = [&](std::size_t k) { return onlyHidden ? r.points[k].hidden : r.flops[k] / 1e9; };
    bool anyUnclear = false;
    for (std::size_t p = 0; p < r.precisions.size(); ++p) {
        bool emulated = false;
        for (std::size_t k = 0; k < r.points.size(); ++k) emulated = emulated || r.cell(k, p).emulated;
        if (emulated) continue;  // the emulation's cost is not a speedup: the table says "emulated", the chart shows none
        auto* line = new QLineSeries;
        auto* dots = new QScatterSeries;
        // A size whose verdict is unclear (noisy, or its interval contains 1) is drawn hollow: it neither pays nor not.
        auto* unclear = new QScatterSeries;
        for (std::size_t k = 0; k < r.points.size(); ++k) {
            const SweepCell& c = r.cell(k, p);
            if (!c.speedup) continue;
            line->append(xOf(k), *c.speedup);
            (c.verdict() == SweepVerdict::Unclear ? unclear : dots)->append(xOf(k), *c.speedup);
            yMax = std::max(yMax, (c.speedup_ci ? std::max(c.speedup_ci->hi, *c.speedup) : *c.speedup) * 1.1);
        }
        const QString upper = QString::fromUtf8(to_string(r.precisions[p]).data()).toUpper();
        const QString name = QString::fromStdString(precision_label(upper.toStdString(), emulated));
        line->setName(name);
        const QColor colour = run_colour(static_cast<int>(p) + 1);
        line->setPen(QPen(colour, 2));
        dots->setColor(colour);
        dots->setMarkerSize(8);
        unclear->setColor(chart_colours(dark_).background);
        unclear->setBorderColor(colour);
        unclear->setMarkerSize(10);
        unclear->setName(tr("hollow: unclear (noisy, or the 95% interval contains 1)"));
        chart_->addSeries(line);
        chart_->addSeries(dots);
        chart_->addSeries(unclear);
        for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(line), static_cast<QAbstractSeries*>(dots),
                                   static_cast<QAbstractSeries*>(unclear)}) {
            s->attachAxis(x);
            s->attachAxis(y);
        }
        chart_->legend()->markers(dots).front()->setVisible(false);
        // One legend entry says what hollow means, for the first precision that has such a size.
        chart_->legend()->markers(unclear).front()->setVisible(unclear->count() > 0 && !anyUnclear);
        anyUnclear = anyUnclear || unclear->count() > 0;
    }
    for (std::size_t k = 0; k < r.points.size(); ++k) {
        xMin = k == 0 ? xOf(k) : std::min(xMin, xOf(k));
        xMax = k == 0 ? xOf(k) : std::max(xMax, xOf(k));
    }
    if (xMin <= 0) xMin = 1;
    if (xMax <= xMin) xMax = xMin * 2;
    x->setRange(xMin / 1.3, xMax * 1.3);
    // A wide span of GFLOP would put a label at every power of two: decades keep the numbers apart.
    if (xMax / xMin > 64) x->setBase(10);
    const NiceRange yRange = nice_range(0, yMax, ticks_for_length(chartView_->height() - 120, 40, 7));
    y->setRange(0, yRange.hi);
    y->setTickCount(std::clamp(yRange.ticks, 2, 12));
    auto* breakEven = new QLineSeries;
    breakEven->setName(tr("break-even (1.0×)"));
    breakEven->append(xMin / 1.3, 1.0);
    breakEven->append(xMax * 1.3, 1.0);
    breakEven->setPen(QPen(QColor(128, 128, 128), 1.5, Qt::DashLine));
    chart_->addSeries(breakEven);
    breakEven->attachAxis(x);
    breakEven->attachAxis(y);
    style_chart(chart_, dark_);
}

void SweepPanel::fillTable(const SweepResult& r) {
    QStringList header{tr("hidden"), tr("batch"), tr("seq"), tr("GFLOP/step"),
                       r.baseline.empty() ? tr("baseline ms") : tr("baseline %1 ms").arg(QString::fromStdString(r.baseline))};
    for (const Precision p : r.precisions) {
        const QString name = QString::fromUtf8(to_string(p).data()).toUpper();
        header << tr("%1 ms").arg(name) << tr("%1 speedup").arg(name);
    }
    table_->clear();
    table_->setColumnCount(static_cast<int>(header.size()));
    table_->setHorizontalHeaderLabels(header);
    table_->setRowCount(static_cast<int>(r.points.size()));
    const auto put = [this](int row, int column, const std::string& text, const QString& tip = {}) {
        auto* item = new QTableWidgetItem(QString::fromStdString(text));
        item->setToolTip(tip);
        table_->setItem(row, column, item);
    };
    for (std::size_t k = 0; k < r.points.size(); ++k) {
        const int row = static_cast<int>(k);
        put(row, 0, std::to_string(r.points[k].hidden));
        put(row, 1, std::to_string(r.points[k].batch));
        put(row, 2, std::to_string(r.points[k].seq));
        put(row, 3, format_fixed(r.flops[k] / 1e9, 1));
        put(row, 4, format_fixed(r.cell(k, 0).baseline_ms, 2));
        for (std::size_t p = 0; p < r.precisions.size(); ++p) {
            const SweepCell& c = r.cell(k, p);
            const QString tip = QString::fromStdString(c.note);
            put(row, 5 + 2 * static_cast<int>(p), c.ms ? format_fixed(c.ms, 2) : (c.note.rfind("skipped", 0) == 0 ? "skipped" : "-"), tip);
            if (c.emulated && c.speedup) {
                put(row, 6 + 2 * static_cast<int>(p), std::string(kEmulatedSpeedup),
                    tr("Measured ratio %1×, not a speedup: %2.")
                        .arg(QString::fromStdString(format_fixed(c.speedup, 2)), QString::fromStdString(emulated_speedup_reason())));
            } else if (c.speedup) {
                QStringList why;
                if (!c.basis.empty()) why << tr("95% interval over %1.").arg(QString::fromStdString(c.basis));
                if (!c.significant()) why << tr("Not significant: the interval contains 1, so this size neither pays nor is slower.");
                if (c.noisy) {
                    why << tr("Measured noisily, not clean evidence of a difference: %1").arg(QString::fromStdString(c.noisy_reasons));
                }
                put(row, 6 + 2 * static_cast<int>(p), sweep_speedup_text(c, "×"), why.join(QLatin1Char(' ')));
            } else {
                put(row, 6 + 2 * static_cast<int>(p), "-", tip);
            }
        }
    }
    table_->resizeColumnsToContents();
}

QImage SweepPanel::renderChart(QSize logical, qreal scale) const {
    // The chart in its own scene, scaled by the painter (the way MetricPlot exports: a widget rendered at
    // high DPI draws a quarter of a Qt Charts 6.4 chart).
    QGraphicsScene scene;
    const QRectF saved = chart_->geometry();
    QGraphicsScene* home = chart_->scene();
    home->removeItem(chart_);
    scene.addItem(chart_);
    chart_->setGeometry(QRectF(QPointF(0, 0), QSizeF(logical)));
    QImage image(logical * scale, QImage::Format_ARGB32_Premultiplied);
    image.fill(chart_colours(dark_).background);
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.scale(scale, scale);
        scene.render(&painter, QRectF(QPointF(0, 0), QSizeF(logical)), QRectF(QPointF(0, 0), QSizeF(logical)));
    }
    scene.removeItem(chart_);
    home->addItem(chart_);
    chart_->setGeometry(saved);
    return image;
}

bool SweepPanel::exportPng(const QString& path, QString* error) const {
    try {
        if (!result_) throw DataError(path.toStdString() + ": no sweep result yet; run a sweep first");
        check_png_path(std::filesystem::path(path.toStdString()));  // before the chart is drawn
        write_png(std::filesystem::path(path.toStdString()), renderChart());
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

bool SweepPanel::exportCsv(const QString& path, QString* error) const {
    try {
        if (!result_) throw DataError(path.toStdString() + ": no sweep result yet; run a sweep first");
        write_file_atomically(std::filesystem::path(path.toStdString()), sweep_csv_text(*result_));
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

void SweepPanel::setDark(bool dark) {
    dark_ = dark;
    style_chart(chart_, dark_);
}

}  // namespace tewb::ui
