// te-workbench: the desktop GUI of TE Workbench. Wiring only; the window lives in ui/.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <QApplication>
#include <QCoreApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>

#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/device/DeviceInfo.h"
#include "core/results/AtomicFile.h"
#include "core/results/RunStore.h"
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

// Qt aborts (with a core dump) when its platform plugin finds no display; say why instead.
const char* display_problem() {
    const auto set = [](const char* name) {
        const char* value = std::getenv(name);
        return value != nullptr && *value != '\0';
    };
    if (set("QT_QPA_PLATFORM") || set("DISPLAY") || set("WAYLAND_DISPLAY")) return nullptr;
    return "no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is set); run it in a desktop session, "
           "or headless with QT_QPA_PLATFORM=offscreen (e.g. for --demo), or use te-bench on a server";
}

// What the command line asked for, parsed before the GUI exists.
struct Arguments {
    std::optional<tewb::ui::DemoPlan> plan;
    QString exportDir;
    bool quit = false;
    bool dark = false;
};

// Parses with a QCoreApplication only: --help, --version and every argument error are answered without a
// display (a QApplication with no display aborts). Returns the exit status when the program ends here.
std::optional<int> parse_arguments(int argc, char** argv, Arguments& out) {
    QCoreApplication core(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("te-workbench"));
    QCoreApplication::setApplicationVersion(QString::fromStdString(tewb::build_info().version));
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Measures what fused kernels and FP8 training buy on your GPU.\n"
                       "Unattended demo: te-workbench --demo quick-cpu|seed|compare --export DIR [--quit]"));
    const QCommandLineOption helpOption = parser.addHelpOption();
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
    parser.addOptions({demo, exportDir, quit, dark});
    if (!parser.parse(QCoreApplication::arguments())) return usage_error(parser.errorText());
    if (parser.isSet(helpOption)) {
        std::fputs(parser.helpText().toLocal8Bit().constData(), stdout);
        return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    if (!parser.positionalArguments().isEmpty()) {
        return usage_error(QStringLiteral("unexpected argument '%1'; allowed: options only").arg(parser.positionalArguments().front()));
    }
    for (const QCommandLineOption* option : {&demo, &exportDir}) {
        if (parser.isSet(*option) && parser.value(*option).isEmpty()) {
            return usage_error(QStringLiteral("--%1: empty value; give a value or leave the option out").arg(option->names().front()));
        }
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
            tewb::check_output_path("--export", std::filesystem::path(out.exportDir.toStdString()) / "dashboard.png");
        } catch (const tewb::ConfigError& e) {
            return usage_error(QString::fromStdString(e.what()));
        }
    } else if (parser.isSet(exportDir) || parser.isSet(quit)) {
        return usage_error(QStringLiteral("--export and --quit go with --demo quick-cpu|seed|compare"));
    }
    out.quit = parser.isSet(quit);
    out.dark = parser.isSet(dark);
    try {
        tewb::RunStore::default_path();  // every run is saved: there must be a place for the store
    } catch (const tewb::DataError& e) {
        return usage_error(QString::fromStdString(e.what()));
    }
    return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
    if (asks_for_version(argc, argv)) {
        std::printf("%s\n", tewb::version_text("te-workbench").c_str());
        return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    Arguments arguments;
    if (const std::optional<int> status = parse_arguments(argc, argv, arguments)) return *status;

    if (const char* problem = display_problem()) {
        std::fprintf(stderr, "te-workbench: %s\n", problem);
        return 1;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("te-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("TE Workbench"));
    QApplication::setApplicationVersion(QString::fromStdString(tewb::build_info().version));
    QApplication::setOrganizationName(QStringLiteral("te-workbench"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/te-workbench.svg")));
    QApplication::setDesktopFileName(QStringLiteral("te-workbench"));

    tewb::ui::MainWindow window(&tewb::detect_device);
    if (arguments.dark) window.setDark(true);
    window.show();
    if (arguments.plan) window.startDemo(*arguments.plan, arguments.exportDir, arguments.quit);
    return QApplication::exec();
}
