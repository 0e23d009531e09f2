#include "core/train/StepProfiler.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/results/AtomicFile.h"
#include "core/results/KernelProfile.h"

namespace tewb {

namespace {

namespace kineto = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

std::set<ActivityType> activities(bool cuda) {
    std::set<ActivityType> out{ActivityType::CPU};
    if (cuda) out.insert(ActivityType::CUDA);
    return out;
}

constexpr const char* kEngineRange = "autograd::engine::evaluate_function: ";
constexpr const char* kEngineRow = "autograd engine (its own time between backward operators)";

// The autograd engine's ranges ("autograd::engine::evaluate_function: ...") and the backward nodes inside them
// enclose the operators a backward runs: on the CPU the table lists those operators, and the engine's own time
// around them in one row (KernelProfile.h, wrappers); a node's range adds nothing the engine's does not hold.
bool operator_event(const kineto::KinetoEvent& e) {
    const auto scope = static_cast<at::RecordScope>(e.scope());
    if (scope != at::RecordScope::FUNCTION && scope != at::RecordScope::USER_SCOPE) return false;
    return e.name().rfind("autograd::", 0) != 0 || e.name().rfind(kEngineRange, 0) == 0;
}

std::string read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError("kernel trace: the profiler wrote no file");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Kineto writes its progress ("STAGE: ... Completed Stage: Warm Up") and, in a CUDA build on a machine
// without a GPU, an error about the missing device to stderr, at a level read when LibTorch loads. Those
// lines would land among te-bench's tables and in the GUI's terminal: while the profiler starts and stops,
// stderr goes to a temporary file; what Kineto said is kept for the message when a trace comes out empty.
class StderrCapture {
public:
    StderrCapture() {
        std::fflush(stderr);
        file_ = std::tmpfile();
        if (file_ == nullptr) return;
        saved_ = ::dup(STDERR_FILENO);
        if (saved_ >= 0 && ::dup2(::fileno(file_), STDERR_FILENO) < 0) {
            ::close(saved_);
            saved_ = -1;
        }
    }
    ~StderrCapture() {
        restore();
        if (file_ != nullptr) std::fclose(file_);
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    // Restores stderr and returns Kineto's lines that start with "ERROR" or "WARNING".
    std::string finish() {
        restore();
        std::string kept;
        if (file_ == nullptr) return kept;
        std::rewind(file_);
        char line[1024];
        while (std::fgets(line, sizeof line, file_) != nullptr) {
            const std::string text(line);
            if (text.rfind("ERROR", 0) == 0 || text.rfind("WARNING", 0) == 0) kept += text;
        }
        return kept;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, STDERR_FILENO);
        ::close(saved_);
        saved_ = -1;
    }

    std::FILE* file_ = nullptr;
    int saved_ = -1;
};

}  // namespace

StepProfiler::StepProfiler(bool cuda) : cuda_(cuda) {
    const ProfilerConfig config(ProfilerState::KINETO);
    StderrCapture quiet;
    try {
        kineto::prepareProfiler(config, activities(cuda));
        kineto::enableProfiler(config, activities(cuda));
    } catch (const std::exception& e) {
        throw DataError(std::string("kernel trace: LibTorch's profiler did not start: ") + e.what());
    }
    messages_ = quiet.finish();
    active_ = true;
}

StepProfiler::~StepProfiler() {
    if (!active_) return;
    StderrCapture quiet;
    try {
        kineto::disableProfiler();
    } catch (...) {
        // Leaving on the step's own error, which is the one to report.
    }
}

KernelProfile StepProfiler::finish(int step, double step_ms, const std::string& trace_path) {
    active_ = false;
    // Kineto writes the file itself; it goes to a private temporary file first so the output keeps the rule
    // every output follows (AtomicFile.h: symlinks followed, the old file replaced whole or not at all).
    const std::filesystem::path scratch =
        std::filesystem::temp_directory_path() / ("tewb-trace-" + std::to_string(::getpid()) + ".json");
    std::unique_ptr<kineto::ProfilerResult> result;
    std::string trace;
    {
        StderrCapture quiet;
        try {
            result = kineto::disableProfiler();
            if (result) {
                result->save(scratch.string());
                trace = read_all(scratch);
            }
        } catch (const std::exception& e) {
            std::error_code ignored;
            std::filesystem::remove(scratch, ignored);
            throw DataError(std::string("kernel trace: ") + e.what());
        }
        messages_ += quiet.finish();
    }
    std::error_code ignored;
    std::filesystem::remove(scratch, ignored);
    if (!result) throw DataError("kernel trace: LibTorch's profiler returned no result");
    if (trace.find("\"traceEvents\"") == std::string::npos) throw DataError("kernel trace: the profiler wrote no events");

    std::vector<ProfiledEvent> events;
    std::vector<ProfiledEvent> op_ranges;
    std::vector<ProfiledOp> ops;
    for (const kineto::KinetoEvent& e : result->events()) {
        if (cuda_) {
            // Kernels, copies and sets on the GPU: what occupies its streams. The operators' ranges projected onto
            // the GPU timeline are kept apart; the CPU operators say which operator launched what.
            if (e.deviceType() == c10::DeviceType::CPU) {
                if (operator_event(e)) {
                    ops.push_back({e.name(), e.startThreadId(), e.startNs(), e.endNs(), e.correlationId(),
                                   e.name().rfind(kEngineRange, 0) == 0});
                }
                continue;
            }
            if (e.deviceType() != c10::DeviceType::CUDA) continue;
            ProfiledEvent event{printable_text(e.name()), static_cast<std::uint64_t>(e.deviceResourceId()), e.startNs(), e.endNs()};
            event.correlation = e.linkedCorrelationId();
            switch (static_cast<libkineto::ActivityType>(e.activityType())) {
                case libkineto::ActivityType::GPU_USER_ANNOTATION: op_ranges.push_back(std::move(event)); continue;
                case libkineto::ActivityType::GPU_MEMSET: event.work = LaunchWork::Memset; break;
                case libkineto::ActivityType::GPU_MEMCPY: event.work = LaunchWork::Copy; break;
                case libkineto::ActivityType::CONCURRENT_KERNEL: event.work = LaunchWork::Kernel; break;
                default: continue;  // synchronizations and events: nothing the GPU runs
            }
            events.push_back(std::move(event));
        } else {
            if (e.deviceType() != c10::DeviceType::CPU || !operator_event(e)) continue;
            events.push_back({printable_text(e.name()), e.startThreadId(), e.startNs(), e.endNs(),
                              e.name().rfind(kEngineRange, 0) == 0});
        }
    }
    if (events.empty()) {
        throw DataError(std::string("kernel trace: the profiler saw no ") + (cuda_ ? "CUDA kernels (CUPTI)" : "operators") +
                        (messages_.empty() ? std::string() : "; it said: " + messages_));
    }

    KernelProfile profile;
    profile.step = step;
    profile.step_ms = step_ms;
    profile.trace_path = trace_path;
    profile.source = cuda_ ? "CUDA kernels, copies and sets (CUPTI)"
                           : "CPU operators, outermost (LibTorch's and this project's host kernels), and the autograd "
                             "engine's own time";
    if (cuda_) {
        profile.launches_by_op = launches_by_op(std::move(ops), events);
        profile.kernels = every_event_times(events);
        profile.op_ranges = every_event_times(op_ranges);
    } else {
        profile.kernels = outermost_times(std::move(events), kEngineRow);
    }
    write_file_atomically(trace_path, trace);
    return profile;
}

}  // namespace tewb
