// te-workbench: the desktop GUI of TE Workbench. Wiring only; the window lives in ui/.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include <unistd.h>

#include <QApplication>
#include <QCoreApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QSettings>
#include <QSize>
#include <QIcon>
#include <QLibraryInfo>

#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/device/DeviceInfo.h"
#include "core/results/AtomicFile.h"
#include "core/results/RunStore.h"
#include "core/common/StandardStreams.h"
#include "DisplayCheck.h"
#include "ui/report/Report.h"
#include "ui/window/MainWindow.h"

namespace {

int usage_error(const QString& message) {
    std::fprintf(stderr, "te-workbench: %s\nRun te-workbench --help for the options.\n", message.toLocal8Bit().constData());
    return 2;
}

// --version answers before QApplication exists, so it works where no display is (a server, a package check).
bool asks_for_version(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--version" || arg == "-v") return true;
    }
    return false;
}

// What the command line asked for, parsed before the GUI exists.
struct Arguments {
    std::optional<tewb::ui::DemoPlan> plan;
    QString exportDir;
    bool quit = false;
    bool dark = false;
    bool report = false;
    bool helpAll = false;  // Qt's own options too: answered by QApplication, which needs a platform
    std::vector<std::int64_t> reportRuns;
    QString reportOut;
    std::optional<QSize> windowSize;
};

// "1,2,3" → run numbers; nothing with the message in `problem`.
std::optional<std::vector<std::int64_t>> parse_run_ids(const QString& text, QString* problem) {
    std::vector<std::int64_t> ids;
    for (const QString& item : text.split(QLatin1Char(','))) {
        bool ok = false;
        const qlonglong id = item.trimmed().toLongLong(&ok);
        if (!ok || id <= 0) {
            *problem = QStringLiteral("--runs '%1': '%2' is not a run number; allowed: positive numbers from `te-bench history "
                                      "list`, separated by commas").arg(text, item);
            return std::nullopt;
        }
        ids.push_back(id);
    }
    return ids;
}

