#include "ui/window/MainWindow.h"

// The scripted demo (`te-workbench --demo`): queue a plan, run it, export every file, say how it went.

#include <cstdio>

#include <QCoreApplication>

#include "core/common/StandardStreams.h"
#include "core/config/RunConfig.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/runs/RunCollection.h"
#include "ui/runs/RunController.h"

namespace tewb::ui {

void MainWindow::startDemo(DemoPlan plan, const QString& directory, bool quit) {
    demo_ = Demo{plan, directory, quit, false, {}};
    if (device_) beginDemo();
}

void MainWindow::beginDemo() {
    if (!demo_ || demo_->started) return;
    demo_->started = true;
    std::optional<QString> problem;
    switch (demo_->plan) {
        case DemoPlan::QuickCpu: problem = controller_->enqueue(make_preset(Preset::QuickCpu)); break;
        case DemoPlan::Seed: problem = controller_->enqueue(make_preset(Preset::Seed)); break;
        case DemoPlan::Compare:
            // The seed's shape where a GPU runs it in seconds; the quick CPU shape otherwise.
            problem = controller_->enqueueComparison(make_preset(device_->has_gpu() ? Preset::Seed : Preset::QuickCpu));
            break;
    }
    if (problem) {
        demo_->started = false;
        Q_EMIT demoFinished(1, *problem);
        if (demo_->quit) QCoreApplication::exit(1);
        return;
    }
    controller_->start();
}

void MainWindow::finishDemo() {
    // Let the last queued chart refresh happen so the window shows what the files show.
    charts_->markDirty();
    charts_->refreshIfDirty();
    QString message;
    int code = 0;
    QStringList failed;
    for (const RunQueueModel::Item& item : controller_->queue()->items()) {
        if (item.state == RunQueueModel::State::Failed || item.state == RunQueueModel::State::Cancelled) {
            failed << QStringLiteral("%1: %2").arg(QString::fromStdString(item.config.name), item.message);
        }
    }
    QString exportError;
    if (!exportAll(demo_->directory, &exportError)) {
        code = 1;
        message = tr("export failed: %1").arg(exportError);
    } else if (!demo_->notSaved.isEmpty()) {
        code = 1;
        message = tr("%n run(s) not saved: %1", nullptr, static_cast<int>(demo_->notSaved.size()))
                      .arg(demo_->notSaved.join(QStringLiteral("; ")));
    } else if (!failed.isEmpty()) {
        code = 1;
        message = tr("%n run(s) did not finish: %1", nullptr, static_cast<int>(failed.size())).arg(failed.join(QStringLiteral("; ")));
    } else {
        message = tr("demo done: %n run(s), files in %1", nullptr, static_cast<int>(runs_->entries().size()))
                      .arg(demo_->directory);
    }
    std::fprintf(code == 0 ? stdout : stderr, "te-workbench: %s\n", message.toLocal8Bit().constData());
    if (const std::string problem = code == 0 ? standard_output_problem() : std::string(); !problem.empty()) {
        code = 1;  // whoever started the demo cannot read that it succeeded
        message = tr("standard output: write failed (%1)").arg(QString::fromStdString(problem));
        std::fprintf(stderr, "te-workbench: %s\n", message.toLocal8Bit().constData());
    }
    std::fflush(nullptr);
    const bool quit = demo_->quit;
    demo_.reset();
    Q_EMIT demoFinished(code, message);
    if (quit) QCoreApplication::exit(code);
}

}  // namespace tewb::ui
