// The multi-tensor AdamW step (tewb_kernels/host/adamw.h): bit for bit PyTorch's fused CUDA AdamW as this
// test writes it from fused_adam_utils.cuh (float32, its fused multiply-adds) over several steps, within the
// header's bounds of the formula in double precision, the bfloat16 copies only where asked, the FP8 copies
// bit for bit host::cast_transpose_multi_to_fp8 of the updated parameters, ragged and zero-size tensors, one
// step advance per call however many launches, the launch counts, and bad arguments refused by name before
// anything is written.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "common/host_numbers.h"
#include "optimizer/adamw_math.h"
#include "adamw_calls.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

using namespace tewb::kernels;

namespace {

using AdamWTensor = tewb::kernels::detail::AdamWTensor;
using tewb::kernels::detail::Fp8Output;
using tewb::test::calls::adamw;

constexpr std::uint16_t kUntouched = 0xdeadu;
constexpr std::uint8_t kUntouchedByte = 0xa5u;
constexpr std::size_t kGuard = 4;  // bfloat16 (FP8) entries past numel that must stay untouched

struct Hyper {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double weight_decay = 0.01;
    double eps = 1e-8;
};

// One parameter with its gradient, optimizer state and (maybe) its bfloat16 copy.
struct Param {
    std::vector<float> param;
    std::vector<float> grad;
    std::vector<float> exp_avg;
    std::vector<float> exp_avg_sq;
    std::vector<std::uint16_t> copy;  // numel + kGuard entries, or empty: no copy asked for

    std::size_t numel() const { return param.size(); }

    AdamWTensor tensor() {
        return {param.data(), grad.data(), exp_avg.data(), exp_avg_sq.data(), copy.empty() ? nullptr : copy.data(), param.size()};
    }
};

Param random_param(std::mt19937& rng, std::size_t numel, bool with_copy, bool warm_state) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Param p;
    p.param.resize(numel);
    p.grad.resize(numel);
    p.exp_avg.assign(numel, 0.0f);
    p.exp_avg_sq.assign(numel, 0.0f);
    for (std::size_t i = 0; i < numel; ++i) {
        p.param[i] = normal(rng) * 0.05f;
        if (warm_state) {
            p.exp_avg[i] = normal(rng) * 1e-3f;
            p.exp_avg_sq[i] = std::abs(normal(rng)) * 1e-6f;
        }
    }
    if (with_copy) p.copy.assign(numel + kGuard, kUntouched);
    return p;
}

// Fresh gradients: mostly small, some large, some exactly zero.
void new_gradients(std::mt19937& rng, Param& p) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < p.numel(); ++i) {
        const float scale = i % 97 == 5 ? 30.0f : 1e-2f;
        p.grad[i] = i % 89 == 7 ? 0.0f : normal(rng) * scale;
    }
}

// PyTorch 2.11's CUDA AdamW element (fused_adam_utils.cuh, adam_math in ADAMW mode; the hyperparameters cast
// to float32 opmath) as nvcc compiles it: `param -= lr * weight_decay * param` contracts to one fma. The power
// is the correctly rounded float one (the header's stated difference from CUDA's powf).
void pytorch_adamw(const Hyper& h, float t, float& param, float grad, float& exp_avg, float& exp_avg_sq) {
    const auto lr = static_cast<float>(h.lr);
    const auto beta1 = static_cast<float>(h.beta1);
    const auto beta2 = static_cast<float>(h.beta2);
    const auto weight_decay = static_cast<float>(h.weight_decay);
    const auto eps = static_cast<float>(h.eps);
    const float bias_correction1 = 1 - static_cast<float>(std::pow(static_cast<double>(beta1), static_cast<double>(t)));
    const float bias_correction2 = 1 - static_cast<float>(std::pow(static_cast<double>(beta2), static_cast<double>(t)));
    const float bias_correction2_sqrt = std::sqrt(bias_correction2);
    if (weight_decay != 0) {
        const float decay = lr * weight_decay;
        param = std::fma(-decay, param, param);
    }
    exp_avg = std::fma(beta1, exp_avg, std::fma(-beta1, grad, grad));
    const float grad_squared = grad * grad;
    exp_avg_sq = std::fma(beta2, exp_avg_sq, std::fma(-beta2, grad_squared, grad_squared));
    const float step_size = lr / bias_correction1;
    const float denom = (std::sqrt(exp_avg_sq) / bias_correction2_sqrt) + eps;
    const float update = step_size * exp_avg / denom;
    param = param - update;
}

// What the kernel should leave in p after one step with t, from p's current state.
Param expected_after(const Param& p, const Hyper& h, float t) {
    Param e = p;
    for (std::size_t i = 0; i < p.numel(); ++i) pytorch_adamw(h, t, e.param[i], p.grad[i], e.exp_avg[i], e.exp_avg_sq[i]);
    if (!e.copy.empty()) {
        for (std::size_t i = 0; i < p.numel(); ++i) e.copy[i] = detail::float_to_bf16(e.param[i]);
    }
    return e;
}

