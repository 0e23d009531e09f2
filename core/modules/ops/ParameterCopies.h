#pragma once

#include <map>
#include <mutex>
#include <utility>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

namespace tewb {

// A run's low-precision copies of its parameters: the bfloat16 weight a BF16 GEMM reads and the bfloat16 bias
// of a GEMM's epilogue. A copy is kept until its parameter changes (the version counter moves, as AdamW's step
// does); when one is found stale, every stale copy is refreshed in one multi-tensor launch (_foreach_copy_),
// which after the optimizer's step is all of them: the casts cost one launch per step instead of one per GEMM.
// The first step casts each parameter as it meets it. The values are those of `param.to(dtype)`.
class ParameterCopies {
public:
    // `param` itself when it already has `dtype`; else its copy in `dtype`, refreshed when stale. The copy is
    // overwritten in place by a later refresh: keep it only until the parameter's next update.
    at::Tensor copy_of(const at::Tensor& param, at::ScalarType dtype);

    std::size_t size() const;

private:
    struct Entry {
        c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> source;
        at::Tensor copy;
        std::int64_t version = -1;  // the source's version when copied; -1: never
    };
    void refresh_stale(at::ScalarType source_dtype, at::ScalarType dtype, const c10::Device& device);

    mutable std::mutex mutex_;
    std::map<std::pair<const c10::TensorImpl*, at::ScalarType>, Entry> entries_;
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

}  // namespace tewb
