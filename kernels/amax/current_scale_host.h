#pragma once

// The host twins' side of current_scale_epilogue.cuh (the amax hand-off): the largest |value| as the producer stored it,
// over the whole tensor, and current scaling's values from it (recipe_math.h), as the kernel's last block writes them.
// Plain C++.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "recipe/recipe_call.h"
#include "recipe/recipe_math.h"

namespace tewb::kernels::detail {

class StoredAmax {
public:
    // target.scale null: no target (every member then does nothing).
    StoredAmax(const CurrentScaleCall& target, const void* out, DType out_dtype) : target_(target), out_(out), dtype_(out_dtype) {}

    // The largest |value| bits of out's elements [first, first + n), read back as stored (scratch: n floats; 0 with no
    // target).
    std::uint32_t of(std::size_t first, std::size_t n, float* scratch) const { return of(out_, first, n, scratch); }
    // The same over another tensor of the output's dtype (an output written in parts: the attention's dq, dk and dv).
    std::uint32_t of(const void* out, std::size_t first, std::size_t n, float* scratch) const {
        if (target_.scale == nullptr) return 0;
        load_floats(out, dtype_, first, n, scratch);
        std::uint32_t bits = 0;
        for (std::size_t i = 0; i < n; ++i) bits = std::max(bits, abs_bits(scratch[i]));
        return bits;
    }

    // A worker's largest bits (safe from several threads).
    void combine(std::uint32_t bits) { combine_bits_max(bits_, bits); }

    // The scale, scale_inv and staging from the whole tensor's amax.
    void apply() const {
        if (target_.scale == nullptr) return;
        current_scale_values(bits_float(bits_.load()), target_.numerator, target_.scale, target_.scale_inv, target_.staging);
    }

private:
    CurrentScaleCall target_;
    const void* out_;
    DType dtype_;
    std::atomic<std::uint32_t> bits_{0};
};

}  // namespace tewb::kernels::detail