// A hyperparameter as the kernel takes it, rounded to float32. Out of line: GCC 12 at -O2 dropped this
// round trip for two of the five values when it was written inline in withinTheDoubleBound.
[[gnu::noinline]] double float32_value(double v) {
    return static_cast<float>(v);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

QString first_difference(const Param& got, const Param& want) {
    const std::pair<const std::vector<float>*, const std::vector<float>*> arrays[] = {
        {&got.param, &want.param}, {&got.exp_avg, &want.exp_avg}, {&got.exp_avg_sq, &want.exp_avg_sq}};
    const char* names[] = {"param", "exp_avg", "exp_avg_sq"};
    for (int a = 0; a < 3; ++a) {
        const auto& [g, w] = arrays[a];
        for (std::size_t i = 0; i < g->size(); ++i) {
            if (detail::float_bits((*g)[i]) != detail::float_bits((*w)[i])) {
                return QStringLiteral("%1[%2] = %3, expected %4").arg(QLatin1String(names[a])).arg(i).arg((*g)[i], 0, 'g', 9).arg((*w)[i], 0, 'g', 9);
            }
        }
    }
    if (got.copy != want.copy) return QStringLiteral("the bfloat16 copy");
    return {};
}

std::vector<AdamWTensor> tensors_of(std::vector<Param>& params) {
    std::vector<AdamWTensor> list;
    for (Param& p : params) list.push_back(p.tensor());
    return list;
}

void step(std::vector<AdamWTensor>& list, float& step_value, const Hyper& h) {
    adamw(list.data(), list.size(), &step_value, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps);
}

// A parameter's FP8 outputs: data and transposed with kGuard untouched bytes past numel, its scale and amax.
struct Fp8Copies {
    std::vector<std::uint8_t> data;
    std::vector<std::uint8_t> transposed;  // empty: not asked for
    float scale = 1.0f;
    float amax = 0.0f;
    bool with_amax = true;
    Fp8Type type = Fp8Type::E4M3;

    Fp8Copies(std::size_t numel, bool with_transposed, float scale_value, float amax_value, Fp8Type fp8_type)
        : data(numel + kGuard, kUntouchedByte), scale(scale_value), amax(amax_value), type(fp8_type) {
        if (with_transposed) transposed.assign(numel + kGuard, kUntouchedByte);
    }

    Fp8Output output() {
        return {data.data(), transposed.empty() ? nullptr : transposed.data(), &scale, with_amax ? &amax : nullptr, type};
    }
};

// What cast_transpose_multi_to_fp8 writes for `copies` (as they were before the step) from the float32
// values x: its own run, into fresh buffers (a transposed copy always: the cast needs one).
Fp8Copies cast_of(const Fp8Copies& before, const std::vector<float>& x, std::size_t rows, std::size_t cols) {
    Fp8Copies expected = before;
    std::vector<std::uint8_t> transposed(x.size() + kGuard, kUntouchedByte);
    const Tensor in = input(x.data(), DType::Float32, rows, cols);
    Tensor out = input(expected.data.data(), fp8_dtype(expected.type), rows, cols);
    out.transposed = transposed.data();
    out.scale = &expected.scale;
    out.amax = expected.with_amax ? &expected.amax : nullptr;
    host::cast_transpose_multi_to_fp8(&in, &out, 1, {});
    if (!expected.transposed.empty()) expected.transposed = transposed;
    return expected;
}

// The first difference of two FP8 outputs (bytes, amax bits), or empty.
QString fp8_difference(const Fp8Copies& got, const Fp8Copies& want) {
    if (got.data != want.data) {
        return QStringLiteral("fp8.data");
    }
    if (got.transposed != want.transposed) {
        return QStringLiteral("fp8.transposed");
    }
    if (detail::float_bits(got.amax) != detail::float_bits(want.amax)) {
        return QStringLiteral("fp8.amax %1, expected %2").arg(got.amax, 0, 'g', 9).arg(want.amax, 0, 'g', 9);
    }
    return {};
}

// The message of the KernelError that `call` throws, or "no error".
QString refusal(const std::function<void()>& call) {
    try {
        call();
    } catch (const KernelError& e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("no error");
}

}  // namespace

Q_DECLARE_METATYPE(Hyper)

class TestHostAdamW : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void launchRule() {
        static_assert(adamw_launches(0) == 1);
        static_assert(adamw_launches(1) == 1);
        static_assert(adamw_launches(kAdamWTensorsPerLaunch) == 1);
        static_assert(adamw_launches(kAdamWTensorsPerLaunch + 1) == 2);
        static_assert(kAdamWMaxNumel / kAdamWChunkElements * kAdamWTensorsPerLaunch <= 2147483647u);
        static_assert(kAdamWMaxChunks * kAdamWTensorsPerLaunch <= 2147483647u);
        QCOMPARE(kAdamWTensorsPerLaunch, std::size_t{256});
    }

    // Six steps (the bias corrections change each one), then a jump to step 1000; every tensor bit for bit
    // the formula, its bfloat16 copy exactly the parameter rounded where asked and untouched past numel; one
    // launch per call; the step advanced once per call.
    void bitForBitAgainstThePyTorchFormula_data() {
        QTest::addColumn<Hyper>("hyper");
        QTest::addColumn<bool>("warm");
        QTest::newRow("defaults") << Hyper{1e-3, 0.9, 0.999, 0.01, 1e-8} << false;
        QTest::newRow("no weight decay, warm state") << Hyper{3e-4, 0.9, 0.95, 0.0, 1e-8} << true;
        QTest::newRow("large lr, eps, decay") << Hyper{0.1, 0.8, 0.99, 0.1, 1e-6} << true;
        QTest::newRow("betas 0") << Hyper{1e-2, 0.0, 0.0, 0.5, 1e-3} << false;
    }
    void bitForBitAgainstThePyTorchFormula() {
        QFETCH(Hyper, hyper);
        QFETCH(bool, warm);
        std::mt19937 rng(17);
        const std::size_t sizes[] = {1, 3, 4, 5, 1023, kAdamWChunkElements, kAdamWChunkElements + 7, 40000, 2 * kAdamWChunkElements + 3};
        std::vector<Param> params;
        for (std::size_t k = 0; k < std::size(sizes); ++k) params.push_back(random_param(rng, sizes[k], k % 2 == 0, warm));
        std::vector<AdamWTensor> list = tensors_of(params);
        float step_value = 0.0f;
        for (int call = 1; call <= 7; ++call) {
            if (call == 7) step_value = 999.0f;
            for (Param& p : params) new_gradients(rng, p);
            std::vector<Param> expected;
            for (const Param& p : params) expected.push_back(expected_after(p, hyper, step_value + 1.0f));
            const std::uint64_t before = launch_count();
            step(list, step_value, hyper);
            QCOMPARE(launch_count() - before, std::uint64_t{1});
            QCOMPARE(step_value, call == 7 ? 1000.0f : static_cast<float>(call));
            for (std::size_t k = 0; k < params.size(); ++k) {
                const QString difference = first_difference(params[k], expected[k]);
                // The expected copy keeps kUntouched past numel: nothing is written there.
                QVERIFY2(difference.isEmpty(), qPrintable(QStringLiteral("call %1, tensor %2 (numel %3): %4")
                                                              .arg(call).arg(k).arg(params[k].numel()).arg(difference)));
            }
        }
    }

    // One step from the same float32 state against the formula in double precision (with the float32
    // hyperparameters), at steps where the bias corrections are far from and close to 1: within the bounds
    // the header states; the worst fraction of each is printed.
    void withinTheDoubleBound_data() {
        QTest::addColumn<Hyper>("hyper");
        QTest::addColumn<float>("t");
        for (const float t : {1.0f, 2.0f, 10.0f, 1000.0f}) {
            QTest::addRow("defaults, t = %g", t) << Hyper{1e-3, 0.9, 0.999, 0.01, 1e-8} << t;
            QTest::addRow("0.8, 0.95, decay 0.1, t = %g", t) << Hyper{0.05, 0.8, 0.95, 0.1, 1e-6} << t;
        }
    }
    void withinTheDoubleBound() {
        QFETCH(Hyper, hyper);
        QFETCH(float, t);
        std::mt19937 rng(23);
        Param p = random_param(rng, 50000, false, true);
        new_gradients(rng, p);
        const Param start = p;
        std::vector<AdamWTensor> list{p.tensor()};
        float step_value = t - 1.0f;
        step(list, step_value, hyper);
        const double lr = float32_value(hyper.lr);
        const double b1 = float32_value(hyper.beta1);
        const double b2 = float32_value(hyper.beta2);
        const double wd = float32_value(hyper.weight_decay);
        const double eps = float32_value(hyper.eps);
        const double power1 = std::pow(b1, static_cast<double>(t));
        const double power2 = std::pow(b2, static_cast<double>(t));
        const double step_size = lr / (1 - power1);
        const double bias_correction2_sqrt = std::sqrt(1 - power2);
        const double update_factor = std::ldexp(8 + power1 / (1 - power1) + power2 / (1 - power2), -21);
        double worst[3] = {0, 0, 0};
        for (std::size_t i = 0; i < p.numel(); ++i) {
            const double g = start.grad[i];
            const double m0 = start.exp_avg[i];
            const double v0 = start.exp_avg_sq[i];
            const double p0 = start.param[i];
            const double m = b1 * m0 + (1 - b1) * g;
            const double v = b2 * v0 + (1 - b2) * g * g;
            const double denom = std::sqrt(v) / bias_correction2_sqrt + eps;
            const double exact = p0 * (1 - lr * wd) - step_size * m / denom;
            const double m_terms = b1 * std::abs(m0) + (1 - b1) * std::abs(g);
            const double bounds[3] = {std::ldexp(m_terms, -22), std::ldexp(b2 * v0 + (1 - b2) * g * g, -22),
                                      std::ldexp(std::abs(p0), -22) + step_size * m_terms / denom * update_factor};
            const double errors[3] = {std::abs(p.exp_avg[i] - m), std::abs(p.exp_avg_sq[i] - v), std::abs(p.param[i] - exact)};
            for (int k = 0; k < 3; ++k) {
                const double fraction = bounds[k] > 0 ? errors[k] / bounds[k] : (errors[k] == 0 ? 0.0 : 1e30);
                worst[k] = std::max(worst[k], fraction);
                if (fraction > 1.0) {
                    QFAIL(qPrintable(QStringLiteral("element %1, %2: error %3 over the bound %4")
                                         .arg(i).arg(k == 0 ? "exp_avg" : k == 1 ? "exp_avg_sq" : "param").arg(errors[k]).arg(bounds[k])));
                }
            }
        }
        qInfo("worst fraction of the bound: exp_avg %.3f, exp_avg_sq %.3f, param %.3f", worst[0], worst[1], worst[2]);
    }

    // 4-byte but not 16-byte aligned buffers (the kernel's element-by-element path) are accepted and give the
    // same values as aligned ones.
    void misalignedBuffersGiveTheSameValues() {
        std::mt19937 rng(5);
        Param aligned = random_param(rng, 1029, true, true);
        new_gradients(rng, aligned);
        Param shifted = aligned;
        const Hyper hyper;
        // The same values one float (one bfloat16) further on.
        std::vector<float> storage[4];
        const std::vector<float>* sources[4] = {&shifted.param, &shifted.grad, &shifted.exp_avg, &shifted.exp_avg_sq};
        for (int k = 0; k < 4; ++k) {
            storage[k].assign(sources[k]->size() + 1, 0.0f);
            std::copy(sources[k]->begin(), sources[k]->end(), storage[k].begin() + 1);
        }
        std::vector<std::uint16_t> copy(aligned.copy.size() + 1, kUntouched);
        AdamWTensor odd{storage[0].data() + 1, storage[1].data() + 1, storage[2].data() + 1, storage[3].data() + 1, copy.data() + 1,
                        aligned.numel()};
        std::vector<AdamWTensor> list{aligned.tensor()};
        float step_aligned = 2.0f;
        step(list, step_aligned, hyper);
        float step_odd = 2.0f;
        adamw(&odd, 1, &step_odd, hyper.lr, hyper.beta1, hyper.beta2, hyper.weight_decay, hyper.eps);
        QVERIFY(std::memcmp(aligned.param.data(), storage[0].data() + 1, aligned.numel() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(aligned.exp_avg.data(), storage[2].data() + 1, aligned.numel() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(aligned.exp_avg_sq.data(), storage[3].data() + 1, aligned.numel() * sizeof(float)) == 0);
        QVERIFY(std::memcmp(aligned.copy.data(), copy.data() + 1, aligned.numel() * sizeof(std::uint16_t)) == 0);
        QCOMPARE(copy[0], kUntouched);
        QCOMPARE(step_odd, 3.0f);
    }

    // Tensors with numel 0 (null pointers too) are skipped; a list with no elements at all still advances
    // the step, in one launch.
    void zeroSizeTensorsAreSkipped() {
        std::mt19937 rng(9);
        std::vector<Param> params;
        params.push_back(random_param(rng, 6, true, false));
        params.push_back(random_param(rng, 11, false, false));
        for (Param& p : params) new_gradients(rng, p);
        const Hyper hyper;
        const Param expected0 = expected_after(params[0], hyper, 1.0f);
        const Param expected1 = expected_after(params[1], hyper, 1.0f);
        std::vector<AdamWTensor> list{AdamWTensor{}, params[0].tensor(), AdamWTensor{}, params[1].tensor(), AdamWTensor{}};
        list[2].param = params[0].param.data();  // numel 0: never looked at
        float step_value = 0.0f;
        std::uint64_t before = launch_count();
        step(list, step_value, hyper);
        QCOMPARE(launch_count() - before, std::uint64_t{1});
        QCOMPARE(step_value, 1.0f);
        QVERIFY(first_difference(params[0], expected0).isEmpty());
        QVERIFY(first_difference(params[1], expected1).isEmpty());

        std::vector<AdamWTensor> empties(3);
        before = launch_count();
        step(empties, step_value, hyper);
        QCOMPARE(step_value, 2.0f);
        adamw(nullptr, 0, &step_value, hyper.lr, hyper.beta1, hyper.beta2, hyper.weight_decay, hyper.eps);
        QCOMPARE(step_value, 3.0f);
        QCOMPARE(launch_count() - before, std::uint64_t{2});
    }

    // More tensors than a launch takes: every tensor updated with the same t, the step advanced once.
    void manyTensorsAdvanceTheStepOnce() {
        std::mt19937 rng(29);
        std::vector<Param> params;
        for (int i = 0; i < 1100; ++i) params.push_back(random_param(rng, static_cast<std::size_t>(i % 7) + 1, i % 3 == 0, true));
        for (Param& p : params) new_gradients(rng, p);
        const Hyper hyper{2e-3, 0.9, 0.98, 0.05, 1e-8};
        std::vector<Param> expected;
        for (const Param& p : params) expected.push_back(expected_after(p, hyper, 6.0f));
        std::vector<AdamWTensor> list = tensors_of(params);
        list.insert(list.begin() + 700, AdamWTensor{});  // an empty one between launches' tensors
        float step_value = 5.0f;
        const std::uint64_t before = launch_count();
        step(list, step_value, hyper);
        QCOMPARE(launch_count() - before, std::uint64_t{5});
        QCOMPARE(step_value, 6.0f);
        for (std::size_t k = 0; k < params.size(); ++k) {
            const QString difference = first_difference(params[k], expected[k]);
            QVERIFY2(difference.isEmpty(), qPrintable(QStringLiteral("tensor %1: %2").arg(k).arg(difference)));
        }
    }

    // One launch per 256 tensors that have elements, with FP8 outputs or without; one for none.
    void launchCounts_data() {
        QTest::addColumn<int>("tensors");
        QTest::addColumn<int>("empty");
        QTest::addColumn<bool>("fp8");
        QTest::addColumn<int>("launches");
        QTest::newRow("none") << 0 << 0 << false << 1;
        QTest::newRow("only empty") << 0 << 3 << false << 1;
        QTest::newRow("1") << 1 << 0 << false << 1;
        QTest::newRow("1 with FP8") << 1 << 0 << true << 1;
        QTest::newRow("148 (12 layers)") << 148 << 0 << false << 1;
        QTest::newRow("148 (12 layers), half with FP8") << 148 << 0 << true << 1;
        QTest::newRow("256") << 256 << 0 << false << 1;
        QTest::newRow("256 and empties") << 256 << 9 << false << 1;
        QTest::newRow("256, half with FP8") << 256 << 0 << true << 1;
        QTest::newRow("257") << 257 << 0 << false << 2;
        QTest::newRow("257, half with FP8") << 257 << 0 << true << 2;
        QTest::newRow("512") << 512 << 0 << false << 2;
        QTest::newRow("513") << 513 << 0 << false << 3;
    }
    void launchCounts() {
        QFETCH(int, tensors);
        QFETCH(int, empty);
        QFETCH(bool, fp8);
        QFETCH(int, launches);
        std::mt19937 rng(31);
        std::vector<Param> params;
        for (int i = 0; i < tensors; ++i) params.push_back(random_param(rng, 2, false, false));
        std::vector<Fp8Copies> copies(params.size(), Fp8Copies(2, true, 1.0f, 0.0f, Fp8Type::E4M3));
        std::vector<AdamWTensor> list = tensors_of(params);
        for (std::size_t i = 0; fp8 && i < list.size(); i += 2) {
            list[i].fp8 = copies[i].output();
            list[i].rows = 2;
            list[i].cols = 1;
        }
        for (int i = 0; i < empty; ++i) list.insert(list.begin() + (i * 37) % (list.size() + 1), AdamWTensor{});
        float step_value = 0.0f;
        const std::uint64_t before = launch_count();
        step(list, step_value, Hyper{});
        QCOMPARE(launch_count() - before, static_cast<std::uint64_t>(launches));
        QCOMPARE(adamw_launches(static_cast<std::size_t>(tensors)), static_cast<std::size_t>(launches));
        QCOMPARE(step_value, 1.0f);
    }

    // Tensors with FP8 outputs (E4M3, E5M2; scales 1, 37.5 and 448 / 0.01, where most weights saturate)
    // beside tensors without, over two steps: param, exp_avg, exp_avg_sq and the bfloat16 copies as the same
    // call without FP8 outputs gives them, and the FP8 data, transposed copy and amax bit for bit
    // host::cast_transpose_multi_to_fp8 of the updated parameters: square, ragged (96 x 200 is more than a
    // flat chunk), one-row and narrow shapes; an amax that already holds more than the weights' (kept), a NaN
    // one (kept), none; no transposed copy; a NaN gradient (its weight's bytes NaN, the amax NaN). One launch.
    void fp8OutputsAreTheCastOfTheUpdate_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<float>("scale");
        for (const Fp8Type type : {Fp8Type::E4M3, Fp8Type::E5M2}) {
            const char* name = tewb::kernels::fp8_type_name(type);
            for (const float scale : {1.0f, 37.5f, 448.0f / 0.01f}) {
                QTest::addRow("%s, scale %g", name, scale) << static_cast<int>(type) << scale;
            }
        }
    }
    void fp8OutputsAreTheCastOfTheUpdate() {
        QFETCH(int, type);
        QFETCH(float, scale);
        const auto fp8_type = static_cast<Fp8Type>(type);
        struct Shape {
            std::size_t rows;
            std::size_t cols;
        };
        // The last: no FP8 output (its rows, cols and other fp8 fields not looked at).
        const Shape shapes[] = {{64, 64}, {96, 200}, {1, 7}, {130, 3}, {33, 65}, {8, 16}, {0, 1000}};
        std::mt19937 rng(43);
        std::vector<Param> with;
        for (std::size_t k = 0; k < std::size(shapes); ++k) {
            const std::size_t numel = shapes[k].rows == 0 ? shapes[k].cols : shapes[k].rows * shapes[k].cols;
            with.push_back(random_param(rng, numel, k % 2 == 0, k % 3 != 0));
        }
        std::vector<Param> without = with;
        std::vector<Fp8Copies> copies;
        for (std::size_t k = 0; k < std::size(shapes); ++k) {
            copies.emplace_back(with[k].numel(), k != 3, scale, 0.0f, fp8_type);
        }
        copies[1].amax = 1e6f;  // more than any weight: kept
        copies[2].amax = std::numeric_limits<float>::quiet_NaN();  // kept
        copies[4].with_amax = false;
        copies[0].amax = 0.01f;  // less than the weights': replaced
        std::vector<std::uint8_t> not_looked_at(64, kUntouchedByte);
        Hyper hyper{2e-3, 0.9, 0.95, 0.05, 1e-8};
        float step_with = 0.0f;
        float step_without = 0.0f;
        for (int call = 1; call <= 2; ++call) {
            for (std::size_t k = 0; k < with.size(); ++k) {
                new_gradients(rng, with[k]);
                without[k].grad = with[k].grad;
            }
            if (call == 2) {
                with[5].grad[9] = std::numeric_limits<float>::quiet_NaN();
                without[5].grad[9] = with[5].grad[9];
            }
            std::vector<AdamWTensor> list_with = tensors_of(with);
            for (std::size_t k = 0; k < std::size(shapes); ++k) {
                list_with[k].rows = shapes[k].rows;
                list_with[k].cols = shapes[k].cols;
                if (shapes[k].rows > 0) list_with[k].fp8 = copies[k].output();
            }
            list_with.back().fp8.transposed = not_looked_at.data();
            list_with.back().rows = 3;
            std::vector<AdamWTensor> list_without = tensors_of(without);
            const std::vector<Fp8Copies> before = copies;
            const std::uint64_t launches_before = launch_count();
            step(list_with, step_with, hyper);
            QCOMPARE(launch_count() - launches_before, std::uint64_t{1});
            step(list_without, step_without, hyper);
            QCOMPARE(step_with, static_cast<float>(call));
            QCOMPARE(step_without, step_with);
            for (std::size_t k = 0; k < with.size(); ++k) {
                const QString difference = first_difference(with[k], without[k]);
                QVERIFY2(difference.isEmpty(), qPrintable(QStringLiteral("call %1, tensor %2: %3").arg(call).arg(k).arg(difference)));
                if (shapes[k].rows == 0) continue;
                const Fp8Copies expected = cast_of(before[k], without[k].param, shapes[k].rows, shapes[k].cols);
                const QString fp8 = fp8_difference(copies[k], expected);
                QVERIFY2(fp8.isEmpty(), qPrintable(QStringLiteral("call %1, tensor %2 (%3 x %4): %5")
                                                       .arg(call).arg(k).arg(shapes[k].rows).arg(shapes[k].cols).arg(fp8)));
            }
            QVERIFY(std::all_of(not_looked_at.begin(), not_looked_at.end(), [](std::uint8_t b) { return b == kUntouchedByte; }));
        }
        QCOMPARE(detail::float_bits(copies[1].amax), detail::float_bits(1e6f));
        QVERIFY(std::isnan(copies[2].amax));
        QVERIFY(copies[0].amax > 0.01f);
        QVERIFY(std::isnan(copies[5].amax));
        QCOMPARE(copies[5].data[9], std::uint8_t{0x7f});
        QCOMPARE(copies[5].transposed[(9 % 16) * 8 + 9 / 16], std::uint8_t{0x7f});
    }

    // A NaN gradient is not special: that element's parameter and state become NaN (its copy bfloat16's
    // canonical NaN), the others are as without it.
    void nanGradientPropagates() {
        std::mt19937 rng(37);
        Param p = random_param(rng, 9, true, true);
        new_gradients(rng, p);
        p.grad[4] = std::numeric_limits<float>::quiet_NaN();
        const Param expected = expected_after(p, Hyper{}, 1.0f);
        std::vector<AdamWTensor> list{p.tensor()};
        float step_value = 0.0f;
        step(list, step_value, Hyper{});
        QVERIFY(std::isnan(p.param[4]) && std::isnan(p.exp_avg[4]) && std::isnan(p.exp_avg_sq[4]));
        QCOMPARE(p.copy[4], std::uint16_t{0x7fff});
        for (std::size_t i = 0; i < p.numel(); ++i) {
            if (i != 4) QCOMPARE(detail::float_bits(p.param[i]), detail::float_bits(expected.param[i]));
        }
    }

    // beta^t, the double power rounded once, against the C library's powf (PyTorch's CUDA kernel takes
    // CUDA's powf): never more than an ulp apart over the usual betas and a long run; how often they differ
    // is printed.
    void powerWithinAnUlpOfPowf() {
        int differing = 0;
        int compared = 0;
        for (const float beta : {0.8f, 0.9f, 0.95f, 0.98f, 0.99f, 0.999f, 0.9999f}) {
            for (int t = 1; t <= 20000; ++t) {
                const float ours = detail::float_power(beta, static_cast<float>(t));
                const float libm = std::pow(beta, static_cast<float>(t));
                const auto a = static_cast<std::int64_t>(detail::float_bits(ours));
                const auto b = static_cast<std::int64_t>(detail::float_bits(libm));
                QVERIFY2(std::abs(a - b) <= 1, qPrintable(QStringLiteral("%1^%2: %3 and powf %4").arg(beta).arg(t).arg(ours).arg(libm)));
                differing += a != b ? 1 : 0;
                ++compared;
            }
        }
        qInfo("the double power rounded and powf differ (by an ulp) in %d of %d cases", differing, compared);
    }

    // Each bad argument refused with the function's name, the value or buffer and what is allowed; nothing
    // written, no launch counted.
    void badArgumentsAreRefused() {
        std::mt19937 rng(41);
        std::vector<Param> params;
        params.push_back(random_param(rng, 8, true, false));
        params.push_back(random_param(rng, 8, true, false));
        for (Param& p : params) new_gradients(rng, p);
        const std::vector<Param> original = params;
        float step_value = 3.0f;
        alignas(8) unsigned char raw[16] = {};
        std::vector<std::uint8_t> fp8_data(8, kUntouchedByte);
        std::vector<std::uint8_t> fp8_transposed(8, kUntouchedByte);
        float fp8_scale = 1.0f;
        float fp8_amax = 0.5f;
        // A valid FP8 output of the 8 elements as 2 x 4, for the cases to spoil.
        const auto with_fp8 = [&](AdamWTensor& t) {
            t.fp8 = {fp8_data.data(), fp8_transposed.data(), &fp8_scale, &fp8_amax, Fp8Type::E4M3};
            t.rows = 2;
            t.cols = 4;
        };
        const std::uint64_t before = launch_count();

        struct Case {
            const char* what;
            std::function<void(std::vector<AdamWTensor>&, float*&, Hyper&)> spoil;
            std::vector<const char*> expected;
        };
        const std::vector<Case> cases = {
            {"null param", [](auto& l, auto&, auto&) { l[1].param = nullptr; }, {"(tensor 1)", "param is a null pointer"}},
            {"null grad", [](auto& l, auto&, auto&) { l[0].grad = nullptr; }, {"(tensor 0)", "grad is a null pointer"}},
            {"null exp_avg", [](auto& l, auto&, auto&) { l[1].exp_avg = nullptr; }, {"(tensor 1)", "exp_avg is a null pointer"}},
            {"null exp_avg_sq", [](auto& l, auto&, auto&) { l[1].exp_avg_sq = nullptr; }, {"(tensor 1)", "exp_avg_sq is a null pointer"}},
            {"misaligned param", [&](auto& l, auto&, auto&) { l[0].param = reinterpret_cast<float*>(raw + 2); },
             {"(tensor 0)", "param is not 4-byte aligned"}},
            {"misaligned copy", [&](auto& l, auto&, auto&) { l[1].param_bf16 = raw + 1; }, {"(tensor 1)", "param_bf16 is not 2-byte aligned"}},
            {"state given twice", [](auto& l, auto&, auto&) { l[1].exp_avg_sq = l[1].exp_avg; },
             {"(tensor 1)", "exp_avg and exp_avg_sq are the same buffer"}},
            {"grad is the param", [](auto& l, auto&, auto&) { l[0].grad = l[0].param; }, {"(tensor 0)", "param and grad are the same buffer"}},
            {"numel too large", [](auto& l, auto&, auto&) { l[1].numel = kAdamWMaxNumel + 1; }, {"(tensor 1)", "numel = ", "allowed: at most"}},
            {"null step", [](auto&, auto& s, auto&) { s = nullptr; }, {"step is a null pointer"}},
            {"misaligned step", [&](auto&, auto& s, auto&) { s = reinterpret_cast<float*>(raw + 1); }, {"step is not 4-byte aligned"}},
            {"negative lr", [](auto&, auto&, auto& h) { h.lr = -1e-3; }, {"lr = -0.001", "allowed: 0 <= lr"}},
            {"NaN lr", [](auto&, auto&, auto& h) { h.lr = std::nan(""); }, {"lr = nan", "allowed"}},
            {"lr beyond float32", [](auto&, auto&, auto& h) { h.lr = 1e39; }, {"lr = 1e+39", "finite in float32"}},
            {"beta1 1", [](auto&, auto&, auto& h) { h.beta1 = 1.0; }, {"beta1 = 1", "allowed: 0 <= beta1 < 1"}},
            {"beta2 negative", [](auto&, auto&, auto& h) { h.beta2 = -0.5; }, {"beta2 = -0.5", "allowed: 0 <= beta2 < 1"}},
            {"eps negative", [](auto&, auto&, auto& h) { h.eps = -1e-8; }, {"eps = -1e-08", "allowed: 0 <= eps"}},
            {"weight decay inf", [](auto&, auto&, auto& h) { h.weight_decay = std::numeric_limits<double>::infinity(); },
             {"weight_decay = inf", "allowed: 0 <= weight_decay"}},
            {"FP8 shape not numel", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].cols = 3; },
             {"(tensor 0)", "grad has 8 elements; allowed: 6"}},
            {"FP8 shape whose product wraps to numel", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].rows = (std::size_t{1} << 62) + 2; },
             {"(tensor 1)", "rows = 4611686018427387906, cols = 4 with numel = 8"}},
            {"FP8 tiles beyond a launch's share of the grid",
             [&](auto& l, auto&, auto&) {
                 with_fp8(l[1]);
                 l[1].numel = (kAdamWMaxChunks + 1) * kAdamWFp8Tile;
                 l[1].rows = 1;
                 l[1].cols = l[1].numel;
             },
             {"(tensor 1)", "rows = 1, cols = 536870912 make 8388608 tiles of 64 x 64; allowed: at most 8388607"}},
            {"FP8 scale null", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.scale = nullptr; },
             {"(tensor 0)", "fp8.scale is a null pointer"}},
            {"FP8 scale misaligned", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].fp8.scale = reinterpret_cast<const float*>(raw + 2); },
             {"(tensor 1)", "fp8.scale is not 4-byte aligned"}},
            {"FP8 amax misaligned", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.amax = reinterpret_cast<float*>(raw + 1); },
             {"(tensor 0)", "fp8.amax is not 4-byte aligned"}},
            {"FP8 type unknown", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.type = static_cast<Fp8Type>(5); },
             {"(tensor 0)", "fp8 has dtype int64; allowed: E4M3, E5M2"}},
            {"FP8 transposed is its data", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].fp8.transposed = l[1].fp8.data; },
             {"(tensor 1)", "fp8.transposed and fp8.data are the same buffer"}},
            {"FP8 data is the param", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.data = l[0].param; },
             {"(tensor 0)", "param and fp8.data are the same buffer; each must be its own"}},
            {"FP8 data is the grad", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.data = const_cast<float*>(l[0].grad); },
             {"(tensor 0)", "grad and fp8.data are the same buffer"}},
            {"FP8 transposed is the bfloat16 copy", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].fp8.transposed = l[1].param_bf16; },
             {"(tensor 1)", "param_bf16 and fp8.transposed are the same buffer"}},
            {"FP8 transposed is exp_avg_sq", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].fp8.transposed = l[1].exp_avg_sq; },
             {"(tensor 1)", "exp_avg_sq and fp8.transposed are the same buffer"}},
            {"FP8 amax is exp_avg", [&](auto& l, auto&, auto&) { with_fp8(l[1]); l[1].fp8.amax = l[1].exp_avg; },
             {"(tensor 1)", "exp_avg and fp8.amax are the same buffer"}},
            {"FP8 amax is its scale", [&](auto& l, auto&, auto&) { with_fp8(l[0]); l[0].fp8.amax = &fp8_scale; },
             {"(tensor 0)", "fp8.scale and fp8.amax are the same buffer"}},
        };
        for (const Case& c : cases) {
            std::vector<AdamWTensor> list = tensors_of(params);
            float* step_pointer = &step_value;
            Hyper hyper;
            c.spoil(list, step_pointer, hyper);
            const QString message = refusal([&] {
                adamw(list.data(), list.size(), step_pointer, hyper.lr, hyper.beta1, hyper.beta2, hyper.weight_decay, hyper.eps);
            });
            QVERIFY2(message.startsWith(QStringLiteral("tewb::kernels::host::adamw_step")), qPrintable(QStringLiteral("%1: %2").arg(c.what, message)));
            for (const char* part : c.expected) {
                QVERIFY2(message.contains(QLatin1String(part)), qPrintable(QStringLiteral("%1: \"%2\" lacks \"%3\"").arg(c.what, message, part)));
            }
        }
        const QString no_list = refusal([&] {
            adamw(nullptr, 2, &step_value, 1e-3, 0.9, 0.999, 0.0, 1e-8);
        });
        QVERIFY2(no_list.contains(QStringLiteral("parameters is null with count 2")), qPrintable(no_list));
        QCOMPARE(launch_count(), before);
        QCOMPARE(step_value, 3.0f);
        for (std::size_t k = 0; k < params.size(); ++k) {
            QVERIFY(same_bits(params[k].param, original[k].param));
            QVERIFY(same_bits(params[k].exp_avg, original[k].exp_avg));
            QVERIFY(params[k].copy == original[k].copy);
        }
        QVERIFY(std::all_of(fp8_data.begin(), fp8_data.end(), [](std::uint8_t b) { return b == kUntouchedByte; }));
        QVERIFY(std::all_of(fp8_transposed.begin(), fp8_transposed.end(), [](std::uint8_t b) { return b == kUntouchedByte; }));
        QCOMPARE(fp8_amax, 0.5f);
    }
};

QTEST_GUILESS_MAIN(TestHostAdamW)
#include "tst_host_adamw.moc"
