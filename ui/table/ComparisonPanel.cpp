#include "ui/table/ComparisonPanel.h"

#include <algorithm>

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QScrollBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStyle>
#include <QTimer>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/results/Comparability.h"
#include "ui/charts/LedgerSummary.h"
#include "ui/charts/TimeBreakdownChart.h"
#include "ui/charts/TopKernelsPanel.h"
#include "ui/common/RunTable.h"
#include "ui/common/ScrollArea.h"
#include "ui/common/ValidationLoss.h"
#include "ui/runs/RunCollection.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/SettingsDiffDialog.h"

namespace tewb::ui {

namespace {

// Hidden until the user shows them ("Columns…" or the header's context menu): what a first look at a
// comparison does not need, so that the rest fits a 1280-pixel window. The status stays: a cancelled or failed
// run's partial figures must not read as a finished run's. The noise column says how far the mean can be
// trusted (median and p90 are there on demand); an emulated run says so in its name and its speedup; the spread
// and the implementation are long texts.
constexpr int kHiddenByDefault[] = {ComparisonModel::MedianMs,    ComparisonModel::P90Ms,
                                    ComparisonModel::TokensPerS, ComparisonModel::Tflops,   ComparisonModel::Mfu,
                                    ComparisonModel::MemoryRatio, ComparisonModel::Spread,  ComparisonModel::Scaling,
                                    ComparisonModel::ValLoss, ComparisonModel::Implementation};

constexpr int kNameWidthCap = 180;
constexpr int kRowsInView = 8;  // the table's minimum shows this many runs  // longer run names are elided; the full name is the cell's tooltip

bool hiddenByDefault(int column) {
    return std::find(std::begin(kHiddenByDefault), std::end(kHiddenByDefault), column) != std::end(kHiddenByDefault);
}

}  // namespace

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
    columnsButton_ = new QToolButton(this);
    columnsButton_->setObjectName(QStringLiteral("comparisonColumns"));
    columnsButton_->setText(tr("Columns…"));
    columnsButton_->setToolTip(tr("Show or hide the table's columns (also: right-click the table's header)"));
    columnsButton_->setPopupMode(QToolButton::InstantPopup);
    row->addWidget(columnsButton_);
    layout->addLayout(row);
    splitter_ = new QSplitter(Qt::Horizontal, this);
    splitter_->setObjectName(QStringLiteral("comparisonSplitter"));
    splitter_->setChildrenCollapsible(false);
    view_ = new QTableView(splitter_);
    view_->setObjectName(QStringLiteral("comparisonTable"));
    setup_run_table(view_, model_);
    // Elided in the middle: a name's end ("… (emulated FP8)", "#2") says as much as its start.
    view_->setTextElideMode(Qt::ElideMiddle);
    // The time breakdown with the launch ledger's totals and the top kernels of a traced run under it.
    side_ = new QWidget(splitter_);
    auto* side_layout = new QVBoxLayout(side_);
    side_layout->setContentsMargins(0, 0, 0, 0);
    breakdown_ = new TimeBreakdownChart(side_);
    ledger_ = new LedgerSummary(side_);
    topKernels_ = new TopKernelsPanel(side_);
    side_layout->addWidget(breakdown_, 1);
    side_layout->addWidget(ledger_);
    side_layout->addWidget(topKernels_, 1);
    splitter_->addWidget(view_);
    splitter_->addWidget(side_);
    splitter_->setStretchFactor(0, 3);
    splitter_->setStretchFactor(1, 2);
    // The table and the side panel scroll inside the panel when they need more height than it has, so the panel's
    // own minimum stays small and the dashboard's splitter above it moves (it did not while the panel asked for the
    // table's rows and the side panel's whole height).
    scroll_ = scroll_area_for(splitter_, QStringLiteral("comparisonScroll"), false, this);
    layout->addWidget(scroll_, 1);
    buildColumnsMenu();

    breakdownRefresh_ = new QTimer(this);
    breakdownRefresh_->setSingleShot(true);
    breakdownRefresh_->setInterval(ComparisonModel::kLiveUpdateMs * 2);
    connect(breakdownRefresh_, &QTimer::timeout, this, [this] {
        const std::vector<RunRecord> records = model_->summarizedRecords();
        breakdown_->show(records);
        ledger_->setRecords(records);
        topKernels_->setRecords(records);
        placeSidePanel();
    });
    const auto refresh = [this] {
        if (!breakdownRefresh_->isActive()) breakdownRefresh_->start();
    };
    connect(runs_, &RunCollection::runAdded, this, refresh);
    connect(runs_, &RunCollection::runChanged, this, refresh);
    connect(runs_, &RunCollection::runRemoved, this, refresh);

