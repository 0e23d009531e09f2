#include "core/selftest/SelfTest.h"

#include <chrono>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#ifdef TEWB_FUSED_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/device/Capability.h"
#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/TransformerLayer.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/modules/ops/ReferenceOps.h"
#include "core/train/AutocastScope.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"
#endif

namespace tewb {

#ifdef TEWB_FUSED_CUDA
namespace {

// Bounds of docs/kernels.md.
constexpr double kFloat32Bound = 1e-5;
constexpr double kBf16Bound = 1e-2;
constexpr double kE4m3Bound = 7e-2;
constexpr double kE5m2Bound = 1.3e-1;
constexpr double kComputedAmaxBound = 1e-4;  // the amax of a computed output (LayerNorm, GELU): rounding only

using Shape = std::pair<std::int64_t, std::int64_t>;

// The first line of an exception's text (LibTorch appends a backtrace).
std::string first_line(std::string_view text) {
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

std::string shape_text(std::int64_t a, std::int64_t b) {
    return std::to_string(a) + "x" + std::to_string(b);
}

std::string dtype_name(at::ScalarType t) {
    return t == at::kFloat ? "float32" : "bfloat16";
}

at::ScalarType fp8_of(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

const char* fp8_name(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? "E4M3" : "E5M2";
}

cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

at::TensorOptions cuda() {
    return at::TensorOptions().device(at::kCUDA);
}

// Bytes that read as NaN in both FP8 types: an element the kernel never wrote fails.
at::Tensor poisoned_fp8(at::IntArrayRef sizes) {
    return at::full(sizes, 0x7f, cuda().dtype(at::kByte));
}

at::Tensor poisoned(at::IntArrayRef sizes, at::ScalarType type) {
    return at::full(sizes, NAN, cuda().dtype(type));
}

// core's reference cast (ReferenceOps::quantize): float32 product, clamp to ±fp8_max, convert.
at::Tensor reference_cast(const at::Tensor& x, float scale, kernels::Fp8Type type) {
    const float max = kernels::fp8_max(type);
    return (x.to(at::kFloat) * scale).clamp(-max, max).to(fp8_of(type)).view(at::kByte);
}

at::Tensor dequantize(const at::Tensor& bytes, kernels::Fp8Type type, float scale) {
    return bytes.view(fp8_of(type)).to(at::kFloat) / scale;
}

at::Tensor scalar(float value) {
    return at::full({1}, value, cuda().dtype(at::kFloat));
}

void casts(Checks& check) {
    // 200 x 1000 takes the vectorised cast + transpose with partial tiles; 97 x 768 and the odd shapes the plain one.
    const Shape shapes[] = {{1, 1}, {3, 1000}, {97, 33}, {97, 768}, {200, 1000}, {3072, 768}, {3072, 3072}};
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : shapes) {
                const std::string shape = shape_text(rows, cols);
                const std::string dtype = dtype_name(input) + " -> " + fp8_name(type);
                check.attempt("cast_to_fp8", shape, dtype, [&, rows = rows, cols = cols] {
                    const at::Tensor x = (at::randn({rows, cols}, cuda()) * 20).to(input);
                    const float want_amax = x.abs().max().to(at::kFloat).item<float>();
                    // 1.5: every value fits; 0.25: the largest quarter of the range saturates to ±fp8_max.
                    for (const float headroom : {1.5f, 0.25f}) {
                        const bool saturating = headroom < 1;
                        const float scale = kernels::fp8_max(type) / (want_amax * headroom);
                        const at::Tensor scale_t = scalar(scale);
                        const at::Tensor want = reference_cast(x, scale, type);
                        at::Tensor out = poisoned_fp8({rows, cols});
                        at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
                        kernels::cast_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(x.numel()),
                                             scale_t.data_ptr<float>(), out.data_ptr(), type, amax.data_ptr<float>(), stream());
                        check.exact("cast_to_fp8", saturating ? "out (saturating)" : "out", shape, dtype, out, want);
                        check.amax("cast_to_fp8", shape, dtype, amax, want_amax, 0.0);

                        at::Tensor both = poisoned_fp8({rows, cols});
                        at::Tensor both_t = poisoned_fp8({cols, rows});
                        amax.zero_();
                        kernels::cast_transpose_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(rows),
                                                       static_cast<std::size_t>(cols), scale_t.data_ptr<float>(), both.data_ptr(),
                                                       both_t.data_ptr(), type, amax.data_ptr<float>(), stream());
                        const std::string suffix = saturating ? " (saturating)" : "";
                        check.exact("cast_transpose_to_fp8", "out" + suffix, shape, dtype, both, want);
                        check.exact("cast_transpose_to_fp8", "out_t" + suffix, shape, dtype, both_t, want.t().contiguous());
                        if (!saturating) check.amax("cast_transpose_to_fp8", shape, dtype, amax, want_amax, 0.0);

                        // The same cast with the column sums (a bias gradient) from the same read of x.
                        at::Tensor dq = poisoned_fp8({rows, cols});
                        at::Tensor dq_t = poisoned_fp8({cols, rows});
                        at::Tensor dbias = poisoned({cols}, at::kFloat);
                        const std::size_t bytes =
                            kernels::cast_transpose_dbias_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
                        at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
                        amax.zero_();
                        kernels::cast_transpose_dbias_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(rows),
                                                             static_cast<std::size_t>(cols), scale_t.data_ptr<float>(), dq.data_ptr(),
                                                             dq_t.data_ptr(), type, amax.data_ptr<float>(), dbias.data_ptr(),
                                                             kernels::DType::Float32, workspace.data_ptr(), bytes, stream());
                        check.exact("cast_transpose_dbias_to_fp8", "out" + suffix, shape, dtype, dq, want);
                        check.exact("cast_transpose_dbias_to_fp8", "out_t" + suffix, shape, dtype, dq_t, want.t().contiguous());
                        if (!saturating) {
                            check.amax("cast_transpose_dbias_to_fp8", shape, dtype, amax, want_amax, 0.0);
                            check.relative("cast_transpose_dbias_to_fp8", "dbias", shape, dtype, dbias,
                                           x.to(at::kDouble).sum(0).to(at::kFloat), kFloat32Bound);
                        }
                    }
                });
            }
        }
    }
    // Float8BlockScaling's cast against core's reference (core/fp8/BlockScaling): both orientations' data and
    // per-block scales bit for bit, the scales in cuBLASLt's layout (padding 1), and the tensor's amax; ragged
    // shapes included, with an outlier so that blocks get very different scales.
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : {Shape{1, 1}, Shape{3, 1000}, Shape{130, 300}, Shape{256, 512}, Shape{3072, 768}}) {
                for (const int block_rows : {1, 128}) {
                    for (const bool pow2 : {true, false}) {
                        const std::string shape = shape_text(rows, cols);
                        const std::string dtype = dtype_name(input) + " -> " + fp8_name(type) + (block_rows == 1 ? ", 1x128" : ", 128x128") +
                                                  (pow2 ? ", pow2" : ", exact");
                        check.attempt("block_cast_to_fp8", shape, dtype, [&, rows = rows, cols = cols] {
                            at::Tensor x = (at::randn({rows, cols}, cuda()) * 3).to(input);
                            x.view({-1})[x.numel() / 2] = 1000;  // one outlier block
                            const BlockShape block{block_rows, 128};
                            const Fp8Dtype fp8 = type == kernels::Fp8Type::E4M3 ? Fp8Dtype::E4M3 : Fp8Dtype::E5M2;
                            const BlockQuantized want = block_quantize(x, block, fp8, pow2);
                            const BlockQuantized want_t = block_quantize(x.t(), block, fp8, pow2);
                            const kernels::ScaleMode mode = kernels::block_scale_mode(block_rows);
                            const auto entries = [&](std::int64_t r, std::int64_t c) {
                                return static_cast<std::int64_t>(
                                    kernels::block_scale_entries(mode, static_cast<std::size_t>(r), static_cast<std::size_t>(c)));
                            };
                            at::Tensor data = poisoned_fp8({rows, cols});
                            at::Tensor data_t = poisoned_fp8({cols, rows});
                            at::Tensor scale_inv = poisoned({entries(rows, cols)}, at::kFloat);
                            at::Tensor scale_inv_t = poisoned({entries(cols, rows)}, at::kFloat);
                            at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
                            kernels::BlockCastOutput out;
                            out.data = data.data_ptr();
                            out.scale_inv = scale_inv.data_ptr<float>();
                            out.transposed = data_t.data_ptr();
                            out.transposed_scale_inv = scale_inv_t.data_ptr<float>();
                            out.amax = amax.data_ptr<float>();
                            out.type = type;
                            kernels::block_cast_to_fp8(x.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(rows),
                                                       static_cast<std::size_t>(cols), block_rows, pow2, out, stream());
                            check.exact("block_cast_to_fp8", "data", shape, dtype, data, want.data.view(at::kByte));
                            check.exact("block_cast_to_fp8", "scale_inv", shape, dtype, scale_inv,
                                        block_scales_for_gemm(want.scale_inv, block).reshape({-1}));
                            check.exact("block_cast_to_fp8", "transposed", shape, dtype, data_t, want_t.data.view(at::kByte));
                            check.exact("block_cast_to_fp8", "transposed_scale_inv", shape, dtype, scale_inv_t,
                                        block_scales_for_gemm(want_t.scale_inv, block).reshape({-1}));
                            check.exact("block_cast_to_fp8", "amax", shape, dtype, amax, x.abs().max().to(at::kFloat).reshape({1}));
                        });
                    }
                }
            }
        }
    }
    for (const at::ScalarType type : {at::kByte, at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : {Shape{1, 1}, Shape{3, 1000}, Shape{97, 33}, Shape{3072, 768}}) {
            const std::string dtype = std::to_string(c10::elementSize(type)) + "-byte";
            check.attempt("transpose", shape_text(rows, cols), dtype, [&, rows = rows, cols = cols] {
                const at::Tensor x = at::randint(0, 255, {rows, cols}, cuda().dtype(at::kFloat)).to(type);
                at::Tensor out = at::full({cols, rows}, 77, cuda().dtype(type));
                kernels::transpose(x.data_ptr(), x.element_size(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                                   out.data_ptr(), stream());
                check.exact("transpose", "out", shape_text(rows, cols), dtype, out, x.t().contiguous());
            });
        }
    }
}

