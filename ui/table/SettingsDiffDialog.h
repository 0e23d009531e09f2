#pragma once

#include <QDialog>

#include "core/results/RunRecord.h"

class QTableWidget;

namespace tewb::ui {

// The settings two runs were given differently (core's config_differences), one row each: the setting and both
// runs' values; "The two runs were given the same settings." when there are none.
class SettingsDiffDialog : public QDialog {
    Q_OBJECT

public:
    SettingsDiffDialog(const RunRecord& a, const RunRecord& b, QWidget* parent = nullptr);
    QTableWidget* table() const { return table_; }

private:
    QTableWidget* table_;
};

}  // namespace tewb::ui
