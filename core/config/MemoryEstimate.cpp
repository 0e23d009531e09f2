#include "core/config/MemoryEstimate.h"

#include "core/config/RunFacts.h"

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
    const double parameters = layers * (12.0 * h * h + 13.0 * h) + v * h + s * h + 2.0 * h;
    if (resolved.device == DeviceKind::Cuda) {
        const bool reduced = compute_dtype(resolved.precision) == ComputeDtype::BFloat16;
        const double state = parameters * (16.0 + (reduced ? 2.0 : 0.0));
        const double activations = layers * tokens * (34.0 * h + 5.0 * shape.heads * s) * (reduced ? 2.0 : 4.0) +
                                   tokens * v * 3.0 * 4.0;
        return {clamp(parameters), 0, clamp(state), clamp(activations)};
    }
    const HostFit fit = host_fit(resolved.backend, resolved.precision);
    const double state = parameters * fit.per_parameter;
    const double activations = layers * tokens * (h * fit.per_layer_token_hidden + shape.heads * s * kHostAttentionBytes) +
                               tokens * v * kHostLogitBytes;
    return {clamp(parameters), clamp(kHostRuntimeBytes * kHostMargin), clamp(state * kHostMargin),
            clamp(activations * kHostMargin)};
}

}  // namespace tewb