void layer_norm_case(Checks& check, at::ScalarType io, at::ScalarType param, std::int64_t rows, std::int64_t hidden,
                     at::ScalarType dy_type) {
    constexpr float eps = 1e-5f;
    const double bound = io == at::kFloat && param == at::kFloat && dy_type == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string shape = shape_text(rows, hidden);
    const std::string dtype = dtype_name(io) + (param == at::kFloat ? "" : ", " + dtype_name(param) + " gamma") +
                              (dy_type == io ? "" : ", " + dtype_name(dy_type) + " dy");
    const at::Tensor x = (at::randn({rows, hidden}, cuda()) * 3 + 0.5).to(io);
    const at::Tensor gamma = (at::randn({hidden}, cuda()) * 0.5 + 1).to(param);
    const at::Tensor beta = (at::randn({hidden}, cuda()) * 0.1).to(param);
    const at::Tensor gamma32 = gamma.to(at::kFloat);
    auto [want, want_mean, want_rstd] = at::native_layer_norm(x.to(at::kFloat), {hidden}, gamma32, beta.to(at::kFloat), eps);
    at::Tensor out = poisoned({rows, hidden}, io);
    at::Tensor mean = poisoned({rows}, at::kFloat);
    at::Tensor rstd = poisoned({rows}, at::kFloat);
    at::Tensor q = poisoned_fp8({rows, hidden});
    at::Tensor q_t = poisoned_fp8({hidden, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (want_amax * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    const kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                 kernels::Fp8Type::E4M3};
    kernels::layer_norm_forward(x.data_ptr(), kernel_dtype(io), gamma.data_ptr(), beta.data_ptr(), kernel_dtype(param),
                                static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden), eps, out.data_ptr(), kernel_dtype(io),
                                &fp8, mean.data_ptr<float>(), rstd.data_ptr<float>(), stream());
    check.relative("layer_norm_forward", "out", shape, dtype, out, want, bound);
    check.relative("layer_norm_forward", "mean", shape, dtype, mean, want_mean.reshape({-1}), kFloat32Bound);
    check.relative("layer_norm_forward", "rstd", shape, dtype, rstd, want_rstd.reshape({-1}), kFloat32Bound);
    check.relative("layer_norm_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("layer_norm_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("layer_norm_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

    const at::Tensor dy = at::randn({rows, hidden}, cuda()).to(dy_type);
    auto [want_dx, want_dgamma, want_dbeta] = at::native_layer_norm_backward(dy.to(at::kFloat), x.to(at::kFloat), {hidden}, want_mean,
                                                                             want_rstd, gamma32, beta.to(at::kFloat), {true, true, true});
    at::Tensor dx = poisoned({rows, hidden}, io);
    at::Tensor dgamma = poisoned({hidden}, param);
    at::Tensor dbeta = poisoned({hidden}, param);
    const std::size_t bytes =
        kernels::layer_norm_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden));
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    kernels::layer_norm_backward(dy.data_ptr(), kernel_dtype(dy_type), x.data_ptr(), kernel_dtype(io), mean.data_ptr<float>(),
                                 rstd.data_ptr<float>(),
                                 gamma.data_ptr(), kernel_dtype(param), static_cast<std::size_t>(rows), static_cast<std::size_t>(hidden),
                                 dx.data_ptr(), dgamma.data_ptr(), dbeta.data_ptr(), workspace.data_ptr(), bytes, stream());
    check.relative("layer_norm_backward", "dx", shape, dtype, dx, want_dx, bound);
    check.relative("layer_norm_backward", "dgamma", shape, dtype, dgamma, want_dgamma, bound);
    check.relative("layer_norm_backward", "dbeta", shape, dtype, dbeta, want_dbeta, bound);
}

void layer_norms(Checks& check) {
    // Fast kernels: one warp per row (768, 1000), a block per row (3072, 4096); plain kernels: 33, 770 (not
    // whole 16-byte vectors); 16384 rows run the backward's grid-stride loop over many rows per block.
    const Shape shapes[] = {{1, 768}, {3, 1000}, {97, 768}, {3072, 768}, {5, 3072}, {7, 33}, {64, 770}, {16384, 4096}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, hidden] : shapes) {
            check.attempt("layer_norm", shape_text(rows, hidden), dtype_name(io),
                          [&, rows = rows, hidden = hidden] { layer_norm_case(check, io, at::kFloat, rows, hidden, io); });
        }
        // BF16 parameters (a model kept in BF16): the kernels read and write gamma's dtype.
        for (const auto& [rows, hidden] : {Shape{97, 768}, Shape{3072, 768}}) {
            check.attempt("layer_norm", shape_text(rows, hidden), dtype_name(io) + ", bfloat16 gamma",
                          [&, rows = rows, hidden = hidden] { layer_norm_case(check, io, at::kBFloat16, rows, hidden, io); });
        }
    }
    // Mixed precision: the float32 residual stream with a bfloat16 gradient.
    for (const auto& [rows, hidden] : {Shape{97, 768}, Shape{3072, 768}}) {
        check.attempt("layer_norm", shape_text(rows, hidden), "float32, bfloat16 dy", [&, rows = rows, hidden = hidden] {
            layer_norm_case(check, at::kFloat, at::kFloat, rows, hidden, at::kBFloat16);
        });
    }
}

