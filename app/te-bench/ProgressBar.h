#pragma once

#include <chrono>
#include <string>

#include "core/results/RunRecord.h"

namespace tewb::cli {

// One self-overwriting line on stderr while a run trains; silent when stderr is not a terminal.
class ProgressBar {
public:
    explicit ProgressBar(bool enabled) : enabled_(enabled) {}

    void start(const RunRecord& header);
    void step(const StepMetrics& metrics);
    void finish();

private:
    bool enabled_;
    int total_ = 0;
    std::string label_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace tewb::cli
