// The host rotary embeddings (tewb_kernels/host/rotary.h) against a rotation written here in double precision
// within the bound the header states (float32 and bfloat16, vector-width and odd head sizes, positions past one
// sequence, tables longer than seq), the inverse undoing the forward, copied heads bit for bit (NaN payloads
// included), the bfloat16 store's rounding, rows of the tables past seq never read, argument refusals and
// launch counts.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "host_tensor.h"
#include "launch_checks.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/rotary.h"

using tewb::kernels::DType;
using tewb::kernels::RotaryHeads;
using tewb::kernels::Tensor;
using tewb::kernels::input;
namespace host = tewb::kernels::host;
namespace detail = tewb::kernels::detail;

using tewb::test::expect_refusal;
using tewb::test::launches_of;

namespace {

using Buffer = tewb::test::HostTensor;

// x [batch, seq, heads, head_dim], the first `rotated` heads turned.
struct Layout {
    std::size_t batch, seq, heads, rotated, head_dim;
    std::size_t rows() const { return batch * seq; }
    std::size_t cols() const { return heads * head_dim; }
    std::size_t count() const { return rows() * cols(); }
    std::size_t half() const { return head_dim / 2; }
};

// Half widths a multiple of 4 and 8 (the kernel's 16-byte path) and not (1, 3, 5), every head turned, none,
// some; a batch of several sequences; enough rows to split over threads.
const Layout kLayouts[] = {{1, 1, 1, 1, 2},  {2, 3, 2, 1, 6},  {3, 5, 4, 4, 8},     {2, 7, 5, 3, 10},
                           {1, 4, 3, 0, 16}, {2, 9, 6, 4, 64}, {4, 96, 20, 16, 64}, {8, 64, 4, 2, 128}};

struct Tables {
    std::vector<float> cos, sin;
    std::size_t rows, half;
};

// θ(p, i) = p · 10000^(−2i / head_dim) in double, rounded once (core/model/Rotary.h's tables).
Tables tables(std::size_t rows, std::size_t head_dim) {
    const std::size_t half = head_dim / 2;
    Tables t{std::vector<float>(rows * half), std::vector<float>(rows * half), rows, half};
    for (std::size_t p = 0; p < rows; ++p) {
        for (std::size_t i = 0; i < half; ++i) {
            const double theta =
                static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
            t.cos[p * half + i] = static_cast<float>(std::cos(theta));
            t.sin[p * half + i] = static_cast<float>(std::sin(theta));
        }
    }
    return t;
}

Tensor cos_ref(const Tables& t) {
    return input(t.cos.data(), DType::Float32, t.rows, t.half);
}

Tensor sin_ref(const Tables& t) {
    return input(t.sin.data(), DType::Float32, t.rows, t.half);
}

Tensor cref(const Buffer& t, const Layout& l) {
    return input(t.data(), t.dtype(), l.rows(), l.cols());
}

Tensor ref(Buffer& t, const Layout& l) {
    return input(t.data(), t.dtype(), l.rows(), l.cols());
}

RotaryHeads heads_of(const Layout& l, bool inverse) {
    return {l.seq, l.heads, l.rotated, inverse};
}

Buffer random_tensor(DType dtype, std::size_t count, std::mt19937& rng) {
    Buffer t(dtype, count);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (std::size_t i = 0; i < count; ++i) t.set(i, normal(rng));
    return t;
}

std::string describe(const char* what, std::size_t i, double got, double want, double tol) {
    char numbers[160];
    std::snprintf(numbers, sizeof numbers, ": got %.9g, want %.9g (tolerance %.3g)", got, want, tol);
    return std::string(what) + " i=" + std::to_string(i) + numbers;
}

// Calls f(element index, pair index i, table index, first) for every element of a rotated head: `first` for
// the pair's first element (index e, partner e + half), otherwise the second (partner e − half).
template <typename F>
void for_each_rotated(const Layout& l, F&& f) {
    for (std::size_t r = 0; r < l.rows(); ++r) {
        for (std::size_t h = 0; h < l.rotated; ++h) {
            for (std::size_t i = 0; i < l.half(); ++i) {
                const std::size_t e = r * l.cols() + h * l.head_dim + i;
                const std::size_t t = (r % l.seq) * l.half() + i;
                f(e, t, true);
                f(e + l.half(), t, false);
            }
        }
    }
}

}  // namespace

