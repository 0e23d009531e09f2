#pragma once

#include <vector>

#include "ui/charts/ChartsPanel.h"

class QComboBox;
class QLabel;

namespace tewb::ui {

// The FP8 view: for one cast slot (module and role) picked from the runs' FP8 statistics, its amax and
// the scale its cast used, step by step, for every FP8 run. Log y by default: both span decades.
class Fp8Panel : public ChartsPanel {
    Q_OBJECT

public:
    explicit Fp8Panel(RunCollection* runs, QWidget* parent = nullptr);

    const std::vector<Fp8SlotKey>& slots() const { return slots_; }
    void selectSlot(int index);
    bool hasStatistics() const { return !slots_.empty(); }

private:
    void updateSlots();
    void applySlot();

    QComboBox* slotBox_;
    QLabel* empty_;
    std::vector<Fp8SlotKey> slots_;
};

}  // namespace tewb::ui