// Every option, for parsing here and for Qt's --help-all (which QApplication answers, listing Qt's own too).
void describe_options(QCommandLineParser& parser) {
    parser.setApplicationDescription(
        QStringLiteral("Measures what fused kernels and FP8 training buy on your GPU.\n"
                       "Unattended demo: te-workbench --demo quick-cpu|seed|compare --export DIR [--quit]"));
    parser.addHelpOption();
    parser.addVersionOption();  // listed in --help; answered before any application object (asks_for_version)
    const QCommandLineOption demo(QStringLiteral("demo"),
                                  QStringLiteral("Run a preset in the window, then export: quick-cpu, seed, or compare (the "
                                                 "baseline and every variant; seed sizes on a GPU, quick-cpu sizes on the CPU)."),
                                  QStringLiteral("PLAN"));
    const QCommandLineOption exportDir(QStringLiteral("export"),
                                       QStringLiteral("With --demo: write dashboard.png, each chart's PNG, steps.csv, "
                                                      "comparison.csv, runs.json (and fp8.csv for FP8 runs) into DIR."),
                                       QStringLiteral("DIR"));
    const QCommandLineOption quit(QStringLiteral("quit"),
                                  QStringLiteral("With --demo: exit when done, 0 when every run finished, was saved and every "
                                                 "file was written, 1 otherwise."));
    const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Start with the dark theme."));
    const QCommandLineOption report(QStringLiteral("report"),
                                    QStringLiteral("Write a report of stored runs (--runs) to --out FILE.pdf or FILE.html; with "
                                                   "--quit it exits when written (headless: offscreen when there is no display)."));
    const QCommandLineOption runs(QStringLiteral("runs"), QStringLiteral("With --report: run numbers from the run store, the "
                                                                         "first is the baseline, e.g. 3,4,5."),
                                  QStringLiteral("ID,ID,..."));
    const QCommandLineOption outFile(QStringLiteral("out"), QStringLiteral("With --report: the report file (.pdf, .html)."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption windowSize(QStringLiteral("window-size"),
                                        QStringLiteral("Window size in pixels, e.g. 1280x800 (screenshots at a known size)."),
                                        QStringLiteral("WxH"));
    parser.addOptions({demo, exportDir, quit, dark, report, runs, outFile, windowSize});
}

// Parses with a QCoreApplication only: --help, --version and every argument error are answered without a
// display (a QApplication with no display aborts). Returns the exit status when the program ends here.
std::optional<int> parse_arguments(int argc, char** argv, Arguments& out) {
    QCoreApplication core(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("te-workbench"));
    QCoreApplication::setApplicationVersion(QString::fromStdString(tewb::build_info().version));
    QCommandLineParser parser;
    describe_options(parser);
    const QString demo = QStringLiteral("demo"), exportDir = QStringLiteral("export"), quit = QStringLiteral("quit"),
                  dark = QStringLiteral("dark"), report = QStringLiteral("report"), runs = QStringLiteral("runs"),
                  outFile = QStringLiteral("out"), windowSize = QStringLiteral("window-size");
    if (!parser.parse(QCoreApplication::arguments())) return usage_error(parser.errorText());
    if (parser.isSet(QStringLiteral("help-all"))) {
        out.helpAll = true;
        return std::nullopt;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        std::fputs(parser.helpText().toLocal8Bit().constData(), stdout);
        return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    if (!parser.positionalArguments().isEmpty()) {
        return usage_error(QStringLiteral("unexpected argument '%1'; allowed: options only").arg(parser.positionalArguments().front()));
    }
    try {  // every mode keeps its runs in the default store: without a place for it nothing can start
        tewb::RunStore::default_path();
    } catch (const tewb::DataError&) {
        return usage_error(QStringLiteral("no place for the run store: none of TEWB_DATA_DIR, XDG_DATA_HOME and HOME is set; set "
                                          "one of them to the folder te-workbench keeps its runs in"));
    }
    for (const QString& option : {demo, exportDir, runs, outFile, windowSize}) {
        if (parser.isSet(option) && parser.value(option).isEmpty()) {
            return usage_error(QStringLiteral("--%1: empty value; give a value or leave the option out").arg(option));
        }
    }
    if (parser.isSet(windowSize)) {
        const QStringList parts = parser.value(windowSize).split(QLatin1Char('x'));
        bool okW = false;
        bool okH = false;
        const int w = parts.size() == 2 ? parts[0].toInt(&okW) : 0;
        const int h = parts.size() == 2 ? parts[1].toInt(&okH) : 0;
        if (!okW || !okH || w < 640 || h < 480 || w > 7680 || h > 4320) {
            return usage_error(QStringLiteral("--window-size '%1': allowed: WIDTHxHEIGHT from 640x480 to 7680x4320, e.g. 1280x800")
                                   .arg(parser.value(windowSize)));
        }
        out.windowSize = QSize(w, h);
    }
    if (parser.isSet(report)) {
        if (parser.isSet(demo)) return usage_error(QStringLiteral("--report and --demo cannot be combined; run one, then the other"));
        if (!parser.isSet(runs)) return usage_error(QStringLiteral("--report needs --runs ID,ID,... (see `te-bench history list`)"));
        if (!parser.isSet(outFile)) return usage_error(QStringLiteral("--report needs --out FILE.pdf or FILE.html"));
        QString problem;
        const auto ids = parse_run_ids(parser.value(runs), &problem);
        if (!ids) return usage_error(problem);
        out.report = true;
        out.reportRuns = *ids;
        out.reportOut = parser.value(outFile);
        try {  // first: a path into the run store is refused for that, whatever its extension
            tewb::check_output_path("--out", std::filesystem::path(out.reportOut.toStdString()));
        } catch (const tewb::ConfigError& e) {
            return usage_error(QString::fromStdString(e.what()));
        }
        try {
            tewb::ui::report_format(std::filesystem::path(out.reportOut.toStdString()));  // the writer's own rule
        } catch (const tewb::ConfigError& e) {
            return usage_error(QStringLiteral("--out ") + QString::fromStdString(e.what()));
        }
        out.quit = parser.isSet(quit);
        out.dark = parser.isSet(dark);
        return std::nullopt;
    } else if (parser.isSet(runs) || parser.isSet(outFile)) {
        return usage_error(QStringLiteral("--runs and --out go with --report"));
    }
    if (parser.isSet(demo)) {
        const QString value = parser.value(demo);
        if (value == QLatin1String("quick-cpu")) out.plan = tewb::ui::DemoPlan::QuickCpu;
        else if (value == QLatin1String("seed")) out.plan = tewb::ui::DemoPlan::Seed;
        else if (value == QLatin1String("compare")) out.plan = tewb::ui::DemoPlan::Compare;
        else return usage_error(QStringLiteral("--demo '%1': unknown plan; allowed: quick-cpu|seed|compare").arg(value));
        if (!parser.isSet(exportDir)) return usage_error(QStringLiteral("--demo needs --export DIR (where the files go)"));
        out.exportDir = parser.value(exportDir);
        if (!QDir().mkpath(out.exportDir)) {
            return usage_error(QStringLiteral("--export %1: the folder could not be created").arg(out.exportDir));
        }
        try {
            // Every file the demo writes, before it trains: one of them may be a link to the run store.
            for (const QString& name : tewb::ui::MainWindow::exportAllFileNames()) {
                tewb::check_output_path("--export", std::filesystem::path(out.exportDir.toStdString()) / name.toStdString());
            }
        } catch (const tewb::ConfigError& e) {
            return usage_error(QString::fromStdString(e.what()));
        }
    } else if (parser.isSet(exportDir) || parser.isSet(quit)) {
        return usage_error(QStringLiteral("--export and --quit go with --demo quick-cpu|seed|compare or --report"));
    }
    out.quit = parser.isSet(quit);
    out.dark = parser.isSet(dark);
    return std::nullopt;
}

// Where Qt looks for platform plugins: QT_QPA_PLATFORM_PLUGIN_PATH, the platforms folder of each of
// QT_PLUGIN_PATH's folders, and Qt's own.
std::vector<std::string> qt_platform_dirs() {
    std::vector<std::string> dirs;
    if (const QByteArray direct = qgetenv("QT_QPA_PLATFORM_PLUGIN_PATH"); !direct.isEmpty()) {
        dirs.push_back(QString::fromLocal8Bit(direct).toStdString());
    }
    for (const QString& dir : QString::fromLocal8Bit(qgetenv("QT_PLUGIN_PATH")).split(QLatin1Char(':'), Qt::SkipEmptyParts)) {
        dirs.push_back((dir + QStringLiteral("/platforms")).toStdString());
    }
    dirs.push_back((QLibraryInfo::path(QLibraryInfo::PluginsPath) + QStringLiteral("/platforms")).toStdString());
    return dirs;
}

}  // namespace

int main(int argc, char** argv) {
    tewb::occupy_standard_descriptors();  // before Qt opens anything: a closed stdout never becomes its eventfd
    // The window, a report and a demo use the default store: no output path may reach it, checked before any work.
    try {
        tewb::protect_run_store(tewb::RunStore::default_path());
    } catch (const tewb::DataError&) {
        // no place for a store: opening it says so
    }
    if (const std::optional<tewb::StreamOnStore> stream = tewb::standard_stream_on_protected_store()) {
        if (stream->fd == STDOUT_FILENO) {
            std::fprintf(stderr, "te-workbench: standard output writes into %s, which anything printed would destroy; "
                                 "nothing was done; allowed: standard output to anything else\n", stream->what.c_str());
        }
        return 2;
    }
    if (asks_for_version(argc, argv)) {
        std::printf("%s\n", tewb::version_text("te-workbench").c_str());
        return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    Arguments arguments;
    if (const std::optional<int> status = parse_arguments(argc, argv, arguments)) return *status;

    // A report, a demo that quits and --help-all need no window: with no display that answers they run
    // offscreen. Anything else says why there is no window instead of Qt's abort.
    if (const std::optional<std::string> problem = tewb::workbench::display_problem()) {
        const bool headless = arguments.report || (arguments.plan && arguments.quit) || arguments.helpAll;
        if (!headless) {
            std::fprintf(stderr, "te-workbench: %s\n", problem->c_str());
            return 1;
        }
        if (arguments.report && !arguments.quit) {
            std::fprintf(stderr, "te-workbench: %s; the report is written without opening the window\n", problem->c_str());
            arguments.quit = true;
        }
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    // A platform name Qt has no plugin for makes QApplication abort: said here, as a bad setting.
    if (const std::optional<std::string> problem = tewb::workbench::platform_problem(qt_platform_dirs())) {
        std::fprintf(stderr, "te-workbench: %s\n", problem->c_str());
        return 2;
    }
    QApplication app(argc, argv);
    // A platform that shows no window (offscreen, minimal): a report or a demo ends when done, as with --quit;
    // nobody could close a window that waits there.
    const QString platform = QGuiApplication::platformName();
    if ((arguments.report || arguments.plan) && !arguments.quit &&
        (platform == QLatin1String("offscreen") || platform == QLatin1String("minimal"))) {
        std::fprintf(stderr, "te-workbench: the Qt platform '%s' shows no window; te-workbench ends when the %s is done, as with --quit\n",
                     qPrintable(platform), arguments.report ? "report" : "demo");
        arguments.quit = true;
    }
    if (arguments.helpAll) {
        QCommandLineParser parser;
        describe_options(parser);
        parser.process(app);  // prints the help with Qt's own options and exits
    }
    QApplication::setApplicationName(QStringLiteral("te-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("TE Workbench"));
    QApplication::setApplicationVersion(QString::fromStdString(tewb::build_info().version));
    QApplication::setOrganizationName(QStringLiteral("te-workbench"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/te-workbench.svg")));
    QApplication::setDesktopFileName(QStringLiteral("te-workbench"));

    tewb::ui::MainWindow window([] { return tewb::detect_device(); });
    // A demo or a report must look the same whatever the last session left; an ordinary session
    // restores layout, theme and setup, and remembers them when the window closes.
    if (!arguments.plan && !arguments.report) window.rememberIn(std::make_unique<QSettings>());
    if (arguments.dark) window.setDark(true);
    if (arguments.windowSize) {  // a size asked for is kept, even beyond the screen (screenshots at a known size)
        window.setFitToScreen(false);
        window.resize(*arguments.windowSize);
    }
    if (arguments.report) {
        const int status = window.writeReportOfStoredRuns(arguments.reportRuns, arguments.reportOut);
        if (arguments.quit || status != 0) return status;
    }
    window.show();
    if (arguments.plan) window.startDemo(*arguments.plan, arguments.exportDir, arguments.quit);
    return QApplication::exec();
}
