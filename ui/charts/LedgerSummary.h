#pragma once

#include <vector>

#include <QLabel>

#include "core/results/RunRecord.h"

namespace tewb::ui {

// Beside the time breakdown: each run's launch ledger in totals (launches per step and per layer, bytes moved and
// saved for backward per layer); the tooltip holds each run's first-layer rows (op, launches, bytes read and written
// per module). A run without a ledger (still before its measured step, or an older record) says so.
class LedgerSummary : public QLabel {
    Q_OBJECT

public:
    explicit LedgerSummary(QWidget* parent = nullptr);

    void setRecords(const std::vector<RunRecord>& records);
};

}  // namespace tewb::ui
