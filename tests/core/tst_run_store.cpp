#include <QtTest>

#include <sqlite3.h>

#include "../helpers/SqlScript.h"
#include "core/common/Error.h"
#include "core/results/AtomicFile.h"
#include "core/results/RecordImport.h"
#include "core/results/RecordJson.h"
#include "core/results/RunStore.h"
#include "core/results/Summary.h"

using namespace tewb;

namespace {

RunRecord make_record(const std::string& name) {
    RunRecord r;
    r.id = make_run_id();
    r.created_at = utc_timestamp_now();
    r.config.name = name;
    r.config.precision = Precision::Fp32;
    r.config.device = DeviceKind::Cpu;
    r.execution.device = "cpu";
    r.execution.implementation = "torch-eager, fp32";
    r.execution.flops_per_step = 1e9;
    r.steps = {{1, Phase::Warmup, 5.0, 10.0, 100, 1.0, 10.0}, {2, Phase::Timed, 4.0, 12.0, 200, 1.0, 22.0}};
    r.status = RunStatus::Finished;
    r.summary = summarize(r.steps, r.config, r.execution);
    return r;
}

std::string integrity(const QString& path) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* stmt = nullptr;
    std::string result = "no answer";
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
        result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return result;
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void writeReadDelete() {
        QTemporaryDir dir;
        RunStore store(dir.filePath("nested/dir/runs.sqlite3").toStdString());
        const RunRecord first = make_record("first");
        const RunRecord second = make_record("second");
        const std::int64_t a = store.save(first);
        const std::int64_t b = store.save(second);
        QVERIFY(a > 0 && b > a);

        const std::vector<StoredRun> listed = store.list();
        QCOMPARE(listed.size(), std::size_t{2});
        QCOMPARE(listed[0].name, std::string("second"));  // newest first
        QCOMPARE(listed[1].run_id, first.id);
        QCOMPARE(listed[1].steps, 2);
        QCOMPARE(listed[1].median_ms.value(), 12.0);
        QCOMPARE(listed[1].peak_mem_bytes, std::uint64_t{200});

        const std::optional<RunRecord> loaded = store.get(a);
        QVERIFY(loaded.has_value());
        QCOMPARE(loaded->id, first.id);
        QCOMPARE(loaded->steps, first.steps);
        QCOMPARE(loaded->summary, first.summary);

        QVERIFY(store.remove(a));
        QVERIFY(!store.remove(a));
        QVERIFY(!store.get(a).has_value());
        QCOMPARE(store.list().size(), std::size_t{1});
    }

    // The import rule (te-bench history import and the GUI's open): every file and record checked first, all or
    // nothing; a record stored already is taken as it is only when its content is the same.
    void importIsCheckedWholeBeforeAnythingIsStored() {
        QTemporaryDir dir;
        const auto write = [&](const char* name, const std::string& text) {
            const std::string path = dir.filePath(name).toStdString();
            write_file_atomically(path, text);
            return path;
        };
        RunStore store(dir.filePath("runs.sqlite3").toStdString());
        const RunRecord a = make_record("a");
        const RunRecord b = make_record("b");
        const std::string both = write("both.json", records_to_json_text({a, b}));
        const std::vector<ImportRecord> checked = check_import({both}, &store);
        QCOMPARE(checked.size(), std::size_t{2});
        QCOMPARE(checked[1].source, both + " [1]");
        QCOMPARE(save_import(checked, store).size(), std::size_t{2});

        // Again: both are stored with this content, so nothing new is saved.
        const std::vector<ImportRecord> again = check_import({both}, &store);
        QVERIFY(again[0].stored_as && again[1].stored_as);
        QVERIFY(save_import(again, store).empty());
        QCOMPARE(store.list().size(), std::size_t{2});

        const auto refused = [&](const std::vector<std::string>& paths, const RunStore* with, const std::string& part,
                                 const std::string& remedy = {}) {
            try {
                check_import(paths, with);
                QFAIL(qPrintable(QString::fromStdString("accepted; expected " + part)));
            } catch (const ImportError& e) {
                QVERIFY2(std::string(e.what()).find(part) != std::string::npos, e.what());
                QCOMPARE(e.remedy(), remedy);
            }
        };
        RunRecord changed = a;
        changed.config.name = "a, renamed";
        const std::string stored_differently = write("changed.json", record_to_json_text(changed));
        refused({stored_differently}, &store, "is already stored as run", "delete run 1 first to replace it");
        QCOMPARE(check_import({stored_differently}, nullptr).size(), std::size_t{1});  // opening stores nothing

        RunRecord running = make_record("still running");
        running.status = RunStatus::Running;
        const std::string good = write("good.json", record_to_json_text(make_record("fine")));
        refused({good, write("running.json", record_to_json_text(running))}, nullptr, "running.json: $.status 'running'");
        refused({good, good}, nullptr, "is also in " + good);
        refused({write("empty.json", "[]")}, nullptr, "holds no records");
        QVERIFY_THROWS_EXCEPTION(DataError, check_import({dir.filePath("missing.json").toStdString()}, nullptr));
        QCOMPARE(store.list().size(), std::size_t{2});
    }

