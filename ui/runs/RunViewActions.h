#pragma once

#include <functional>
#include <vector>

#include <QString>

class QWidget;

namespace tewb::ui {

class RunCollection;

// What removing runs from the view did, for the status bar: "Removed 3 runs from the view; stored runs stay
// in the history", and how many live runs stayed.
QString removed_from_view_message(int removed, int stillRunning);

// "Remove selected runs from view": removes the runs of `keys` that are not running and says what it did.
QString remove_runs_from_view(RunCollection& runs, const std::vector<int>& keys);

// "Remove all runs from view". Removing from the view deletes nothing from the run store, so it goes ahead
// at once, unless some shown runs are not in the store (opened from a file, or not saved): those could not be
// opened again from the History tab, so a question (object name "removeAllRunsBox") asks first. A live run
// stays until it ends. `done` gets the message to show (not called when the user says no).
void remove_all_runs_from_view(QWidget* parent, RunCollection* runs, std::function<void(const QString&)> done);

}  // namespace tewb::ui
