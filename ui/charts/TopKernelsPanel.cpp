#include "ui/charts/TopKernelsPanel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/common/RememberedFolder.h"
#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/KernelProfile.h"

namespace tewb::ui {

namespace {

enum Column { Name, Launches, TotalUs, MeanUs, Share, ColumnCount };

// A number cell that sorts by its value and shows it with `decimals`.
QStandardItem* number_item(double value, int decimals, const QString& suffix = QString()) {
    auto* item = new QStandardItem(QString::number(value, 'f', decimals) + suffix);
    item->setData(value, Qt::UserRole);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

TopKernelsPanel::TopKernelsPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("topKernels"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Top kernels of:"), this));
    run_ = new QComboBox(this);
    run_->setObjectName(QStringLiteral("topKernelsRun"));
    run_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    run_->setMinimumContentsLength(16);
    row->addWidget(run_, 1);
    export_ = new QPushButton(tr("Export CSV…"), this);
    export_->setObjectName(QStringLiteral("topKernelsExport"));
    row->addWidget(export_);
    layout->addLayout(row);
    caption_ = new QLabel(this);
    caption_->setObjectName(QStringLiteral("topKernelsCaption"));
    caption_->setWordWrap(true);
    caption_->setTextFormat(Qt::PlainText);
    layout->addWidget(caption_);

    model_ = new QStandardItemModel(0, ColumnCount, this);
    model_->setHorizontalHeaderLabels({tr("Kernel"), tr("Launches"), tr("Total µs"), tr("Mean µs"), tr("Share")});
    sorted_ = new QSortFilterProxyModel(this);
    sorted_->setSourceModel(model_);
    sorted_->setSortRole(Qt::UserRole);
    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("topKernelsTable"));
    view_->setModel(sorted_);
    view_->setSortingEnabled(true);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setSectionResizeMode(Name, QHeaderView::Stretch);
    view_->horizontalHeader()->setStretchLastSection(false);
    view_->sortByColumn(TotalUs, Qt::DescendingOrder);
    layout->addWidget(view_, 1);

    connect(run_, &QComboBox::currentIndexChanged, this, [this] { showChosen(); });
    connect(export_, &QPushButton::clicked, this, [this] {
        const QString suggested = QStringLiteral("top-kernels.csv");
        const QString path = choose_save_file(this, tr("Export top kernels"), suggested, tr("CSV files (*.csv)"));
        QString error;
        if (path.isEmpty()) return;
        if (exportCsv(path, &error)) {
            caption_->setText(caption_->text() + tr("\nWritten: %1").arg(path));
        } else {
            QMessageBox::warning(this, tr("Export failed"), error);
        }
    });
    setRecords({});
}

void TopKernelsPanel::setRecords(const std::vector<RunRecord>& records) {
    const QString chosen_id = run_->currentData().toString();
    profiled_.clear();
    for (const RunRecord& r : records) {
        if (r.execution.kernel_profile) profiled_.push_back(r);
    }
    const QSignalBlocker block(run_);
    run_->clear();
    int keep = 0;
    for (std::size_t i = 0; i < profiled_.size(); ++i) {
        const QString id = QString::fromStdString(profiled_[i].id);
        run_->addItem(QString::fromStdString(display_name(profiled_[i])), id);
        if (id == chosen_id) keep = static_cast<int>(i);
    }
    run_->setCurrentIndex(profiled_.empty() ? -1 : keep);
    run_->setEnabled(!profiled_.empty());
    export_->setEnabled(!profiled_.empty());
    showChosen();
}

void TopKernelsPanel::showChosen() {
    model_->removeRows(0, model_->rowCount());
    const int index = run_->currentIndex();
    if (index < 0 || index >= static_cast<int>(profiled_.size())) {
        caption_->setText(tr("No run has a kernel trace: `te-bench run --profile trace.json` records one (open the run "
                             "from the history)."));
        return;
    }
    const KernelProfile& p = *profiled_[static_cast<std::size_t>(index)].execution.kernel_profile;
    const double total = p.total_us();
    caption_->setText(tr("Step %1, not a timed step: %2 ms; %3. The table covers %4% of the step. Trace: %5")
                          .arg(p.step)
                          .arg(QString::number(p.step_ms, 'f', 3), QString::fromStdString(p.source))
                          .arg(QString::number(p.step_ms > 0 ? total / (p.step_ms * 10.0) : 0.0, 'f', 1),
                               QString::fromStdString(p.trace_path)));
    for (const KernelTime& k : p.kernels) {
        auto* name = new QStandardItem(QString::fromStdString(k.name));
        name->setData(QString::fromStdString(k.name), Qt::UserRole);
        name->setToolTip(QString::fromStdString(k.name));
        model_->appendRow({name, number_item(static_cast<double>(k.launches), 0), number_item(k.total_us, 1),
                           number_item(k.mean_us(), 1), number_item(p.share_of_step(k) * 100.0, 1, QStringLiteral("%"))});
    }
}

bool TopKernelsPanel::exportCsv(const QString& path, QString* error) const {
    const int index = run_->currentIndex();
    if (index < 0 || index >= static_cast<int>(profiled_.size())) {
        if (error) *error = tr("No run with a kernel trace is chosen");
        return false;
    }
    try {
        write_file_atomically(path.toStdString(),
                              kernel_profile_csv_text(*profiled_[static_cast<std::size_t>(index)].execution.kernel_profile));
        return true;
    } catch (const Error& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

}  // namespace tewb::ui
