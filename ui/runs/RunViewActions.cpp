#include "ui/runs/RunViewActions.h"

#include <QAbstractButton>
#include <QCoreApplication>
#include <QMessageBox>
#include <QObject>
#include <QPointer>

#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("RunViewActions", text);
}

}  // namespace

QString removed_from_view_message(int removed, int stillRunning) {
    QString message = removed == 0   ? tr("No run removed from the view")
                      : removed == 1 ? tr("Removed 1 run from the view; stored runs stay in the history")
                                     : tr("Removed %1 runs from the view; stored runs stay in the history").arg(removed);
    if (stillRunning == 1) message += tr(" (1 running run stays until it ends)");
    if (stillRunning > 1) message += tr(" (%1 running runs stay until they end)").arg(stillRunning);
    return message;
}

QString remove_runs_from_view(RunCollection& runs, const std::vector<int>& keys) {
    const int removed = runs.removeFromView(keys);
    return removed_from_view_message(removed, static_cast<int>(keys.size()) - removed);
}

void remove_all_runs_from_view(QWidget* parent, RunCollection* runs, std::function<void(const QString&)> done) {
    int notStored = 0;
    for (const RunCollection::Entry& e : runs->entries()) {
        if (!e.store_id && e.record.status != RunStatus::Running) ++notStored;
    }
    if (notStored == 0) {
        done(remove_runs_from_view(*runs, runs->keys()));
        return;
    }
    auto* box = new QMessageBox(QMessageBox::Question, tr("Remove all runs from view"),
                                tr("%1 of the runs shown %2 not in the run store (opened from a file, or not saved): "
                                   "once removed they can only be opened again from their file. Runs in the store stay "
                                   "in the history. Remove all runs from the view?")
                                    .arg(notStored)
                                    .arg(notStored == 1 ? tr("is") : tr("are")),
                                QMessageBox::Yes | QMessageBox::No, parent);
    box->setObjectName(QStringLiteral("removeAllRunsBox"));
    box->setDefaultButton(QMessageBox::No);
    box->setAttribute(Qt::WA_DeleteOnClose);
    QPointer<RunCollection> target(runs);
    QObject::connect(box, &QMessageBox::buttonClicked, box, [box, target, done = std::move(done)](QAbstractButton* clicked) {
        if (box->standardButton(clicked) == QMessageBox::Yes && target) done(remove_runs_from_view(*target, target->keys()));
    });
    box->open();
}

}  // namespace tewb::ui