    connect(runs_, &RunCollection::runChanged, this, [this](int key) {
        const RunCollection::Entry* e = runs_->find(key);
        if (e && e->record.status != RunStatus::Running) fitColumns();  // final numbers are in
    });
    // After setup_run_table's own sizing (connected first), so the cap and the placement see the new widths.
    connect(model_, &QAbstractItemModel::rowsInserted, this, &ComparisonPanel::fitColumns);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &ComparisonPanel::fitColumns);
    connect(model_, &QAbstractItemModel::rowsInserted, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(model_, &ComparisonModel::baselineChanged, this, &ComparisonPanel::rebuildBaselineChoices);
    connect(baseline_, &QComboBox::activated, this, [this](int index) {
        model_->setBaseline(baseline_->itemData(index).toInt());
    });
    rebuildBaselineChoices();
    fitColumns();
}

void ComparisonPanel::buildColumnsMenu() {
    columnsMenu_ = new QMenu(this);
    columnsMenu_->setObjectName(QStringLiteral("comparisonColumnsMenu"));
    for (int column = 0; column < model_->columnCount(); ++column) {
        QAction* action = columnsMenu_->addAction(model_->headerData(column, Qt::Horizontal).toString());
        action->setCheckable(true);
        action->setData(column);
        if (column == ComparisonModel::Name) action->setEnabled(false);  // a row without its run's name says nothing
        connect(action, &QAction::toggled, this, [this, column](bool shown) { setColumnShown(column, shown); });
    }
    columnsButton_->setMenu(columnsMenu_);
    QHeaderView* header = view_->horizontalHeader();
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(header, &QHeaderView::customContextMenuRequested, this,
            [this, header](const QPoint& at) { columnsMenu_->popup(header->viewport()->mapToGlobal(at)); });
    restoreColumnChoices({});
    // The rows' own menu: copy the table, and the settings two selected runs were given differently.
    view_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(view_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        auto* menu = new QMenu(this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        for (QAction* action : view_->actions()) menu->addAction(action);  // "Copy table" (Ctrl+C)
        QAction* diff = menu->addAction(tr("Compare settings of the two selected runs"), this, &ComparisonPanel::showSettingsDiff);
        diff->setEnabled(view_->selectionModel()->selectedRows().size() == 2);
        if (!diff->isEnabled()) diff->setToolTip(tr("Select two runs (Ctrl+click) to see which settings differ"));
        menu->popup(view_->viewport()->mapToGlobal(at));
    });
}

SettingsDiffDialog* ComparisonPanel::showSettingsDiff() {
    const QModelIndexList rows = view_->selectionModel()->selectedRows();
    if (rows.size() != 2) return nullptr;
    const std::vector<RunRecord> records = model_->summarizedRecords();
    const auto at = [&records](const QModelIndex& index) -> const RunRecord* {
        return index.row() >= 0 && static_cast<std::size_t>(index.row()) < records.size() ? &records[static_cast<std::size_t>(index.row())] : nullptr;
    };
    const RunRecord* a = at(std::min(rows[0], rows[1]));
    const RunRecord* b = at(std::max(rows[0], rows[1]));
    if (!a || !b) return nullptr;
    auto* dialog = new SettingsDiffDialog(*a, *b, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

void ComparisonPanel::setColumnShown(int column, bool shown) {
    if (column < 0 || column >= model_->columnCount()) return;
    choices_.insert(model_->headerData(column, Qt::Horizontal).toString(), shown);
    showColumn(column, shown);
}

void ComparisonPanel::showColumn(int column, bool shown) {
    for (QAction* action : columnsMenu_->actions()) {
        if (action->data().toInt() == column && action->isChecked() != shown) {
            const QSignalBlocker block(action);
            action->setChecked(shown);
        }
    }
    if (view_->isColumnHidden(column) == !shown) return;
    view_->setColumnHidden(column, !shown);
    if (shown) view_->resizeColumnToContents(column);
    fitColumns();
}

bool ComparisonPanel::isColumnShown(int column) const {
    return !view_->isColumnHidden(column);
}

QVariantMap ComparisonPanel::columnChoices() const {
    return choices_;
}

void ComparisonPanel::restoreColumnChoices(const QVariantMap& choices) {
    choices_ = choices;
    for (int column = 0; column < model_->columnCount(); ++column) {
        const QString key = model_->headerData(column, Qt::Horizontal).toString();
        const bool shown = column == ComparisonModel::Name || choices_.value(key, !hiddenByDefault(column)).toBool();
        showColumn(column, shown);
    }
}

int ComparisonPanel::tableWidthNeeded() const {
    const QHeaderView* header = view_->horizontalHeader();
    int width = 0;
    for (int column = 0; column < header->count(); ++column) {
        if (!header->isSectionHidden(column)) width += header->sectionSize(column);
    }
    const int scrollBar = view_->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, view_);
    return width + 2 * view_->frameWidth() + scrollBar;
}

void ComparisonPanel::fitColumns() {
    // Hidden by default, but shown while the table has what they are about (unless the user chose): Scaling
    // while a data-parallel job is in it, Val loss while a run on a token file is (synthetic runs have none).
    const auto& entries = runs_->entries();
    const auto any = [&](auto&& has) { return std::any_of(entries.begin(), entries.end(), has); };
    const std::pair<int, bool> automatic[] = {
        {ComparisonModel::Scaling, any([](const RunCollection::Entry& e) { return e.record.execution.dist.has_value(); })},
        {ComparisonModel::ValLoss, any([](const RunCollection::Entry& e) { return has_val_loss(e.record); })}};
    for (const auto& [column, wanted] : automatic) {
        if (choices_.contains(model_->headerData(column, Qt::Horizontal).toString())) continue;
        if (view_->isColumnHidden(column) == wanted) {
            showColumn(column, wanted);  // calls back here once, with the column settled
            return;
        }
    }
    view_->resizeColumnsToContents();
    QHeaderView* header = view_->horizontalHeader();
    if (header->sectionSize(ComparisonModel::Name) > kNameWidthCap) header->resizeSection(ComparisonModel::Name, kNameWidthCap);
    placeSidePanel();
}

void ComparisonPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    placeSidePanel();
}

