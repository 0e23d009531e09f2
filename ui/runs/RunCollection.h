#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <QColor>
#include <QObject>

#include "core/results/RunRecord.h"

namespace tewb::ui {

// The runs the window shows, in the order they arrived: live runs growing step by step, finished ones,
// runs reopened from the history and records opened from files. Each gets a key and a colour (with its
// line style, RunColors.h) that stay the same while it is shown; a new run takes a palette slot no shown run
// has, so up to kDistinctRunStyles runs are told apart. Charts, tables and exports all read from here, on
// the GUI thread. The Sweep tab's runs live in a collection of their own (RunController::sweepRuns).
class RunCollection : public QObject {
    Q_OBJECT

public:
    struct Entry {
        int key = 0;
        RunRecord record;
        QColor colour;
        std::optional<std::int64_t> store_id;  // its number in the run store, once saved
        QString sweep;  // the sweep it belongs to ("Sweep 1"), empty for other runs
    };

    explicit RunCollection(QObject* parent = nullptr);

    int add(RunRecord record, std::optional<std::int64_t> store_id = std::nullopt, const QString& sweep = {});
    void appendStep(int key, const StepMetrics& step);
    void finish(int key, RunRecord record, std::optional<std::int64_t> store_id);
    void remove(int key);
    void clear();
    // Removes the runs of `keys` that are not running (a live run stays until it ends); returns how many went.
    // Stored records stay in the run store: this is the view.
    int removeFromView(const std::vector<int>& keys);
    std::vector<int> keys() const;
    // The keys of the last `count` runs added (those just opened).
    std::vector<int> lastKeys(std::size_t count) const;

    // The baseline a user expects among `keys` (in that order): the first plain LibTorch run, else the first
    // run of any backend, never one whose FP8 GEMMs were emulated (its ratio is the emulation's cost).
    std::optional<int> sensibleBaseline(const std::vector<int>& keys) const;
    // After runs were opened (the last `opened` added): the baseline to switch to, or none to keep `current`.
    // A choice among older runs stays unless it is an emulated run; one among the opened (the comparison
    // takes the first run that arrives) gives way to the sensible one.
    std::optional<int> baselineAfterOpening(std::optional<int> current, std::size_t opened) const;

    const std::vector<Entry>& entries() const { return entries_; }
    const Entry* find(int key) const;
    int indexOf(int key) const;
    bool empty() const { return entries_.empty(); }
    // Records in display order, for core's exporters and comparisons.
    std::vector<RunRecord> records() const;
    // The summary: core's, or for a run still going, core's statistics over the steps so far.
    static RunSummary summary_of(const RunRecord& record);

Q_SIGNALS:
    void runAdded(int key);
    void runChanged(int key);
    void runRemoved(int key);

private:
    int freeStyleSlot();

    std::vector<Entry> entries_;
    int nextKey_ = 1;
    int nextColour_ = 0;
};

}  // namespace tewb::ui
