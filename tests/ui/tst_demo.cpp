// te-workbench as a process: the unattended demo mode end to end, and its argument errors.
#include <QtTest>

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>

#include <QDir>
#include <QFileInfo>
#include <QProcessEnvironment>

#include <sqlite3.h>

#include "../helpers/ChildProcess.h"
#include "../ui/UiTestSupport.h"
#include "core/results/RecordJson.h"
#include "core/results/RunStore.h"
#include "ui/window/MainWindow.h"

using namespace tewb;

namespace {

using Result = tewb::test::ChildResult;

Result run_workbench(const QStringList& args, int timeout_ms = 180'000,
                     const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    tewb::test::ChildOptions options{.env = env, .timeout_ms = timeout_ms};
    // A demo trains and stores runs: never twice. Reports, help and refusals have the same effect again.
    options.rerun_if_leak_checker_crashed = !args.contains(QStringLiteral("--demo"));
    return tewb::test::run_child(QStringLiteral(TE_WORKBENCH_PATH), args, options);
}

int line_count(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return -1;
    return static_cast<int>(file.readAll().trimmed().split('\n').size());
}

}  // namespace

class TestDemo : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void quickCpuDemoExportsEverything() {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("demo"));  // created by the demo
        const Result r = run_workbench({QStringLiteral("--demo"), QStringLiteral("quick-cpu"), QStringLiteral("--export"), out,
                                        QStringLiteral("--quit")});
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains(QStringLiteral("demo done: 1 run(s)")));
        QCOMPARE(QImage(out + QStringLiteral("/dashboard.png")).size(), QSize(3200, 2000));
        for (const char* chart : {"loss.png", "step_ms.png", "memory.png"}) {
            QCOMPARE(QImage(out + QLatin1Char('/') + QString::fromUtf8(chart)).size(), QSize(2400, 1400));
        }
        QVERIFY(!QImage(out + QStringLiteral("/window.png")).isNull());
        QVERIFY(!QFile::exists(out + QStringLiteral("/fp8.csv")));  // no FP8 run
        QCOMPARE(line_count(out + QStringLiteral("/steps.csv")), 61);
        QCOMPARE(line_count(out + QStringLiteral("/comparison.csv")), 2);
        const std::vector<RunRecord> records = read_record_files((out + QStringLiteral("/runs.json")).toStdString());
        QCOMPARE(records.size(), std::size_t{1});
        QCOMPARE(records.front().status, RunStatus::Finished);
        QCOMPARE(records.front().config.model, make_preset(Preset::QuickCpu).model);
        // te-workbench checks these names before the demo trains: every file written must be among them.
        const QStringList checked = ui::MainWindow::exportAllFileNames();
        for (const QString& name : QDir(out).entryList(QDir::Files)) QVERIFY2(checked.contains(name), qPrintable(name));
    }

    void badArgumentsExitWithStatus2() {
        QTemporaryDir dir;
        const QString ok = dir.path();
        const struct {
            QStringList args;
            const char* message;
        } cases[] = {
            {{QStringLiteral("--demo"), QStringLiteral("huge"), QStringLiteral("--export"), ok},
             "--demo 'huge': unknown plan; allowed: quick-cpu|seed|compare"},
            {{QStringLiteral("--demo"), QStringLiteral("quick-cpu")}, "--demo needs --export DIR"},
            {{QStringLiteral("--quit")}, "--export and --quit go with --demo"},
            {{QStringLiteral("--export"), ok}, "--export and --quit go with --demo"},
            {{QStringLiteral("--demo"), QStringLiteral("seed"), QStringLiteral("--export"), QStringLiteral("/proc/no-such-dir")},
             "--export /proc/no-such-dir"},
            {{QStringLiteral("--frobnicate")}, "Unknown option 'frobnicate'"},
            {{QStringLiteral("extra")}, "unexpected argument 'extra'"},
            {{QStringLiteral("--demo")}, "Missing value after '--demo'"},
            {{QStringLiteral("--window-size"), QStringLiteral("100x100")}, "--window-size '100x100': allowed"},
            {{QStringLiteral("--report"), QStringLiteral("--out"), ok + QStringLiteral("/r.pdf")}, "--report needs --runs"},
            {{QStringLiteral("--report"), QStringLiteral("--runs"), QStringLiteral("1")}, "--report needs --out"},
            {{QStringLiteral("--report"), QStringLiteral("--runs"), QStringLiteral("1,x"), QStringLiteral("--out"), ok + QStringLiteral("/r.pdf")},
             "--runs '1,x': 'x' is not a run number"},
            {{QStringLiteral("--report"), QStringLiteral("--runs"), QStringLiteral("1"), QStringLiteral("--out"), ok + QStringLiteral("/r.txt")},
             "unknown report format"},
            {{QStringLiteral("--runs"), QStringLiteral("1")}, "--runs and --out go with --report"},
        };
        for (const auto& c : cases) {
            const Result r = run_workbench(c.args, 30'000);
            QVERIFY2(r.exit_code == 2, qPrintable(c.args.join(QLatin1Char(' ')) + QStringLiteral(": exit ") + QString::number(r.exit_code)));
            QVERIFY2(r.err.contains(QString::fromUtf8(c.message)), qPrintable(r.err));
        }
        const Result help = run_workbench({QStringLiteral("--help")}, 30'000);
        QCOMPARE(help.exit_code, 0);
        QVERIFY(help.out.contains(QStringLiteral("--demo")));
    }

    // No display at all (a server, an SSH session): --help, --version and argument errors still answer,
    // and starting the window says why it cannot instead of aborting with a core dump.
    void reportOfStoredRunsHeadless() {
        std::vector<std::int64_t> ids;
        for (const char* name : {"report baseline", "report candidate"}) {
            RunRecord r = test::synthetic_record(name, 20, 5, ids.empty() ? 10.0 : 6.0);
            r.id = make_run_id();
            r.created_at = utc_timestamp_now();
            r.execution.device = "cpu";
            const SaveResult saved = save_run(RunStore::default_path(), r);
            QVERIFY(saved.id);
            ids.push_back(*saved.id);
        }
        QTemporaryDir dir;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));  // headless: the report needs no display
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        const QString runs = QStringLiteral("%1,%2").arg(ids[0]).arg(ids[1]);
        for (const char* file : {"report.pdf", "report.html"}) {
            const QString out = dir.filePath(QString::fromUtf8(file));
            const Result r = run_workbench({QStringLiteral("--report"), QStringLiteral("--runs"), runs, QStringLiteral("--out"), out,
                                            QStringLiteral("--quit")},
                                           60'000, env);
            QVERIFY2(r.exit_code == 0, qPrintable(r.err));
            QVERIFY(r.out.contains(QStringLiteral("report of 2 run(s) written")));
            QVERIFY(QFileInfo(out).size() > 10'000);
        }
        QFile html(dir.filePath(QStringLiteral("report.html")));
        QVERIFY(html.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(html.readAll());
        QVERIFY(text.contains(QStringLiteral("report candidate is 1.")));  // the headline: faster than the baseline
        const Result missing = run_workbench({QStringLiteral("--report"), QStringLiteral("--runs"), QStringLiteral("999999"),
                                              QStringLiteral("--out"), dir.filePath(QStringLiteral("x.pdf")), QStringLiteral("--quit")},
                                             60'000, env);
        QCOMPARE(missing.exit_code, 2);
        QVERIFY2(missing.err.contains(QStringLiteral("no run 999999")), qPrintable(missing.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.pdf"))));
    }

    void needsNoDisplayToParseArguments() {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(name));
        const Result help = run_workbench({QStringLiteral("--help")}, 30'000, env);
        QCOMPARE(help.exit_code, 0);
        QVERIFY(help.out.contains(QStringLiteral("--demo")));
        QCOMPARE(run_workbench({QStringLiteral("--version")}, 30'000, env).exit_code, 0);
        const Result bad = run_workbench({QStringLiteral("--frobnicate")}, 30'000, env);
        QCOMPARE(bad.exit_code, 2);
        QVERIFY(bad.err.contains(QStringLiteral("Unknown option 'frobnicate'")));
        const Result empty = run_workbench({QStringLiteral("--demo"), QString()}, 30'000, env);
        QCOMPARE(empty.exit_code, 2);
        QVERIFY2(empty.err.contains(QStringLiteral("--demo: empty value")), qPrintable(empty.err));
        const Result window = run_workbench({}, 30'000, env);
        QCOMPARE(window.exit_code, 1);
        QVERIFY2(window.err.contains(QStringLiteral("no display")), qPrintable(window.err));
    }

    // A demo whose run could not be saved fails (exit 1, said on stderr), and the record is kept as JSON.
    void unsavedRunFailsTheDemo() {
        QTemporaryDir dir;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("TEWB_DATA_DIR"), dir.filePath(QStringLiteral("data")));
        {
            RunStore store(dir.filePath(QStringLiteral("data/runs.sqlite3")).toStdString());  // creates it
        }
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(dir.filePath(QStringLiteral("data/runs.sqlite3")).toLocal8Bit().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "CREATE TRIGGER refuse BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
                              nullptr, nullptr, nullptr),
                 SQLITE_OK);
        sqlite3_close(db);
        const Result r = run_workbench({QStringLiteral("--demo"), QStringLiteral("quick-cpu"), QStringLiteral("--export"),
                                        dir.filePath(QStringLiteral("out")), QStringLiteral("--quit")},
                                       180'000, env);
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains(QStringLiteral("not saved")), qPrintable(r.err));
        QVERIFY(!r.out.contains(QStringLiteral("demo done")));
        QCOMPARE(QDir(dir.filePath(QStringLiteral("data"))).entryList({QStringLiteral("unsaved-run-*.json")}).size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestDemo)
#include "tst_demo.moc"
