// The microscaling casts and the Hadamard transform (tewb_kernels/mx.h) on the host, bit for bit against references
// written here from the formats' definitions: the OCP MX v1.0 shared-scale rule for MXFP8, NVIDIA's NVFP4 recipe
// (the tensor scale, the E4M3 block scale, E2M1 values), cuBLASLt's scale layout built tile by tile, Philox4x32-10's
// published known answers, and the transform summed as its header states. NaN, infinities, zero blocks, ragged
// shapes, both copies, 16 × 16 tiles, stochastic rounding's reproducibility and bias, and the argument checks.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemm_calls.h"
#include "kernel_tensors.h"
#include "mx/mx_math.h"
#include "common/host_numbers.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "tewb_kernels/mx.h"

using namespace tewb::kernels;
using tewb::test::tensor;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::uint32_t bits(float v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

// The finite values of an FP8 format by code, from its definition (sign, exponent, mantissa, bias; E4M3's 0x7f is NaN).
double fp8_code_value(int code, bool e4m3) {
    const int mantissa_bits = e4m3 ? 3 : 2;
    const int bias = e4m3 ? 7 : 15;
    const int exponent = (code & 0x7f) >> mantissa_bits;
    const int mantissa = code & ((1 << mantissa_bits) - 1);
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, 1 - bias - mantissa_bits)
                                           : std::ldexp(1.0 + std::ldexp(mantissa, -mantissa_bits), exponent - bias);
    return (code & 0x80) != 0 ? -magnitude : magnitude;
}

// Round to nearest (ties to the even code), saturating at the largest finite value, NaN to 0x7f, sign kept.
std::uint8_t fp8_reference(double v, bool e4m3) {
    if (std::isnan(v)) return 0x7f;
    const int largest = e4m3 ? 0x7e : 0x7b;
    const double a = std::fabs(v);
    const std::uint8_t sign = std::signbit(v) ? 0x80 : 0;
    if (a >= fp8_code_value(largest, e4m3)) return static_cast<std::uint8_t>(largest | sign);
    int best = 0;
    for (int code = 1; code <= largest; ++code) {
        const double d = std::fabs(fp8_code_value(code, e4m3) - a);
        const double b = std::fabs(fp8_code_value(best, e4m3) - a);
        if (d < b || (d == b && code % 2 == 0)) best = code;
    }
    return static_cast<std::uint8_t>(best | sign);
}

// E2M1 by the same rule over its eight magnitudes; NaN is +6.
std::uint8_t e2m1_reference(double v) {
    static const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    if (std::isnan(v)) return 7;
    const double a = std::fabs(v);
    if (a >= 6) return static_cast<std::uint8_t>(7 | (std::signbit(v) ? 8 : 0));
    int best = 0;
    for (int code = 1; code < 8; ++code) {
        const double d = std::fabs(magnitudes[code] - a);
        const double b = std::fabs(magnitudes[best] - a);
        if (d < b || (d == b && code % 2 == 0)) best = code;
    }
    return static_cast<std::uint8_t>(best | (std::signbit(v) ? 8 : 0));
}

// cuBLASLt's layout, built the way its documentation draws it: 128 × 4 tiles one after another along the blocks, then
// down the rows; inside a tile 32 lines of 16 bytes, line i holding rows i, i + 32, i + 64, i + 96 and 4 blocks each.
std::vector<std::size_t> layout_reference(std::size_t rows, std::size_t scale_cols) {
    std::vector<std::size_t> offset(mx_scale_rows(rows) * scale_cols);
    std::size_t at = 0;
    for (std::size_t tile_row = 0; tile_row < mx_scale_rows(rows) / 128; ++tile_row) {
        for (std::size_t tile_col = 0; tile_col < scale_cols / 4; ++tile_col) {
            for (std::size_t line = 0; line < 32; ++line) {
                for (std::size_t quarter = 0; quarter < 4; ++quarter) {
                    for (std::size_t block = 0; block < 4; ++block) {
                        const std::size_t row = tile_row * 128 + quarter * 32 + line;
                        offset[row * scale_cols + tile_col * 4 + block] = at++;
                    }
                }
            }
        }
    }
    return offset;
}

struct Input {
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::vector<float> values;
    float at(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
};

Input random_input(std::size_t rows, std::size_t cols, std::uint32_t seed, float spread = 8.0f) {
    Input in{rows, cols, std::vector<float>(rows * cols)};
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-static_cast<int>(spread), static_cast<int>(spread));
    for (float& v : in.values) v = std::ldexp(unit(rng), exponent(rng));
    return in;
}

