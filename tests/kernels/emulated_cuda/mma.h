#pragma once
// nvcuda::wmma for 16 × 16 × 16 bfloat16 tiles with float32 sums, as the emulated kernels use it: every thread holds the
// whole tile (the real fragments split it over the lanes), products summed k = 0 .. 15 onto the accumulator in order,
// and lane 0 stores the tile (the kernels __syncwarp before reading it). Loads and stores abort where a GPU's would
// fault or be undefined: a pointer not 32-byte aligned, a leading dimension not a multiple of 16 bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "cuda_bf16.h"

namespace nvcuda::wmma {

inline void check_operand(const void* p, unsigned ld, std::size_t element, const char* what) {
    if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0 || (ld * element) % 16 != 0) {
        std::fprintf(stderr, "wmma %s: pointer %p, leading dimension %u of %zu-byte elements: not 32-byte aligned or not a "
                             "multiple of 16 bytes\n", what, p, ld, element);
        std::abort();
    }
}

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16);
    float x[256];  // the tile, [row][col]
};

template <typename Use, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>& f, const __nv_bfloat16* p, unsigned ld) {
    check_operand(p, ld, 2, "load_matrix_sync");
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            const std::size_t at = std::is_same_v<Layout, row_major> ? std::size_t(r) * ld + c : std::size_t(c) * ld + r;
            f.x[r * 16 + c] = __bfloat162float(p[at]);
        }
    }
}

// An accumulator from float32 memory (the attention backward's sums over grouped query heads).
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ld, layout_t layout) {
    check_operand(p, ld, 4, "load_matrix_sync");
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            const std::size_t at = layout == mem_row_major ? std::size_t(r) * ld + c : std::size_t(c) * ld + r;
            f.x[r * 16 + c] = p[at];
        }
    }
}

inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float v) {
    for (float& e : f.x) e = v;
}

template <typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
    float out[256];
    for (int i = 0; i < 16; ++i) {
        for (int j = 0; j < 16; ++j) {
            float s = c.x[i * 16 + j];
            for (int k = 0; k < 16; ++k) s += a.x[i * 16 + k] * b.x[k * 16 + j];
            out[i * 16 + j] = s;
        }
    }
    std::memcpy(d.x, out, sizeof out);
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ld, layout_t layout) {
    check_operand(p, ld, 4, "store_matrix_sync");
    if (threadIdx.x % 32 != 0) return;
    for (int r = 0; r < 16; ++r) {
        for (int c = 0; c < 16; ++c) {
            const std::size_t at = layout == mem_row_major ? std::size_t(r) * ld + c : std::size_t(c) * ld + r;
            p[at] = f.x[r * 16 + c];
        }
    }
}

}  // namespace nvcuda::wmma
