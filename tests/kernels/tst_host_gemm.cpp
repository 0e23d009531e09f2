// The GEMM's host implementation against double-precision references written here, and its rule table
// (shared with the cuBLASLt wrapper) on the host and on device targets.
#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/host_numbers.h"
#include "gemm/observed_library_work.h"
#include "gemm_calls.h"
#include "gemm_rule_cases.h"
#include "kernel_tensors.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/launch_count.h"

using namespace tewb::kernels;
using tewb::test::tensor;
namespace calls = tewb::test::calls;
namespace hn = tewb::kernels::detail;
using tewb::test::gemm_cases::Buffer;
using tewb::test::gemm_cases::offset;
using tewb::test::gemm_cases::RuleBuffers;
using tewb::test::gemm_cases::RuleCase;
using tewb::test::gemm_cases::gemm_rule_cases;

namespace {


Fp8Type fp8(DType t) {
    return t == DType::Float8E5M2 ? Fp8Type::E5M2 : Fp8Type::E4M3;
}

std::size_t size_of(DType t) {
    return t == DType::Float32 ? 4 : t == DType::BFloat16 ? 2 : 1;
}

// Stores v in a float32 / bfloat16 buffer and returns the value stored.
double put(unsigned char* p, DType t, std::size_t i, float v) {
    if (t == DType::Float32) {
        std::memcpy(p + 4 * i, &v, 4);
        return v;
    }
    const std::uint16_t h = hn::float_to_bf16(v);
    std::memcpy(p + 2 * i, &h, 2);
    return hn::bf16_to_float(h);
}

double get(unsigned char* p, DType t, std::size_t i) {
    if (t == DType::Float32) {
        float v = 0;
        std::memcpy(&v, p + 4 * i, 4);
        return v;
    }
    std::uint16_t h = 0;
    std::memcpy(&h, p + 2 * i, 2);
    return hn::bf16_to_float(h);
}

double gelu(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double gelu_derivative(double x) {
    const double c = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(c * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

// An operand of logical shape [rows, k], stored as the GEMM reads it, with its exact values (scales applied).
struct Operand {
    DType type = DType::Float32;
    std::size_t rows = 0, k = 0;
    bool transposed = false;
    ScaleMode mode = ScaleMode::Tensor;
    Buffer data;
    Buffer scales;
    std::vector<double> value;  // [rows, k]

    // As stored: [rows, k], or [k, rows] when transposed (the call's options.a_transposed / b_transposed say which).
    Tensor view() {
        Tensor t = tensor(data.bytes(), type, transposed ? k : rows, transposed ? rows : k);
        if (is_fp8(type)) t.scale_inv = scales.floats();
        t.scale_mode = mode;
        return t;
    }
};

Operand make_operand(DType type, std::size_t rows, std::size_t k, bool transposed, ScaleMode mode, std::mt19937& rng) {
    Operand op;
    op.type = type;
    op.rows = rows;
    op.k = k;
    op.transposed = transposed;
    op.mode = mode;
    op.data = Buffer(rows * k * size_of(type));
    op.value.resize(rows * k);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-3, 3);
    const std::size_t entries = block_scale_entries(mode, rows, k);
    op.scales = Buffer(entries * 4);
    // Unread padding is NaN: a scale read from the wrong place shows up in the result.
    for (std::size_t e = 0; e < entries; ++e) op.scales.floats()[e] = std::numeric_limits<float>::quiet_NaN();
    const std::size_t rows4 = (rows + 3) / 4 * 4;
    const std::size_t k_blocks4 = (k / 128 + 3) / 4 * 4;
    const auto scale_index = [&](std::size_t r, std::size_t c) -> std::size_t {
        switch (mode) {
            case ScaleMode::Tensor: return 0;
            case ScaleMode::Block1x128: return c / 128 * rows4 + r;
            case ScaleMode::Block128x128: return r / 128 * k_blocks4 + c / 128;
        }
        return 0;
    };
    if (is_fp8(type)) {
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t c = 0; c < k; ++c) {
                float& s = op.scales.floats()[scale_index(r, c)];
                if (std::isnan(s)) s = std::ldexp(1.0f + 0.37f * uniform(rng), exponent(rng));
            }
        }
    }
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < k; ++c) {
            const std::size_t stored = transposed ? c * rows + r : r * k + c;
            const float x = uniform(rng);
            if (is_fp8(type)) {
                const std::uint8_t q = hn::float_to_fp8(4.0f * x, fp8(type));
                op.data.bytes()[stored] = q;
                op.value[r * k + c] = static_cast<double>(hn::fp8_to_float(q, fp8(type))) * op.scales.floats()[scale_index(r, c)];
            } else {
                op.value[r * k + c] = put(op.data.bytes(), type, stored, x);
            }
        }
    }
    return op;
}

