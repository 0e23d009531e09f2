#pragma once

// Which fast normalization kernel (layer_norm_fast.cuh) a call takes, and the dispatch to its template: one rule for
// LayerNorm (normalization.cu) and RMSNorm's backward (rms_norm.cu); the host twins follow it (normalization_host.cpp's
// row_order).
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "common/alignment.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels::detail {

// The fast kernels' shape: threads per row (WARPS warps) and 16-byte vectors per thread (VECS), or 0
// where the plain kernels must run (a row not in whole vectors, unaligned pointers, a row too long).
struct FastShape {
    int warps = 0;
    int vecs = 0;
};

inline FastShape fast_shape(DType x_dtype, std::size_t hidden, std::initializer_list<const void*> pointers) {
    const int width = x_dtype == DType::Float32 ? 4 : 8;
    if (x_dtype == DType::Float16 || hidden % static_cast<std::size_t>(width) != 0) return {};
    for (const void* p : pointers) {
        if (p != nullptr && !aligned(p, 16)) return {};
    }
    for (const int warps : {1, 4, 8}) {
        const std::size_t per_round = static_cast<std::size_t>(32 * warps * width);
        const std::size_t vecs = (hidden + per_round - 1) / per_round;
        if (vecs <= 4) return {warps, static_cast<int>(vecs)};
    }
    return {};
}

// Calls f.template operator()<T, VECS, WARPS>() for the shape.
template <typename T, typename F>
void dispatch_shape(const FastShape& shape, const F& f) {
    const auto with_vecs = [&](auto warps) {
        constexpr int W = decltype(warps)::value;
        switch (shape.vecs) {
            case 1: f.template operator()<T, 1, W>(); break;
            case 2: f.template operator()<T, 2, W>(); break;
            case 3: f.template operator()<T, 3, W>(); break;
            default: f.template operator()<T, 4, W>(); break;
        }
    };
    switch (shape.warps) {
        case 1: with_vecs(std::integral_constant<int, 1>{}); break;
        case 4: with_vecs(std::integral_constant<int, 4>{}); break;
        default: with_vecs(std::integral_constant<int, 8>{}); break;
    }
}

template <typename F>
void dispatch_fast(DType x_dtype, const FastShape& shape, const F& f) {
    if (x_dtype == DType::Float32) {
        dispatch_shape<float>(shape, f);
    } else {
        dispatch_shape<__nv_bfloat16>(shape, f);
    }
}

}  // namespace tewb::kernels::detail
