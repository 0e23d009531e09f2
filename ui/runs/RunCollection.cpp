#include "ui/runs/RunCollection.h"

#include <algorithm>

#include "core/results/AtomicFile.h"
#include "core/results/Summary.h"
#include "ui/common/RunColors.h"

namespace tewb::ui {

RunCollection::RunCollection(QObject* parent) : QObject(parent) {}

int RunCollection::add(RunRecord record, std::optional<std::int64_t> store_id, const QString& sweep) {
    if (record.config.data.from_file()) protect_training_data(record.config.data.path);  // no export may write over it
    const int key = nextKey_++;
    entries_.push_back(Entry{key, std::move(record), run_colour(freeStyleSlot()), store_id, sweep});
    Q_EMIT runAdded(key);
    return key;
}

// The first palette slot no shown run has, so that runs opened after others were removed start again with the
// palette's first, most distinct colours (blue, orange, red) instead of where the count had got to (its brown
// and grey); when all are taken, the next in turn.
int RunCollection::freeStyleSlot() {
    for (int slot = 0; slot < kDistinctRunStyles; ++slot) {
        const QColor colour = run_colour(slot);
        const bool taken = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.colour == colour; });
        if (!taken) return slot;
    }
    return nextColour_++ % kDistinctRunStyles;
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

int RunCollection::removeFromView(const std::vector<int>& keys) {
    int removed = 0;
    for (const int key : keys) {
        const Entry* e = find(key);
        if (!e || e->record.status == RunStatus::Running) continue;
        remove(key);
        ++removed;
    }
    return removed;
}

std::vector<int> RunCollection::keys() const {
    std::vector<int> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back(e.key);
    return out;
}

std::vector<int> RunCollection::lastKeys(std::size_t count) const {
    const std::vector<int> all = keys();
    return std::vector<int>(all.end() - static_cast<std::ptrdiff_t>(std::min(count, all.size())), all.end());
}

std::optional<int> RunCollection::sensibleBaseline(const std::vector<int>& keys) const {
    std::optional<int> anyBackend;
    for (const int key : keys) {
        const Entry* e = find(key);
        if (!e || e->record.execution.fp8_emulated) continue;
        if (e->record.config.backend == Backend::Torch) return key;
        if (!anyBackend) anyBackend = key;
    }
    return anyBackend;
}

std::optional<int> RunCollection::baselineAfterOpening(std::optional<int> current, std::size_t opened) const {
    const std::vector<int> fresh = lastKeys(opened);
    const Entry* chosen = current ? find(*current) : nullptr;
    const bool amongFresh = chosen && std::find(fresh.begin(), fresh.end(), *current) != fresh.end();
    if (chosen && !amongFresh && !chosen->record.execution.fp8_emulated) return std::nullopt;
    const std::optional<int> pick = sensibleBaseline(fresh);
    return pick == current ? std::nullopt : pick;
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
