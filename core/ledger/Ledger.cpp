#include "core/ledger/Ledger.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <ATen/SequenceNumber.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/alloc_cpu.h>

#ifdef TEWB_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/ledger/ObservedTorchOps.h"

namespace tewb {

// Where an op ran: the transformer layer (-1: none) and the path of scopes inside it (empty: "other"). Outside the
// anonymous namespace because LedgerRecording::State holds it (GCC's -Wsubobject-linkage in the unity build).
namespace ledger_detail {
struct Path {
    int layer = -1;
    std::string scope;
};
}  // namespace ledger_detail
using ledger_detail::Path;

namespace {

// ---- how many kernels one LibTorch operator launches (on CUDA; the CPU is counted by the same rule) ----

// Views, allocations and metadata: no launch, no bytes moved.
const std::unordered_set<std::string_view>& launch_free_ops() {
    static const std::unordered_set<std::string_view> ops = {
        "view", "_unsafe_view", "_reshape_alias", "view_as", "t", "transpose", "permute", "select", "slice", "narrow",
        "expand", "expand_as", "as_strided", "detach", "detach_", "alias", "unsqueeze", "squeeze", "unbind", "split",
        "split_with_sizes",
        "chunk", "unflatten", "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "resize_",
        "lift_fresh", "requires_grad_", "result_type", "set_", "_has_compatible_shallow_copy_type", "is_nonzero",
        "broadcast_tensors", "record_stream", "_nested_tensor_from_mask_left_aligned"};
    return ops;
}

// Composite operators: they launch nothing themselves, exactly what the operators they call launch (0 when
// those are views, e.g. a reshape that needs no copy).
const std::unordered_set<std::string_view>& composite_ops() {
    static const std::unordered_set<std::string_view> ops = {
        "reshape", "contiguous", "to", "type_as", "flatten", "linear", "matmul", "layer_norm", "cross_entropy_loss",
        "scaled_dot_product_attention", "embedding", "embedding_backward", "ones_like", "zeros_like", "full_like",
        "full", "zeros", "ones", "scalar_tensor", "stack", "nll_loss", "nll_loss_nd", "log_softmax", "softmax",
        "sum_to_size", "reshape_as", "dropout", "einsum", "autocast_to_reduced_precision", "autocast_to_full_precision"};
    return ops;
}

// One kernel on CUDA, known from PyTorch's sources: element-wise (TensorIterator) kernels, copies and single-pass
// reductions. GEMMs are not here: cuBLAS may add a split-K reduction or a bias copy, so their count is not known.
const std::unordered_set<std::string_view>& one_launch_ops() {
    static const std::unordered_set<std::string_view> ops = {
        "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "abs", "abs_", "exp", "log", "sqrt",
        "rsqrt", "pow", "tanh", "sigmoid", "gelu", "gelu_backward", "relu", "threshold_backward", "maximum", "minimum",
        "clamp", "clamp_", "clamp_min", "reciprocal", "reciprocal_", "where", "ne", "eq", "gt", "lt", "ge", "le", "isnan",
        "isinf", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not", "bitwise_and",
        "bitwise_or", "masked_fill_", "masked_fill", "fill_", "zero_", "copy_", "_to_copy", "clone", "lerp_", "addcmul_",
        "addcdiv_", "sign", "index_select", "arange", "cat", "sum", "mean", "amax", "amin", "max", "min", "square",
        "_log_softmax", "_log_softmax_backward_data", "_softmax", "_softmax_backward_data"};
    return ops;
}

// What one op runs on the GPU, by kind (LaunchWork).
struct LaunchCount {
    std::uint64_t kernels = 0;
    std::uint64_t helpers = 0;
    std::uint64_t memsets = 0;
    std::uint64_t copies = 0;
    bool known = true;
    std::uint64_t total() const { return kernels + helpers + memsets + copies; }
    LaunchCount& operator+=(const LaunchCount& other) {
        kernels += other.kernels;
        helpers += other.helpers;
        memsets += other.memsets;
        copies += other.copies;
        known = known && other.known;
        return *this;
    }
};

// LibTorch operators whose GPU work a CUPTI trace showed in full (observed_torch_ops.csv), by name.
const std::unordered_map<std::string_view, LaunchCount>& observed_ops() {
    static const std::unordered_map<std::string_view, LaunchCount> ops = [] {
        std::unordered_map<std::string_view, LaunchCount> table;
        for (const ObservedTorchOp& o : observed_torch_ops()) table[o.op] = {o.kernels, o.helper_kernels, o.memsets, 0, true};
        return table;
    }();
    return ops;
}

// An op's own name without its namespace: "aten::add" -> "add".
std::string_view bare_name(std::string_view name) {
    const std::size_t colons = name.rfind("::");
    return colons == std::string_view::npos ? name : name.substr(colons + 2);
}

// Multi-tensor operators (`_foreach_add_`, `_fused_adamw_`): on CUDA one kernel walks every tensor of the lists
// in chunks of 65536 elements, up to 320 chunks per launch (PyTorch's MultiTensorApply.cuh); a launch may also
// end early at a tensor-count limit that depends on the list depth and the driver. On the CPU the same op loops
// over the tensors one by one, which has no counterpart on a GPU.
bool multi_tensor_op(std::string_view bare) {
    return bare.rfind("_foreach_", 0) == 0 || bare.rfind("_fused_adam", 0) == 0 || bare == "_fused_sgd_";
}

constexpr std::uint64_t kMultiTensorChunk = 65536;
constexpr std::uint64_t kMultiTensorChunksPerLaunch = 320;

// The chunks of the first tensor list among `inputs` (every list of a multi-tensor op has the same shapes).
std::uint64_t multi_tensor_chunks(c10::ArrayRef<const c10::IValue> inputs) {
    for (const c10::IValue& value : inputs) {
        if (!value.isTensorList()) continue;
        std::uint64_t chunks = 0;
        for (const at::Tensor& t : value.toTensorVector()) {
            chunks += (static_cast<std::uint64_t>(t.numel()) + kMultiTensorChunk - 1) / kMultiTensorChunk;
        }
        return chunks;
    }
    return 0;
}

// `children`: what the operators called inside it launched (summed), and whether all of those were known.
// `chunks`: a multi-tensor op's chunks (multi_tensor_chunks). `crosses_devices`: a copy between the host and a
// device (a memcpy on the GPU, not a kernel).
LaunchCount launches_of(std::string_view name, LaunchCount children, bool has_launching_children, std::uint64_t chunks,
                        bool crosses_devices) {
    const std::string_view bare = bare_name(name);
    if (launch_free_ops().count(bare)) return {};
    if (const auto observed = observed_ops().find(bare); observed != observed_ops().end()) return observed->second;
    // At least one launch per 320 chunks; the tensor-count limit may add more, so not known.
    if (multi_tensor_op(bare)) {
        return {std::max<std::uint64_t>(1, (chunks + kMultiTensorChunksPerLaunch - 1) / kMultiTensorChunksPerLaunch), 0, 0, 0,
                false};
    }
    if (bare == "copy_" && crosses_devices) return {0, 0, 0, 1, true};
    // A conversion between the host and a device is the copy inside it (a memcpy), not a kernel.
    if ((bare == "_to_copy" || bare == "clone") && children.copies > 0) return children;
    if (one_launch_ops().count(bare)) return {1, 0, 0, 0, true};
    if (composite_ops().count(bare)) return children;
    // A GEMM is one cuBLAS launch, sometimes more (split-K): count one, not known. What it calls inside on the
    // CPU (copies of transposed operands, conversions) has no counterpart on a GPU.
    if (bare == "mm" || bare == "addmm" || bare == "bmm" || bare == "baddbmm" || bare == "addmv") return {1, 0, 0, 0, false};
    // Not known: at least one launch, and what it calls when that is more.
    if (has_launching_children && children.total() > 0) {
        LaunchCount out = children;
        out.known = false;
        return out;
    }
    return {1, 0, 0, 0, false};
}

// copy_(self, src): between the host and a device.
bool copy_crosses_devices(std::string_view bare, c10::ArrayRef<const c10::IValue> inputs) {
    if (bare != "copy_" || inputs.size() < 2 || !inputs[0].isTensor() || !inputs[1].isTensor()) return false;
    const at::Tensor& self = inputs[0].toTensor();
    const at::Tensor& src = inputs[1].toTensor();
    return self.defined() && src.defined() && self.device().is_cpu() != src.device().is_cpu();
}

bool in_place(std::string_view name) {
    const std::string_view bare = bare_name(name);
    return !bare.empty() && bare.back() == '_' && bare.rfind("__", 0) != 0;  // add_, _foreach_add_; not __iadd__
}

std::uint64_t tensor_bytes(const at::Tensor& t) {
    if (!t.defined()) return 0;
    return static_cast<std::uint64_t>(t.numel()) * static_cast<std::uint64_t>(t.element_size());
}

std::uint64_t ivalue_bytes(const c10::IValue& value) {
    if (value.isTensor()) return tensor_bytes(value.toTensor());
    std::uint64_t sum = 0;
    if (value.isTensorList()) {
        for (const at::Tensor& t : value.toTensorVector()) sum += tensor_bytes(t);
    } else if (value.isList()) {
        for (const c10::IValue& item : value.toListRef()) sum += ivalue_bytes(item);
    } else if (value.isTuple()) {
        for (const c10::IValue& item : value.toTupleRef().elements()) sum += ivalue_bytes(item);
    }
    return sum;
}

std::uint64_t ivalues_bytes(c10::ArrayRef<const c10::IValue> values) {
    std::uint64_t sum = 0;
    for (const c10::IValue& v : values) sum += ivalue_bytes(v);
    return sum;
}

// ---- the CPU allocator wrapper that counts live bytes ----

class CountingCpuAllocator final : public c10::Allocator {
public:
    static CountingCpuAllocator& instance() {
        static CountingCpuAllocator* allocator = new CountingCpuAllocator;  // never destroyed: tensors may outlive it
        return *allocator;
    }

