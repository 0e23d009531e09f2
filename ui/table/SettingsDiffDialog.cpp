#include "ui/table/SettingsDiffDialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/results/ConfigDiff.h"

namespace tewb::ui {

SettingsDiffDialog::SettingsDiffDialog(const RunRecord& a, const RunRecord& b, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("settingsDiff"));
    const QString nameA = QString::fromStdString(display_name(a));
    const QString nameB = QString::fromStdString(display_name(b));
    setWindowTitle(tr("Settings of %1 and %2").arg(nameA, nameB));
    auto* layout = new QVBoxLayout(this);
    const std::vector<SettingDifference> differences = config_differences(a.config, b.config);
    auto* summary = new QLabel(differences.empty() ? tr("The two runs were given the same settings.")
                                                   : tr("%n setting(s) differ:", nullptr, static_cast<int>(differences.size())),
                               this);
    summary->setObjectName(QStringLiteral("diffSummary"));
    layout->addWidget(summary);
    table_ = new QTableWidget(static_cast<int>(differences.size()), 3, this);
    table_->setHorizontalHeaderLabels({tr("Setting"), nameA, nameB});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    for (std::size_t i = 0; i < differences.size(); ++i) {
        const int row = static_cast<int>(i);
        table_->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(differences[i].setting)));
        table_->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(differences[i].a)));
        table_->setItem(row, 2, new QTableWidgetItem(QString::fromStdString(differences[i].b)));
    }
    table_->resizeColumnsToContents();
    table_->setVisible(!differences.empty());
    layout->addWidget(table_, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(640, 360);
}

}  // namespace tewb::ui
