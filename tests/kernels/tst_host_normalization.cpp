// The host LayerNorm, RMSNorm and GELU (tewb_kernels/host/normalization.h, activation.h) against references
// written here: double-precision LayerNorm, RMSNorm (and finite differences of it) and tanh-form GELU within the tolerances the headers state, the FP8 output
// and amax bit for bit against float_to_fp8 of the op's own float32 result, the two-stage column sums bit for
// bit against the CUDA kernels' order re-derived here, argument refusals and launch counts.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "host_tensor.h"
#include "launch_checks.h"
#include "norm_activation_calls.h"

using tewb::kernels::input;
using tewb::kernels::Tensor;
using tewb::kernels::DType;
using tewb::kernels::detail::Fp8Output;
using tewb::kernels::Fp8Type;
using tewb::kernels::KernelError;
namespace host = tewb::kernels::host;
namespace detail = tewb::kernels::detail;
namespace calls = tewb::test::calls;

using tewb::test::expect_refusal;
using tewb::test::launches_of;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

using Buffer = tewb::test::HostTensor;

Buffer random_tensor(DType dtype, std::size_t count, std::mt19937& rng, float center, float spread, std::size_t shift = 0) {
    Buffer t(dtype, count, shift);
    std::normal_distribution<float> normal(center, spread);
    for (std::size_t i = 0; i < count; ++i) t.set(i, normal(rng));
    return t;
}

Buffer from_values(DType dtype, const std::vector<float>& v) {
    Buffer t(dtype, v.size());
    for (std::size_t i = 0; i < v.size(); ++i) t.set(i, v[i]);
    return t;
}

std::string describe(const char* what, std::size_t rows, std::size_t cols, std::size_t i, double got, double want, double tol) {
    return std::string(what) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " i=" + std::to_string(i) +
           ": got " + std::to_string(got) + ", want " + std::to_string(want) + " (tolerance " + std::to_string(tol) + ")";
}

bool same_bits(float a, float b) {
    return detail::float_bits(a) == detail::float_bits(b);
}

// Half a bfloat16 ulp of v, relative: what a bfloat16 store adds to a float32 result.
double store_error(DType dtype, double v) {
    return dtype == DType::BFloat16 ? std::ldexp(std::fabs(v), -8) : 0.0;
}

// ---- LayerNorm references -------------------------------------------------------------------------------

struct LayerNormReference {
    std::vector<double> y, mean, rstd, tolerance;
};

LayerNormReference layer_norm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                        const std::vector<float>& beta, std::size_t rows, std::size_t hidden, float eps) {
    LayerNormReference ref{std::vector<double>(rows * hidden), std::vector<double>(rows), std::vector<double>(rows),
                           std::vector<double>(rows * hidden)};
    for (std::size_t r = 0; r < rows; ++r) {
        double sum = 0.0, magnitude = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) {
            sum += x[r * hidden + c];
            magnitude += std::fabs(x[r * hidden + c]);
        }
        const double mean = sum / static_cast<double>(hidden);
        double squares = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) squares += (x[r * hidden + c] - mean) * (x[r * hidden + c] - mean);
        const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + static_cast<double>(eps));
        ref.mean[r] = mean;
        ref.rstd[r] = rstd;
        const double mean_magnitude = magnitude / static_cast<double>(hidden);
        for (std::size_t c = 0; c < hidden; ++c) {
            const double xhat = (x[r * hidden + c] - mean) * rstd;
            ref.y[r * hidden + c] = xhat * gamma[c] + beta[c];
            // The header's bound: 2^-21 (|gamma| (1 + |xhat| + rstd mean|x|) + |beta|).
            ref.tolerance[r * hidden + c] =
                std::ldexp(std::fabs(gamma[c]) * (1.0 + std::fabs(xhat) + rstd * mean_magnitude) + std::fabs(beta[c]), -21);
        }
    }
    return ref;
}

struct LayerNormBackwardReference {
    std::vector<double> dx, dx_tolerance, dgamma, dbeta, dgamma_magnitude, dbeta_magnitude;
};

// From the mean and rstd the forward saved, as the backward takes them.
LayerNormBackwardReference layer_norm_backward_reference(const std::vector<float>& dy, const std::vector<float>& x,
                                                         const std::vector<float>& mean, const std::vector<float>& rstd,
                                                         const std::vector<float>& gamma, std::size_t rows, std::size_t hidden) {
    LayerNormBackwardReference ref{std::vector<double>(rows * hidden), std::vector<double>(rows * hidden),
                                   std::vector<double>(hidden, 0.0),   std::vector<double>(hidden, 0.0),
                                   std::vector<double>(hidden, 0.0),   std::vector<double>(hidden, 0.0)};
    std::vector<double> g(hidden), xhat(hidden);
    for (std::size_t r = 0; r < rows; ++r) {
        double sum_g = 0.0, sum_gx = 0.0, abs_g = 0.0, abs_gx = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) {
            const std::size_t i = r * hidden + c;
            g[c] = static_cast<double>(dy[i]) * gamma[c];
            xhat[c] = (static_cast<double>(x[i]) - mean[r]) * rstd[r];
            sum_g += g[c];
            sum_gx += g[c] * xhat[c];
            abs_g += std::fabs(g[c]);
            abs_gx += std::fabs(g[c] * xhat[c]);
            ref.dgamma[c] += dy[i] * xhat[c];
            ref.dbeta[c] += dy[i];
            ref.dgamma_magnitude[c] += std::fabs(dy[i] * xhat[c]);
            ref.dbeta_magnitude[c] += std::fabs(dy[i]);
        }
        const double n = static_cast<double>(hidden);
        for (std::size_t c = 0; c < hidden; ++c) {
            const std::size_t i = r * hidden + c;
            ref.dx[i] = rstd[r] * (g[c] - sum_g / n - xhat[c] * sum_gx / n);
            ref.dx_tolerance[i] = std::ldexp(rstd[r] * (std::fabs(g[c]) + abs_g / n + std::fabs(xhat[c]) * abs_gx / n), -19);
        }
    }
    return ref;
}

// The CUDA backward's dgamma/dbeta order (normalization.cu, layer_norm_fast.cuh), re-derived: partial rows, then
// the final kernel's 8 warps. `fast` with `groups` rows per block; dgamma's term as each kernel writes it.
void layer_norm_dparams_in_kernel_order(const std::vector<float>& dy, const std::vector<float>& x, const std::vector<float>& mean,
                                        const std::vector<float>& rstd, std::size_t rows, std::size_t hidden, bool fast,
                                        std::size_t groups, std::vector<float>& dgamma, std::vector<float>& dbeta) {
    const std::size_t partials = std::min<std::size_t>(std::max<std::size_t>(rows, 1), 256);
    std::vector<std::vector<float>> pg, pb;
    if (fast) {
        const std::size_t blocks = std::min((rows + groups - 1) / groups, partials);
        for (std::size_t block = 0; block < blocks; ++block) {
            std::vector<float> sum_g(hidden, 0.0f), sum_b(hidden, 0.0f);
            for (std::size_t group = 0; group < groups; ++group) {
                std::vector<float> acc_g(hidden, 0.0f), acc_b(hidden, 0.0f);
                for (std::size_t r = block * groups + group; r < rows; r += blocks * groups) {
                    for (std::size_t c = 0; c < hidden; ++c) {
                        const std::size_t i = r * hidden + c;
                        const float xhat = (x[i] - mean[r]) * rstd[r];
                        acc_g[c] += dy[i] * xhat;
                        acc_b[c] += dy[i];
                    }
                }
                for (std::size_t c = 0; c < hidden; ++c) {
                    sum_g[c] = groups == 1 ? acc_g[c] : sum_g[c] + acc_g[c];
                    sum_b[c] = groups == 1 ? acc_b[c] : sum_b[c] + acc_b[c];
                }
            }
            pg.push_back(sum_g);
            pb.push_back(sum_b);
        }
    } else {
        const std::size_t per_chunk = (rows + partials - 1) / partials;
        for (std::size_t k = 0; k < partials; ++k) {
            std::vector<float> acc_g(hidden, 0.0f), acc_b(hidden, 0.0f);
            for (std::size_t r = k * per_chunk; r < rows && r < (k + 1) * per_chunk; ++r) {
                for (std::size_t c = 0; c < hidden; ++c) {
                    const std::size_t i = r * hidden + c;
                    acc_g[c] += dy[i] * (x[i] - mean[r]) * rstd[r];
                    acc_b[c] += dy[i];
                }
            }
            pg.push_back(acc_g);
            pb.push_back(acc_b);
        }
    }
    dgamma.assign(hidden, 0.0f);
    dbeta.assign(hidden, 0.0f);
    for (std::size_t c = 0; c < hidden; ++c) {
        float warp_g[8] = {}, warp_b[8] = {};
        for (std::size_t w = 0; w < 8; ++w) {
            for (std::size_t k = w; k < pg.size(); k += 8) {
                warp_g[w] += pg[k][c];
                warp_b[w] += pb[k][c];
            }
        }
        for (std::size_t w = 0; w < 8; ++w) {
            dgamma[c] += warp_g[w];
            dbeta[c] += warp_b[w];
        }
    }
}

// ---- GELU references ------------------------------------------------------------------------------------

double gelu_exact(double x) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_derivative_exact(double x) {
    const double k = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(k * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// The headers' bounds.
double gelu_tolerance(double x, double y) {
    return std::ldexp(std::fabs(x) + std::fabs(y), -22) + std::ldexp(1.0, -126);
}

double gelu_backward_tolerance(double dy, double x) {
    return std::ldexp(std::fabs(dy) * (1.0 + std::fabs(x) * (1.0 + 0.134 * x * x)), -22) + std::ldexp(1.0, -126);
}

// Every bfloat16 value, then normal samples at several scales: the GELU inputs.
std::vector<float> gelu_inputs(std::size_t extra, std::mt19937& rng) {
    std::vector<float> v;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = detail::bf16_to_float(static_cast<std::uint16_t>(h));
        if (!std::isnan(f)) v.push_back(f);
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < extra; ++i) v.push_back(normal(rng) * std::ldexp(1.0f, static_cast<int>(i % 12) - 4));
    return v;
}

bool agrees(float got, double want, double tolerance) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return static_cast<double>(got) == want;
    return std::fabs(static_cast<double>(got) - want) <= tolerance;
}

// ---- RMSNorm references ---------------------------------------------------------------------------------

struct RmsNormReference {
    std::vector<double> y, rstd, tolerance;
};

RmsNormReference rms_norm_reference(const std::vector<float>& x, const std::vector<float>& gamma, std::size_t rows,
                                    std::size_t hidden, float eps) {
    RmsNormReference ref{std::vector<double>(rows * hidden), std::vector<double>(rows), std::vector<double>(rows * hidden)};
    for (std::size_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) squares += static_cast<double>(x[r * hidden + c]) * x[r * hidden + c];
        const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + static_cast<double>(eps));
        ref.rstd[r] = rstd;
        for (std::size_t c = 0; c < hidden; ++c) {
            const double xhat = x[r * hidden + c] * rstd;
            ref.y[r * hidden + c] = xhat * gamma[c];
            // The header's bound: 2^-21 |gamma| (1 + |xhat|).
            ref.tolerance[r * hidden + c] = std::ldexp(std::fabs(gamma[c]) * (1.0 + std::fabs(xhat)), -21);
        }
    }
    return ref;
}

struct RmsNormBackwardReference {
    std::vector<double> dx, dx_tolerance, dgamma, dgamma_magnitude;
};

// The brief's formula from the saved rstd: dx = rstd (g - x rstd^2 mean(g x)), g = dy gamma; dgamma = sum dy x rstd.
RmsNormBackwardReference rms_norm_backward_reference(const std::vector<float>& dy, const std::vector<float>& x,
                                                     const std::vector<float>& rstd, const std::vector<float>& gamma,
                                                     std::size_t rows, std::size_t hidden) {
    RmsNormBackwardReference ref{std::vector<double>(rows * hidden), std::vector<double>(rows * hidden),
                                 std::vector<double>(hidden, 0.0), std::vector<double>(hidden, 0.0)};
    std::vector<double> g(hidden);
    for (std::size_t r = 0; r < rows; ++r) {
        const double n = static_cast<double>(hidden);
        const double rs = rstd[r];
        double sum_gx = 0.0, abs_gxhat = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) {
            const std::size_t i = r * hidden + c;
            g[c] = static_cast<double>(dy[i]) * gamma[c];
            sum_gx += g[c] * x[i];
            abs_gxhat += std::fabs(g[c] * x[i] * rs);
            ref.dgamma[c] += static_cast<double>(dy[i]) * x[i] * rs;
            ref.dgamma_magnitude[c] += std::fabs(static_cast<double>(dy[i]) * x[i] * rs);
        }
        for (std::size_t c = 0; c < hidden; ++c) {
            const std::size_t i = r * hidden + c;
            ref.dx[i] = rs * (g[c] - x[i] * rs * rs * sum_gx / n);
            // The header's bound: 2^-19 rstd (|g| + |xhat| mean|g xhat|).
            ref.dx_tolerance[i] = std::ldexp(rs * (std::fabs(g[c]) + std::fabs(x[i] * rs) * abs_gxhat / n), -19);
        }
    }
    return ref;
}

// The CUDA backward's dgamma order (rms_norm.cu), re-derived: chunk k of min(rows, 256) sums its rows in order
// with fused multiply-adds, then each column adds the chunks in order from 0.
std::vector<float> rms_norm_dgamma_in_kernel_order(const std::vector<float>& dy, const std::vector<float>& x,
                                                   const std::vector<float>& rstd, std::size_t rows, std::size_t hidden) {
    const std::size_t chunks = std::min<std::size_t>(std::max<std::size_t>(rows, 1), 256);
    const std::size_t per_chunk = (rows + chunks - 1) / chunks;
    std::vector<float> total(hidden, 0.0f);
    for (std::size_t c = 0; c < hidden; ++c) {
        for (std::size_t k = 0; k < chunks; ++k) {
            float sum = 0.0f;
            for (std::size_t r = k * per_chunk; r < rows && r < (k + 1) * per_chunk; ++r) {
                sum = std::fma(dy[r * hidden + c] * x[r * hidden + c], rstd[r], sum);
            }
            total[c] += sum;
        }
    }
    return total;
}

// sum_i w_i * y_i of a double-precision RMSNorm: the loss whose gradient the backward computes for dy = w.
double rms_norm_loss(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& w,
                     std::size_t rows, std::size_t hidden, double eps) {
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (std::size_t c = 0; c < hidden; ++c) squares += x[r * hidden + c] * x[r * hidden + c];
        const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + eps);
        for (std::size_t c = 0; c < hidden; ++c) loss += w[r * hidden + c] * x[r * hidden + c] * rstd * gamma[c];
    }
    return loss;
}

}  // namespace

