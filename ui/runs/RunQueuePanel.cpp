#include "ui/runs/RunQueuePanel.h"

#include <QEvent>

#include <algorithm>

#include <QApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPainter>
#include <QPushButton>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/common/RunTable.h"
#include "ui/runs/RunController.h"

namespace tewb::ui {

namespace {

// Draws the Progress column as a progress bar with "n of N" on it.
class ProgressDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QStyleOptionProgressBar bar;
        bar.rect = option.rect.adjusted(2, 2, -2, -2);
        bar.minimum = 0;
        bar.maximum = 1000;
        bar.progress = static_cast<int>(index.data(RunQueueModel::ProgressRole).toDouble() * 1000);
        bar.text = index.data(Qt::DisplayRole).toString();
        bar.textVisible = true;
        bar.state = option.state | QStyle::State_Horizontal;
        const QWidget* widget = option.widget;
        QStyle* style = widget ? widget->style() : QApplication::style();
        style->drawControl(QStyle::CE_ProgressBar, &bar, painter, widget);
    }
};

}  // namespace

RunQueuePanel::RunQueuePanel(RunController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    start_ = new QPushButton(tr("Start"), this);
    start_->setObjectName(QStringLiteral("start"));
    start_->setToolTip(tr("Run the queue, one configuration after another (F5)"));
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setObjectName(QStringLiteral("cancel"));
    cancel_->setToolTip(tr("Stop the running run within one step; the queue waits (Shift+F5)"));
    clearDone_ = new QPushButton(tr("Clear finished"), this);
    clearDone_->setToolTip(tr("Remove finished, cancelled, failed and skipped rows from the queue"));
    clearQueued_ = new QPushButton(tr("Clear queued"), this);
    clearQueued_->setToolTip(tr("Remove the rows still waiting"));
    row->addWidget(start_);
    row->addWidget(cancel_);
    row->addStretch();
    row->addWidget(clearDone_);
    row->addWidget(clearQueued_);
    layout->addLayout(row);

    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("queueTable"));
    setup_run_table(view_, controller_->queue());
    view_->setItemDelegateForColumn(RunQueueModel::Progress, new ProgressDelegate(view_));
    view_->horizontalHeader()->setStretchLastSection(true);
    // Progress bars need room for "n of N"; states change as runs start and end. The queue sits in a
    // narrow pane: the name is capped and the setup text (long, and in the tooltip) gets what is left, so
    // every column shows without a horizontal scroll bar.
    // Elided in the middle: a name's end ("… (emulated FP8)", "#2") says as much as its start.
    view_->setTextElideMode(Qt::ElideMiddle);
    const auto fitProgress = [view = view_] {
        view->resizeColumnsToContents();
        view->setColumnWidth(RunQueueModel::Progress, std::max(view->columnWidth(RunQueueModel::Progress), 90));
        view->setColumnWidth(RunQueueModel::Name, std::min(view->columnWidth(RunQueueModel::Name), 190));
        int others = 0;
        for (int c = 0; c < RunQueueModel::Setup; ++c) others += view->columnWidth(c);
        // A narrow pane: the name gives up width (elided, full in its tooltip) before the table scrolls sideways.
        const int over = others - view->viewport()->width();
        if (over > 0) {
            const int name = std::max(80, view->columnWidth(RunQueueModel::Name) - over);
            others -= view->columnWidth(RunQueueModel::Name) - name;
            view->setColumnWidth(RunQueueModel::Name, name);
        }
        // Too narrow for a useful setup column: hide it rather than show a cut stub (the run's tooltip
        // carries the setup).
        const int left = view->viewport()->width() - others;
        view->setColumnHidden(RunQueueModel::Setup, left < 90);
        if (left >= 90) view->setColumnWidth(RunQueueModel::Setup, left);
    };
    // Rows going (Clear queued, Clear finished) fit the columns again as rows coming do, so they do not jump later.
    connect(controller_->queue(), &QAbstractItemModel::rowsInserted, view_, fitProgress);
    connect(controller_->queue(), &QAbstractItemModel::rowsRemoved, view_, fitProgress);
    connect(controller_, &RunController::runningChanged, view_, fitProgress);
    // A row just queued is scrolled into view.
    connect(controller_->queue(), &QAbstractItemModel::rowsInserted, view_, [view = view_](const QModelIndex&, int, int last) {
        view->scrollTo(view->model()->index(last, RunQueueModel::Name));
    });
    view_->viewport()->installEventFilter(this);
    fitColumns_ = fitProgress;
    layout->addWidget(view_);

    connect(start_, &QPushButton::clicked, controller_, &RunController::start);
    connect(cancel_, &QPushButton::clicked, controller_, &RunController::cancel);
    connect(clearDone_, &QPushButton::clicked, controller_->queue(), &RunQueueModel::removeDone);
    connect(clearQueued_, &QPushButton::clicked, controller_->queue(), &RunQueueModel::removeQueued);
    for (const auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved}) {
        connect(controller_->queue(), signal, this, &RunQueuePanel::updateButtons);
    }
    connect(controller_->queue(), &QAbstractItemModel::dataChanged, this, &RunQueuePanel::updateButtons);
    connect(controller_, &RunController::runningChanged, this, &RunQueuePanel::updateButtons);
    updateButtons();
}

void RunQueuePanel::updateButtons() {
    const bool running = controller_->isRunning();
    start_->setEnabled(!running && controller_->queue()->hasQueued() && controller_->hasDevice());
    cancel_->setEnabled(running);
}

bool RunQueuePanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == view_->viewport() && event->type() == QEvent::Resize && fitColumns_) fitColumns_();
    return QWidget::eventFilter(watched, event);
}

}  // namespace tewb::ui
