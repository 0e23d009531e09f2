#include "core/model/FlopCount.h"

namespace tewb {

namespace {

// The QKV projection's output width: (heads + 2 kv) d, which is 3 h without grouped-query attention.
double qkv_width(const ModelShape& shape) {
    const double d = static_cast<double>(shape.hidden) / shape.heads;
    return (shape.heads + 2.0 * effective_kv_heads(shape)) * d;
}

}  // namespace

double training_flops_per_step(const ModelShape& shape, int batch) {
    const double h = shape.hidden;
    const double s = shape.seq;
    double matrices = 24.0 * h * h;
    if (shape.arch == Arch::Llama) {
        matrices = 2.0 * h * qkv_width(shape) + 2.0 * h * h + 6.0 * h * static_cast<double>(ffn_hidden(shape));
    }
    const double per_token_forward = shape.layers * (matrices + 4.0 * s * h) + 2.0 * h * shape.vocab;
    return 3.0 * per_token_forward * static_cast<double>(batch) * s;
}

double model_parameters(const ModelShape& shape) {
    const double h = shape.hidden;
    const double v = shape.vocab;
    if (shape.arch == Arch::Llama) {
        const double f = static_cast<double>(ffn_hidden(shape));
        return shape.layers * (h * qkv_width(shape) + h * h + 3.0 * h * f + 2.0 * h) + v * h + h;
    }
    return shape.layers * (12.0 * h * h + 13.0 * h) + v * h + shape.seq * h + 2.0 * h;
}

}  // namespace tewb
