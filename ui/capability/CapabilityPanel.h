#pragma once

#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <QWidget>

#include "core/device/Capability.h"
#include "core/device/DeviceInfo.h"

namespace tewb::ui {

// What core's detection found: the three badges (TE capable, FP8 capable, Fallback) with their one-line
// reasons, then the GPU, driver, CUDA, cuBLASLt, LibTorch and CPU facts.
class CapabilityPanel : public QWidget {
    Q_OBJECT

public:
    explicit CapabilityPanel(QWidget* parent = nullptr);

    void showDetecting();
    void showDevice(const DeviceInfo& device, const Capability& capability);
    QPushButton* selfTestButton() const { return selfTest_; }

Q_SIGNALS:
    // The user asked to check the fused kernels against their references on this GPU.
    void selfTestRequested();

private:
    QLabel* addBadge(const QString& objectName);
    QLabel* addFact(const QString& label, const QString& objectName);

    QLabel* teBadge_;
    QLabel* fp8Badge_;
    QLabel* fallbackBadge_;
    QLabel* summary_;
    QLabel* gpu_;
    QLabel* computeCapability_;
    QLabel* smCount_;
    QLabel* memory_;
    QLabel* driver_;
    QLabel* cudaRuntime_;
    QLabel* cublasLt_;
    QLabel* libtorch_;
    QLabel* cpu_;
    QLabel* microscaling_ = nullptr;
    QPushButton* selfTest_;
    QFormLayout* facts_;
    QVBoxLayout* badges_;
};

}  // namespace tewb::ui
