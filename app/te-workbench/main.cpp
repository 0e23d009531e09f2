// te-workbench: the desktop GUI of TE Workbench. Wiring only; the window lives in ui/.
#include <cstdio>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>

#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/device/DeviceInfo.h"
#include "core/results/AtomicFile.h"
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

}  // namespace

int main(int argc, char** argv) {
    if (asks_for_version(argc, argv)) {
        std::printf("%s\n", tewb::version_text("te-workbench").c_str());
        return 0;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("te-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("TE Workbench"));
    QApplication::setApplicationVersion(QString::fromStdString(tewb::build_info().version));
    QApplication::setOrganizationName(QStringLiteral("te-workbench"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/te-workbench.svg")));
    QApplication::setDesktopFileName(QStringLiteral("te-workbench"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Measures what fused kernels and FP8 training buy on your GPU.\n"
                       "Unattended demo: te-workbench --demo quick-cpu|seed|compare --export DIR [--quit]"));
    const QCommandLineOption helpOption = parser.addHelpOption();
    parser.addVersionOption();  // listed in --help; answered before QApplication (asks_for_version)
    const QCommandLineOption demo(QStringLiteral("demo"),
                                  QStringLiteral("Run a preset in the window, then export: quick-cpu, seed, or compare (the "
                                                 "baseline and every variant; seed sizes on a GPU, quick-cpu sizes on the CPU)."),
                                  QStringLiteral("PLAN"));
    const QCommandLineOption exportDir(QStringLiteral("export"),
                                       QStringLiteral("With --demo: write dashboard.png, each chart's PNG, steps.csv, "
                                                      "comparison.csv, runs.json (and fp8.csv for FP8 runs) into DIR."),
                                       QStringLiteral("DIR"));
    const QCommandLineOption quit(QStringLiteral("quit"),
                                  QStringLiteral("With --demo: exit when done, 0 when every run finished and every file was "
                                                 "written, 1 otherwise."));
    const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Start with the dark theme."));
    parser.addOptions({demo, exportDir, quit, dark});
    if (!parser.parse(QApplication::arguments())) return usage_error(parser.errorText());
    if (parser.isSet(helpOption)) {
        std::fputs(parser.helpText().toLocal8Bit().constData(), stdout);
        return 0;
    }
    if (!parser.positionalArguments().isEmpty()) {
        return usage_error(QStringLiteral("unexpected argument '%1'; allowed: options only").arg(parser.positionalArguments().front()));
    }

    std::optional<tewb::ui::DemoPlan> plan;
    if (parser.isSet(demo)) {
        const QString value = parser.value(demo);
        if (value == QLatin1String("quick-cpu")) plan = tewb::ui::DemoPlan::QuickCpu;
        else if (value == QLatin1String("seed")) plan = tewb::ui::DemoPlan::Seed;
        else if (value == QLatin1String("compare")) plan = tewb::ui::DemoPlan::Compare;
        else return usage_error(QStringLiteral("--demo '%1': unknown plan; allowed: quick-cpu|seed|compare").arg(value));
        if (!parser.isSet(exportDir)) return usage_error(QStringLiteral("--demo needs --export DIR (where the files go)"));
        const QString dir = parser.value(exportDir);
        if (!QDir().mkpath(dir)) return usage_error(QStringLiteral("--export %1: the folder could not be created").arg(dir));
        try {
            tewb::check_output_path("--export", std::filesystem::path(dir.toStdString()) / "dashboard.png");
        } catch (const tewb::ConfigError& e) {
            return usage_error(QString::fromStdString(e.what()));
        }
    } else if (parser.isSet(exportDir) || parser.isSet(quit)) {
        return usage_error(QStringLiteral("--export and --quit go with --demo quick-cpu|seed|compare"));
    }

    tewb::ui::MainWindow window(&tewb::detect_device);
    if (parser.isSet(dark)) window.setDark(true);
    window.show();
    if (plan) window.startDemo(*plan, parser.value(exportDir), parser.isSet(quit));
    return QApplication::exec();
}
