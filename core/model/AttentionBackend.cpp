#include "core/model/AttentionBackend.h"

#include <vector>

#include <ATen/SDPBackend.h>
#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/empty.h>

#include "core/modules/ops/TeOps.h"

namespace tewb {

std::string attention_backend(const ModelShape& shape, int batch, at::ScalarType dtype, const c10::Device& device,
                              const TeOps* ops) try {
    const std::int64_t head_dim = shape.hidden / shape.heads;
    const std::int64_t kv_heads = effective_kv_heads(shape);
    // The same strides as the models' q, k, v: the choice depends on layout (the last dimension contiguous).
    // Both architectures split one [batch, seq, heads + 2 · kv heads, head dim] projection (a gpt's kv heads
    // are its heads); a llama with fewer kv heads asks with enable_gqa, as it calls attention.
    const at::Tensor qkv =
        at::empty({batch, shape.seq, shape.heads + 2 * kv_heads, head_dim}, at::TensorOptions().dtype(dtype).device(device))
            .requires_grad_(true);
    const std::vector<at::Tensor> parts = qkv.split_with_sizes({shape.heads, kv_heads, kv_heads}, 2);
    if (ops != nullptr && ops->owns_attention(parts[0], parts[1], parts[2])) return "tewb";
    const auto choice = static_cast<at::SDPBackend>(at::_fused_sdp_choice(
        parts[0].transpose(1, 2), parts[1].transpose(1, 2), parts[2].transpose(1, 2), {}, 0.0, /*is_causal=*/true,
        std::nullopt, /*enable_gqa=*/kv_heads < shape.heads));
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
