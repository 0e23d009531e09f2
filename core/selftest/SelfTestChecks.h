#pragma once

// The self-test's shared parts: its bounds, the Checks that turn comparisons into report rows, and the
// helpers every kernel family's checks use. Only for the files of core/selftest, in builds with the fused
// CUDA kernels (TEWB_FUSED_CUDA).

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "tewb_kernels/tensor.h"
#include "core/fp8/Fp8Tensor.h"
#include "tewb_kernels/amax.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/selftest/SelfTest.h"
#include "tewb_kernels/fp8_type.h"

namespace tewb::selftest {

// Bounds of docs/kernels.md.
inline constexpr double kFloat32Bound = 1e-5;
inline constexpr double kBf16Bound = 1e-2;
inline constexpr double kE4m3Bound = 7e-2;
inline constexpr double kE5m2Bound = 1.3e-1;
inline constexpr double kComputedAmaxBound = 1e-4;  // the amax of a computed output (LayerNorm, GELU): rounding only

using Shape = std::pair<std::int64_t, std::int64_t>;

// The first line of an exception's text (LibTorch appends a backtrace).
inline std::string first_line(std::string_view text) {
    return std::string(text.substr(0, text.find('\n')));
}

class Checks {
public:
    explicit Checks(SelfTestReport& report) : report_(report) {}

    void relative(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
                  const at::Tensor& got, const at::Tensor& want, double bound) {
        const at::Tensor g = got.to(at::kDouble);
        const at::Tensor w = want.to(at::kDouble);
        const double norm = w.norm().item<double>();
        double error = (g - w).norm().item<double>() / (norm > 0 ? norm : 1.0);
        if (std::isnan(error)) error = INFINITY;  // an unwritten (poisoned) element
        const double peak = w.abs().max().item<double>();
        double worst = (g - w).abs().max().item<double>() / (peak > 0 ? peak : 1.0);
        if (std::isnan(worst)) worst = INFINITY;
        add(op, what, shape, dtype, error, bound, worst);
    }

    // The fraction of elements that differ: results that must be exact.
    void exact(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
               const at::Tensor& got, const at::Tensor& want) {
        const double mismatched = got.ne(want).sum().item<double>() / static_cast<double>(std::max<std::int64_t>(1, want.numel()));
        add(op, what, shape, dtype, mismatched, 0.0, mismatched);
    }

    void amax(const std::string& op, const std::string& shape, const std::string& dtype, const at::Tensor& got, float want,
              double bound) {
        const float g = got.item<float>();
        double error = want > 0 ? std::abs(static_cast<double>(g) - want) / want : std::abs(static_cast<double>(g));
        if (std::isnan(g)) error = INFINITY;
        add(op, "amax", shape, dtype, error, bound, error);
    }

    // Elements that differ, already counted: results that must be exact.
    void mismatches(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype,
                    std::int64_t mismatched, std::int64_t compared) {
        const double fraction = static_cast<double>(mismatched) / static_cast<double>(std::max<std::int64_t>(1, compared));
        add(op, what, shape, dtype, fraction, 0.0, fraction);
    }

    // Runs one check on its own: an exception (a refused argument, a CUDA or cuBLASLt error) becomes a
    // failed row and the next check still runs. A sticky CUDA error fails every later check likewise.
    template <typename Body>
    void attempt(const std::string& op, const std::string& shape, const std::string& dtype, Body&& body) {
        try {
            body();
        } catch (const std::exception& e) {
            SelfTestCase failed{op, "-", shape, dtype, INFINITY, 0.0, INFINITY, first_line(e.what())};
            report_.cases.push_back(std::move(failed));
            (void)cudaGetLastError();  // clear a non-sticky error so that it is not blamed on the next check
        }
    }

private:
    void add(const std::string& op, const std::string& what, const std::string& shape, const std::string& dtype, double error,
             double bound, double worst) {
        report_.cases.push_back({op, what, shape, dtype, error, bound, worst, {}});
    }