Input transposed(const Input& in) {
    Input t{in.cols, in.rows, std::vector<float>(in.values.size())};
    for (std::size_t r = 0; r < in.rows; ++r) {
        for (std::size_t c = 0; c < in.cols; ++c) t.values[c * in.rows + r] = in.at(r, c);
    }
    return t;
}

struct MxResult {
    std::vector<std::uint8_t> data;
    std::vector<std::uint8_t> scales;  // in the kernels' layout
};

// MXFP8 from the OCP rule, scales in row-major [row][block] order (the test maps them through the layout).
MxResult mxfp8_reference(const Input& in, bool e4m3) {
    const int emax = e4m3 ? 8 : 15;
    const std::size_t blocks = (in.cols + 31) / 32;
    MxResult r{std::vector<std::uint8_t>(in.rows * in.cols), std::vector<std::uint8_t>(in.rows * blocks)};
    for (std::size_t row = 0; row < in.rows; ++row) {
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t end = std::min(in.cols, b * 32 + 32);
            double m = 0;
            bool special = false;
            for (std::size_t c = b * 32; c < end; ++c) {
                const double v = in.at(row, c);
                if (std::isnan(v) || std::isinf(v)) special = true;
                else m = std::max(m, std::fabs(v));
            }
            int code = 0;
            if (special) {
                code = 0xff;
            } else if (m > 0) {
                int e = 0;
                std::frexp(m, &e);  // m = f · 2^e, f in [0.5, 1): floor(log2 m) = e - 1
                code = std::clamp(e - 1 - emax, -127, 127) + 127;
            }
            r.scales[row * blocks + b] = static_cast<std::uint8_t>(code);
            for (std::size_t c = b * 32; c < end; ++c) {
                const double scaled = code == 0xff ? std::nan("") : std::ldexp(static_cast<double>(in.at(row, c)), 127 - code);
                r.data[row * in.cols + c] = fp8_reference(scaled, e4m3);
            }
        }
    }
    return r;
}

struct Nvfp4Reference {
    std::vector<std::uint8_t> data;  // packed
    std::vector<std::uint8_t> scales;  // row-major [row][block]
    float s_dec = 0;
};

// NVFP4 as NVIDIA's recipe states it, in float32 steps; `tiles` for 16 × 16 blocks; `random(index)` for stochastic
// rounding (empty: nearest).
template <typename Random>
Nvfp4Reference nvfp4_reference(const Input& in, float amax, bool tiles, Random&& random, bool stochastic) {
    float s_enc = 2688.0f / amax;
    s_enc = std::isnan(s_enc) ? std::numeric_limits<float>::max() : std::min(s_enc, std::numeric_limits<float>::max());
    if (amax == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
    const float s_dec = 1.0f / s_enc;
    const std::size_t blocks = (in.cols + 15) / 16;
    const std::size_t row_bytes = (in.cols + 1) / 2;
    Nvfp4Reference r{std::vector<std::uint8_t>(in.rows * row_bytes), std::vector<std::uint8_t>(in.rows * blocks), s_dec};
    for (std::size_t row = 0; row < in.rows; ++row) {
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t end = std::min(in.cols, b * 16 + 16);
            const std::size_t first = tiles ? row / 16 * 16 : row;
            const std::size_t last = tiles ? std::min(in.rows, first + 16) : row + 1;
            float block_amax = 0;
            bool nan = false;
            for (std::size_t rr = first; rr < last; ++rr) {
                for (std::size_t c = b * 16; c < end; ++c) {
                    nan = nan || std::isnan(in.at(rr, c));
                    block_amax = std::max(block_amax, std::fabs(in.at(rr, c)));
                }
            }
            if (nan) block_amax = kNan;
            const float per_value = s_enc * (1.0f / 6.0f);
            const std::uint8_t sf = fp8_reference(static_cast<double>(block_amax * per_value), true);
            const auto sf_value = static_cast<float>(sf == 0x7f ? std::nan("") : fp8_code_value(sf, true));
            float factor = 1.0f / (sf_value * s_dec);
            if (!std::isnan(factor)) factor = std::min(factor, std::numeric_limits<float>::max());
            r.scales[row * blocks + b] = sf;
            for (std::size_t c = b * 16; c < end; ++c) {
                const float scaled = in.at(row, c) * factor;
                std::uint8_t code = e2m1_reference(scaled);
                if (stochastic && !std::isnan(scaled) && std::fabs(scaled) < 6.0f) {
                    static const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
                    const double a = std::fabs(scaled);
                    int lo = 0;
                    while (lo < 6 && magnitudes[lo + 1] <= a) ++lo;
                    const double p = (a - magnitudes[lo]) / (magnitudes[lo + 1] - magnitudes[lo]);
                    const double u = std::ldexp(static_cast<double>(random(row * in.cols + c) >> 8), -24);
                    code = static_cast<std::uint8_t>((u < p ? lo + 1 : lo) | (std::signbit(scaled) ? 8 : 0));
                }
                std::uint8_t& byte = r.data[row * row_bytes + c / 2];
                byte = static_cast<std::uint8_t>(c % 2 == 0 ? (byte & 0xf0) | code : (byte & 0x0f) | (code << 4));
            }
        }
    }
    return r;
}

