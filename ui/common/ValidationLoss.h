#pragma once

#include <optional>

#include "core/results/RunRecord.h"

namespace tewb::ui {

// A run's held-out loss at one step (runs on a token file evaluate it every few steps and at the last).
struct ValLossPoint {
    int step = 0;
    double loss = 0;
};

// The last evaluation of the held-out loss; none for runs on synthetic tokens (and runs that have not evaluated yet).
std::optional<ValLossPoint> final_val_loss(const RunRecord& record);
bool has_val_loss(const RunRecord& record);

}  // namespace tewb::ui