void ComparisonPanel::updateMinimumHeights() {
    // Every run's row in view (up to kRowsInView; more scroll), and the side panel as tall as its wrapped
    // texts need for its width: a splitter gives its parts their minimum, not their height for width. The
    // dashboard scrolls when the two need more than the window has.
    const int rows = std::clamp(model_->rowCount(), 3, kRowsInView);
    view_->setMinimumHeight(view_->horizontalHeader()->sizeHint().height() + rows * view_->verticalHeader()->defaultSectionSize() +
                            2 * view_->frameWidth() + view_->style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, view_));
    // Its scroll area never scrolls sideways: the table and the side panel keep their least width, as they did
    // without it.
    scroll_->setMinimumWidth(splitter_->minimumSizeHint().width());
    // The panel's least: the header and three rows in view.
    scroll_->setMinimumHeight(std::min(view_->minimumHeight(),
                                       view_->horizontalHeader()->sizeHint().height() + 3 * view_->verticalHeader()->defaultSectionSize() +
                                           2 * view_->frameWidth()));
    const QList<int> sizes = splitter_->sizes();
    const int sideWidth = splitter_->orientation() == Qt::Vertical || sizes.size() < 2 ? width() : sizes[1];
    QLayout* layout = side_->layout();
    side_->setMinimumHeight(layout->hasHeightForWidth() ? std::max(layout->minimumSize().height(), layout->totalHeightForWidth(sideWidth))
                                                        : layout->minimumSize().height());
}

void ComparisonPanel::placeSidePanel() {
    updateMinimumHeights();
    const int table = tableWidthNeeded();
    const int side = side_->minimumSizeHint().width();
    const Qt::Orientation wanted = width() >= table + splitter_->handleWidth() + side ? Qt::Horizontal : Qt::Vertical;
    if (splitter_->orientation() == wanted) return;
    splitter_->setOrientation(wanted);
    if (wanted == Qt::Horizontal) {
        splitter_->setSizes({table, std::max(side, width() - table)});
    } else {
        const int tableHeight = std::max(view_->minimumSizeHint().height(), splitter_->height() / 2);
        splitter_->setSizes({tableHeight, std::max(side_->minimumSizeHint().height(), splitter_->height() - tableHeight)});
    }
    updateMinimumHeights();  // the side's width changed with the orientation
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
        if (const auto refused = baseline_refusal(e.record)) {  // listed, not selectable: the reason in its tooltip
            if (auto* items = qobject_cast<QStandardItemModel*>(baseline_->model())) {
                QStandardItem* item = items->item(baseline_->count() - 1);
                item->setEnabled(false);
                item->setToolTip(tr("Cannot be the baseline: %1.").arg(QString::fromStdString(*refused)));
            }
        }
        if (model_->baseline() == e.key) baseline_->setCurrentIndex(baseline_->count() - 1);
    }
    baseline_->setEnabled(baseline_->count() > 0);
}

}  // namespace tewb::ui