    c10::DataPtr allocate(std::size_t bytes) override {
        void* data = c10::alloc_cpu(bytes);
        if (data != nullptr) {
            const std::lock_guard<std::mutex> lock(mutex_);
            sizes_[data] = bytes;
            live_ += static_cast<std::int64_t>(bytes);
        }
        return {data, data, &release, c10::Device(c10::kCPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &release; }
    void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

    std::int64_t live() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return live_;
    }

private:
    static void release(void* data) {
        CountingCpuAllocator& self = instance();
        {
            const std::lock_guard<std::mutex> lock(self.mutex_);
            const auto found = self.sizes_.find(data);
            if (found != self.sizes_.end()) {
                self.live_ -= static_cast<std::int64_t>(found->second);
                self.sizes_.erase(found);
            }
        }
        c10::free_cpu(data);
    }

    mutable std::mutex mutex_;
    std::unordered_map<void*, std::size_t> sizes_;
    std::int64_t live_ = 0;
};

constexpr std::uint8_t kCountingAllocatorPriority = 200;

}  // namespace

// ---- the recording ----

struct LedgerRecording::State {
    bool cuda = false;
    int cuda_device = 0;
    std::thread::id forward_thread;
    at::CallbackHandle callback = 0;
    c10::Allocator* previous_cpu_allocator = nullptr;

