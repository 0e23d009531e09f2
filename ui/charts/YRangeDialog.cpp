#include "ui/charts/YRangeDialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace tewb::ui {

YRangeDialog::YRangeDialog(const QString& chart, YRange current, bool logY, QWidget* parent)
    : QDialog(parent), logY_(logY) {
    setWindowTitle(tr("Y range of %1").arg(chart));
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    low_ = new QLineEdit(QString::number(current.lo, 'g', 6), this);
    low_->setObjectName(QStringLiteral("lowestY"));
    high_ = new QLineEdit(QString::number(current.hi, 'g', 6), this);
    high_->setObjectName(QStringLiteral("highestY"));
    form->addRow(tr("Lowest y:"), low_);
    form->addRow(tr("Highest y:"), high_);
    layout->addLayout(form);
    problem_ = new QLabel(this);
    problem_->setObjectName(QStringLiteral("problem"));
    problem_->setWordWrap(true);
    problem_->setStyleSheet(QStringLiteral("color: #c62828"));
    layout->addWidget(problem_);
    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons_);
    connect(low_, &QLineEdit::textChanged, this, &YRangeDialog::check);
    connect(high_, &QLineEdit::textChanged, this, &YRangeDialog::check);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
        const YRangeInput input = parse_y_range(low_->text(), high_->text(), logY_);
        if (!input.range) return;
        Q_EMIT rangeChosen(*input.range);
        accept();
    });
    check();
}

bool YRangeDialog::acceptable() const {
    return buttons_->button(QDialogButtonBox::Ok)->isEnabled();
}

void YRangeDialog::check() {
    const YRangeInput input = parse_y_range(low_->text(), high_->text(), logY_);
    problem_->setText(input.error);
    problem_->setVisible(!input.error.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(input.range.has_value());
}

}  // namespace tewb::ui
