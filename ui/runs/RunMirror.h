#pragma once

#include <map>

#include <QObject>

namespace tewb::ui {

class RunCollection;

// Shows the runs of one collection in another while switched on: the Sweep tab's runs on the dashboard
// ("Show sweep runs on the dashboard"). Each run of `source` gets a copy in `target` (with the target's own
// colour) that follows it step by step; switching off removes the copies again. A copy the user removes
// from the target's view stays removed until the mirror is switched on again. Nothing is stored or deleted:
// both are views of runs that are in the run store.
class RunMirror : public QObject {
    Q_OBJECT

public:
    RunMirror(RunCollection* source, RunCollection* target, QObject* parent = nullptr);

    void setEnabled(bool on);
    bool isEnabled() const { return enabled_; }
    // The copy of `sourceKey` in the target, or 0.
    int copyOf(int sourceKey) const;

private:
    void copy(int sourceKey);
    void follow(int sourceKey);

    RunCollection* source_;
    RunCollection* target_;
    bool enabled_ = false;
    std::map<int, int> copies_;  // source key -> target key
};

}  // namespace tewb::ui
