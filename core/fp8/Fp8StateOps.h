#pragma once

#include <ATen/core/Tensor.h>

#include "core/fp8/Fp8Format.h"
#include "core/fp8/Recipe.h"

namespace tewb {

// The two operations on FP8 state that have kernels: the amax of a tensor a cast records, and the
// update of a pass's amax histories and scales. The ops object a run uses (core/modules/ops/TeOps.h)
// provides both, so whether kernels run is decided once, in one place (core/modules/ops/OpsChoice.h),
// for casts, GEMMs and the recipe alike.
// What a scale update also writes, in the same pass (the kernels: the same launch); each part optional
// (undefined).
struct UpdateRecord {
    // [slots, >= 2] float32, columns contiguous: column 0 <- the staged amax, column 1 <- the scale this step's
    // casts used (block scaling: the new scale, the casts kept their own block scales).
    at::Tensor statistics;
    at::Tensor kept_scale_inv;  // [slots] float32: <- scale_inv before the update
    Fp8Dtype dtype = Fp8Dtype::E4M3;  // the pass's element type (the microscaling recipes' statistics scale needs it)
};

class Fp8StateOps {
public:
    virtual ~Fp8StateOps() = default;

    // max |x| as a float32 scalar tensor on x's device. A NaN in x gives NaN; an empty x gives 0.
    virtual at::Tensor abs_max(const at::Tensor& x) const = 0;

    // Every slot of one pass at once, with the rule of ScaleUpdate.h (current scaling: no history, the
    // staging entries are cleared; block scaling: the scale of the block holding the staged amax): history
    // [slots, L] (entry 0 is the staging entry), scale and scale_inv [slots], all float32 on one device.
    // `numerator` is fp8_max / 2^margin; `record` what is written on the side.
    virtual void update_scaling(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                                float numerator, const UpdateRecord& record) const = 0;
};

// The reference of both, in LibTorch ops: runs on any device and defines the numerics (the kernels are
// checked against it bit for bit).
at::Tensor abs_max_reference(const at::Tensor& x);
void update_scaling_reference(at::Tensor& history, at::Tensor& scale, at::Tensor& scale_inv, const Fp8Recipe& recipe,
                              float numerator, const UpdateRecord& record = {});

// The reference as an Fp8StateOps, for FP8 state used without a run's ops (tests of the recipe itself).
const Fp8StateOps& reference_state_ops();

}  // namespace tewb
