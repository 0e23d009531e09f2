#pragma once

#include <memory>

#include <QSignalSpy>

#include "UiTestSupport.h"
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

}  // namespace tewb::test