void gelu_case(Checks& check, at::ScalarType io, std::int64_t rows, std::int64_t cols) {
    const double bound = io == at::kFloat ? kFloat32Bound : kBf16Bound;
    const std::string dtype = dtype_name(io);
    const std::string shape = shape_text(rows, cols);
    const at::Tensor x = (at::randn({rows, cols}, cuda()) * 2).to(io);
    const at::Tensor want = at::gelu(x.to(at::kFloat), "tanh");
    at::Tensor out = poisoned({rows, cols}, io);
    at::Tensor q = poisoned_fp8({rows, cols});
    at::Tensor q_t = poisoned_fp8({cols, rows});
    const float want_amax = want.abs().max().item<float>();
    const float scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (std::max(want_amax, 1e-30f) * 1.25f);
    const at::Tensor scale_t = scalar(scale);
    at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
    const kernels::Fp8Output fp8{q.data_ptr(), q_t.data_ptr(), scale_t.data_ptr<float>(), amax.data_ptr<float>(),
                                 kernels::Fp8Type::E4M3};
    kernels::gelu_forward(x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), out.data_ptr(),
                          kernel_dtype(io), &fp8, stream());
    check.relative("gelu_forward", "out", shape, dtype, out, want, bound);
    check.relative("gelu_forward", "FP8 out", shape, dtype + " -> E4M3", dequantize(q, kernels::Fp8Type::E4M3, scale), want,
                   kE4m3Bound);
    check.exact("gelu_forward", "FP8 transposed", shape, dtype + " -> E4M3", q_t, q.t().contiguous());
    check.amax("gelu_forward", shape, dtype + " -> E4M3", amax, want_amax, kComputedAmaxBound);

    const at::Tensor dy = at::randn({rows, cols}, cuda()).to(io);
    const at::Tensor want_dx = at::gelu_backward(dy.to(at::kFloat), x.to(at::kFloat), "tanh");
    at::Tensor dx = poisoned({rows, cols}, io);
    at::Tensor dq = poisoned_fp8({rows, cols});
    at::Tensor dq_t = poisoned_fp8({cols, rows});
    const float want_damax = want_dx.abs().max().item<float>();
    const float dscale = kernels::fp8_max(kernels::Fp8Type::E5M2) / (std::max(want_damax, 1e-30f) * 1.25f);
    const at::Tensor dscale_t = scalar(dscale);
    at::Tensor damax = at::zeros({1}, cuda().dtype(at::kFloat));
    at::Tensor dbias = poisoned({cols}, at::kFloat);
    const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
    const kernels::Fp8Output dfp8{dq.data_ptr(), dq_t.data_ptr(), dscale_t.data_ptr<float>(), damax.data_ptr<float>(),
                                  kernels::Fp8Type::E5M2};
    kernels::gelu_backward(dy.data_ptr(), x.data_ptr(), kernel_dtype(io), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                           dx.data_ptr(), &dfp8, dbias.data_ptr(), kernels::DType::Float32, workspace.data_ptr(), bytes, stream());
    check.relative("gelu_backward", "dx", shape, dtype, dx, want_dx, bound);
    check.relative("gelu_backward", "FP8 dx", shape, dtype + " -> E5M2", dequantize(dq, kernels::Fp8Type::E5M2, dscale), want_dx,
                   kE5m2Bound);
    check.exact("gelu_backward", "FP8 transposed dx", shape, dtype + " -> E5M2", dq_t, dq.t().contiguous());
    check.relative("gelu_backward", "dbias", shape, dtype, dbias, want_dx.sum(0), std::max(bound, kFloat32Bound));
    check.amax("gelu_backward", shape, dtype + " -> E5M2", damax, want_damax, kComputedAmaxBound);
}

void gelus(Checks& check) {
    const Shape shapes[] = {{1, 1}, {3, 1000}, {97, 3072}, {3072, 3072}, {7, 33}};
    for (const at::ScalarType io : {at::kFloat, at::kBFloat16}) {
        for (const auto& [rows, cols] : shapes) {
            check.attempt("gelu", shape_text(rows, cols), dtype_name(io),
                          [&, rows = rows, cols = cols] { gelu_case(check, io, rows, cols); });
        }
    }
}

kernels::GemmArgs gemm_args(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, kernels::GemmType type) {
    kernels::GemmArgs g;
    g.m = static_cast<std::size_t>(a.size(0));
    g.n = static_cast<std::size_t>(b.size(0));
    g.k = static_cast<std::size_t>(a.size(1));
    g.a = {a.data_ptr(), type, nullptr};
    g.b = {b.data_ptr(), type, nullptr};
    g.d = d.data_ptr();
    return g;
}

// The kernels' GEMM with a workspace from LibTorch's allocator, as FusedOps gives it.
void run_gemm(kernels::GemmArgs g) {
    const at::Tensor workspace =
        at::empty({static_cast<std::int64_t>(kernels::gemm_workspace_bytes(at::cuda::current_device()))}, cuda().dtype(at::kByte));
    g.workspace = workspace.data_ptr();
    g.workspace_bytes = static_cast<std::size_t>(workspace.numel());
    kernels::gemm(g, stream());
}

std::string gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// A [rows, cols] matrix that starts `offset_bytes` past a 256-byte aligned allocation: the pointer
// alignment cuBLASLt sees is then exactly that offset's.
at::Tensor offset_matrix(const at::Tensor& values, std::int64_t offset_bytes) {
    const std::int64_t skip = offset_bytes / values.element_size();
    at::Tensor storage = at::empty({values.numel() + skip}, values.options());
    at::Tensor view = storage.narrow(0, skip, values.numel()).view(values.sizes());
    view.copy_(values);
    return view;
}

// FP8 operands of a GEMM: a [m, k] in a_type and b [n, k] in E4M3, with their scales and the float32
// product of the dequantized values (the reference).
struct Fp8Operands {
    at::Tensor a8, b8, a_inv, b_inv, product;
};

