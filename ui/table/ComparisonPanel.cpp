#include "ui/table/ComparisonPanel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTimer>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/charts/LedgerSummary.h"
#include "ui/charts/TimeBreakdownChart.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/common/RunTable.h"
#include "ui/runs/RunCollection.h"
#include "ui/table/ComparisonModel.h"

namespace tewb::ui {

ComparisonPanel::ComparisonPanel(RunCollection* runs, QWidget* parent)
    : QWidget(parent), runs_(runs), model_(new ComparisonModel(runs, this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Baseline:"), this));
    baseline_ = new QComboBox(this);
    baseline_->setObjectName(QStringLiteral("baseline"));
    baseline_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    baseline_->setToolTip(tr("Speedup = baseline mean ms / run mean ms; memory ratio = run peak / baseline peak"));
    row->addWidget(baseline_);
    row->addStretch();
    layout->addLayout(row);
    splitter_ = new QSplitter(Qt::Horizontal, this);
    splitter_->setObjectName(QStringLiteral("comparisonSplitter"));
    view_ = new QTableView(splitter_);
    view_->setObjectName(QStringLiteral("comparisonTable"));
    setup_run_table(view_, model_);
    // The time breakdown with the launch ledger's totals and the top kernels of a traced run under it.
    auto* side = new QWidget(splitter_);
    auto* side_layout = new QVBoxLayout(side);
    side_layout->setContentsMargins(0, 0, 0, 0);
    breakdown_ = new TimeBreakdownChart(side);
    ledger_ = new LedgerSummary(side);
    topKernels_ = new TopKernelsPanel(side);
    side_layout->addWidget(breakdown_, 1);
    side_layout->addWidget(ledger_);
    side_layout->addWidget(topKernels_, 1);
    splitter_->addWidget(view_);
    splitter_->addWidget(side);
    splitter_->setStretchFactor(0, 3);
    splitter_->setStretchFactor(1, 2);
    layout->addWidget(splitter_);

    breakdownRefresh_ = new QTimer(this);
    breakdownRefresh_->setSingleShot(true);
    breakdownRefresh_->setInterval(ComparisonModel::kLiveUpdateMs * 2);
    connect(breakdownRefresh_, &QTimer::timeout, this, [this] {
        const std::vector<RunRecord> records = model_->summarizedRecords();
        breakdown_->show(records);
        ledger_->setRecords(records);
        topKernels_->setRecords(records);
    });
    const auto refresh = [this] {
        if (!breakdownRefresh_->isActive()) breakdownRefresh_->start();
    };
    connect(runs_, &RunCollection::runAdded, this, refresh);
    connect(runs_, &RunCollection::runChanged, this, refresh);
    connect(runs_, &RunCollection::runRemoved, this, refresh);

    connect(runs_, &RunCollection::runChanged, view_, [this](int key) {
        const RunCollection::Entry* e = runs_->find(key);
        if (e && e->record.status != RunStatus::Running) view_->resizeColumnsToContents();  // final numbers are in
    });
    connect(model_, &QAbstractItemModel::rowsInserted, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(model_, &ComparisonModel::baselineChanged, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(baseline_, &QComboBox::activated, this, [this](int index) {
        model_->setBaseline(baseline_->itemData(index).toInt());
    });
    rebuildBaselineChoices();
}

void ComparisonPanel::setDark(bool dark) {
    breakdown_->setDark(dark);
}

void ComparisonPanel::rebuildBaselineChoices() {
    const QSignalBlocker block(baseline_);
    baseline_->clear();
    for (const RunCollection::Entry& e : runs_->entries()) {
        QPixmap swatch(12, 12);
        swatch.fill(e.colour);
        baseline_->addItem(QIcon(swatch), QString::fromStdString(display_name(e.record)), e.key);
        if (model_->baseline() == e.key) baseline_->setCurrentIndex(baseline_->count() - 1);
    }
    baseline_->setEnabled(baseline_->count() > 0);
}

}  // namespace tewb::ui