// One GEMM case: its buffers, the call's arguments and the double reference.
struct Case {
    std::size_t m = 0, n = 0, k = 0;
    DType operand_type = DType::Float32;
    DType b_type = DType::Float32;
    DType d_type = DType::Float32;
    Epilogue epilogue = Epilogue::None;
    bool a_transposed = false, b_transposed = false;
    ScaleMode a_mode = ScaleMode::Tensor, b_mode = ScaleMode::Tensor;
    unsigned seed = 1;
};

QString describe(const Case& c) {
    return QStringLiteral("m=%1 n=%2 k=%3 a=%4 b=%5 d=%6 epilogue=%7 aT=%8 bT=%9 modes=%10/%11")
        .arg(c.m).arg(c.n).arg(c.k).arg(int(c.operand_type)).arg(int(c.b_type)).arg(int(c.d_type)).arg(int(c.epilogue))
        .arg(c.a_transposed).arg(c.b_transposed).arg(int(c.a_mode)).arg(int(c.b_mode));
}

// |got - want| within `bound`, or the test fails naming the case and the element.
bool close(const Case& c, const char* what, std::size_t index, double got, double want, double bound) {
    if (std::fabs(got - want) <= bound) return true;
    const QString message = describe(c) + QStringLiteral(": %1[%2] = %3, reference %4, bound %5")
                                              .arg(what).arg(index).arg(got, 0, 'g', 9).arg(want, 0, 'g', 9).arg(bound, 0, 'g', 3);
    QTest::qFail(qPrintable(message), __FILE__, __LINE__);
    return false;
}

// The output type's relative rounding: one unit in the last place.
double ulp(DType t) {
    return t == DType::Float32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -7);
}