    void versionOneStoresAreUpgraded() {
        QTemporaryDir dir;
        const QString path = dir.filePath("v1.sqlite3");
        const RunRecord old = make_record("from version 1");
        {
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
            const std::string json = record_to_json_text(old);
            const std::string sql =
                "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, created_at TEXT NOT "
                "NULL, name TEXT NOT NULL, backend TEXT NOT NULL, precision TEXT NOT NULL, device TEXT NOT NULL, status TEXT "
                "NOT NULL, steps INTEGER NOT NULL, median_ms REAL, final_loss REAL, peak_mem_bytes INTEGER NOT NULL, "
                "record_json TEXT NOT NULL); PRAGMA user_version=1;";
            QCOMPARE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_stmt* insert = nullptr;
            sqlite3_prepare_v2(db,
                               "INSERT INTO runs (run_id, created_at, name, backend, precision, device, status, steps, "
                               "peak_mem_bytes, record_json) VALUES (?1, 'now', 'from version 1', 'torch', 'fp32', 'cpu', "
                               "'finished', 2, 200, ?2)",
                               -1, &insert, nullptr);
            sqlite3_bind_text(insert, 1, old.id.c_str(), -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(insert, 2, json.c_str(), -1, SQLITE_TRANSIENT);
            QCOMPARE(sqlite3_step(insert), SQLITE_DONE);
            sqlite3_finalize(insert);
            sqlite3_close(db);
        }
        RunStore store(path.toStdString());
        std::vector<StoredRun> runs = store.list();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(runs[0].name, std::string("from version 1"));
        QVERIFY(!runs[0].fp8_emulated);
        QVERIFY(store.get(runs[0].id).has_value());
        RunRecord fp8 = make_record("fp8");
        fp8.execution.fp8_emulated = true;
        store.save(fp8);
        runs = store.list();
        QCOMPARE(runs.size(), std::size_t{2});
        QVERIFY(runs[0].fp8_emulated);
        QCOMPARE(integrity(path), std::string("ok"));
    }

    // The list names an emulated run as its record does: by format for Blackwell's recipes ("(emulated MXFP8)",
    // "(emulated NVFP4)"), FP8 otherwise; a row whose record cannot be read still lists (as FP8).
    void listedEmulatedRunsAreNamedByFormat() {
        QTemporaryDir dir;
        const QString path = dir.filePath("runs.sqlite3");
        RunStore store(path.toStdString());
        std::vector<RunRecord> records;
        for (const ScalingKind scaling : {ScalingKind::Delayed, ScalingKind::Mxfp8, ScalingKind::Nvfp4, ScalingKind::Block}) {
            RunRecord r = make_record("te fp8 " + std::string(to_string(scaling)));
            r.config.precision = Precision::Fp8;
            r.config.fp8.scaling = scaling;
            r.execution.fp8_emulated = true;
            store.save(r);
            records.push_back(r);
        }
        RunRecord plain = make_record("plain");
        plain.config.fp8.scaling = ScalingKind::Mxfp8;  // not an FP8 run: the recipe says nothing
        store.save(plain);
        records.push_back(plain);
        std::vector<StoredRun> runs = store.list();
        QCOMPARE(runs.size(), records.size());
        for (std::size_t i = 0; i < records.size(); ++i) {
            const StoredRun& row = runs[records.size() - 1 - i];  // newest first
            QCOMPARE(display_name(row), display_name(records[i]));
        }
        QCOMPARE(display_name(runs[2]), std::string("te fp8 nvfp4 (emulated NVFP4)"));
        QCOMPARE(display_name(runs[3]), std::string("te fp8 mxfp8 (emulated MXFP8)"));
        QCOMPARE(display_name(runs[4]), std::string("te fp8 delayed (emulated FP8)"));
        QCOMPARE(display_name(runs[0]), std::string("plain"));
        QCOMPARE(run_sql(path.toStdString(), "UPDATE runs SET record_json = '{not json' WHERE name = 'te fp8 mxfp8'"), std::string());
        runs = store.list();
        QCOMPARE(runs.size(), records.size());
        QCOMPARE(display_name(runs[3]), std::string("te fp8 mxfp8 (emulated FP8)"));
    }

    void savingTheSameRunAgainReplacesIt() {
        QTemporaryDir dir;
        RunStore store(dir.filePath("runs.sqlite3").toStdString());
        RunRecord record = make_record("run");
        const std::int64_t id = store.save(record);
        record.status = RunStatus::Cancelled;
        QCOMPARE(store.save(record), id);
        QCOMPARE(store.list().size(), std::size_t{1});
        QCOMPARE(store.get(id)->status, RunStatus::Cancelled);
    }

    // A store whose AUTOINCREMENT ids are used up says so: SQLite's own word for it is "database or disk is full".
    void usedUpRunIdsAreNotAFullDisk() {
        QTemporaryDir dir;
        const QString path = dir.filePath("runs.sqlite3");
        RunStore store(path.toStdString());
        store.save(make_record("first"));
        QCOMPARE(run_sql(path.toStdString(), "UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'runs'"),
                 std::string());
        try {
            store.save(make_record("second"));
            QFAIL("saved");
        } catch (const DataError& e) {
            const std::string message = e.what();
            QVERIFY2(message.find("run ids are used up") != std::string::npos && message.find("disk") == std::string::npos, e.what());
        }
        QCOMPARE(store.list().size(), std::size_t{1});
    }

    void twoConnectionsSeeEachOther() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("runs.sqlite3").toStdString();
        RunStore cli(path);
        RunStore gui(path);
        cli.save(make_record("from cli"));
        QCOMPARE(gui.list().size(), std::size_t{1});
    }

