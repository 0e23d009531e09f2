#include "core/modules/ops/ParameterCopies.h"

#include <atomic>
#include <vector>

#include <ATen/ops/_foreach_copy.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/GradMode.h>

#include "core/ledger/Ledger.h"
#include "core/modules/ops/TeOps.h"

namespace tewb {

namespace {

std::atomic<ParameterCopies*> g_in_force{nullptr};

}  // namespace

at::Tensor ParameterCopies::copy_of(const at::Tensor& param, at::ScalarType dtype) {
    if (param.scalar_type() == dtype) return param;
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto key = std::make_pair(static_cast<const c10::TensorImpl*>(param.unsafeGetTensorImpl()), dtype);
    auto found = entries_.find(key);
    // A tensor that died and whose address came back is another tensor: a new entry.
    if (found != entries_.end() && found->second.source.lock().get() != param.unsafeGetTensorImpl()) {
        entries_.erase(found);
        found = entries_.end();
    }
    if (found == entries_.end()) {
        Entry entry{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(param.getIntrusivePtr()),
                    at::empty_like(param, param.options().dtype(dtype), at::MemoryFormat::Contiguous), -1};
        found = entries_.emplace(key, std::move(entry)).first;
    }
    if (found->second.version != static_cast<std::int64_t>(param._version())) {
        refresh_stale(param.scalar_type(), dtype, param.device());
    }
    return found->second.copy;
}

std::vector<at::Tensor> ParameterCopies::copies_for(const std::vector<at::Tensor>& params, at::ScalarType dtype) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<at::Tensor> copies(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto found = entries_.find({params[i].unsafeGetTensorImpl(), dtype});
        if (found != entries_.end() && found->second.source.lock().get() == params[i].unsafeGetTensorImpl()) {
            copies[i] = found->second.copy;
        }
    }
    return copies;
}

void ParameterCopies::mark_current(const std::vector<at::Tensor>& params, at::ScalarType dtype) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const at::Tensor& param : params) {
        const auto found = entries_.find({param.unsafeGetTensorImpl(), dtype});
        if (found != entries_.end() && found->second.source.lock().get() == param.unsafeGetTensorImpl()) {
            found->second.version = static_cast<std::int64_t>(param._version());
        }
    }
}

std::vector<OptimizerFp8Cast> ParameterCopies::fp8_casts_for(const std::vector<at::Tensor>& params) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::map<const c10::TensorImpl*, std::size_t> index;
    for (std::size_t i = 0; i < params.size(); ++i) index.emplace(params[i].unsafeGetTensorImpl(), i);
    std::vector<OptimizerFp8Cast> casts;
    for (const auto& [key, entry] : fp8_entries_) {
        const auto found = index.find(std::get<0>(key));
        if (found == index.end() || entry.source.lock().get() != std::get<0>(key)) continue;
        const Fp8Context& context = *entry.quantizer.context;
        if (context.prepared() && context.recipe().scaling == ScalingKind::Delayed && !context.inspect() &&
            !context.calibrating(entry.quantizer.pass)) {
            casts.push_back({found->second, entry.quantizer});
        }
    }
    return casts;
}

void ParameterCopies::set_fp8_copies(const std::vector<at::Tensor>& params, const std::vector<OptimizerFp8Cast>& casts,
                                     std::vector<Fp8Tensor> values) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < casts.size() && i < values.size(); ++i) {
        const at::Tensor& weight = params[casts[i].param];
        const Fp8Quantizer& q = casts[i].quantizer;
        const auto found = fp8_entries_.find({weight.unsafeGetTensorImpl(), q.context.get(), static_cast<int>(q.pass), q.slot});
        if (found == fp8_entries_.end() || found->second.source.lock().get() != weight.unsafeGetTensorImpl()) continue;
        found->second.value = std::move(values[i]);
        found->second.version = static_cast<std::int64_t>(weight._version());
        found->second.generation = q.context->generation();
        q.context->note_weight_cast();
    }
}

void ParameterCopies::release_forward_fp8() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& item : fp8_entries_) item.second.value.data = at::Tensor();
}

std::size_t ParameterCopies::fp8_bytes() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::size_t bytes = 0;
    for (const auto& item : fp8_entries_) {
        const Fp8Tensor& v = item.second.value;
        for (const at::Tensor* t : {&v.data, &v.transposed, &v.scale_inv, &v.transposed_scale_inv}) {
            if (t->defined()) bytes += static_cast<std::size_t>(t->numel()) * t->element_size();
        }
    }
    return bytes;
}

std::size_t ParameterCopies::size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size() + fp8_entries_.size();
}

