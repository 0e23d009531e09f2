#include "core/model/ByteMinimum.h"

namespace tewb {

LayerBytes minimum_layer_bytes(const ModelShape& shape, std::int64_t tokens, bool fp8) {
    const double t = static_cast<double>(tokens);
    const double h = shape.hidden;
    const double f = 4.0 * h;  // MiniGPT's FFN
    const double e = t * h;    // one activation [tokens, hidden]
    const double stats = 2.0 * 4.0 * t;                // LayerNorm's mean and rstd, float32
    const double lse = 4.0 * t * shape.heads;          // the attention's logsumexp, float32
    const double weights = 3 * h * h + h * h + f * h + h * f;
    const double bf = 2.0;
    LayerBytes b;
    if (fp8) {
        const double q = 1.0;  // an FP8 element
        // Forward: LN1 -> FP8 (+T); qkv GEMM; attention; O -> FP8 (+T); proj + residual; LN2 -> FP8 (+T); fc1 (GELU
        // input kept); GELU -> FP8 (+T); fc2 + residual.
        b.forward = (bf * e + 2 * q * e + stats) + (q * e + q * 3 * h * h + bf * 3 * e) + (bf * 3 * e + bf * e + lse) +
                    (bf * e + 2 * q * e) + (q * e + q * h * h + bf * e + bf * e) + (bf * e + 2 * q * e + stats) +
                    (q * e + q * f * h + bf * t * f) + (bf * t * f + 2 * q * t * f) + (q * t * f + q * h * f + bf * e + bf * e);
        // Backward: dy -> FP8 (+T, dbias); fc2 dgrad, wgrad; GELU backward -> FP8 (+T, dbias); fc1 dgrad, wgrad; LN2
        // backward with the residual gradient; -> FP8 (+T, dbias); proj dgrad, wgrad; attention backward; dqkv ->
        // FP8 (+T, dbias); qkv dgrad, wgrad; LN1 backward with the residual gradient. Weight gradients float32.
        b.backward = (bf * e + 2 * q * e) + (q * e + q * h * f + bf * t * f) + (q * e + q * t * f + 4 * h * f) +
                     (2 * bf * t * f + 2 * q * t * f) + (q * t * f + q * f * h + bf * e) + (q * t * f + q * e + 4 * f * h) +
                     (3 * bf * e + stats + bf * e) + (bf * e + 2 * q * e) + (q * e + q * h * h + bf * e) +
                     (2 * q * e + 4 * h * h) + (bf * 3 * e + 2 * bf * e + lse + bf * 3 * e) + (bf * 3 * e + 2 * q * 3 * e) +
                     (q * 3 * e + q * 3 * h * h + bf * e) + (q * 3 * e + q * e + 4 * 3 * h * h) + (3 * bf * e + stats + bf * e);
        b.weight_copies = 4 * weights + 2 * q * weights;
    } else {
        // Forward: LN1; qkv GEMM; attention; proj + residual; LN2; fc1 + GELU (GELU input kept); fc2 + residual.
        b.forward = (bf * e + bf * e + stats) + (bf * e + bf * 3 * h * h + bf * 3 * e) + (bf * 3 * e + bf * e + lse) +
                    (bf * e + bf * h * h + bf * e + bf * e) + (bf * e + bf * e + stats) + (bf * e + bf * f * h + 2 * bf * t * f) +
                    (bf * t * f + bf * h * f + bf * e + bf * e);
        // Backward: fc2 dgrad with GELU backward in its epilogue; fc2 wgrad + dbias; fc1 dgrad; fc1 wgrad + dbias; LN2
        // backward with the residual gradient; proj dgrad; proj wgrad + dbias; attention backward; qkv dgrad; qkv
        // wgrad + dbias; LN1 backward with the residual gradient.
        b.backward = (bf * e + bf * h * f + bf * t * f + bf * t * f) + (bf * e + bf * t * f + 4 * h * f) +
                     (bf * t * f + bf * f * h + bf * e) + (bf * t * f + bf * e + 4 * f * h) + (3 * bf * e + stats + bf * e) +
                     (bf * e + bf * h * h + bf * e) + (2 * bf * e + 4 * h * h) + (bf * 3 * e + 2 * bf * e + lse + bf * 3 * e) +
                     (bf * 3 * e + bf * 3 * h * h + bf * e) + (bf * 3 * e + bf * e + 4 * 3 * h * h) + (3 * bf * e + stats + bf * e);
        b.weight_copies = 4 * weights + bf * weights;
    }
    return b;
}

}  // namespace tewb
