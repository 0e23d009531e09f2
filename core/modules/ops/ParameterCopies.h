#pragma once

#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include "core/fp8/Fp8State.h"
#include "core/fp8/Fp8Tensor.h"

namespace tewb {

// A run's low-precision copies of its parameters: the bfloat16 weight a BF16 GEMM reads and the bfloat16 bias
// of a GEMM's epilogue. A copy is kept until its parameter changes (the version counter moves, as AdamW's step
// does); when one is found stale, every stale copy is refreshed in one multi-tensor launch (_foreach_copy_),
// which after the optimizer's step is all of them: the casts cost one launch per step instead of one per GEMM.
// The first step casts each parameter as it meets it. The values are those of `param.to(dtype)`.
//
// The FP8 copies of weights (with their transposed copies) are kept the same way, keyed also on the FP8
// state's generation (the forward scale update moves it): when one is stale, every stale FP8 copy of the same
// FP8 state is cast again by one TeOps::quantize_weights call, one launch for all of a model's weights under
// delayed scaling on the fused path, where each GEMM used to cast its own.
class TeOps;
struct OptimizerFp8Cast;

class ParameterCopies {
public:
    // `param` itself when it already has `dtype`; else its copy in `dtype`, refreshed when stale. The copy is
    // overwritten in place by a later refresh: keep it only until the parameter's next update.
    at::Tensor copy_of(const at::Tensor& param, at::ScalarType dtype);

    // The weight's FP8 copy for `quantizer` (quantize(weight, quantizer, true) through `ops`), cast again with
    // every other stale one of its FP8 state when stale. A new tensor each time: a copy handed out stays valid.
    Fp8Tensor fp8_copy_of(const at::Tensor& weight, const Fp8Quantizer& quantizer, const TeOps& ops);

    // The `dtype` copies of `params` kept so far (undefined where none), for a writer that rewrites them itself
    // with the parameters' new values (the fused AdamW: TeOps::adamw_step). Once it has, mark_current records the
    // parameters' versions, so those copies count as fresh and no refresh follows.
    std::vector<at::Tensor> copies_for(const std::vector<at::Tensor>& params, at::ScalarType dtype) const;
    void mark_current(const std::vector<at::Tensor>& params, at::ScalarType dtype);

    // The kept FP8 copies of `params` that an optimizer's step may write from the new weights itself
    // (TeOps::adamw_step), as the next forward would cast them: those of an FP8 state under delayed scaling,
    // past its first forward update, not inspected (inspection counts each cast where it is made). After the
    // step, set_fp8_copies takes the values written (in this order) and records them as current, so the next
    // forward casts nothing.
    std::vector<OptimizerFp8Cast> fp8_casts_for(const std::vector<at::Tensor>& params) const;
    void set_fp8_copies(const std::vector<at::Tensor>& params, const std::vector<OptimizerFp8Cast>& casts,
                        std::vector<Fp8Tensor> values);

    // After a forward pass: drops the row-major FP8 copies, which only the forward's GEMMs read, and keeps the
    // transposed copies the backward's dgrad reads, so the backward's peak holds one FP8 copy of each weight, not
    // two. The next lookup casts again (after AdamW's step it would anyway).
    void release_forward_fp8();
    // The bytes of the FP8 weight copies held (data, transposed copies and their scales).
    std::size_t fp8_bytes() const;

    std::size_t size() const;

private:
    struct Entry {
        c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> source;
        at::Tensor copy;
        std::int64_t version = -1;  // the source's version when copied; -1: never
    };
    void refresh_stale(at::ScalarType source_dtype, at::ScalarType dtype, const c10::Device& device);

    struct Fp8Entry {
        c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> source;
        Fp8Quantizer quantizer;
        Fp8Tensor value;
        std::int64_t version = -1;
        std::uint64_t generation = 0;
    };
    // (weight, FP8 state, pass, slot)
    using Fp8Key = std::tuple<const c10::TensorImpl*, const Fp8Context*, int, int>;
    void refresh_stale_fp8(const Fp8Context* context, const TeOps& ops);

    mutable std::mutex mutex_;
    std::map<std::pair<const c10::TensorImpl*, at::ScalarType>, Entry> entries_;
    std::map<Fp8Key, Fp8Entry> fp8_entries_;
};

// Puts a run's copies in force (the trainer opens one for the whole run, as it opens OpsScope); one at a time
// per process.
class ParameterCopiesScope {
public:
    explicit ParameterCopiesScope(ParameterCopies& copies);
    ~ParameterCopiesScope();
    ParameterCopiesScope(const ParameterCopiesScope&) = delete;
    ParameterCopiesScope& operator=(const ParameterCopiesScope&) = delete;

private:
    ParameterCopies* previous_;
};

// `param.to(dtype)`, through the copies in force when a scope is open (modules and ops call this for
// parameters only); without a scope (a module used on its own, tests) a plain cast.
at::Tensor parameter_copy(const at::Tensor& param, at::ScalarType dtype);

// The copies in force, or null without a scope.
ParameterCopies* parameter_copies_in_force();

}  // namespace tewb
