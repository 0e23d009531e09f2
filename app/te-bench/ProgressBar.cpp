#include "ProgressBar.h"

#include <cstdio>

namespace tewb::cli {

void ProgressBar::start(const RunRecord& header) {
    total_ = header.config.total_steps();
    label_ = header.config.name;
    started_ = std::chrono::steady_clock::now();
    if (enabled_) {
        std::fprintf(stderr, "%s: %d warm-up + %d timed steps on %s\n", label_.c_str(), header.config.warmup, header.config.iters,
                     header.execution.device.c_str());
    }
}

void ProgressBar::step(const StepMetrics& m) {
    if (!enabled_ || total_ <= 0) {
        return;
    }
    constexpr int kWidth = 30;
    const int filled = m.step * kWidth / total_;
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const double eta_s = m.step > 0 ? elapsed_s / m.step * (total_ - m.step) : 0.0;
    std::string bar(static_cast<std::size_t>(filled), '=');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r[%s] %d/%d %-6s loss %.4f  %.1f ms/step  ETA %.0fs   ", bar.c_str(), m.step, total_,
                 std::string(to_string(m.phase)).c_str(), m.loss, m.step_ms, eta_s);
    std::fflush(stderr);
}

void ProgressBar::finish() {
    if (enabled_) {
        std::fprintf(stderr, "\n");
    }
}

}  // namespace tewb::cli
