#include "ui/window/MainWindow.h"

#include <QAction>
#include <QApplication>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QStatusBar>
#include <QThread>

#include "core/common/BuildInfo.h"
#include "core/device/Capability.h"
#include "ui/capability/CapabilityPanel.h"

namespace tewb::ui {

MainWindow::MainWindow(std::function<DeviceInfo()> detect, QWidget* parent)
    : QMainWindow(parent), detect_(std::move(detect)), capabilityPanel_(new CapabilityPanel(this)) {
    setWindowTitle(tr("TE Workbench"));
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setWidget(capabilityPanel_);
    setCentralWidget(scroll);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About TE Workbench"), this, [this] {
        const BuildInfo& build = build_info();
        QMessageBox::about(this, tr("About TE Workbench"),
                           tr("TE Workbench %1 (%2)\nMeasures what fused kernels and FP8 training buy on your GPU.")
                               .arg(QString::fromStdString(build.version), QString::fromStdString(build.commit)));
    });
    resize(720, 560);
    startDetection();
}

void MainWindow::startDetection() {
    capabilityPanel_->showDetecting();
    statusBar()->showMessage(tr("Detecting the GPU…"));
    QThread* worker = QThread::create([this, detect = detect_] {
        const DeviceInfo device = detect();
        QMetaObject::invokeMethod(
            this,
            [this, device] {
                const Capability capability = classify(device);
                capabilityPanel_->showDevice(device, capability);
                statusBar()->showMessage(tr("Mode: %1").arg(QString::fromUtf8(to_string(capability.mode).data())));
                Q_EMIT deviceDetected();
            },
            Qt::QueuedConnection);
    });
    connect(worker, &QThread::finished, worker, &QObject::deleteLater);
    // A child of the window: QThread::create's thread waits for its function when destroyed, so closing
    // the window during detection joins it rather than leaving it to post to a deleted window.
    worker->setParent(this);
    worker->start();
}

}  // namespace tewb::ui
