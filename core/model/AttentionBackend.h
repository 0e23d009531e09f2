#pragma once

#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "core/model/ModelShape.h"

namespace tewb {
class TeOps;
}

namespace tewb {

// Which of LibTorch's scaled_dot_product_attention backends the model's attention runs on (every model calls
// it the same way: q, k and v as views of one [batch, seq, heads + 2 · kv heads, head dim] projection, causal,
// no mask, no dropout, inputs that need gradients; a llama with fewer kv heads than heads with enable_gqa), as
// LibTorch's own dispatcher chooses it for `dtype` on `device`: "flash", "efficient", "cudnn", "math" or
// "overrideable"; "none" when it finds none, "unknown" when the device cannot be asked. Asks without running
// attention (at::_fused_sdp_choice on unfilled tensors of that shape and layout). "tewb" where `ops` (a te model's
// ops; null for a torch model) run the attention themselves for these tensors (TeOps::owns_attention: the project's
// kernels, kernels/attention).
std::string attention_backend(const ModelShape& shape, int batch, at::ScalarType dtype, const c10::Device& device,
                              const TeOps* ops = nullptr);

}  // namespace tewb
