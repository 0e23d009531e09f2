#include "core/model/FlopCount.h"

namespace tewb {

double training_flops_per_step(const ModelShape& shape, int batch) {
    const double h = shape.hidden;
    const double s = shape.seq;
    const double per_token_forward = shape.layers * (24.0 * h * h + 4.0 * s * h) + 2.0 * h * shape.vocab;
    return 3.0 * per_token_forward * static_cast<double>(batch) * s;
}

}  // namespace tewb
