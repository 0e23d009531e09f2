#include "ui/runs/RunCollection.h"

#include <algorithm>

#include "core/results/Summary.h"
#include "ui/common/RunColors.h"

namespace tewb::ui {

RunCollection::RunCollection(QObject* parent) : QObject(parent) {}

int RunCollection::add(RunRecord record, std::optional<std::int64_t> store_id) {
    const int key = nextKey_++;
    entries_.push_back(Entry{key, std::move(record), run_colour(nextColour_++), store_id});
    Q_EMIT runAdded(key);
    return key;
}

void RunCollection::appendStep(int key, const StepMetrics& step) {
    const int index = indexOf(key);
    if (index < 0) return;
    entries_[static_cast<std::size_t>(index)].record.steps.push_back(step);
    Q_EMIT runChanged(key);
}

void RunCollection::finish(int key, RunRecord record, std::optional<std::int64_t> store_id) {
    const int index = indexOf(key);
    if (index < 0) return;
    Entry& entry = entries_[static_cast<std::size_t>(index)];
    entry.record = std::move(record);
    entry.store_id = store_id;
    Q_EMIT runChanged(key);
}

void RunCollection::remove(int key) {
    const int index = indexOf(key);
    if (index < 0) return;
    entries_.erase(entries_.begin() + index);
    Q_EMIT runRemoved(key);
}

void RunCollection::clear() {
    while (!entries_.empty()) {
        remove(entries_.back().key);
    }
}

const RunCollection::Entry* RunCollection::find(int key) const {
    const int index = indexOf(key);
    return index < 0 ? nullptr : &entries_[static_cast<std::size_t>(index)];
}

int RunCollection::indexOf(int key) const {
    const auto it = std::find_if(entries_.begin(), entries_.end(), [key](const Entry& e) { return e.key == key; });
    return it == entries_.end() ? -1 : static_cast<int>(it - entries_.begin());
}

std::vector<RunRecord> RunCollection::records() const {
    std::vector<RunRecord> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back(e.record);
    return out;
}

RunSummary RunCollection::summary_of(const RunRecord& record) {
    if (record.status == RunStatus::Running) {
        return summarize(record.steps, record.config, record.execution);
    }
    return record.summary;
}

}  // namespace tewb::ui