float abs_max_of(const Input& in) {
    float m = 0;
    for (float v : in.values) {
        if (std::isnan(v)) return kNan;
        m = std::max(m, std::fabs(v));
    }
    return m;
}

struct MxBuffers {
    std::vector<std::uint8_t> data, scales, data_t, scales_t;
};

// Compares the kernel's scales (layout) with the reference's row-major ones, and every padding byte with 0.
bool scales_match(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, std::size_t rows,
                  std::size_t blocks, std::size_t scale_cols, const char* what) {
    for (std::size_t row = 0; row < mx_scale_rows(rows); ++row) {
        for (std::size_t b = 0; b < scale_cols; ++b) {
            const std::uint8_t expected = row < rows && b < blocks ? want[row * blocks + b] : 0;
            const std::uint8_t actual = got[mx_scale_offset(row, b, scale_cols)];
            if (actual != expected) {
                qWarning("%s scale (%zu, %zu): got 0x%02x, want 0x%02x", what, row, b, actual, expected);
                return false;
            }
        }
    }
    return true;
}

bool bytes_match(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, const char* what) {
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (got[i] != want[i]) {
            qWarning("%s byte %zu: got 0x%02x, want 0x%02x", what, i, got[i], want[i]);
            return false;
        }
    }
    return got.size() == want.size();
}

MxBuffers run_mxfp8(const Input& in, Fp8Type type, bool with_transpose, float* amax = nullptr) {
    MxBuffers b;
    b.data.assign(in.rows * in.cols, 0xAA);
    b.scales.assign(mx_scale_rows(in.rows) * mx_scale_cols(in.cols, 32), 0xAA);
    Tensor out = tensor(b.data.data(), fp8_dtype(type), in.rows, in.cols);
    out.amax = amax;
    const Tensor scales = tensor(b.scales.data(), DType::Float8E8M0, mx_scale_rows(in.rows), mx_scale_cols(in.cols, 32));
    Tensor out_t, scales_t;
    if (with_transpose) {
        b.data_t.assign(in.rows * in.cols, 0xAA);
        b.scales_t.assign(mx_scale_rows(in.cols) * mx_scale_cols(in.rows, 32), 0xAA);
        out_t = tensor(b.data_t.data(), fp8_dtype(type), in.cols, in.rows);
        scales_t = tensor(b.scales_t.data(), DType::Float8E8M0, mx_scale_rows(in.cols), mx_scale_cols(in.rows, 32));
    }
    host::mxfp8_cast(tensor(in.values.data(), DType::Float32, in.rows, in.cols), out, scales, out_t, scales_t, {});
    return b;
}

struct Nvfp4Run {
    MxBuffers buffers;
    float s_dec = 0;
};

