// The host SwiGLU (tewb_kernels/host/activation.h) against references written here: y = silu(a) * u and its
// two gradients in double precision within the bounds the header states (every bfloat16 gate, samples at
// many scales, saturating sigmoids), the gradients against central finite differences of the double forward,
// the bfloat16 stores, the FP8 output, its transposed copy and amax bit for bit against float_to_fp8 of the
// op's own float32 result, special values, argument refusals and launch counts.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/host_numbers.h"
#include "host_tensor.h"
#include "launch_checks.h"
#include "norm_activation_calls.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"

using tewb::kernels::DType;
using tewb::kernels::detail::Fp8Output;
using tewb::kernels::Fp8Type;
using tewb::kernels::Tensor;
namespace host = tewb::kernels::host;
namespace detail = tewb::kernels::detail;
namespace calls = tewb::test::calls;

using tewb::test::expect_refusal;
using tewb::test::launches_of;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

using Buffer = tewb::test::HostTensor;
using Shape = std::pair<std::size_t, std::size_t>;

// Half widths not a multiple of 8 or 4 and multiples of them, one row, more rows than a 64-row tile, and
// widths past one 64-column tile.
const std::vector<Shape> kShapes = {{1, 1},   {3, 7},   {2, 8},   {5, 24},    {17, 129},
                                    {1, 300}, {300, 1}, {65, 63}, {130, 100}, {64, 64}};

Tensor cref(const Buffer& t, std::size_t rows, std::size_t cols) {
    return tewb::kernels::input(t.data(), t.dtype(), rows, cols);
}

Tensor ref(Buffer& t, std::size_t rows, std::size_t cols) {
    return tewb::kernels::input(t.data(), t.dtype(), rows, cols);
}

Buffer from_values(DType dtype, const std::vector<float>& v) {
    Buffer t(dtype, v.size());
    for (std::size_t i = 0; i < v.size(); ++i) t.set(i, v[i]);
    return t;
}

Buffer random_tensor(DType dtype, std::size_t count, std::mt19937& rng, float spread) {
    Buffer t(dtype, count);
    std::normal_distribution<float> normal(0.0f, spread);
    for (std::size_t i = 0; i < count; ++i) t.set(i, normal(rng));
    return t;
}

std::string describe(const char* what, std::size_t i, double got, double want, double tol) {
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, ": got %.9g, want %.9g (tolerance %.3g)", got, want, tol);
    return std::string(what) + " i=" + std::to_string(i) + numbers;
}

bool agrees(float got, double want, double tolerance) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return static_cast<double>(got) == want;
    return std::fabs(static_cast<double>(got) - want) <= tolerance;
}

float rounded(DType dtype, float v) {
    return dtype == DType::Float32 ? v : detail::bf16_to_float(detail::float_to_bf16(v));
}

// ---- double-precision references and the header's bounds ----

double sigmoid(double a) {
    return 1.0 / (1.0 + std::exp(-a));
}

double swiglu(double a, double u) {
    return a * sigmoid(a) * u;
}

double gate_gradient(double dy, double a, double u) {
    const double s = sigmoid(a);
    return dy * u * s * (1.0 + a * (1.0 - s));
}

double forward_tolerance(double a, double u) {
    return std::ldexp(std::fabs(a * sigmoid(a) * u), -21) + std::ldexp(std::fabs(a * u) + 1.0, -126);
}

double gate_tolerance(double dy, double a, double u) {
    const double du = std::fabs(dy * u);
    return std::ldexp(du * sigmoid(a) * (1.0 + std::fabs(a)), -20) + std::ldexp(du * (1.0 + std::fabs(a)) + 1.0, -126);
}

double up_tolerance(double dy, double a) {
    return std::ldexp(std::fabs(dy * a * sigmoid(a)), -21) + std::ldexp(std::fabs(dy * a) + 1.0, -126);
}

