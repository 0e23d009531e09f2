// TensorBoard export: the event-file encoding checked byte by byte from the format's definition (CRC-32C test
// vectors, TFRecord framing, the Event and Summary protocol buffers), then the files of `te-bench export
// --tensorboard` and of the window's export read back by the tensorboard package, whose reader checks every CRC.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "../helpers/ChildProcess.h"
#include "../ui/UiTestSupport.h"
#include "core/common/Error.h"
#include "core/results/RecordJson.h"
#include "core/results/TensorBoardEvents.h"
#include "ui/export/WindowExports.h"
#include "ui/runs/RunCollection.h"

using namespace tewb;

namespace {

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (const int v : values) out.push_back(static_cast<char>(v));
    return out;
}

std::uint32_t le32(const std::string& s, std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)]);
    return v;
}

// A run with FP8 statistics for two slots, a validation loss on two steps and a value that is not finite.
RunRecord fp8_run() {
    RunRecord r = test::synthetic_record("te fp8 delayed", 6, 2, 10);
    r.config.backend = Backend::Te;
    r.config.precision = Precision::Fp8;
    r.created_at = "2026-12-05T10:00:00Z";
    r.fp8_slots = {{"blocks_0.qkv", SlotRole::Input, Fp8Dtype::E4M3}, {"blocks_0.qkv", SlotRole::GradOutput, Fp8Dtype::E5M2}};
    for (StepMetrics& s : r.steps) {
        s.tokens_per_s = 1000.0 * s.step;
        s.fp8 = {Fp8SlotSample{0.5f * static_cast<float>(s.step), 2.0f}, Fp8SlotSample{0.25f, 4.0f}};
    }
    r.steps[2].val_loss = 3.5;
    r.steps[5].val_loss = 3.25;
    r.steps[4].step_ms = std::numeric_limits<double>::quiet_NaN();
    return r;
}

QString python() {
    return qEnvironmentVariable("TEWB_TEST_PYTHON");
}

// The tensorboard package's reading of `logdir`: {run folder: {tag: [[step, value, wall_time], ...]}}.
QJsonObject read_back(const QString& logdir) {
    const test::ChildResult r =
        test::run_child(python(), {QStringLiteral(TEWB_SOURCE_DIR "/tests/app/read_tensorboard.py"), logdir}, {});
    if (r.exit_code != 0) {
        qWarning("read_tensorboard.py exit %d: %s", r.exit_code, qPrintable(r.err));
        return {};
    }
    return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

}  // namespace