    // An open store protects itself and its companions from every write of the process (the GUI's export
    // dialogs, a demo's exports, a report), however the path reaches it; other paths are written as before.
    void anOpenStoreIsNeverWrittenOver() {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath("data"));
        const QString path = dir.filePath("data/runs.sqlite3");
        RunStore store(path.toStdString());
        store.save(make_record("kept"));
        QVERIFY(QFile::link(path, dir.filePath("dashboard.png")));
        QVERIFY(QFile::link(path + "-wal", dir.filePath("steps.csv")));
        QVERIFY(QFile::link("data", dir.filePath("folder")));
        for (const QString& out : {dir.filePath("dashboard.png"), dir.filePath("steps.csv"), dir.filePath("folder/runs.sqlite3-shm"),
                                   dir.filePath("data/../data/runs.sqlite3-journal")}) {
            try {
                write_file_atomically(out.toStdString(), "overwritten");
                QFAIL(qPrintable(out + " was written"));
            } catch (const DataError& e) {
                QVERIFY2(std::string(e.what()).find("which writing here would destroy; nothing was written") != std::string::npos, e.what());
            }
            QVERIFY_THROWS_EXCEPTION(ConfigError, check_output_path("--out", out.toStdString()));
        }
        write_file_atomically(dir.filePath("data/runs.csv").toStdString(), "a,b\n");  // beside it: fine
        QCOMPARE(store.list().size(), std::size_t{1});
        QCOMPARE(integrity(path), std::string("ok"));
    }

    void unusableLocationGivesAClearError() {
        QTemporaryDir dir;
        QFile blocker(dir.filePath("file"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        try {
            RunStore store(dir.filePath("file/runs.sqlite3").toStdString());
            QFAIL("opened a store below a regular file");
        } catch (const DataError& e) {
            QVERIFY2(std::string(e.what()).find("run store ") == 0, e.what());
        }
    }

    void defaultPathFollowsXdg() {
        qputenv("TEWB_DATA_DIR", "/tmp/tewb-explicit");
        QCOMPARE(RunStore::default_path().string(), std::string("/tmp/tewb-explicit/runs.sqlite3"));
        qunsetenv("TEWB_DATA_DIR");
        qputenv("XDG_DATA_HOME", "/tmp/xdg-data");
        QCOMPARE(RunStore::default_path().string(), std::string("/tmp/xdg-data/te-workbench/runs.sqlite3"));
        qunsetenv("XDG_DATA_HOME");
        qputenv("HOME", "/home/someone");
        QCOMPARE(RunStore::default_path().string(), std::string("/home/someone/.local/share/te-workbench/runs.sqlite3"));
    }

    void killedWriterLeavesCommittedRunsIntact() {
        QTemporaryDir dir;
        const QString path = dir.filePath("runs.sqlite3");
        QProcess writer;
        writer.start(QStringLiteral(STORE_WRITER_PATH), {path});
        QVERIFY(writer.waitForStarted());
        int saved = 0;
        while (saved < 8 && writer.waitForReadyRead(20000)) {
            saved += QString::fromUtf8(writer.readAllStandardOutput()).count(QStringLiteral("saved"));
        }
        QVERIFY2(saved >= 8, "the writer did not save runs");
        writer.kill();  // SIGKILL, most likely in the middle of the next transaction
        QVERIFY(writer.waitForFinished());

        QCOMPARE(integrity(path), std::string("ok"));
        RunStore store(path.toStdString());
        const std::vector<StoredRun> runs = store.list();
        QVERIFY(static_cast<int>(runs.size()) >= saved);
        for (const StoredRun& run : runs) {
            const std::optional<RunRecord> record = store.get(run.id);
            QVERIFY(record.has_value());
            QCOMPARE(record->steps.size(), std::size_t{2000});
        }
    }

    void killedTrainingRunLeavesEarlierRunsIntact() {
        QTemporaryDir dir;
        const QString path = dir.filePath("runs.sqlite3");
        QProcess first;
        first.start(QStringLiteral(TE_BENCH_PATH),
                    {"--store", path, "run", "--preset", "quick-cpu", "--warmup", "1", "--iters", "3"});
        QVERIFY(first.waitForFinished(120000));
        QCOMPARE(first.exitCode(), 0);

        QProcess longRun;
        longRun.start(QStringLiteral(TE_BENCH_PATH), {"--store", path, "run", "--preset", "quick-cpu", "--iters", "1000000"});
        QVERIFY(longRun.waitForStarted());
        QTest::qWait(1500);
        longRun.kill();
        QVERIFY(longRun.waitForFinished());

        QCOMPARE(integrity(path), std::string("ok"));
        RunStore store(path.toStdString());
        const std::vector<StoredRun> runs = store.list();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(runs[0].status, std::string("finished"));
        QCOMPARE(store.get(runs[0].id)->steps.size(), std::size_t{4});
    }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "tst_run_store.moc"