// Every finite bfloat16 value, saturating gates, then normal samples at scales 2^-4 .. 2^7: the gates.
std::vector<float> gate_inputs(std::size_t extra, std::mt19937& rng) {
    std::vector<float> v;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = detail::bf16_to_float(static_cast<std::uint16_t>(h));
        if (std::isfinite(f)) v.push_back(f);
    }
    for (const float a : {16.0f, 17.5f, 30.0f, 88.0f, 88.8f, 89.0f, 100.0f, 104.0f, 1e4f, 1e30f}) {
        v.push_back(a);
        v.push_back(-a);
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < extra; ++i) v.push_back(normal(rng) * std::ldexp(1.0f, static_cast<int>(i % 12) - 4));
    return v;
}

// in [1, 2n]: the gates, then n values uniform in [-1, 1) (so no product overflows float32).
std::vector<float> with_up_half(const std::vector<float>& gates, std::mt19937& rng) {
    std::vector<float> in(gates);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (std::size_t i = 0; i < gates.size(); ++i) in.push_back(uniform(rng));
    return in;
}

// [rows, 2 * cols] with normal gates (spread 3) and ups, one gate and its up at 100 (y = 1e4: saturates FP8 at
// the tests' scales).
Buffer swiglu_input(DType dtype, std::size_t rows, std::size_t cols, std::mt19937& rng) {
    Buffer in = random_tensor(dtype, rows * 2 * cols, rng, 3.0f);
    in.set(0, 100.0f);
    in.set(cols, 100.0f);
    return in;
}

struct Fp8Buffers {
    std::vector<std::uint8_t> data, transposed;
    float scale = 0.0f;
    float amax = 0.0f;
    Fp8Output output(Fp8Type type, bool with_transposed) {
        return {data.data(), with_transposed ? transposed.data() : nullptr, &scale, &amax, type};
    }
};

Fp8Buffers fp8_buffers(std::size_t count, float scale) {
    return {std::vector<std::uint8_t>(count, 0xaa), std::vector<std::uint8_t>(count, 0xaa), scale, 0.0f};
}

// The FP8 output of values v [rows, cols]: bytes, transposed copy (when asked) and amax bit for bit.
void check_fp8(const Fp8Buffers& b, const std::vector<float>& v, std::size_t rows, std::size_t cols, Fp8Type type,
               bool with_transposed) {
    std::uint32_t max_bits = 0;
    for (std::size_t i = 0; i < rows * cols; ++i) {
        QCOMPARE(b.data[i], detail::float_to_fp8(v[i] * b.scale, type));
        if (with_transposed) QCOMPARE(b.transposed[(i % cols) * rows + i / cols], b.data[i]);
        max_bits = std::max(max_bits, detail::float_bits(v[i]) & 0x7fffffffu);
    }
    QCOMPARE(detail::float_bits(b.amax), max_bits);
}

}  // namespace

