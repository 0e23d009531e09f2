#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include "core/fp8/Fp8Format.h"
#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_type.h"
#include "tewb_kernels/gemm_types.h"
#include "tewb_kernels/tensor.h"

namespace tewb {

// LibTorch's element types as the kernels library names them: one mapping for the fused ops and the
// self-test. A type the kernels do not take throws std::invalid_argument naming it, never maps to
// something else.
kernels::DType kernel_dtype(at::ScalarType type);  // float32, bfloat16, float16, float8 e4m3fn/e5m2, int64
kernels::DType kernel_dtype(kernels::Fp8Type type);  // an FP8 format's element type

// A tensor as the kernels take it: [rows, cols] for a 2-D one, [1, n] for one of another rank (a vector); an
// undefined tensor has no data (an output not wanted).
kernels::Tensor kernel_tensor(const at::Tensor& t);
// A byte tensor as a kernel's workspace.
kernels::Workspace workspace_ref(const at::Tensor& bytes);

}  // namespace tewb
