#pragma once

#include <memory>

#include <QSignalSpy>
#include <QSpinBox>

#include "UiTestSupport.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/window/MainWindow.h"

namespace tewb::test {

// The workbench on a machine without a GPU, shown, with its device known; `train` replaces core's
// trainer (empty: the real one).
inline std::unique_ptr<ui::MainWindow> make_window(ui::RunWorker::TrainFunction train = {}) {
    auto window = std::make_unique<ui::MainWindow>([] { return no_gpu(); }, nullptr, std::move(train));
    QSignalSpy detected(window.get(), &ui::MainWindow::deviceDetected);
    window->show();
    if (!window->device()) detected.wait(10'000);
    return window;
}

// A sweep of one-layer models over `hidden` (1 warm-up and 2 timed steps) from the window's Sweep tab, with
// the run setup's current base; true once it finished with a result.
inline bool run_tiny_sweep(ui::MainWindow& window, const QString& hidden, int timeout_ms) {
    if (auto* layers = qobject_cast<QSpinBox*>(window.setupPanel()->field("layers"))) layers->setValue(1);
    ui::SweepPanel* sweep = window.sweep();
    sweep->hiddenField()->setText(hidden);
    sweep->warmupField()->setValue(1);
    sweep->itersField()->setValue(2);
    QSignalSpy finished(sweep, &ui::SweepPanel::finished);
    sweep->runButton()->click();
    return finished.wait(timeout_ms) && sweep->result().has_value();
}

}  // namespace tewb::test