Fp8Operands fp8_operands(std::int64_t m, std::int64_t n, std::int64_t k, kernels::Fp8Type a_type) {
    const at::Tensor a_hp = at::randn({m, k}, cuda());
    const at::Tensor b_hp = at::randn({n, k}, cuda()) * 0.02;
    const float a_scale = kernels::fp8_max(a_type) / a_hp.abs().max().item<float>();
    const float b_scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / b_hp.abs().max().item<float>();
    Fp8Operands o;
    o.a8 = reference_cast(a_hp, a_scale, a_type);
    o.b8 = reference_cast(b_hp, b_scale, kernels::Fp8Type::E4M3);
    o.a_inv = scalar(1.0f / a_scale);
    o.b_inv = scalar(1.0f / b_scale);
    o.product = at::mm(dequantize(o.a8, a_type, a_scale), dequantize(o.b8, kernels::Fp8Type::E4M3, b_scale).t());
    return o;
}

kernels::GemmArgs fp8_gemm_args(const Fp8Operands& o, kernels::Fp8Type a_type, void* d) {
    kernels::GemmArgs g;
    g.m = static_cast<std::size_t>(o.a8.size(0));
    g.n = static_cast<std::size_t>(o.b8.size(0));
    g.k = static_cast<std::size_t>(o.a8.size(1));
    g.a = {o.a8.data_ptr(), a_type == kernels::Fp8Type::E4M3 ? kernels::GemmType::E4M3 : kernels::GemmType::E5M2,
           o.a_inv.data_ptr<float>()};
    g.b = {o.b8.data_ptr(), kernels::GemmType::E4M3, o.b_inv.data_ptr<float>()};
    g.d = d;
    return g;
}

