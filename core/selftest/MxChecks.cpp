// The microscaling casts and the Hadamard transform (tewb_kernels/mx.h) on the GPU against their host twins on the
// same input, bit for bit: data, block scales in cuBLASLt's layout (padding included), both copies, NVFP4's tensor
// scale; nearest and stochastic rounding, 1 × 16 blocks and 16 × 16 tiles; ragged shapes and an outlier.
#ifdef TEWB_FUSED_CUDA
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include <ATen/ATen.h>

#include "core/selftest/SelfTestChecks.h"
#include "tewb_kernels/mx.h"

namespace tewb::selftest {

namespace {

std::size_t size_of(std::int64_t n) {
    return static_cast<std::size_t>(n);
}

// A byte tensor [rows, cols] on `options`' device as a kernel tensor of `dtype`.
kernels::Tensor bytes_tensor(const at::Tensor& t, kernels::DType dtype) {
    return kernels::input(t.data_ptr(), dtype, size_of(t.size(0)), size_of(t.size(1)));
}

// Byte buffers for one microscaling output of [rows, cols] values stored in `value_cols` bytes a row.
struct MxBuffers {
    at::Tensor data, scales;
    MxBuffers(std::int64_t rows, std::int64_t cols, std::int64_t value_cols, std::size_t block, const at::TensorOptions& o)
        : data(at::full({rows, value_cols}, 0xAA, o.dtype(at::kByte))),
          scales(at::full({static_cast<std::int64_t>(kernels::mx_scale_rows(size_of(rows))),
                           static_cast<std::int64_t>(kernels::mx_scale_cols(size_of(cols), block))},
                          0xAA, o.dtype(at::kByte))) {}
};

void mxfp8_case(Checks& check, at::ScalarType input, kernels::Fp8Type type, std::int64_t rows, std::int64_t cols) {
    const std::string shape = shape_text(rows, cols);
    const std::string dtype = dtype_name(input) + " -> MXFP8 " + fp8_name(type);
    check.attempt("mxfp8_cast", shape, dtype, [&] {
        at::Tensor x = (at::randn({rows, cols}, cuda()) * 4).to(input);
        x.view({-1})[x.numel() / 2] = 3000;  // one block far from the others
        const at::Tensor x_host = x.cpu();
        const kernels::DType e8m0 = kernels::DType::Float8E8M0;
        const auto run = [&](const at::Tensor& in, const at::TensorOptions& o, bool gpu) {
            MxBuffers out(rows, cols, cols, kernels::kMxfp8BlockSize, o), out_t(cols, rows, rows, kernels::kMxfp8BlockSize, o);
            const kernels::Tensor data = bytes_tensor(out.data, kernels::fp8_dtype(type));
            const kernels::Tensor data_t = bytes_tensor(out_t.data, kernels::fp8_dtype(type));
            if (gpu) {
                kernels::mxfp8_cast(kernel_tensor(in), data, bytes_tensor(out.scales, e8m0), data_t, bytes_tensor(out_t.scales, e8m0),
                                    kernel_stream());
            } else {
                kernels::host::mxfp8_cast(kernel_tensor(in), data, bytes_tensor(out.scales, e8m0), data_t,
                                          bytes_tensor(out_t.scales, e8m0), {});
            }
            return std::pair{out, out_t};
        };
        const auto [got, got_t] = run(x, cuda(), true);
        const auto [want, want_t] = run(x_host, at::TensorOptions(), false);
        check.exact("mxfp8_cast", "data", shape, dtype, got.data.cpu(), want.data);
        check.exact("mxfp8_cast", "scales", shape, dtype, got.scales.cpu(), want.scales);
        check.exact("mxfp8_cast", "transposed", shape, dtype, got_t.data.cpu(), want_t.data);
        check.exact("mxfp8_cast", "transposed scales", shape, dtype, got_t.scales.cpu(), want_t.scales);
    });
}

void nvfp4_case(Checks& check, at::ScalarType input, const kernels::Nvfp4Cast& options, std::int64_t rows, std::int64_t cols) {
    const std::string shape = shape_text(rows, cols);
    const std::string dtype = dtype_name(input) + " -> NVFP4" + (options.tiles_16x16 ? ", 16x16" : ", 1x16") +
                              (options.stochastic_rounding ? ", stochastic" : ", nearest");
    check.attempt("nvfp4_cast", shape, dtype, [&] {
        at::Tensor x = (at::randn({rows, cols}, cuda()) * 4).to(input);
        x.view({-1})[x.numel() / 2] = 3000;
        const at::Tensor amax = x.abs().max().to(at::kFloat).reshape({1});
        const at::Tensor x_host = x.cpu();
        const at::Tensor amax_host = amax.cpu();
        const kernels::DType packed = kernels::DType::Float4E2M1x2;
        const kernels::DType e4m3 = kernels::DType::Float8E4M3;
        const auto run = [&](const at::Tensor& in, const at::Tensor& in_amax, const at::TensorOptions& o, bool gpu) {
            MxBuffers out(rows, cols, (cols + 1) / 2, kernels::kNvfp4BlockSize, o);
            MxBuffers out_t(cols, rows, (rows + 1) / 2, kernels::kNvfp4BlockSize, o);
            at::Tensor s_dec = at::full({1}, NAN, o.dtype(at::kFloat));
            kernels::Tensor source = kernel_tensor(in);
            source.amax = in_amax.data_ptr<float>();
            kernels::Tensor data = bytes_tensor(out.data, packed);
            data.scale_inv = s_dec.data_ptr<float>();
            if (gpu) {
                kernels::nvfp4_cast(source, data, bytes_tensor(out.scales, e4m3), bytes_tensor(out_t.data, packed),
                                    bytes_tensor(out_t.scales, e4m3), options, kernel_stream());
            } else {
                kernels::host::nvfp4_cast(source, data, bytes_tensor(out.scales, e4m3), bytes_tensor(out_t.data, packed),
                                          bytes_tensor(out_t.scales, e4m3), options, {});
            }
            return std::tuple{out, out_t, s_dec};
        };
        const auto [got, got_t, got_s] = run(x, amax, cuda(), true);
        const auto [want, want_t, want_s] = run(x_host, amax_host, at::TensorOptions(), false);
        check.exact("nvfp4_cast", "data", shape, dtype, got.data.cpu(), want.data);
        check.exact("nvfp4_cast", "scales", shape, dtype, got.scales.cpu(), want.scales);
        check.exact("nvfp4_cast", "transposed", shape, dtype, got_t.data.cpu(), want_t.data);
        check.exact("nvfp4_cast", "transposed scales", shape, dtype, got_t.scales.cpu(), want_t.scales);
        check.exact("nvfp4_cast", "s_dec", shape, dtype, got_s.cpu(), want_s);
    });
}

void hadamard_case(Checks& check, at::ScalarType input, std::int64_t rows, std::int64_t cols) {
    const std::string shape = shape_text(rows, cols);
    check.attempt("hadamard16", shape, dtype_name(input), [&] {
        const at::Tensor x = at::randn({rows, cols}, cuda()).to(input);
        at::Tensor got = at::full({rows, cols}, NAN, cuda().dtype(input));
        at::Tensor want = at::full({rows, cols}, NAN, at::TensorOptions().dtype(input));
        kernels::hadamard16(kernel_tensor(x), kernel_tensor(got), kernels::kHadamardSigns, kernel_stream());
        const at::Tensor x_host = x.cpu();
        kernels::host::hadamard16(kernel_tensor(x_host), kernel_tensor(want), kernels::kHadamardSigns, {});
        check.exact("hadamard16", "out", shape, dtype_name(input), got.cpu(), want);
    });
}

}  // namespace

void microscaling(Checks& check) {
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : {Shape{1, 1}, Shape{7, 45}, Shape{130, 300}, Shape{3072, 768}}) {
            for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) mxfp8_case(check, input, type, rows, cols);
            for (const bool tiles : {false, true}) {
                for (const bool stochastic : {false, true}) {
                    kernels::Nvfp4Cast options;
                    options.tiles_16x16 = tiles;
                    options.stochastic_rounding = stochastic;
                    options.seed = 0x5eed;
                    options.offset = 12345;
                    nvfp4_case(check, input, options, rows, cols);
                }
            }
        }
        for (const auto& [rows, cols] : {Shape{1, 16}, Shape{3072, 768}}) hadamard_case(check, input, rows, cols);
    }
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