    std::mutex mutex;
    using Key = std::tuple<int, std::string, std::string, LaunchWork>;
    std::map<Key, LedgerEntry> rows;
    // The forward thread's scope at each change, with the autograd sequence number the next node would get:
    // a node of sequence number n was created under the last change at or before n.
    std::vector<std::pair<std::uint64_t, Path>> changes;
    std::uint64_t first_sequence = 0;
    std::map<int, std::int64_t> saved_bytes;
    std::int64_t outside_growth = 0;  // live bytes the outside scopes left on the forward thread (under mutex)

    std::int64_t live_bytes() const {
#ifdef TEWB_TORCH_HAS_CUDA
        if (cuda) {
            const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(cuda_device));
            return stats.allocated_bytes[static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
        }
#endif
        return CountingCpuAllocator::instance().live();
    }

    void note_change(const Path& now) {
        if (std::this_thread::get_id() != forward_thread) return;
        const std::lock_guard<std::mutex> lock(mutex);
        changes.emplace_back(at::sequence_number::peek(), now);
    }

    Path path_of_node(std::int64_t sequence) {
        if (sequence < 0 || static_cast<std::uint64_t>(sequence) < first_sequence) return {};  // AccumulateGrad: -1
        const std::lock_guard<std::mutex> lock(mutex);
        const auto after = std::upper_bound(changes.begin(), changes.end(), static_cast<std::uint64_t>(sequence),
                                            [](std::uint64_t s, const auto& change) { return s < change.first; });
        if (after == changes.begin()) return {};
        return std::prev(after)->second;
    }

