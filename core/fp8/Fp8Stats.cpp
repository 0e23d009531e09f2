#include "core/fp8/Fp8Stats.h"

#include <cmath>
#include <limits>

#include "core/common/Choice.h"

namespace tewb {

double snr_db(double rel_mse) {
    return -10.0 * std::log10(rel_mse);
}

std::string_view what_if_title(WhatIf what_if) {
    switch (what_if) {
        case WhatIf::Current: return "current scaling";
        case WhatIf::Block: return "block scaling";
        case WhatIf::Mxfp8: return "MXFP8";
        case WhatIf::Nvfp4: return "NVFP4";
    }
    return "?";
}

std::string_view what_if_column(WhatIf what_if) {
    return what_if == WhatIf::Current || what_if == WhatIf::Block ? to_string(what_if) : what_if_title(what_if);
}

std::int64_t Fp8ScaleHistogram::blocks() const {
    std::int64_t sum = empty_blocks;
    for (const std::int64_t c : counts) {
        if (__builtin_add_overflow(sum, c, &sum)) return std::numeric_limits<std::int64_t>::max();  // saturates
    }
    return sum;
}

}  // namespace tewb