void plain_gemms(Checks& check) {
    using Triple = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
    for (const auto& [m, n, k] : {Triple{3072, 768, 768}, Triple{3072, 3072, 768}, Triple{3072, 768, 3072}, Triple{97, 1000, 33},
                                  Triple{1, 7, 13}}) {
        check.attempt("gemm", gemm_shape(m, n, k), "bfloat16", [&, m = m, n = n, k = k] {
            const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
            const at::Tensor b = at::randn({n, k}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({m, n}, at::kBFloat16);
            run_gemm(gemm_args(a, b, d, kernels::GemmType::BFloat16));
            check.relative("gemm", "d", gemm_shape(m, n, k), "bfloat16", d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
    // Operands stored transposed (a backward's dy and x as they are).
    for (const auto& [ta, tb] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
        const std::string dtype = std::string("bfloat16, ") + (ta ? "a" : "") + (ta && tb ? " and " : "") + (tb ? "b" : "") +
                                  " stored transposed";
        check.attempt("gemm", "3072x768x768", dtype, [&, ta = ta, tb = tb] {
            const at::Tensor a = at::randn({3072, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor b = at::randn({768, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor a_stored = ta ? a.t().contiguous() : a;
            const at::Tensor b_stored = tb ? b.t().contiguous() : b;
            at::Tensor d = poisoned({3072, 768}, at::kBFloat16);
            kernels::GemmArgs g = gemm_args(a, b, d, kernels::GemmType::BFloat16);
            g.a = {a_stored.data_ptr(), kernels::GemmType::BFloat16, nullptr, ta};
            g.b = {b_stored.data_ptr(), kernels::GemmType::BFloat16, nullptr, tb};
            run_gemm(g);
            check.relative("gemm", "d", "3072x768x768", dtype, d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
    // Operands and output at 16-byte (not 256-byte) aligned addresses: the plan must fit the pointers.
    for (const std::int64_t offset : {16, 32, 48}) {
        const std::string dtype = "bfloat16, pointers at +" + std::to_string(offset) + " bytes";
        check.attempt("gemm", "3072x768x768", dtype, [&] {
            const at::Tensor a = offset_matrix(at::randn({3072, 768}, cuda()).to(at::kBFloat16), offset);
            const at::Tensor b = offset_matrix(at::randn({768, 768}, cuda()).to(at::kBFloat16), offset);
            at::Tensor d = offset_matrix(poisoned({3072, 768}, at::kBFloat16), offset);
            run_gemm(gemm_args(a, b, d, kernels::GemmType::BFloat16));
            check.relative("gemm", "d", "3072x768x768", dtype, d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
}

void fp8_gemms(Checks& check) {
    // Forward (E4M3 x E4M3, fast accumulation) and dgrad (E5M2 x E4M3, split), BF16 output with a bias.
    for (const bool backward : {false, true}) {
        const auto a_type = backward ? kernels::Fp8Type::E5M2 : kernels::Fp8Type::E4M3;
        const std::string dtype = backward ? "E5M2 x E4M3 -> bfloat16, bias" : "E4M3 x E4M3 -> bfloat16, bias";
        check.attempt("gemm", "3072x768x768", dtype, [&] {
            const Fp8Operands o = fp8_operands(3072, 768, 768, a_type);
            const at::Tensor bias = at::randn({768}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({3072, 768}, at::kBFloat16);
            kernels::GemmArgs g = fp8_gemm_args(o, a_type, d.data_ptr());
            g.epilogue = kernels::Epilogue::Bias;
            g.bias = bias.data_ptr();
            g.accumulation = backward ? kernels::Accumulation::Split : kernels::Accumulation::Fast;
            run_gemm(g);
            check.relative("gemm", backward ? "d (split accumulation)" : "d (fast accumulation)", "3072x768x768", dtype, d,
                           o.product + bias.to(at::kFloat), kBf16Bound);
        });
    }
    // The wgrad path: dyᵀ (E5M2) x xᵀ (E4M3) over the tokens, float32 output, split accumulation.
    check.attempt("gemm", "768x768x3072", "E5M2 x E4M3 -> float32", [&] {
        const Fp8Operands o = fp8_operands(768, 768, 3072, kernels::Fp8Type::E5M2);
        at::Tensor d = poisoned({768, 768}, at::kFloat);
        kernels::GemmArgs g = fp8_gemm_args(o, kernels::Fp8Type::E5M2, d.data_ptr());
        g.d_type = kernels::GemmType::Float32;
        run_gemm(g);
        check.relative("gemm", "d (wgrad)", "768x768x3072", "E5M2 x E4M3 -> float32", d, o.product, kFloat32Bound * 100);
    });
    // Float32 output with a bias (BF16, the only bias type cuBLASLt's FP8 kernels take).
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> float32, bias", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        const at::Tensor bias = at::randn({768}, cuda()).to(at::kBFloat16);
        at::Tensor d = poisoned({3072, 768}, at::kFloat);
        kernels::GemmArgs g = fp8_gemm_args(o, kernels::Fp8Type::E4M3, d.data_ptr());
        g.d_type = kernels::GemmType::Float32;
        g.epilogue = kernels::Epilogue::Bias;
        g.bias = bias.data_ptr();
        run_gemm(g);
        check.relative("gemm", "d", "3072x768x768", "E4M3 x E4M3 -> float32, bias", d, o.product + bias.to(at::kFloat),
                       kFloat32Bound * 100);
    });
    // FP8 output: D scaled and cast to E4M3 in the epilogue, with max |D| before scaling.
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> E4M3", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        const float want_amax = o.product.abs().max().item<float>();
        const float d_scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (want_amax * 1.25f);
        const at::Tensor d_scale_t = scalar(d_scale);
        at::Tensor d = poisoned_fp8({3072, 768});
        at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
        kernels::GemmArgs g = fp8_gemm_args(o, kernels::Fp8Type::E4M3, d.data_ptr());
        g.d_type = kernels::GemmType::E4M3;
        g.d_scale = d_scale_t.data_ptr<float>();
        g.d_amax = amax.data_ptr<float>();
        run_gemm(g);
        check.relative("gemm", "FP8 d", "3072x768x768", "E4M3 x E4M3 -> E4M3", dequantize(d, kernels::Fp8Type::E4M3, d_scale),
                       o.product, kE4m3Bound);
        check.amax("gemm", "3072x768x768", "E4M3 x E4M3 -> E4M3", amax, want_amax, kComputedAmaxBound * 10);
    });
    // FP8 operands at 16-byte offsets.
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> bfloat16, pointers at +16 bytes", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        Fp8Operands shifted = o;
        shifted.a8 = offset_matrix(o.a8, 16);
        shifted.b8 = offset_matrix(o.b8, 16);
        at::Tensor d = offset_matrix(poisoned({3072, 768}, at::kBFloat16), 16);
        run_gemm(fp8_gemm_args(shifted, kernels::Fp8Type::E4M3, d.data_ptr()));
        check.relative("gemm", "d", "3072x768x768", "E4M3 x E4M3 -> bfloat16, pointers at +16 bytes", d, o.product, kBf16Bound);
    });
}

// Float8BlockScaling's GEMMs through cuBLASLt's block modes (Hopper), scales in its layout
// (block_scales_for_gemm), against core's emulation of the same quantized operands.
void block_gemms(Checks& check) {
    check.attempt("gemm (block-scaled)", "probe", "E4M3 1x128 x 128x128", [&] {
        if (!kernels::block_gemm_supported(at::cuda::current_device())) {
            throw std::runtime_error("cuBLASLt found no block-scaled FP8 GEMM on this compute capability 9.x GPU");
        }
    });
    struct Case {
        std::int64_t m, n, k;
        BlockShape a_block, b_block;
        at::ScalarType out;
        bool bias;
        const char* what;
    };
    const Case cases[] = {
        {3072, 2304, 768, kActivationBlock, kWeightBlock, at::kBFloat16, true, "E4M3 1x128 x 128x128 -> bfloat16, bias (forward)"},
        {3072, 768, 3072, kActivationBlock, kWeightBlock, at::kBFloat16, false, "E4M3 1x128 x 128x128 -> bfloat16 (dgrad)"},
        {768, 3072, 3072, kActivationBlock, kActivationBlock, at::kFloat, false, "E4M3 1x128 x 1x128 -> float32 (wgrad)"},
        // m and n multiples of 16 (the rule table), n = 400 ends in a partial 128-row weight tile
        {208, 400, 384, kActivationBlock, kWeightBlock, at::kFloat, false, "E4M3 1x128 x 128x128 -> float32, partial tiles"},
    };
    for (const Case& c : cases) {
        const std::string shape = gemm_shape(c.m, c.n, c.k);
        check.attempt("gemm (block-scaled)", shape, c.what, [&] {
            const at::Tensor a_hp = at::randn({c.m, c.k}, cuda()) * 4;
            at::Tensor b_hp = at::randn({c.n, c.k}, cuda()) * 0.02;
            b_hp.narrow(0, 0, 1).mul_(100);  // one tile far larger than the rest: per-block scales matter
            const BlockQuantized a = block_quantize(a_hp, c.a_block, Fp8Dtype::E4M3);
            const BlockQuantized b = block_quantize(b_hp, c.b_block, Fp8Dtype::E4M3);
            const at::Tensor a_scales = block_scales_for_gemm(a.scale_inv, c.a_block);
            const at::Tensor b_scales = block_scales_for_gemm(b.scale_inv, c.b_block);
            const auto mode = [](BlockShape block) {
                return block == kActivationBlock ? kernels::ScaleMode::Block1x128 : kernels::ScaleMode::Block128x128;
            };
            const at::Tensor bias = at::randn({c.n}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({c.m, c.n}, c.out);
            kernels::GemmArgs g;
            g.m = static_cast<std::size_t>(c.m);
            g.n = static_cast<std::size_t>(c.n);
            g.k = static_cast<std::size_t>(c.k);
            g.a = {a.data.data_ptr(), kernels::GemmType::E4M3, a_scales.data_ptr<float>(), false, mode(c.a_block)};
            g.b = {b.data.data_ptr(), kernels::GemmType::E4M3, b_scales.data_ptr<float>(), false, mode(c.b_block)};
            g.d = d.data_ptr();
            g.d_type = gemm_type(c.out);
            if (c.bias) {
                g.epilogue = kernels::Epilogue::Bias;
                g.bias = bias.data_ptr();
            }
            run_gemm(g);
            at::Tensor want = block_gemm_reference(a, b);
            if (c.bias) want = want + bias.to(at::kFloat);
            check.relative("gemm (block-scaled)", "d", shape, c.what, d, want, c.out == at::kFloat ? kFloat32Bound * 100 : kBf16Bound);
        });
    }
}

// d [m, n] = a · bᵀ in bfloat16 operands, each as stored (`transposed`: [k, m] / [k, n]).
kernels::GemmArgs bf16_args(std::int64_t m, std::int64_t n, std::int64_t k, const at::Tensor& a, bool a_transposed,
                            const at::Tensor& b, bool b_transposed, at::Tensor& d) {
    kernels::GemmArgs g;
    g.m = static_cast<std::size_t>(m);
    g.n = static_cast<std::size_t>(n);
    g.k = static_cast<std::size_t>(k);
    g.a = {a.data_ptr(), kernels::GemmType::BFloat16, nullptr, a_transposed};
    g.b = {b.data_ptr(), kernels::GemmType::BFloat16, nullptr, b_transposed};
    g.d = d.data_ptr();
    g.d_type = gemm_type(d.scalar_type());
    return g;
}

// The epilogues as the TE modules use them at the seed shape (FusedOps: gemm_dgelu, wgrad_gemm; fc1's
// GELU_AUX_BIAS is checked above): fc2's dgrad with DGELU_BGRAD reading the weight as stored (b stored
// transposed); wgrad with both operands as stored and a float32 output with BGRADB's bias gradient.
void module_epilogues(Checks& check) {
    const std::int64_t tokens = 3072, hidden = 768, ffn = 3072;
    const at::Tensor x = (at::randn({tokens, hidden}, cuda())).to(at::kBFloat16);
    const at::Tensor w1 = (at::randn({ffn, hidden}, cuda()) * 0.02).to(at::kBFloat16);
    const at::Tensor b1 = at::randn({ffn}, cuda()).to(at::kBFloat16);
    const at::Tensor w2 = (at::randn({hidden, ffn}, cuda()) * 0.02).to(at::kBFloat16);
    const at::Tensor dy = (at::randn({tokens, hidden}, cuda()) * 0.01).to(at::kBFloat16);
    const at::Tensor pre = (at::mm(x.to(at::kFloat), w1.to(at::kFloat).t()) + b1.to(at::kFloat)).to(at::kBFloat16);
    check.attempt("gemm DGELU_BGRAD", gemm_shape(tokens, ffn, hidden), "bfloat16, b = the weight as stored", [&] {
        at::Tensor d = poisoned({tokens, ffn}, at::kBFloat16);
        at::Tensor dbias = poisoned({ffn}, at::kBFloat16);
        kernels::GemmArgs g = bf16_args(tokens, ffn, hidden, dy, false, w2, true, d);  // w2 [hidden, ffn] = w2ᵀ stored transposed
        g.epilogue = kernels::Epilogue::DGeluBGrad;
        g.aux = pre.data_ptr();
        g.aux_ld = static_cast<std::size_t>(ffn);
        g.bias_grad = dbias.data_ptr();
        run_gemm(g);
        const at::Tensor want = at::gelu_backward(at::mm(dy.to(at::kFloat), w2.to(at::kFloat)), pre.to(at::kFloat), "tanh");
        const std::string shape = gemm_shape(tokens, ffn, hidden);
        check.relative("gemm DGELU_BGRAD", "d", shape, "bfloat16, b = the weight as stored", d, want, kBf16Bound);
        check.relative("gemm DGELU_BGRAD", "bias_grad", shape, "bfloat16, b = the weight as stored", dbias, want.sum(0), kBf16Bound);
    });
    check.attempt("gemm BGRADB", gemm_shape(hidden, ffn, tokens), "bfloat16 -> float32, a and b as stored (wgrad)", [&] {
        const at::Tensor act = (at::randn({tokens, ffn}, cuda())).to(at::kBFloat16);
        at::Tensor dw = poisoned({hidden, ffn}, at::kFloat);
        at::Tensor db = poisoned({hidden}, at::kFloat);
        kernels::GemmArgs g = bf16_args(hidden, ffn, tokens, dy, true, act, true, dw);  // dyᵀ and actᵀ stored as dy and act
        g.epilogue = kernels::Epilogue::BGradB;
        g.bias_grad = db.data_ptr();
        run_gemm(g);
        const std::string shape = gemm_shape(hidden, ffn, tokens);
        const std::string dtype = "bfloat16 -> float32, a and b as stored (wgrad)";
        check.relative("gemm BGRADB", "d", shape, dtype, dw, at::mm(dy.to(at::kFloat).t(), act.to(at::kFloat)), kBf16Bound);
        check.relative("gemm BGRADB", "bias_grad", shape, dtype, db, dy.to(at::kFloat).sum(0), kBf16Bound);
    });
}

// Epilogues: GELU with its aux output, DGELU with the bias gradient, BGRADB.
void gemm_epilogues(Checks& check) {
    const std::int64_t m = 256, n = 384, k = 128;
    const std::string shape = gemm_shape(m, n, k);
    const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
    const at::Tensor b = (at::randn({n, k}, cuda()) * 0.1).to(at::kBFloat16);
    const at::Tensor bias = at::randn({n}, cuda()).to(at::kBFloat16);
    const at::Tensor product = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
    const at::Tensor pre = product + bias.to(at::kFloat);
    at::Tensor aux = poisoned({m, n}, at::kBFloat16);
    bool aux_written = false;
    check.attempt("gemm GELU_AUX_BIAS", shape, "bfloat16", [&] {
        at::Tensor d = poisoned({m, n}, at::kBFloat16);
        kernels::GemmArgs g = gemm_args(a, b, d, kernels::GemmType::BFloat16);
        g.epilogue = kernels::Epilogue::GeluAuxBias;
        g.bias = bias.data_ptr();
        g.aux = aux.data_ptr();
        g.aux_ld = static_cast<std::size_t>(n);
        run_gemm(g);
        aux_written = true;
        check.relative("gemm GELU_AUX_BIAS", "aux", shape, "bfloat16", aux, pre, kBf16Bound);
        check.relative("gemm GELU_AUX_BIAS", "d", shape, "bfloat16", d, at::gelu(pre, "tanh"), kBf16Bound);
    });
    if (aux_written) {
        check.attempt("gemm DGELU_BGRAD", shape, "bfloat16", [&] {
            at::Tensor dgelu = poisoned({m, n}, at::kBFloat16);
            at::Tensor dbias = poisoned({n}, at::kBFloat16);
            kernels::GemmArgs g = gemm_args(a, b, dgelu, kernels::GemmType::BFloat16);
            g.epilogue = kernels::Epilogue::DGeluBGrad;
            g.aux = aux.data_ptr();
            g.aux_ld = static_cast<std::size_t>(n);
            g.bias_grad = dbias.data_ptr();
            run_gemm(g);
            const at::Tensor want_dgelu = at::gelu_backward(product, aux.to(at::kFloat), "tanh");
            check.relative("gemm DGELU_BGRAD", "d", shape, "bfloat16", dgelu, want_dgelu, kBf16Bound);
            check.relative("gemm DGELU_BGRAD", "bias_grad", shape, "bfloat16", dbias, want_dgelu.sum(0), kBf16Bound);
        });
    }
    check.attempt("gemm BGRADB", shape, "bfloat16, a stored transposed", [&] {
        at::Tensor plain = poisoned({m, n}, at::kBFloat16);
        at::Tensor row_sums = poisoned({m}, at::kBFloat16);
        const at::Tensor a_t = a.t().contiguous();  // the wgrad's dy as it is: [tokens, out]
        kernels::GemmArgs g = gemm_args(a, b, plain, kernels::GemmType::BFloat16);
        g.a = {a_t.data_ptr(), kernels::GemmType::BFloat16, nullptr, true};
        g.epilogue = kernels::Epilogue::BGradB;
        g.bias_grad = row_sums.data_ptr();
        run_gemm(g);
        check.relative("gemm BGRADB", "d", shape, "bfloat16, a stored transposed", plain, product, kBf16Bound);
        check.relative("gemm BGRADB", "bias_grad", shape, "bfloat16, a stored transposed", row_sums, a.to(at::kFloat).sum(1),
                       kBf16Bound);
    });
    module_epilogues(check);
}

// The recipe kernel (Fp8Context::update on CUDA) against the host rule, bit for bit.
void recipe_case(Checks& check, int len, AmaxAlgo algo) {
    const float specials[] = {0.0f, 1e-37f, 1e-40f, INFINITY, NAN, 3.5f, 1e30f, 0.02f};
    const Fp8Recipe recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, len, algo, 1};
    auto context = std::make_shared<Fp8Context>();
    for (int g = 0; g < 5; ++g) context->add_gemm("g" + std::to_string(g));
    context->prepare(recipe, false, c10::Device(c10::kCUDA, 0), fused_cuda_ops());
    std::int64_t mismatched = 0;
    std::int64_t compared = 0;
    for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
        const int slots = static_cast<int>(context->scales(pass).size(0));
        std::vector<SlotScaleState> host(static_cast<std::size_t>(slots), SlotScaleState(len));
        for (int step = 0; step < 2 * len + 3 && step < 24; ++step) {
            for (int s = 0; s < slots; ++s) {
                const float a = specials[(step * 7 + s * 3) % 8] * (1.0f + 0.125f * static_cast<float>(step % 5));
                host[static_cast<std::size_t>(s)].history[0] = a;
                context->record_amax(pass, s, at::scalar_tensor(a, cuda()));
            }
            context->update(pass);
            const at::Tensor scales = context->scales(pass).cpu();
            const at::Tensor history = context->history(pass).cpu().contiguous();
            for (int s = 0; s < slots; ++s) {
                SlotScaleState& h = host[static_cast<std::size_t>(s)];
                update_delayed(h, fp8_max(context->dtype(pass)), algo, 1);
                const auto same = [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); };
                mismatched += same(scales[s].item<float>(), h.scale) ? 0 : 1;
                const float* row = history.data_ptr<float>() + static_cast<std::ptrdiff_t>(s) * len;
                for (int i = 0; i < len; ++i) mismatched += same(row[i], h.history[static_cast<std::size_t>(i)]) ? 0 : 1;
                compared += len + 1;
            }
        }
    }
    check.mismatches("update_scaling", "scales and histories", "10 slots x " + std::to_string(len),
                     "delayed, " + std::string(to_string(algo)), mismatched, compared);
}

void recipe_updates(Checks& check) {
    for (const int len : {1, 5, 300}) {
        for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
            check.attempt("update_scaling", "10 slots x " + std::to_string(len), "delayed, " + std::string(to_string(algo)),
                          [&] { recipe_case(check, len, algo); });
        }
    }
}

// The glue: one transformer layer (the model's own module) forward and backward through FusedOps
// against the same layer through the reference ops, same weights and input, two steps (the second
// with FP8 scales the first one set).
void layer_glue_case(Checks& check, bool fp8, const Fp8Recipe& recipe) {
    const std::int64_t batch = 4, seq = 96, hidden = 768;
    const std::string shape = std::to_string(batch) + "x" + std::to_string(seq) + "x" + std::to_string(hidden);
    const std::string dtype = !fp8 ? "BF16 autocast"
                              : recipe.scaling == ScalingKind::Block ? "FP8 (block scaling, E4M3), BF16 autocast"
                                                                     : "FP8 (delayed, HYBRID), BF16 autocast";
    const c10::Device device(c10::kCUDA, 0);
    const TransformerLayer::Options options{hidden, 12, 4 * hidden, 0.02, 0.02, kLayerNormEps};
    struct Side {
        std::shared_ptr<Fp8Context> fp8 = std::make_shared<Fp8Context>();
        std::shared_ptr<TransformerLayer> layer;
    };
    Side fused, reference;
    for (Side* side : {&fused, &reference}) {
        ParameterInit init(1234);
        side->layer = std::make_shared<TransformerLayer>("layer", options, init, side->fp8);
        side->layer->to(device);
    }
    const at::Tensor x0 = at::randn({batch, seq, hidden}, cuda());
    const at::Tensor probe = at::randn({batch, seq, hidden}, cuda());
    const Fp8ScopeSettings settings{recipe, false};
    at::Tensor out[2], dx[2];
    for (int step = 0; step < 2; ++step) {
        for (int which = 0; which < 2; ++which) {
            Side& side = which == 0 ? fused : reference;
            const OpsScope ops(which == 0 ? fused_cuda_ops() : reference_ops());
            side.layer->zero_grad();
            const at::Tensor x = x0.clone().requires_grad_(true);
            at::Tensor y;
            {
                AutocastScope autocast(true, c10::kCUDA);
                const Fp8Scope scope(fp8, settings);
                y = side.layer->forward(x);
            }
            (y.to(at::kFloat) * probe).sum().backward();
            out[which] = y.detach().to(at::kFloat);
            dx[which] = x.grad().detach();
        }
    }
    const double bound = fp8 ? kE4m3Bound : kBf16Bound;
    check.relative("te layer (fused vs reference)", "out", shape, dtype, out[0], out[1], bound);
    check.relative("te layer (fused vs reference)", "dx", shape, dtype, dx[0], dx[1], bound);
    const auto fused_params = fused.layer->named_parameters();
    const auto reference_params = reference.layer->named_parameters();
    for (const auto& item : fused_params) {
        const at::Tensor& grad = item.value().grad();
        const at::Tensor* want = reference_params.find(item.key());
        if (!grad.defined() || want == nullptr || !want->grad().defined()) {
            check.mismatches("te layer (fused vs reference)", "grad " + item.key(), shape, dtype, 1, 1);
            continue;
        }
        check.relative("te layer (fused vs reference)", "grad " + item.key(), shape, dtype, grad, want->grad(), bound);
    }
}

// The model's ends and the optimizer through the fused ops against the reference ops on the same GPU: the
// embedding (tokens read with the trainer's row stride, repeated), the tied table's gradient added onto a
// given one, the loss with its in-place gradient, and AdamW with the bfloat16 copies, at the seed's shapes.
void model_ends_case(Checks& check, at::ScalarType dtype) {
    const std::int64_t batch = 32, seq = 96, hidden = 768, vocab = 4096;
    const std::string name = dtype_name(dtype);
    const double bound = dtype == at::kFloat ? kFloat32Bound : kBf16Bound;
    const TeOps& fused = fused_cuda_ops();
    const TeOps& reference = reference_ops();
    const at::Tensor batch_tokens = at::randint(vocab, {batch, seq + 1}, cuda().dtype(at::kLong));
    const at::Tensor tokens = batch_tokens.narrow(1, 0, seq);
    const at::Tensor targets = batch_tokens.narrow(1, 1, seq);
    const at::Tensor table = (at::randn({vocab, hidden}, cuda()) * 0.02).to(dtype);
    const at::Tensor positions = (at::randn({seq, hidden}, cuda()) * 0.02).to(dtype);
    const std::string rows = shape_text(batch * seq, hidden);
    check.exact("embedding_forward", "out", rows, name, fused.embedding_forward(table, positions, tokens),
                reference.embedding_forward(table, positions, tokens));

    const at::Tensor dy = at::randn({batch * seq, hidden}, cuda()).to(dtype);
    const at::Tensor start = at::randn({vocab, hidden}, cuda());
    at::Tensor dtable = start.clone(), want_dtable = start.clone();
    const at::Tensor dpositions = fused.embedding_backward(dy, tokens, dtable, dtype);
    const at::Tensor want_dpositions = reference.embedding_backward(dy, tokens, want_dtable, dtype);
    check.relative("embedding_backward", "dtable (added to a given one)", shape_text(vocab, hidden), name, dtable, want_dtable,
                   kFloat32Bound);
    check.relative("embedding_backward", "dpositions", shape_text(seq, hidden), name, dpositions, want_dpositions, bound);

    const at::Tensor logits = (at::randn({batch * seq, vocab}, cuda()) * 2).to(dtype);
    at::Tensor grad = logits.clone(), want_grad = logits.clone();
    const at::Tensor loss = fused.cross_entropy_with_grad(grad, targets);
    const at::Tensor want_loss = reference.cross_entropy_with_grad(want_grad, targets);
    const std::string logits_shape = shape_text(batch * seq, vocab);
    check.relative("cross_entropy_with_grad", "loss", logits_shape, name, loss, want_loss, kFloat32Bound);
    check.relative("cross_entropy_with_grad", "dlogits (in place)", logits_shape, name, grad, want_grad, bound);
}

void adamw_case(Checks& check) {
    const TeOps& fused = fused_cuda_ops();
    const TeOps& reference = reference_ops();
    std::vector<at::Tensor> params[2], grads, exp_avg[2], exp_avg_sq[2], copies[2];
    for (const std::vector<std::int64_t>& shape : std::vector<std::vector<std::int64_t>>{{4096, 768}, {2304, 768}, {2304}, {7}}) {
        const at::Tensor p = at::randn(shape, cuda());
        grads.push_back(at::randn(shape, cuda()) * 0.01);
        for (int side = 0; side < 2; ++side) {
            params[side].push_back(p.clone());
            exp_avg[side].push_back(at::zeros_like(p));
            exp_avg_sq[side].push_back(at::zeros_like(p));
            copies[side].push_back(at::empty_like(p, p.options().dtype(at::kBFloat16)));
        }
    }
    const at::Tensor steps[2] = {at::zeros({}, cuda()), at::zeros({}, cuda())};
    const AdamWHyper hyper{3e-4, 0.9, 0.95, 1e-8, 0.1};
    for (int step = 0; step < 3; ++step) {
        fused.adamw_step(params[0], grads, exp_avg[0], exp_avg_sq[0], steps[0], copies[0], {}, hyper);
        reference.adamw_step(params[1], grads, exp_avg[1], exp_avg_sq[1], steps[1], copies[1], {}, hyper);
    }
    const std::string shape = "4 tensors, 5.0M elements, 3 steps";
    check.exact("adamw_step", "step", shape, "float32", steps[0], steps[1]);
    for (std::size_t i = 0; i < grads.size(); ++i) {
        const std::string what = "tensor " + std::to_string(i);
        check.relative("adamw_step", what + " param", shape, "float32", params[0][i], params[1][i], kFloat32Bound);
        check.relative("adamw_step", what + " exp_avg", shape, "float32", exp_avg[0][i], exp_avg[1][i], kFloat32Bound);
        check.relative("adamw_step", what + " exp_avg_sq", shape, "float32", exp_avg_sq[0][i], exp_avg_sq[1][i], kFloat32Bound);
        check.exact("adamw_step", what + " bfloat16 copy", shape, "bfloat16", copies[0][i], params[0][i].to(at::kBFloat16));
    }

    // A fourth step that also writes the two weights' FP8 copies (delayed scaling, a scale that is not 1): the
    // cast kernel's bytes on the new weights, and the amax it records.
    auto context = std::make_shared<Fp8Context>();
    for (int g = 0; g < 2; ++g) context->add_gemm("w" + std::to_string(g));
    context->prepare(Fp8Recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, 4, AmaxAlgo::Max, 0}, false, c10::Device(c10::kCUDA, 0),
                     fused_cuda_ops());
    const std::vector<OptimizerFp8Cast> fp8 = {{0, {context, Fp8Pass::Forward, 1}}, {1, {context, Fp8Pass::Forward, 4}}};
    for (const OptimizerFp8Cast& c : fp8) context->record_amax(c.quantizer.pass, c.quantizer.slot, at::scalar_tensor(3.5f, cuda()));
    context->update(Fp8Pass::Forward);
    context->history(Fp8Pass::Forward).select(1, 0).zero_();
    const std::vector<Fp8Tensor> written = fused.adamw_step(params[0], grads, exp_avg[0], exp_avg_sq[0], steps[0], copies[0], fp8, hyper);
    const at::Tensor amaxes = context->history(Fp8Pass::Forward).select(1, 0).clone();
    context->history(Fp8Pass::Forward).select(1, 0).zero_();
    const std::vector<Fp8Tensor> cast =
        fused.quantize_weights({{params[0][0], fp8[0].quantizer}, {params[0][1], fp8[1].quantizer}});
    const std::string fp8_shape = "2 weights, step 4";
    for (std::size_t i = 0; i < fp8.size(); ++i) {
        const std::string what = "weight " + std::to_string(i);
        check.exact("adamw_step", what + " FP8 copy", fp8_shape, "e4m3", written[i].data.view(at::kByte), cast[i].data.view(at::kByte));
        check.exact("adamw_step", what + " FP8 transposed copy", fp8_shape, "e4m3", written[i].transposed.view(at::kByte),
                    cast[i].transposed.view(at::kByte));
    }
    check.exact("adamw_step", "amaxes recorded", fp8_shape, "float32", amaxes, context->history(Fp8Pass::Forward).select(1, 0));
}

void model_ends(Checks& check) {
    for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        check.attempt("model ends (fused vs reference)", "32x96, vocab 4096", dtype_name(dtype), [&] { model_ends_case(check, dtype); });
    }
    check.attempt("adamw_step", "4 tensors", "float32", [&] { adamw_case(check); });
}

void layer_glue(Checks& check, bool fp8_capable, bool block_capable) {
    for (const bool fp8 : {false, true}) {
        if (fp8 && !fp8_capable) continue;
        check.attempt("te layer (fused vs reference)", "4x96x768", fp8 ? "FP8" : "BF16",
                      [&] { layer_glue_case(check, fp8, Fp8Recipe::seed_defaults()); });
    }
    if (block_capable) {
        Fp8Recipe block = Fp8Recipe::seed_defaults();
        block.scaling = ScalingKind::Block;
        block.format = RecipeFormat::E4M3;
        check.attempt("te layer (fused vs reference)", "4x96x768", "FP8 block scaling",
                      [&] { layer_glue_case(check, true, block); });
    }
}

}  // namespace
#endif

SelfTestReport run_self_test([[maybe_unused]] const DeviceInfo& device) {
    SelfTestReport report;
#ifndef TEWB_FUSED_CUDA
    report.skip_reason = "this build has no fused kernels (configured without nvcc, TEWB_BUILD_KERNELS=OFF, or a CPU-only LibTorch)";
    return report;
#else
    if (!device.has_gpu()) {
        report.skip_reason = "no usable CUDA device: " + device.gpu_error;
        return report;
    }
    if (*device.compute_capability < kTeMinimum) {
        report.skip_reason = "the fused kernels need compute capability " + kTeMinimum.to_string() + "; this GPU has " +
                             device.compute_capability->to_string();
        return report;
    }
    report.ran = true;
    report.device = device.gpu_name + " (compute capability " + device.compute_capability->to_string() + ")";
    report.seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    try {
        at::manual_seed(report.seed);
        Checks check(report);
        casts(check);
        layer_norms(check);
        gelus(check);
        plain_gemms(check);
        const bool fp8 = *device.compute_capability >= kFp8Minimum;  // cuBLASLt's FP8 GEMMs
        if (fp8) fp8_gemms(check);
        // cuBLASLt's block-scaled FP8 modes, as detection found them; on Hopper their absence is itself a failure,
        // which block_gemms' probe row reports.
        if (device.block_fp8_gemms || device.compute_capability->major == 9) block_gemms(check);
        gemm_epilogues(check);
        recipe_updates(check);
        model_ends(check);
        layer_glue(check, fp8, device.block_fp8_gemms);
        at::cuda::getCurrentCUDAStream().synchronize();
    } catch (const std::exception& e) {
        report.error = e.what();
    }
    return report;
#endif
}

}  // namespace tewb
