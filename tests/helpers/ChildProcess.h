// te-bench and te-workbench run by the suites as users run them: a separate process with its own environment,
// a limit on waiting, and what it printed. One helper for every suite that starts them.
#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace tewb::test {

struct ChildResult {
    int exit_code = -1;  // -1: killed by a signal; -2: did not end within the limit (then killed)
    QString out;
    QString err;
    qint64 elapsed_ms = 0;
};

struct ChildOptions {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    QString stdout_file;  // standard output goes to this file instead of ChildResult::out
    QString working_dir;
    int timeout_ms = 300000;  // a limit on waiting, far above any machine's speed: never a bound under test
    // Only for commands that can run twice with the same effect (a report, a read): see run_child.
    bool rerun_if_leak_checker_crashed = false;
};

// LeakSanitizer's own stop-the-world tracer crashing at the process's exit (google/sanitizers#1353: rare, on
// loaded machines), after the program has done its work. It replaces the program's exit status with 1, and it
// is not a leak: a leak is reported as "detected memory leaks".
inline bool leak_checker_crashed(const QString& err) {
    return err.contains(QStringLiteral("LeakSanitizer has encountered a fatal error")) &&
           !err.contains(QStringLiteral("LeakSanitizer: detected memory leaks"));
}

inline ChildResult run_child_once(const QString& program, const QStringList& args, const ChildOptions& options) {
    QProcess process;
    process.setProcessEnvironment(options.env);
    if (!options.stdout_file.isEmpty()) process.setStandardOutputFile(options.stdout_file);
    if (!options.working_dir.isEmpty()) process.setWorkingDirectory(options.working_dir);
    QElapsedTimer clock;
    clock.start();
    process.start(program, args);
    if (!process.waitForFinished(options.timeout_ms)) {
        process.kill();
        process.waitForFinished();
        return {-2, QString::fromUtf8(process.readAllStandardOutput()),
                QString::fromUtf8(process.readAllStandardError()) +
                    QStringLiteral("\n[test] timed out after %1 ms and was killed").arg(options.timeout_ms),
                clock.elapsed()};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError()),
            clock.elapsed()};
}

// Runs `program` once. Under the sanitizers a leak checker that crashed hides the program's own exit status;
// a command that may run twice is then run once more (said in the test's log), any other gets the crash as its
// result, so the test fails with LeakSanitizer's message in front of it.
inline ChildResult run_child(const QString& program, const QStringList& args, const ChildOptions& options = {}) {
    ChildResult result = run_child_once(program, args, options);
    if (options.rerun_if_leak_checker_crashed && result.exit_code != 0 && leak_checker_crashed(result.err)) {
        qWarning("LeakSanitizer's tracer crashed at the exit of `%s %s`; running it once more", qPrintable(program),
                 qPrintable(args.join(QLatin1Char(' '))));
        result = run_child_once(program, args, options);
    }
    return result;
}

}  // namespace tewb::test