Nvfp4Run run_nvfp4(const Input& in, const Nvfp4Cast& options, bool with_transpose, float amax) {
    Nvfp4Run run;
    MxBuffers& b = run.buffers;
    b.data.assign(in.rows * ((in.cols + 1) / 2), 0xAA);
    b.scales.assign(mx_scale_rows(in.rows) * mx_scale_cols(in.cols, 16), 0xAA);
    Tensor x = tensor(in.values.data(), DType::Float32, in.rows, in.cols);
    x.amax = &amax;
    Tensor out = tensor(b.data.data(), DType::Float4E2M1x2, in.rows, (in.cols + 1) / 2);
    out.scale_inv = &run.s_dec;
    const Tensor scales = tensor(b.scales.data(), DType::Float8E4M3, mx_scale_rows(in.rows), mx_scale_cols(in.cols, 16));
    Tensor out_t, scales_t;
    if (with_transpose) {
        b.data_t.assign(in.cols * ((in.rows + 1) / 2), 0xAA);
        b.scales_t.assign(mx_scale_rows(in.cols) * mx_scale_cols(in.rows, 16), 0xAA);
        out_t = tensor(b.data_t.data(), DType::Float4E2M1x2, in.cols, (in.rows + 1) / 2);
        scales_t = tensor(b.scales_t.data(), DType::Float8E4M3, mx_scale_rows(in.cols), mx_scale_cols(in.rows, 16));
    }
    host::nvfp4_cast(x, out, scales, out_t, scales_t, options, {});
    return run;
}

template <typename F>
QString error_of(F&& f) {
    try {
        f();
    } catch (const KernelError& e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("(no error)");
}

}  // namespace

