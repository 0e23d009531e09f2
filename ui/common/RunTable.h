#pragma once

class QAbstractItemModel;
class QTableView;

namespace tewb::ui {

// Shows `model` as a read-only table of runs: whole-row selection, no row numbers, no wrapping, columns
// sized to their contents when rows come and go. Not on every data change: measuring every cell for each
// training step stalls the window.
void setup_run_table(QTableView* view, QAbstractItemModel* model);

}  // namespace tewb::ui
