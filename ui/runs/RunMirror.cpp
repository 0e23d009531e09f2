#include "ui/runs/RunMirror.h"

#include <utility>

#include "ui/runs/RunCollection.h"

namespace tewb::ui {

RunMirror::RunMirror(RunCollection* source, RunCollection* target, QObject* parent)
    : QObject(parent), source_(source), target_(target) {
    connect(source_, &RunCollection::runAdded, this, [this](int key) {
        if (enabled_) copy(key);
    });
    connect(source_, &RunCollection::runChanged, this, &RunMirror::follow);
    connect(source_, &RunCollection::runRemoved, this, [this](int key) {
        const auto it = copies_.find(key);
        if (it == copies_.end()) return;
        const int copyKey = it->second;
        copies_.erase(it);
        target_->remove(copyKey);
    });
    connect(target_, &RunCollection::runRemoved, this, [this](int key) {
        for (auto it = copies_.begin(); it != copies_.end(); ++it) {
            if (it->second == key) {
                copies_.erase(it);
                return;
            }
        }
    });
}

void RunMirror::setEnabled(bool on) {
    if (on == enabled_) return;
    enabled_ = on;
    if (on) {
        for (const RunCollection::Entry& e : source_->entries()) copy(e.key);
        return;
    }
    const std::map<int, int> copies = std::exchange(copies_, {});
    for (const auto& [sourceKey, copyKey] : copies) target_->remove(copyKey);
}

int RunMirror::copyOf(int sourceKey) const {
    const auto it = copies_.find(sourceKey);
    return it == copies_.end() ? 0 : it->second;
}

void RunMirror::copy(int sourceKey) {
    const RunCollection::Entry* e = source_->find(sourceKey);
    if (!e || copies_.count(sourceKey) != 0) return;
    copies_[sourceKey] = target_->add(e->record, e->store_id, e->sweep);
}

void RunMirror::follow(int sourceKey) {
    const auto it = copies_.find(sourceKey);
    const RunCollection::Entry* from = source_->find(sourceKey);
    const RunCollection::Entry* to = it == copies_.end() ? nullptr : target_->find(it->second);
    if (!from || !to) return;
    const bool stepsOnly = from->record.status == RunStatus::Running && to->record.status == RunStatus::Running &&
                           from->record.steps.size() >= to->record.steps.size();
    if (!stepsOnly) {
        target_->finish(to->key, from->record, from->store_id);
        return;
    }
    // A live run: pass on its new steps only, as the run controller does.
    const int copyKey = to->key;
    const std::size_t have = to->record.steps.size();
    for (std::size_t i = have; i < from->record.steps.size(); ++i) {
        target_->appendStep(copyKey, from->record.steps[i]);
    }
}

}  // namespace tewb::ui