class TestHostRotary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Each turned element against the rotation in double of the stored inputs: within the header's bound in
    // float32, plus half a bfloat16 ulp in bfloat16; the copied heads bit for bit; one launch.
    void matchesDouble_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<bool>("inverse");
        for (const bool inverse : {false, true}) {
            QTest::newRow(inverse ? "float32 inverse" : "float32") << int(DType::Float32) << inverse;
            QTest::newRow(inverse ? "bfloat16 inverse" : "bfloat16") << int(DType::BFloat16) << inverse;
        }
    }

    void matchesDouble() {
        QFETCH(int, dtype);
        QFETCH(bool, inverse);
        const auto type = static_cast<DType>(dtype);
        std::mt19937 rng(51);
        double worst = 0.0;
        for (const Layout& l : kLayouts) {
            const Buffer x = random_tensor(type, l.count(), rng);
            Buffer y(type, l.count());
            const Tables t = tables(l.seq + 2, l.head_dim);
            QCOMPARE(launches_of([&] { host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, inverse), ref(y, l), {}); }),
                     std::uint64_t{1});
            const double sign = inverse ? -1.0 : 1.0;
            for_each_rotated(l, [&](std::size_t e, std::size_t ti, bool first) {
                const double self = x.at(e);
                const double partner = x.at(first ? e + l.half() : e - l.half());
                const double c = t.cos[ti];
                const double s = sign * t.sin[ti] * (first ? -1.0 : 1.0);
                const double want = self * c + partner * s;
                double tol = std::ldexp(std::fabs(self * c) + 2.0 * std::fabs(partner * s), -23) + std::ldexp(1.0, -148);
                if (type == DType::BFloat16)
                    tol += std::ldexp(std::fabs(want) + tol, -8);  // half a bfloat16 ulp of the float32 result
                worst = std::max(worst, std::fabs(y.at(e) - want) / tol);
                QVERIFY2(std::fabs(y.at(e) - want) <= tol, describe("rotary", e, y.at(e), want, tol).c_str());
            });
            for (std::size_t r = 0; r < l.rows(); ++r) {
                for (std::size_t e = r * l.cols() + l.rotated * l.head_dim; e < (r + 1) * l.cols(); ++e) {
                    QCOMPARE(y.bits(e), x.bits(e));
                }
            }
        }
        qInfo("rotary: worst error %.3f of the stated bound", worst);
    }

    // bfloat16: each turned element is the float32 result (the same operations on the stored inputs) rounded to
    // nearest even, ties included.
    void bfloat16StoreRoundsTheFloat32Result() {
        const Layout l{2, 6, 3, 2, 24};
        std::mt19937 rng(53);
        const Buffer x = random_tensor(DType::BFloat16, l.count(), rng);
        Buffer y(DType::BFloat16, l.count());
        const Tables t = tables(l.seq, l.head_dim);
        host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(y, l), {});
        for_each_rotated(l, [&](std::size_t e, std::size_t ti, bool first) {
            const float self = x.at(e);
            const float partner = x.at(first ? e + l.half() : e - l.half());
            const float s = t.sin[ti];
            const float f = first ? std::fma(self, t.cos[ti], -(partner * s)) : std::fma(self, t.cos[ti], partner * s);
            QCOMPARE(y.bits(e), std::uint32_t{detail::float_to_bf16(f)});
        });
    }

    // The inverse turns back: forward then inverse is x within two roundings of each, in float32.
    void inverseUndoesForward() {
        std::mt19937 rng(57);
        for (const Layout& l : kLayouts) {
            const Buffer x = random_tensor(DType::Float32, l.count(), rng);
            Buffer y(DType::Float32, l.count()), back(DType::Float32, l.count());
            const Tables t = tables(l.seq, l.head_dim);
            host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(y, l), {});
            host::rotary(cref(y, l), cos_ref(t), sin_ref(t), heads_of(l, true), ref(back, l), {});
            for_each_rotated(l, [&](std::size_t e, std::size_t, bool first) {
                const double pair = std::fabs(x.at(e)) + std::fabs(x.at(first ? e + l.half() : e - l.half()));
                const double tol = std::ldexp(pair, -20) + std::ldexp(1.0, -140);
                QVERIFY2(std::fabs(back.at(e) - x.at(e)) <= tol,
                         describe("inverse of forward", e, back.at(e), x.at(e), tol).c_str());
            });
        }
    }

    // Copied heads are moved as stored: NaN payloads, −0 and infinities keep their bits (no float round trip).
    void copiedHeadsKeepTheirBits() {
        const Layout l{1, 2, 3, 1, 4};
        for (const DType type : {DType::Float32, DType::BFloat16}) {
            Buffer x(type, l.count()), y(type, l.count());
            const std::uint32_t specials32[] = {0x7fc01234u, 0xffa00001u, 0x80000000u, 0x7f800000u, 0x00000001u, 0x3f800000u};
            const std::uint16_t specials16[] = {0x7fc1u, 0xff81u, 0x8000u, 0x7f80u, 0x0001u, 0x3f80u};
            for (std::size_t e = 0; e < l.count(); ++e) {
                if (type == DType::Float32) {
                    x.floats()[e] = detail::bits_float(specials32[e % 6]);
                } else {
                    static_cast<std::uint16_t*>(x.data())[e] = specials16[e % 6];
                }
            }
            const Tables t = tables(l.seq, l.head_dim);
            host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(y, l), {});
            for (std::size_t r = 0; r < l.rows(); ++r) {
                for (std::size_t e = r * l.cols() + l.head_dim; e < (r + 1) * l.cols(); ++e) QCOMPARE(y.bits(e), x.bits(e));
            }
        }
    }

    // Rows of the tables past seq are not read: NaN there changes nothing.
    void tableRowsPastSeqAreNotRead() {
        const Layout l{3, 4, 2, 2, 8};
        std::mt19937 rng(59);
        const Buffer x = random_tensor(DType::Float32, l.count(), rng);
        Buffer y(DType::Float32, l.count()), poisoned_y(DType::Float32, l.count());
        const Tables t = tables(l.seq, l.head_dim);
        Tables longer = tables(l.seq + 5, l.head_dim);
        for (std::size_t i = l.seq * longer.half; i < longer.cos.size(); ++i) {
            longer.cos[i] = std::numeric_limits<float>::quiet_NaN();
            longer.sin[i] = std::numeric_limits<float>::quiet_NaN();
        }
        host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(y, l), {});
        host::rotary(cref(x, l), cos_ref(longer), sin_ref(longer), heads_of(l, false), ref(poisoned_y, l), {});
        for (std::size_t e = 0; e < l.count(); ++e) QCOMPARE(poisoned_y.bits(e), y.bits(e));
    }

    void noRowsLaunchesNothing() {
        const Layout l{0, 4, 2, 2, 8};
        const Tables t = tables(4, 8);
        Buffer x(DType::Float32, 1), y(DType::Float32, 1);
        QCOMPARE(launches_of([&] { host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(y, l), {}); }),
                 std::uint64_t{0});
    }

    // The amax hand-off (rotary_current_scale): rotary, then abs_max_current_scale of y, bit for bit (y, scale, scale_inv,
    // staging), in one launch; every layout (turned and copied heads), forward and inverse, both dtypes, a NaN in a copied
    // head; no rows: the scale of amax 0. Its refusals: a target float in x or y, no y.
    void currentScaleIsTheRotationThenItsScale() {
        std::mt19937 rng(61);
        const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
        for (const DType type : {DType::Float32, DType::BFloat16}) {
            for (const Layout& l : kLayouts) {
                for (const bool inverse : {false, true}) {
                    for (const bool nan : {false, true}) {
                        if (nan && l.rotated == l.heads) continue;
                        Buffer x = random_tensor(type, l.count(), rng);
                        if (nan) x.set(l.cols() - 1, std::numeric_limits<float>::quiet_NaN());  // the first row's last head: copied
                        Buffer y_ref(type, l.count()), y(type, l.count());
                        const Tables t = tables(l.seq, l.head_dim);
                        host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, inverse), ref(y_ref, l), {});
                        float want[3] = {0.0f, 0.0f, 0.5f}, got[3] = {0.0f, 0.0f, 0.5f};
                        host::abs_max_current_scale(cref(y_ref, l), 57344.0f, scalar(&want[0]), scalar(&want[1]), scalar(&want[2]), {});
                        tewb::kernels::CurrentScaleTarget target;
                        target.numerator = 57344.0f;
                        target.scale = scalar(&got[0]);
                        target.scale_inv = scalar(&got[1]);
                        target.staging = scalar(&got[2]);
                        QCOMPARE(launches_of([&] {
                                     host::rotary_current_scale(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, inverse), ref(y, l), target, {});
                                 }),
                                 std::uint64_t{1});
                        for (std::size_t e = 0; e < l.count(); ++e) QCOMPARE(y.bits(e), y_ref.bits(e));
                        for (int k = 0; k < 3; ++k) QCOMPARE(detail::float_bits(got[k]), detail::float_bits(want[k]));
                        if (nan) QCOMPARE(got[0], 1.0f);
                    }
                }
            }
        }
        const Layout none{0, 4, 2, 2, 8};
        const Tables t = tables(4, 8);
        Buffer x(DType::Float32, 1), y(DType::Float32, 1);
        float got[3] = {0.0f, 0.0f, 2.0f};
        tewb::kernels::CurrentScaleTarget target;
        target.numerator = 448.0f;
        target.scale = scalar(&got[0]);
        target.scale_inv = scalar(&got[1]);
        target.staging = scalar(&got[2]);
        QCOMPARE(launches_of([&] { host::rotary_current_scale(cref(x, none), cos_ref(t), sin_ref(t), heads_of(none, false), ref(y, none), target, {}); }),
                 std::uint64_t{1});
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(got[2], 2.0f);
        const Layout l{2, 4, 3, 2, 8};
        Buffer xs(DType::Float32, l.count()), ys(DType::Float32, l.count());
        const std::string entry = "tewb::kernels::host::rotary_current_scale: ";
        const auto with_scale = [&](float* p) {
            tewb::kernels::CurrentScaleTarget c = target;
            c.scale = scalar(p);
            return c;
        };
        expect_refusal([&] { host::rotary_current_scale(cref(xs, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(ys, l), with_scale(ys.floats() + 3), {}); },
                       {entry, "scale lies in y"});
        expect_refusal([&] { host::rotary_current_scale(cref(xs, l), cos_ref(t), sin_ref(t), heads_of(l, false), ref(ys, l), with_scale(xs.floats() + 9), {}); },
                       {entry, "scale lies in x"});
        expect_refusal([&] {
                           host::rotary_current_scale(cref(xs, l), cos_ref(t), sin_ref(t), heads_of(l, false), {nullptr, DType::Float32, 8, 24},
                                                      target, {});
                       },
                       {entry, "y is null"});
    }

    // rotary_quantize (delayed scaling's FP8 form): y bit for bit rotary's, and its FP8 bytes, transposed copy and amax
    // cast_transpose_to_fp8's of y, over every layout, forward and inverse, both dtypes and FP8 formats; one launch where
    // the tiled kernel takes the call (rows a multiple of 8, half a multiple of the 16-byte vector, aligned buffers), two
    // elsewhere. Its refusals: no FP8 output, no transposed copy, no scale, the bytes over y or x, the scale in the bytes.
    void quantizeIsTheRotationThenItsCast() {
        std::mt19937 rng(67);
        for (const DType type : {DType::Float32, DType::BFloat16}) {
            for (const Layout& l : kLayouts) {
                for (const bool inverse : {false, true}) {
                    const DType fp8_type = inverse ? DType::Float8E5M2 : DType::Float8E4M3;
                    Buffer x = random_tensor(type, l.count(), rng);
                    Buffer y_ref(type, l.count()), y(type, l.count());
                    const Tables t = tables(l.seq, l.head_dim);
                    host::rotary(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, inverse), ref(y_ref, l), {});
                    std::vector<std::uint8_t> q_ref(l.count()), qt_ref(l.count()), q(l.count(), 0xa5), qt(l.count(), 0xa5);
                    float scale = 3.5f, amax_ref = 0.25f, amax = 0.25f;
                    const auto fp8_of = [&](std::vector<std::uint8_t>& bytes, std::vector<std::uint8_t>& transposed, float* a) {
                        Tensor f = input(bytes.data(), fp8_type, l.rows(), l.cols());
                        f.transposed = transposed.data();
                        f.scale = &scale;
                        f.amax = a;
                        return f;
                    };
                    host::cast_transpose_to_fp8(cref(y_ref, l), fp8_of(q_ref, qt_ref, &amax_ref), {});
                    const std::size_t width = 16 / tewb::kernels::element_size(type);
                    const bool one_launch = l.rows() % 8 == 0 && l.half() % width == 0;
                    QCOMPARE(launches_of([&] {
                                 host::rotary_quantize(cref(x, l), cos_ref(t), sin_ref(t), heads_of(l, inverse), ref(y, l),
                                                       fp8_of(q, qt, &amax), {});
                             }),
                             std::uint64_t{one_launch ? 1u : 2u});
                    for (std::size_t e = 0; e < l.count(); ++e) QCOMPARE(y.bits(e), y_ref.bits(e));
                    QVERIFY(q == q_ref);
                    QVERIFY(qt == qt_ref);
                    QCOMPARE(detail::float_bits(amax), detail::float_bits(amax_ref));
                }
            }
        }
        // The seed llama's qkv gradient ([3072, 1280] bfloat16: 12 + 4 rotated heads, 4 copied, head_dim 64): one launch.
        const Layout seed{32, 96, 20, 16, 64};
        const Tables t = tables(seed.seq, seed.head_dim);
        Buffer x(DType::BFloat16, seed.count()), y(DType::BFloat16, seed.count());
        std::vector<std::uint8_t> q(seed.count()), qt(seed.count());
        float scale = 1.0f;
        Tensor fp8 = input(q.data(), DType::Float8E5M2, seed.rows(), seed.cols());
        fp8.transposed = qt.data();
        fp8.scale = &scale;
        QCOMPARE(launches_of([&] { host::rotary_quantize(cref(x, seed), cos_ref(t), sin_ref(t), heads_of(seed, true), ref(y, seed), fp8, {}); }),
                 std::uint64_t{1});
        // Misaligned y: the same values in two launches.
        Buffer y_shifted(DType::BFloat16, seed.count(), 1);
        QCOMPARE(launches_of([&] {
                     host::rotary_quantize(cref(x, seed), cos_ref(t), sin_ref(t), heads_of(seed, true), ref(y_shifted, seed), fp8, {});
                 }),
                 std::uint64_t{2});

        const Layout l{2, 4, 3, 2, 8};
        const Tables small = tables(l.seq, l.head_dim);
        Buffer xs(DType::Float32, l.count()), ys(DType::Float32, l.count());
        std::vector<std::uint8_t> bytes(l.count()), transposed(l.count());
        const auto good = [&] {
            Tensor f = input(bytes.data(), DType::Float8E4M3, l.rows(), l.cols());
            f.transposed = transposed.data();
            f.scale = &scale;
            return f;
        };
        const std::string entry = "tewb::kernels::host::rotary_quantize: ";
        const auto call = [&](const Tensor& f) {
            return [&, f] { host::rotary_quantize(cref(xs, l), cos_ref(small), sin_ref(small), heads_of(l, true), ref(ys, l), f, {}); };
        };
        Tensor f = good();
        f.data = nullptr;
        expect_refusal(call(f), {entry, "fp8 is null"});
        f = good();
        f.transposed = nullptr;
        expect_refusal(call(f), {entry, "fp8.transposed is null"});
        f = good();
        f.scale = nullptr;
        expect_refusal(call(f), {entry, "fp8.scale is a null pointer"});
        f = good();
        f.dtype = DType::BFloat16;
        expect_refusal(call(f), {entry, "fp8 has dtype bfloat16", "E4M3, E5M2"});
        f = good();
        f.rows = l.rows() - 1;
        expect_refusal(call(f), {entry, "fp8 is [7, 24]"});
        f = good();
        f.data = ys.data();
        expect_refusal(call(f), {entry, "fp8 and y overlap"});
        f = good();
        f.transposed = xs.data();
        expect_refusal(call(f), {entry, "fp8.transposed and x overlap"});
        f = good();
        f.transposed = bytes.data() + 8;
        expect_refusal(call(f), {entry, "fp8 and fp8.transposed overlap"});
        f = good();
        f.scale = reinterpret_cast<float*>(transposed.data() + 4);
        expect_refusal(call(f), {entry, "fp8.scale lies in fp8.transposed"});
        f = good();
        f.amax = ys.floats() + 2;
        expect_refusal(call(f), {entry, "fp8.amax lies in y"});
    }

    void refusesBadArguments() {
        const Layout l{2, 4, 3, 2, 8};
        const Tables t = tables(4, 8);
        Buffer x(DType::Float32, l.count()), y(DType::Float32, l.count());
        const auto call = [&](Tensor xr, Tensor c, Tensor s, RotaryHeads h, Tensor yr) {
            return [=] { host::rotary(xr, c, s, h, yr, {}); };
        };
        const std::string entry = "tewb::kernels::host::rotary: ";
        const RotaryHeads h = heads_of(l, false);
        expect_refusal(call({x.data(), DType::Float32, 8, 21}, cos_ref(t), sin_ref(t), h, {y.data(), DType::Float32, 8, 21}),
                       {entry, "head_dim = 7", "odd"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), {4, 3, 4, false}, ref(y, l)),
                       {entry, "rotated_heads = 4; allowed: 0 to heads = 3"});
        expect_refusal(call(cref(x, l), input(t.cos.data(), DType::Float32, 3, 4), sin_ref(t), h, ref(y, l)),
                       {entry, "cos is [3, 4]; allowed: [at least seq = 4, head_dim / 2 = 4]"});
        expect_refusal(call(cref(x, l), cos_ref(t), input(t.sin.data(), DType::BFloat16, 4, 4), h, ref(y, l)),
                       {entry, "sin has dtype bfloat16; allowed: float32"});
        expect_refusal(call({x.data(), DType::Float32, 7, 24}, cos_ref(t), sin_ref(t), h, {y.data(), DType::Float32, 7, 24}),
                       {entry, "7 rows are not whole sequences of seq = 4"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), {4, 5, 2, false}, ref(y, l)),
                       {entry, "24 columns are not heads = 5 heads"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), h, {y.data(), DType::BFloat16, 8, 24}),
                       {entry, "y has dtype bfloat16; allowed: float32, x's"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), h, {y.data(), DType::Float32, 8, 12}),
                       {entry, "y is [8, 12]; allowed: [8, 24]"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), h, {x.data(), DType::Float32, 8, 24}), {entry, "y overlaps x"});
        auto* shifted = static_cast<float*>(x.data()) + 5;
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), h, {shifted, DType::Float32, 8, 24}), {entry, "y overlaps x"});
        expect_refusal(call({nullptr, DType::Float32, 8, 24}, cos_ref(t), sin_ref(t), h, ref(y, l)),
                       {entry, "x is a null pointer"});
        expect_refusal(call(cref(x, l), {nullptr, DType::Float32, 4, 4}, sin_ref(t), h, ref(y, l)),
                       {entry, "cos is a null pointer"});
        expect_refusal(call({x.data(), DType::Float16, 8, 24}, cos_ref(t), sin_ref(t), h, {y.data(), DType::Float16, 8, 24}),
                       {entry, "x has dtype float16; allowed: float32, bfloat16"});
        expect_refusal(call(cref(x, l), cos_ref(t), sin_ref(t), {0, 3, 2, false}, ref(y, l)), {entry, "seq = 0"});
    }
};

QTEST_GUILESS_MAIN(TestHostRotary)
#include "tst_host_rotary.moc"
