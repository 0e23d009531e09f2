#ifdef TEWB_FUSED_CUDA

// The casts against core's reference cast: delayed, current and block scaling, with and without the transposed copy;
// the high-precision output gradient's cast with its bias gradient.

#include "core/selftest/SelfTestChecks.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ops/stack.h>

#include "core/fp8/BlockScaling.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/amax.h"
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

// The stacked casts (the qkv projection's gradient from the attention's dq, dk and dv where they lie): each the dense
// call on the stacked tensor bit for bit (the copy, the FP8 copy and its transposed copy, amax, the sums), with the
// parts as the attention's backward may leave them: views of one [batch, seq, 3, heads, head_dim] buffer (row stride
// 3 · heads · head_dim), three separate tensors, and a row stride that breaks 16-byte alignment (the plain kernels).
void stacked_casts(Checks& check) {
    struct Case {
        std::int64_t batch, seq, heads, head_dim;
        int layout;  // 0: separate tensors; 1: views of one [batch, seq, 3, heads, head_dim]; 2: a row stride of width + 1
    };
    // {2, 12, 3, 8, 2}: 24 rows, so the dense call takes the wide kernel and the stacked one (odd stride) the plain one.
    const Case cases[] = {{32, 96, 12, 64, 0}, {32, 96, 12, 64, 1}, {2, 12, 3, 8, 2}, {4, 33, 2, 5, 0}};
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const Case& k : cases) {
            const std::int64_t rows = k.batch * k.seq;
            const std::int64_t width = k.heads * k.head_dim;
            const std::string shape = "3 x " + shape_text(rows, width);
            const std::string dtype = dtype_name(input) + (k.layout == 1 ? ", views of one buffer" : k.layout == 2 ? ", odd row stride" : "");
            check.attempt("stacked_cast_dbias", shape, dtype, [&] {
                std::vector<at::Tensor> parts;
                if (k.layout == 1) {
                    const at::Tensor all = (at::randn({k.batch, k.seq, 3, k.heads, k.head_dim}, cuda()) * 4).to(input);
                    parts = all.unbind(2);
                } else {
                    const std::int64_t stride = k.layout == 2 ? width + 1 : width;
                    for (int p = 0; p < 3; ++p) {
                        const at::Tensor rows_of = (at::randn({rows, stride}, cuda()) * 4).to(input);
                        parts.push_back(rows_of.narrow(1, 0, width).view({k.batch, k.seq, k.heads, k.head_dim}));
                    }
                }
                const at::Tensor dense = at::stack(parts, 2).reshape({rows, 3 * width});
                std::vector<kernels::Tensor> refs;
                for (const at::Tensor& part : parts) {
                    kernels::Tensor t = kernels::input(part.data_ptr(), kernel_dtype(input), static_cast<std::size_t>(rows),
                                                       static_cast<std::size_t>(width));
                    t.row_stride = static_cast<std::size_t>(part.stride(1));
                    refs.push_back(t);
                }
                const auto r = static_cast<std::size_t>(rows);
                const auto c = static_cast<std::size_t>(3 * width);
                const auto workspace = [&](std::size_t bytes) { return at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte)); };

                at::Tensor want = poisoned({rows, 3 * width}, at::kBFloat16);
                at::Tensor got = poisoned({rows, 3 * width}, at::kBFloat16);
                at::Tensor want_dbias = poisoned({3 * width}, at::kFloat);
                at::Tensor got_dbias = poisoned({3 * width}, at::kFloat);
                const at::Tensor ws = workspace(kernels::cast_dbias_workspace_bytes(r, c));
                kernels::cast_dbias(kernel_tensor(dense), kernel_tensor(want), kernel_tensor(want_dbias), workspace_ref(ws), kernel_stream());
                kernels::stacked_cast_dbias(refs.data(), 3, kernel_tensor(got), kernel_tensor(got_dbias), workspace_ref(ws), kernel_stream());
                check.exact("stacked_cast_dbias", "out = the dense cast's", shape, dtype, got, want);
                check.exact("stacked_cast_dbias", "dbias bits = the dense cast's", shape, dtype, got_dbias.view(at::kInt),
                            want_dbias.view(at::kInt));

                want_dbias = poisoned({3 * width}, at::kFloat);  // the FP8 stage must write its own sums
                got_dbias = poisoned({3 * width}, at::kFloat);
                const at::Tensor scale = scalar(8.0f);
                at::Tensor want_q = poisoned_fp8({rows, 3 * width});
                at::Tensor want_t = poisoned_fp8({3 * width, rows});
                at::Tensor got_q = poisoned_fp8({rows, 3 * width});
                at::Tensor got_t = poisoned_fp8({3 * width, rows});
                at::Tensor want_amax = at::zeros({1}, cuda().dtype(at::kFloat));
                at::Tensor got_amax = at::zeros({1}, cuda().dtype(at::kFloat));
                const at::Tensor ws8 = workspace(kernels::cast_transpose_dbias_workspace_bytes(r, c));
                kernels::cast_transpose_dbias_to_fp8(kernel_tensor(dense), fp8_out(want_q, want_t, scale, want_amax, kernels::Fp8Type::E4M3),
                                                     kernel_tensor(want_dbias), workspace_ref(ws8), kernel_stream());
                kernels::stacked_cast_transpose_dbias_to_fp8(refs.data(), 3, fp8_out(got_q, got_t, scale, got_amax, kernels::Fp8Type::E4M3),
                                                             kernel_tensor(got_dbias), workspace_ref(ws8), kernel_stream());
                check.exact("stacked_cast_transpose_dbias_to_fp8", "out = the dense cast's", shape, dtype, got_q, want_q);
                check.exact("stacked_cast_transpose_dbias_to_fp8", "out_t = the dense cast's", shape, dtype, got_t, want_t);
                check.exact("stacked_cast_transpose_dbias_to_fp8", "amax = the dense cast's", shape, dtype, got_amax, want_amax);
                // Without sums (a projection without a bias): the dense cast + transpose's bytes.
                at::Tensor plain_q = poisoned_fp8({rows, 3 * width});
                at::Tensor plain_t = poisoned_fp8({3 * width, rows});
                at::Tensor plain_amax = at::zeros({1}, cuda().dtype(at::kFloat));
                kernels::stacked_cast_transpose_dbias_to_fp8(refs.data(), 3, fp8_out(plain_q, plain_t, scale, plain_amax, kernels::Fp8Type::E4M3),
                                                             kernels::Tensor{}, kernels::Workspace{}, kernel_stream());
                check.exact("stacked_cast_transpose_dbias_to_fp8", "out, no sums", shape, dtype, plain_q, want_q);
                check.exact("stacked_cast_transpose_dbias_to_fp8", "out_t, no sums", shape, dtype, plain_t, want_t);
                check.exact("stacked_cast_transpose_dbias_to_fp8", "amax, no sums", shape, dtype, plain_amax, want_amax);
                // The dense x is 16-byte aligned; parts that are not take the plain kernel, whose sums run in another
                // order: bit for bit only where both take the same kernel, else within float32's bound.
                const bool same_kernel = k.layout != 2 && width % (16 / static_cast<std::int64_t>(at::elementSize(input))) == 0;
                if (same_kernel) {
                    check.exact("stacked_cast_transpose_dbias_to_fp8", "dbias bits = the dense cast's", shape, dtype,
                                got_dbias.view(at::kInt), want_dbias.view(at::kInt));
                } else {
                    check.relative("stacked_cast_transpose_dbias_to_fp8", "dbias", shape, dtype, got_dbias,
                                   dense.to(at::kDouble).sum(0).to(at::kFloat), kFloat32Bound);
                }
            });
        }
    }
}

