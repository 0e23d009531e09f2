#include "ui/common/RunTable.h"

#include <QAbstractItemModel>
#include <QHeaderView>
#include <QTableView>

namespace tewb::ui {

void setup_run_table(QTableView* view, QAbstractItemModel* model) {
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->verticalHeader()->hide();
    view->setWordWrap(false);
    view->setAlternatingRowColors(true);
    const auto fit = [view] { view->resizeColumnsToContents(); };
    QObject::connect(model, &QAbstractItemModel::rowsInserted, view, fit);
    QObject::connect(model, &QAbstractItemModel::rowsRemoved, view, fit);
    QObject::connect(model, &QAbstractItemModel::modelReset, view, fit);
}

}  // namespace tewb::ui
