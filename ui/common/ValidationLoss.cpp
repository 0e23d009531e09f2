#include "ui/common/ValidationLoss.h"

#include <algorithm>

namespace tewb::ui {

std::optional<ValLossPoint> final_val_loss(const RunRecord& record) {
    for (auto it = record.steps.rbegin(); it != record.steps.rend(); ++it) {
        if (it->val_loss) return ValLossPoint{it->step, *it->val_loss};
    }
    return std::nullopt;
}

bool has_val_loss(const RunRecord& record) {
    return std::any_of(record.steps.begin(), record.steps.end(), [](const StepMetrics& s) { return s.val_loss.has_value(); });
}

}  // namespace tewb::ui