// Current scaling's step before its cast, one launch (abs_max_current_scale): the amax against LibTorch's, the scale
// against core's rule (current_scale_tensor) bit for bit, scale_inv = 1 / scale, and the staging entry the larger amax
// with NaN winning. x starts 0, 1 or 3 elements past a 16-byte boundary (the kernel's head of single elements, then
// 16-byte loads, then a tail), with an inf or NaN planted in the head, the middle or the tail. The multi-tensor form
// (every weight in one launch) against the single calls, bit for bit, with an empty tensor among them.
void current_scales(Checks& check) {
    const auto bits = [](const at::Tensor& t) { return t.to(at::kFloat).view(at::kInt); };
    // A NaN amax is NaN on both sides, whichever NaN: LibTorch's max and the kernel's largest bit pattern differ there.
    const auto same_or_both_nan = [](const at::Tensor& got, const at::Tensor& want) {
        return got.eq(want).logical_or(got.isnan().logical_and(want.isnan())).to(at::kInt);
    };
    const at::Tensor one = at::ones({1}, cuda().dtype(at::kInt));
    const float kNan = std::numeric_limits<float>::quiet_NaN();
    const float kInf = std::numeric_limits<float>::infinity();
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{1000003}, std::int64_t{3072 * 3072}}) {
            for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}}) {
                for (const float special : {0.0f, kInf, kNan}) {
                    const std::string shape = std::to_string(n) + " at +" + std::to_string(offset);
                    const std::string dtype = dtype_name(input) + (special == 0.0f ? "" : std::isnan(special) ? ", a NaN" : ", an inf");
                    check.attempt("abs_max_current_scale", shape, dtype, [&, n = n, offset = offset, special = special] {
                        at::Tensor buffer = (at::randn({n + 8}, cuda()) * 7).to(input);
                        at::Tensor x = buffer.narrow(0, offset, n);
                        if (special != 0.0f) {
                            // The first element (in the head when x is off a 16-byte boundary), the middle and the last.
                            for (const std::int64_t at_index : {std::int64_t{0}, n / 2, n - 1}) x[at_index] = special;
                        }
                        const at::Tensor want_amax = x.abs().max().to(at::kFloat).reshape({1});
                        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
                            const float numerator = kernels::fp8_max(type);
                            const at::Tensor want_scale = current_scale_tensor(want_amax, numerator);
                            const at::Tensor staged = at::full({1}, 0.5f, cuda());
                            const at::Tensor want_staging =
                                at::where(at::isnan(want_amax), want_amax, at::maximum(staged, want_amax));
                            at::Tensor amax = poisoned({1}, at::kFloat);
                            at::Tensor scale = poisoned({1}, at::kFloat);
                            at::Tensor scale_inv = poisoned({1}, at::kFloat);
                            at::Tensor staging = staged.clone();
                            kernels::Tensor source = kernels::input(x.data_ptr(), kernel_dtype(input), 1, static_cast<std::size_t>(n));
                            source.amax = amax.data_ptr<float>();
                            kernels::abs_max_current_scale(source, numerator, kernel_tensor(scale), kernel_tensor(scale_inv),
                                                           kernel_tensor(staging), kernel_stream());
                            const std::string type_dtype = dtype + " -> " + fp8_name(type);
                            check.exact("abs_max_current_scale", "amax", shape, type_dtype, same_or_both_nan(amax, want_amax), one);
                            check.exact("abs_max_current_scale", "scale", shape, type_dtype, bits(scale), bits(want_scale));
                            check.exact("abs_max_current_scale", "scale_inv", shape, type_dtype, bits(scale_inv),
                                        bits(at::reciprocal(want_scale)));
                            check.exact("abs_max_current_scale", "staging", shape, type_dtype, same_or_both_nan(staging, want_staging),
                                        one);
                        }
                    });
                }
            }
        }
    }
    check.attempt("abs_max_current_scale_multi", "7 tensors", "float32, bfloat16", [&] {
        // The seed's weight shapes, float32 as the optimizer keeps them, a bfloat16 one off a 16-byte boundary, an empty one.
        std::vector<at::Tensor> xs = {at::randn({2304, 768}, cuda()),  at::randn({768, 768}, cuda()),
                                      at::randn({3072, 768}, cuda()),  at::randn({768, 3072}, cuda()),
                                      at::randn({5001}, cuda()).to(at::kBFloat16).narrow(0, 1, 5000), at::empty({0}, cuda()),
                                      at::randn({33, 7}, cuda()) * 1e30};
        std::vector<kernels::CurrentScaleItem> items;
        std::vector<at::Tensor> alone, many;  // per tensor: amax, scale, scale_inv, staging
        for (const at::Tensor& x : xs) {
            kernels::Tensor source = kernels::input(x.data_ptr(), kernel_dtype(x.scalar_type()), 1, static_cast<std::size_t>(x.numel()));
            at::Tensor a = at::full({4}, 0.25f, cuda());
            at::Tensor m = a.clone();
            source.amax = a.data_ptr<float>();
            kernels::abs_max_current_scale(source, 448.0f, kernel_tensor(a.narrow(0, 1, 1)), kernel_tensor(a.narrow(0, 2, 1)),
                                           kernel_tensor(a.narrow(0, 3, 1)), kernel_stream());
            source.amax = m.data_ptr<float>();
            items.push_back({source, 448.0f, kernel_tensor(m.narrow(0, 1, 1)), kernel_tensor(m.narrow(0, 2, 1)),
                             kernel_tensor(m.narrow(0, 3, 1))});
            alone.push_back(a);
            many.push_back(m);
        }
        kernels::abs_max_current_scale_multi(items.data(), items.size(), kernel_stream());
        check.exact("abs_max_current_scale_multi", "amax, scale, scale_inv, staging = each alone", "7 tensors", "float32, bfloat16",
                    bits(at::stack(many)), bits(at::stack(alone)));
        // Again with every value a thousand times smaller: a scratch word the first launch left set would show.
        for (std::size_t i = 0; i < xs.size(); ++i) {
            xs[i].mul_(1e-3);
            many[i].fill_(0.25f);
            alone[i].fill_(0.25f);
            kernels::Tensor source = items[i].x;
            source.amax = alone[i].data_ptr<float>();
            kernels::abs_max_current_scale(source, 448.0f, kernel_tensor(alone[i].narrow(0, 1, 1)), kernel_tensor(alone[i].narrow(0, 2, 1)),
                                           kernel_tensor(alone[i].narrow(0, 3, 1)), kernel_stream());
        }
        kernels::abs_max_current_scale_multi(items.data(), items.size(), kernel_stream());
        check.exact("abs_max_current_scale_multi", "the same, a second launch of smaller values", "7 tensors", "float32, bfloat16",
                    bits(at::stack(many)), bits(at::stack(alone)));
    });
}

}  // namespace

void casts(Checks& check) {
    tensor_casts(check);
    bias_gradient_casts(check);
    block_casts(check);
    transposes(check);
    stacked_casts(check);
    current_scales(check);
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
