#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tewb_kernels/gemm_types.h"

// What cuBLASLt runs beside one matmul as observed on a GPU, from observed_library_work.csv (built into the
// library): the device path and the host twin count it alike (launch_count.h, LaunchTally).
namespace tewb::kernels::detail {

struct ObservedLibraryWork {
    std::uint64_t helper_kernels = 0;
    std::uint64_t memsets = 0;
    bool memsets_inferred = false;  // the memset count is an inference from the run, not seen per call
};

// The table's entry for this epilogue and operand type; none when no GPU run observed it.
std::optional<ObservedLibraryWork> observed_gemm_work(Epilogue epilogue, DType operands);

// Parses the table's text: one "epilogue,operands,helper_kernels,memsets,memsets_inferred" line per entry, "#"
// comments and blank lines skipped. Throws std::invalid_argument naming the line for anything else.
struct ObservedGemmRow {
    Epilogue epilogue = Epilogue::None;
    DType operands = DType::BFloat16;
    ObservedLibraryWork work;
};
std::vector<ObservedGemmRow> parse_observed_gemm_work(std::string_view text);

// Counts one call's observed work (or that it was not observed) in the launch tally.
void note_gemm_library_work(Epilogue epilogue, DType operands);

}  // namespace tewb::kernels::detail
