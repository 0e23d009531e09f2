#pragma once

// The fast forward's launch (layer_norm_fast.cuh), shared by LayerNorm (normalization.cu) and RMSNorm (rms_norm.cu):
// rows a group each, or with the FP8 output's transposed copy bands of rows staged in shared memory.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/staged_transpose.cuh"
#include "normalization/layer_norm_fast.cuh"

namespace tewb::kernels::detail {

// The fast transposed forward's band: the most rows (64, 32, 16) whose stage fits kFastStageBytes while the grid keeps
// at least kFastBandsWanted blocks, else 8 (whose stage always fits: hidden <= 4096, layer_norm_rule.h). Only the GPU's
// schedule depends on it: each row's arithmetic is the same for any band.
inline constexpr std::size_t kFastStageBytes = 40 * 1024;
inline constexpr std::size_t kFastBandsWanted = 264;  // two blocks per SM of a 132-SM GPU
inline constexpr std::size_t kFreshMaxBlocks = 1056;  // eight blocks per SM of a 132-SM GPU

inline int fast_band_rows(std::size_t rows, std::size_t hidden) {
    const auto pitch = static_cast<std::size_t>(staged_transpose_pitch(static_cast<int>(hidden)));
    for (const std::size_t band : {64, 32, 16}) {
        if (band * pitch <= kFastStageBytes && (rows + band - 1) / band >= kFastBandsWanted) return static_cast<int>(band);
    }
    return 8;
}

// The launch for dispatch_fast (fast_dispatch.cuh). kRms: RMSNorm's kernels (beta and mean null); a template
// parameter so that each .cu file builds only its own norm's kernels.
template <bool kRms>
struct FastForwardLaunch {
    const void* x;
    const void* gamma;
    const void* beta;
    DType param_dtype;
    std::size_t rows, hidden;
    float eps;
    void* out;
    DType out_dtype;
    std::uint8_t* q;
    std::uint8_t* q_t;  // the transposed copy, or null
    const float* scale;
    Fp8Type type;
    float* amax;
    float* mean;
    float* rstd;
    cudaStream_t stream;
    CurrentScaleOut fresh{};  // scale null: none (no FP8 output then)

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        constexpr unsigned kMaxGridX = 2147483647u;
        if (q_t != nullptr) {
            const int band = fast_band_rows(rows, hidden);
            const int pitch = staged_transpose_pitch(static_cast<int>(hidden));
            const std::size_t bands = (rows + static_cast<std::size_t>(band) - 1) / static_cast<std::size_t>(band);
            const auto blocks = static_cast<unsigned>(std::min<std::size_t>(bands, kMaxGridX));
            const std::size_t shared = static_cast<std::size_t>(band) * static_cast<std::size_t>(pitch);
            fast::layer_norm_forward_transposed<T, VECS, WARPS, kRms><<<blocks, fast::kThreads<WARPS>, shared, stream>>>(
                static_cast<const T*>(x), gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), eps, out,
                out_dtype, q, q_t, scale, type, amax, mean, rstd, band, pitch);
            return;
        }
        constexpr int groups = fast::kGroups<WARPS>;
        // With current scaling's target every block takes a ticket and an atomic on one word: at most
        // kFreshMaxBlocks blocks then, each walking more rows (the same arithmetic per row).
        const std::size_t grid_cap = fresh.scale != nullptr ? kFreshMaxBlocks : kMaxGridX;
        const auto blocks = static_cast<unsigned>(std::min<std::size_t>((rows + groups - 1) / groups, grid_cap));
        fast::layer_norm_forward<T, VECS, WARPS, kRms><<<blocks, fast::kThreads<WARPS>, 0, stream>>>(
            static_cast<const T*>(x), gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), eps, out, out_dtype,
            q, scale, type, amax, mean, rstd, fresh);
    }
};

}  // namespace tewb::kernels::detail
