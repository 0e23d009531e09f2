#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device/DeviceInfo.h"

namespace tewb {

// One comparison of a fused kernel against its reference (core's LibTorch math on the same GPU).
// `error` is ‖out − ref‖ / ‖ref‖ for high-precision and dequantized FP8 outputs, the relative amax
// error, or the fraction of mismatched elements where the result must be exact (bound 0). `max_error`
// is the largest single deviation, max |out − ref| / max |ref|: a few bad elements that the norm ratio
// would average away show there. A check whose kernel threw is a failed row with `failure` set.
struct SelfTestCase {
    std::string op;     // e.g. "layer_norm_forward"
    std::string what;   // which output: "out", "dx", "amax", "FP8 transposed"
    std::string shape;  // "3072x768"
    std::string dtype;  // "bfloat16 -> E4M3"
    double error = 0;
    double bound = 0;
    double max_error = 0;
    std::string failure;  // the exception that stopped this check
    bool passed() const { return failure.empty() && error <= bound; }
};

struct SelfTestReport {
    bool ran = false;
    std::string skip_reason;  // why it did not run: no GPU, no kernels in this build
    std::string device;
    std::uint64_t seed = 0;   // of the random inputs, to repeat a failure
    std::vector<SelfTestCase> cases;
    std::string error;        // an error outside every check (a broken device): the run stopped

    bool passed() const;
};

// Runs every fused kernel against its reference on fresh random inputs (odd and prime sizes and the
// model's), outputs poisoned with NaN before each launch so an unwritten element fails; bounds from
// docs/kernels.md. Never throws: each check runs on its own, and one that throws is a failed row.
SelfTestReport run_self_test(const DeviceInfo& device);

std::string render_self_test_table(const SelfTestReport& report);
std::string self_test_json_text(const SelfTestReport& report);

}  // namespace tewb
