#include "core/model/MemoryEstimate.h"

namespace tewb {

MemoryEstimate estimate_training_memory(const ModelShape& shape, int batch, bool reduced_precision) {
    // Products of values inside the per-flag limits reach ~1e17: double keeps them exact enough and never wraps.
    const double h = shape.hidden;
    const double s = shape.seq;
    const double v = shape.vocab;
    const double tokens = static_cast<double>(batch) * s;
    const double parameters = shape.layers * (12.0 * h * h + 13.0 * h) + v * h + s * h + 2.0 * h;
    const double state = parameters * (16.0 + (reduced_precision ? 2.0 : 0.0));
    const double activation_element = reduced_precision ? 2.0 : 4.0;
    const double activations =
        shape.layers * tokens * (34.0 * h + 5.0 * shape.heads * s) * activation_element + tokens * v * 3.0 * 4.0;
    const auto clamp = [](double bytes) {
        constexpr double kMax = 9.0e18;  // below 2^63: the estimate stays printable and comparable
        return static_cast<std::uint64_t>(bytes < kMax ? bytes : kMax);
    };
    return {clamp(parameters), clamp(state), clamp(activations)};
}

}  // namespace tewb
