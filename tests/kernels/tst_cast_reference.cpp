// The cast kernels' conversion (CUDA's float-to-FP8, run on the host) against core's reference cast
// (LibTorch: scale in float32, clamp to ±fp8_max, convert), bit for bit, for both FP8 types, over random
// values, every scale regime, and the edges: zeros, denormals, rounding boundaries, saturation, inf, NaN.
#include <QtTest>

#include <cmath>
#include <random>

#include <ATen/ATen.h>

#include "tewb_kernels/cast.h"

using namespace tewb;

class TestCastReference : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hostConversionMatchesCoreReference() {
        std::mt19937 random(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> values{0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, 1e-10f, 0.001953125f, 0.0009765625f, 1.0f, -1.0f,
                                  1.0625f, 1.125f, 1.1875f, 447.0f, 448.0f, 449.0f, 463.9f, 464.0f, 465.0f, 480.0f,
                                  1000.0f, 57344.0f, 61439.0f, 61440.0f, 61441.0f, 1e30f, -1e30f,
                                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
        for (int i = 0; i < 20000; ++i) values.push_back(normal(random) * std::ldexp(1.0f, static_cast<int>(random() % 40) - 20));
        const at::Tensor x = at::tensor(values, at::kFloat);
        int checked = 0;
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            const float max = kernels::fp8_max(type);
            const at::ScalarType fp8 = type == kernels::Fp8Type::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
            for (const float scale : {1.0f, 448.0f / 3.7f, 0.0078125f, 3.0e4f, 1e-30f}) {
                const at::Tensor reference = (x * scale).clamp(-max, max).to(fp8).view(at::kByte).contiguous();
                const at::Tensor decoded = (x * scale).clamp(-max, max).to(fp8).to(at::kFloat);
                const auto* want = reference.data_ptr<std::uint8_t>();
                for (std::size_t i = 0; i < values.size(); ++i) {
                    const std::uint8_t got = kernels::cast_one_to_fp8(values[i], scale, type);
                    if (std::isnan(decoded[static_cast<std::int64_t>(i)].item<float>())) {
                        // NaN: any NaN pattern of the type.
                        const at::Tensor back = at::tensor({static_cast<std::int64_t>(got)}, at::kByte).view(fp8).to(at::kFloat);
                        QVERIFY2(std::isnan(back.item<float>()), qPrintable(QString::number(values[i])));
                    } else {
                        QVERIFY2(got == want[i], qPrintable(QStringLiteral("%1 x %2 (%3): got 0x%4, reference 0x%5")
                                                                .arg(values[i], 0, 'g', 9)
                                                                .arg(scale)
                                                                .arg(kernels::fp8_type_name(type))
                                                                .arg(got, 2, 16, QLatin1Char('0'))
                                                                .arg(want[i], 2, 16, QLatin1Char('0'))));
                    }
                    ++checked;
                }
            }
        }
        QVERIFY(checked > 200000);
    }
};

QTEST_GUILESS_MAIN(TestCastReference)
#include "tst_cast_reference.moc"