class TestHostActivation : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void forwardMatchesDouble() {
        std::mt19937 rng(41);
        const std::vector<float> gates = gate_inputs(20000, rng);
        const std::size_t n = gates.size();
        const Buffer in = from_values(DType::Float32, with_up_half(gates, rng));
        Buffer y(DType::Float32, n);
        QCOMPARE(launches_of([&] { calls::swiglu_forward(cref(in, 1, 2 * n), ref(y, 1, n), nullptr); }), std::uint64_t{1});
        double worst = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double a = in.at(i), u = in.at(n + i);
            const double want = swiglu(a, u);
            const double tol = forward_tolerance(a, u);
            worst = std::max(worst, std::fabs(y.at(i) - want) / tol);
            QVERIFY2(agrees(y.at(i), want, tol), describe("swiglu", i, y.at(i), want, tol).c_str());
        }
        qInfo("swiglu forward: worst error %.3f of the stated bound", worst);
    }

    void backwardMatchesDouble() {
        std::mt19937 rng(43);
        const std::vector<float> gates = gate_inputs(20000, rng);
        const std::size_t n = gates.size();
        const Buffer in = from_values(DType::Float32, with_up_half(gates, rng));
        Buffer dy(DType::Float32, n);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        for (std::size_t i = 0; i < n; ++i) dy.set(i, uniform(rng));
        Buffer din(DType::Float32, 2 * n);
        QCOMPARE(launches_of([&] { calls::swiglu_backward(cref(dy, 1, n), cref(in, 1, 2 * n), ref(din, 1, 2 * n), nullptr); }),
                 std::uint64_t{1});
        double worst_gate = 0.0, worst_up = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double a = in.at(i), u = in.at(n + i), d = dy.at(i);
            const double want_gate = gate_gradient(d, a, u);
            const double tol_gate = gate_tolerance(d, a, u);
            worst_gate = std::max(worst_gate, std::fabs(din.at(i) - want_gate) / tol_gate);
            QVERIFY2(agrees(din.at(i), want_gate, tol_gate),
                     describe("swiglu d gate", i, din.at(i), want_gate, tol_gate).c_str());
            const double want_up = d * a * sigmoid(a);
            const double tol_up = up_tolerance(d, a);
            worst_up = std::max(worst_up, std::fabs(din.at(n + i) - want_up) / tol_up);
            QVERIFY2(agrees(din.at(n + i), want_up, tol_up), describe("swiglu d up", i, din.at(n + i), want_up, tol_up).c_str());
        }
        qInfo("swiglu backward: worst error %.3f (gate), %.3f (up) of the stated bounds", worst_gate, worst_up);
    }

    // The gradients are the forward's: central differences of the double forward, per gate and per up value.
    void backwardAgreesWithFiniteDifferences() {
        const std::size_t rows = 3, cols = 37;
        std::mt19937 rng(47);
        const Buffer in = random_tensor(DType::Float32, rows * 2 * cols, rng, 4.0f);
        const Buffer dy = random_tensor(DType::Float32, rows * cols, rng, 1.0f);
        Buffer din(DType::Float32, rows * 2 * cols);
        calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols), nullptr);
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t c = 0; c < cols; ++c) {
                const std::size_t at = r * 2 * cols + c;
                const double a = in.at(at), u = in.at(at + cols), d = dy.at(r * cols + c);
                const double h = 1e-4 * std::max(1.0, std::fabs(a));
                const double fd_gate = d * (swiglu(a + h, u) - swiglu(a - h, u)) / (2.0 * h);
                const double fd_up = d * (swiglu(a, u + 1e-3) - swiglu(a, u - 1e-3)) / 2e-3;
                const double tol = 1e-5 * std::fabs(d) * (std::fabs(u) + std::fabs(a) + 1.0);
                QVERIFY2(std::fabs(din.at(at) - fd_gate) <= tol,
                         describe("d gate vs differences", at, din.at(at), fd_gate, tol).c_str());
                QVERIFY2(std::fabs(din.at(at + cols) - fd_up) <= tol,
                         describe("d up vs differences", at, din.at(at + cols), fd_up, tol).c_str());
            }
        }
    }

    void specialValues() {
        // Gates NaN, +inf, -inf, 0, -1e30 and an up of NaN; silu(-inf) = -inf * 0 is NaN by the formula.
        const std::vector<float> gates = {kNaN, kInf, -kInf, 0.0f, -1e30f, 1.0f};
        const std::vector<float> ups = {1.0f, 2.0f, 1.0f, 5.0f, 3.0f, kNaN};
        std::vector<float> values(gates);
        values.insert(values.end(), ups.begin(), ups.end());
        const Buffer in = from_values(DType::Float32, values);
        Buffer y(DType::Float32, 6), dy = from_values(DType::Float32, std::vector<float>(6, 1.0f)), din(DType::Float32, 12);
        calls::swiglu_forward(cref(in, 1, 12), ref(y, 1, 6), nullptr);
        QVERIFY(std::isnan(y.at(0)));
        QCOMPARE(y.at(1), kInf);
        QVERIFY(std::isnan(y.at(2)));
        QCOMPARE(y.at(3), 0.0f);
        QCOMPARE(y.at(4), 0.0f);  // sigmoid underflows to 0
        QVERIFY(std::isnan(y.at(5)));
        calls::swiglu_backward(cref(dy, 1, 6), cref(in, 1, 12), ref(din, 1, 12), nullptr);
        QVERIFY(std::isnan(din.at(0)));
        QVERIFY(std::isnan(din.at(1)));  // 1 + inf * (1 - 1): the gate's derivative at +-inf is NaN
        QVERIFY(std::isnan(din.at(2)));
        QCOMPARE(din.at(3), 5.0f * 0.5f);  // u * sigmoid(0)
        QCOMPARE(din.at(4), 0.0f);
        QVERIFY(std::isnan(din.at(5)));
        QCOMPARE(din.at(6 + 1), kInf);  // d up = dy * silu(a)
        QCOMPARE(din.at(6 + 3), 0.0f);
        QCOMPARE(din.at(6 + 4), 0.0f);
        QCOMPARE(din.at(6 + 5), static_cast<float>(1.0 / (1.0 + std::exp(-1.0))));
    }

    // bfloat16 and float32 in and out, the FP8 output (with and without its transposed copy), each against the
    // float32 run on the same values; one launch each.
    void forwardStoresAndFp8() {
        std::mt19937 rng(53);
        for (const DType in_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType out_dtype : {DType::Float32, DType::BFloat16}) {
                for (const auto& [rows, cols] : kShapes) {
                    const Buffer in = swiglu_input(in_dtype, rows, cols, rng);
                    const Buffer in32 = from_values(DType::Float32, in.values());
                    Buffer y32(DType::Float32, rows * cols), out(out_dtype, rows * cols);
                    calls::swiglu_forward(cref(in32, rows, 2 * cols), ref(y32, rows, cols), nullptr);
                    const Fp8Type type = out_dtype == DType::Float32 ? Fp8Type::E4M3 : Fp8Type::E5M2;
                    const bool with_transposed = rows != 2;
                    Fp8Buffers b = fp8_buffers(rows * cols, 100.0f);
                    const Fp8Output fp8 = b.output(type, with_transposed);
                    QCOMPARE(launches_of([&] { calls::swiglu_forward(cref(in, rows, 2 * cols), ref(out, rows, cols), &fp8); }),
                             std::uint64_t{1});
                    const std::vector<float> y = y32.values();
                    for (std::size_t i = 0; i < rows * cols; ++i) {
                        QCOMPARE(detail::float_bits(out.at(i)), detail::float_bits(rounded(out_dtype, y[i])));
                    }
                    check_fp8(b, y, rows, cols, type, with_transposed);
                    QCOMPARE(b.data[0], type == Fp8Type::E4M3 ? std::uint8_t{0x7e} : std::uint8_t{0x7b});  // saturated
                }
            }
        }
    }

    void backwardStoresAndFp8() {
        std::mt19937 rng(59);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const auto& [rows, cols] : kShapes) {
                const Buffer in = swiglu_input(dtype, rows, cols, rng);
                const Buffer dy = random_tensor(dtype, rows * cols, rng, 1.0f);
                const Buffer in32 = from_values(DType::Float32, in.values()), dy32 = from_values(DType::Float32, dy.values());
                Buffer g32(DType::Float32, rows * 2 * cols), din(dtype, rows * 2 * cols);
                calls::swiglu_backward(cref(dy32, rows, cols), cref(in32, rows, 2 * cols), ref(g32, rows, 2 * cols), nullptr);
                const bool with_transposed = cols != 8;
                Fp8Buffers b = fp8_buffers(rows * 2 * cols, 8.0f);
                const Fp8Output fp8 = b.output(Fp8Type::E5M2, with_transposed);
                QCOMPARE(launches_of([&] {
                             calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols),
                                                   &fp8);
                         }),
                         std::uint64_t{1});
                const std::vector<float> g = g32.values();
                for (std::size_t i = 0; i < g.size(); ++i) {
                    QCOMPARE(detail::float_bits(din.at(i)), detail::float_bits(rounded(dtype, g[i])));
                }
                check_fp8(b, g, rows, 2 * cols, Fp8Type::E5M2, with_transposed);
            }
        }
    }

    // Either output alone; FP8 without amax; a NaN makes its bytes NaN and amax NaN.
    void outputsAreOptional() {
        const std::size_t rows = 5, cols = 9;
        std::mt19937 rng(61);
        Buffer in = random_tensor(DType::Float32, rows * 2 * cols, rng, 2.0f);
        const Buffer dy = random_tensor(DType::Float32, rows * cols, rng, 1.0f);
        Buffer y(DType::Float32, rows * cols), din(DType::Float32, rows * 2 * cols);
        calls::swiglu_forward(cref(in, rows, 2 * cols), ref(y, rows, cols), nullptr);
        calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols), nullptr);
        std::vector<std::uint8_t> data(rows * 2 * cols);
        const float scale = 2.0f;
        const Fp8Output no_amax{data.data(), nullptr, &scale, nullptr, Fp8Type::E4M3};
        QCOMPARE(launches_of([&] {
                     calls::swiglu_forward(cref(in, rows, 2 * cols), {nullptr, DType::Float32, 0, 0}, &no_amax);
                 }),
                 std::uint64_t{1});
        for (std::size_t i = 0; i < rows * cols; ++i) QCOMPARE(data[i], detail::float_to_fp8(y.at(i) * scale, Fp8Type::E4M3));
        QCOMPARE(
            launches_of([&] {
                calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), {nullptr, DType::Float32, 0, 0}, &no_amax);
            }),
            std::uint64_t{1});
        for (std::size_t i = 0; i < rows * 2 * cols; ++i)
            QCOMPARE(data[i], detail::float_to_fp8(din.at(i) * scale, Fp8Type::E4M3));

        in.set(2 * cols + 3, kNaN);  // row 1's gate 3
        float amax = 0.0f;
        const Fp8Output with_amax{data.data(), nullptr, &scale, &amax, Fp8Type::E4M3};
        calls::swiglu_forward(cref(in, rows, 2 * cols), ref(y, rows, cols), &with_amax);
        QVERIFY(std::isnan(y.at(cols + 3)));
        QCOMPARE(data[cols + 3], std::uint8_t{0x7f});
        QVERIFY(std::isnan(amax));
        amax = 0.0f;
        calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols), &with_amax);
        QVERIFY(std::isnan(din.at(2 * cols + 3)));
        QVERIFY(std::isnan(din.at(2 * cols + cols + 3)));
        QVERIFY(std::isfinite(din.at(0)));
        QVERIFY(std::isnan(amax));
    }

    // The amax hand-off (swiglu_forward_current_scale, swiglu_backward_current_scale): the plain call, then
    // abs_max_current_scale of its output, bit for bit (out or din, scale, scale_inv, staging), one launch; a NaN; no
    // elements (the scale of amax 0); a target inside a tensor of the call refused.
    void currentScaleFormsAreTheCallThenItsScale() {
        std::mt19937 rng(97);
        const auto scalar = [](float* p) { return tewb::kernels::input(p, DType::Float32, 1, 1); };
        const auto target_of = [&](float (&f)[3]) {
            tewb::kernels::CurrentScaleTarget t;
            t.numerator = 448.0f;
            t.scale = scalar(&f[0]);
            t.scale_inv = scalar(&f[1]);
            t.staging = scalar(&f[2]);
            return t;
        };
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const Shape& shape : kShapes) {
                for (const bool nan : {false, true}) {
                    const auto [rows, cols] = shape;
                    Buffer in = random_tensor(dtype, rows * 2 * cols, rng, 2.0f);
                    Buffer dy = random_tensor(dtype, rows * cols, rng, 1.0f);
                    if (nan) in.set(rows * cols, kNaN);
                    Buffer out_ref(dtype, rows * cols), out(dtype, rows * cols), din_ref(dtype, rows * 2 * cols), din(dtype, rows * 2 * cols);
                    float want[2][3] = {{0, 0, 0.5f}, {0, 0, 0.5f}}, got[2][3] = {{0, 0, 0.5f}, {0, 0, 0.5f}};
                    calls::swiglu_forward(cref(in, rows, 2 * cols), ref(out_ref, rows, cols), nullptr);
                    host::abs_max_current_scale(cref(out_ref, rows, cols), 448.0f, scalar(&want[0][0]), scalar(&want[0][1]), scalar(&want[0][2]), {});
                    calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din_ref, rows, 2 * cols), nullptr);
                    host::abs_max_current_scale(cref(din_ref, rows, 2 * cols), 448.0f, scalar(&want[1][0]), scalar(&want[1][1]),
                                                scalar(&want[1][2]), {});
                    QCOMPARE(launches_of([&] {
                                 host::swiglu_forward_current_scale(cref(in, rows, 2 * cols), ref(out, rows, cols), target_of(got[0]), {});
                             }),
                             std::uint64_t{1});
                    QCOMPARE(launches_of([&] {
                                 host::swiglu_backward_current_scale(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols),
                                                                     target_of(got[1]), {});
                             }),
                             std::uint64_t{1});
                    for (std::size_t i = 0; i < rows * cols; ++i) QCOMPARE(detail::float_bits(out.at(i)), detail::float_bits(out_ref.at(i)));
                    for (std::size_t i = 0; i < rows * 2 * cols; ++i) QCOMPARE(detail::float_bits(din.at(i)), detail::float_bits(din_ref.at(i)));
                    for (int k = 0; k < 2; ++k) {
                        for (int j = 0; j < 3; ++j) QCOMPARE(detail::float_bits(got[k][j]), detail::float_bits(want[k][j]));
                    }
                    if (nan) QCOMPARE(got[0][0], 1.0f);
                }
            }
        }
        float got[3] = {0.0f, 0.0f, 2.0f};
        std::uint16_t none[4] = {};
        QCOMPARE(launches_of([&] {
                     host::swiglu_forward_current_scale(tewb::kernels::input(none, DType::BFloat16, 0, 4),
                                                        tewb::kernels::input(none, DType::BFloat16, 0, 2), target_of(got), {});
                 }),
                 std::uint64_t{1});
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(got[2], 2.0f);
        Buffer in = random_tensor(DType::Float32, 8, rng, 1.0f), out(DType::Float32, 4);
        float floats[3] = {};
        auto in_out = target_of(floats);
        in_out.staging = scalar(static_cast<float*>(out.data()) + 1);
        expect_refusal([&] { host::swiglu_forward_current_scale(cref(in, 2, 4), ref(out, 2, 2), in_out, {}); },
                       {"tewb::kernels::host::swiglu_forward_current_scale", "staging lies in out"});
        expect_refusal([&] { host::swiglu_backward_current_scale(cref(out, 2, 2), cref(in, 2, 4), {nullptr, DType::Float32, 2, 4}, target_of(floats), {}); },
                       {"tewb::kernels::host::swiglu_backward_current_scale", "din is null"});
    }

    void refusals() {
        const std::size_t rows = 3, cols = 5;
        Buffer in(DType::Float32, rows * 2 * cols), out(DType::Float32, rows * cols), dy(DType::Float32, rows * cols),
            din(DType::Float32, rows * 2 * cols), in16(DType::BFloat16, rows * 2 * cols);
        const char* forward = "tewb::kernels::host::swiglu_forward";
        expect_refusal([&] { calls::swiglu_forward(cref(in, rows, 2 * cols - 1), ref(out, rows, cols), nullptr); },
                       {forward, "in is [3, 9]: an odd width", "[rows, 2 * cols]"});
        expect_refusal([&] { calls::swiglu_forward(cref(in, rows, 2 * cols), ref(out, rows, cols + 1), nullptr); },
                       {forward, "out is [3, 6]; allowed: [3, 5]"});
        expect_refusal(
            [&] {
                calls::swiglu_forward(cref(in, rows, 2 * cols), {nullptr, DType::Float32, rows, cols}, nullptr);
            },
            {forward, "no output: out and fp8 are both null"});
        expect_refusal(
            [&] {
                calls::swiglu_forward({nullptr, DType::Float32, rows, 2 * cols}, ref(out, rows, cols), nullptr);
            },
            {forward, "in is a null pointer"});
        expect_refusal(
            [&] {
                calls::swiglu_forward({in.data(), DType::Float16, rows, 2 * cols}, ref(out, rows, cols), nullptr);
            },
            {forward, "in has dtype float16; allowed: float32, bfloat16"});
        expect_refusal(
            [&] {
                calls::swiglu_forward(cref(in, rows, 2 * cols), {static_cast<char*>(out.data()) + 2, DType::Float32, rows, cols},
                                     nullptr);
            },
            {forward, "out is not 4-byte aligned"});
        const float scale = 1.0f;
        std::vector<std::uint8_t> data(rows * 2 * cols);
        const Fp8Output bad_type{data.data(), nullptr, &scale, nullptr, static_cast<Fp8Type>(7)};
        expect_refusal([&] { calls::swiglu_forward(cref(in, rows, 2 * cols), ref(out, rows, cols), &bad_type); },
                       {forward, "fp8 has dtype int64; allowed: E4M3, E5M2"});
        const Fp8Output same_buffer{data.data(), data.data(), &scale, nullptr, Fp8Type::E4M3};
        expect_refusal([&] { calls::swiglu_forward(cref(in, rows, 2 * cols), ref(out, rows, cols), &same_buffer); },
                       {forward, "fp8.transposed and fp8.data are the same buffer"});
        QCOMPARE(launches_of([&] {
                     calls::swiglu_forward({nullptr, DType::Float32, 0, 2 * cols}, ref(out, 0, cols), nullptr);
                 }),
                 std::uint64_t{0});
        QCOMPARE(launches_of([&] {
                     calls::swiglu_forward({nullptr, DType::Float32, rows, 0}, ref(out, rows, 0), nullptr);
                 }),
                 std::uint64_t{0});

        const char* backward = "tewb::kernels::host::swiglu_backward";
        expect_refusal([&] { calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), {nullptr}, nullptr); },
                       {backward, "no output: din and fp8 are both null"});
        expect_refusal([&] { calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 7), ref(din, rows, 7), nullptr); },
                       {backward, "in is [3, 7]: an odd width"});
        expect_refusal(
            [&] { calls::swiglu_backward(cref(dy, rows, cols + 1), cref(in, rows, 2 * cols), ref(din, rows, 2 * cols), nullptr); },
            {backward, "dy is [3, 6]; allowed: [3, 5]"});
        expect_refusal(
            [&] { calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), ref(din, rows, cols), nullptr); },
            {backward, "din is [3, 5]; allowed: [3, 10]"});
        expect_refusal(
            [&] { calls::swiglu_backward(cref(dy, rows, cols), cref(in16, rows, 2 * cols), ref(din, rows, 2 * cols), nullptr); },
            {backward, "dy has dtype float32; allowed: bfloat16, in's"});
        expect_refusal(
            [&] {
                calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols),
                                      {din.data(), DType::BFloat16, rows, 2 * cols}, nullptr);
            },
            {backward, "din has dtype bfloat16; allowed: float32, in's"});
        expect_refusal(
            [&] {
                calls::swiglu_backward({nullptr, DType::Float32, rows, cols}, cref(in, rows, 2 * cols), ref(din, rows, 2 * cols),
                                      nullptr);
            },
            {backward, "dy is a null pointer"});
        expect_refusal([&] { calls::swiglu_backward(cref(dy, rows, cols), cref(in, rows, 2 * cols), {nullptr}, &bad_type); },
                       {backward, "fp8 has dtype int64; allowed: E4M3, E5M2"});
        QCOMPARE(launches_of([&] {
                     calls::swiglu_backward({nullptr, DType::Float32, 0, cols}, {nullptr, DType::Float32, 0, 2 * cols},
                                           {din.data(), DType::Float32, 0, 2 * cols}, nullptr);
                 }),
                 std::uint64_t{0});
    }
};

QTEST_GUILESS_MAIN(TestHostActivation)
#include "tst_host_activation.moc"
