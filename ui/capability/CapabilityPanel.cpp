#include "ui/capability/CapabilityPanel.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QVBoxLayout>

#include "core/common/TextTable.h"

namespace tewb::ui {

namespace {

QString orDash(const std::string& text) {
    return text.empty() ? QStringLiteral("–") : QString::fromStdString(text);
}

// Active badges are filled, inactive ones outlined, so the state reads without colour too.
void setBadge(QLabel* badge, bool active, const QString& colour, const std::string& reason) {
    badge->setText(QString::fromStdString(reason));
    badge->setProperty("active", active);
    badge->setStyleSheet(
        active ? QStringLiteral("QLabel { background: %1; color: white; border-radius: 6px; padding: 6px; font-weight: bold; }")
                     .arg(colour)
               : QStringLiteral(
                     "QLabel { border: 1px solid palette(mid); border-radius: 6px; padding: 6px; color: palette(mid); }"));
}

}  // namespace

CapabilityPanel::CapabilityPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("summary"));
    summary_->setWordWrap(true);
    QFont big = summary_->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    summary_->setFont(big);
    layout->addWidget(summary_);

    auto* badgeBox = new QGroupBox(tr("Capabilities"), this);
    badges_ = new QVBoxLayout(badgeBox);
    teBadge_ = addBadge(QStringLiteral("teBadge"));
    fp8Badge_ = addBadge(QStringLiteral("fp8Badge"));
    fallbackBadge_ = addBadge(QStringLiteral("fallbackBadge"));
    layout->addWidget(badgeBox);

    auto* factBox = new QGroupBox(tr("This machine"), this);
    facts_ = new QFormLayout(factBox);
    gpu_ = addFact(tr("GPU"), QStringLiteral("gpu"));
    computeCapability_ = addFact(tr("Compute capability"), QStringLiteral("computeCapability"));
    smCount_ = addFact(tr("SMs"), QStringLiteral("smCount"));
    memory_ = addFact(tr("Memory"), QStringLiteral("memory"));
    driver_ = addFact(tr("Driver"), QStringLiteral("driver"));
    cudaRuntime_ = addFact(tr("CUDA runtime"), QStringLiteral("cudaRuntime"));
    cublasLt_ = addFact(tr("cuBLASLt"), QStringLiteral("cublasLt"));
    libtorch_ = addFact(tr("LibTorch"), QStringLiteral("libtorch"));
    cpu_ = addFact(tr("CPU"), QStringLiteral("cpu"));
    microscaling_ = addFact(tr("MXFP8, NVFP4"), QStringLiteral("microscaling"));
    layout->addWidget(factBox);
    selfTest_ = new QPushButton(tr("Run self-test"), this);
    selfTest_->setObjectName(QStringLiteral("selfTest"));
    connect(selfTest_, &QPushButton::clicked, this, &CapabilityPanel::selfTestRequested);
    layout->addWidget(selfTest_, 0, Qt::AlignLeft);
    layout->addStretch();
    showDetecting();
}

QLabel* CapabilityPanel::addBadge(const QString& objectName) {
    auto* badge = new QLabel(this);
    badge->setObjectName(objectName);
    badge->setWordWrap(true);
    badge->setTextInteractionFlags(Qt::TextSelectableByMouse);
    badges_->addWidget(badge);
    return badge;
}

QLabel* CapabilityPanel::addFact(const QString& label, const QString& objectName) {
    auto* value = new QLabel(this);
    value->setObjectName(objectName);
    value->setWordWrap(true);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    facts_->addRow(label + QLatin1Char(':'), value);
    return value;
}

void CapabilityPanel::showDetecting() {
    summary_->setText(tr("Detecting the GPU…"));
    selfTest_->setEnabled(false);
    selfTest_->setToolTip(tr("Available once the GPU is detected"));
    for (QLabel* badge : {teBadge_, fp8Badge_, fallbackBadge_}) {
        setBadge(badge, false, {}, "…");
    }
}

void CapabilityPanel::showDevice(const DeviceInfo& d, const Capability& cap) {
    switch (cap.mode) {
        case Mode::Fp8: summary_->setText(tr("FP8 capable: fused kernels and FP8 training can run here.")); break;
        case Mode::Te:
            summary_->setText(tr("TE capable: fused BF16 kernels can run here; FP8 needs compute capability 8.9."));
            break;
        case Mode::Fallback:
            summary_->setText(d.has_gpu()
                                  ? tr("Fallback: this GPU is older than compute capability 8.0, so runs use plain LibTorch.")
                              : cpu_machine(d)
                                  ? QString::fromStdString(no_gpu_words(d) + " " + what_still_works_without_gpu())
                                  : QString::fromStdString(no_gpu_words(d) + " " + what_still_works_without_gpu()) +
                                        tr(" Runs use the CPU fallback (plain LibTorch on the CPU)."));
            break;
    }
    setBadge(teBadge_, cap.te_capable, QStringLiteral("#2e7d32"), cap.te_reason);
    setBadge(fp8Badge_, cap.fp8_capable, QStringLiteral("#1565c0"), cap.fp8_reason);
    // An ordinary CPU machine gets a neutral badge; orange is for a GPU machine that falls back.
    setBadge(
        fallbackBadge_, cap.mode == Mode::Fallback, cpu_machine(d) ? QStringLiteral("#616161") : QStringLiteral("#ef6c00"),
        cap.fallback_reason.empty() ? std::string("Fallback: not needed, the GPU runs the fused path") : cap.fallback_reason);

    gpu_->setText(d.has_gpu()      ? QString::fromStdString(d.gpu_name) +
                                    (d.gpu_count > 1 ? tr(" (device 0 of %1)").arg(d.gpu_count) : QString())
                  : cpu_machine(d) ? tr("none (no NVIDIA driver on this machine)")
                                   : tr("none usable (%1): %2")
                                         .arg(QString::fromStdString(no_gpu_words(d)).chopped(1), QString::fromStdString(d.gpu_error)));
    computeCapability_->setText(d.compute_capability ? QString::fromStdString(d.compute_capability->to_string())
                                                     : QStringLiteral("–"));
    smCount_->setText(d.has_gpu() ? QString::number(d.sm_count) : QStringLiteral("–"));
    memory_->setText(d.has_gpu() ? tr("%1 total, %2 free")
                                       .arg(QString::fromStdString(format_bytes(d.memory_total_bytes)),
                                            QString::fromStdString(format_bytes(d.memory_free_bytes)))
                                 : QStringLiteral("–"));
    driver_->setText(orDash(d.driver_version));
    cudaRuntime_->setText(orDash(d.cuda_runtime_version));
    cublasLt_->setText(orDash(d.cublaslt_version));
    libtorch_->setText(orDash(d.libtorch_version));
    cpu_->setText(tr("%1 (%2 threads)").arg(QString::fromStdString(d.cpu_model)).arg(d.cpu_threads));
    microscaling_->setText(QString::fromStdString(cap.microscaling_reason));
    microscaling_->setWordWrap(true);
    selfTest_->setEnabled(cap.te_capable);
    selfTest_->setToolTip(cap.te_capable ? tr("Check every fused kernel against its reference on this GPU (te-bench selftest)")
                                         : tr("The fused kernels need a GPU of compute capability 8.0 or newer: %1")
                                               .arg(QString::fromStdString(cap.te_reason)));
}

}  // namespace tewb::ui
