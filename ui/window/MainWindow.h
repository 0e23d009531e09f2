#pragma once

#include <functional>

#include <QMainWindow>

#include "core/device/DeviceInfo.h"

namespace tewb::ui {

class CapabilityPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    // `detect` runs on a worker thread (it may initialise the CUDA driver); tests pass a fake.
    explicit MainWindow(std::function<DeviceInfo()> detect, QWidget* parent = nullptr);

    CapabilityPanel* capabilityPanel() const { return capabilityPanel_; }

Q_SIGNALS:
    void deviceDetected();

private:
    void startDetection();

    std::function<DeviceInfo()> detect_;
    CapabilityPanel* capabilityPanel_;
};

}  // namespace tewb::ui
