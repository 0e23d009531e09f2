#ifdef TEWB_FUSED_CUDA

// The casts against core's reference cast: delayed, current and block scaling, with and without the transposed copy;
// the high-precision output gradient's cast with its bias gradient.

#include "core/selftest/SelfTestChecks.h"

#include <vector>

#include "core/fp8/BlockScaling.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/cast.h"

namespace tewb::selftest {

namespace {

// Tensor-wide scales (delayed and current scaling): the cast, the cast with its transposed copy, and with the
// column sums of a bias gradient, bit for bit against the reference cast.
void tensor_casts(Checks& check) {
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
                        kernels::cast_to_fp8(kernel_tensor(x), fp8_out(out, at::Tensor(), scale_t, amax, type), kernel_stream());
                        check.exact("cast_to_fp8", saturating ? "out (saturating)" : "out", shape, dtype, out, want);
                        check.amax("cast_to_fp8", shape, dtype, amax, want_amax, 0.0);

                        at::Tensor both = poisoned_fp8({rows, cols});
                        at::Tensor both_t = poisoned_fp8({cols, rows});
                        amax.zero_();
                        kernels::cast_transpose_to_fp8(kernel_tensor(x), fp8_out(both, both_t, scale_t, amax, type), kernel_stream());
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
                        kernels::cast_transpose_dbias_to_fp8(kernel_tensor(x), fp8_out(dq, dq_t, scale_t, amax, type),
                                                             kernel_tensor(dbias), workspace_ref(workspace), kernel_stream());
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
}

// cast_dbias, a high-precision Linear's output gradient: the copy in the GEMMs' dtype exactly x.to(dtype), and
// the bias gradient bit for bit the host twin's (the same order of float32 sums, cast_dbias_geometry.h) and
// within its dtype's bound of the double sum. Odd widths take the scalar path, widths a multiple of 4 the
// vectorised one (and the scalar one again when x starts off a 16-byte boundary); 3072 x 768 / 2304 / 3072 are
// the seed's output gradients (proj and fc2, qkv, fc1); past 262144 columns the sums take a second launch.
void bias_gradient_case(Checks& check, at::ScalarType input, at::ScalarType output, std::int64_t rows, std::int64_t cols,
                        at::ScalarType dbias_dtype, bool misaligned) {
    const std::string shape = shape_text(rows, cols);
    const std::string dtype = dtype_name(input) + " -> " +
                              (output == at::ScalarType::Undefined ? std::string("sums only") : dtype_name(output)) +
                              ", dbias " + dtype_name(dbias_dtype) + (misaligned ? ", x off 16 bytes" : "");
    check.attempt("cast_dbias", shape, dtype, [&] {
        // Misaligned: the same values one element into a larger buffer.
        const at::Tensor storage = (at::randn({rows * cols + 1}, cuda()) * 4).to(input);
        const at::Tensor x = storage.narrow(0, misaligned ? 1 : 0, rows * cols).view({rows, cols});
        const at::Tensor out = output == at::ScalarType::Undefined ? at::Tensor() : poisoned({rows, cols}, output);
        at::Tensor dbias = poisoned({cols}, dbias_dtype);
        const std::size_t bytes = kernels::cast_dbias_workspace_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols));
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
        kernels::cast_dbias(kernel_tensor(x), kernel_tensor(out), kernel_tensor(dbias), workspace_ref(workspace), kernel_stream());
        if (out.defined()) check.exact("cast_dbias", "out", shape, dtype, out, x.to(output));
        const at::Tensor x_host = x.cpu();
        at::Tensor dbias_host = at::empty({cols}, at::TensorOptions().dtype(dbias_dtype));
        std::vector<unsigned char> host_workspace(bytes);
        kernels::host::cast_dbias(kernel_tensor(x_host), kernels::Tensor{}, kernel_tensor(dbias_host),
                                  {host_workspace.data(), host_workspace.size()}, {});
        const at::ScalarType bits = dbias_dtype == at::kFloat ? at::kInt : at::kShort;
        check.exact("cast_dbias", "dbias bits = the host twin's", shape, dtype, dbias.view(bits), dbias_host.view(bits).to(at::kCUDA));
        check.relative("cast_dbias", "dbias", shape, dtype, dbias, x.to(at::kDouble).sum(0).to(at::kFloat),
                       dbias_dtype == at::kFloat ? kFloat32Bound : kBf16Bound);
    });
}

void bias_gradient_casts(Checks& check) {
    const Shape shapes[] = {{1, 1},      {3, 1000},    {97, 33},     {97, 768},   {1025, 130},
                            {3072, 768}, {3072, 2304}, {3072, 3072}, {3, 262145}, {2, 262148}};
    for (const at::ScalarType input : {at::kFloat, at::kBFloat16}) {
        for (const at::ScalarType output : {at::ScalarType::Undefined, at::kBFloat16, at::kFloat}) {
            for (const auto& [rows, cols] : shapes) bias_gradient_case(check, input, output, rows, cols, at::kFloat, false);
        }
        bias_gradient_case(check, input, at::kBFloat16, 97, 768, at::kFloat, /*misaligned=*/true);
        bias_gradient_case(check, input, at::kBFloat16, 3072, 768, at::kBFloat16, false);
    }
}

// Float8BlockScaling's cast against core's reference (core/fp8/BlockScaling): both orientations' data and
// per-block scales bit for bit, the scales in cuBLASLt's layout (padding 1), and the tensor's amax; ragged
// shapes included, with an outlier so that blocks get very different scales.
void block_casts(Checks& check) {
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
                            const BlockQuantized want = block_quantize(x, block, type, pow2);
                            const BlockQuantized want_t = block_quantize(x.t(), block, type, pow2);
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
                            kernels::Tensor out = fp8_out(data, data_t, at::Tensor(), amax, type);
                            out.scale_inv = scale_inv.data_ptr<float>();
                            out.transposed_scale_inv = scale_inv_t.data_ptr<float>();
                            out.scale_mode = mode;
                            kernels::block_cast_to_fp8(kernel_tensor(x), out, pow2, kernels::Tensor{}, kernels::Workspace{},
                                                       kernel_stream());
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
}

void transposes(Checks& check) {
    for (const at::ScalarType type : {at::kFloat8_e4m3fn, at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : {Shape{1, 1}, Shape{3, 1000}, Shape{97, 33}, Shape{3072, 768}}) {
            const std::string dtype = std::to_string(c10::elementSize(type)) + "-byte";
            check.attempt("transpose", shape_text(rows, cols), dtype, [&, rows = rows, cols = cols] {
                // Bits: a byte's 256 patterns (NaNs included) and integers for the wider types, compared as bits.
                const at::ScalarType bits = c10::elementSize(type) == 1 ? at::kByte : c10::elementSize(type) == 2 ? at::kShort : at::kInt;
                const at::Tensor x = at::randint(0, 255, {rows, cols}, cuda().dtype(at::kFloat)).to(bits).view(type);
                at::Tensor out = at::full({cols, rows}, 77, cuda().dtype(bits)).view(type);
                kernels::transpose(kernel_tensor(x), kernel_tensor(out), kernel_stream());
                check.exact("transpose", "out", shape_text(rows, cols), dtype, out.view(bits), x.t().contiguous().view(bits));
            });
        }
    }
}

}  // namespace

void casts(Checks& check) {
    tensor_casts(check);
    bias_gradient_casts(check);
    block_casts(check);
    transposes(check);
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
