// core's microscaling reference (core/fp8/Microscaling.h) against the kernels' host twins (tewb_kernels/mx.h), which
// tst_host_mx holds to the formats' definitions: the same codes and scales bit for bit for MXFP8 (E4M3, E5M2) and
// NVFP4 (1 × 16 blocks and 16 × 16 tiles) over ragged shapes with NaN, infinities and zero blocks; the Hadamard
// transform bit for bit; the emulated GEMM equal to the product of the dequantized operands and within the formats'
// error of the float32 product; stochastic rounding's mean against nearest rounding's.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <limits>

#include <ATen/ATen.h>

#include "core/common/Error.h"
#include "core/fp8/Microscaling.h"
#include "tewb_kernels/mx.h"

using namespace tewb;

namespace {

// x [rows, cols] with values spread over 2^-12 .. 2^12, a NaN, an infinity and a zero block where the shape allows.
at::Tensor test_input(std::int64_t rows, std::int64_t cols, std::uint64_t seed, bool specials) {
    at::manual_seed(seed);
    at::Tensor x = at::randn({rows, cols}) * at::pow(2.0, at::randint(-12, 12, {rows, cols}).to(at::kFloat));
    if (specials && rows * cols > 70) {
        x.view({-1})[5] = std::numeric_limits<float>::quiet_NaN();
        x.view({-1})[rows * cols - 1] = -std::numeric_limits<float>::infinity();
        if (cols >= 64) x.narrow(0, rows - 1, 1).narrow(1, 32, 32).zero_();
    }
    return x;
}

std::size_t n(std::int64_t v) {
    return static_cast<std::size_t>(v);
}

// The kernels' host twin, read back into the reference's form.
MxQuantized kernel_mxfp8(const at::Tensor& x, Fp8Dtype dtype) {
    const std::int64_t rows = x.size(0), cols = x.size(1);
    at::Tensor bytes = at::zeros({rows, cols}, at::kByte);
    at::Tensor scales = at::zeros({static_cast<std::int64_t>(kernels::mx_scale_rows(n(rows))),
                                   static_cast<std::int64_t>(kernels::mx_scale_cols(n(cols), 32))},
                                  at::kByte);
    const at::Tensor xf = x.contiguous();
    kernels::host::mxfp8_cast(kernels::input(xf.data_ptr(), kernels::DType::Float32, n(rows), n(cols)),
                              kernels::input(bytes.data_ptr(), kernels::fp8_dtype(dtype), n(rows), n(cols)),
                              kernels::input(scales.data_ptr(), kernels::DType::Float8E8M0, n(scales.size(0)), n(scales.size(1))), {},
                              {}, {});
    return mx_from_kernel_layout(MxFormat::Mxfp8, dtype, bytes, scales, rows, cols, at::Tensor());
}

MxQuantized kernel_nvfp4(const at::Tensor& x, const at::Tensor& amax, const kernels::Nvfp4Cast& options) {
    const std::int64_t rows = x.size(0), cols = x.size(1);
    at::Tensor bytes = at::zeros({rows, (cols + 1) / 2}, at::kByte);
    at::Tensor scales = at::zeros({static_cast<std::int64_t>(kernels::mx_scale_rows(n(rows))),
                                   static_cast<std::int64_t>(kernels::mx_scale_cols(n(cols), 16))},
                                  at::kByte);
    at::Tensor s_dec = at::zeros({1});
    at::Tensor a = amax.reshape({1}).contiguous();
    const at::Tensor xf = x.contiguous();
    kernels::Tensor in = kernels::input(xf.data_ptr(), kernels::DType::Float32, n(rows), n(cols));
    in.amax = a.data_ptr<float>();
    kernels::Tensor out = kernels::input(bytes.data_ptr(), kernels::DType::Float4E2M1x2, n(rows), n(bytes.size(1)));
    out.scale_inv = s_dec.data_ptr<float>();
    kernels::host::nvfp4_cast(in, out, kernels::input(scales.data_ptr(), kernels::DType::Float8E4M3, n(scales.size(0)), n(scales.size(1))),
                              {}, {}, options, {});
    return mx_from_kernel_layout(MxFormat::Nvfp4, Fp8Dtype::E4M3, bytes, scales, rows, cols, s_dec);
}

// Equal as bits, every NaN equal to every NaN.
bool same(const at::Tensor& got, const at::Tensor& want) {
    const at::Tensor g = got.to(at::kFloat);
    const at::Tensor w = want.to(at::kFloat);
    const at::Tensor both_nan = g.isnan() & w.isnan();
    const at::Tensor equal_bits = g.view(at::kInt).eq(w.view(at::kInt));
    return (both_nan | equal_bits).all().item<bool>();
}

}  // namespace

