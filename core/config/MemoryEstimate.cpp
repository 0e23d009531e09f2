#include "core/config/MemoryEstimate.h"

#include "core/config/RunFacts.h"
#include "core/model/FlopCount.h"

namespace tewb {

namespace {

// Fitted on the CPU to 28 measured peaks (docs/reliability.md, "The memory estimate"), in bytes: per
// parameter (held at AdamW's 16 bytes and the step's temporaries, 2 more for a 16-bit copy; FP8's fitted), and
// per layer × token × hidden unit; the attention's per layer × token × head × position and the logits' per
// token × vocabulary entry are shared.
struct HostFit {
    double per_parameter;
    double per_layer_token_hidden;
};

constexpr double kHostRuntimeBytes = 0.42e9;
constexpr double kHostAttentionBytes = 0.2;
constexpr double kHostLogitBytes = 14.3;
constexpr double kHostMargin = 1.25;

HostFit host_fit(Backend backend, Precision precision) {
    if (backend == Backend::Torch) return precision == Precision::Fp32 ? HostFit{18.2, 52.7} : HostFit{20.2, 26.9};
    switch (precision) {
        case Precision::Fp8: return {21.9, 69.9};  // the emulated FP8 GEMMs' float copies are saved too
        case Precision::Bf16: return {20.2, 29.3};
        default: return {18.2, 57.4};
    }
}

// The elements a plain LibTorch block saves for its backward per token, in units of the gpt's 16 h (the norms'
// inputs and outputs 4 h, QKV 3 h, attention output h, the MLP's 4 h before and after GELU): the fits above were
// measured on gpts, so a llama's activations scale by its own count: the norms 6 h (LibTorch's CPU rms_norm is a
// composition that also keeps x · rstd), QKV (heads + 2 kv) d, the rotated queries and keys (heads + kv) d,
// attention output h, fc1's 2 f, silu(gate) f and the down projection's input f. Exactly 1 for a gpt. The launch
// ledger's saved bytes per layer agree (llama 92.1 MiB against gpt 64.1 MiB at 4 × 512, seq 128, batch 16: 1.44,
// this count 1.44), and the estimate stays above the measured CPU peaks there (1.14–1.19× for kv 8 and 2, FP32 and BF16).
double activation_scale(const ModelShape& shape) {
    if (shape.arch != Arch::Llama) return 1.0;
    const double h = shape.hidden;
    const double d = h / shape.heads;
    const double kv = effective_kv_heads(shape);
    const double f = static_cast<double>(ffn_hidden(shape));
    const double saved = 7.0 * h + (2.0 * shape.heads + 3.0 * kv) * d + 4.0 * f;
    return saved / (16.0 * h);
}

std::uint64_t clamp(double bytes) {
    constexpr double kMax = 9.0e18;  // below 2^63: the estimate stays printable and comparable
    return static_cast<std::uint64_t>(bytes < kMax ? bytes : kMax);
}

}  // namespace

MemoryEstimate estimate_training_memory(const RunConfig& resolved) {
    // Products of values inside the per-flag limits reach ~1e17: double keeps them exact enough and never wraps.
    const ModelShape& shape = resolved.model;
    const double h = shape.hidden;
    const double s = shape.seq;
    const double v = shape.vocab;
    const double layers = shape.layers;
    const double tokens = static_cast<double>(resolved.batch) * s;
    const double parameters = model_parameters(shape);
    const double scale = activation_scale(shape);
    if (resolved.device == DeviceKind::Cuda) {
        const bool reduced = compute_dtype(resolved.precision) == ComputeDtype::BFloat16;
        const double state = parameters * (16.0 + (reduced ? 2.0 : 0.0));
        const double activations = layers * tokens * (34.0 * h * scale + 5.0 * shape.heads * s) * (reduced ? 2.0 : 4.0) +
                                   tokens * v * 3.0 * 4.0;
        return {clamp(parameters), 0, clamp(state), clamp(activations)};
    }
    const HostFit fit = host_fit(resolved.backend, resolved.precision);
    const double state = parameters * fit.per_parameter;
    const double per_layer_token = h * fit.per_layer_token_hidden * scale + shape.heads * s * kHostAttentionBytes;
    const double activations = layers * tokens * per_layer_token + tokens * v * kHostLogitBytes;
    return {clamp(parameters), clamp(kHostRuntimeBytes * kHostMargin), clamp(state * kHostMargin),
            clamp(activations * kHostMargin)};
}

}  // namespace tewb
