#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger/LaunchWork.h"

// The launch ledger: for one training step, every launch and the bytes it moves, attributed to the part of
// the model that ran it. This header is torch-free, so every layer of core can mark where it is.

namespace tewb {

// One (place, op, work) triple of a measured step. `layer` is the transformer layer (-1 outside the layers), `scope`
// the path inside it ("qkv", "qkv/fp8_amax") or at the top ("embedding", "optimizer", "other").
struct LedgerEntry {
    int layer = -1;
    std::string scope;
    std::string op;
    LaunchWork work = LaunchWork::Kernel;
    std::uint64_t calls = 0;
    std::uint64_t launches = 0;
    bool launches_known = true;  // false: at least one call's launch count was assumed to be 1
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_written = 0;
    friend bool operator==(const LedgerEntry&, const LedgerEntry&) = default;
};

struct LedgerMeasurement {
    std::vector<LedgerEntry> rows;                    // sorted by layer, scope, op
    std::vector<std::int64_t> saved_bytes_per_layer;  // index: layer; see LedgerScope for what it counts
    // The calls that made (or, on the CPU, would make) the host wait for the device inside the step, per place
    // and op (launches 0): item() and a tensor's truth value, data-dependent shapes, host comparisons, blocking
    // device-to-host copies (Ledger.cpp's waits_for_the_device). A step that queues its work ahead has none.
    std::vector<LedgerEntry> host_waits;
};

// Marks where the code runs: `LedgerScope scope("qkv")`, or `LedgerScope scope("layer", i)` for layer i (any
// other name with an index reads "name i"). A thread-local stack; does nothing unless a ledger records.
// A "layer" scope entered on the recording thread with gradients on also measures the bytes the layer's
// forward leaves alive for the backward (LedgerRecording says how).
class LedgerScope {
public:
    explicit LedgerScope(std::string_view name, int index = -1);
    // A place outside the layers however deep the caller is (work done once per step on behalf of every
    // layer, e.g. the batched parameter casts): the scope is `name` at the top, not inside the current one.
    // What it leaves alive is not counted as a layer's saved bytes, even when a layer's forward runs it.
    struct Outside {};
    LedgerScope(Outside, std::string_view name);
    ~LedgerScope();
    LedgerScope(const LedgerScope&) = delete;
    LedgerScope& operator=(const LedgerScope&) = delete;

private:
    bool active_ = false;
    int measured_layer_ = -1;
    std::int64_t live_before_ = 0;
    bool outside_ = false;
    std::int64_t outside_growth_before_ = 0;  // a measured layer: the outside scopes' growth when it began
};

// Our own kernels are not LibTorch ops: their callers report each call here (no-op when no ledger records;
// thread-safe). The call is attributed to the calling thread's scope; its bytes go to the kernel row, helper
// kernels and memsets to rows of their own. `helpers_known` false: a library call whose helpers no GPU run has
// observed (kernels/gemm/observed_library_work.csv), so the helper row's count is not known.
struct OwnLaunches {
    std::uint64_t kernels = 0;
    std::uint64_t helpers = 0;
    std::uint64_t memsets = 0;
    bool helpers_known = true;
};
void note_own_kernel(std::string_view op, const OwnLaunches& launches, std::uint64_t bytes_read, std::uint64_t bytes_written);

// Records from construction to finish(): LibTorch's RecordFunction callbacks (global, so the autograd
// engine's threads are seen) and note_own_kernel. One recording at a time per process; the callbacks and
// the CPU allocator wrapper are removed by finish() or the destructor.
//
// Saved bytes per layer: the bytes the allocator holds live after the layer's forward minus before it, i.e.
// what the forward allocated and did not free: the tensors the autograd graph keeps for the backward plus the
// layer's output (the next layer's saved input). On the CPU it is counted by a wrapper of the CPU allocator
// installed for the recording; on CUDA it is the caching allocator's allocated bytes (rounded to its blocks).
class LedgerRecording {
public:
    LedgerRecording(bool cuda, int cuda_device);
    ~LedgerRecording();
    LedgerRecording(const LedgerRecording&) = delete;
    LedgerRecording& operator=(const LedgerRecording&) = delete;

    LedgerMeasurement finish();

    struct State;

private:
    std::unique_ptr<State> state_;
};

}  // namespace tewb
