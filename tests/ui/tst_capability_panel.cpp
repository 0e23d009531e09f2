#include <QtTest>

#include <QLabel>
#include <QStatusBar>

#include "ui/capability/CapabilityPanel.h"
#include "ui/window/MainWindow.h"

using namespace tewb;

namespace {

DeviceInfo fake_device(std::optional<ComputeCapability> cc, const std::string& name) {
    DeviceInfo d;
    d.gpu_name = name;
    d.compute_capability = cc;
    d.gpu_count = cc ? 1 : 0;
    d.sm_count = cc ? 132 : 0;
    d.memory_total_bytes = cc ? 150'000'000'000ULL : 0;
    d.memory_free_bytes = cc ? 100'000'000'000ULL : 0;
    d.gpu_error = cc ? "" : "no CUDA-capable device is detected (cudaErrorNoDevice)";
    d.driver_version = "580.65.06 (CUDA 13.0)";
    d.cuda_runtime_version = "13.0";
    d.cublaslt_version = "13.1.0";
    d.libtorch_version = "2.11.0";
    d.cpu_model = "Test CPU";
    d.cpu_threads = 16;
    return d;
}

QString text(QWidget* root, const char* name) {
    auto* label = root->findChild<QLabel*>(QString::fromLatin1(name));
    return label != nullptr ? label->text() : QStringLiteral("<missing %1>").arg(name);
}

bool active(QWidget* root, const char* name) {
    return root->findChild<QLabel*>(QString::fromLatin1(name))->property("active").toBool();
}

}  // namespace

class TestCapabilityPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hopperShowsAllFacts() {
        ui::CapabilityPanel panel;
        const DeviceInfo d = fake_device(ComputeCapability{9, 0}, "NVIDIA H200");
        panel.showDevice(d, classify(d));
        QCOMPARE(text(&panel, "gpu"), QStringLiteral("NVIDIA H200"));
        QCOMPARE(text(&panel, "computeCapability"), QStringLiteral("9.0"));
        QCOMPARE(text(&panel, "smCount"), QStringLiteral("132"));
        QVERIFY(text(&panel, "memory").contains(QStringLiteral("GiB total")));
        QCOMPARE(text(&panel, "driver"), QStringLiteral("580.65.06 (CUDA 13.0)"));
        QCOMPARE(text(&panel, "cudaRuntime"), QStringLiteral("13.0"));
        QCOMPARE(text(&panel, "cublasLt"), QStringLiteral("13.1.0"));
        QCOMPARE(text(&panel, "libtorch"), QStringLiteral("2.11.0"));
        QVERIFY(text(&panel, "cpu").contains(QStringLiteral("16 threads")));
        QVERIFY(active(&panel, "teBadge"));
        QVERIFY(active(&panel, "fp8Badge"));
        QVERIFY(!active(&panel, "fallbackBadge"));
        QVERIFY(text(&panel, "fp8Badge").contains(QStringLiteral("9.0 >= 8.9")));
        QVERIFY(panel.selfTestButton()->isEnabled());
        QVERIFY(panel.selfTestButton()->toolTip().contains(QStringLiteral("te-bench selftest")));
    }

    void selfTestNeedsAFusedCapableGpu() {
        ui::CapabilityPanel panel;
        QVERIFY(!panel.selfTestButton()->isEnabled());  // while detecting
        const DeviceInfo none = fake_device(std::nullopt, "");
        panel.showDevice(none, classify(none));
        QVERIFY(!panel.selfTestButton()->isEnabled());
        QVERIFY(panel.selfTestButton()->toolTip().contains(QStringLiteral("compute capability 8.0")));
        const DeviceInfo volta = fake_device(ComputeCapability{7, 0}, "Tesla V100");
        panel.showDevice(volta, classify(volta));
        QVERIFY(!panel.selfTestButton()->isEnabled());
        QSignalSpy requested(&panel, &ui::CapabilityPanel::selfTestRequested);
        const DeviceInfo a100 = fake_device(ComputeCapability{8, 0}, "NVIDIA A100-SXM4-80GB");
        panel.showDevice(a100, classify(a100));
        panel.selfTestButton()->click();
        QCOMPARE(requested.count(), 1);
    }

    void ampereIsTeButNotFp8() {
        ui::CapabilityPanel panel;
        const DeviceInfo d = fake_device(ComputeCapability{8, 0}, "NVIDIA A100-SXM4-80GB");
        panel.showDevice(d, classify(d));
        QVERIFY(active(&panel, "teBadge"));
        QVERIFY(!active(&panel, "fp8Badge"));
        QVERIFY(text(&panel, "fp8Badge").contains(QStringLiteral("8.0 < 8.9")));
        QVERIFY(!active(&panel, "fallbackBadge"));
    }

    void noGpuSaysSoPlainly() {
        ui::CapabilityPanel panel;
        const DeviceInfo d = fake_device(std::nullopt, "");
        panel.showDevice(d, classify(d));
        QVERIFY(active(&panel, "fallbackBadge"));
        QVERIFY(!active(&panel, "teBadge"));
        QVERIFY(text(&panel, "summary").contains(QStringLiteral("CPU fallback")));
        QVERIFY(text(&panel, "gpu").contains(QStringLiteral("cudaErrorNoDevice")));
        QCOMPARE(text(&panel, "computeCapability"), QStringLiteral("–"));
        // In a user's words first: whose fault, and what still works; the CUDA error after it.
        const QString summary = text(&panel, "summary");
        QVERIFY2(summary.startsWith(QStringLiteral("The NVIDIA driver (580.65.06 (CUDA 13.0)) found no usable GPU.")),
                 qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("What still works: every run on the CPU")), qPrintable(summary));
        QVERIFY(text(&panel, "gpu").indexOf(QStringLiteral("found no usable GPU")) < text(&panel, "gpu").indexOf(QStringLiteral("cudaErrorNoDevice")));
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("fallbackBadge"))->styleSheet().contains(QStringLiteral("#ef6c00")));
        // An ordinary CPU machine (no NVIDIA driver) in one voice: no fallback, no CUDA error (the runtime says
        // "driver version is insufficient" there), a neutral badge.
        DeviceInfo no_driver = d;
        no_driver.driver_version.clear();
        no_driver.gpu_error = "CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)";
        panel.showDevice(no_driver, classify(no_driver));
        const QString cpu_summary = text(&panel, "summary");
        QVERIFY2(cpu_summary.startsWith(QStringLiteral("This machine has no NVIDIA GPU: runs use the CPU.")), qPrintable(cpu_summary));
        for (const char* name : {"summary", "gpu", "teBadge", "fp8Badge", "fallbackBadge"}) {
            const QString words = text(&panel, name);
            QVERIFY2(!words.contains(QStringLiteral("insufficient")) && !words.contains(QStringLiteral("allback")) &&
                         !words.contains(QStringLiteral("driver was found")),
                     qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(name), words)));
        }
        QCOMPARE(text(&panel, "gpu"), QStringLiteral("none (no NVIDIA driver on this machine)"));
        QVERIFY(text(&panel, "fallbackBadge").startsWith(QStringLiteral("CPU: ")));
        QVERIFY(!panel.findChild<QLabel*>(QStringLiteral("fallbackBadge"))->styleSheet().contains(QStringLiteral("#ef6c00")));
        // The status bar says the same.
        ui::MainWindow window([no_driver] { return no_driver; });
        QSignalSpy detected(&window, &ui::MainWindow::deviceDetected);
        window.show();
        QVERIFY(detected.wait(10000));
        QStringList labels;
        for (const QLabel* label : window.statusBar()->findChildren<QLabel*>()) labels << label->text();
        QVERIFY2(labels.contains(QStringLiteral("CPU · no NVIDIA GPU")), qPrintable(labels.join(QStringLiteral(" | "))));
    }

    void windowDetectsOffTheGuiThread() {
        QThread* gui_thread = QThread::currentThread();
        std::atomic<bool> on_gui_thread{true};
        ui::MainWindow window([&] {
            on_gui_thread = QThread::currentThread() == gui_thread;
            return fake_device(ComputeCapability{8, 9}, "NVIDIA L4");
        });
        QSignalSpy detected(&window, &ui::MainWindow::deviceDetected);
        window.show();
        QVERIFY(detected.wait(10000));
        QVERIFY(!on_gui_thread);
        QCOMPARE(text(window.capabilityPanel(), "gpu"), QStringLiteral("NVIDIA L4"));
        QVERIFY(active(window.capabilityPanel(), "fp8Badge"));
    }

    void closingDuringDetectionWaitsForIt() {
        std::atomic<bool> finished{false};
        auto* window = new ui::MainWindow([&] {
            QThread::msleep(300);
            finished = true;
            return fake_device(std::nullopt, "");
        });
        window->show();
        delete window;  // detection still running: the window must join it, not leave it touching freed memory
        QVERIFY(finished);
    }

    void windowRendersSomething() {
        ui::MainWindow window([] { return fake_device(std::nullopt, ""); });
        QSignalSpy detected(&window, &ui::MainWindow::deviceDetected);
        window.resize(1280, 800);
        window.show();
        QVERIFY(detected.wait(10000));
        QVERIFY2(window.minimumSizeHint().width() <= 1280, "the window fits a 1280-pixel-wide screen");
        const QImage image = window.grab().toImage();
        QCOMPARE(image.size(), QSize(1280, 800));
        QSet<QRgb> colours;
        for (int y = 0; y < image.height(); y += 7)
            for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
        QVERIFY(colours.size() > 4);  // not blank
    }
};

QTEST_MAIN(TestCapabilityPanel)
#include "tst_capability_panel.moc"