    SelfTestReport& report_;
};

inline std::string shape_text(std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "x" + std::to_string(b);
}

inline std::string dtype_name(at::ScalarType t) {
    return std::string(kernels::to_string(t == at::kFloat ? kernels::DType::Float32 : kernels::DType::BFloat16));
}

inline at::ScalarType fp8_of(kernels::Fp8Type type) {
    return to_scalar_type(type);
}

inline const char* fp8_name(kernels::Fp8Type type) {
    return kernels::fp8_type_name(type);
}

inline cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

// An FP8 output as the kernels take it: data [rows, cols] of `type`, its transposed copy when defined, scale and amax.
inline kernels::Tensor fp8_out(const at::Tensor& data, const at::Tensor& transposed, const at::Tensor& scale, const at::Tensor& amax,
                        kernels::Fp8Type type) {
    kernels::Tensor out = kernels::input(data.data_ptr(), kernels::fp8_dtype(type), static_cast<std::size_t>(data.size(0)),
                                         static_cast<std::size_t>(data.size(1)));
    out.transposed = transposed.defined() ? transposed.data_ptr() : nullptr;
    out.scale = scale.defined() ? scale.data_ptr<float>() : nullptr;
    out.amax = amax.defined() ? amax.data_ptr<float>() : nullptr;
    return out;
}

// The same stream as the kernels' entry points take it.
inline kernels::Stream kernel_stream() {
    return kernels::Stream{stream()};
}

inline at::TensorOptions cuda() {
    return at::TensorOptions().device(at::kCUDA);
}

// Bytes that read as NaN in both FP8 types: an element the kernel never wrote fails.
inline at::Tensor poisoned_fp8(at::IntArrayRef sizes) {
    return at::full(sizes, 0x7f, cuda().dtype(at::kByte));
}

inline at::Tensor poisoned(at::IntArrayRef sizes, at::ScalarType type) {
    return at::full(sizes, NAN, cuda().dtype(type));
}

// core's reference cast (ReferenceOps::quantize): float32 product, clamp to ±fp8_max, convert.
inline at::Tensor reference_cast(const at::Tensor& x, float scale, kernels::Fp8Type type) {
    const float max = kernels::fp8_max(type);
    return (x.to(at::kFloat) * scale).clamp(-max, max).to(fp8_of(type)).view(at::kByte);
}

inline at::Tensor dequantize(const at::Tensor& bytes, kernels::Fp8Type type, float scale) {
    return bytes.view(fp8_of(type)).to(at::kFloat) / scale;
}

// Current scaling's target in f's three floats: scale, scale_inv, staging.
inline kernels::CurrentScaleTarget current_scale_target(const at::Tensor& f, float numerator) {
    kernels::CurrentScaleTarget t;
    t.numerator = numerator;
    t.scale = kernel_tensor(f.narrow(0, 0, 1));
    t.scale_inv = kernel_tensor(f.narrow(0, 1, 1));
    t.staging = kernel_tensor(f.narrow(0, 2, 1));
    return t;
}

inline at::Tensor scalar(float value) {
    return at::full({1}, value, cuda().dtype(at::kFloat));
}

// One entry per kernel family, each in its own file beside its checks.
void casts(Checks& check);                        // CastChecks.cpp
void layer_norms(Checks& check);                  // NormActivationChecks.cpp
void gelus(Checks& check);                        // NormActivationChecks.cpp
void swiglus(Checks& check);                      // NormActivationChecks.cpp
void rotaries(Checks& check);                     // RotaryChecks.cpp
void attentions(Checks& check);                   // AttentionChecks.cpp
void microscaling(Checks& check);                 // MxChecks.cpp
void plain_gemms(Checks& check);                  // GemmChecks.cpp
void fp8_gemms(Checks& check);                    // GemmChecks.cpp
void block_gemms(Checks& check);                  // GemmChecks.cpp
void gemm_epilogues(Checks& check);               // GemmChecks.cpp
void recipe_updates(Checks& check);               // ModuleChecks.cpp
void model_ends(Checks& check);                   // ModuleChecks.cpp
void layer_glue(Checks& check, bool fp8_capable, bool block_capable);  // ModuleChecks.cpp

}  // namespace tewb::selftest