class TestHostNormalization : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // ---- LayerNorm ----

    void layerNormForwardMatchesDouble() {
        std::mt19937 rng(17);
        for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType param_dtype : {DType::Float32, DType::BFloat16}) {
                for (const DType out_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                        for (const std::size_t rows : {1u, 3u, 17u}) {
                            check_forward(rng, x_dtype, param_dtype, out_dtype, rows, hidden, 0);
                            check_forward(rng, x_dtype, param_dtype, out_dtype, rows, hidden, 1);  // misaligned: plain order
                            if (QTest::currentTestFailed()) return;
                        }
                    }
                }
            }
        }
        qInfo("layer_norm forward: worst float32 y error %.3f of the stated bound", worst_y_);
    }

    void layerNormForwardHardRows() {
        // A constant row (variance 0: rstd = 1/sqrt(eps)), a row far from 0 (cancellation in x - mean), and large values.
        const std::size_t hidden = 768;
        std::mt19937 rng(5);
        std::vector<float> x(3 * hidden);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t c = 0; c < hidden; ++c) {
            x[c] = 0.1f;
            x[hidden + c] = 1000.0f + normal(rng) * 0.01f;
            x[2 * hidden + c] = normal(rng) * 3.0e4f;
        }
        Buffer xt = from_values(DType::Float32, x);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.2f);
        Buffer beta = random_tensor(DType::Float32, hidden, rng, 0.0f, 0.2f);
        Buffer out(DType::Float32, x.size());
        std::vector<float> mean(3), rstd(3);
        calls::layer_norm_forward(input(xt.data(), DType::Float32, 3, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                 input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(out.data(), DType::Float32, 3, hidden),
                                 nullptr, mean.data(), rstd.data());
        const LayerNormReference ref = layer_norm_reference(x, gamma.values(), beta.values(), 3, hidden, 1e-5f);
        for (std::size_t i = 0; i < x.size(); ++i) {
            QVERIFY2(agrees(out.at(i), ref.y[i], ref.tolerance[i]),
                     describe("hard rows y", 3, hidden, i, out.at(i), ref.y[i], ref.tolerance[i]).c_str());
        }
        QVERIFY(std::fabs(rstd[0] - 1.0 / std::sqrt(1e-5)) < 1e-3);
    }

    void layerNormFp8OutputIsTheCastOfY() {
        std::mt19937 rng(3);
        for (const Fp8Type type : {Fp8Type::E4M3, Fp8Type::E5M2}) {
            for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                const std::size_t rows = 17;
                Buffer x = random_tensor(DType::BFloat16, rows * hidden, rng, 0.5f, 2.0f);
                Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.5f);
                Buffer beta = random_tensor(DType::Float32, hidden, rng, 0.0f, 0.5f);
                const float scale = type == Fp8Type::E4M3 ? 1000.0f : 1.0e5f;  // big enough that some values saturate
                std::vector<std::uint8_t> data(rows * hidden), transposed(rows * hidden);
                float amax = 0.0f;
                const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, type};
                Buffer y32(DType::Float32, rows * hidden), y16(DType::BFloat16, rows * hidden);
                std::vector<float> mean(rows), rstd(rows);
                // out in float32 beside the FP8 output: each byte is the cast of the float y written beside it.
                QCOMPARE(launches_of([&] {
                             calls::layer_norm_forward(input(x.data(), DType::BFloat16, rows, hidden),
                                                      input(gamma.data(), DType::Float32, 1, hidden),
                                                      input(beta.data(), DType::Float32, 1, hidden), 1e-5f,
                                                      input(y32.data(), DType::Float32, rows, hidden), &fp8, mean.data(), rstd.data());
                         }),
                         std::uint64_t{1});  // the transposed copy from the same launch
                std::uint32_t max_bits = 0;
                std::size_t saturated = 0;
                for (std::size_t i = 0; i < rows * hidden; ++i) {
                    const float y = y32.at(i);
                    QCOMPARE(data[i], detail::float_to_fp8(y * scale, type));
                    QCOMPARE(transposed[(i % hidden) * rows + i / hidden], data[i]);
                    max_bits = std::max(max_bits, detail::float_bits(y) & 0x7fffffffu);
                    saturated += (data[i] & 0x7fu) == (type == Fp8Type::E4M3 ? 0x7eu : 0x7bu) ? 1 : 0;
                }
                QCOMPARE(detail::float_bits(amax), max_bits);
                if (hidden >= 7) QVERIFY(saturated > 0);

                // out in bfloat16: the bytes are still the cast of the float32 y, not of its bfloat16 rounding.
                std::vector<std::uint8_t> data16(rows * hidden);
                float amax16 = 0.0f;
                const Fp8Output fp8_16{data16.data(), nullptr, &scale, &amax16, type};
                QCOMPARE(launches_of([&] {
                             calls::layer_norm_forward(
                                 input(x.data(), DType::BFloat16, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                 input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(y16.data(), DType::BFloat16, rows, hidden),
                                 &fp8_16, mean.data(), rstd.data());
                         }),
                         std::uint64_t{1});
                std::size_t differs_from_rounded = 0;
                for (std::size_t i = 0; i < rows * hidden; ++i) {
                    QCOMPARE(data16[i], data[i]);
                    QCOMPARE(detail::float_bits(y16.at(i)),
                             detail::float_bits(detail::bf16_to_float(detail::float_to_bf16(y32.at(i)))));
                    differs_from_rounded += detail::float_to_fp8(y16.at(i) * scale, type) != data16[i] ? 1 : 0;
                }
                QCOMPARE(amax16, amax);
                if (hidden >= 129) QVERIFY2(differs_from_rounded > 0, "the data cannot tell y from its bfloat16 rounding");
            }
        }
    }

    void layerNormFp8TransposedInOneLaunch() {
        // The FP8 transposed copy comes from the forward's own launch, for the fast kernel (aligned rows in
        // whole vectors, hidden <= 4096) and the plain one (odd hidden, misaligned pointers, and bfloat16 rows
        // of 4352 and 8192, which take the plain kernel's order when the transposed copy is asked for:
        // normalization/layer_norm_rule.h), with rows that fill no band of 8, 32 or 64 evenly.
        struct Case {
            DType x_dtype;
            std::size_t hidden;
            std::size_t shift;
        };
        const Case cases[] = {{DType::Float32, 768, 0},   {DType::BFloat16, 768, 0},  {DType::Float32, 4096, 0},
                              {DType::BFloat16, 4096, 0}, {DType::BFloat16, 4352, 0}, {DType::BFloat16, 8192, 0},
                              {DType::Float32, 7, 0},     {DType::BFloat16, 129, 0},  {DType::Float32, 768, 1}};
        std::mt19937 rng(43);
        for (const Case& k : cases) {
            for (const std::size_t rows : {1u, 9u, 70u}) {
                const std::size_t n = rows * k.hidden;
                Buffer x = random_tensor(k.x_dtype, n, rng, 0.5f, 2.0f, k.shift);
                Buffer gamma = random_tensor(DType::Float32, k.hidden, rng, 1.0f, 0.5f);
                Buffer beta = random_tensor(DType::Float32, k.hidden, rng, 0.0f, 0.5f);
                const float scale = 64.0f;
                std::vector<std::uint8_t> data(n), transposed(n, 0xaa);
                float amax = 0.0f;
                const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, Fp8Type::E4M3};
                Buffer y(DType::Float32, n, k.shift);
                std::vector<float> mean(rows), rstd(rows);
                const std::string where = std::string(tewb::kernels::to_string(k.x_dtype)) + " hidden " + std::to_string(k.hidden) +
                                          " rows " + std::to_string(rows) + (k.shift != 0 ? " misaligned" : "");
                QVERIFY2(launches_of([&] {
                             calls::layer_norm_forward({x.data(), k.x_dtype, rows, k.hidden},
                                                      input(gamma.data(), DType::Float32, 1, k.hidden),
                                                      input(beta.data(), DType::Float32, 1, k.hidden), 1e-5f,
                                                      input(y.data(), DType::Float32, rows, k.hidden), &fp8, mean.data(), rstd.data());
                         }) == 1,
                         where.c_str());
                const LayerNormReference ref = layer_norm_reference(x.values(), gamma.values(), beta.values(), rows, k.hidden, 1e-5f);
                std::uint32_t max_bits = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    if (!agrees(y.at(i), ref.y[i], ref.tolerance[i])) {
                        QFAIL(describe(("y " + where).c_str(), rows, k.hidden, i, y.at(i), ref.y[i], ref.tolerance[i]).c_str());
                    }
                    if (data[i] != detail::float_to_fp8(y.at(i) * scale, Fp8Type::E4M3) ||
                        transposed[(i % k.hidden) * rows + i / k.hidden] != data[i]) {
                        QFAIL(("FP8 data or its transposed copy " + where + " at " + std::to_string(i)).c_str());
                    }
                    max_bits = std::max(max_bits, detail::float_bits(y.at(i)) & 0x7fffffffu);
                }
                QCOMPARE(detail::float_bits(amax), max_bits);
                // mean and rstd as without the copy where the same kernel runs; 4352 and 8192 change kernels.
                std::vector<float> mean_plain(rows), rstd_plain(rows);
                Buffer y_plain(DType::Float32, n, k.shift);
                calls::layer_norm_forward({x.data(), k.x_dtype, rows, k.hidden}, input(gamma.data(), DType::Float32, 1, k.hidden),
                                         input(beta.data(), DType::Float32, 1, k.hidden), 1e-5f,
                                         input(y_plain.data(), DType::Float32, rows, k.hidden), nullptr, mean_plain.data(),
                                         rstd_plain.data());
                std::size_t differing = 0;
                for (std::size_t r = 0; r < rows; ++r) {
                    differing += same_bits(mean[r], mean_plain[r]) && same_bits(rstd[r], rstd_plain[r]) ? 0 : 1;
                    double magnitude = 0.0;
                    for (std::size_t c = 0; c < k.hidden; ++c) magnitude += std::fabs(x.at(r * k.hidden + c));
                    QVERIFY(std::fabs(mean[r] - ref.mean[r]) <= std::ldexp(magnitude / static_cast<double>(k.hidden), -21));
                    QVERIFY(std::fabs(rstd[r] - ref.rstd[r]) <= std::ldexp(ref.rstd[r], -21));
                }
                if (k.hidden <= 4096 || k.shift != 0) {
                    QVERIFY2(differing == 0, where.c_str());
                } else if (rows == 70) {
                    QVERIFY2(differing > 0, ("the fast and plain orders agree on every row: " + where).c_str());
                }
            }
        }
    }

    void layerNormAmaxCombinesAndNaNWins() {
        const std::size_t rows = 3, hidden = 129;
        std::mt19937 rng(11);
        Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.1f);
        Buffer beta(DType::Float32, hidden);
        const float scale = 1.0f;
        std::vector<std::uint8_t> data(rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        const auto run = [&](float start) {
            float amax = start;
            const Fp8Output fp8{data.data(), nullptr, &scale, &amax, Fp8Type::E4M3};
            calls::layer_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                     input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(nullptr, DType::Float32, rows, hidden),
                                     &fp8, mean.data(), rstd.data());
            return amax;
        };
        const float fresh = run(0.0f);
        QVERIFY(fresh > 1.0f && fresh < 10.0f);
        QCOMPARE(run(1000.0f), 1000.0f);  // a larger amax already there is kept
        QCOMPARE(run(0.5f), fresh);
        QVERIFY(std::isnan(run(kNaN)));

        // All-zero y (gamma = beta = 0): amax stays 0, every byte 0.
        Buffer zero(DType::Float32, hidden);
        float amax = 0.0f;
        const Fp8Output fp8{data.data(), nullptr, &scale, &amax, Fp8Type::E4M3};
        calls::layer_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(zero.data(), DType::Float32, 1, hidden),
                                 input(zero.data(), DType::Float32, 1, hidden), 1e-5f, input(nullptr, DType::Float32, rows, hidden), &fp8,
                                 mean.data(), rstd.data());
        QCOMPARE(detail::float_bits(amax), 0u);
        QVERIFY(std::all_of(data.begin(), data.end(), [](std::uint8_t b) { return b == 0; }));
    }

    void layerNormNaNAndInfRows() {
        const std::size_t rows = 4, hidden = 7;
        std::mt19937 rng(13);
        Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
        x.set(1 * hidden + 3, kNaN);
        x.set(2 * hidden + 0, kInf);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.1f);
        Buffer beta = random_tensor(DType::Float32, hidden, rng, 0.0f, 0.1f);
        Buffer out(DType::BFloat16, rows * hidden);
        std::vector<std::uint8_t> data(rows * hidden);
        const float scale = 1.0f;
        float amax = 0.0f;
        const Fp8Output fp8{data.data(), nullptr, &scale, &amax, Fp8Type::E5M2};
        std::vector<float> mean(rows), rstd(rows);
        calls::layer_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                 input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(out.data(), DType::BFloat16, rows, hidden),
                                 &fp8, mean.data(), rstd.data());
        for (std::size_t c = 0; c < hidden; ++c) {
            for (const std::size_t r : {1u, 2u}) {  // NaN, and inf (inf - inf): the whole row NaN
                QVERIFY(std::isnan(out.at(r * hidden + c)));
                QCOMPARE(data[r * hidden + c], std::uint8_t{0x7f});
            }
            QVERIFY(std::isfinite(out.at(c)) && std::isfinite(out.at(3 * hidden + c)));
        }
        QVERIFY(std::isnan(mean[1]) && std::isnan(rstd[1]));
        QCOMPARE(mean[2], kInf);  // inf / 7; then inf - inf in the variance
        QVERIFY(std::isnan(rstd[2]));
        QVERIFY(std::isfinite(mean[0]) && std::isfinite(mean[3]) && std::isfinite(rstd[0]) && std::isfinite(rstd[3]));
        QVERIFY(std::isnan(amax));
    }

    void layerNormBackwardMatchesDouble() {
        std::mt19937 rng(29);
        for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType dy_dtype : {DType::Float32, DType::BFloat16}) {
                for (const DType param_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                        for (const std::size_t rows : {1u, 3u, 17u, 300u}) {
                            if (rows == 300 && hidden == 768 && param_dtype == DType::BFloat16) continue;  // keep it quick
                            check_backward(rng, x_dtype, dy_dtype, param_dtype, rows, hidden, 0);
                            check_backward(rng, x_dtype, dy_dtype, param_dtype, rows, hidden, 1);
                            if (QTest::currentTestFailed()) return;
                        }
                    }
                }
            }
        }
        qInfo("layer_norm backward: worst float32 dx error %.3f, dgamma/dbeta %.3f of the stated bounds", worst_dx_,
              worst_dparams_);
    }

    void layerNormWorkspaceBytes() {
        QCOMPARE(tewb::kernels::layer_norm_backward_workspace_bytes(0, 768), std::size_t{2 * 1 * 768 * 4});
        QCOMPARE(tewb::kernels::layer_norm_backward_workspace_bytes(17, 7), std::size_t{2 * 17 * 7 * 4});
        QCOMPARE(tewb::kernels::layer_norm_backward_workspace_bytes(256, 129), std::size_t{2 * 256 * 129 * 4});
        QCOMPARE(tewb::kernels::layer_norm_backward_workspace_bytes(3072, 768), std::size_t{2 * 256 * 768 * 4});
    }

    // The training shape takes the fast kernel for float32 and bfloat16 x: dx, the partial rows and their sums
    // in one launch (the last blocks to arrive finish dgamma and dbeta), bit for bit the separate final
    // kernel's order; the workspace's first 8 partial rows are left holding the class sums, whose sum in
    // order is dgamma / dbeta.
    void layerNormBackwardIsOneLaunchAtTrainingSize_data() {
        QTest::addColumn<int>("x_dtype");
        QTest::newRow("float32 x") << int(DType::Float32);
        QTest::newRow("bfloat16 x") << int(DType::BFloat16);
    }
    void layerNormBackwardIsOneLaunchAtTrainingSize() {
        QFETCH(int, x_dtype);
        const auto type = static_cast<DType>(x_dtype);
        const std::size_t rows = 3072, hidden = 768;
        std::mt19937 rng(53);
        Buffer x = random_tensor(type, rows * hidden, rng, 0.5f, 1.5f);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.2f), beta(DType::Float32, hidden);
        Buffer y(type, rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        calls::layer_norm_forward(input(x.data(), type, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                 input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(y.data(), type, rows, hidden), nullptr,
                                 mean.data(), rstd.data());
        Buffer dy = random_tensor(DType::BFloat16, rows * hidden, rng, 0.0f, 1.0f);
        Buffer dx(type, rows * hidden), dgamma(DType::Float32, hidden), dbeta(DType::Float32, hidden);
        std::vector<float> workspace(tewb::kernels::layer_norm_backward_workspace_bytes(rows, hidden) / 4);
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_backward(input(dy.data(), DType::BFloat16, rows, hidden), input(x.data(), type, rows, hidden),
                                               mean.data(), rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                               input(dx.data(), type, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                               input(dbeta.data(), DType::Float32, 1, hidden),
                                               {workspace.data(), workspace.size() * 4});
                 }),
                 std::uint64_t{1});
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_backward_add(
                         input(dy.data(), DType::BFloat16, rows, hidden), input(x.data(), type, rows, hidden), mean.data(), rstd.data(),
                         input(gamma.data(), DType::Float32, 1, hidden), input(dx.data(), type, rows, hidden),
                         input(dx.data(), type, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                         input(dbeta.data(), DType::Float32, 1, hidden), {workspace.data(), workspace.size() * 4});
                 }),
                 std::uint64_t{1});
        // float32 x: 4 warps per row, one row per block; bfloat16 x: one warp per row, 4 rows per block.
        const std::size_t groups = type == DType::Float32 ? 1 : 4;
        std::vector<float> order_g, order_b;
        layer_norm_dparams_in_kernel_order(dy.values(), x.values(), mean, rstd, rows, hidden, true, groups, order_g, order_b);
        const std::size_t partials = 256;  // min(rows / groups, 256) blocks, each a partial row
        for (std::size_t c = 0; c < hidden; ++c) {
            QVERIFY2(same_bits(dgamma.at(c), order_g[c]),
                     describe("dgamma order", rows, hidden, c, dgamma.at(c), order_g[c], 0).c_str());
            QVERIFY2(same_bits(dbeta.at(c), order_b[c]),
                     describe("dbeta order", rows, hidden, c, dbeta.at(c), order_b[c], 0).c_str());
            float class_g = 0.0f, class_b = 0.0f;
            for (std::size_t w = 0; w < 8; ++w) {
                class_g += workspace[w * hidden + c];
                class_b += workspace[(partials + w) * hidden + c];
            }
            QVERIFY(same_bits(class_g, dgamma.at(c)) && same_bits(class_b, dbeta.at(c)));
        }
    }

    // The plain kernels: dx, then the partial rows finished by the last block of each 256-column tile (two
    // launches); past 2048 tiles the sums take a third launch. The same bits either way.
    void layerNormBackwardPlainLaunchesFollowTheColumnTiles_data() {
        QTest::addColumn<int>("hidden");
        QTest::addColumn<int>("launches");
        QTest::newRow("67 columns: 1 tile") << 67 << 2;
        QTest::newRow("2048 tiles") << 2048 * 256 - 2 << 2;  // rows past 4096 floats: the plain kernels
        QTest::newRow("2049 tiles") << 2048 * 256 + 2 << 3;
    }
    void layerNormBackwardPlainLaunchesFollowTheColumnTiles() {
        QFETCH(int, hidden);
        QFETCH(int, launches);
        const auto h = static_cast<std::size_t>(hidden);
        const std::size_t rows = 3;
        std::mt19937 rng(59);
        Buffer x = random_tensor(DType::Float32, rows * h, rng, -1.0f, 2.0f);
        Buffer dy = random_tensor(DType::Float32, rows * h, rng, 0.1f, 1.0f);
        Buffer gamma = random_tensor(DType::Float32, h, rng, 1.0f, 0.5f), beta(DType::Float32, h);
        Buffer y(DType::Float32, rows * h);
        std::vector<float> mean(rows), rstd(rows);
        calls::layer_norm_forward(input(x.data(), DType::Float32, rows, h), input(gamma.data(), DType::Float32, 1, h),
                                 input(beta.data(), DType::Float32, 1, h), 1e-5f, input(y.data(), DType::Float32, rows, h), nullptr,
                                 mean.data(), rstd.data());
        Buffer dx(DType::Float32, rows * h), dgamma(DType::Float32, h), dbeta(DType::Float32, h);
        std::vector<float> workspace(tewb::kernels::layer_norm_backward_workspace_bytes(rows, h) / 4);
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_backward(input(dy.data(), DType::Float32, rows, h), input(x.data(), DType::Float32, rows, h),
                                               mean.data(), rstd.data(), input(gamma.data(), DType::Float32, 1, h),
                                               input(dx.data(), DType::Float32, rows, h), input(dgamma.data(), DType::Float32, 1, h),
                                               input(dbeta.data(), DType::Float32, 1, h), {workspace.data(), workspace.size() * 4});
                 }),
                 static_cast<std::uint64_t>(launches));
        std::vector<float> order_g, order_b;
        layer_norm_dparams_in_kernel_order(dy.values(), x.values(), mean, rstd, rows, h, false, 1, order_g, order_b);
        for (std::size_t c = 0; c < h; ++c) {
            QVERIFY2(same_bits(dgamma.at(c), order_g[c]) && same_bits(dbeta.at(c), order_b[c]),
                     describe("dgamma order", rows, h, c, dgamma.at(c), order_g[c], 0).c_str());
        }
    }

    void layerNormRefusals() {
        const std::size_t rows = 3, hidden = 8;
        Buffer x(DType::Float32, rows * hidden), gamma(DType::Float32, hidden), beta(DType::Float32, hidden),
            out(DType::Float32, rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        const char* forward = "tewb::kernels::host::layer_norm_forward";
        const auto fwd = [&](const void* xp, DType x_dtype, std::size_t h, float eps, void* o, DType out_dtype,
                             const Fp8Output* fp8) {
            return [=, &gamma, &beta, &mean, &rstd] {
                calls::layer_norm_forward(input(xp, x_dtype, rows, h), input(gamma.data(), DType::Float32, 1, h),
                                         input(beta.data(), DType::Float32, 1, h), eps, input(o, out_dtype, rows, h), fp8, mean.data(),
                                         rstd.data());
            };
        };
        expect_refusal(fwd(nullptr, DType::Float32, hidden, 1e-5f, out.data(), DType::Float32, nullptr),
                       {forward, "x is a null pointer"});
        expect_refusal(
            fwd(static_cast<const char*>(x.data()) + 2, DType::Float32, hidden, 1e-5f, out.data(), DType::Float32, nullptr),
            {forward, "x is not 4-byte aligned"});
        expect_refusal(fwd(x.data(), DType::Float16, hidden, 1e-5f, out.data(), DType::Float32, nullptr),
                       {forward, "x has dtype float16", "allowed: float32, bfloat16"});
        expect_refusal(fwd(x.data(), DType::Float32, hidden, 1e-5f, out.data(), DType::Float16, nullptr),
                       {forward, "out has dtype float16"});
        expect_refusal(fwd(x.data(), DType::Float32, 0, 1e-5f, out.data(), DType::Float32, nullptr), {forward, "hidden = 0"});
        expect_refusal(fwd(x.data(), DType::Float32, hidden, 0.0f, out.data(), DType::Float32, nullptr), {forward, "eps = 0"});
        expect_refusal(fwd(x.data(), DType::Float32, hidden, kNaN, out.data(), DType::Float32, nullptr), {forward, "eps = nan"});
        expect_refusal(fwd(x.data(), DType::Float32, hidden, 1e-5f, nullptr, DType::Float32, nullptr), {forward, "no output"});
        std::vector<std::uint8_t> data(rows * hidden);
        const Fp8Output no_scale{data.data(), nullptr, nullptr, nullptr, Fp8Type::E4M3};
        expect_refusal(fwd(x.data(), DType::Float32, hidden, 1e-5f, nullptr, DType::Float32, &no_scale),
                       {forward, "fp8.scale is a null pointer"});
        const float scale = 1.0f;
        const Fp8Output aliased{data.data(), data.data(), &scale, nullptr, Fp8Type::E4M3};
        expect_refusal(fwd(x.data(), DType::Float32, hidden, 1e-5f, nullptr, DType::Float32, &aliased), {forward, "same buffer"});
        expect_refusal(
            [&] {
                calls::layer_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                         input(beta.data(), DType::Float32, 1, hidden), 1e-5f,
                                         input(out.data(), DType::Float32, rows, hidden), nullptr, nullptr, rstd.data());
            },
            {forward, "mean is a null pointer"});
        // rows = 0: nothing to do, nothing counted, pointers not looked at.
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_forward(input(nullptr, DType::Float32, 0, hidden), input(nullptr, DType::Float32, 1, hidden),
                                              input(nullptr, DType::Float32, 1, hidden), 1e-5f,
                                              input(out.data(), DType::Float32, 0, hidden), nullptr, nullptr, nullptr);
                 }),
                 std::uint64_t{0});

        const char* backward = "tewb::kernels::host::layer_norm_backward";
        Buffer dy(DType::Float32, rows * hidden), dx(DType::Float32, rows * hidden), dgamma(DType::Float32, hidden),
            dbeta(DType::Float32, hidden);
        const std::size_t needed = tewb::kernels::layer_norm_backward_workspace_bytes(rows, hidden);
        std::vector<float> workspace(needed / 4);
        const auto bwd = [&](const void* dyp, DType dy_dtype, void* dxp, std::size_t bytes) {
            return [=, &x, &mean, &rstd, &gamma, &dgamma, &dbeta, &workspace] {
                calls::layer_norm_backward(input(dyp, dy_dtype, rows, hidden), input(x.data(), DType::Float32, rows, hidden), mean.data(),
                                          rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                          input(dxp, DType::Float32, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                          input(dbeta.data(), DType::Float32, 1, hidden), {workspace.data(), bytes});
            };
        };
        expect_refusal(bwd(nullptr, DType::Float32, dx.data(), needed), {backward, "dy is a null pointer"});
        expect_refusal(bwd(dy.data(), DType::Float16, dx.data(), needed), {backward, "dy has dtype float16"});
        expect_refusal(bwd(dy.data(), DType::Float32, nullptr, needed), {backward, "dx is a null pointer"});
        expect_refusal(bwd(dy.data(), DType::Float32, static_cast<char*>(dx.data()) + 1, needed),
                       {backward, "dx is not 4-byte aligned"});
        expect_refusal(
            bwd(dy.data(), DType::Float32, dx.data(), needed - 4),
            {backward, "workspace of " + std::to_string(needed - 4) + " bytes", "layer_norm_backward_workspace_bytes"});
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_backward(input(nullptr, DType::Float32, 0, hidden), input(nullptr, DType::Float32, 0, hidden),
                                               nullptr, nullptr, input(nullptr, DType::Float32, 1, hidden),
                                               input(nullptr, DType::Float32, 0, hidden), input(nullptr, DType::Float32, 1, hidden),
                                               input(nullptr, DType::Float32, 1, hidden), {nullptr, 0});
                 }),
                 std::uint64_t{0});
    }

    // ---- GELU ----

    void geluForwardMatchesDouble() {
        std::mt19937 rng(7);
        const std::vector<float> inputs = gelu_inputs(20000, rng);
        Buffer x = from_values(DType::Float32, inputs);
        Buffer y(DType::Float32, inputs.size());
        QCOMPARE(launches_of(
                     [&] { calls::gelu_forward(x.data(), DType::Float32, 1, inputs.size(), y.data(), DType::Float32, nullptr); }),
                 std::uint64_t{1});
        double worst = 0.0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const double want = gelu_exact(inputs[i]);
            const double tol = gelu_tolerance(inputs[i], want);
            if (std::isfinite(want)) worst = std::max(worst, std::fabs(y.at(i) - want) / tol);
            QVERIFY2(agrees(y.at(i), want, tol), describe("gelu", 1, inputs.size(), i, y.at(i), want, tol).c_str());
        }
        qInfo("gelu forward: worst error %.3f of the stated bound", worst);
        // The special values by the kernel's formula: NaN stays NaN, +inf stays +inf, -inf gives 0.5 * -inf * 0 = NaN.
        Buffer special = from_values(DType::Float32, {kNaN, kInf, -kInf, 0.0f, -0.0f, 1e30f, -1e30f});
        Buffer out(DType::Float32, 7);
        calls::gelu_forward(special.data(), DType::Float32, 7, 1, out.data(), DType::Float32, nullptr);
        QVERIFY(std::isnan(out.at(0)));
        QCOMPARE(out.at(1), kInf);
        QVERIFY(std::isnan(out.at(2)));
        QCOMPARE(out.at(3), 0.0f);
        QCOMPARE(out.at(5), 1e30f);
        QCOMPARE(out.at(6), 0.0f);
    }

    void geluForwardFp8AndBf16() {
        std::mt19937 rng(19);
        for (const Fp8Type type : {Fp8Type::E4M3, Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 7}, {17, 129}, {127, 255}}) {
                Buffer x = random_tensor(DType::BFloat16, rows * cols, rng, 0.0f, 3.0f);
                x.set(0, rows * cols > 1 ? 1.0e4f : 0.5f);
                Buffer x32 = from_values(DType::Float32, x.values());
                Buffer y32(DType::Float32, rows * cols), y16(DType::BFloat16, rows * cols);
                calls::gelu_forward(x32.data(), DType::Float32, rows, cols, y32.data(), DType::Float32, nullptr);
                const float scale = 100.0f;
                std::vector<std::uint8_t> data(rows * cols), transposed(rows * cols);
                float amax = 0.0f;
                const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, type};
                QCOMPARE(launches_of([&] {
                             calls::gelu_forward(x.data(), DType::BFloat16, rows, cols, y16.data(), DType::BFloat16, &fp8);
                         }),
                         std::uint64_t{1});  // the transposed copy from the same launch
                std::uint32_t max_bits = 0;
                for (std::size_t i = 0; i < rows * cols; ++i) {
                    QCOMPARE(data[i], detail::float_to_fp8(y32.at(i) * scale, type));
                    QCOMPARE(transposed[(i % cols) * rows + i / cols], data[i]);
                    QCOMPARE(detail::float_bits(y16.at(i)),
                             detail::float_bits(detail::bf16_to_float(detail::float_to_bf16(y32.at(i)))));
                    max_bits = std::max(max_bits, detail::float_bits(y32.at(i)) & 0x7fffffffu);
                }
                QCOMPARE(detail::float_bits(amax), max_bits);
                if (rows * cols > 1)
                    QCOMPARE(data[0], type == Fp8Type::E4M3 ? std::uint8_t{0x7e} : std::uint8_t{0x7b});  // saturated
            }
        }
        // NaN input: the byte is NaN (0x7f) and amax becomes NaN.
        Buffer x = from_values(DType::Float32, {1.0f, kNaN, -2.0f});
        std::vector<std::uint8_t> data(3);
        const float scale = 1.0f;
        float amax = 0.0f;
        const Fp8Output fp8{data.data(), nullptr, &scale, &amax, Fp8Type::E4M3};
        QCOMPARE(launches_of([&] { calls::gelu_forward(x.data(), DType::Float32, 1, 3, nullptr, DType::Float32, &fp8); }),
                 std::uint64_t{1});
        QCOMPARE(data[1], std::uint8_t{0x7f});
        QVERIFY(std::isnan(amax));
    }

    void geluForwardTransposedCopyInOneLaunch() {
        // The tiled kernel's edges: rows and cols not multiples of its 64 x 64 tile or of the 8-byte pieces,
        // float32 and bfloat16 x, with and without a high-precision output: one launch each.
        std::mt19937 rng(29);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 300}, {300, 1}, {65, 63}, {130, 100}, {64, 64}}) {
                for (const bool with_out : {false, true}) {
                    const std::size_t n = rows * cols;
                    Buffer x = random_tensor(dtype, n, rng, 0.0f, 3.0f);
                    Buffer y32(DType::Float32, n);
                    calls::gelu_forward(x.data(), dtype, rows, cols, y32.data(), DType::Float32, nullptr);
                    const float scale = 16.0f;
                    std::vector<std::uint8_t> data(n), transposed(n, 0xaa);
                    float amax = 0.0f;
                    const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, Fp8Type::E5M2};
                    Buffer out(dtype, n);
                    QCOMPARE(launches_of([&] {
                                 calls::gelu_forward(x.data(), dtype, rows, cols, with_out ? out.data() : nullptr, dtype, &fp8);
                             }),
                             std::uint64_t{1});
                    std::uint32_t max_bits = 0;
                    for (std::size_t i = 0; i < n; ++i) {
                        QCOMPARE(data[i], detail::float_to_fp8(y32.at(i) * scale, Fp8Type::E5M2));
                        QCOMPARE(transposed[(i % cols) * rows + i / cols], data[i]);
                        if (with_out) {
                            Buffer rounded(dtype, 1);
                            rounded.set(0, y32.at(i));
                            QVERIFY(same_bits(out.at(i), rounded.at(0)));
                        }
                        max_bits = std::max(max_bits, detail::float_bits(y32.at(i)) & 0x7fffffffu);
                    }
                    QCOMPARE(detail::float_bits(amax), max_bits);
                }
            }
        }
    }

    void geluBackwardDbiasLaunchesFollowTheColumnTiles() {
        // The chunk sums finish in the kernel's launch while the grid has at most 2048 column tiles of 64
        // (common/column_sum_rule.h), and take a launch of their own past that; the sums are the same.
        for (const auto& [cols, want] : {std::pair<std::size_t, std::uint64_t>{2048 * 64, 1}, {2048 * 64 + 1, 2}}) {
            const std::size_t rows = 2;
            std::mt19937 rng(53);
            Buffer x = random_tensor(DType::BFloat16, rows * cols, rng, 0.0f, 2.0f);
            Buffer dy = random_tensor(DType::BFloat16, rows * cols, rng, 0.0f, 1.0f);
            Buffer dx(DType::Float32, rows * cols), dbias(DType::Float32, cols);
            Buffer x32 = from_values(DType::Float32, x.values()), dy32 = from_values(DType::Float32, dy.values());
            calls::gelu_backward({dy32.data(), DType::Float32, rows, cols}, {x32.data(), DType::Float32, rows, cols},
                                {dx.data(), DType::Float32, rows, cols}, nullptr, {nullptr, DType::Float32, 1, cols},
                                {nullptr, 0});
            std::vector<float> workspace(tewb::kernels::gelu_backward_workspace_bytes(rows, cols) / 4);
            QCOMPARE(launches_of([&] {
                         calls::gelu_backward({dy.data(), DType::BFloat16, rows, cols}, {x.data(), DType::BFloat16, rows, cols},
                                             {nullptr, DType::BFloat16, rows, cols}, nullptr,
                                             {dbias.data(), DType::Float32, 1, cols}, {workspace.data(), workspace.size() * 4});
                     }),
                     want);
            for (std::size_t c = 0; c < cols; ++c) {
                const float sum = 0.0f + (dx.at(c) + dx.at(cols + c));  // one chunk of 2 rows, then the chunks from 0
                if (!same_bits(dbias.at(c), sum)) QFAIL(describe("dbias", rows, cols, c, dbias.at(c), sum, 0).c_str());
            }
        }
    }

    void geluBackwardMatchesDouble() {
        std::mt19937 rng(23);
        const std::vector<float> inputs = gelu_inputs(20000, rng);
        Buffer x = from_values(DType::Float32, inputs);
        Buffer dy = random_tensor(DType::Float32, inputs.size(), rng, 0.0f, 2.0f);
        Buffer dx(DType::Float32, inputs.size());
        QCOMPARE(launches_of([&] {
                     calls::gelu_backward({dy.data(), DType::Float32, 1, inputs.size()},
                                         {x.data(), DType::Float32, 1, inputs.size()},
                                         {dx.data(), DType::Float32, 1, inputs.size()}, nullptr,
                                         {nullptr, DType::Float32, 1, inputs.size()}, {nullptr, 0});
                 }),
                 std::uint64_t{1});
        double worst = 0.0;
        std::size_t overflowed = 0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            if (std::isinf(3.0f * 0.044715f * inputs[i] * inputs[i])) {
                // The kernel's formula: 0 * inf where 3 * 0.044715 x^2 overflows float32 (|x| > 5e19).
                QVERIFY(std::isnan(dx.at(i)));
                ++overflowed;
                continue;
            }
            const double want = dy.at(i) * gelu_derivative_exact(inputs[i]);
            const double tol = gelu_backward_tolerance(dy.at(i), inputs[i]);
            if (std::isfinite(want)) worst = std::max(worst, std::fabs(dx.at(i) - want) / tol);
            QVERIFY2(agrees(dx.at(i), want, tol), describe("gelu backward", 1, inputs.size(), i, dx.at(i), want, tol).c_str());
        }
        qInfo("gelu backward: worst error %.3f of the stated bound", worst);
        QVERIFY(overflowed > 0);
    }

    void geluBackwardDbiasInKernelOrder() {
        std::mt19937 rng(31);
        const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{1, 1},    {3, 7},    {17, 129}, {33, 257},
                                                                         {255, 17}, {3000, 3}, {40000, 3}};
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType dbias_dtype : {DType::Float32, DType::BFloat16}) {
                for (const auto& [rows, cols] : shapes) {
                    const std::size_t n = rows * cols;
                    Buffer x = random_tensor(dtype, n, rng, 0.0f, 2.0f);
                    Buffer dy = random_tensor(dtype, n, rng, 0.1f, 1.0f);
                    // The float32 dx the op computes, from a float32 run on the same values.
                    Buffer x32 = from_values(DType::Float32, x.values()), dy32 = from_values(DType::Float32, dy.values());
                    Buffer g32(DType::Float32, n);
                    calls::gelu_backward({dy32.data(), DType::Float32, rows, cols}, {x32.data(), DType::Float32, rows, cols},
                                        {g32.data(), DType::Float32, rows, cols}, nullptr, {nullptr, DType::Float32, 1, cols},
                                        {nullptr, 0});

                    const std::size_t bytes = tewb::kernels::gelu_backward_workspace_bytes(rows, cols);
                    // Chunks of about 32 rows, at most 1024 of them, each a multiple of 8 rows (so that the kernel's q_t
                    // pieces start on 8-row boundaries); the chunks that then have rows.
                    const std::size_t wanted = std::min<std::size_t>(std::max<std::size_t>((rows + 31) / 32, 1), 1024);
                    const std::size_t per_chunk = std::max<std::size_t>(8, ((rows + wanted - 1) / wanted + 7) / 8 * 8);
                    const std::size_t chunks = std::max<std::size_t>(1, (rows + per_chunk - 1) / per_chunk);
                    QCOMPARE(bytes, chunks * cols * sizeof(float));
                    std::vector<float> workspace(bytes / 4 + 1, kNaN);
                    Buffer dx(dtype, n), dbias(dbias_dtype, cols);
                    const float scale = 8.0f;
                    std::vector<std::uint8_t> data(n), transposed(n);
                    float amax = 0.0f;
                    const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, Fp8Type::E5M2};
                    QCOMPARE(launches_of([&] {
                                 calls::gelu_backward({dy.data(), dtype, rows, cols}, {x.data(), dtype, rows, cols},
                                                     {dx.data(), dtype, rows, cols}, &fp8, {dbias.data(), dbias_dtype, 1, cols},
                                                     {workspace.data(), bytes});
                             }),
                             std::uint64_t{1});  // the chunk sums finished in the same launch

                    // dbias: the chunks' rows each summed in row order, then the chunks in order.
                    std::vector<float> want(cols, 0.0f);
                    std::vector<double> exact(cols, 0.0), magnitude(cols, 0.0), term_error(cols, 0.0);
                    for (std::size_t k = 0; k < chunks; ++k) {
                        std::vector<float> part(cols, 0.0f);
                        for (std::size_t r = k * per_chunk; r < rows && r < (k + 1) * per_chunk; ++r) {
                            for (std::size_t c = 0; c < cols; ++c) part[c] += g32.at(r * cols + c);
                        }
                        for (std::size_t c = 0; c < cols; ++c) {
                            QVERIFY(same_bits(workspace[k * cols + c], part[c]));
                            want[c] += part[c];
                        }
                    }
                    std::uint32_t max_bits = 0;
                    for (std::size_t i = 0; i < n; ++i) {
                        const float g = g32.at(i);
                        QCOMPARE(
                            detail::float_bits(dx.at(i)),
                            detail::float_bits(dtype == DType::Float32 ? g : detail::bf16_to_float(detail::float_to_bf16(g))));
                        QCOMPARE(data[i], detail::float_to_fp8(g * scale, Fp8Type::E5M2));
                        QCOMPARE(transposed[(i % cols) * rows + i / cols], data[i]);
                        max_bits = std::max(max_bits, detail::float_bits(g) & 0x7fffffffu);
                        exact[i % cols] += dy.at(i) * gelu_derivative_exact(x.at(i));
                        magnitude[i % cols] += std::fabs(dy.at(i) * gelu_derivative_exact(x.at(i)));
                        term_error[i % cols] += gelu_backward_tolerance(dy.at(i), x.at(i));
                    }
                    QCOMPARE(detail::float_bits(amax), max_bits);
                    for (std::size_t c = 0; c < cols; ++c) {
                        const float stored =
                            dbias_dtype == DType::Float32 ? want[c] : detail::bf16_to_float(detail::float_to_bf16(want[c]));
                        QVERIFY2(same_bits(dbias.at(c), stored),
                                 describe("dbias order", rows, cols, c, dbias.at(c), stored, 0).c_str());
                        // And near the exact sum: the terms' own errors plus a float32 chain of per_chunk + chunks additions.
                        const double tol = std::ldexp(magnitude[c], -24) * static_cast<double>(per_chunk + chunks) +
                                           term_error[c] + store_error(dbias_dtype, exact[c]);
                        QVERIFY2(std::fabs(dbias.at(c) - exact[c]) <= tol,
                                 describe("dbias", rows, cols, c, dbias.at(c), exact[c], tol).c_str());
                    }
                }
            }
        }
    }

    void geluBackwardOutputsAreOptional() {
        const std::size_t rows = 5, cols = 9;
        std::mt19937 rng(37);
        Buffer x = random_tensor(DType::Float32, rows * cols, rng, 0.0f, 1.0f);
        Buffer dy = random_tensor(DType::Float32, rows * cols, rng, 0.0f, 1.0f);
        Buffer dx(DType::Float32, rows * cols);
        calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                            {dx.data(), DType::Float32, rows, cols}, nullptr, {nullptr, DType::Float32, 1, cols}, {nullptr, 0});
        // FP8 only, no transposed copy, no amax; dbias only.
        std::vector<std::uint8_t> data(rows * cols);
        const float scale = 2.0f;
        const Fp8Output fp8{data.data(), nullptr, &scale, nullptr, Fp8Type::E4M3};
        QCOMPARE(launches_of([&] {
                     calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                         {nullptr, DType::Float32, rows, cols}, &fp8, {nullptr, DType::Float32, 1, cols},
                                         {nullptr, 0});
                 }),
                 std::uint64_t{1});
        for (std::size_t i = 0; i < rows * cols; ++i) QCOMPARE(data[i], detail::float_to_fp8(dx.at(i) * scale, Fp8Type::E4M3));
        Buffer dbias(DType::Float32, cols);
        std::vector<float> workspace(tewb::kernels::gelu_backward_workspace_bytes(rows, cols) / 4);
        QCOMPARE(launches_of([&] {
                     calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                         {nullptr, DType::Float32, rows, cols}, nullptr, {dbias.data(), DType::Float32, 1, cols},
                                         {workspace.data(), workspace.size() * 4});
                 }),
                 std::uint64_t{1});
        for (std::size_t c = 0; c < cols; ++c) {
            float sum = 0.0f;
            for (std::size_t r = 0; r < rows; ++r) sum += dx.at(r * cols + c);
            QVERIFY(same_bits(dbias.at(c), 0.0f + sum));
        }
        // NaN in x: its dx, byte and column sum are NaN, amax NaN.
        x.set(7, kNaN);
        float amax = 0.0f;
        const Fp8Output with_amax{data.data(), nullptr, &scale, &amax, Fp8Type::E4M3};
        calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                            {dx.data(), DType::Float32, rows, cols}, &with_amax, {dbias.data(), DType::Float32, 1, cols},
                            {workspace.data(), workspace.size() * 4});
        QVERIFY(std::isnan(dx.at(7)));
        QCOMPARE(data[7], std::uint8_t{0x7f});
        QVERIFY(std::isnan(dbias.at(7 % cols)));
        QVERIFY(std::isfinite(dbias.at(0)));
        QVERIFY(std::isnan(amax));
    }

    // GELU's amax hand-off (gelu_forward_current_scale, gelu_backward_current_scale): the plain call, then
    // abs_max_current_scale of its output, bit for bit (out or dx, dbias, scale, scale_inv, staging), in one launch (the
    // backward's dbias past the arrival counters adds its second, as the plain call's); a NaN, no elements; refusals.
    void geluCurrentScaleIsTheCallThenItsScale() {
        std::mt19937 rng(83);
        const float numerator = 57344.0f;
        const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
        const auto target_of = [&](float (&f)[3]) {
            tewb::kernels::CurrentScaleTarget t;
            t.numerator = numerator;
            t.scale = scalar(&f[0]);
            t.scale_inv = scalar(&f[1]);
            t.staging = scalar(&f[2]);
            return t;
        };
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{37, 300}, {1, 7}, {2, 2048 * 256 + 3}}) {
                for (const bool nan : {false, true}) {
                    if (cols > 300 && (nan || dtype == DType::Float32)) continue;  // the long row: the dbias launch count only
                    Buffer x = random_tensor(dtype, rows * cols, rng, 0.0f, 2.0f);
                    Buffer dy = random_tensor(dtype, rows * cols, rng, 0.0f, 0.5f);
                    if (nan) dy.set(rows * cols / 2, kNaN);
                    Buffer dx_ref(dtype, rows * cols), dx(dtype, rows * cols), y_ref(dtype, rows * cols), y(dtype, rows * cols);
                    Buffer dbias_ref(DType::Float32, cols), dbias(DType::Float32, cols);
                    std::vector<float> workspace(tewb::kernels::gelu_backward_workspace_bytes(rows, cols) / 4);
                    const tewb::kernels::Workspace w{workspace.data(), workspace.size() * 4};
                    float want[2][3] = {{0.0f, 0.0f, 0.5f}, {0.0f, 0.0f, 0.5f}}, got[2][3] = {{0.0f, 0.0f, 0.5f}, {0.0f, 0.0f, 0.5f}};
                    const Tensor xt = input(x.data(), dtype, rows, cols), dyt = input(dy.data(), dtype, rows, cols);
                    const std::uint64_t plain = launches_of([&] {
                        host::gelu_backward(dyt, xt, input(dx_ref.data(), dtype, rows, cols), Tensor{},
                                            input(dbias_ref.data(), DType::Float32, 1, cols), w, {});
                    });
                    host::abs_max_current_scale(input(dx_ref.data(), dtype, rows, cols), numerator, scalar(&want[0][0]), scalar(&want[0][1]),
                                                scalar(&want[0][2]), {});
                    host::gelu_forward(xt, input(y_ref.data(), dtype, rows, cols), Tensor{}, {});
                    host::abs_max_current_scale(input(y_ref.data(), dtype, rows, cols), numerator, scalar(&want[1][0]), scalar(&want[1][1]),
                                                scalar(&want[1][2]), {});
                    QCOMPARE(launches_of([&] {
                                 host::gelu_backward_current_scale(dyt, xt, input(dx.data(), dtype, rows, cols), target_of(got[0]),
                                                                   input(dbias.data(), DType::Float32, 1, cols), w, {});
                             }),
                             plain);
                    QCOMPARE(launches_of([&] { host::gelu_forward_current_scale(xt, input(y.data(), dtype, rows, cols), target_of(got[1]), {}); }),
                             std::uint64_t{1});
                    for (std::size_t i = 0; i < rows * cols; ++i) {
                        QCOMPARE(detail::float_bits(dx.at(i)), detail::float_bits(dx_ref.at(i)));
                        QCOMPARE(detail::float_bits(y.at(i)), detail::float_bits(y_ref.at(i)));
                    }
                    for (std::size_t c = 0; c < cols; ++c) QCOMPARE(detail::float_bits(dbias.at(c)), detail::float_bits(dbias_ref.at(c)));
                    for (int k = 0; k < 2; ++k) {
                        for (int j = 0; j < 3; ++j) QCOMPARE(detail::float_bits(got[k][j]), detail::float_bits(want[k][j]));
                    }
                    if (nan) {
                        QCOMPARE(got[0][0], 1.0f);
                        QVERIFY(std::isnan(got[0][2]));
                    }
                }
            }
        }
        // No elements: the scale of amax 0, one launch each.
        float got[3] = {0.0f, 0.0f, 3.0f};
        std::uint16_t none[4] = {};
        const Tensor empty = input(none, DType::BFloat16, 0, 4);
        QCOMPARE(launches_of([&] { host::gelu_forward_current_scale(empty, empty, target_of(got), {}); }), std::uint64_t{1});
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(got[2], 3.0f);
        // Refusals before any launch.
        Buffer x = random_tensor(DType::Float32, 8, rng, 0.0f, 1.0f);
        Buffer out(DType::Float32, 8);
        float floats[3] = {};
        auto in_out = target_of(floats);
        in_out.scale = scalar(static_cast<float*>(out.data()) + 2);
        expect_refusal([&] { host::gelu_forward_current_scale(input(x.data(), DType::Float32, 2, 4), input(out.data(), DType::Float32, 2, 4), in_out, {}); },
                       {"tewb::kernels::host::gelu_forward_current_scale", "scale lies in out"});
        expect_refusal(
            [&] {
                host::gelu_forward_current_scale(input(x.data(), DType::Float32, 2, 4), input(nullptr, DType::Float32, 2, 4), target_of(floats), {});
            },
            {"out is null"});
        std::vector<float> workspace(tewb::kernels::gelu_backward_workspace_bytes(2, 4) / 4);
        auto in_workspace = target_of(floats);
        in_workspace.scale_inv = scalar(workspace.data());
        expect_refusal(
            [&] {
                host::gelu_backward_current_scale(input(x.data(), DType::Float32, 2, 4), input(x.data(), DType::Float32, 2, 4),
                                                  input(out.data(), DType::Float32, 2, 4), in_workspace, Tensor{},
                                                  {workspace.data(), workspace.size() * 4}, {});
            },
            {"tewb::kernels::host::gelu_backward_current_scale", "a current-scaling target lies in the workspace"});
        auto in_x = target_of(floats);
        in_x.staging = scalar(static_cast<float*>(x.data()) + 1);
        expect_refusal(
            [&] {
                host::gelu_backward_current_scale(input(x.data(), DType::Float32, 2, 4), input(x.data(), DType::Float32, 2, 4),
                                                  input(out.data(), DType::Float32, 2, 4), in_x, Tensor{}, {}, {});
            },
            {"staging lies in dy"});
    }

    void geluRefusals() {
        const std::size_t rows = 3, cols = 5;
        Buffer x(DType::Float32, rows * cols), out(DType::Float32, rows * cols), dy(DType::Float32, rows * cols),
            dbias(DType::Float32, cols);
        const char* forward = "tewb::kernels::host::gelu_forward";
        expect_refusal([&] { calls::gelu_forward(nullptr, DType::Float32, rows, cols, out.data(), DType::Float32, nullptr); },
                       {forward, "x is a null pointer"});
        expect_refusal([&] { calls::gelu_forward(x.data(), DType::Float16, rows, cols, out.data(), DType::Float32, nullptr); },
                       {forward, "x has dtype float16"});
        expect_refusal([&] { calls::gelu_forward(x.data(), DType::Float32, rows, cols, nullptr, DType::Float32, nullptr); },
                       {forward, "no output"});
        expect_refusal(
            [&] {
                calls::gelu_forward(x.data(), DType::Float32, rows, cols, static_cast<char*>(out.data()) + 2, DType::Float32,
                                   nullptr);
            },
            {forward, "out is not 4-byte aligned"});
        QCOMPARE(launches_of([&] { calls::gelu_forward(nullptr, DType::Float32, 0, cols, out.data(), DType::Float32, nullptr); }),
                 std::uint64_t{0});
        QCOMPARE(launches_of([&] { calls::gelu_forward(nullptr, DType::Float32, rows, 0, out.data(), DType::Float32, nullptr); }),
                 std::uint64_t{0});

        const char* backward = "tewb::kernels::host::gelu_backward";
        const std::size_t needed = tewb::kernels::gelu_backward_workspace_bytes(rows, cols);
        std::vector<float> workspace(needed / 4);
        expect_refusal(
            [&] {
                calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                    {nullptr, DType::Float32, rows, cols}, nullptr, {nullptr, DType::Float32, 1, cols},
                                    {nullptr, 0});
            },
            {backward, "no output"});
        expect_refusal(
            [&] {
                calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                    {nullptr, DType::Float32, rows, cols}, nullptr, {dbias.data(), DType::Float32, 1, cols},
                                    {workspace.data(), needed - 1});
            },
            {backward, "workspace of " + std::to_string(needed - 1) + " bytes", "gelu_backward_workspace_bytes"});
        expect_refusal(
            [&] {
                calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                    {nullptr, DType::Float32, rows, cols}, nullptr, {dbias.data(), DType::Float16, 1, cols},
                                    {workspace.data(), needed});
            },
            {backward, "dbias has dtype float16"});
        expect_refusal(
            [&] {
                calls::gelu_backward(
                    {dy.data(), DType::BFloat16, rows, cols}, {static_cast<char*>(x.data()) + 1, DType::BFloat16, rows, cols},
                    {out.data(), DType::BFloat16, rows, cols}, nullptr, {nullptr, DType::Float32, 1, cols}, {nullptr, 0});
            },
            {backward, "x is not 2-byte aligned"});
        const float scale = 1.0f;
        std::vector<std::uint8_t> data(rows * cols);
        const Fp8Output bad_type{data.data(), nullptr, &scale, nullptr, static_cast<Fp8Type>(7)};
        expect_refusal(
            [&] {
                calls::gelu_backward({dy.data(), DType::Float32, rows, cols}, {x.data(), DType::Float32, rows, cols},
                                    {nullptr, DType::Float32, rows, cols}, &bad_type, {nullptr, DType::Float32, 1, cols},
                                    {nullptr, 0});
            },
            {backward, "fp8 has dtype int64; allowed: E4M3, E5M2"});
        QCOMPARE(tewb::kernels::gelu_backward_workspace_bytes(0, 7), std::size_t{7 * 4});
        QCOMPARE(tewb::kernels::gelu_backward_workspace_bytes(33, 7), std::size_t{2 * 7 * 4});
        QCOMPARE(tewb::kernels::gelu_backward_workspace_bytes(3072, 3072), std::size_t{96 * 3072 * 4});
        // 1024 chunks of 98 rows would do, but a chunk's rows are a multiple of 8 (its q_t pieces whole): 962 of 104.
        QCOMPARE(tewb::kernels::gelu_backward_workspace_bytes(100000, 3), std::size_t{962 * 3 * 4});
        QCOMPARE(tewb::kernels::gelu_backward_workspace_bytes(40, 3), std::size_t{2 * 3 * 4});  // 24 + 16 rows
    }

    // layer_norm_backward_add: dx is layer_norm_backward's dx plus dresidual, added in float32 before the store
    // (float32 x: bit for bit the sum of the two; bfloat16 x: within one rounding of it), dresidual may be dx
    // itself, dgamma and dbeta are unchanged, the launches are the same (fast and plain kernels), and a
    // misaligned dresidual is refused.
    void layerNormBackwardAddsTheSkipGradient_data() {
        QTest::addColumn<int>("x_dtype");
        QTest::addColumn<int>("hidden");
        QTest::addColumn<bool>("in_place");
        QTest::newRow("float32, fast") << int(DType::Float32) << 64 << false;
        QTest::newRow("float32, plain (odd hidden)") << int(DType::Float32) << 67 << false;
        QTest::newRow("float32, fast, dresidual = dx") << int(DType::Float32) << 64 << true;
        QTest::newRow("bfloat16, fast") << int(DType::BFloat16) << 128 << false;
        QTest::newRow("bfloat16, plain, dresidual = dx") << int(DType::BFloat16) << 36 << true;
    }
    void layerNormBackwardAddsTheSkipGradient() {
        QFETCH(int, x_dtype);
        QFETCH(int, hidden);
        QFETCH(bool, in_place);
        const auto type = static_cast<DType>(x_dtype);
        const std::size_t rows = 40;
        const auto h = static_cast<std::size_t>(hidden);
        std::mt19937 rng(17);
        Buffer x = random_tensor(type, rows * h, rng, 0.5f, 2.0f);
        Buffer gamma = random_tensor(DType::Float32, h, rng, 1.0f, 0.2f), beta(DType::Float32, h);
        Buffer y(type, rows * h);
        std::vector<float> mean(rows), rstd(rows);
        calls::layer_norm_forward(input(x.data(), type, rows, h), input(gamma.data(), DType::Float32, 1, h),
                                 input(beta.data(), DType::Float32, 1, h), 1e-5f, input(y.data(), type, rows, h), nullptr, mean.data(),
                                 rstd.data());
        Buffer dy = random_tensor(DType::BFloat16, rows * h, rng, 0.0f, 1.0f);
        Buffer skip = random_tensor(type, rows * h, rng, 0.0f, 3.0f);
        std::vector<float> workspace(tewb::kernels::layer_norm_backward_workspace_bytes(rows, h) / 4);
        Buffer dx(type, rows * h), dgamma(DType::Float32, h), dbeta(DType::Float32, h);
        std::uint64_t before = tewb::kernels::launch_count();
        calls::layer_norm_backward(input(dy.data(), DType::BFloat16, rows, h), input(x.data(), type, rows, h), mean.data(), rstd.data(),
                                  input(gamma.data(), DType::Float32, 1, h), input(dx.data(), type, rows, h),
                                  input(dgamma.data(), DType::Float32, 1, h), input(dbeta.data(), DType::Float32, 1, h),
                                  {workspace.data(), workspace.size() * 4});
        const std::uint64_t plain_launches = tewb::kernels::launch_count() - before;
        Buffer dx_add(type, rows * h), dgamma_add(DType::Float32, h), dbeta_add(DType::Float32, h);
        if (in_place) {
            for (std::size_t i = 0; i < rows * h; ++i) dx_add.set(i, skip.at(i));
        }
        before = tewb::kernels::launch_count();
        calls::layer_norm_backward_add(input(dy.data(), DType::BFloat16, rows, h), input(x.data(), type, rows, h), mean.data(), rstd.data(),
                                      input(gamma.data(), DType::Float32, 1, h), input(dx_add.data(), type, rows, h),
                                      input(in_place ? dx_add.data() : skip.data(), type, rows, h),
                                      input(dgamma_add.data(), DType::Float32, 1, h), input(dbeta_add.data(), DType::Float32, 1, h),
                                      {workspace.data(), workspace.size() * 4});
        QCOMPARE(tewb::kernels::launch_count() - before, plain_launches);
        QVERIFY(dgamma_add.values() == dgamma.values() && dbeta_add.values() == dbeta.values());
        for (std::size_t i = 0; i < rows * h; ++i) {
            const float want = dx.at(i) + skip.at(i);
            if (type == DType::Float32) {
                QVERIFY2(dx_add.at(i) == want, qPrintable(QStringLiteral("dx[%1] = %2, want %3").arg(i).arg(dx_add.at(i)).arg(want)));
            } else {
                const float bound = std::ldexp(std::fabs(want), -7) + std::ldexp(std::fabs(dx.at(i)), -8);
                QVERIFY2(std::fabs(dx_add.at(i) - want) <= bound,
                         qPrintable(QStringLiteral("dx[%1] = %2, want %3").arg(i).arg(dx_add.at(i)).arg(want)));
            }
        }
        Buffer misaligned(type, rows * h, 1);
        try {
            calls::layer_norm_backward_add(input(dy.data(), DType::BFloat16, rows, h), input(x.data(), type, rows, h), mean.data(),
                                          rstd.data(), input(gamma.data(), DType::Float32, 1, h), input(dx_add.data(), type, rows, h),
                                          input(static_cast<const std::uint8_t*>(misaligned.data()) + 1, type, rows, h),
                                          input(dgamma_add.data(), DType::Float32, 1, h), input(dbeta_add.data(), DType::Float32, 1, h),
                                          {workspace.data(), workspace.size() * 4});
            QFAIL("a misaligned dresidual was accepted");
        } catch (const KernelError& e) {
            QVERIFY2(std::string(e.what()).find("dresidual") != std::string::npos, e.what());
        }
    }

    // ---- RMSNorm ----

    void rmsNormForwardMatchesDouble() {
        std::mt19937 rng(29);
        for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType param_dtype : {DType::Float32, DType::BFloat16}) {
                for (const DType out_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                        for (const std::size_t rows : {1u, 3u, 17u}) {
                            // Ordinary values, large ones, and ones small enough that eps counts.
                            for (const float scale : {1.0f, 3.0e4f, 1.0e-3f}) {
                                check_rms_forward(rng, x_dtype, param_dtype, out_dtype, rows, hidden, scale);
                                if (QTest::currentTestFailed()) return;
                            }
                        }
                    }
                }
            }
        }
        qInfo("RMSNorm worst float32 error / bound: y %.3f", worst_rms_y_);
    }

    void rmsNormFp8OutputIsTheCastOfY() {
        std::mt19937 rng(5);
        for (const Fp8Type type : {Fp8Type::E4M3, Fp8Type::E5M2}) {
            for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                for (const std::size_t rows : {1u, 17u, 70u}) {
                    Buffer x = random_tensor(DType::BFloat16, rows * hidden, rng, 0.5f, 2.0f);
                    Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.5f);
                    const float scale = type == Fp8Type::E4M3 ? 300.0f : 3.0e4f;  // big enough that some values saturate
                    std::vector<std::uint8_t> data(rows * hidden), transposed(rows * hidden);
                    float amax = 0.0f;
                    const Fp8Output fp8{data.data(), transposed.data(), &scale, &amax, type};
                    Buffer y32(DType::Float32, rows * hidden), y16(DType::BFloat16, rows * hidden);
                    std::vector<float> rstd(rows);
                    QCOMPARE(launches_of([&] {
                                 calls::rms_norm_forward(input(x.data(), DType::BFloat16, rows, hidden),
                                                        input(gamma.data(), DType::Float32, 1, hidden), 1e-6f,
                                                        input(y32.data(), DType::Float32, rows, hidden), &fp8, rstd.data());
                             }),
                             std::uint64_t{1});  // the transposed copy from the same launch
                    std::uint32_t max_bits = 0;
                    std::size_t saturated = 0;
                    for (std::size_t i = 0; i < rows * hidden; ++i) {
                        const float y = y32.at(i);
                        QCOMPARE(data[i], detail::float_to_fp8(y * scale, type));
                        QCOMPARE(transposed[(i % hidden) * rows + i / hidden], data[i]);
                        max_bits = std::max(max_bits, detail::float_bits(y) & 0x7fffffffu);
                        saturated += (data[i] & 0x7fu) == (type == Fp8Type::E4M3 ? 0x7eu : 0x7bu) ? 1 : 0;
                    }
                    QCOMPARE(detail::float_bits(amax), max_bits);
                    if (hidden >= 7 && rows > 1) QVERIFY(saturated > 0);

                    // bfloat16 out and FP8 only (no transposed copy): the bytes are still the cast of the float32 y.
                    std::vector<std::uint8_t> data16(rows * hidden);
                    float amax16 = 0.0f;
                    const Fp8Output fp8_16{data16.data(), nullptr, &scale, &amax16, type};
                    calls::rms_norm_forward(input(x.data(), DType::BFloat16, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                           1e-6f, input(y16.data(), DType::BFloat16, rows, hidden), &fp8_16, rstd.data());
                    for (std::size_t i = 0; i < rows * hidden; ++i) {
                        QCOMPARE(data16[i], data[i]);
                        QCOMPARE(detail::float_bits(y16.at(i)),
                                 detail::float_bits(detail::bf16_to_float(detail::float_to_bf16(y32.at(i)))));
                    }
                    QCOMPARE(amax16, amax);
                    // FP8 alone, amax combined with a larger value already there: that one is kept.
                    float big = 1.0e30f;
                    const Fp8Output fp8_only{data16.data(), nullptr, &scale, &big, type};
                    calls::rms_norm_forward(input(x.data(), DType::BFloat16, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                           1e-6f, input(nullptr, DType::Float32, rows, hidden), &fp8_only, rstd.data());
                    QCOMPARE(big, 1.0e30f);
                    QVERIFY(data16 == data);
                }
            }
        }
    }

    void rmsNormBackwardMatchesDouble() {
        std::mt19937 rng(31);
        for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType dy_dtype : {DType::Float32, DType::BFloat16}) {
                for (const DType param_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const std::size_t hidden : {1u, 7u, 129u, 768u}) {
                        for (const std::size_t rows : {1u, 3u, 17u, 300u}) {
                            check_rms_backward(rng, x_dtype, dy_dtype, param_dtype, rows, hidden);
                            if (QTest::currentTestFailed()) return;
                        }
                    }
                }
            }
        }
        qInfo("RMSNorm worst float32 error / bound: dx %.3f, dgamma %.3f", worst_rms_dx_, worst_rms_dgamma_);
    }

    // The analytic backward against central differences of a double-precision RMSNorm: the loss sum(dy * y),
    // its gradient in x and gamma, with the host's own forward rstd.
    void rmsNormBackwardMatchesFiniteDifferences() {
        std::mt19937 rng(37);
        const double eps = 1e-3;  // large enough to matter for the small row below
        for (const std::size_t hidden : {1u, 5u, 33u}) {
            const std::size_t rows = 3;
            Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.3f, 1.0f);
            for (std::size_t c = 0; c < hidden; ++c) x.set(c, x.at(c) * 0.01f);  // row 0: mean(x^2) near eps
            Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.5f);
            Buffer dy = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
            Buffer y(DType::Float32, rows * hidden), dx(DType::Float32, rows * hidden), dgamma(DType::Float32, hidden);
            std::vector<float> rstd(rows), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
            calls::rms_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                   static_cast<float>(eps), input(y.data(), DType::Float32, rows, hidden), nullptr, rstd.data());
            calls::rms_norm_backward(input(dy.data(), DType::Float32, rows, hidden), input(x.data(), DType::Float32, rows, hidden),
                                    rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                    input(dx.data(), DType::Float32, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                    {workspace.data(), workspace.size() * 4});
            const std::vector<float> xf = x.values(), gf = gamma.values(), wf = dy.values();
            std::vector<double> xd(xf.begin(), xf.end()), gd(gf.begin(), gf.end()), wd(wf.begin(), wf.end());
            const auto difference = [&](std::vector<double>& v, std::size_t i) {
                const double h = 1e-6 * std::max(1e-2, std::fabs(v[i]));
                const double kept = v[i];
                v[i] = kept + h;
                const double up = rms_norm_loss(xd, gd, wd, rows, hidden, static_cast<float>(eps));
                v[i] = kept - h;
                const double down = rms_norm_loss(xd, gd, wd, rows, hidden, static_cast<float>(eps));
                v[i] = kept;
                return (up - down) / (2.0 * h);
            };
            for (std::size_t r = 0; r < rows; ++r) {
                // dx's terms are of size rstd * |dy * gamma| (they cancel where |xhat| is near 1, as at hidden 1).
                double scale = 0.0;
                for (std::size_t c = 0; c < hidden; ++c) scale = std::max(scale, rstd[r] * std::fabs(wd[r * hidden + c] * gd[c]));
                for (std::size_t c = 0; c < hidden; ++c) {
                    const double numeric = difference(xd, r * hidden + c);
                    const double tol = 1e-5 * scale;
                    QVERIFY2(
                        std::fabs(dx.at(r * hidden + c) - numeric) <= tol,
                        describe("dx vs differences", rows, hidden, r * hidden + c, dx.at(r * hidden + c), numeric, tol).c_str());
                }
            }
            for (std::size_t c = 0; c < hidden; ++c) {
                const double numeric = difference(gd, c);
                const double tol = 1e-5 * (std::fabs(numeric) + 1.0);
                QVERIFY2(std::fabs(dgamma.at(c) - numeric) <= tol,
                         describe("dgamma vs differences", rows, hidden, c, dgamma.at(c), numeric, tol).c_str());
            }
        }
    }

    // Repeated calls give the same bits (the row split over threads and the chunk sums are fixed orders).
    void rmsNormIsDeterministic() {
        std::mt19937 rng(43);
        const std::size_t rows = 700, hidden = 768;
        Buffer x = random_tensor(DType::BFloat16, rows * hidden, rng, 0.0f, 1.0f);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.2f);
        Buffer dy = random_tensor(DType::BFloat16, rows * hidden, rng, 0.0f, 1.0f);
        std::vector<float> workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
        std::vector<std::uint32_t> first;
        for (int run = 0; run < 3; ++run) {
            Buffer y(DType::BFloat16, rows * hidden), dx(DType::BFloat16, rows * hidden), dgamma(DType::Float32, hidden);
            std::vector<float> rstd(rows);
            calls::rms_norm_forward(input(x.data(), DType::BFloat16, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden), 1e-5f,
                                   input(y.data(), DType::BFloat16, rows, hidden), nullptr, rstd.data());
            calls::rms_norm_backward(input(dy.data(), DType::BFloat16, rows, hidden), input(x.data(), DType::BFloat16, rows, hidden),
                                    rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                    input(dx.data(), DType::BFloat16, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                    {workspace.data(), workspace.size() * 4});
            std::vector<std::uint32_t> bits;
            for (std::size_t i = 0; i < rows * hidden; ++i) bits.push_back(y.bits(i));
            for (std::size_t i = 0; i < rows * hidden; ++i) bits.push_back(dx.bits(i));
            for (std::size_t c = 0; c < hidden; ++c) bits.push_back(dgamma.bits(c));
            for (const float r : rstd) bits.push_back(detail::float_bits(r));
            if (run == 0) {
                first = bits;
            } else {
                QVERIFY2(bits == first, qPrintable(QStringLiteral("run %1 differs from run 0").arg(run)));
            }
        }
    }

    void rmsNormBackwardLaunchesFollowTheColumnTiles() {
        // Hidden 768 (float32, aligned) takes LayerNorm's fast kernel: one launch. Longer rows the plain kernels: dx,
        // then dgamma's partial rows finished by the last block of each 256-column tile; past 2048 tiles the sums take a
        // launch of their own.
        for (const std::size_t hidden : {768u, 2048u * 256u, 2048u * 256u + 1u}) {
            const std::size_t rows = 2;
            std::mt19937 rng(47);
            Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
            Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.2f);
            Buffer dy = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
            Buffer dx(DType::Float32, rows * hidden), dgamma(DType::Float32, hidden);
            std::vector<float> rstd(rows), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
            calls::rms_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden), 1e-5f,
                                   input(dx.data(), DType::Float32, rows, hidden), nullptr, rstd.data());
            const std::uint64_t launches = launches_of([&] {
                calls::rms_norm_backward(input(dy.data(), DType::Float32, rows, hidden), input(x.data(), DType::Float32, rows, hidden),
                                        rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                        input(dx.data(), DType::Float32, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                        {workspace.data(), workspace.size() * 4});
            });
            QCOMPARE(launches, std::uint64_t{hidden == 768u ? 1u : hidden > 2048u * 256u ? 3u : 2u});
        }
    }

    // RMSNorm's backward hand-off (rms_norm_backward_current_scale): rms_norm_backward_add (or rms_norm_backward), then
    // abs_max_current_scale of dx, bit for bit (dx, dgamma, scale, scale_inv, staging); one launch on the fast kernel
    // (hidden 768) where the plain kernels' 2 are followed by abs_max_current_scale's (129); x float32 and bfloat16, with
    // and without dresidual, a NaN in dy (amax NaN: scale 1, staging NaN); no rows: the scale of amax 0, one launch. Then
    // its refusals: a target float in dx, in dresidual or in the workspace, no dx.
    void rmsNormBackwardCurrentScaleIsTheBackwardThenItsScale() {
        std::mt19937 rng(83);
        const float numerator = 57344.0f;
        const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
        for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
            for (const std::size_t hidden : {768u, 129u}) {
                for (const bool add : {false, true}) {
                    for (const bool nan : {false, true}) {
                        const std::size_t rows = 21;
                        Buffer x = random_tensor(x_dtype, rows * hidden, rng, 0.2f, 2.0f);
                        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.3f);
                        Buffer dy = random_tensor(x_dtype, rows * hidden, rng, 0.0f, 1.0f);
                        if (nan) dy.set(rows * hidden / 3, kNaN);
                        Buffer dres = random_tensor(x_dtype, rows * hidden, rng, 0.0f, 0.5f);
                        Buffer out(x_dtype, rows * hidden), dx_ref(x_dtype, rows * hidden), dx(x_dtype, rows * hidden);
                        Buffer dgamma_ref(DType::Float32, hidden), dgamma(DType::Float32, hidden);
                        std::vector<float> rstd(rows), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
                        const Tensor xt = input(x.data(), x_dtype, rows, hidden);
                        const Tensor gt = input(gamma.data(), DType::Float32, 1, hidden);
                        calls::rms_norm_forward(xt, gt, 1e-5f, input(out.data(), x_dtype, rows, hidden), nullptr, rstd.data());
                        const Tensor dyt = input(dy.data(), x_dtype, rows, hidden);
                        const Tensor rt = calls::stats_of(rstd.data(), xt);
                        const Tensor dres_t = add ? input(dres.data(), x_dtype, rows, hidden) : Tensor{};
                        const tewb::kernels::Workspace w{workspace.data(), workspace.size() * 4};
                        float want[3] = {0.0f, 0.0f, 0.5f}, got[3] = {0.0f, 0.0f, 0.5f};  // scale, scale_inv, staging
                        const std::uint64_t plain = launches_of([&] {
                            host::rms_norm_backward_add(dyt, xt, rt, gt, input(dx_ref.data(), x_dtype, rows, hidden), dres_t,
                                                        input(dgamma_ref.data(), DType::Float32, 1, hidden), w, {});
                        });
                        host::abs_max_current_scale(input(dx_ref.data(), x_dtype, rows, hidden), numerator, scalar(&want[0]),
                                                    scalar(&want[1]), scalar(&want[2]), {});
                        tewb::kernels::CurrentScaleTarget target;
                        target.numerator = numerator;
                        target.scale = scalar(&got[0]);
                        target.scale_inv = scalar(&got[1]);
                        target.staging = scalar(&got[2]);
                        const std::uint64_t launches = launches_of([&] {
                            host::rms_norm_backward_current_scale(dyt, xt, rt, gt, input(dx.data(), x_dtype, rows, hidden), dres_t,
                                                                  input(dgamma.data(), DType::Float32, 1, hidden), target, w, {});
                        });
                        QCOMPARE(launches, hidden == 768u ? plain : plain + 1);
                        QCOMPARE(plain, std::uint64_t{hidden == 768u ? 1u : 2u});
                        for (std::size_t i = 0; i < rows * hidden; ++i) QCOMPARE(detail::float_bits(dx.at(i)), detail::float_bits(dx_ref.at(i)));
                        for (std::size_t i = 0; i < hidden; ++i) QCOMPARE(detail::float_bits(dgamma.at(i)), detail::float_bits(dgamma_ref.at(i)));
                        for (int k = 0; k < 3; ++k) QCOMPARE(detail::float_bits(got[k]), detail::float_bits(want[k]));
                        if (nan) {
                            QCOMPARE(got[0], 1.0f);
                            QVERIFY(std::isnan(got[2]));
                        }
                    }
                }
            }
        }
        // No rows: the scale of amax 0 (1), staging kept, one launch.
        float got[3] = {0.0f, 0.0f, 2.0f};
        tewb::kernels::CurrentScaleTarget target;
        target.numerator = numerator;
        target.scale = scalar(&got[0]);
        target.scale_inv = scalar(&got[1]);
        target.staging = scalar(&got[2]);
        float one = 1.0f;
        std::uint16_t none[8] = {};
        const Tensor empty = input(none, DType::BFloat16, 0, 8);
        const std::uint64_t launches = launches_of([&] {
            host::rms_norm_backward_current_scale(empty, empty, input(nullptr, DType::Float32, 1, 0), input(&one, DType::Float32, 1, 8),
                                                  empty, Tensor{}, input(&one, DType::Float32, 1, 8), target, {}, {});
        });
        QCOMPARE(launches, std::uint64_t{1});
        QCOMPARE(got[0], 1.0f);
        QCOMPARE(got[1], 1.0f);
        QCOMPARE(got[2], 2.0f);
        // Refusals, before anything runs.
        const std::size_t rows = 4, hidden = 8;
        Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
        Buffer dx(DType::Float32, rows * hidden), dres(DType::Float32, rows * hidden), dgamma(DType::Float32, hidden);
        std::vector<float> rstd(rows, 1.0f), gamma(hidden, 1.0f), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
        float floats[3] = {0.0f, 0.0f, 0.0f};
        const Tensor xt = input(x.data(), DType::Float32, rows, hidden);
        const Tensor rt = calls::stats_of(rstd.data(), xt);
        const Tensor gt = input(gamma.data(), DType::Float32, 1, hidden);
        const tewb::kernels::Workspace w{workspace.data(), workspace.size() * 4};
        const auto with_scale = [&](float* scale) {
            tewb::kernels::CurrentScaleTarget t;
            t.numerator = numerator;
            t.scale = scalar(scale);
            t.scale_inv = scalar(&floats[1]);
            return t;
        };
        const char* call = "tewb::kernels::host::rms_norm_backward_current_scale";
        const auto run = [&](const Tensor& dx_t, const tewb::kernels::CurrentScaleTarget& t) {
            host::rms_norm_backward_current_scale(xt, xt, rt, gt, dx_t, input(dres.data(), DType::Float32, rows, hidden),
                                                  input(dgamma.data(), DType::Float32, 1, hidden), t, w, {});
        };
        expect_refusal([&] { run(input(dx.data(), DType::Float32, rows, hidden), with_scale(static_cast<float*>(dx.data()) + 5)); },
                       {call, "scale lies in dx"});
        expect_refusal([&] { run(input(dx.data(), DType::Float32, rows, hidden), with_scale(static_cast<float*>(dres.data()) + 31)); },
                       {call, "scale lies in dresidual"});
        expect_refusal([&] { run(input(dx.data(), DType::Float32, rows, hidden), with_scale(workspace.data() + 2)); },
                       {call, "a current-scaling target lies in the workspace"});
        expect_refusal([&] { run(input(nullptr, DType::Float32, rows, hidden), with_scale(&floats[0])); }, {call, "dx is null"});
    }

    // The amax hand-off (layer_norm_forward_current_scale, rms_norm_forward_current_scale): the forward, then
    // abs_max_current_scale of its output, bit for bit (out, the statistics, scale, scale_inv and the staging entry), in one
    // launch instead of two; fast (768) and plain (129) rows, out in float32 and bfloat16 (the amax of the values as
    // stored), a NaN in x (amax NaN: scale 1, staging NaN), no staging entry, no rows (the scale of amax 0, one launch).
    void forwardCurrentScaleIsTheForwardThenItsScale() {
        std::mt19937 rng(71);
        const float numerator = 448.0f;
        for (const bool rms : {false, true}) {
            for (const DType x_dtype : {DType::Float32, DType::BFloat16}) {
                for (const DType out_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const std::size_t hidden : {768u, 129u}) {
                        for (const bool nan : {false, true}) {
                            for (const bool staged : {true, false}) {
                                const std::size_t rows = 19;
                                Buffer x = random_tensor(x_dtype, rows * hidden, rng, 0.3f, 3.0f);
                                if (nan) x.set(rows * hidden / 2, kNaN);
                                Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.3f);
                                Buffer beta = random_tensor(DType::Float32, hidden, rng, 0.0f, 0.2f);
                                Buffer out_ref(out_dtype, rows * hidden), out(out_dtype, rows * hidden);
                                std::vector<float> mean_ref(rows), rstd_ref(rows), mean(rows), rstd(rows);
                                float want[3] = {0.0f, 0.0f, 0.5f}, got[3] = {0.0f, 0.0f, 0.5f};  // scale, scale_inv, staging
                                const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
                                const Tensor xt = input(x.data(), x_dtype, rows, hidden);
                                const Tensor gt = input(gamma.data(), DType::Float32, 1, hidden);
                                const Tensor bt = input(beta.data(), DType::Float32, 1, hidden);
                                if (rms) {
                                    calls::rms_norm_forward(xt, gt, 1e-5f, input(out_ref.data(), out_dtype, rows, hidden), nullptr,
                                                           rstd_ref.data());
                                } else {
                                    calls::layer_norm_forward(xt, gt, bt, 1e-5f, input(out_ref.data(), out_dtype, rows, hidden), nullptr,
                                                             mean_ref.data(), rstd_ref.data());
                                }
                                host::abs_max_current_scale(input(out_ref.data(), out_dtype, rows, hidden), numerator, scalar(&want[0]),
                                                            scalar(&want[1]), staged ? scalar(&want[2]) : Tensor{}, {});
                                tewb::kernels::CurrentScaleTarget target;
                                target.numerator = numerator;
                                target.scale = scalar(&got[0]);
                                target.scale_inv = scalar(&got[1]);
                                if (staged) target.staging = scalar(&got[2]);
                                const std::uint64_t launches = launches_of([&] {
                                    if (rms) {
                                        host::rms_norm_forward_current_scale(xt, gt, 1e-5f, input(out.data(), out_dtype, rows, hidden),
                                                                             target, calls::stats_of(rstd.data(), xt), {});
                                    } else {
                                        host::layer_norm_forward_current_scale(xt, gt, bt, 1e-5f, input(out.data(), out_dtype, rows, hidden),
                                                                               target, calls::stats_of(mean.data(), xt),
                                                                               calls::stats_of(rstd.data(), xt), {});
                                    }
                                });
                                QCOMPARE(launches, std::uint64_t{1});
                                for (std::size_t i = 0; i < rows * hidden; ++i) {
                                    QCOMPARE(detail::float_bits(out.at(i)), detail::float_bits(out_ref.at(i)));
                                }
                                for (std::size_t r = 0; r < rows; ++r) {
                                    QCOMPARE(detail::float_bits(rstd[r]), detail::float_bits(rstd_ref[r]));
                                    if (!rms) QCOMPARE(detail::float_bits(mean[r]), detail::float_bits(mean_ref[r]));
                                }
                                for (int k = 0; k < 3; ++k) QCOMPARE(detail::float_bits(got[k]), detail::float_bits(want[k]));
                                if (nan) {
                                    QCOMPARE(got[0], 1.0f);
                                    if (staged) QVERIFY(std::isnan(got[2]));
                                }
                            }
                        }
                    }
                }
            }
            // No rows: the scale of amax 0 (1), staging kept, one launch.
            float got[3] = {0.0f, 0.0f, 2.0f};
            tewb::kernels::CurrentScaleTarget target;
            target.numerator = numerator;
            target.scale = input(&got[0], DType::Float32, 1, 1);
            target.scale_inv = input(&got[1], DType::Float32, 1, 1);
            target.staging = input(&got[2], DType::Float32, 1, 1);
            float one = 1.0f;
            std::uint16_t none[8] = {};
            const Tensor empty = input(none, DType::BFloat16, 0, 8);
            const Tensor g = input(&one, DType::Float32, 1, 8);
            const std::uint64_t launches = launches_of([&] {
                if (rms) {
                    host::rms_norm_forward_current_scale(empty, g, 1e-5f, empty, target, input(nullptr, DType::Float32, 1, 0), {});
                } else {
                    host::layer_norm_forward_current_scale(empty, g, g, 1e-5f, empty, target, input(nullptr, DType::Float32, 1, 0),
                                                           input(nullptr, DType::Float32, 1, 0), {});
                }
            });
            QCOMPARE(launches, std::uint64_t{1});
            QCOMPARE(got[0], 1.0f);
            QCOMPARE(got[1], 1.0f);
            QCOMPARE(got[2], 2.0f);
        }
    }

    // The current-scale forms' own refusals, before any launch: no out, an FP8-style target that overlaps what the call
    // writes or reads, scale and scale_inv one float, staging one of them, a numerator that is not finite and positive.
    void forwardCurrentScaleRefusals() {
        const std::size_t rows = 4, hidden = 8;
        std::mt19937 rng(3);
        Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.1f);
        Buffer out(DType::Float32, rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        float floats[3] = {0.0f, 0.0f, 0.0f};
        const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
        const Tensor xt = input(x.data(), DType::Float32, rows, hidden);
        const Tensor gt = input(gamma.data(), DType::Float32, 1, hidden);
        const auto target = [&](float* scale, float* scale_inv, float* staging, float numerator) {
            tewb::kernels::CurrentScaleTarget t;
            t.numerator = numerator;
            t.scale = scalar(scale);
            t.scale_inv = scalar(scale_inv);
            if (staging != nullptr) t.staging = scalar(staging);
            return t;
        };
        const auto ln = [&](const Tensor& o, const tewb::kernels::CurrentScaleTarget& t) {
            host::layer_norm_forward_current_scale(xt, gt, gt, 1e-5f, o, t, calls::stats_of(mean.data(), xt),
                                                   calls::stats_of(rstd.data(), xt), {});
        };
        const auto rms = [&](const Tensor& o, const tewb::kernels::CurrentScaleTarget& t) {
            host::rms_norm_forward_current_scale(xt, gt, 1e-5f, o, t, calls::stats_of(rstd.data(), xt), {});
        };
        const Tensor o = input(out.data(), DType::Float32, rows, hidden);
        auto* in_out = static_cast<float*>(out.data()) + 5;
        for (const auto& f : {std::function<void(const Tensor&, const tewb::kernels::CurrentScaleTarget&)>(ln),
                              std::function<void(const Tensor&, const tewb::kernels::CurrentScaleTarget&)>(rms)}) {
            expect_refusal([&] { f(input(nullptr, DType::Float32, rows, hidden), target(&floats[0], &floats[1], nullptr, 448.0f)); },
                           {"out is null"});
            expect_refusal([&] { f(o, target(in_out, &floats[1], nullptr, 448.0f)); }, {"scale lies in out"});
            expect_refusal([&] { f(o, target(&floats[0], &rstd[1], nullptr, 448.0f)); }, {"scale_inv lies in rstd"});
            expect_refusal([&] { f(o, target(&floats[0], &floats[1], static_cast<float*>(x.data()), 448.0f)); }, {"staging lies in x"});
            expect_refusal([&] { f(o, target(&floats[0], &floats[0], nullptr, 448.0f)); }, {"scale and scale_inv are the same"});
            expect_refusal([&] { f(o, target(&floats[0], &floats[1], &floats[1], 448.0f)); }, {"staging is also the scale or scale_inv"});
            expect_refusal([&] { f(o, target(&floats[0], &floats[1], nullptr, 0.0f)); }, {"numerator = 0"});
        }
        expect_refusal([&] { ln(o, target(&floats[0], &mean[2], nullptr, 448.0f)); }, {"scale_inv lies in mean"});
    }

    void rmsNormWorkspaceBytes() {
        QCOMPARE(tewb::kernels::rms_norm_backward_workspace_bytes(0, 7), std::size_t{7 * 4});
        QCOMPARE(tewb::kernels::rms_norm_backward_workspace_bytes(3, 5), std::size_t{3 * 5 * 4});
        QCOMPARE(tewb::kernels::rms_norm_backward_workspace_bytes(3072, 768), std::size_t{256 * 768 * 4});
    }

    // rms_norm_backward_add: dx plus dresidual added in float32 before the store (float32 x: bit for bit the
    // sum; bfloat16 x: within one rounding of it), dresidual may be dx itself, dgamma unchanged, same launches.
    void rmsNormBackwardAddsTheSkipGradient() {
        for (const DType type : {DType::Float32, DType::BFloat16}) {
            for (const bool in_place : {false, true}) {
                const std::size_t rows = 40, h = 67;
                std::mt19937 rng(53);
                Buffer x = random_tensor(type, rows * h, rng, 0.5f, 2.0f);
                Buffer gamma = random_tensor(DType::Float32, h, rng, 1.0f, 0.2f);
                std::vector<float> rstd(rows), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, h) / 4);
                Buffer y(type, rows * h);
                calls::rms_norm_forward(input(x.data(), type, rows, h), input(gamma.data(), DType::Float32, 1, h), 1e-5f,
                                       input(y.data(), type, rows, h), nullptr, rstd.data());
                Buffer dy = random_tensor(DType::BFloat16, rows * h, rng, 0.0f, 1.0f);
                Buffer skip = random_tensor(type, rows * h, rng, 0.0f, 3.0f);
                Buffer dx(type, rows * h), dgamma(DType::Float32, h), dx_add(type, rows * h), dgamma_add(DType::Float32, h);
                const Tensor dy_ref{dy.data(), DType::BFloat16, rows, h};
                const Tensor x_ref{x.data(), type, rows, h};
                const Tensor gamma_ref{gamma.data(), DType::Float32, 1, h};
                const std::uint64_t plain = launches_of([&] {
                    calls::rms_norm_backward(dy_ref, x_ref, rstd.data(), gamma_ref, input(dx.data(), type, rows, h),
                                            input(dgamma.data(), DType::Float32, 1, h), {workspace.data(), workspace.size() * 4});
                });
                if (in_place) {
                    for (std::size_t i = 0; i < rows * h; ++i) dx_add.set(i, skip.at(i));
                }
                const std::uint64_t added = launches_of([&] {
                    calls::rms_norm_backward_add(dy_ref, x_ref, rstd.data(), gamma_ref, input(dx_add.data(), type, rows, h),
                                                input(in_place ? dx_add.data() : skip.data(), type, rows, h),
                                                input(dgamma_add.data(), DType::Float32, 1, h),
                                                {workspace.data(), workspace.size() * 4});
                });
                QCOMPARE(added, plain);
                QVERIFY(dgamma_add.values() == dgamma.values());
                for (std::size_t i = 0; i < rows * h; ++i) {
                    const float want = dx.at(i) + skip.at(i);
                    const float bound =
                        type == DType::Float32 ? 0.0f : std::ldexp(std::fabs(want), -7) + std::ldexp(std::fabs(dx.at(i)), -8);
                    QVERIFY2(std::fabs(dx_add.at(i) - want) <= bound,
                             qPrintable(QStringLiteral("dx[%1] = %2, want %3").arg(i).arg(dx_add.at(i)).arg(want)));
                }
            }
        }
    }

    // A NaN in a row makes the row NaN; an inf makes rstd 0: NaN at the inf, 0 elsewhere. Other rows are untouched.
    void rmsNormNaNAndInfRows() {
        const std::size_t rows = 3, hidden = 5;
        Buffer x = from_values(DType::Float32, {1, 2, kNaN, 4, 5, 1, kInf, 3, 4, 5, 1, 2, 3, 4, 5});
        Buffer gamma = from_values(DType::Float32, {1, 1, 1, 1, 1});
        Buffer y(DType::Float32, rows * hidden);
        std::vector<float> rstd(rows);
        calls::rms_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden), 1e-5f,
                               input(y.data(), DType::Float32, rows, hidden), nullptr, rstd.data());
        QVERIFY(std::isnan(rstd[0]));
        QCOMPARE(rstd[1], 0.0f);
        for (std::size_t c = 0; c < hidden; ++c) {
            QVERIFY(std::isnan(y.at(c)));
            if (c == 1) {
                QVERIFY(std::isnan(y.at(hidden + c)));
            } else {
                QCOMPARE(y.at(hidden + c), 0.0f);
            }
            QVERIFY(std::isfinite(y.at(2 * hidden + c)));
        }
    }

    void rmsNormRefusals() {
        const std::size_t rows = 3, hidden = 8;
        Buffer x(DType::Float32, rows * hidden), gamma(DType::Float32, hidden), out(DType::Float32, rows * hidden);
        std::vector<float> rstd(rows), workspace(tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden) / 4);
        const char* forward = "tewb::kernels::host::rms_norm_forward";
        const auto fwd = [&](const void* xp, std::size_t gamma_hidden, float eps, float* r) {
            return [=, &gamma, &out] {
                calls::rms_norm_forward(input(xp, DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, gamma_hidden), eps,
                                       input(out.data(), DType::Float32, rows, hidden), nullptr, r);
            };
        };
        expect_refusal(fwd(nullptr, hidden, 1e-5f, rstd.data()), {forward, "x is a null pointer"});
        expect_refusal(fwd(x.data(), hidden - 1, 1e-5f, rstd.data()), {forward, "gamma is [1, 7]; allowed: [1, 8]"});
        expect_refusal(fwd(x.data(), hidden, -1.0f, rstd.data()), {forward, "eps = -1", "allowed: a finite value above 0"});
        expect_refusal(fwd(x.data(), hidden, kNaN, rstd.data()), {forward, "eps = nan"});
        expect_refusal(fwd(x.data(), hidden, 1e-5f, nullptr), {forward, "rstd is a null pointer"});
        const char* backward = "tewb::kernels::host::rms_norm_backward";
        expect_refusal(
            [&] {
                calls::rms_norm_backward(input(x.data(), DType::Float32, rows, hidden), input(x.data(), DType::Float32, rows, hidden),
                                        rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                        input(out.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                        {workspace.data(), workspace.size() * 4 - 4});
            },
            {backward, "workspace of", "rms_norm_backward_workspace_bytes"});
        expect_refusal(
            [&] {
                calls::rms_norm_backward(input(x.data(), DType::Float32, rows, hidden), input(x.data(), DType::Float32, rows, hidden),
                                        rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                        input(out.data(), DType::Float32, rows, hidden - 1), input(gamma.data(), DType::Float32, 1, hidden),
                                        {workspace.data(), workspace.size() * 4});
            },
            {backward, "dx is [3, 7]; allowed: [3, 8]"});
        // No rows: nothing checked past the shapes, nothing launched.
        QCOMPARE(launches_of([&] {
                     calls::rms_norm_forward(input(nullptr, DType::Float32, 0, hidden), input(nullptr, DType::Float32, 1, hidden), 1e-5f,
                                            input(out.data(), DType::Float32, 0, hidden), nullptr, nullptr);
                 }),
                 std::uint64_t{0});
    }

    void trainingSizesRunQuickly() {
        // The CPU training run's shapes: 3072 x 768 LayerNorm, 3072 x 3072 GELU forward and backward with dbias.
        std::mt19937 rng(41);
        const std::size_t rows = 3072, hidden = 768, ffn = 3072;
        Buffer x = random_tensor(DType::Float32, rows * hidden, rng, 0.0f, 1.0f);
        Buffer gamma = random_tensor(DType::Float32, hidden, rng, 1.0f, 0.1f), beta(DType::Float32, hidden);
        Buffer y(DType::BFloat16, rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        QElapsedTimer timer;
        timer.start();
        calls::layer_norm_forward(input(x.data(), DType::Float32, rows, hidden), input(gamma.data(), DType::Float32, 1, hidden),
                                 input(beta.data(), DType::Float32, 1, hidden), 1e-5f, input(y.data(), DType::BFloat16, rows, hidden),
                                 nullptr, mean.data(), rstd.data());
        Buffer dy = random_tensor(DType::BFloat16, rows * hidden, rng, 0.0f, 1.0f), dx(DType::Float32, rows * hidden);
        Buffer dgamma(DType::Float32, hidden), dbeta(DType::Float32, hidden);
        std::vector<float> workspace(tewb::kernels::layer_norm_backward_workspace_bytes(rows, hidden) / 4);
        calls::layer_norm_backward(input(dy.data(), DType::BFloat16, rows, hidden), input(x.data(), DType::Float32, rows, hidden),
                                  mean.data(), rstd.data(), input(gamma.data(), DType::Float32, 1, hidden),
                                  input(dx.data(), DType::Float32, rows, hidden), input(dgamma.data(), DType::Float32, 1, hidden),
                                  input(dbeta.data(), DType::Float32, 1, hidden), {workspace.data(), workspace.size() * 4});
        const qint64 layer_norm_ms = timer.restart();
        Buffer h = random_tensor(DType::BFloat16, rows * ffn, rng, 0.0f, 1.0f), hy(DType::BFloat16, rows * ffn);
        calls::gelu_forward(h.data(), DType::BFloat16, rows, ffn, hy.data(), DType::BFloat16, nullptr);
        Buffer dh(DType::BFloat16, rows * ffn), dbias(DType::Float32, ffn);
        std::vector<float> gelu_workspace(tewb::kernels::gelu_backward_workspace_bytes(rows, ffn) / 4);
        calls::gelu_backward({hy.data(), DType::BFloat16, rows, ffn}, {h.data(), DType::BFloat16, rows, ffn},
                            {dh.data(), DType::BFloat16, rows, ffn}, nullptr, {dbias.data(), DType::Float32, 1, ffn},
                            {gelu_workspace.data(), gelu_workspace.size() * 4});
        const qint64 gelu_ms = timer.elapsed();
        qInfo("3072 x 768 LayerNorm forward + backward: %lld ms; 3072 x 3072 GELU forward + backward: %lld ms", layer_norm_ms,
              gelu_ms);
        QVERIFY(std::isfinite(dgamma.at(0)) && std::isfinite(dbias.at(0)));
    }

private:
    double worst_y_ = 0.0;
    double worst_dx_ = 0.0;
    double worst_dparams_ = 0.0;

    double worst_rms_y_ = 0.0;
    double worst_rms_dx_ = 0.0;
    double worst_rms_dgamma_ = 0.0;

    void check_rms_forward(std::mt19937& rng, DType x_dtype, DType param_dtype, DType out_dtype, std::size_t rows,
                           std::size_t hidden, float scale) {
        Buffer x = random_tensor(x_dtype, rows * hidden, rng, 0.5f * scale, 2.0f * scale);
        Buffer gamma = random_tensor(param_dtype, hidden, rng, 1.0f, 0.5f);
        Buffer out(out_dtype, rows * hidden);
        std::vector<float> rstd(rows);
        const float eps = 1e-6f;
        QCOMPARE(launches_of([&] {
                     calls::rms_norm_forward(input(x.data(), x_dtype, rows, hidden), input(gamma.data(), param_dtype, 1, hidden), eps,
                                            input(out.data(), out_dtype, rows, hidden), nullptr, rstd.data());
                 }),
                 std::uint64_t{1});
        const RmsNormReference ref = rms_norm_reference(x.values(), gamma.values(), rows, hidden, eps);
        const std::string where = std::string(" x ") + std::string(tewb::kernels::to_string(x_dtype)) + " gamma " +
                                  std::string(tewb::kernels::to_string(param_dtype)) + " out " +
                                  std::string(tewb::kernels::to_string(out_dtype)) + " scale " + std::to_string(scale);
        for (std::size_t i = 0; i < rows * hidden; ++i) {
            const double tol = ref.tolerance[i] + store_error(out_dtype, ref.y[i]);
            QVERIFY2(agrees(out.at(i), ref.y[i], tol),
                     (describe("rms_norm y", rows, hidden, i, out.at(i), ref.y[i], tol) + where).c_str());
            if (out_dtype == DType::Float32) worst_rms_y_ = std::max(worst_rms_y_, std::fabs(out.at(i) - ref.y[i]) / tol);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            const double tol = std::ldexp(ref.rstd[r], -21);
            QVERIFY2(std::fabs(rstd[r] - ref.rstd[r]) <= tol,
                     (describe("rstd", rows, hidden, r, rstd[r], ref.rstd[r], tol) + where).c_str());
        }
    }

    void check_rms_backward(std::mt19937& rng, DType x_dtype, DType dy_dtype, DType param_dtype, std::size_t rows,
                            std::size_t hidden) {
        Buffer x = random_tensor(x_dtype, rows * hidden, rng, -1.0f, 2.0f);
        Buffer dy = random_tensor(dy_dtype, rows * hidden, rng, 0.1f, 1.0f);
        Buffer gamma = random_tensor(param_dtype, hidden, rng, 1.0f, 0.5f);
        Buffer y(DType::Float32, rows * hidden);
        std::vector<float> rstd(rows);
        calls::rms_norm_forward(input(x.data(), x_dtype, rows, hidden), input(gamma.data(), param_dtype, 1, hidden), 1e-5f,
                               input(y.data(), DType::Float32, rows, hidden), nullptr, rstd.data());
        Buffer dx(x_dtype, rows * hidden), dgamma(param_dtype, hidden);
        const std::size_t bytes = tewb::kernels::rms_norm_backward_workspace_bytes(rows, hidden);
        std::vector<float> workspace(bytes / 4);
        // LayerNorm's fast-kernel rule (fast_dispatch.cuh; these buffers are aligned): one launch with its order;
        // elsewhere the plain kernels, dx and then dgamma's partial rows finished in place.
        const std::size_t width = x_dtype == DType::Float32 ? 4 : 8;
        const bool fast = hidden % width == 0 && hidden <= 32 * 8 * width * 4;
        const std::size_t groups = fast && hidden <= 32 * width * 4 ? 4 : 1;
        QCOMPARE(launches_of([&] {
                     calls::rms_norm_backward(input(dy.data(), dy_dtype, rows, hidden), input(x.data(), x_dtype, rows, hidden), rstd.data(),
                                             input(gamma.data(), param_dtype, 1, hidden), input(dx.data(), x_dtype, rows, hidden),
                                             input(dgamma.data(), param_dtype, 1, hidden), {workspace.data(), bytes});
                 }),
                 std::uint64_t{fast ? 1u : 2u});
        const std::vector<float> dyv = dy.values(), xv = x.values();
        const RmsNormBackwardReference ref = rms_norm_backward_reference(dyv, xv, rstd, gamma.values(), rows, hidden);
        const std::string where = std::string(" x ") + std::string(tewb::kernels::to_string(x_dtype)) + " dy " +
                                  std::string(tewb::kernels::to_string(dy_dtype)) + " params " +
                                  std::string(tewb::kernels::to_string(param_dtype)) + (fast ? " fast" : " plain");
        for (std::size_t i = 0; i < rows * hidden; ++i) {
            const double tol = ref.dx_tolerance[i] + store_error(x_dtype, ref.dx[i]);
            QVERIFY2(agrees(dx.at(i), ref.dx[i], tol),
                     (describe("rms dx", rows, hidden, i, dx.at(i), ref.dx[i], tol) + where).c_str());
            if (x_dtype == DType::Float32) worst_rms_dx_ = std::max(worst_rms_dx_, std::fabs(dx.at(i) - ref.dx[i]) / tol);
        }
        std::vector<float> order = rms_norm_dgamma_in_kernel_order(dyv, xv, rstd, rows, hidden);
        if (fast) {  // LayerNorm's order with mean 0 (xhat = (x - 0) · rstd); its dbeta unused
            std::vector<float> unused;
            layer_norm_dparams_in_kernel_order(dyv, xv, std::vector<float>(rows, 0.0f), rstd, rows, hidden, true, groups, order, unused);
        }
        for (std::size_t c = 0; c < hidden; ++c) {
            const double tol = std::ldexp(ref.dgamma_magnitude[c], -20) + store_error(param_dtype, ref.dgamma[c]);
            QVERIFY2(agrees(dgamma.at(c), ref.dgamma[c], tol),
                     (describe("rms dgamma", rows, hidden, c, dgamma.at(c), ref.dgamma[c], tol) + where).c_str());
            if (param_dtype == DType::Float32) {
                worst_rms_dgamma_ = std::max(worst_rms_dgamma_, std::fabs(dgamma.at(c) - ref.dgamma[c]) / tol);
            }
            Buffer expect(param_dtype, 1);
            expect.set(0, order[c]);
            QVERIFY2(same_bits(dgamma.at(c), expect.at(0)),
                     (describe("rms dgamma order", rows, hidden, c, dgamma.at(c), expect.at(0), 0) + where).c_str());
        }
    }

    void check_forward(std::mt19937& rng, DType x_dtype, DType param_dtype, DType out_dtype, std::size_t rows, std::size_t hidden,
                       std::size_t shift) {
        Buffer x = random_tensor(x_dtype, rows * hidden, rng, 2.0f, 3.0f, shift);
        Buffer gamma = random_tensor(param_dtype, hidden, rng, 1.0f, 0.5f);
        Buffer beta = random_tensor(param_dtype, hidden, rng, 0.0f, 0.5f);
        Buffer out(out_dtype, rows * hidden, shift);
        std::vector<float> mean(rows), rstd(rows);
        const float eps = 1e-5f;
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_forward(input(x.data(), x_dtype, rows, hidden), input(gamma.data(), param_dtype, 1, hidden),
                                              input(beta.data(), param_dtype, 1, hidden), eps, input(out.data(), out_dtype, rows, hidden),
                                              nullptr, mean.data(), rstd.data());
                 }),
                 std::uint64_t{1});
        const LayerNormReference ref = layer_norm_reference(x.values(), gamma.values(), beta.values(), rows, hidden, eps);
        const std::string where = std::string(" ") + std::string(tewb::kernels::to_string(x_dtype)) + "/" +
                                  std::string(tewb::kernels::to_string(param_dtype)) + "/" +
                                  std::string(tewb::kernels::to_string(out_dtype)) + (shift != 0 ? " misaligned" : "");
        for (std::size_t i = 0; i < rows * hidden; ++i) {
            const double tol = ref.tolerance[i] + store_error(out_dtype, ref.y[i]);
            QVERIFY2(agrees(out.at(i), ref.y[i], tol),
                     (describe("layer_norm y", rows, hidden, i, out.at(i), ref.y[i], tol) + where).c_str());
            if (out_dtype == DType::Float32) worst_y_ = std::max(worst_y_, std::fabs(out.at(i) - ref.y[i]) / tol);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            double magnitude = 0.0;
            for (std::size_t c = 0; c < hidden; ++c) magnitude += std::fabs(x.at(r * hidden + c));
            const double mean_tol = std::ldexp(magnitude / static_cast<double>(hidden), -21);
            const double rstd_tol = std::ldexp(ref.rstd[r], -21);
            QVERIFY2(std::fabs(mean[r] - ref.mean[r]) <= mean_tol,
                     describe("mean", rows, hidden, r, mean[r], ref.mean[r], mean_tol).c_str());
            QVERIFY2(std::fabs(rstd[r] - ref.rstd[r]) <= rstd_tol,
                     describe("rstd", rows, hidden, r, rstd[r], ref.rstd[r], rstd_tol).c_str());
        }
    }

    void check_backward(std::mt19937& rng, DType x_dtype, DType dy_dtype, DType param_dtype, std::size_t rows, std::size_t hidden,
                        std::size_t shift) {
        Buffer x = random_tensor(x_dtype, rows * hidden, rng, -1.0f, 2.0f, shift);
        Buffer dy = random_tensor(dy_dtype, rows * hidden, rng, 0.1f, 1.0f, shift);
        Buffer gamma = random_tensor(param_dtype, hidden, rng, 1.0f, 0.5f);
        Buffer beta = random_tensor(param_dtype, hidden, rng, 0.0f, 0.5f);
        Buffer y(DType::Float32, rows * hidden);
        std::vector<float> mean(rows), rstd(rows);
        calls::layer_norm_forward(input(x.data(), x_dtype, rows, hidden), input(gamma.data(), param_dtype, 1, hidden),
                                 input(beta.data(), param_dtype, 1, hidden), 1e-5f, input(y.data(), DType::Float32, rows, hidden), nullptr,
                                 mean.data(), rstd.data());
        Buffer dx(x_dtype, rows * hidden, shift), dgamma(param_dtype, hidden), dbeta(param_dtype, hidden);
        const std::size_t bytes = tewb::kernels::layer_norm_backward_workspace_bytes(rows, hidden);
        std::vector<float> workspace(bytes / 4);
        // The CUDA rule for the fast kernels: whole 16-byte vectors, aligned pointers, a row short enough.
        const std::size_t width = x_dtype == DType::Float32 ? 4 : 8;
        const bool fast = shift == 0 && hidden % width == 0 && hidden <= 32 * 8 * width * 4;
        const std::size_t groups = fast && hidden <= 32 * width * 4 ? 4 : 1;
        QCOMPARE(launches_of([&] {
                     calls::layer_norm_backward(input(dy.data(), dy_dtype, rows, hidden), input(x.data(), x_dtype, rows, hidden),
                                               mean.data(), rstd.data(), input(gamma.data(), param_dtype, 1, hidden),
                                               input(dx.data(), x_dtype, rows, hidden), input(dgamma.data(), param_dtype, 1, hidden),
                                               input(dbeta.data(), param_dtype, 1, hidden), {workspace.data(), bytes});
                 }),
                 std::uint64_t{fast ? 1u : 2u});  // fast: one launch; plain: dx, then the partial rows finished in place
        const std::vector<float> dyv = dy.values(), xv = x.values();
        const LayerNormBackwardReference ref = layer_norm_backward_reference(dyv, xv, mean, rstd, gamma.values(), rows, hidden);
        const std::string where = std::string(" x ") + std::string(tewb::kernels::to_string(x_dtype)) + " dy " +
                                  std::string(tewb::kernels::to_string(dy_dtype)) + " params " +
                                  std::string(tewb::kernels::to_string(param_dtype)) + (fast ? " fast" : " plain");
        for (std::size_t i = 0; i < rows * hidden; ++i) {
            const double tol = ref.dx_tolerance[i] + store_error(x_dtype, ref.dx[i]);
            QVERIFY2(agrees(dx.at(i), ref.dx[i], tol),
                     (describe("dx", rows, hidden, i, dx.at(i), ref.dx[i], tol) + where).c_str());
            if (x_dtype == DType::Float32) worst_dx_ = std::max(worst_dx_, std::fabs(dx.at(i) - ref.dx[i]) / tol);
        }
        std::vector<float> order_g, order_b;
        layer_norm_dparams_in_kernel_order(dyv, xv, mean, rstd, rows, hidden, fast, groups, order_g, order_b);
        for (std::size_t c = 0; c < hidden; ++c) {
            const double tol_g = std::ldexp(ref.dgamma_magnitude[c], -20) + store_error(param_dtype, ref.dgamma[c]);
            const double tol_b = std::ldexp(ref.dbeta_magnitude[c], -20) + store_error(param_dtype, ref.dbeta[c]);
            QVERIFY2(agrees(dgamma.at(c), ref.dgamma[c], tol_g),
                     (describe("dgamma", rows, hidden, c, dgamma.at(c), ref.dgamma[c], tol_g) + where).c_str());
            QVERIFY2(agrees(dbeta.at(c), ref.dbeta[c], tol_b),
                     (describe("dbeta", rows, hidden, c, dbeta.at(c), ref.dbeta[c], tol_b) + where).c_str());
            if (param_dtype == DType::Float32) {
                worst_dparams_ = std::max({worst_dparams_, std::fabs(dgamma.at(c) - ref.dgamma[c]) / tol_g,
                                           std::fabs(dbeta.at(c) - ref.dbeta[c]) / tol_b});
            }
            // Bit for bit the kernels' order: the partial rows, then the final 8-way order.
            Buffer expect(param_dtype, 2);
            expect.set(0, order_g[c]);
            expect.set(1, order_b[c]);
            QVERIFY2(same_bits(dgamma.at(c), expect.at(0)),
                     (describe("dgamma order", rows, hidden, c, dgamma.at(c), expect.at(0), 0) + where).c_str());
            QVERIFY2(same_bits(dbeta.at(c), expect.at(1)),
                     (describe("dbeta order", rows, hidden, c, dbeta.at(c), expect.at(1), 0) + where).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestHostNormalization)
#include "tst_host_normalization.moc"
