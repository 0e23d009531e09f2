#include "ui/charts/Fp8Panel.h"

#include <algorithm>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/runs/RunCollection.h"

namespace tewb::ui {

Fp8Panel::Fp8Panel(RunCollection* runs, QWidget* parent)
    : ChartsPanel(runs, {fp8_metric({}, Fp8Quantity::Amax), fp8_metric({}, Fp8Quantity::Scale)}, 1, parent) {
    setLegendOnlyRunsWithData(true);  // BF16 and torch runs have no FP8 line to name
    auto* row = new QWidget(this);
    auto* rowLayout = new QHBoxLayout(row);
    rowLayout->setContentsMargins(0, 0, 0, 0);
    rowLayout->addWidget(new QLabel(tr("FP8 slot:"), row));
    slotBox_ = new QComboBox(row);
    slotBox_->setObjectName(QStringLiteral("fp8Slot"));
    slotBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    rowLayout->addWidget(slotBox_);
    rowLayout->addStretch();
    empty_ = new QLabel(tr("No FP8 statistics yet. Run the te backend with FP8 precision (or open an FP8 record) to see "
                           "each cast's amax and scale, step by step."),
                        this);
    empty_->setObjectName(QStringLiteral("fp8Empty"));
    empty_->setWordWrap(true);
    auto* box = static_cast<QVBoxLayout*>(layout());
    box->insertWidget(0, empty_);
    box->insertWidget(1, row);
    controls()->setLogY(true);

    connect(slotBox_, &QComboBox::currentIndexChanged, this, &Fp8Panel::applySlot);
    // A run's slots are known when it is added (the trainer's header lists them); steps do not change them.
    connect(runs, &RunCollection::runAdded, this, &Fp8Panel::updateSlots);
    connect(runs, &RunCollection::runRemoved, this, &Fp8Panel::updateSlots);
    updateSlots();
}

void Fp8Panel::updateSlots() {
    std::vector<Fp8SlotKey> found;
    for (const RunCollection::Entry& e : runs()->entries()) {
        for (const Fp8SlotInfo& info : e.record.fp8_slots) {
            const Fp8SlotKey key{info.module, info.role};
            if (std::find(found.begin(), found.end(), key) == found.end()) found.push_back(key);
        }
    }
    empty_->setVisible(found.empty());
    if (found == slots_) return;
    const int previous = slotBox_->currentIndex();
    const std::optional<Fp8SlotKey> selected =
        previous >= 0 && previous < static_cast<int>(slots_.size()) ? std::optional(slots_[previous]) : std::nullopt;
    slots_ = std::move(found);
    {
        const QSignalBlocker block(slotBox_);
        slotBox_->clear();
        for (const Fp8SlotKey& key : slots_) {
            slotBox_->addItem(QStringLiteral("%1 · %2").arg(QString::fromStdString(key.module),
                                                            QString::fromUtf8(to_string(key.role).data())));
        }
        const auto it = selected ? std::find(slots_.begin(), slots_.end(), *selected) : slots_.end();
        slotBox_->setCurrentIndex(it == slots_.end() ? (slots_.empty() ? -1 : 0) : static_cast<int>(it - slots_.begin()));
    }
    applySlot();
}

void Fp8Panel::selectSlot(int index) {
    slotBox_->setCurrentIndex(index);
}

void Fp8Panel::applySlot() {
    const int index = slotBox_->currentIndex();
    const Fp8SlotKey key = index >= 0 && index < static_cast<int>(slots_.size()) ? slots_[index] : Fp8SlotKey{};
    setSpecs({fp8_metric(key, Fp8Quantity::Amax), fp8_metric(key, Fp8Quantity::Scale)});
}

}  // namespace tewb::ui
