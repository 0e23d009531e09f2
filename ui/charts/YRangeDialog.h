#pragma once

#include <QDialog>

#include "ui/charts/MetricSpec.h"

class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace tewb::ui {

// Asks for one chart's y range: lowest and highest y, checked as typed (parse_y_range), OK only for a valid one.
class YRangeDialog : public QDialog {
    Q_OBJECT

public:
    YRangeDialog(const QString& chart, YRange current, bool logY, QWidget* parent = nullptr);

    QLineEdit* lowField() const { return low_; }
    QLineEdit* highField() const { return high_; }
    QLabel* problem() const { return problem_; }
    bool acceptable() const;

Q_SIGNALS:
    void rangeChosen(const tewb::ui::YRange& range);

private:
    void check();

    QLineEdit* low_;
    QLineEdit* high_;
    QLabel* problem_;
    QDialogButtonBox* buttons_;
    bool logY_;
};

}  // namespace tewb::ui
