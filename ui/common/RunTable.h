#pragma once

#include <QString>

class QAbstractItemModel;
class QTableView;

namespace tewb::ui {

// Shows `model` as a read-only table of runs: whole-row selection, no row numbers, no wrapping, columns
// sized to their contents when rows come and go. Not on every data change: measuring every cell for each
// training step stalls the window. Ctrl+C copies the table (table_text) for a spreadsheet or a message.
void setup_run_table(QTableView* view, QAbstractItemModel* model);

// The table as it is shown, tab-separated: the header, then the selected rows (every row when none is selected),
// the columns shown in their order on screen, each cell's text with tabs and line breaks made spaces.
QString table_text(const QTableView* view);

}  // namespace tewb::ui
