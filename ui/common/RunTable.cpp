#include "ui/common/RunTable.h"

#include <algorithm>
#include <vector>

#include <QAbstractItemModel>
#include <QAction>
#include <QClipboard>
#include <QGuiApplication>
#include <QHeaderView>
#include <QItemSelectionModel>
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
    auto* copy = new QAction(QObject::tr("Copy table"), view);
    copy->setObjectName(QStringLiteral("copyTable"));
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    QObject::connect(copy, &QAction::triggered, view, [view] { QGuiApplication::clipboard()->setText(table_text(view)); });
    view->addAction(copy);
}

namespace {
QString cell_text(const QVariant& value) {
    QString text = value.toString();
    for (QChar& c : text) {
        if (c == QLatin1Char('\t') || c == QLatin1Char('\n') || c == QLatin1Char('\r')) c = QLatin1Char(' ');
    }
    return text;
}
}  // namespace

QString table_text(const QTableView* view) {
    const QAbstractItemModel* model = view->model();
    const QHeaderView* header = view->horizontalHeader();
    std::vector<int> columns;
    for (int visual = 0; visual < header->count(); ++visual) {
        const int column = header->logicalIndex(visual);
        if (!view->isColumnHidden(column)) columns.push_back(column);
    }
    std::vector<int> rows;
    if (const QItemSelectionModel* selection = view->selectionModel()) {
        for (const QModelIndex& index : selection->selectedRows()) rows.push_back(index.row());
    }
    std::sort(rows.begin(), rows.end());
    if (rows.empty()) {
        for (int row = 0; row < model->rowCount(); ++row) rows.push_back(row);
    }
    QStringList lines;
    QStringList cells;
    for (const int column : columns) cells << cell_text(model->headerData(column, Qt::Horizontal));
    lines << cells.join(QLatin1Char('\t'));
    for (const int row : rows) {
        cells.clear();
        for (const int column : columns) cells << cell_text(model->index(row, column).data());
        lines << cells.join(QLatin1Char('\t'));
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace tewb::ui
