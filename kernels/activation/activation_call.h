#pragma once

// One activation call's checked arguments as the kernels (activation.cu, swiglu.cu) and their host twins
// (activation_host.cpp, swiglu_host.cpp) work on them, and the rules that make them (activation_checks.cpp,
// swiglu_checks.cpp): each fails with KernelError "<call>: <what>" and gives nothing when there is no work (rows or
// cols 0), so an empty call is refused or accepted the same way on both paths.
#include <algorithm>
#include <cstddef>
#include <optional>

#include "common/fp8_output.h"
#include "recipe/recipe_call.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/tensor.h"

namespace tewb::kernels::detail {

// An FP8 output that is wanted (data set), or null.
inline const Fp8Output* wanted(const Fp8Output& fp8) {
    return fp8.data != nullptr ? &fp8 : nullptr;
}

// x gives [rows, cols]; out.data null: no high-precision output; fp8.data null: no FP8 output.
struct GeluForwardCall {
    Tensor x;
    Tensor out;
    Fp8Output fp8{};
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

// x gives [rows, cols] and the dtype of dy and dx.
struct GeluBackwardCall {
    Tensor dy;
    Tensor x;
    Tensor dx;  // data null: not wanted
    Fp8Output fp8{};
    Tensor dbias;  // data null: not wanted
    Workspace workspace;
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

// The backward's dbias partial rows: chunks of about 32 rows, at most 1024 (the workspace holds chunks * cols floats).
// A chunk's rows are a multiple of 8, so every chunk starts on an 8-row piece of the transposed FP8 copy (its stores
// whole); the chunks are those that then have rows. Chunk k holds rows [k * rows_per_chunk, (k + 1) * rows_per_chunk).
constexpr std::size_t kGeluRowsPerChunk = 32;
constexpr std::size_t kGeluMaxChunks = 1024;
constexpr std::size_t gelu_backward_rows_per_chunk(std::size_t rows) {
    const std::size_t wanted = std::clamp<std::size_t>((rows + kGeluRowsPerChunk - 1) / kGeluRowsPerChunk, 1, kGeluMaxChunks);
    const std::size_t per = (rows + wanted - 1) / wanted;
    return std::max<std::size_t>(8, (per + 7) / 8 * 8);
}
constexpr std::size_t gelu_backward_chunks(std::size_t rows) {
    const std::size_t per = gelu_backward_rows_per_chunk(rows);
    return std::max<std::size_t>(1, (rows + per - 1) / per);
}

// The backward's column tile (a block's columns; the dbias arrival counters count these).
constexpr std::size_t kGeluBackwardColumnTile = 64;

std::optional<GeluForwardCall> gelu_forward_call(const char* call, const Tensor& x, const Tensor& out, const Tensor& fp8);
std::optional<GeluBackwardCall> gelu_backward_call(const char* call, const Tensor& dy, const Tensor& x, const Tensor& dx,
                                                   const Tensor& fp8, const Tensor& dbias, const Workspace& workspace);
// The *_current_scale forms: the call's checks with no FP8 output and the output to scale (out, dx) required, and current
// scaling's targets (amax/current_scale_target.h). Nothing when there is no work (the entry point then writes the scale of
// amax 0, as abs_max_current_scale of an empty tensor does).
std::optional<GeluForwardCall> gelu_forward_current_scale_call(const char* call, const Tensor& x, const Tensor& out,
                                                               const CurrentScaleTarget& target);
std::optional<GeluBackwardCall> gelu_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& x,
                                                                 const Tensor& dx, const CurrentScaleTarget& target,
                                                                 const Tensor& dbias, const Workspace& workspace);

// in is [rows, 2 * cols]: the gate's cols columns then the up projection's.
struct SwigluForwardCall {
    Tensor in;
    Tensor out;  // data null: not wanted
    Fp8Output fp8{};
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

struct SwigluBackwardCall {
    Tensor dy;
    Tensor in;
    Tensor din;  // data null: not wanted
    Fp8Output fp8{};
    CurrentScaleCall fresh{};  // scale null: none (the *_current_scale form sets it; amax unused)
};

std::optional<SwigluForwardCall> swiglu_forward_call(const char* call, const Tensor& in, const Tensor& out, const Tensor& fp8);
std::optional<SwigluBackwardCall> swiglu_backward_call(const char* call, const Tensor& dy, const Tensor& in, const Tensor& din,
                                                       const Tensor& fp8);
// The *_current_scale forms, as GELU's.
std::optional<SwigluForwardCall> swiglu_forward_current_scale_call(const char* call, const Tensor& in, const Tensor& out,
                                                                   const CurrentScaleTarget& target);
std::optional<SwigluBackwardCall> swiglu_backward_current_scale_call(const char* call, const Tensor& dy, const Tensor& in,
                                                                     const Tensor& din, const CurrentScaleTarget& target);

}  // namespace tewb::kernels::detail
