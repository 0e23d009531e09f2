#include "core/model/AttentionBackend.h"

#include <ATen/SDPBackend.h>
#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/empty.h>

namespace tewb {

std::string attention_backend(const ModelShape& shape, int batch, at::ScalarType dtype, const c10::Device& device) try {
    const std::int64_t head_dim = shape.hidden / shape.heads;
    // The same strides as the models' q, k, v: the choice depends on layout (the last dimension contiguous).
    const at::Tensor qkv = at::empty({batch, shape.seq, 3, shape.heads, head_dim}, at::TensorOptions().dtype(dtype).device(device))
                               .requires_grad_(true)
                               .permute({2, 0, 3, 1, 4});
    const auto choice =
        static_cast<at::SDPBackend>(at::_fused_sdp_choice(qkv[0], qkv[1], qkv[2], {}, 0.0, /*is_causal=*/true));
    switch (choice) {
        case at::SDPBackend::flash_attention: return "flash";
        case at::SDPBackend::efficient_attention: return "efficient";
        case at::SDPBackend::cudnn_attention: return "cudnn";
        case at::SDPBackend::math: return "math";
        case at::SDPBackend::overrideable: return "overrideable";
        case at::SDPBackend::error: break;
    }
    return "none";
} catch (const std::exception&) {
    return "unknown";  // the device cannot hold the probe (a header written where the run cannot go)
}

}  // namespace tewb
