#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <QColor>
#include <QObject>

#include "core/results/RunRecord.h"

namespace tewb::ui {

// The runs the window shows, in the order they arrived: live runs growing step by step, finished ones,
// runs reopened from the history and records opened from files. Each gets a key and a colour that stay
// the same for the session. Charts, tables and exports all read from here, on the GUI thread.
class RunCollection : public QObject {
    Q_OBJECT

public:
    struct Entry {
        int key = 0;
        RunRecord record;
        QColor colour;
        std::optional<std::int64_t> store_id;  // its number in the run store, once saved
    };

    explicit RunCollection(QObject* parent = nullptr);

    int add(RunRecord record, std::optional<std::int64_t> store_id = std::nullopt);
    void appendStep(int key, const StepMetrics& step);
    void finish(int key, RunRecord record, std::optional<std::int64_t> store_id);
    void remove(int key);
    void clear();

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
    std::vector<Entry> entries_;
    int nextKey_ = 1;
    int nextColour_ = 0;
};

}  // namespace tewb::ui