class TstMicroscaling : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mxfp8MatchesTheKernel_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<bool>("e4m3");
        QTest::newRow("64x256 E4M3") << 64 << 256 << true;
        QTest::newRow("ragged 9x77 E4M3") << 9 << 77 << true;
        QTest::newRow("ragged 130x100 E5M2") << 130 << 100 << false;
    }
    void mxfp8MatchesTheKernel() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(bool, e4m3);
        const Fp8Dtype dtype = e4m3 ? Fp8Dtype::E4M3 : Fp8Dtype::E5M2;
        const at::Tensor x = test_input(rows, cols, 1u + rows, true);
        const MxQuantized want = kernel_mxfp8(x, dtype);
        const MxQuantized got = mxfp8_quantize(x, dtype);
        QVERIFY(same(got.block_scale, want.block_scale));
        QVERIFY(same(got.data.to(at::kFloat), want.data.to(at::kFloat)));
        QVERIFY(same(mx_dequantize(got), mx_dequantize(want)));
    }

    void nvfp4MatchesTheKernel_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<bool>("tiles");
        QTest::newRow("64x256") << 64 << 256 << false;
        QTest::newRow("ragged 21x45") << 21 << 45 << false;
        QTest::newRow("16x16 tiles 48x80") << 48 << 80 << true;
        QTest::newRow("16x16 tiles ragged 37x29") << 37 << 29 << true;
    }
    void nvfp4MatchesTheKernel() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(bool, tiles);
        const at::Tensor x = test_input(rows, cols, 7u + cols, true);
        const at::Tensor amax = x.abs().max();
        kernels::Nvfp4Cast options;
        options.tiles_16x16 = tiles;
        const MxQuantized want = kernel_nvfp4(x, amax, options);
        const MxQuantized got = nvfp4_quantize(x, amax, tiles);
        QVERIFY(same(got.tensor_scale_inv, want.tensor_scale_inv));
        QVERIFY(same(got.block_scale, want.block_scale));
        QVERIFY(got.data.equal(want.data));
        QVERIFY(same(mx_dequantize(got), mx_dequantize(want)));
    }

    void e2m1CodesRoundTrip() {
        const at::Tensor values = at::tensor({0.0f, 0.25f, 0.26f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 5.01f, 100.0f, -0.1f, -3.0f});
        const at::Tensor codes = e2m1_codes(values);
        const std::vector<int> want = {0, 0, 1, 2, 2, 4, 4, 6, 6, 7, 7, 8, 13};
        for (std::size_t i = 0; i < want.size(); ++i) QCOMPARE(codes[static_cast<std::int64_t>(i)].item<int>(), want[i]);
        QCOMPARE(e2m1_codes(at::tensor({std::numeric_limits<float>::quiet_NaN()}))[0].item<int>(), 7);
        QVERIFY(e2m1_values(e2m1_codes(at::tensor({-1.5f, 6.0f, 0.5f}))).equal(at::tensor({-1.5f, 6.0f, 0.5f})));
    }

    void hadamardMatchesTheKernel() {
        const at::Tensor x = test_input(7, 64, 3u, false);
        at::Tensor out = at::empty_like(x);
        kernels::host::hadamard16(kernels::input(x.data_ptr(), kernels::DType::Float32, 7, 64),
                                  kernels::input(out.data_ptr(), kernels::DType::Float32, 7, 64), kernels::kHadamardSigns, {});
        const at::Tensor ref = hadamard16_reference(x, kernels::kHadamardSigns);
        QVERIFY(same(ref, out));
        // Both GEMM inputs transformed along k: the product is kept up to rounding.
        const at::Tensor a = at::randn({8, 64});
        const at::Tensor b = at::randn({5, 64});
        const at::Tensor kept = at::mm(hadamard16_reference(a, kernels::kHadamardSigns), hadamard16_reference(b, kernels::kHadamardSigns).t());
        QVERIFY(at::allclose(kept, at::mm(a, b.t()), 1e-4, 1e-4));
        QVERIFY_THROWS_EXCEPTION(ConfigError, hadamard16_reference(at::zeros({2, 24}), 0));
    }

    // The emulated GEMM is the float32 product of the blockwise values, NVFP4's tensor scales applied once; its
    // error against the unquantized product is the formats' (relative Frobenius error on Gaussian data: MXFP8 E4M3
    // about 3 %, NVFP4 about 10 %).
    void emulatedGemm() {
        at::manual_seed(5);
        const at::Tensor a = at::randn({64, 256});
        const at::Tensor b = at::randn({48, 256});
        const at::Tensor exact = at::mm(a, b.t());
        const auto relative = [&](const at::Tensor& got) { return ((got - exact).norm() / exact.norm()).item<double>(); };
        const at::Tensor mx = mx_gemm_reference(mxfp8_quantize(a, Fp8Dtype::E4M3), mxfp8_quantize(b, Fp8Dtype::E4M3));
        QVERIFY(at::allclose(mx, at::mm(mx_dequantize(mxfp8_quantize(a, Fp8Dtype::E4M3)),
                                        mx_dequantize(mxfp8_quantize(b, Fp8Dtype::E4M3)).t()),
                             1e-5, 1e-5));
        const double mx_error = relative(mx);
        QVERIFY2(mx_error > 1e-3 && mx_error < 0.05, qPrintable(QString::number(mx_error)));
        const MxQuantized qa = nvfp4_quantize(a, a.abs().max(), false);
        const MxQuantized qb = nvfp4_quantize(b, b.abs().max(), true);
        const double fp4_error = relative(mx_gemm_reference(qa, qb));
        QVERIFY2(fp4_error > mx_error && fp4_error < 0.2, qPrintable(QString::number(fp4_error)));
        QVERIFY(at::allclose(mx_gemm_reference(qa, qb), at::mm(mx_dequantize(qa), mx_dequantize(qb).t()), 1e-4, 1e-4));
    }

    // Stochastic rounding (the kernel's) is unbiased where nearest rounding is not: each block holds one 1.0 (scaled to 6)
    // and fifteen 0.3s, which scale to 1.8, between the E2M1 values 1.5 and 2; nearest rounding makes every 0.3 a 1/3.
    void stochasticRoundingIsUnbiased() {
        at::Tensor x = at::full({64, 256}, 0.3f);
        x.narrow(1, 0, 256).view({64, 16, 16}).select(2, 0).fill_(1.0f);
        const at::Tensor amax = x.abs().max();
        const at::Tensor small = x.eq(0.3f);
        kernels::Nvfp4Cast options;
        options.stochastic_rounding = true;
        options.seed = 99;
        const at::Tensor stochastic = mx_dequantize(kernel_nvfp4(x, amax, options)).masked_select(small);
        const at::Tensor nearest = mx_dequantize(nvfp4_quantize(x, amax, false)).masked_select(small);
        const double sr_bias = std::fabs(stochastic.mean().item<double>() - 0.3) / 0.3;
        const double nearest_bias = std::fabs(nearest.mean().item<double>() - 0.3) / 0.3;
        QVERIFY2(sr_bias < 0.01, qPrintable(QString::number(sr_bias)));
        QVERIFY2(nearest_bias > 0.1, qPrintable(QString::number(nearest_bias)));
    }
};

QTEST_GUILESS_MAIN(TstMicroscaling)
#include "tst_microscaling.moc"
