#include "ui/history/HistoryPanel.h"

#include <exception>

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "core/results/RunStore.h"
#include "ui/common/RunTable.h"
#include "ui/history/HistoryModel.h"

namespace tewb::ui {

HistoryPanel::HistoryPanel(std::filesystem::path storePath, QWidget* parent)
    : QWidget(parent), storePath_(std::move(storePath)), model_(new HistoryModel(this)), proxy_(new QSortFilterProxyModel(this)) {
    proxy_->setSourceModel(model_);
    proxy_->setFilterKeyColumn(-1);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy_->setSortRole(HistoryModel::SortRole);

    auto* layout = new QVBoxLayout(this);
    auto* row = new QHBoxLayout;
    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("historySearch"));
    search_->setPlaceholderText(tr("Search name, backend, precision, device, status…"));
    search_->setClearButtonEnabled(true);
    row->addWidget(search_, 1);
    const auto button = [&](const QString& text, const QString& name, const QString& tip) {
        auto* b = new QPushButton(text, this);
        b->setObjectName(name);
        b->setToolTip(tip);
        row->addWidget(b);
        return b;
    };
    QPushButton* reload = button(tr("Refresh"), QStringLiteral("historyRefresh"), tr("Read the run store again"));
    QPushButton* openButton = button(tr("Open"), QStringLiteral("historyOpen"), tr("Show the selected runs in the charts and table"));
    QPushButton* again = button(tr("Run again"), QStringLiteral("historyRerun"), tr("Queue the selected runs' configurations"));
    QPushButton* removeButton = button(tr("Delete…"), QStringLiteral("historyDelete"), tr("Delete the selected runs from the store"));
    layout->addLayout(row);

    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("historyTable"));
    setup_run_table(view_, proxy_);
    // The indicator first, then sorting on: turning sorting on sorts by the indicator, so the first order shown
    // is the one the header shows (newest first).
    view_->horizontalHeader()->setSortIndicator(HistoryModel::Id, Qt::DescendingOrder);
    view_->setSortingEnabled(true);
    // The pane is a tab beside the dashboard: the name gives up width first (elided in the middle, full in its
    // tooltip with the setup), then Device, Steps and Backend step aside (the name's tooltip has them; a default name
    // says them too), before the table would scroll sideways.
    view_->setTextElideMode(Qt::ElideMiddle);
    const auto fitName = [view = view_] {
        const auto over = [view] {
            int total = 0;
            for (int c = 0; c < view->model()->columnCount(); ++c) total += view->isColumnHidden(c) ? 0 : view->columnWidth(c);
            return total - view->viewport()->width();
        };
        constexpr int kStepAside[] = {HistoryModel::Device, HistoryModel::Steps, HistoryModel::Backend};
        for (const int c : kStepAside) view->setColumnHidden(c, false);
        if (over() > 0) view->setColumnWidth(HistoryModel::Name, std::max(120, view->columnWidth(HistoryModel::Name) - over()));
        for (const int c : kStepAside) {
            if (over() <= 0) break;
            view->setColumnHidden(c, true);
        }
    };
    for (const auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved}) connect(proxy_, signal, view_, fitName);
    connect(proxy_, &QAbstractItemModel::modelReset, view_, fitName);
    view_->viewport()->installEventFilter(this);
    fitName_ = fitName;
    layout->addWidget(view_);

    connect(search_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
    connect(reload, &QPushButton::clicked, this, &HistoryPanel::refresh);
    connect(openButton, &QPushButton::clicked, this, [this] { this->open(selectedIds()); });
    connect(view_, &QTableView::doubleClicked, this, [this] { this->open(selectedIds()); });
    connect(again, &QPushButton::clicked, this, [this] { runAgain(selectedIds()); });
    connect(removeButton, &QPushButton::clicked, this, &HistoryPanel::confirmAndRemove);
}

void HistoryPanel::refresh() {
    try {
        RunStore store(storePath_, RunStore::Access::ReadOnly);  // reading works on a read-only store too
        model_->setRuns(store.list());
    } catch (const std::exception& e) {
        Q_EMIT problem(QString::fromStdString(e.what()));
    }
}

std::vector<std::int64_t> HistoryPanel::selectedIds() const {
    std::vector<std::int64_t> ids;
    for (const QModelIndex& index : view_->selectionModel()->selectedRows()) {
        ids.push_back(index.data(HistoryModel::StoreIdRole).toLongLong());
    }
    return ids;
}

void HistoryPanel::open(const std::vector<std::int64_t>& ids) {
    int opened = 0;
    try {
        RunStore store(storePath_, RunStore::Access::ReadOnly);  // reading works on a read-only store too
        for (const std::int64_t id : ids) {
            if (std::optional<RunRecord> record = store.get(id)) {
                Q_EMIT openRequested(*record, id);
                ++opened;
            } else {
                Q_EMIT problem(tr("Run %1 is no longer in the store (deleted elsewhere?)").arg(id));
            }
        }
    } catch (const std::exception& e) {
        Q_EMIT problem(QString::fromStdString(e.what()));
    }
    if (opened > 0) Q_EMIT openFinished(opened);
}

void HistoryPanel::remove(const std::vector<std::int64_t>& ids) {
    try {
        RunStore store(storePath_);
        for (const std::int64_t id : ids) store.remove(id);
    } catch (const std::exception& e) {
        Q_EMIT problem(QString::fromStdString(e.what()));
    }
    refresh();
}

void HistoryPanel::runAgain(const std::vector<std::int64_t>& ids) {
    try {
        RunStore store(storePath_, RunStore::Access::ReadOnly);  // reading works on a read-only store too
        for (const std::int64_t id : ids) {
            if (std::optional<RunRecord> record = store.get(id)) Q_EMIT rerunRequested(record->config);
        }
    } catch (const std::exception& e) {
        Q_EMIT problem(QString::fromStdString(e.what()));
    }
}

bool HistoryPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == view_->viewport() && event->type() == QEvent::Resize && fitName_) {
        view_->resizeColumnsToContents();
        fitName_();
    }
    return QWidget::eventFilter(watched, event);
}

void HistoryPanel::confirmAndRemove() {
    const std::vector<std::int64_t> ids = selectedIds();
    if (ids.empty()) return;
    auto* box = new QMessageBox(QMessageBox::Question, tr("Delete runs"),
                                tr("Delete %n run(s) from the history? This cannot be undone.", nullptr,
                                   static_cast<int>(ids.size())),
                                QMessageBox::Yes | QMessageBox::No, this);
    box->setObjectName(QStringLiteral("deleteRunsBox"));
    box->setDefaultButton(QMessageBox::No);  // Enter keeps the runs: deleting cannot be undone
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::buttonClicked, this, [this, box, ids](QAbstractButton* clicked) {
        if (box->standardButton(clicked) == QMessageBox::Yes) remove(ids);
    });
    box->open();
}

}  // namespace tewb::ui
