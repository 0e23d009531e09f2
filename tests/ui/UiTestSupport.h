#pragma once

#include <cctype>
#include <string>
#include <vector>

#include <QColor>
#include <QImage>

#include "core/device/DeviceInfo.h"
#include "core/results/RunRecord.h"

namespace tewb::test {

// Devices the GUI is tested against without the hardware.
inline DeviceInfo no_gpu() {
    DeviceInfo d;
    d.gpu_error = "no CUDA-capable device is detected (cudaErrorNoDevice)";
    d.cpu_model = "Test CPU";
    d.cpu_threads = 2;
    d.libtorch_version = "2.11.0";
    return d;
}

inline DeviceInfo gpu(int major, int minor, const std::string& name) {
    DeviceInfo d = no_gpu();
    d.gpu_error.clear();
    d.gpu_name = name;
    d.compute_capability = ComputeCapability{major, minor};
    d.sm_count = 108;
    d.gpu_count = 1;
    d.memory_total_bytes = 80ull << 30;
    d.memory_free_bytes = 79ull << 30;
    return d;
}

// A finished record with `steps` steps (the first `warmup` of them warm-up) and a falling loss.
inline RunRecord synthetic_record(const std::string& name, int steps, int warmup, double ms) {
    RunRecord r;
    // An id and a time a record written by te-bench would have, so that it passes the import rule.
    r.id = name + "-id";
    for (char& c : r.id) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
    }
    r.created_at = "2026-12-01T12:00:00Z";
    r.config.name = name;
    r.config.warmup = warmup;
    r.config.iters = steps - warmup;
    r.status = RunStatus::Finished;
    for (int i = 1; i <= steps; ++i) {
        StepMetrics s;
        s.step = i;
        s.phase = i <= warmup ? Phase::Warmup : Phase::Timed;
        s.loss = 5.0 / i;
        s.step_ms = ms + (i % 3);
        s.mem_bytes = static_cast<std::uint64_t>(100 + i) << 20;
        s.elapsed_ms = i * ms;
        r.steps.push_back(s);
    }
    r.summary.timed_steps = steps - warmup;
    r.summary.mean_ms = ms + 1;
    r.summary.median_ms = ms + 1;
    r.summary.p90_ms = ms + 2;
    r.summary.peak_mem_bytes = static_cast<std::uint64_t>(100 + steps) << 20;
    r.summary.final_loss = 5.0 / steps;
    return r;
}

// A synthetic record of one kind of run: backend, precision, and whether its FP8 GEMMs were emulated.
inline RunRecord synthetic_record_of(const std::string& name, Backend backend, Precision precision, bool fp8_emulated,
                                     int steps, int warmup, double ms) {
    RunRecord r = synthetic_record(name, steps, warmup, ms);
    r.config.backend = backend;
    r.config.precision = precision;
    r.execution.fp8_emulated = fp8_emulated;
    return r;
}

// Pixels close to `colour` (run colours are drawn anti-aliased).
inline int count_near(const QImage& image, const QColor& colour, int tolerance = 40) {
    int count = 0;
    for (int y = 0; y < image.height(); y += 2) {
        for (int x = 0; x < image.width(); x += 2) {
            const QColor c = image.pixelColor(x, y);
            if (std::abs(c.red() - colour.red()) + std::abs(c.green() - colour.green()) +
                    std::abs(c.blue() - colour.blue()) < tolerance) {
                ++count;
            }
        }
    }
    return count;
}

inline int distinct_colours(const QImage& image) {
    std::vector<QRgb> seen;
    for (int y = 0; y < image.height(); y += 7) {
        for (int x = 0; x < image.width(); x += 7) {
            const QRgb c = image.pixel(x, y);
            if (std::find(seen.begin(), seen.end(), c) == seen.end()) seen.push_back(c);
            if (seen.size() > 64) return static_cast<int>(seen.size());
        }
    }
    return static_cast<int>(seen.size());
}

}  // namespace tewb::test
