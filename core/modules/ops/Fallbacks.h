#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tewb {

// Every time a fused step hands a call to the reference (an operand its kernels do not take, an epilogue
// cuBLASLt refused), FusedOps notes it here: the run record lists them (execution.fallbacks) and a run
// with any is never reported as fully fused. Process-wide (a run trains on one thread at a time; each
// data-parallel rank is its own process); the trainer clears it when a run starts.
struct FallbackTally {
    std::string op;
    std::string reason;
    std::int64_t count = 0;
};

void note_fallback(std::string_view op, std::string_view reason);
void clear_fallbacks();
std::vector<FallbackTally> fallbacks_noted();  // in the order first seen

}  // namespace tewb