    // Under mutex: the row of (place, op, work) in `table`, named, its call counted.
    static LedgerEntry& count_call(std::map<Key, LedgerEntry>& table, const Path& path, std::string_view op,
                                   LaunchWork work = LaunchWork::Kernel) {
        const std::string scope = path.scope.empty() ? std::string("other") : path.scope;
        LedgerEntry& row = table[{path.layer, scope, std::string(op), work}];
        row.layer = path.layer;
        row.scope = scope;
        row.op = std::string(op);
        row.work = work;
        row.calls += 1;
        return row;
    }

    // One call: its kernels (and the bytes it moved) in the op's row, the rest of its GPU work in rows of their own.
    // A call with no kernel of its own still counts its call and bytes in the kernel row.
    void add(const Path& path, std::string_view op, const LaunchCount& count, std::uint64_t read, std::uint64_t written) {
        const std::lock_guard<std::mutex> lock(mutex);
        LedgerEntry& row = count_call(rows, path, op);
        row.launches += count.kernels;
        row.launches_known = row.launches_known && count.known;
        row.bytes_read += read;
        row.bytes_written += written;
        const auto add_work = [&](LaunchWork work, std::uint64_t launches) {
            if (launches == 0) return;
            LedgerEntry& extra = count_call(rows, path, op, work);
            extra.launches += launches;
            extra.launches_known = extra.launches_known && count.known;
        };
        add_work(LaunchWork::Helper, count.helpers);
        add_work(LaunchWork::Memset, count.memsets);
        add_work(LaunchWork::Copy, count.copies);
    }

    // A library call whose helper kernels no GPU run observed: its helper row, marked not known.
    void add_unknown_helpers(const Path& path, std::string_view op, std::uint64_t helpers) {
        const std::lock_guard<std::mutex> lock(mutex);
        LedgerEntry& row = count_call(rows, path, op, LaunchWork::Helper);
        row.launches += helpers;
        row.launches_known = false;
    }

    std::map<Key, LedgerEntry> host_waits;

