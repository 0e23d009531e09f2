#include <QtTest>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

struct Result {
    int exit_code = -1;
    QString out;
    QString err;
};

class TestCli : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    Result bench(const QStringList& args, int timeout_ms = 300000) {
        QProcess process;
        const QStringList store =
            args.contains(QStringLiteral("--store")) ? QStringList{} : QStringList{"--store", dir_.filePath("runs.sqlite3")};
        process.start(QStringLiteral(TE_BENCH_PATH), store + args);
        if (!process.waitForFinished(timeout_ms)) {
            process.kill();
            process.waitForFinished();
        }
        return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
                QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError())};
    }

    json read_json(const QString& path) {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly)) return json();
        return json::parse(file.readAll().toStdString());
    }

    json read_json_text(const QString& text) { return json::parse(text.toStdString()); }

private Q_SLOTS:
    void badInputExitsTwoWithOneLine_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no command") << QStringList{} << "a command is required; allowed: info|run|compare|history";
        QTest::newRow("unknown command") << QStringList{"train"} << "unknown command 'train'; allowed: info|run|compare|history";
        QTest::newRow("unknown flag") << QStringList{"run", "--turbo"} << "--turbo";
        QTest::newRow("missing value") << QStringList{"run", "--layers"} << "--layers";
        QTest::newRow("non-numeric") << QStringList{"run", "--layers", "abc"} << "--layers 'abc': not a whole number";
        QTest::newRow("overflow") << QStringList{"run", "--batch", "99999999999"} << "--batch '99999999999': number too large";
        QTest::newRow("negative size") << QStringList{"run", "--seq", "-5"} << "--seq -5: out of range";
        QTest::newRow("zero size") << QStringList{"run", "--vocab", "0"} << "--vocab 0: out of range";
        QTest::newRow("hidden vs heads") << QStringList{"run", "--hidden", "770"} << "--hidden 770: not divisible by --heads 12";
        QTest::newRow("lr nan") << QStringList{"run", "--lr", "nan"} << "--lr nan: must be a finite number";
        QTest::newRow("lr zero") << QStringList{"run", "--lr", "0"} << "--lr 0: must be a finite number";
        QTest::newRow("lr text") << QStringList{"run", "--lr", "fast"} << "--lr 'fast': not a number";
        QTest::newRow("unknown precision") << QStringList{"run", "--precision", "fp16"}
                                           << "--precision 'fp16': unknown value; allowed: auto|fp32|bf16|fp8";
        QTest::newRow("unknown backend") << QStringList{"run", "--backend", "jax"}
                                         << "--backend 'jax': unknown value; allowed: torch|te";
        QTest::newRow("unknown device") << QStringList{"run", "--device", "tpu"} << "--device 'tpu': unknown value";
        QTest::newRow("fp8 with torch") << QStringList{"run", "--backend", "torch", "--precision", "fp8"} << "--precision fp8";
        QTest::newRow("unwritable json") << QStringList{"run", "--json", "/nonexistent-dir/run.json"}
                                         << "--json /nonexistent-dir/run.json: directory /nonexistent-dir does not exist";
        QTest::newRow("unusable store") << QStringList{"--store", "/proc/no-such-dir/runs.sqlite3", "run", "--preset",
                                                       "quick-cpu"}
                                        << "--store: run store /proc/no-such-dir/runs.sqlite3: cannot create directory";
        QTest::newRow("csv is a directory") << QStringList{"run", "--csv", "/tmp"} << "--csv /tmp: is a directory";
        QTest::newRow("unknown preset") << QStringList{"compare", "--preset", "huge"}
                                        << "--preset 'huge': unknown value; allowed: seed|quick-cpu";
        QTest::newRow("history id text") << QStringList{"history", "show", "abc"} << "ID 'abc': not a whole number";
        QTest::newRow("history id missing") << QStringList{"history", "show", "424242"} << "ID 424242: no such run";
        QTest::newRow("export nothing") << QStringList{"history", "export", "1"} << "nothing to write";
    }

    void badInputExitsTwoWithOneLine() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Result r = bench(args);
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.err.contains(expected), qPrintable("stderr: " + r.err));
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY2(!r.err.contains(QStringLiteral("saved as run")), "work started despite bad input");
    }

    void cudaWithoutGpuIsABadArgumentHere() {
        const Result info = bench({"info", "--json"});
        if (!read_json_text(info.out)["device"]["compute_capability"].is_null()) QSKIP("this machine has a GPU");
        const Result r = bench({"run", "--device", "cuda"});
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("--device cuda: no usable CUDA device")), qPrintable(r.err));
    }

    void infoJsonHasTheContractKeys() {
        const Result r = bench({"info", "--json"});
        QCOMPARE(r.exit_code, 0);
        const json j = read_json_text(r.out);
        QVERIFY(j["mode"] == "fp8" || j["mode"] == "te" || j["mode"] == "fallback");
        QVERIFY(j["reasons"].is_array() && !j["reasons"].empty());
        for (const char* key : {"name", "compute_capability", "sm_count", "memory_total_bytes", "memory_free_bytes",
                                "driver_version", "cuda_runtime_version", "cublaslt_version", "libtorch_version"}) {
            QVERIFY2(j["device"].contains(key), key);
        }
        QVERIFY(j["device"]["libtorch_version"].is_string());
        const Result text = bench({"info"});
        QCOMPARE(text.exit_code, 0);
        QVERIFY(text.out.contains(QStringLiteral("Mode: ")));
    }

    void runWritesJsonCsvAndStore() {
        const QString json_path = dir_.filePath("run.json");
        const QString csv_path = dir_.filePath("run.csv");
        const Result r = bench({"run", "--preset", "quick-cpu", "--warmup", "2", "--iters", "4", "--name", "cli run", "--json",
                                json_path, "--csv", csv_path});
        QCOMPARE(r.exit_code, 0);
        QVERIFY2(r.out.contains(QStringLiteral("cli run")), qPrintable(r.out));
        QVERIFY(r.err.contains(QStringLiteral("saved as run")));
        const json record = read_json(json_path);
        QCOMPARE(record["status"].get<std::string>(), std::string("finished"));
        QCOMPARE(record["steps"].size(), std::size_t{6});
        QCOMPARE(record["steps"][0]["phase"].get<std::string>(), std::string("warmup"));
        QCOMPARE(record["steps"][5]["phase"].get<std::string>(), std::string("timed"));
        QCOMPARE(record["config"]["name"].get<std::string>(), std::string("cli run"));
        QCOMPARE(record["summary"]["timed_steps"].get<int>(), 4);
        QFile csv(csv_path);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts).size(), 7);

        const Result json_stdout =
            bench({"run", "--preset", "quick-cpu", "--warmup", "0", "--iters", "2", "--no-store", "--json", "-"});
        QCOMPARE(json_stdout.exit_code, 0);
        QCOMPARE(read_json_text(json_stdout.out)["steps"].size(), std::size_t{2});
        QVERIFY(!json_stdout.err.contains(QStringLiteral("saved as run")));
    }

    void historyListShowExportDelete() {
        const Result list = bench({"history", "list", "--json"});
        QCOMPARE(list.exit_code, 0);
        const json runs = read_json_text(list.out);
        QVERIFY(!runs.empty());
        const QString id = QString::number(runs[0]["id"].get<long long>());

        const Result show = bench({"history", "show", id, "--json"});
        QCOMPARE(show.exit_code, 0);
        QCOMPARE(read_json_text(show.out)["id"], runs[0]["run_id"]);

        const QString exported = dir_.filePath("export.json");
        const QString summary = dir_.filePath("summary.csv");
        const Result exp = bench({"history", "export", id, "--json", exported, "--summary-csv", summary});
        QCOMPARE(exp.exit_code, 0);
        QCOMPARE(read_json(exported)["id"], runs[0]["run_id"]);
        QVERIFY(QFile::exists(summary));

        const QString other_store = dir_.filePath("other.sqlite3");
        QProcess import;
        import.start(QStringLiteral(TE_BENCH_PATH), {"--store", other_store, "history", "import", exported});
        QVERIFY(import.waitForFinished(60000));
        QCOMPARE(import.exitCode(), 0);
        QVERIFY(QString::fromUtf8(import.readAllStandardError()).contains(QStringLiteral("as run 1")));

        QFile broken(dir_.filePath("broken.json"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        json bad = read_json(exported);
        bad["steps"][0]["loss"] = "lots";
        broken.write(QByteArray::fromStdString(bad.dump()));
        broken.close();
        const Result rejected = bench({"history", "import", broken.fileName()});
        QCOMPARE(rejected.exit_code, 2);
        QVERIFY2(rejected.err.contains(QStringLiteral("broken.json: $.steps[0].loss: expected a number")),
                 qPrintable(rejected.err));
        QVERIFY(rejected.err.contains(QStringLiteral("nothing was imported")));

        const Result del = bench({"history", "delete", id});
        QCOMPARE(del.exit_code, 0);
        QCOMPARE(bench({"history", "show", id}).exit_code, 2);
    }

    void compareRunsWhatTheDeviceSupports() {
        const Result info = bench({"info", "--json"});
        if (!read_json_text(info.out)["device"]["compute_capability"].is_null())
            QSKIP("this machine has a GPU: compare runs the GPU matrix");
        const QString json_path = dir_.filePath("compare.json");
        const QString summary = dir_.filePath("compare-summary.csv");
        const Result r = bench({"compare", "--preset", "quick-cpu", "--warmup", "1", "--iters", "3", "--no-store", "--json",
                                json_path, "--summary-csv", summary});
        QCOMPARE(r.exit_code, 0);
        const json document = read_json(json_path);
        QCOMPARE(document["runs"].size(), std::size_t{2});
        QCOMPARE(document["runs"][0]["config"]["precision"].get<std::string>(), std::string("fp32"));
        QCOMPARE(document["runs"][1]["config"]["precision"].get<std::string>(), std::string("bf16"));
        QCOMPARE(document["skipped"].size(), std::size_t{2});
        QVERIFY(r.out.contains(QStringLiteral("speedup")));
        QVERIFY(r.out.contains(QStringLiteral("Not run here")));
        QFile csv(summary);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 3);
        QVERIFY2(lines[1].endsWith(QStringLiteral(",1,1")), qPrintable(lines[1]));
    }
};

}  // namespace

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
