#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/results/RunRecord.h"

// The "top kernels" table of a profiled step (RunRecord.h, KernelProfile): made from the profiler's events,
// shown as text, written as CSV. Torch-free: core/train/StepProfiler reads the events out of LibTorch.

namespace tewb {

// One event of the trace: a CPU operator or a GPU kernel, on a thread (CPU) or a stream (GPU).
struct ProfiledEvent {
    std::string name;
    std::uint64_t lane = 0;  // the thread or stream it ran on
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    // A range around operators that is not one itself (the autograd engine's evaluate_function): the operators
    // inside it are counted, and its own time outside them goes to one row of its own (outermost_times).
    bool wrapper = false;
    LaunchWork work = LaunchWork::Kernel;  // GPU events: a kernel, a memset or a copy
    std::uint64_t correlation = 0;         // GPU events: the correlation id of the operator that launched it (0: none)
};

// A CPU operator (or one of this project's kernel ranges) of a profiled CUDA step, with the correlation id its
// launches carry: what launches_by_op attributes GPU work to.
struct ProfiledOp {
    std::string name;
    std::uint64_t thread = 0;
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    std::uint64_t correlation = 0;
    bool wrapper = false;  // the autograd engine's range around backward operators: never an operator itself
};

// Per name: launches and summed duration of the events that no other event of their lane encloses (a CPU
// operator's time includes the operators it calls, which are not counted again). A wrapper that no operator
// encloses is seen through: the operators in it are counted, and its time outside them is summed into the row
// `wrapper_row` (one launch per wrapper). Largest total first.
std::vector<KernelTime> outermost_times(std::vector<ProfiledEvent> events, const std::string& wrapper_row);
// Per name, every event (GPU kernels do not nest). Largest total first.
std::vector<KernelTime> every_event_times(const std::vector<ProfiledEvent>& events);
// The GPU events per operator, as the launch ledger counts them: each event goes to the operator that launched it
// (its correlation), then to the outermost operator around that one on its thread (wrappers seen through). Events
// no operator launched go to op "". Most launches first, then by name.
std::vector<OpLaunches> launches_by_op(std::vector<ProfiledOp> ops, const std::vector<ProfiledEvent>& device_events);

// The first `limit` rows as a text table (kernel, launches, total µs, mean µs, share of the step), a line for
// the rest, and the total against the step's time. Long kernel names are shortened with "...".
std::string top_kernels_table(const KernelProfile& profile, std::size_t limit);
// The top `limit` rows in one line each, for reports: "name: 123.4 µs in 5 launches (12.3% of the step)".
std::vector<std::string> top_kernels_lines(const KernelProfile& profile, std::size_t limit);
// Every row: kernel,launches,total_us,mean_us,share_of_step (RFC 4180 fields).
std::string kernel_profile_csv_text(const KernelProfile& profile);

}  // namespace tewb
