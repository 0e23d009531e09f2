#include <QtTest>

#include <dlfcn.h>
#include <unistd.h>

#include "core/device/Capability.h"
#include "core/device/GpuContention.h"
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

    void gpuContentionSaysWhyItIsUnavailable() {
        const GpuContention no_bus = read_gpu_contention("");
        QVERIFY(!no_bus.available);
        QVERIFY2(no_bus.unavailable_reason.find("PCI bus id") != std::string::npos, no_bus.unavailable_reason.c_str());
        if (void* library = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL)) {
            ::dlclose(library);
            // With a driver: a bus id no GPU has is refused by NVML, in its words, naming the device.
            const GpuContention none = read_gpu_contention("0000:ff:1f.7");
            QVERIFY(!none.available);
            const bool said = none.unavailable_reason.rfind("NVML: ", 0) == 0
                                  ? none.unavailable_reason.find("0000:ff:1f.7") != std::string::npos
                                  : none.unavailable_reason.rfind("NVML could not start: ", 0) == 0;
            QVERIFY2(said, none.unavailable_reason.c_str());
            return;
        }
        for (int call = 0; call < 2; ++call) {  // the second call answers from the once-per-process state
            const GpuContention contention = read_gpu_contention("0000:1b:00.0");
            QVERIFY(!contention.available);
            QCOMPARE(contention.unavailable_reason, std::string("libnvidia-ml.so.1 not found (no NVIDIA driver)"));
            QCOMPARE(contention.other_processes, 0);
            QVERIFY(contention.throttle_reasons.empty());
            QVERIFY(!contention.sm_clock_mhz.has_value());
            QVERIFY(!contention.max_sm_clock_mhz.has_value());
        }
    }

    void clockEventReasonBits_data() {
        QTest::addColumn<quint64>("mask");
        QTest::addColumn<QStringList>("words");
        QTest::addColumn<QList<bool>>("benign");
        QTest::newRow("none") << quint64{0} << QStringList{} << QList<bool>{};
        QTest::newRow("idle") << quint64{0x1} << QStringList{"GPU idle"} << QList<bool>{true};
        QTest::newRow("app clocks") << quint64{0x2} << QStringList{"application clocks setting"} << QList<bool>{true};
        QTest::newRow("power cap") << quint64{0x4} << QStringList{"SW power cap"} << QList<bool>{false};
        QTest::newRow("hw slowdown") << quint64{0x8} << QStringList{"HW slowdown"} << QList<bool>{false};
        QTest::newRow("sync boost") << quint64{0x10} << QStringList{"sync boost"} << QList<bool>{false};
        QTest::newRow("sw thermal") << quint64{0x20} << QStringList{"SW thermal slowdown"} << QList<bool>{false};
        QTest::newRow("hw thermal") << quint64{0x40} << QStringList{"HW thermal slowdown"} << QList<bool>{false};
        QTest::newRow("power brake") << quint64{0x80} << QStringList{"HW power brake slowdown"} << QList<bool>{false};
        QTest::newRow("display") << quint64{0x100} << QStringList{"display clock setting"} << QList<bool>{true};
        QTest::newRow("idle + power cap + thermal")
            << quint64{0x1 | 0x4 | 0x20} << QStringList{"GPU idle", "SW power cap", "SW thermal slowdown"}
            << QList<bool>{true, false, false};
        QTest::newRow("unknown bits") << quint64{0x200 | 0x8000000000000000ULL | 0x40}
                                      << QStringList{"HW thermal slowdown", "unknown reason 0x200",
                                                     "unknown reason 0x8000000000000000"}
                                      << QList<bool>{false, false, false};
    }

    void clockEventReasonBits() {
        QFETCH(quint64, mask);
        QFETCH(QStringList, words);
        QFETCH(QList<bool>, benign);
        const std::vector<std::string> decoded = decode_clock_event_reasons(mask);
        QStringList got;
        for (const std::string& reason : decoded) got << QString::fromStdString(reason);
        QCOMPARE(got, words);
        for (qsizetype i = 0; i < words.size(); ++i) {
            const std::string& reason = decoded[static_cast<std::size_t>(i)];
            QVERIFY2(throttle_reason_is_benign(reason) == benign[i], reason.c_str());
        }
    }

    void clockEventReasonTableCoversNvml() {
        std::uint64_t all = 0;
        for (const ClockEventReason& reason : clock_event_reasons()) {
            QCOMPARE(all & reason.bit, std::uint64_t{0});
            all |= reason.bit;
            QCOMPARE(throttle_reason_is_benign(reason.words), reason.benign);
        }
        QCOMPARE(all, std::uint64_t{0x1ff});  // nvmlClocksEventReasonAll
        QVERIFY(!throttle_reason_is_benign(""));
        QVERIFY(!throttle_reason_is_benign("gpu idle"));
    }

    void processListsReadEachLayout() {
        const NvmlProcessInfoV1 v1[] = {{101, 1ULL << 30}, {202, 0}};
        QCOMPARE(process_ids(v1), (std::vector<unsigned>{101, 202}));
        const NvmlProcessInfoV2 v2[] = {{303, 5ULL << 20, 0xFFFFFFFFu, 0xFFFFFFFFu}, {404, 0, 1, 2}};
        QCOMPARE(process_ids(v2), (std::vector<unsigned>{303, 404}));
        QVERIFY(process_ids(std::span<const NvmlProcessInfoV2>{}).empty());
    }

    void otherProcessesExcludeOurs() {
        const unsigned self = static_cast<unsigned>(::getpid());
        using Ours = std::vector<std::vector<unsigned>>;
        QCOMPARE(count_other_processes({}, Ours{{self}}, false), 0);
        QCOMPARE(count_other_processes({self}, Ours{{self}}, false), 0);
        QCOMPARE(count_other_processes({self, 7, 9}, Ours{{self}}, false), 2);
        QCOMPARE(count_other_processes({7, 9}, Ours{{self}}, false), 2);
        // One process listed once per MIG instance it uses is still one process.
        QCOMPARE(count_other_processes({7, 7, self, self}, Ours{{self}}, false), 1);
        // Inside a container NVML's host pid of ours matches none of our pids: one listed process is us.
        QCOMPARE(count_other_processes({50123}, Ours{{self, 1}}, true), 0);
        QCOMPARE(count_other_processes({50123, 50200}, Ours{{self, 1}}, true), 1);
        // ...unless a listed pid does match (a container sharing the host's PID namespace view).
        QCOMPARE(count_other_processes({50123, self}, Ours{{50123, self}}, true), 0);
        QCOMPARE(count_other_processes({50200, self}, Ours{{50123, self}}, true), 1);
        // A data-parallel rank's idle launcher (it holds the context of the 1-process run it trained) is not other
        // work: excluded by its pid where NVML's match ours (the H200's one-process NCCL job said "1 other process").
        const unsigned launcher = 4242;
        QCOMPARE(count_other_processes({launcher, self}, Ours{{self}, {launcher}}, false), 0);
        QCOMPARE(count_other_processes({launcher, self, 9}, Ours{{self}, {launcher}}, false), 1);
        QCOMPARE(count_other_processes({self}, Ours{{self}, {launcher}}, false), 0);  // one without a context here
        // In a container each of our processes that no listed pid matched stands for one listed process; never
        // fewer than none.
        QCOMPARE(count_other_processes({61000, 61001}, Ours{{self, 1}, {launcher, 1}}, true), 0);
        QCOMPARE(count_other_processes({61000, 61001, 61002}, Ours{{self, 1}, {launcher, 1}}, true), 1);
        QCOMPARE(count_other_processes({61000}, Ours{{self, 1}, {launcher, 1}}, true), 0);
    }

    // A process's pids, one per PID namespace /proc shows; a process /proc does not know is just its number.
    void pidsOfAProcess() {
        const std::vector<unsigned> mine = pids_of_process(static_cast<int>(::getpid()));
        QVERIFY(!mine.empty() && mine.front() == static_cast<unsigned>(::getpid()));
        QVERIFY(std::find(mine.begin() + 1, mine.end(), static_cast<unsigned>(::getpid())) != mine.end());  // NSpid's last
        QCOMPARE(pids_of_process(2147483646), (std::vector<unsigned>{2147483646u}));
    }

    void cudaVersionFormatting() {
        QCOMPARE(format_cuda_version(13000), std::string("13.0"));
        QCOMPARE(format_cuda_version(12080), std::string("12.8"));
        QCOMPARE(format_cuda_version(0), std::string());
    }
};

QTEST_GUILESS_MAIN(TestCapability)
#include "tst_capability.moc"
