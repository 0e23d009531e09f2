#pragma once

// Loops the host implementations share: a row of a run-time dtype loaded and stored as floats, and
// independent work split over threads. Splitting only where the result does not depend on it: each index
// computes its own outputs, and what pieces combine is order-free (a max).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/fp8_output.h"
#include "common/host_numbers.h"

namespace tewb::kernels::detail {

// out[i] = p[first + i], i < n, as the kernels' load (the dtype switch outside the loop, so it vectorises).
inline void load_floats(const void* p, DType dtype, std::size_t first, std::size_t n, float* out) {
    switch (dtype) {
        case DType::Float32: std::copy_n(static_cast<const float*>(p) + first, n, out); break;
        case DType::BFloat16: {
            const auto* h = static_cast<const std::uint16_t*>(p) + first;
            for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(h[i]);
            break;
        }
        case DType::Float16: {
            const auto* h = static_cast<const std::uint16_t*>(p) + first;
            for (std::size_t i = 0; i < n; ++i) out[i] = fp16_to_float(h[i]);
            break;
        }
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
}

// p[first + i] = v[i], i < n, rounded as the kernels' store.
inline void store_floats(void* p, DType dtype, std::size_t first, std::size_t n, const float* v) {
    switch (dtype) {
        case DType::Float32: std::copy_n(v, n, static_cast<float*>(p) + first); break;
        case DType::BFloat16: {
            auto* h = static_cast<std::uint16_t*>(p) + first;
            for (std::size_t i = 0; i < n; ++i) h[i] = float_to_bf16(v[i]);
            break;
        }
        case DType::Float16: {
            auto* h = static_cast<std::uint16_t*>(p) + first;
            for (std::size_t i = 0; i < n; ++i) h[i] = float_to_fp16(v[i]);
            break;
        }
        default: break;  // not a type these loads and stores take: its entry point refused it
    }
}

// out[c * rows + r] = in[r * cols + c]: the FP8 transposed copy (as the producing kernels write it), in tiles
// for the cache.
inline void transpose_bytes(const std::uint8_t* in, std::size_t rows, std::size_t cols, std::uint8_t* out) {
    constexpr std::size_t kTile = 64;
    for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
        for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
            const std::size_t r1 = std::min(rows, r0 + kTile);
            const std::size_t c1 = std::min(cols, c0 + kTile);
            for (std::size_t c = c0; c < c1; ++c) {
                for (std::size_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
            }
        }
    }
}

// Runs body(first, last) over [0, count) in contiguous pieces, on up to hardware_concurrency threads when
// the whole (count * cost_per_item, in elements touched) is worth a thread start; otherwise inline.
template <typename Body>
void parallel_for(std::size_t count, std::size_t cost_per_item, const Body& body) {
    constexpr std::size_t kMinCostPerThread = std::size_t{1} << 16;
    const std::size_t total = count * std::max<std::size_t>(cost_per_item, 1);
    const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t pieces = std::min({hardware, count, std::max<std::size_t>(total / kMinCostPerThread, 1)});
    if (pieces <= 1) {
        if (count > 0) body(std::size_t{0}, count);
        return;
    }
    const std::size_t per_piece = (count + pieces - 1) / pieces;
    std::vector<std::thread> helpers;
    helpers.reserve(pieces - 1);
    for (std::size_t first = per_piece; first < count; first += per_piece) {
        helpers.emplace_back([&body, first, last = std::min(count, first + per_piece)] { body(first, last); });
    }
    body(std::size_t{0}, std::min(count, per_piece));
    for (std::thread& helper : helpers) helper.join();
}

// The kernels' amax combine (an atomicMax on the bits), across the pieces of a parallel_for.
inline void combine_bits_max(std::atomic<std::uint32_t>& target, std::uint32_t bits) {
    std::uint32_t seen = target.load(std::memory_order_relaxed);
    while (bits > seen && !target.compare_exchange_weak(seen, bits, std::memory_order_relaxed)) {
    }
}

// y [rows, cols] of `dtype` as stored, cast into fp8 as cast_transpose_to_fp8 casts it: the bytes fp8(y * scale[0]),
// their transposed copy (fp8.transposed required), max |y| combined into fp8.amax as bits (a NaN wins; amax optional).
// The twins of kernels that write a tensor and its FP8 cast in one pass.
inline void quantize_stored(const void* y, DType dtype, std::size_t rows, std::size_t cols, const Fp8Output& fp8) {
    auto* q = static_cast<std::uint8_t*>(fp8.data);
    const float s = *fp8.scale;
    std::uint32_t local = 0;
    std::vector<float> row(cols);
    for (std::size_t r = 0; r < rows; ++r) {
        load_floats(y, dtype, r * cols, cols, row.data());
        for (std::size_t c = 0; c < cols; ++c) {
            q[r * cols + c] = float_to_fp8(row[c] * s, fp8.type);
            local = std::max(local, abs_bits(row[c]));
        }
    }
    if (fp8.amax != nullptr) *fp8.amax = bits_float(std::max(float_bits(*fp8.amax), local));
    transpose_bytes(q, rows, cols, static_cast<std::uint8_t*>(fp8.transposed));
}

}  // namespace tewb::kernels::detail