    void add_host_wait(const Path& path, std::string_view op) {
        const std::lock_guard<std::mutex> lock(mutex);
        count_call(host_waits, path, op);
    }
};

namespace {

std::atomic<LedgerRecording::State*> g_recording{nullptr};

struct OpFrame {
    std::string name;
    Path path;                   // outermost ops only
    std::uint64_t read = 0;      // outermost ops only
    std::uint64_t first_input = 0;
    std::uint64_t multi_tensor_chunks = 0;  // multi-tensor ops only
    bool crosses_devices = false;           // copy_ only
    LaunchCount children;
    bool has_launching_children = false;
};

struct ThreadLedger {
    std::vector<Path> paths;  // the scope stack; a backward node pushes its forward's path
    std::vector<OpFrame> ops;
};

thread_local ThreadLedger t_ledger;

Path current_path() {
    return t_ledger.paths.empty() ? Path{} : t_ledger.paths.back();
}

struct Marker : at::ObserverContext {
    explicit Marker(bool backward_node) : backward_node(backward_node) {}
    bool backward_node;
};

// Operators that make the host wait for the device: a value read back (item(), a tensor's truth value: both reach
// _local_scalar_dense), an output whose size depends on the data (nonzero, masked_select, unique), a comparison
// answered on the host (equal, allclose), and a blocking copy from a CUDA tensor into host memory. On the CPU
// the same calls are counted (they would wait on a GPU), except copies, which need a device to be seen.
bool waits_for_the_device(std::string_view op, const at::RecordFunction& fn) {
    static const std::unordered_set<std::string_view> reads = {"_local_scalar_dense", "nonzero", "masked_select", "_unique2",
                                                               "unique_consecutive", "unique_dim", "equal", "allclose"};
    if (reads.count(op) != 0) return true;
    if (op != "copy_") return false;
    const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    if (inputs.size() < 2 || !inputs[0].isTensor() || !inputs[1].isTensor()) return false;
    const bool non_blocking = inputs.size() > 2 && inputs[2].isBool() && inputs[2].toBool();
    return inputs[0].toTensor().is_cpu() && inputs[1].toTensor().is_cuda() && !non_blocking;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return nullptr;
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
        // The backward node's ops belong to the forward scope that created the node.
        t_ledger.paths.push_back(state->path_of_node(fn.seqNr()));
        return std::make_unique<Marker>(true);
    }
    // Only dispatcher operators launch; ranges such as the engine's "evaluate_function" are not ops.
    if (!fn.operator_name()) return nullptr;
    if (waits_for_the_device(bare_name(fn.name()), fn)) state->add_host_wait(current_path(), fn.name());
    OpFrame frame;
    frame.name = fn.name();
    if (t_ledger.ops.empty()) {
        frame.path = current_path();
        const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
        frame.read = ivalues_bytes(inputs);
        frame.first_input = inputs.empty() ? 0 : ivalue_bytes(inputs.front());
    }
    if (multi_tensor_op(bare_name(frame.name))) frame.multi_tensor_chunks = multi_tensor_chunks(fn.inputs());
    frame.crosses_devices = copy_crosses_devices(bare_name(frame.name), fn.inputs());
    t_ledger.ops.push_back(std::move(frame));
    return std::make_unique<Marker>(false);
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext* context) {
    if (context == nullptr) return;
    if (static_cast<Marker*>(context)->backward_node) {
        if (!t_ledger.paths.empty()) t_ledger.paths.pop_back();
        return;
    }
    if (t_ledger.ops.empty()) return;
    const OpFrame frame = std::move(t_ledger.ops.back());
    t_ledger.ops.pop_back();
    const LaunchCount count =
        launches_of(frame.name, frame.children, frame.has_launching_children, frame.multi_tensor_chunks, frame.crosses_devices);
    if (!t_ledger.ops.empty()) {  // nested: counted in its outermost op
        OpFrame& parent = t_ledger.ops.back();
        parent.children += count;
        parent.has_launching_children = parent.has_launching_children || count.total() > 0;
        return;
    }
    if (count.total() == 0 && count.known) return;  // a view or an allocation moved nothing
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return;
    std::uint64_t written = 0;
    for (const c10::IValue& v : fn.outputs()) written += ivalue_bytes(v);
    if (written == 0 && in_place(frame.name)) written = frame.first_input;  // in place without a returned tensor
    state->add(frame.path, frame.name, count, frame.read, written);
}

}  // namespace

LedgerScope::LedgerScope(std::string_view name, int index) {
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return;
    Path path = current_path();
    if (name == "layer" && index >= 0) {
        path.layer = index;
        if (std::this_thread::get_id() == state->forward_thread && c10::GradMode::is_enabled()) {
            measured_layer_ = index;
            live_before_ = state->live_bytes();
            const std::lock_guard<std::mutex> lock(state->mutex);
            outside_growth_before_ = state->outside_growth;
        }
    } else {
        std::string frame(name);
        if (index >= 0) frame.append(1, ' ').append(std::to_string(index));  // not " " + ...: GCC 12 warns falsely
        path.scope = path.scope.empty() ? frame : path.scope + "/" + frame;
    }
    t_ledger.paths.push_back(std::move(path));
    active_ = true;
    state->note_change(t_ledger.paths.back());
}

LedgerScope::LedgerScope(Outside, std::string_view name) {
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return;
    t_ledger.paths.push_back(Path{-1, std::string(name)});
    active_ = true;
    if (std::this_thread::get_id() == state->forward_thread) {
        outside_ = true;
        live_before_ = state->live_bytes();
    }
    state->note_change(t_ledger.paths.back());
}

LedgerScope::~LedgerScope() {
    if (!active_) return;
    if (!t_ledger.paths.empty()) t_ledger.paths.pop_back();
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return;
    if (measured_layer_ >= 0) {
        const std::int64_t after = state->live_bytes();
        const std::lock_guard<std::mutex> lock(state->mutex);
        state->saved_bytes[measured_layer_] += after - live_before_ - (state->outside_growth - outside_growth_before_);
    } else if (outside_) {
        const std::int64_t after = state->live_bytes();
        const std::lock_guard<std::mutex> lock(state->mutex);
        state->outside_growth += after - live_before_;
    }
    state->note_change(current_path());
}

void note_own_kernel(std::string_view op, const OwnLaunches& launches, std::uint64_t bytes_read, std::uint64_t bytes_written) {
    LedgerRecording::State* state = g_recording.load(std::memory_order_acquire);
    if (state == nullptr) return;
    // Own kernels and memsets are always counted (known); a library call's helpers may not be.
    const Path path = current_path();
    if (launches.helpers_known) {
        state->add(path, op, {launches.kernels, launches.helpers, launches.memsets, 0, true}, bytes_read, bytes_written);
        return;
    }
    state->add(path, op, {launches.kernels, 0, launches.memsets, 0, true}, bytes_read, bytes_written);
    state->add_unknown_helpers(path, op, launches.helpers);
}

LedgerRecording::LedgerRecording(bool cuda, int cuda_device) : state_(std::make_unique<State>()) {
    state_->cuda = cuda;
    state_->cuda_device = cuda_device;
    state_->forward_thread = std::this_thread::get_id();
    state_->first_sequence = at::sequence_number::peek();
    state_->changes.emplace_back(state_->first_sequence, current_path());
    State* expected = nullptr;
    if (!g_recording.compare_exchange_strong(expected, state_.get())) {
        throw std::logic_error("a launch ledger is already recording in this process");
    }
    if (!cuda) {
        state_->previous_cpu_allocator = c10::GetCPUAllocator();
        c10::SetCPUAllocator(&CountingCpuAllocator::instance(), kCountingAllocatorPriority);
    }
    state_->callback = at::addGlobalCallback(at::RecordFunctionCallback(&on_enter, &on_exit)
                                                 .needsInputs(true)
                                                 .needsOutputs(true)
                                                 .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

LedgerRecording::~LedgerRecording() {
    if (state_ && g_recording.load() == state_.get()) finish();
}

LedgerMeasurement LedgerRecording::finish() {
    State* expected = state_.get();
    if (!g_recording.compare_exchange_strong(expected, nullptr)) {
        throw std::logic_error("the launch ledger was finished twice");
    }
    at::removeCallback(state_->callback);
    if (state_->previous_cpu_allocator != nullptr) {
        c10::SetCPUAllocator(state_->previous_cpu_allocator, kCountingAllocatorPriority);
    }
    LedgerMeasurement out;
    const std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto& [key, row] : state_->rows) out.rows.push_back(row);
    for (auto& [key, row] : state_->host_waits) out.host_waits.push_back(row);
    for (const auto& [layer, bytes] : state_->saved_bytes) {
        if (layer < 0) continue;
        if (out.saved_bytes_per_layer.size() <= static_cast<std::size_t>(layer)) out.saved_bytes_per_layer.resize(layer + 1, 0);
        out.saved_bytes_per_layer[static_cast<std::size_t>(layer)] = bytes;
    }
    return out;
}

}  // namespace tewb