// Runs the case on the host and checks d and every epilogue output against the reference.
bool run_and_check(const Case& c) {
    std::mt19937 rng(c.seed);
    Operand a = make_operand(c.operand_type, c.m, c.k, c.a_transposed, c.a_mode, rng);
    Operand b = make_operand(c.b_type, c.n, c.k, c.b_transposed, c.b_mode, rng);
    const bool fp8_in = is_fp8(c.operand_type);
    const DType side = is_fp8(c.d_type) ? DType::BFloat16 : c.d_type;
    const DType bias_type = fp8_in ? DType::BFloat16 : c.d_type;
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

    GemmCall g;
    g.a = a.view();
    g.b = b.view();
    g.options.a_transposed = c.a_transposed;
    g.options.b_transposed = c.b_transposed;
    g.options.epilogue = c.epilogue;
    Buffer d(c.m * c.n * size_of(c.d_type));
    g.d = tensor(d.bytes(), c.d_type, c.m, c.n);
    Buffer d_scale(4), d_amax(4);
    const float output_scale = 0.75f / 1024.0f;  // keeps most FP8 outputs inside E4M3's range
    if (is_fp8(c.d_type)) {
        d_scale.floats()[0] = output_scale;
        d_amax.floats()[0] = -1.0f;
        g.d.scale = d_scale.floats();
        g.d.amax = d_amax.floats();
    }
    Buffer bias(c.n * 2 * 4);
    std::vector<double> bias_value;
    bias_value.resize(c.n);
    if (c.epilogue == Epilogue::Bias || c.epilogue == Epilogue::GeluAuxBias) {
        for (std::size_t j = 0; j < c.n; ++j) bias_value[j] = put(bias.bytes(), bias_type, j, uniform(rng));
        g.epilogue.bias = tensor(bias.bytes(), bias_type, 1, c.n);
    }
    const std::size_t aux_ld = (c.n + 7) / 8 * 8 + 8;
    Buffer aux(c.m * aux_ld * 4);
    std::vector<double> aux_in(c.m * c.n, 0.0);
    if (c.epilogue == Epilogue::GeluAuxBias || c.epilogue == Epilogue::DGeluBGrad) {
        g.epilogue.aux = tensor(aux.bytes(), side, c.m, c.n);
        g.epilogue.aux.row_stride = aux_ld;
        if (c.epilogue == Epilogue::DGeluBGrad) {
            for (std::size_t i = 0; i < c.m; ++i) {
                for (std::size_t j = 0; j < c.n; ++j) aux_in[i * c.n + j] = put(aux.bytes(), side, i * aux_ld + j, 3.0f * uniform(rng));
            }
        }
    }
    Buffer bias_grad(std::max(c.m, c.n) * 4);
    if (c.epilogue == Epilogue::DGeluBGrad || c.epilogue == Epilogue::BGradB) {
        g.epilogue.bias_grad = tensor(bias_grad.bytes(), side, 1, c.epilogue == Epilogue::BGradB ? c.m : c.n);
    }

    const std::uint64_t launches = launch_count();
    calls::host_gemm(g);
    if (launch_count() != launches + 1) {
        QTest::qFail("not one launch counted", __FILE__, __LINE__);
        return false;
    }

    const double accumulation = std::ldexp(static_cast<double>(c.k) + 8.0, -22);  // relative to Σ|a·b|
    std::vector<double> column_sum, column_bound;
    column_sum.resize(c.n);
    column_bound.resize(c.n);
    double amax = 0.0;
    for (std::size_t i = 0; i < c.m; ++i) {
        for (std::size_t j = 0; j < c.n; ++j) {
            double product = 0.0, magnitude = 0.0;
            for (std::size_t p = 0; p < c.k; ++p) {
                const double term = a.value[i * c.k + p] * b.value[j * c.k + p];
                product += term;
                magnitude += std::fabs(term);
            }
            double bound = accumulation * magnitude;
            double want = product;
            switch (c.epilogue) {
                case Epilogue::None:
                case Epilogue::BGradB: break;
                case Epilogue::Bias: want = product + bias_value[j]; break;
                case Epilogue::GeluAuxBias: {
                    const double pre = product + bias_value[j];
                    const double aux_bound = bound + ulp(side) * std::fabs(pre) + 1e-30;
                    if (!close(c, "aux", i * aux_ld + j, get(aux.bytes(), side, i * aux_ld + j), pre, aux_bound)) return false;
                    want = gelu(pre);
                    bound = 1.2 * bound + 1e-6 * std::fabs(want);  // gelu' <= 1.13; tanhf's few ulps
                    break;
                }
                case Epilogue::DGeluBGrad: {
                    const double slope = gelu_derivative(aux_in[i * c.n + j]);
                    want = product * slope;
                    bound = bound * std::fabs(slope) + 1e-6 * std::fabs(want);
                    column_sum[j] += want;
                    column_bound[j] += bound + std::ldexp(static_cast<double>(c.m), -22) * std::fabs(want);
                    break;
                }
            }
            amax = std::max(amax, std::fabs(want));
            const std::size_t index = i * c.n + j;
            if (is_fp8(c.d_type)) {
                const std::uint8_t got = d.bytes()[index];
                const std::uint8_t expected = hn::float_to_fp8(static_cast<float>(want * output_scale), fp8(c.d_type));
                const auto code = [](std::uint8_t q) { return (q & 0x80) ? -int(q & 0x7f) : int(q & 0x7f); };
                if (std::abs(code(got) - code(expected)) > 1) {
                    close(c, "d (FP8 code)", index, code(got), code(expected), 1);
                    return false;
                }
            } else if (!close(c, "d", index, get(d.bytes(), c.d_type, index), want, bound + ulp(c.d_type) * std::fabs(want) + 1e-30)) {
                return false;
            }
        }
    }
    if (is_fp8(c.d_type) && !close(c, "d_amax", 0, d_amax.floats()[0], amax, 1e-5 * amax)) return false;
    if (c.epilogue == Epilogue::DGeluBGrad) {
        for (std::size_t j = 0; j < c.n; ++j) {
            const double bound = column_bound[j] + ulp(side) * std::fabs(column_sum[j]) + 1e-30;
            if (!close(c, "bias_grad", j, get(bias_grad.bytes(), side, j), column_sum[j], bound)) return false;
        }
    }
    if (c.epilogue == Epilogue::BGradB) {
        for (std::size_t i = 0; i < c.m; ++i) {
            double sum = 0.0, magnitude = 0.0;
            for (std::size_t p = 0; p < c.k; ++p) {
                sum += a.value[i * c.k + p];
                magnitude += std::fabs(a.value[i * c.k + p]);
            }
            const double bound = accumulation * magnitude + ulp(side) * std::fabs(sum) + 1e-30;
            if (!close(c, "bias_grad", i, get(bias_grad.bytes(), side, i), sum, bound)) return false;
        }
    }
    return true;
}


}  // namespace

