#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// What LibTorch operators run on the GPU as a CUPTI trace showed it (core/ledger/observed_torch_ops.csv, built into the
// library): the launch ledger counts these in place of its rules. Plain C++: no LibTorch.
namespace tewb {

struct ObservedTorchOp {
    std::string op;  // without its namespace: "native_layer_norm_backward"
    std::uint64_t kernels = 0;
    std::uint64_t helper_kernels = 0;
    std::uint64_t memsets = 0;
    bool memsets_inferred = false;  // the memset count is an inference from the trace, not seen per call
};

// The checked-in table.
const std::vector<ObservedTorchOp>& observed_torch_ops();

// Parses the table's text: one "op,kernels,helper_kernels,memsets,memsets_inferred" line per operator, "#" comments and
// blank lines skipped. Throws DataError naming the line for anything else (a count outside 0 to 16, an op twice).
std::vector<ObservedTorchOp> parse_observed_torch_ops(std::string_view text);

}  // namespace tewb
