#include "core/fp8/Fp8Stats.h"

#include <cmath>

#include "core/common/Choice.h"

namespace tewb {

double snr_db(double rel_mse) {
    return -10.0 * std::log10(rel_mse);
}


}  // namespace tewb