class TestHostGemm : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void highPrecisionEveryEpilogueAndLayout() {
        unsigned seed = 10;
        for (const DType type : {DType::Float32, DType::BFloat16}) {
            for (const Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::GeluAuxBias, Epilogue::DGeluBGrad, Epilogue::BGradB}) {
                for (const bool a_t : {false, true}) {
                    for (const bool b_t : {false, true}) {
                        if (e == Epilogue::BGradB && !a_t) continue;  // refused: checked in the rule tests
                        Case c;
                        c.m = 37;
                        c.n = 29;
                        c.k = 53;
                        c.operand_type = c.b_type = c.d_type = type;
                        c.epilogue = e;
                        c.a_transposed = a_t;
                        c.b_transposed = b_t;
                        c.seed = ++seed;
                        QVERIFY(run_and_check(c));
                    }
                }
            }
        }
    }

    void bfloat16OperandsToFloat32AndLongK() {
        // Sizes across the thread split (m·n·k above one thread's share) and k with a tail after the lanes.
        Case c;
        c.m = 130;
        c.n = 67;
        c.k = 1027;
        c.operand_type = c.b_type = DType::BFloat16;
        c.d_type = DType::BFloat16;
        c.epilogue = Epilogue::DGeluBGrad;
        QVERIFY(run_and_check(c));
        c.operand_type = c.b_type = c.d_type = DType::Float32;
        c.epilogue = Epilogue::Bias;
        c.b_transposed = true;
        QVERIFY(run_and_check(c));
    }

    void fp8TensorScaledEveryOutputType() {
        unsigned seed = 100;
        const std::pair<DType, DType> pairs[] = {
            {DType::Float8E4M3, DType::Float8E4M3}, {DType::Float8E4M3, DType::Float8E5M2}, {DType::Float8E5M2, DType::Float8E4M3}};
        for (const auto& [a_type, b_type] : pairs) {
            for (const DType d_type : {DType::Float32, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2}) {
                if (d_type == DType::Float8E5M2 && a_type != DType::Float8E5M2 && b_type != DType::Float8E5M2) continue;
                for (const Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::GeluAuxBias}) {
                    if (is_fp8(d_type) && e == Epilogue::GeluAuxBias) continue;
                    Case c;
                    c.m = 48;
                    c.n = 32;
                    c.k = 80;
                    c.operand_type = a_type;
                    c.b_type = b_type;
                    c.d_type = d_type;
                    c.epilogue = e;
                    c.seed = ++seed;
                    QVERIFY(run_and_check(c));
                }
            }
        }
    }

    void fp8BlockScaled() {
        // m and n past one 128-row tile (partial tiles), k = 3 blocks (the 128x128 layout pads k blocks to 4);
        // padding scales are NaN and must stay unread.
        const std::pair<ScaleMode, ScaleMode> modes[] = {{ScaleMode::Block1x128, ScaleMode::Block128x128},
                                                         {ScaleMode::Block128x128, ScaleMode::Block1x128},
                                                         {ScaleMode::Block1x128, ScaleMode::Block1x128}};
        unsigned seed = 200;
        for (const auto& [a_mode, b_mode] : modes) {
            for (const DType d_type : {DType::Float32, DType::BFloat16}) {
                for (const Epilogue e : {Epilogue::None, Epilogue::Bias}) {
                    Case c;
                    c.m = 144;
                    c.n = 272;
                    c.k = 384;
                    c.operand_type = DType::Float8E4M3;
                    c.b_type = DType::Float8E4M3;
                    c.d_type = d_type;
                    c.epilogue = e;
                    c.a_mode = a_mode;
                    c.b_mode = b_mode;
                    c.seed = ++seed;
                    QVERIFY(run_and_check(c));
                }
            }
        }
        Case wgrad;  // E4M3 x E5M2 with 1x128 both ways, the wgrad's shape class
        wgrad.m = 32;
        wgrad.n = 16;
        wgrad.k = 256;
        wgrad.operand_type = DType::Float8E4M3;
        wgrad.b_type = DType::Float8E5M2;
        wgrad.a_mode = wgrad.b_mode = ScaleMode::Block1x128;
        QVERIFY(run_and_check(wgrad));
    }

    // Each element is computed the same way whatever the rows around it: a GEMM over a slice of a's rows
    // gives the big GEMM's rows bit for bit (the big one is split over threads, the slice is not).
    void resultDoesNotDependOnTheSplit() {
        std::mt19937 rng(7);
        const std::size_t m = 512, n = 96, k = 200;
        Operand a = make_operand(DType::BFloat16, m, k, false, ScaleMode::Tensor, rng);
        Operand b = make_operand(DType::BFloat16, n, k, false, ScaleMode::Tensor, rng);
        Buffer whole(m * n * 4), slice(32 * n * 4);
        GemmCall g;
        g.a = a.view();
        g.b = b.view();
        g.d = tensor(whole.bytes(), DType::Float32, m, n);
        calls::host_gemm(g);
        for (const std::size_t first : {std::size_t{0}, std::size_t{33}, std::size_t{480}}) {
            GemmCall part = g;
            part.a.data = a.data.bytes() + first * k * 2;
            part.a.rows = 32;
            part.d = tensor(slice.bytes(), DType::Float32, 32, n);
            if (reinterpret_cast<std::uintptr_t>(part.a.data) % 16 != 0) continue;  // 33 rows of 400 bytes: misaligned
            calls::host_gemm(part);
            QVERIFY(std::memcmp(slice.bytes(), whole.bytes() + first * n * 4, 32 * n * 4) == 0);
        }
    }

    void everyRuleRefusedOnTheHost() {
        RuleBuffers buffers;
        QVERIFY(!gemm_refusal(buffers.fp8(), GemmTarget{}));
        QVERIFY(!gemm_refusal(buffers.bf16(), GemmTarget{}));
        QVERIFY(!gemm_refusal(buffers.block(), GemmTarget{}));
        const std::vector<RuleCase> cases = gemm_rule_cases();
        const std::uint64_t launches = launch_count();
        for (const RuleCase& rule_case : cases) {
            const GemmCall g = rule_case.args(buffers);
            const auto refusal = gemm_refusal(g, GemmTarget{});
            QVERIFY2(refusal.has_value(), rule_case.name);
            QVERIFY2(refusal->rule == rule_case.rule,
                     qPrintable(QStringLiteral("%1: got %2 (%3)").arg(rule_case.name).arg(QString::fromUtf8(to_string(refusal->rule).data(), int(to_string(refusal->rule).size()))).arg(QString::fromStdString(refusal->message))));
            try {
                calls::host_gemm(g);
                QFAIL(qPrintable(QStringLiteral("%1: no error").arg(rule_case.name)));
            } catch (const GemmRefused& e) {
                QCOMPARE(e.rule(), rule_case.rule);
                const std::string message = e.what();
                QVERIFY2(message.rfind("tewb::kernels::host::gemm: ", 0) == 0, e.what());
                QVERIFY2(message.find(refusal->message) != std::string::npos, e.what());
            }
        }
        QCOMPARE(launch_count(), launches);  // nothing refused ran
        // Callers may catch the base class; the typed rule travels with it.
        try {
            calls::host_gemm(cases.front().args(buffers));
            QFAIL("no error");
        } catch (const KernelError& e) {
            QVERIFY(dynamic_cast<const GemmRefused*>(&e) != nullptr);
        }
    }

    void messagesNameTheValue() {
        RuleBuffers buffers;
        GemmCall g = buffers.fp8();
        g.a.rows = g.d.rows = 40;
        QVERIFY(gemm_refusal(g, GemmTarget{})->message.find("got m = 40, n = 64, k = 128") != std::string::npos);
        g = buffers.bf16();
        g.b.cols = 64;
        const std::string shapes = gemm_refusal(g, GemmTarget{})->message;
        QVERIFY2(shapes.find("a is [64, 128] and b [64, 64]: a's k is 128, b's 64") != std::string::npos, shapes.c_str());
        g = buffers.fp8();
        g.a.scale_inv = offset(g.a.scale_inv, 2);
        QVERIFY(gemm_refusal(g, GemmTarget{})->message.find("a.scale_inv (0x") != std::string::npos);
        // The scale storage contract (docs/kernels.md): a per-tensor scale is one float32 read by pointer, and still
        // 16-byte aligned. The H200 refused an FP8 GEMM (cublasLtMatmul, status 15) whose weight scale_inv sat 4 bytes
        // into a packed array; the host twin refuses it first, naming the operand, so a CPU test sees the same.
        for (const std::size_t bytes : {std::size_t{4}, std::size_t{8}, std::size_t{12}}) {
            g = buffers.fp8();
            g.a.scale_inv = offset(g.a.scale_inv, bytes);
            auto refusal = gemm_refusal(g, GemmTarget{});
            QVERIFY(refusal.has_value());
            QCOMPARE(refusal->rule, GemmRule::Misaligned);
            QVERIFY2(refusal->message.find("a.scale_inv (0x") != std::string::npos, refusal->message.c_str());
            g = buffers.fp8();
            g.b.scale_inv = offset(g.b.scale_inv, bytes);
            refusal = gemm_refusal(g, GemmTarget{});
            QVERIFY(refusal.has_value());
            QVERIFY2(refusal->message.find("b.scale_inv (0x") != std::string::npos, refusal->message.c_str());
            g = buffers.fp8();
            g.d.dtype = DType::Float8E4M3;
            g.d.scale = offset(buffers.scales.floats(), bytes);
            refusal = gemm_refusal(g, GemmTarget{});
            QVERIFY(refusal.has_value());
            QVERIFY2(refusal->message.find("d_scale (0x") != std::string::npos, refusal->message.c_str());
            g.d.scale = buffers.scales.floats();
            g.d.amax = offset(buffers.scales.floats() + 4, bytes);
            refusal = gemm_refusal(g, GemmTarget{});
            QVERIFY(refusal.has_value());
            QVERIFY2(refusal->message.find("d_amax (0x") != std::string::npos, refusal->message.c_str());
        }
        g = buffers.fp8();
        g.a.scale_inv = offset(g.a.scale_inv, 16);
        QVERIFY(!gemm_refusal(g, GemmTarget{}));
        g = buffers.fp8();
        g.d.dtype = DType::Float32;
        g.options.epilogue = Epilogue::Bias;
        g.epilogue.bias = buffers.bias_vector(DType::Float32);
        const std::string bias = gemm_refusal(g, GemmTarget{})->message;
        QVERIFY2(bias.find("bias has dtype float32") != std::string::npos && bias.find("allowed: bfloat16") != std::string::npos,
                 bias.c_str());
        QCOMPARE(std::string(to_string(GemmRule::NoAlgorithm)), std::string("NoAlgorithm"));
    }

    // The H200's second refusal: an FP8 d with C at d's address in bfloat16 (status 7). The wrapper's C
    // comes from gemm_c_operand, which passes none for an FP8 output; other choices are refused.
    void cOperandRule() {
        RuleBuffers buffers;
        GemmCall g = buffers.fp8();
        g.d.dtype = DType::Float8E4M3;
        g.d.scale = buffers.scales.floats();
        const GemmCOperand chosen = gemm_c_operand(g);
        QVERIFY(chosen.data == nullptr);
        QCOMPARE(chosen.type, DType::BFloat16);
        QVERIFY(!gemm_c_refusal(g, chosen));
        const auto shared = gemm_c_refusal(g, GemmCOperand{g.d.data, DType::BFloat16});
        QVERIFY(shared.has_value());
        QCOMPARE(shared->rule, GemmRule::COperandLayout);
        QVERIFY(shared->message.find("status 7") != std::string::npos);
        QCOMPARE(gemm_c_refusal(g, GemmCOperand{nullptr, DType::Float8E4M3})->rule, GemmRule::COperandLayout);
        g = buffers.bf16();
        QVERIFY(gemm_c_operand(g).data == g.d.data);
        QVERIFY(!gemm_c_refusal(g, gemm_c_operand(g)));
        QCOMPARE(gemm_c_refusal(g, GemmCOperand{g.d.data, DType::Float32})->rule, GemmRule::COperandLayout);
    }

    void computeCapabilityRulesOnDeviceTargets() {
        RuleBuffers buffers;
        const auto device = [](int major, int minor) { return GemmTarget{false, major, minor}; };
        QCOMPARE(gemm_refusal(buffers.fp8(), device(8, 0))->rule, GemmRule::Fp8NeedsCC89);
        QVERIFY(gemm_refusal(buffers.fp8(), device(8, 0))->message.find("this GPU has 8.0") != std::string::npos);
        QVERIFY(!gemm_refusal(buffers.fp8(), device(8, 9)));
        QCOMPARE(gemm_refusal(buffers.block(), device(8, 9))->rule, GemmRule::BlockScalingNeedsCC9x);
        QVERIFY(!gemm_refusal(buffers.block(), device(9, 0)));
        QCOMPARE(gemm_refusal(buffers.block(), device(10, 0))->rule, GemmRule::BlockScalingNeedsCC9x);
        QVERIFY(!gemm_refusal(buffers.bf16(), device(7, 0)));
        QVERIFY(!gemm_refusal(buffers.block(), GemmTarget{}));  // the host has no compute capability
        for (const GemmCall& mx : {buffers.mx(), buffers.nvfp4()}) {
            QVERIFY(!gemm_refusal(mx, GemmTarget{}));
            QVERIFY(!gemm_refusal(mx, device(10, 0)));
            QCOMPARE(gemm_refusal(mx, device(9, 0))->rule, GemmRule::MxNeedsCC10);
            QCOMPARE(gemm_refusal(mx, device(12, 0))->rule, GemmRule::MxNeedsCC10);
        }
        // Other rules come first, on the host target already: a refusal is found on the CPU.
        GemmCall g = buffers.fp8();
        g.a.rows = g.d.rows = 40;
        QCOMPARE(gemm_refusal(g, device(8, 0))->rule, GemmRule::Fp8ShapeNotMultipleOf16);
    }

    // d = a·bᵀ + bias + c (the residual accumulated in the GEMM): float32 and bfloat16 outputs from float32,
    // bfloat16 and E4M3 operands, c its own buffer or d itself, against a double reference.
    void accumulatesOntoC_data() {
        QTest::addColumn<int>("operands");
        QTest::addColumn<int>("output");
        QTest::addColumn<bool>("in_place");
        QTest::newRow("float32") << int(DType::Float32) << int(DType::Float32) << false;
        QTest::newRow("bfloat16 -> float32 (te BF16's residual)") << int(DType::BFloat16) << int(DType::Float32) << false;
        QTest::newRow("bfloat16 -> bfloat16, c = d") << int(DType::BFloat16) << int(DType::BFloat16) << true;
        QTest::newRow("E4M3 -> float32 (te FP8's residual)") << int(DType::Float8E4M3) << int(DType::Float32) << false;
        QTest::newRow("E4M3 -> float32, c = d") << int(DType::Float8E4M3) << int(DType::Float32) << true;
    }
    void accumulatesOntoC() {
        QFETCH(int, operands);
        QFETCH(int, output);
        QFETCH(bool, in_place);
        const auto type = static_cast<DType>(operands);
        const auto d_type = static_cast<DType>(output);
        constexpr std::size_t m = 48, n = 32, k = 64;
        std::mt19937 rng(5);
        Operand a = make_operand(type, m, k, false, ScaleMode::Tensor, rng);
        Operand b = make_operand(type, n, k, false, ScaleMode::Tensor, rng);
        const DType bias_type = is_fp8(type) ? DType::BFloat16 : d_type;
        Buffer bias(n * 4), c(m * n * 4), d(m * n * 4);
        std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
        std::vector<double> bias_value(n), c_value(m * n);
        for (std::size_t j = 0; j < n; ++j) bias_value[j] = put(bias.bytes(), bias_type, j, uniform(rng));
        Buffer& residual = in_place ? d : c;
        for (std::size_t i = 0; i < m * n; ++i) c_value[i] = put(residual.bytes(), d_type, i, uniform(rng));
        GemmCall g;
        g.a = a.view();
        g.b = b.view();
        g.d = tensor(d.bytes(), d_type, m, n);
        g.options.epilogue = Epilogue::Bias;
        g.epilogue.bias = tensor(bias.bytes(), bias_type, 1, n);
        g.epilogue.c = tensor(residual.bytes(), d_type, m, n);
        QVERIFY2(!gemm_refusal(g, GemmTarget{}), gemm_refusal(g, GemmTarget{})->message.c_str());
        const std::uint64_t before = launch_count();
        calls::host_gemm(g);
        QCOMPARE(launch_count(), before + 1);
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                double product = 0.0, magnitude = 0.0;
                for (std::size_t p = 0; p < k; ++p) {
                    product += a.value[i * k + p] * b.value[j * k + p];
                    magnitude += std::fabs(a.value[i * k + p] * b.value[j * k + p]);
                }
                const double want = product + bias_value[j] + c_value[i * n + j];
                const double got = get(d.bytes(), d_type, i * n + j);
                const double bound = ulp(d_type) * (std::fabs(want) + 8.0) + std::ldexp(magnitude + std::fabs(bias_value[j]) + 8.0, -20);
                QVERIFY2(std::fabs(got - want) <= bound,
                         qPrintable(QStringLiteral("d[%1, %2] = %3, reference %4").arg(i).arg(j).arg(got, 0, 'g', 9).arg(want, 0, 'g', 9)));
            }
        }
    }

    void launchCountOnePerCall() {
        RuleBuffers buffers;
        GemmCall g = buffers.bf16();
        std::memset(buffers.a.bytes(), 0, 64 * 128 * 2);
        std::memset(buffers.b.bytes(), 0, 64 * 128 * 2);
        const std::uint64_t before = launch_count();
        calls::host_gemm(g);
        calls::host_gemm(g);
        QCOMPARE(launch_count(), before + 2);
        g.a.rows = g.d.rows = 0;  // nothing to compute: no launch, as on the GPU
        calls::host_gemm(g);
        QCOMPARE(launch_count(), before + 2);
    }

    // What cuBLASLt runs beside a matmul, from the observed data (gemm/observed_library_work.csv): the host twin
    // counts it as the GPU runs it; an epilogue and operand type no GPU run observed is counted as not known.
    void libraryWorkAsObserved() {
        const auto bgradb = detail::observed_gemm_work(Epilogue::BGradB, DType::BFloat16);
        QVERIFY(bgradb && bgradb->helper_kernels == 1 && bgradb->memsets == 1 && bgradb->memsets_inferred);
        const auto dgelu = detail::observed_gemm_work(Epilogue::DGeluBGrad, DType::BFloat16);
        QVERIFY(dgelu && dgelu->helper_kernels == 1);
        const auto plain = detail::observed_gemm_work(Epilogue::None, DType::BFloat16);
        QVERIFY(plain && plain->helper_kernels == 0 && plain->memsets == 0);
        QVERIFY(!detail::observed_gemm_work(Epilogue::None, DType::Float8E4M3).has_value());

        RuleBuffers buffers;
        GemmCall g = buffers.bf16();
        std::memset(buffers.a.bytes(), 0, 64 * 128 * 2);
        std::memset(buffers.b.bytes(), 0, 64 * 128 * 2);
        LaunchTally before = launch_tally();
        calls::host_gemm(g);
        QCOMPARE(launch_tally() - before, (LaunchTally{1, 0, 0, 0}));
        before = launch_tally();
        detail::note_gemm_library_work(Epilogue::BGradB, DType::BFloat16);
        detail::note_gemm_library_work(Epilogue::Bias, DType::Float8E4M3);
        QCOMPARE(launch_tally() - before, (LaunchTally{0, 1, 1, 1}));
    }

    // A plan may be timed on a call (its candidates run several times) only when that leaves what one run does.
    void onlyCallsThatDoNotReadTheirOutputAreTimed() {
        Buffer a(64), b(64), c(64), d(64), aux(64), bias(64), bias_grad(64);
        GemmCall g;
        g.a.data = a.bytes();
        g.b.data = b.bytes();
        g.d.data = d.bytes();
        QVERIFY(gemm_can_be_timed(g));
        g.epilogue.c.data = c.bytes();  // d = a·bᵀ + c, c elsewhere: the same d every time
        QVERIFY(gemm_can_be_timed(g));
        g.epilogue.c.data = d.bytes();  // accumulated onto d itself: once per run
        QVERIFY(!gemm_can_be_timed(g));
        g.epilogue.c.data = nullptr;
        g.epilogue.aux.data = aux.bytes();
        g.epilogue.bias.data = bias.bytes();
        g.epilogue.bias_grad.data = bias_grad.bytes();
        QVERIFY(gemm_can_be_timed(g));
        for (void* alias : {static_cast<void*>(a.bytes()), static_cast<void*>(b.bytes()), static_cast<void*>(aux.bytes()),
                            static_cast<void*>(bias.bytes())}) {
            GemmCall reads_d = g;
            reads_d.d.data = alias;
            QVERIFY(!gemm_can_be_timed(reads_d));
        }
        GemmCall overwrites_input = g;
        overwrites_input.epilogue.bias_grad.data = a.bytes();
        QVERIFY(!gemm_can_be_timed(overwrites_input));
    }

    void observedDataIsCheckedLineByLine_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("fields") << "BIAS,bfloat16,0,0\n" << "line 1 \"BIAS,bfloat16,0,0\": expected 5 fields";
        QTest::newRow("epilogue") << "# c\nGELU,bfloat16,0,0,no" << "line 2 \"GELU,bfloat16,0,0,no\": unknown epilogue";
        QTest::newRow("type") << "BIAS,fp16,0,0,no" << "unknown operand type";
        QTest::newRow("count") << "BIAS,bfloat16,-1,0,no" << "a count is not a whole number from 0 to 16";
        QTest::newRow("flag") << "BIAS,bfloat16,0,0,maybe" << "memsets_inferred is yes or no";
        QTest::newRow("twice") << "BIAS,bfloat16,0,0,no\r\nBIAS,bfloat16,1,0,no" << "line 2 \"BIAS,bfloat16,1,0,no\": a second entry";
    }
    void observedDataIsCheckedLineByLine() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        try {
            detail::parse_observed_gemm_work(text.toStdString());
            QFAIL("accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
        QCOMPARE(detail::parse_observed_gemm_work("# only comments\n\nnone,float32,0,0,no\n").size(), std::size_t{1});
    }

    // The CPU training tests' shape: checked on sampled elements, timed for the log.
    void trainingShape() {
        std::mt19937 rng(3);
        const std::size_t m = 3072, n = 2304, k = 768;
        Operand a = make_operand(DType::BFloat16, m, k, false, ScaleMode::Tensor, rng);
        Operand b = make_operand(DType::BFloat16, n, k, true, ScaleMode::Tensor, rng);
        Buffer d(m * n * 2);
        GemmCall g;
        g.a = a.view();
        g.b = b.view();
        g.options.b_transposed = true;
        g.d = tensor(d.bytes(), DType::BFloat16, m, n);
        const auto start = std::chrono::steady_clock::now();
        calls::host_gemm(g);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        qInfo("host GEMM %zux%zux%zu bfloat16: %.3f s, %.2f GFLOP/s", m, n, k, seconds, 2e-9 * m * n * k / seconds);
        for (std::size_t sample = 0; sample < 200; ++sample) {
            const std::size_t i = sample * 7919 % m, j = sample * 104729 % n;
            double want = 0.0, magnitude = 0.0;
            for (std::size_t p = 0; p < k; ++p) {
                want += a.value[i * k + p] * b.value[j * k + p];
                magnitude += std::fabs(a.value[i * k + p] * b.value[j * k + p]);
            }
            const double got = get(d.bytes(), DType::BFloat16, i * n + j);
            QVERIFY2(std::fabs(got - want) <= std::ldexp(double(k), -22) * magnitude + std::ldexp(std::fabs(want), -7),
                     qPrintable(QStringLiteral("d[%1, %2] = %3, reference %4").arg(i).arg(j).arg(got).arg(want)));
        }
    }
};

QTEST_GUILESS_MAIN(TestHostGemm)
#include "tst_host_gemm.moc"