Fp8Tensor ParameterCopies::fp8_copy_of(const at::Tensor& weight, const Fp8Quantizer& quantizer, const TeOps& ops) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const Fp8Context* context = quantizer.context.get();
    const Fp8Key key{weight.unsafeGetTensorImpl(), context, static_cast<int>(quantizer.pass), quantizer.slot};
    auto found = fp8_entries_.find(key);
    if (found != fp8_entries_.end() && found->second.source.lock().get() != weight.unsafeGetTensorImpl()) {
        fp8_entries_.erase(found);
        found = fp8_entries_.end();
    }
    if (found == fp8_entries_.end()) {
        Fp8Entry entry{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(weight.getIntrusivePtr()), quantizer, {}, -1, 0};
        found = fp8_entries_.emplace(key, std::move(entry)).first;
    }
    Fp8Entry& entry = found->second;
    if (entry.version != static_cast<std::int64_t>(weight._version()) || entry.generation != context->generation() ||
        !entry.value.data.defined()) {
        refresh_stale_fp8(context, ops);
    }
    return entry.value;
}

// Every stale FP8 copy of `context`'s weights in one quantize_weights call; copies whose weight is gone are
// dropped.
void ParameterCopies::refresh_stale_fp8(const Fp8Context* context, const TeOps& ops) {
    std::vector<WeightCast> casts;
    std::vector<Fp8Entry*> refreshed;
    for (auto it = fp8_entries_.begin(); it != fp8_entries_.end();) {
        c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> alive = it->second.source.lock();
        if (!alive) {
            it = fp8_entries_.erase(it);
            continue;
        }
        Fp8Entry& entry = it->second;
        const at::Tensor weight(std::move(alive));
        if (std::get<1>(it->first) == context &&
            (entry.version != static_cast<std::int64_t>(weight._version()) || entry.generation != context->generation() ||
             !entry.value.data.defined())) {
            casts.push_back({weight, entry.quantizer});
            refreshed.push_back(&entry);
        }
        ++it;
    }
    if (casts.empty()) return;
    // The old copies are released inside the scope too: the refresh's net memory is outside the layers.
    const LedgerScope scope(LedgerScope::Outside{}, "parameter_casts");
    const c10::NoGradGuard no_grad;
    std::vector<Fp8Tensor> values = ops.quantize_weights(casts);
    for (std::size_t i = 0; i < refreshed.size(); ++i) {
        refreshed[i]->value = std::move(values[i]);
        refreshed[i]->version = static_cast<std::int64_t>(casts[i].weight._version());
        refreshed[i]->generation = context->generation();
        casts[i].quantizer.context->note_weight_cast();
    }
}

// Every stale copy from `source_dtype` to `dtype` on `device` in one launch (one list: PyTorch's fast path
// wants one dtype per list); copies whose parameter is gone are dropped.
void ParameterCopies::refresh_stale(at::ScalarType source_dtype, at::ScalarType dtype, const c10::Device& device) {
    std::vector<at::Tensor> sources;
    std::vector<at::Tensor> copies;
    std::vector<Entry*> refreshed;
    for (auto it = entries_.begin(); it != entries_.end();) {
        c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> alive = it->second.source.lock();
        if (!alive) {
            it = entries_.erase(it);
            continue;
        }
        const at::Tensor source(std::move(alive));
        Entry& entry = it->second;
        if (it->first.second == dtype && source.scalar_type() == source_dtype && source.device() == device &&
            entry.version != static_cast<std::int64_t>(source._version())) {
            sources.push_back(source);
            copies.push_back(entry.copy);
            refreshed.push_back(&entry);
        }
        ++it;
    }
    if (sources.empty()) return;
    {
        const LedgerScope scope(LedgerScope::Outside{}, "parameter_casts");
        const c10::NoGradGuard no_grad;
        at::_foreach_copy_(copies, sources);
    }
    for (std::size_t i = 0; i < refreshed.size(); ++i) refreshed[i]->version = static_cast<std::int64_t>(sources[i]._version());
}

ParameterCopiesScope::ParameterCopiesScope(ParameterCopies& copies) : previous_(g_in_force.exchange(&copies)) {}

ParameterCopiesScope::~ParameterCopiesScope() {
    g_in_force.store(previous_);
}

ParameterCopies* parameter_copies_in_force() {
    return g_in_force.load();
}

at::Tensor parameter_copy(const at::Tensor& param, at::ScalarType dtype) {
    ParameterCopies* copies = g_in_force.load();
    if (copies == nullptr || param.scalar_type() == dtype) return param.to(dtype);
    return copies->copy_of(param, dtype);
}

}  // namespace tewb