class TstHostMx : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void scaleLayoutIsCublasLts() {
        for (const auto& [rows, scale_cols] : {std::pair<std::size_t, std::size_t>{1, 4}, {128, 4}, {130, 8}, {300, 12}}) {
            const std::vector<std::size_t> want = layout_reference(rows, scale_cols);
            for (std::size_t row = 0; row < mx_scale_rows(rows); ++row) {
                for (std::size_t b = 0; b < scale_cols; ++b) QCOMPARE(mx_scale_offset(row, b, scale_cols), want[row * scale_cols + b]);
            }
        }
        QCOMPARE(mx_scale_rows(0), std::size_t{0});
        QCOMPARE(mx_scale_rows(129), std::size_t{256});
        QCOMPARE(mx_scale_cols(33, 32), std::size_t{4});
        QCOMPARE(mx_scale_cols(16 * 5, 16), std::size_t{8});
    }

    void mxfp8MatchesTheOcpRule_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<bool>("e4m3");
        QTest::newRow("64x128 E4M3") << 64 << 128 << true;
        QTest::newRow("ragged 7x45 E4M3") << 7 << 45 << true;
        QTest::newRow("ragged 130x33 E5M2") << 130 << 33 << false;
        QTest::newRow("one value") << 1 << 1 << true;
    }
    void mxfp8MatchesTheOcpRule() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(bool, e4m3);
        Input in = random_input(rows, cols, 11u + rows * 7u + cols, 30.0f);
        // Special blocks: a NaN, an infinity, a block of zeros, a subnormal-only block, a largest value above 448 · 2^k.
        if (in.values.size() > 40) {
            in.values[3] = kNan;
            if (cols >= 64) {
                for (int c = 32; c < 64; ++c) in.values[c] = 0.0f;
            }
            in.values[in.values.size() - 1] = -kInf;
        }
        if (rows > 2 && cols > 1) {
            for (int c = 0; c < cols; ++c) in.values[2 * cols + c] = std::ldexp(0.75f, -140) * (c % 3 == 0 ? -1.0f : 1.0f);
            in.values[cols] = 500.0f;  // saturates: 500 / 2^(8 - 8) lies above 448
        }
        const Fp8Type type = e4m3 ? Fp8Type::E4M3 : Fp8Type::E5M2;
        const MxResult want = mxfp8_reference(in, e4m3);
        const MxResult want_t = mxfp8_reference(transposed(in), e4m3);
        const std::uint64_t launches = launch_count();
        const MxBuffers got = run_mxfp8(in, type, true);
        QCOMPARE(launch_count(), launches + 2);
        QVERIFY(bytes_match(got.data, want.data, "data"));
        QVERIFY(scales_match(got.scales, want.scales, rows, (cols + 31) / 32, mx_scale_cols(cols, 32), "rowwise"));
        QVERIFY(bytes_match(got.data_t, want_t.data, "transposed data"));
        QVERIFY(scales_match(got.scales_t, want_t.scales, cols, (rows + 31) / 32, mx_scale_cols(rows, 32), "columnwise"));
    }

    void mxfp8SpecialBlocks() {
        Input in{1, 96, std::vector<float>(96, 1.0f)};
        for (int c = 32; c < 64; ++c) in.values[c] = 0.0f;
        in.values[64] = kInf;
        const MxBuffers got = run_mxfp8(in, Fp8Type::E4M3, false);
        QCOMPARE(int(got.scales[mx_scale_offset(0, 0, 4)]), 127 - 8);  // 1 = 2^0: X = 2^-8, values 256
        QCOMPARE(int(got.data[0]), int(fp8_reference(256.0, true)));
        QCOMPARE(int(got.scales[mx_scale_offset(0, 1, 4)]), 0);  // zeros: 2^-127, values 0
        QCOMPARE(int(got.data[40]), 0);
        QCOMPARE(int(got.scales[mx_scale_offset(0, 2, 4)]), 0xff);  // an infinity: NaN block
        QCOMPARE(int(got.data[70]), 0x7f);
        QVERIFY(std::isnan(detail::mx::e8m0_value(0xff)));
        QCOMPARE(detail::mx::e8m0_value(127), 1.0f);
    }

    void mxfp8AmaxCombines() {
        const Input in = random_input(4, 64, 3u);
        float amax = 0.5f;
        run_mxfp8(in, Fp8Type::E4M3, false, &amax);
        QCOMPARE(amax, std::max(0.5f, abs_max_of(in)));
        Input with_nan = in;
        with_nan.values[5] = kNan;
        run_mxfp8(with_nan, Fp8Type::E4M3, false, &amax);
        QVERIFY(std::isnan(amax));
    }

    void nvfp4MatchesTheRecipe_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<bool>("tiles");
        QTest::newRow("64x128") << 64 << 128 << false;
        QTest::newRow("ragged 19x45") << 19 << 45 << false;
        QTest::newRow("16x16 tiles 48x64") << 48 << 64 << true;
        QTest::newRow("16x16 tiles ragged 21x37") << 21 << 37 << true;
    }
    void nvfp4MatchesTheRecipe() {
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(bool, tiles);
        Input in = random_input(rows, cols, 5u + rows + cols * 3u, 12.0f);
        for (int c = 0; c < std::min(cols, 16); ++c) in.values[c] = 0.0f;  // a zero block (sf 0: every value 0)
        in.values[in.values.size() / 2] = -kInf;
        const float amax = abs_max_of(in);
        Nvfp4Cast options;
        options.tiles_16x16 = tiles;
        const auto none = [](std::size_t) { return 0u; };
        const Nvfp4Reference want = nvfp4_reference(in, amax, tiles, none, false);
        const Nvfp4Reference want_t = nvfp4_reference(transposed(in), amax, tiles, none, false);
        const std::uint64_t launches = launch_count();
        const Nvfp4Run got = run_nvfp4(in, options, true, amax);
        QCOMPARE(launch_count(), launches + 2);
        QCOMPARE(bits(got.s_dec), bits(want.s_dec));
        QVERIFY(bytes_match(got.buffers.data, want.data, "data"));
        QVERIFY(scales_match(got.buffers.scales, want.scales, rows, (cols + 15) / 16, mx_scale_cols(cols, 16), "rowwise"));
        QVERIFY(bytes_match(got.buffers.data_t, want_t.data, "transposed data"));
        QVERIFY(scales_match(got.buffers.scales_t, want_t.scales, cols, (rows + 15) / 16, mx_scale_cols(rows, 16), "columnwise"));
        if (tiles) {  // one scale per tile: the transposed copy holds the same scales at swapped places
            for (int r = 0; r < rows; ++r) {
                for (int b = 0; b < (cols + 15) / 16; ++b) {
                    QCOMPARE(got.buffers.scales[mx_scale_offset(r, b, mx_scale_cols(cols, 16))],
                             got.buffers.scales_t[mx_scale_offset(b * 16, r / 16, mx_scale_cols(rows, 16))]);
                }
            }
        }
    }

    void nvfp4TensorScaleEdges() {
        QCOMPARE(detail::mx::nvfp4_encode_scale(0.0f), 1.0f);
        QCOMPARE(detail::mx::nvfp4_encode_scale(kInf), 1.0f);
        QCOMPARE(detail::mx::nvfp4_encode_scale(kNan), std::numeric_limits<float>::max());
        QCOMPARE(detail::mx::nvfp4_encode_scale(2688.0f), 1.0f);
        QCOMPARE(detail::mx::nvfp4_encode_scale(std::ldexp(1.0f, -149)), std::numeric_limits<float>::max());
        // A NaN in the tensor: its block's scale is NaN, so its values decode to NaN; the other blocks are finite.
        Input in = random_input(2, 32, 9u);
        in.values[3] = kNan;
        const Nvfp4Run got = run_nvfp4(in, {}, false, abs_max_of(in));
        QCOMPARE(int(got.buffers.scales[mx_scale_offset(0, 0, 4)]), 0x7f);
        QVERIFY(got.buffers.scales[mx_scale_offset(0, 1, 4)] != 0x7f);
        QCOMPARE(int(got.buffers.data[1] & 0x0f), 7);  // the NaN itself: +6, times a NaN scale
    }

    void philoxKnownAnswers() {
        // Random123's kat_vectors for philox4x32 with 10 rounds.
        const auto check = [](detail::mx::Philox4 counter, std::uint32_t k0, std::uint32_t k1, detail::mx::Philox4 want) {
            const detail::mx::Philox4 got = detail::mx::philox4x32_10(counter, k0, k1);
            for (int i = 0; i < 4; ++i) QCOMPARE(got.v[i], want.v[i]);
        };
        check({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
        check({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
              {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
        check({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
              {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
    }

    void stochasticRoundingIsReproducibleAndUnbiased() {
        const Input in = random_input(32, 64, 21u, 4.0f);
        const float amax = abs_max_of(in);
        Nvfp4Cast options;
        options.stochastic_rounding = true;
        options.seed = 0x1234567890abcdefull;
        options.offset = 1000;
        const auto random = [&](std::size_t i) { return detail::mx::random_bits(options.seed, options.offset + i); };
        const Nvfp4Reference want = nvfp4_reference(in, amax, false, random, true);
        const Nvfp4Run first = run_nvfp4(in, options, true, amax);
        QVERIFY(bytes_match(first.buffers.data, want.data, "stochastic data"));
        const auto random_t = [&](std::size_t i) {
            return detail::mx::random_bits(options.seed, options.offset + in.rows * in.cols + i);
        };
        QVERIFY(bytes_match(first.buffers.data_t, nvfp4_reference(transposed(in), amax, false, random_t, true).data,
                            "stochastic transposed data"));
        QVERIFY(first.buffers.data == run_nvfp4(in, options, true, amax).buffers.data);
        options.seed += 1;
        QVERIFY(first.buffers.data != run_nvfp4(in, options, true, amax).buffers.data);
        // Unbiased: 0.3 lies between 0 and 0.5; rounded 200,000 times, its mean is 0.3 within 4 standard errors.
        double sum = 0;
        const int n = 200000;
        for (int i = 0; i < n; ++i) sum += detail::mx::e2m1_value(detail::mx::e2m1_stochastic(0.3f, detail::mx::random_bits(7, i)));
        const double sigma = std::sqrt(0.3 * 0.2 / n);  // (x - lo)(hi - x) is the variance of the rounding
        QVERIFY2(std::fabs(sum / n - 0.3) < 4 * sigma, qPrintable(QString::number(sum / n)));
        QCOMPARE(int(detail::mx::e2m1_stochastic(7.0f, 0)), 7);
        QCOMPARE(int(detail::mx::e2m1_stochastic(-kInf, 0)), 15);
        QCOMPARE(int(detail::mx::e2m1_stochastic(kNan, 0)), 7);
        QCOMPARE(int(detail::mx::e2m1_stochastic(1.0f, 0xffffffffu)), 2);  // exact values never move
    }

    void hadamardIsTheStatedSum() {
        Input in = random_input(5, 48, 17u, 3.0f);
        std::vector<float> out(in.values.size());
        host::hadamard16(tensor(in.values.data(), DType::Float32, 5, 48), tensor(out.data(), DType::Float32, 5, 48), kHadamardSigns, {});
        double norm_in = 0, norm_out = 0;
        for (std::size_t row = 0; row < 5; ++row) {
            for (std::size_t chunk = 0; chunk < 3; ++chunk) {
                for (unsigned j = 0; j < 16; ++j) {
                    float sum = 0.0f;
                    for (unsigned i = 0; i < 16; ++i) {
                        const int sign = (((kHadamardSigns >> i) & 1u) ? -1 : 1) * ((__builtin_popcount(i & j) % 2) ? -1 : 1);
                        const float x = in.at(row, chunk * 16 + i);
                        sum = sign < 0 ? sum - x : sum + x;
                    }
                    QCOMPARE(bits(out[row * 48 + chunk * 16 + j]), bits(sum * 0.25f));
                }
            }
        }
        for (std::size_t i = 0; i < out.size(); ++i) {
            norm_in += double(in.values[i]) * in.values[i];
            norm_out += double(out[i]) * out[i];
        }
        QVERIFY(std::fabs(norm_out / norm_in - 1.0) < 1e-5);  // orthogonal: the norm is kept
        // In place, bfloat16 out: the same values rounded once.
        std::vector<std::uint16_t> bf16(16);
        std::vector<float> ones(16, 1.0f);
        host::hadamard16(tensor(ones.data(), DType::Float32, 1, 16), tensor(bf16.data(), DType::BFloat16, 1, 16), 0, {});
        QCOMPARE(int(bf16[0]), 0x4080);  // j = 0: (Σ x_i) / 4 = 4
        QCOMPARE(int(bf16[5]), 0);       // every other row of H sums to 0
    }

    // The GEMM's microscaling modes (compute capability 10.x natively; its host twin everywhere) on operands exactly as
    // the casts leave them: d = alpha · Σ_k a·b over the decoded values (E8M0 or E4M3 block scale times the element),
    // against a double sum of the same values within float32 accumulation's bound.
    void gemmTakesTheCastsOutputs_data() {
        QTest::addColumn<bool>("nvfp4");
        QTest::newRow("MXFP8 E4M3") << false;
        QTest::newRow("NVFP4") << true;
    }
    void gemmTakesTheCastsOutputs() {
        QFETCH(bool, nvfp4);
        const std::size_t m = 32, n = 48, k = 96;
        const Input a = random_input(m, k, 31u, 3.0f);
        const Input b = random_input(n, k, 37u, 3.0f);
        const auto cast = [&](const Input& in, std::vector<std::uint8_t>& data, std::vector<std::uint8_t>& scales, float& s_dec) {
            if (nvfp4) {
                const Nvfp4Run run = run_nvfp4(in, {}, false, abs_max_of(in));
                data = run.buffers.data;
                scales = run.buffers.scales;
                s_dec = run.s_dec;
            } else {
                const MxBuffers run = run_mxfp8(in, Fp8Type::E4M3, false);
                data = run.data;
                scales = run.scales;
            }
        };
        std::vector<std::uint8_t> a_data, a_scales, b_data, b_scales;
        float a_dec = 1, b_dec = 1;
        cast(a, a_data, a_scales, a_dec);
        cast(b, b_data, b_scales, b_dec);
        const DType dtype = nvfp4 ? DType::Float4E2M1x2 : DType::Float8E4M3;
        const ScaleMode mode = nvfp4 ? ScaleMode::Nvfp4Block16 : ScaleMode::Mxfp8Block32;
        const std::size_t cols = nvfp4 ? k / 2 : k;
        GemmCall g;
        g.a = tensor(a_data.data(), dtype, m, cols);
        g.b = tensor(b_data.data(), dtype, n, cols);
        g.a.scale_inv = reinterpret_cast<float*>(a_scales.data());
        g.b.scale_inv = reinterpret_cast<float*>(b_scales.data());
        g.a.scale_mode = g.b.scale_mode = mode;
        alignas(16) float alpha = a_dec * b_dec;
        if (nvfp4) g.options.alpha = &alpha;
        std::vector<float> d(m * n);
        g.d = tensor(d.data(), DType::Float32, m, n);
        QVERIFY(!gemm_refusal(g, GemmTarget{}));
        const std::uint64_t launches = launch_count();
        tewb::test::calls::host_gemm(g);
        QCOMPARE(launch_count(), launches + 1);
        // Each element decoded from the definitions: E8M0 2^(code - 127) or the E4M3 scale, times the value.
        const auto value = [&](const std::vector<std::uint8_t>& data, const std::vector<std::uint8_t>& scales, std::size_t row,
                               std::size_t col) {
            const std::size_t block = nvfp4 ? 16 : 32;
            const std::uint8_t scale = scales[mx_scale_offset(row, col / block, mx_scale_cols(k, block))];
            if (nvfp4) {
                const std::uint8_t pair = data[row * (k / 2) + col / 2];
                const double element = detail::mx::e2m1_value(static_cast<std::uint8_t>(col % 2 == 0 ? pair & 15 : pair >> 4));
                return element * fp8_code_value(scale, true);
            }
            return fp8_code_value(data[row * k + col], true) * std::ldexp(1.0, scale - 127);
        };
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                double sum = 0, magnitude = 0;
                for (std::size_t p = 0; p < k; ++p) {
                    const double term = value(a_data, a_scales, i, p) * value(b_data, b_scales, j, p);
                    sum += term;
                    magnitude += std::fabs(term);
                }
                const double want = sum * (nvfp4 ? static_cast<double>(alpha) : 1.0);
                const double bound = (std::ldexp(double(k) + 8, -23) * magnitude + std::ldexp(1.0, -23) * std::fabs(sum)) *
                                         (nvfp4 ? alpha : 1.0f) + 1e-30;
                QVERIFY2(std::fabs(d[i * n + j] - want) <= bound,
                         qPrintable(QStringLiteral("d[%1, %2] = %3, want %4").arg(i).arg(j).arg(d[i * n + j]).arg(want)));
            }
        }
    }

    void argumentsAreChecked() {
        std::vector<float> x(64, 1.0f);
        std::vector<std::uint8_t> data(64), scales(512);
        float amax = 1.0f, s_dec = 0;
        const Tensor in = tensor(x.data(), DType::Float32, 2, 32);
        const Tensor scales_ok = tensor(scales.data(), DType::Float8E8M0, 128, 4);
        const Tensor out = tensor(data.data(), DType::Float8E4M3, 2, 32);
        QVERIFY(error_of([&] { host::mxfp8_cast(in, tensor(data.data(), DType::BFloat16, 2, 32), scales_ok, {}, {}, {}); })
                    .contains("out has dtype bfloat16; allowed: E4M3, E5M2"));
        QVERIFY(error_of([&] { host::mxfp8_cast(in, out, tensor(scales.data(), DType::Float8E8M0, 2, 1), {}, {}, {}); })
                    .contains("scales is [2, 1]; allowed: [128, 4]"));
        QVERIFY(error_of([&] { host::mxfp8_cast(in, out, tensor(scales.data(), DType::Float8E4M3, 128, 4), {}, {}, {}); })
                    .contains("scales has dtype E4M3; allowed: E8M0"));
        QVERIFY(error_of([&] { host::mxfp8_cast(tensor(x.data(), DType::Int64, 2, 32), out, scales_ok, {}, {}, {}); })
                    .contains("x has dtype int64"));
        Tensor x_amax = in;
        x_amax.amax = &amax;
        Tensor packed = tensor(data.data(), DType::Float4E2M1x2, 2, 16);
        packed.scale_inv = &s_dec;
        const Tensor scales4 = tensor(scales.data(), DType::Float8E4M3, 128, 4);
        QVERIFY(error_of([&] { host::nvfp4_cast(in, packed, scales4, {}, {}, {}, {}); }).contains("x.amax is a null pointer"));
        QVERIFY(error_of([&] { host::nvfp4_cast(x_amax, out, scales4, {}, {}, {}, {}); })
                    .contains("out has dtype E4M3; allowed: E2M1x2"));
        Tensor unpacked = tensor(data.data(), DType::Float4E2M1x2, 2, 32);
        unpacked.scale_inv = &s_dec;
        QVERIFY(error_of([&] { host::nvfp4_cast(x_amax, unpacked, scales4, {}, {}, {}, {}); }).contains("out is [2, 32]; allowed: [2, 16]"));
        Tensor no_s_dec = packed;
        no_s_dec.scale_inv = nullptr;
        QVERIFY(error_of([&] { host::nvfp4_cast(x_amax, no_s_dec, scales4, {}, {}, {}, {}); }).contains("out.scale_inv is a null pointer"));
        QVERIFY(error_of([&] { host::hadamard16(tensor(x.data(), DType::Float32, 2, 24), tensor(x.data(), DType::Float32, 2, 24), 0, {}); })
                    .contains("x has 24 columns; allowed: a multiple of 16"));
        QVERIFY(error_of([&] { host::hadamard16(in, tensor(x.data(), DType::BFloat16, 2, 32), 0, {}); })
                    .contains("out is x's memory in another dtype"));
        const std::uint64_t launches = launch_count();
        host::mxfp8_cast(tensor(x.data(), DType::Float32, 0, 32), tensor(data.data(), DType::Float8E4M3, 0, 32),
                         tensor(scales.data(), DType::Float8E8M0, 0, 4), {}, {}, {});
        QCOMPARE(launch_count(), launches);  // no elements, no work
    }
};

QTEST_GUILESS_MAIN(TstHostMx)
#include "tst_host_mx.moc"