class TestTensorBoard : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(!python().isEmpty() && QFileInfo(python()).isExecutable(),
                 "TEWB_TEST_PYTHON names no python (the virtual environment's, from the build's configuration)");
        const test::ChildResult probe = test::run_child(python(), {QStringLiteral("-c"), QStringLiteral("import tensorboard")}, {});
        QVERIFY2(probe.exit_code == 0, qPrintable(QStringLiteral("the tensorboard package does not import in %1 (bash "
                                                                 "packaging/setup-deps.sh installs it): %2")
                                                      .arg(python(), probe.err)));
    }

    // CRC-32C (Castagnoli) against the published check values (RFC 3720, B.4) and the masking TFRecord uses.
    void crcMatchesTheStandardVectors() {
        QCOMPARE(crc32c(""), 0u);
        QCOMPARE(crc32c("123456789"), 0xE3069283u);
        QCOMPARE(crc32c(std::string(32, '\0')), 0x8A9136AAu);
        QCOMPARE(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
        std::string ascending;
        for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
        QCOMPARE(crc32c(ascending), 0x46DD794Eu);
        const std::uint32_t crc = crc32c("123456789");
        QCOMPARE(masked_crc32c("123456789"), static_cast<std::uint32_t>(((crc >> 15) | (crc << 17)) + 0xa282ead8u));
    }

    // A record: 8-byte length, its masked CRC, the payload, the payload's masked CRC.
    void recordsAreFramed() {
        const std::string payload = "hello";
        const std::string record = tfrecord(payload);
        QCOMPARE(record.size(), std::size_t{8 + 4 + 5 + 4});
        QCOMPARE(record.substr(0, 8), bytes({5, 0, 0, 0, 0, 0, 0, 0}));
        QCOMPARE(le32(record, 8), masked_crc32c(record.substr(0, 8)));
        QCOMPARE(record.substr(12, 5), payload);
        QCOMPARE(le32(record, 17), masked_crc32c(payload));
    }

    // The Event and Summary protocol buffers, byte for byte.
    void eventsAreTheProtocolBuffersOfTheFormat() {
        // wall_time 1.5 (field 1, fixed64), step 3 (field 2, varint), summary (field 5) of one value: tag "loss"
        // (field 1) and simple_value 2.0f (field 2, fixed32).
        const std::string value = bytes({0x0a, 4, 'l', 'o', 's', 's', 0x15, 0, 0, 0, 0x40});
        const std::string summary = bytes({0x0a, static_cast<int>(value.size())}) + value;
        const std::string expected =
            bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x10, 3, 0x2a, static_cast<int>(summary.size())}) + summary;
        QCOMPARE(scalars_event(1.5, 3, {{"loss", 2.0f}}), expected);
        // A step past 127 takes two varint bytes.
        QCOMPARE(scalars_event(0, 300, {}).substr(9, 3), bytes({0x10, 0xac, 0x02}));
        const std::string version = file_version_event(0);
        QCOMPARE(version.substr(9), bytes({0x1a, 13}) + "brain.Event:2");
    }

    // What a step exports: the metrics it has, FP8 per slot, nothing that is not finite.
    void stepScalarsNameEveryMetric() {
        const RunRecord r = fp8_run();
        QStringList tags;
        for (const TensorBoardScalar& s : step_scalars(r, r.steps[2])) tags << QString::fromStdString(s.tag);
        QCOMPARE(tags, (QStringList{"loss", "val_loss", "step_ms", "tokens_per_s", "peak_memory_mib",
                                    "fp8_amax/blocks_0.qkv/input", "fp8_scale/blocks_0.qkv/input",
                                    "fp8_amax/blocks_0.qkv/grad_output", "fp8_scale/blocks_0.qkv/grad_output"}));
        QStringList fifth;
        for (const TensorBoardScalar& s : step_scalars(r, r.steps[4])) fifth << QString::fromStdString(s.tag);
        QVERIFY(!fifth.contains(QStringLiteral("step_ms")) && !fifth.contains(QStringLiteral("val_loss")));
        const std::filesystem::path path = tensorboard_event_path(r, "/logs");
        QCOMPARE(QString::fromStdString(path.string()),
                 QStringLiteral("/logs/te fp8 delayed-te-fp8-delayed-id/events.out.tfevents.1796464800.te-workbench"));
        RunRecord odd = r;
        odd.config.name = "../a/b\n*";
        QVERIFY(tensorboard_event_path(odd, "/logs").parent_path().parent_path() == "/logs");
    }

    // The window's export, read back by tensorboard: every value at its step, wall time from the run's start.
    void windowExportReadsBackInTensorBoard() {
        QTemporaryDir dir;
        ui::RunCollection runs;
        runs.add(fp8_run());
        runs.add(test::synthetic_record("plain bf16", 5, 1, 20));
        const ui::ExportSources sources{runs, {}, std::nullopt, {}, {}, {}};
        const std::filesystem::path logdir = dir.filePath(QStringLiteral("tb/new")).toStdString();
        const std::vector<std::filesystem::path> files = ui::export_tensorboard(sources, logdir);
        QCOMPARE(files.size(), std::size_t{2});
        const QJsonObject back = read_back(QString::fromStdString(logdir.string()));
        QCOMPARE(back.size(), 2);
        const QJsonObject fp8 = back.value(QStringLiteral("te fp8 delayed-te-fp8-delayed-id")).toObject();
        const QJsonArray loss = fp8.value(QStringLiteral("loss")).toArray();
        QCOMPARE(loss.size(), 6);
        for (int i = 0; i < 6; ++i) {
            const QJsonArray point = loss[i].toArray();
            QCOMPARE(point[0].toInt(), i + 1);
            QCOMPARE(static_cast<float>(point[1].toDouble()), static_cast<float>(5.0 / (i + 1)));
            QCOMPARE(point[2].toDouble(), 1796464800.0 + (i + 1) * 10 / 1000.0);
        }
        QCOMPARE(fp8.value(QStringLiteral("val_loss")).toArray().size(), 2);
        QCOMPARE(fp8.value(QStringLiteral("step_ms")).toArray().size(), 5);  // the NaN left out
        const QJsonArray amax = fp8.value(QStringLiteral("fp8_amax/blocks_0.qkv/input")).toArray();
        QCOMPARE(amax.size(), 6);
        QCOMPARE(amax[3].toArray()[1].toDouble(), 2.0);
        QCOMPARE(fp8.value(QStringLiteral("fp8_scale/blocks_0.qkv/grad_output")).toArray()[0].toArray()[1].toDouble(), 4.0);
        QCOMPARE(back.value(QStringLiteral("plain bf16-plain-bf16-id")).toObject().value(QStringLiteral("peak_memory_mib")).toArray().size(), 5);

        // Exported again: each run's file is replaced, not doubled.
        ui::export_tensorboard(sources, logdir);
        QCOMPARE(read_back(QString::fromStdString(logdir.string())), back);
        QCOMPARE(QDir(QString::fromStdString(files[0].parent_path().string())).entryList(QDir::Files).size(), 1);

        // Refused with the reason: no runs, a file where the folder goes, one run twice. Nothing is made.
        ui::RunCollection none;
        QVERIFY_THROWS_EXCEPTION(DataError, ui::export_tensorboard({none, {}, std::nullopt, {}, {}, {}}, logdir));
        QFile file(dir.filePath(QStringLiteral("a-file")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        try {
            write_tensorboard({fp8_run()}, file.fileName().toStdString(), "--tensorboard", std::nullopt);
            QFAIL("a file was taken for the folder");
        } catch (const ConfigError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("not a folder")), e.what());
        }
        // One run twice (a different name, the same id) cannot share a folder: both named. The folders made for it, the
        // missing parents too, are gone again.
        const std::filesystem::path twice = dir.filePath(QStringLiteral("deep/er/twice")).toStdString();
        RunRecord renamed = fp8_run();
        try {
            write_tensorboard({fp8_run(), fp8_run()}, twice, "--tensorboard", std::nullopt);
            QFAIL("one run twice was written");
        } catch (const ConfigError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("'te fp8 delayed' (id te-fp8-delayed-id)")), e.what());
        }
        QVERIFY(!std::filesystem::exists(dir.filePath(QStringLiteral("deep")).toStdString()));
        // The window's export takes such a run once.
        ui::RunCollection opened;
        opened.add(fp8_run());
        opened.add(fp8_run());
        QCOMPARE(ui::export_tensorboard({opened, {}, std::nullopt, {}, {}, {}}, twice).size(), std::size_t{1});
    }

    // te-bench export --tensorboard: every saved run by default, the IDs asked for otherwise; bad arguments exit 2
    // with the reason; the files read back.
    void teBenchExportsSavedRuns() {
        QTemporaryDir dir;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("TEWB_DATA_DIR"), dir.filePath(QStringLiteral("data")));
        const QString store = dir.filePath(QStringLiteral("runs.sqlite3"));
        const auto bench = [&](QStringList args) {
            args.prepend(store);
            args.prepend(QStringLiteral("--store"));
            test::ChildOptions options;
            options.env = env;
            return test::run_child(QStringLiteral(TE_BENCH_PATH), args, options);
        };
        const QString logs = dir.filePath(QStringLiteral("logs"));
        test::ChildResult empty = bench({QStringLiteral("export"), QStringLiteral("--tensorboard"), logs});
        QCOMPARE(empty.exit_code, 2);
        QVERIFY2(empty.err.contains(QStringLiteral("has no runs to export")), qPrintable(empty.err));

        RunRecord importable = fp8_run();
        importable.steps[4].step_ms = 12;  // the import rule takes finite step times only
        QFile json(dir.filePath(QStringLiteral("runs.json")));
        QVERIFY(json.open(QIODevice::WriteOnly));
        json.write(QByteArray::fromStdString(records_to_json_text({importable, test::synthetic_record("second", 4, 1, 5)})));
        json.close();
        const test::ChildResult imported = bench({QStringLiteral("history"), QStringLiteral("import"), json.fileName()});
        QVERIFY2(imported.exit_code == 0, qPrintable(imported.err));

        const test::ChildResult all = bench({QStringLiteral("export"), QStringLiteral("--tensorboard"), logs});
        QVERIFY2(all.exit_code == 0, qPrintable(all.err));
        QVERIFY2(all.err.contains(QStringLiteral("wrote 2 runs")) && all.err.contains(QStringLiteral("tensorboard --logdir")),
                 qPrintable(all.err));
        const QJsonObject back = read_back(logs);
        QCOMPARE(back.keys(), (QStringList{"second-second-id", "te fp8 delayed-te-fp8-delayed-id"}));
        QCOMPARE(back.value(QStringLiteral("second-second-id")).toObject().value(QStringLiteral("loss")).toArray().size(), 4);

        // With other outputs: every output is checked before any is written (a refused folder leaves no JSON behind).
        const QString written = dir.filePath(QStringLiteral("export.json"));
        const test::ChildResult refused = bench({QStringLiteral("history"), QStringLiteral("export"), QStringLiteral("1"),
                                                 QStringLiteral("--json"), written, QStringLiteral("--tensorboard"), json.fileName()});
        QCOMPARE(refused.exit_code, 2);
        QVERIFY2(refused.err.contains(QStringLiteral("not a folder")), qPrintable(refused.err));
        QVERIFY(!QFile::exists(written));
        const QString clash = dir.filePath(QStringLiteral("clash"));
        QVERIFY(QDir().mkpath(clash + QStringLiteral("/te fp8 delayed-te-fp8-delayed-id")));
        const test::ChildResult same =
            bench({QStringLiteral("history"), QStringLiteral("export"), QStringLiteral("1"), QStringLiteral("--tensorboard"), clash,
                   QStringLiteral("--json"), clash + QStringLiteral("/te fp8 delayed-te-fp8-delayed-id/events.out.tfevents.1796464800.te-workbench")});
        QCOMPARE(same.exit_code, 2);
        QVERIFY2(same.err.contains(QStringLiteral("--json")) && same.err.contains(QStringLiteral("--tensorboard")), qPrintable(same.err));

        const QString one = dir.filePath(QStringLiteral("one"));
        QCOMPARE(bench({QStringLiteral("history"), QStringLiteral("export"), QStringLiteral("2"), QStringLiteral("--tensorboard"), one}).exit_code, 0);
        QCOMPARE(read_back(one).keys(), QStringList{"second-second-id"});

        const test::ChildResult missing = bench({QStringLiteral("export"), QStringLiteral("7"), QStringLiteral("--tensorboard"), logs});
        QCOMPARE(missing.exit_code, 2);
        QVERIFY2(missing.err.contains(QStringLiteral("ID 7: no such run")), qPrintable(missing.err));
        const test::ChildResult noDir = bench({QStringLiteral("export")});
        QCOMPARE(noDir.exit_code, 2);
        QVERIFY2(noDir.err.contains(QStringLiteral("--tensorboard")), qPrintable(noDir.err));
        const test::ChildResult onFile = bench({QStringLiteral("export"), QStringLiteral("--tensorboard"), json.fileName()});
        QCOMPARE(onFile.exit_code, 2);
        QVERIFY2(onFile.err.contains(QStringLiteral("not a folder")), qPrintable(onFile.err));
        // The store itself as a run's event file: refused through a symlink at the run's file name.
        const QString trap = dir.filePath(QStringLiteral("trap/second-second-id"));
        QVERIFY(QDir().mkpath(trap));
        QVERIFY(QFile::link(store, trap + QStringLiteral("/events.out.tfevents.1796126400.te-workbench")));
        const test::ChildResult onStore =
            bench({QStringLiteral("export"), QStringLiteral("2"), QStringLiteral("--tensorboard"), dir.filePath(QStringLiteral("trap"))});
        QCOMPARE(onStore.exit_code, 2);
        QVERIFY2(onStore.err.contains(QStringLiteral("run store")), qPrintable(onStore.err));
        QCOMPARE(bench({QStringLiteral("history"), QStringLiteral("list")}).exit_code, 0);  // the store is whole
    }
};

QTEST_MAIN(TestTensorBoard)
#include "tst_tensorboard.moc"
