#include "core/fp8/AbsMax.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#if defined(TEWB_HAVE_KERNELS) && defined(TEWB_TORCH_HAS_CUDA)
#include <c10/cuda/CUDAStream.h>

#include "tewb_kernels/amax.h"
#endif

namespace tewb {

at::Tensor abs_max_reference(const at::Tensor& x) {
    if (x.numel() == 0) {
        return at::zeros({}, x.options().dtype(at::kFloat));
    }
    return at::amax(at::abs(x.to(at::kFloat)).reshape({-1}), {0});
}

at::Tensor abs_max(const at::Tensor& x) {
#if defined(TEWB_HAVE_KERNELS) && defined(TEWB_TORCH_HAS_CUDA)
    const auto dtype = x.scalar_type();
    if (x.is_cuda() && (dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf)) {
        const at::Tensor contiguous = x.contiguous();
        at::Tensor out = at::empty({}, x.options().dtype(at::kFloat));
        const kernels::DType kdtype = dtype == at::kFloat      ? kernels::DType::Float32
                                      : dtype == at::kBFloat16 ? kernels::DType::BFloat16
                                                               : kernels::DType::Float16;
        kernels::abs_max(contiguous.data_ptr(), kdtype, static_cast<std::size_t>(contiguous.numel()), out.data_ptr<float>(),
                         c10::cuda::getCurrentCUDAStream(x.device().index()).stream());
        return out;
    }
#endif
    return abs_max_reference(x);
}

}  // namespace tewb
