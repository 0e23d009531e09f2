#include <QtTest>

#include "core/device/Capability.h"
#include "core/device/PeakThroughput.h"

using namespace tewb;

class TestCapability : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void classification_data() {
        QTest::addColumn<int>("major");
        QTest::addColumn<int>("minor");
        QTest::addColumn<QString>("mode");
        QTest::addColumn<bool>("te");
        QTest::addColumn<bool>("fp8");
        QTest::newRow("T4 7.5") << 7 << 5 << "fallback" << false << false;
        QTest::newRow("V100 7.0") << 7 << 0 << "fallback" << false << false;
        QTest::newRow("A100 8.0") << 8 << 0 << "te" << true << false;
        QTest::newRow("A10 8.6") << 8 << 6 << "te" << true << false;
        QTest::newRow("L4 8.9") << 8 << 9 << "fp8" << true << true;
        QTest::newRow("H100 9.0") << 9 << 0 << "fp8" << true << true;
        QTest::newRow("H200 9.0") << 9 << 0 << "fp8" << true << true;
        QTest::newRow("B200 10.0") << 10 << 0 << "fp8" << true << true;
        QTest::newRow("RTX 5090 12.0") << 12 << 0 << "fp8" << true << true;
    }

    void classification() {
        QFETCH(int, major);
        QFETCH(int, minor);
        QFETCH(QString, mode);
        QFETCH(bool, te);
        QFETCH(bool, fp8);
        const Capability cap = classify(ComputeCapability{major, minor}, "");
        QCOMPARE(QString::fromUtf8(to_string(cap.mode).data()), mode);
        QCOMPARE(cap.te_capable, te);
        QCOMPARE(cap.fp8_capable, fp8);
        const QString cc = QStringLiteral("%1.%2").arg(major).arg(minor);
        QVERIFY2(QString::fromStdString(cap.te_reason).contains(cc), cap.te_reason.c_str());
        QVERIFY2(QString::fromStdString(cap.fp8_reason).contains(cc), cap.fp8_reason.c_str());
        QCOMPARE(cap.fallback_reason.empty(), mode != "fallback");
        for (const std::string& line : cap.reasons()) {
            QVERIFY(!line.empty());
            QVERIFY(line.find('\n') == std::string::npos);
        }
    }

    void noGpuFallsBackWithTheCudaError() {
        const std::string error = "CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)";
        const Capability cap = classify(std::nullopt, error);
        QCOMPARE(cap.mode, Mode::Fallback);
        QVERIFY(!cap.te_capable);
        QVERIFY(!cap.fp8_capable);
        QVERIFY(cap.fallback_reason.find(error) != std::string::npos);
        QCOMPARE(cap.reasons().size(), std::size_t{3});
    }

    void noGpuWithoutReasonStillSaysWhy() {
        const Capability cap = classify(std::nullopt, "");
        QVERIFY(cap.fallback_reason.find("no CUDA device") != std::string::npos);
    }

    void deviceInfoDrivesClassification() {
        DeviceInfo device;
        device.gpu_name = "NVIDIA H200";
        device.compute_capability = ComputeCapability{9, 0};
        QCOMPARE(classify(device).mode, Mode::Fp8);
        device.compute_capability.reset();
        device.gpu_error = "no CUDA-capable device is detected";
        QCOMPARE(classify(device).mode, Mode::Fallback);
    }

    void detectionNeverThrows() {
        const DeviceInfo device = detect_device();
        QVERIFY(!device.libtorch_version.empty());
        QVERIFY(device.cpu_threads > 0);
        if (!device.has_gpu()) {
            QVERIFY(!device.gpu_error.empty());
            QCOMPARE(classify(device).mode, Mode::Fallback);
        }
    }

    void peakTable() {
        QCOMPARE(find_peak_throughput("NVIDIA H200")->bf16_tflops, 989.0);
        QCOMPARE(find_peak_throughput("NVIDIA H100 PCIe")->device, std::string("H100 PCIe"));
        QCOMPARE(find_peak_throughput("NVIDIA H100 80GB HBM3")->device, std::string("H100 SXM"));
        QCOMPARE(find_peak_throughput("NVIDIA A10G")->device, std::string("A10G"));
        QCOMPARE(find_peak_throughput("NVIDIA L40S")->device, std::string("L40S"));
        QVERIFY(!find_peak_throughput("").has_value());
        QVERIFY(!find_peak_throughput("Some Future GPU").has_value());
    }

    void cudaVersionFormatting() {
        QCOMPARE(format_cuda_version(13000), std::string("13.0"));
        QCOMPARE(format_cuda_version(12080), std::string("12.8"));
        QCOMPARE(format_cuda_version(0), std::string());
    }
};

QTEST_GUILESS_MAIN(TestCapability)
#include "tst_capability.moc"
