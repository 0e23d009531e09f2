// The host kernels that hand a Linear its output gradient already cast, with its bias gradient, from a pass that
// reads that gradient anyway. host::stacked_cast_dbias and host::stacked_cast_transpose_dbias_to_fp8
// (tewb_kernels/cast.h): the qkv projection's from the attention's dq, dk and dv where they lie, each checked against
// the dense call on the parts copied side by side, byte for byte (outputs, amax, partial rows of the sums, launches):
// parts with their own row strides (odd ones too), one to three parts, both dtypes, with and without the sums, and
// the alignment rule that picks the FP8 kernel (and so the order of its sums). host::layer_norm_backward_cast_dbias
// (tewb_kernels/normalization.h): proj's and fc2's from the LayerNorm backward that computes it, against
// layer_norm_backward_add byte for byte, its copy against dx's rounding and its sums against the fast kernel's order
// re-derived here (on the plain path: cast_dbias's bits). Then the refusals.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "normalization/layer_norm_rule.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/launch_count.h"
#include "launch_checks.h"

using namespace tewb::kernels;

namespace {

std::size_t bytes_of(DType dtype) {
    return dtype == DType::Float32 ? 4 : 2;
}

// Bytes at a 256-byte aligned start (as cudaMalloc gives), plus `offset`.
struct Aligned {
    std::vector<unsigned char> storage;
    unsigned char* data = nullptr;
    Aligned(std::size_t bytes, std::size_t offset = 0) : storage(bytes + 512, 0) {
        const auto start = reinterpret_cast<std::uintptr_t>(storage.data());
        data = storage.data() + (256 - start % 256) % 256 + offset;
    }
};

// `count` parts [rows, cols] in one buffer, each row `stride` elements after the one before, filled with normal values
// of mixed magnitudes (a NaN and an infinity in part 0 when asked); `dense` holds them side by side.
struct Parts {
    DType dtype;
    std::size_t rows, cols, count, stride;
    Aligned buffer;
    std::vector<Tensor> tensors;

    Parts(DType dtype_, std::size_t rows_, std::size_t cols_, std::size_t count_, std::size_t stride_, std::uint32_t seed,
          bool specials)
        : dtype(dtype_), rows(rows_), cols(cols_), count(count_), stride(stride_),
          buffer(count_ * part_bytes(dtype_, rows_, cols_, stride_)) {
        std::mt19937 random(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t p = 0; p < count; ++p) {
            unsigned char* base = buffer.data + p * part_bytes(dtype, rows, cols, stride);
            Tensor t = input(base, dtype, rows, cols);
            t.row_stride = stride == cols ? 0 : stride;
            tensors.push_back(t);
            for (std::size_t r = 0; r < rows; ++r) {
                for (std::size_t c = 0; c < cols; ++c) {
                    float v = normal(random) * std::ldexp(1.0f, static_cast<int>((r + c) % 7) - 3);
                    if (specials && p == 0 && r == 0 && c == 1) v = std::numeric_limits<float>::quiet_NaN();
                    if (specials && p == 0 && r == 0 && c == 2) v = std::numeric_limits<float>::infinity();
                    store(base + (r * stride + c) * bytes_of(dtype), v);
                }
            }
        }
    }

    static std::size_t part_bytes(DType dtype, std::size_t rows, std::size_t cols, std::size_t stride) {
        // Rounded up to 16 bytes, so every part starts as aligned as the first when its rows are.
        const std::size_t bytes = ((rows == 0 ? 0 : (rows - 1) * stride + cols) * bytes_of(dtype) + 15) / 16 * 16;
        return bytes + 16;
    }

    void store(unsigned char* at, float v) const {
        if (dtype == DType::Float32) {
            std::memcpy(at, &v, 4);
        } else {
            std::uint32_t u = 0;
            std::memcpy(&u, &v, 4);
            const auto h = static_cast<std::uint16_t>(u >> 16);  // truncation: any bfloat16 value will do here
            std::memcpy(at, &h, 2);
        }
    }

    // The parts side by side, as one dense [rows, count · cols] matrix at `offset` bytes past an aligned start.
    Aligned dense(std::size_t offset = 0) const {
        const std::size_t row_bytes = cols * bytes_of(dtype);
        Aligned x(rows * row_bytes * count, offset);
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t p = 0; p < count; ++p) {
                std::memcpy(x.data + (r * count + p) * row_bytes, static_cast<const unsigned char*>(tensors[p].data) + r * stride * bytes_of(dtype),
                            row_bytes);
            }
        }
        return x;
    }
};

std::string describe(DType dtype, std::size_t rows, std::size_t cols, std::size_t count, std::size_t stride) {
    return std::string(to_string(dtype)) + " " + std::to_string(count) + " x [" + std::to_string(rows) + ", " + std::to_string(cols) +
           "] stride " + std::to_string(stride);
}

bool same_bytes(const void* a, const void* b, std::size_t n) {
    return std::memcmp(a, b, n) == 0;
}

void expect_refused(const std::function<void()>& call, const std::string& entry, const std::string& part) {
    try {
        call();
    } catch (const KernelError& e) {
        const std::string message = e.what();
        QVERIFY2(message.find(entry) != std::string::npos && message.find(part) != std::string::npos, message.c_str());
        return;
    }
    QFAIL(("not refused: " + part).c_str());
}

// A LayerNorm backward's inputs ([rows, hidden]: x of x_dtype with its saved statistics, a bfloat16 dy, a dresidual
// of x's dtype) in 256-byte aligned memory.
struct NormInputs {
    std::size_t rows, hidden;
    DType x_dtype;
    Aligned x, dy, dresidual, gamma;
    std::vector<float> mean, rstd;

    NormInputs(std::size_t rows_, std::size_t hidden_, DType x_dtype_, std::uint32_t seed)
        : rows(rows_), hidden(hidden_), x_dtype(x_dtype_), x(rows_ * hidden_ * 4), dy(rows_ * hidden_ * 2),
          dresidual(rows_ * hidden_ * 4), gamma(hidden_ * 4), mean(rows_), rstd(rows_) {
        std::mt19937 random(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t i = 0; i < rows * hidden; ++i) {
            tewb::kernels::detail::store(x.data, x_dtype, i, normal(random) * 2.0f + 0.5f);
            tewb::kernels::detail::store(dy.data, DType::BFloat16, i, normal(random));
            tewb::kernels::detail::store(dresidual.data, x_dtype, i, normal(random) * 0.5f);
        }
        for (std::size_t c = 0; c < hidden; ++c) tewb::kernels::detail::store(gamma.data, DType::Float32, c, 1.0f + 0.1f * normal(random));
        for (std::size_t r = 0; r < rows; ++r) {
            double sum = 0.0, squares = 0.0;
            for (std::size_t c = 0; c < hidden; ++c) sum += tewb::kernels::detail::load(x.data, x_dtype, r * hidden + c);
            const double mu = sum / static_cast<double>(hidden);
            for (std::size_t c = 0; c < hidden; ++c) {
                const double d = tewb::kernels::detail::load(x.data, x_dtype, r * hidden + c) - mu;
                squares += d * d;
            }
            mean[r] = static_cast<float>(mu);
            rstd[r] = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(hidden) + 1e-5));
        }
    }
    Tensor tensor(const Aligned& a, DType dtype) const { return input(a.data, dtype, rows, hidden); }
    Tensor vector_of(const float* v) const { return input(v, DType::Float32, 1, rows); }
};

// The by-class finish of the LayerNorm backward's partial rows (layer_norm_dparams.cuh): per column, 8 class sums
// (partial rows w, w + 8, ...) from 0, then the classes added in order.
std::vector<float> class_finish(const std::vector<std::vector<float>>& partial, std::size_t hidden) {
    std::vector<float> total(hidden, 0.0f);
    for (std::size_t c = 0; c < hidden; ++c) {
        float classes[8] = {};
        for (std::size_t w = 0; w < 8; ++w) {
            for (std::size_t k = w; k < partial.size(); k += 8) classes[w] += partial[k][c];
        }
        for (const float v : classes) total[c] += v;
    }
    return total;
}

// The fast kernel's order for dx's column sums (layer_norm_fast.cuh, layer_norm_dparams.cuh), re-derived: block k of
// min(ceil(rows / groups), 256) blocks, its group i summing rows k · groups + i, + blocks · groups, ... in order from
// 0; the block's groups added in order; then per column 8 class sums (partial rows w, w + 8, ...) added in order.
std::vector<float> fast_column_sums(const std::vector<float>& dx, std::size_t rows, std::size_t hidden, std::size_t groups) {
    const std::size_t blocks = std::min((rows + groups - 1) / groups, std::min<std::size_t>(std::max<std::size_t>(rows, 1), 256));
    std::vector<std::vector<float>> partial(blocks, std::vector<float>(hidden, 0.0f));
    for (std::size_t k = 0; k < blocks; ++k) {
        for (std::size_t group = 0; group < groups; ++group) {
            std::vector<float> acc(hidden, 0.0f);
            for (std::size_t r = k * groups + group; r < rows; r += blocks * groups) {
                for (std::size_t c = 0; c < hidden; ++c) acc[c] += dx[r * hidden + c];
            }
            for (std::size_t c = 0; c < hidden; ++c) partial[k][c] = groups == 1 ? acc[c] : partial[k][c] + acc[c];
        }
    }
    return class_finish(partial, hidden);
}

// The banded FP8 kernel's order (layer_norm_fast.cuh, layer_norm_backward_quantized), re-derived for one sum (term
// given per element): block k of min(bands, 256) takes bands k, k + blocks, ...; its group i the band's rows r0 + i,
// + groups, ...; each group sums from 0 in that order, the block adds its groups in order (a lone group's sum as it
// is), then per column 8 class sums added in order.
std::vector<float> banded_column_sums(const std::function<float(std::size_t, std::size_t)>& term, std::size_t rows, std::size_t hidden,
                                      std::size_t groups, std::size_t band) {
    const std::size_t bands = (rows + band - 1) / band;
    const std::size_t blocks = std::min(bands, std::min<std::size_t>(std::max<std::size_t>(rows, 1), 256));
    std::vector<std::vector<float>> partial(blocks, std::vector<float>(hidden, 0.0f));
    for (std::size_t k = 0; k < blocks; ++k) {
        for (std::size_t group = 0; group < groups; ++group) {
            std::vector<float> acc(hidden, 0.0f);
            for (std::size_t b = k; b < bands; b += blocks) {
                for (std::size_t r = b * band + group; r < std::min(rows, (b + 1) * band); r += groups) {
                    for (std::size_t c = 0; c < hidden; ++c) acc[c] += term(r, c);
                }
            }
            for (std::size_t c = 0; c < hidden; ++c) partial[k][c] = groups == 1 ? acc[c] : partial[k][c] + acc[c];
        }
    }
    return class_finish(partial, hidden);
}

}  // namespace

class TstHostHandoverCasts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void castDbiasIsTheDenseCastOfThePartsSideBySide() {
        struct Shape {
            std::size_t rows, cols;
        };
        // The seed's attention (3072 tokens, 12 heads of 64) among odd shapes and chunks that wrap.
        const Shape shapes[] = {{1, 1}, {9, 17}, {64, 40}, {1025, 8}, {3072, 768}};
        std::uint32_t seed = 7100;
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType out_dtype : {DType::Float32, DType::BFloat16}) {
                for (const Shape& s : shapes) {
                    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
                        for (const std::size_t stride : {s.cols, s.cols + 5, 2 * s.cols}) {
                            if (s.rows == 3072 && (count != 3 || stride != s.cols || dtype != out_dtype)) continue;
                            const std::string what = describe(dtype, s.rows, s.cols, count, stride);
                            const Parts parts(dtype, s.rows, s.cols, count, stride, seed++, s.rows < 3072);
                            const std::size_t cols = s.cols * count;
                            const Aligned dense = parts.dense();
                            const std::size_t out_bytes = s.rows * cols * bytes_of(out_dtype);
                            const std::size_t ws_bytes = cast_dbias_workspace_bytes(s.rows, cols);
                            Aligned want_out(out_bytes), got_out(out_bytes), want_dbias(cols * 4), got_dbias(cols * 4);
                            Aligned want_ws(ws_bytes), got_ws(ws_bytes);
                            host::cast_dbias(input(dense.data, dtype, s.rows, cols), input(want_out.data, out_dtype, s.rows, cols),
                                             input(want_dbias.data, DType::Float32, 1, cols), {want_ws.data, ws_bytes}, {});
                            const std::uint64_t launches = launch_count();
                            host::stacked_cast_dbias(parts.tensors.data(), count, input(got_out.data, out_dtype, s.rows, cols),
                                                     input(got_dbias.data, DType::Float32, 1, cols), {got_ws.data, ws_bytes}, {});
                            QVERIFY2(launch_count() == launches + 1, what.c_str());
                            QVERIFY2(same_bytes(want_out.data, got_out.data, out_bytes), (what + ": out").c_str());
                            QVERIFY2(same_bytes(want_dbias.data, got_dbias.data, cols * 4), (what + ": dbias").c_str());
                            QVERIFY2(same_bytes(want_ws.data, got_ws.data, ws_bytes), (what + ": partial sums").c_str());
                        }
                    }
                }
            }
        }
    }

    void castTransposeDbiasIsTheDenseCastWithTheSameKernelChoice() {
        struct Case {
            DType dtype;
            std::size_t rows, cols, count, stride;
            bool vector;  // every part 16-byte aligned row by row, cols a multiple of the vector: the wide kernel
        };
        const Case cases[] = {
            {DType::BFloat16, 3072, 768, 3, 768, true},   // the seed's attention: the wide kernel, as dense
            {DType::BFloat16, 64, 64, 3, 72, true},       // a wider row stride that keeps 16-byte rows
            {DType::BFloat16, 64, 64, 3, 65, false},      // an odd stride: rows not 16-byte aligned
            {DType::BFloat16, 64, 12, 2, 12, false},      // 12 columns: an 8-element vector would cross a part
            {DType::Float32, 128, 40, 3, 40, true},       // float32: 4-element vectors
            {DType::Float32, 33, 9, 3, 11, false},        // rows not a multiple of 8: the plain kernel either way
            {DType::Float16, 64, 64, 3, 64, false},       // float16 has no wide kernel
        };
        std::uint32_t seed = 7300;
        for (const Case& k : cases) {
            for (const bool sums : {true, false}) {
                const std::string what = describe(k.dtype, k.rows, k.cols, k.count, k.stride) + (sums ? ", sums" : ", no sums");
                const Parts parts(k.dtype, k.rows, k.cols, k.count, k.stride, seed++, true);
                const std::size_t cols = k.cols * k.count;
                const std::size_t n = k.rows * cols;
                // The dense call's kernel follows x's alignment: misalign it where the parts do not fit the wide kernel.
                const Aligned dense = parts.dense(k.vector ? 0 : bytes_of(k.dtype));
                const float scale = 3.0f;
                const std::size_t ws_bytes = cast_transpose_dbias_workspace_bytes(k.rows, cols);
                Aligned want(n), want_t(n), got(n), got_t(n), want_dbias(cols * 4), got_dbias(cols * 4), want_ws(ws_bytes),
                    got_ws(ws_bytes);
                float want_amax = 0.0f, got_amax = 0.0f;
                const auto fp8 = [&](Aligned& data, Aligned& transposed, float* amax) {
                    Tensor t = input(data.data, DType::Float8E4M3, k.rows, cols);
                    t.transposed = transposed.data;
                    t.scale = const_cast<float*>(&scale);
                    t.amax = amax;
                    return t;
                };
                const Tensor want_dbias_t = sums ? input(want_dbias.data, DType::Float32, 1, cols) : Tensor{};
                const Tensor got_dbias_t = sums ? input(got_dbias.data, DType::Float32, 1, cols) : Tensor{};
                const Tensor x = input(dense.data, k.dtype, k.rows, cols);
                if (sums) {
                    host::cast_transpose_dbias_to_fp8(x, fp8(want, want_t, &want_amax), want_dbias_t, {want_ws.data, ws_bytes}, {});
                } else {
                    host::cast_transpose_to_fp8(x, fp8(want, want_t, &want_amax), {});
                }
                const std::uint64_t launches = launch_count();
                host::stacked_cast_transpose_dbias_to_fp8(parts.tensors.data(), k.count, fp8(got, got_t, &got_amax), got_dbias_t,
                                                          sums ? Workspace{got_ws.data, ws_bytes} : Workspace{}, {});
                QVERIFY2(launch_count() == launches + 1, what.c_str());
                QVERIFY2(same_bytes(want.data, got.data, n), (what + ": out").c_str());
                QVERIFY2(same_bytes(want_t.data, got_t.data, n), (what + ": out.transposed").c_str());
                QVERIFY2(same_bytes(&want_amax, &got_amax, 4), (what + ": amax").c_str());
                if (sums) {
                    QVERIFY2(same_bytes(want_dbias.data, got_dbias.data, cols * 4), (what + ": dbias").c_str());
                    QVERIFY2(same_bytes(want_ws.data, got_ws.data, ws_bytes), (what + ": partial sums").c_str());
                }
            }
        }
    }

    // The backward's amax hand-off (layer_norm_backward_cast_dbias_current_scale): layer_norm_backward_cast_dbias without the
    // copy, then abs_max_current_scale of dx, bit for bit (dx, dgamma, dbeta, dbias, scale, scale_inv, staging); one launch
    // on the fast kernel, the plain path's three and abs_max_current_scale's elsewhere (hidden 98); no rows: the scale of amax 0.
    void layerNormBackwardHandsItsScaleToo_data() {
        QTest::addColumn<int>("x_dtype");
        QTest::addColumn<int>("hidden");
        QTest::newRow("float32 x (proj, fc2)") << int(DType::Float32) << 768;
        QTest::newRow("bf16 x") << int(DType::BFloat16) << 768;
        QTest::newRow("plain path, hidden 98") << int(DType::Float32) << 98;
    }
    void layerNormBackwardHandsItsScaleToo() {
        QFETCH(int, x_dtype);
        QFETCH(int, hidden);
        const auto xt = static_cast<DType>(x_dtype);
        const std::size_t rows = 300, h = static_cast<std::size_t>(hidden);
        const NormInputs in(rows, h, xt, 17);
        const Tensor gamma = input(in.gamma.data, DType::Float32, 1, h);
        const std::size_t ws_bytes = tewb::kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, h);
        const auto scalar = [](float* p) { return input(p, DType::Float32, 1, 1); };
        Aligned want_dx(rows * h * 4), want_dgamma(h * 4), want_dbeta(h * 4), want_dbias(h * 4), want_ws(ws_bytes);
        float want[3] = {0.0f, 0.0f, 0.5f}, got[3] = {0.0f, 0.0f, 0.5f};
        const std::uint64_t before = launch_count();
        host::layer_norm_backward_cast_dbias(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()),
                                             in.vector_of(in.rstd.data()), gamma, in.tensor(want_dx, xt), in.tensor(in.dresidual, xt),
                                             input(want_dgamma.data, DType::Float32, 1, h), input(want_dbeta.data, DType::Float32, 1, h),
                                             Tensor{}, input(want_dbias.data, DType::Float32, 1, h), {want_ws.data, ws_bytes}, {});
        const std::uint64_t plain = launch_count() - before;
        host::abs_max_current_scale(in.tensor(want_dx, xt), 448.0f, scalar(&want[0]), scalar(&want[1]), scalar(&want[2]), {});
        Aligned dx(rows * h * 4), dgamma(h * 4), dbeta(h * 4), dbias(h * 4), ws(ws_bytes);
        tewb::kernels::CurrentScaleTarget target;
        target.numerator = 448.0f;
        target.scale = scalar(&got[0]);
        target.scale_inv = scalar(&got[1]);
        target.staging = scalar(&got[2]);
        const std::uint64_t start = launch_count();
        host::layer_norm_backward_cast_dbias_current_scale(
            in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()), in.vector_of(in.rstd.data()), gamma,
            in.tensor(dx, xt), in.tensor(in.dresidual, xt), input(dgamma.data, DType::Float32, 1, h), input(dbeta.data, DType::Float32, 1, h),
            target, input(dbias.data, DType::Float32, 1, h), {ws.data, ws_bytes}, {});
        const bool fast = h % 4 == 0;
        QCOMPARE(launch_count() - start, fast ? plain : plain + 1);
        QVERIFY(same_bytes(dx.data, want_dx.data, rows * h * (xt == DType::Float32 ? 4 : 2)));
        QVERIFY(same_bytes(dgamma.data, want_dgamma.data, h * 4));
        QVERIFY(same_bytes(dbeta.data, want_dbeta.data, h * 4));
        QVERIFY(same_bytes(dbias.data, want_dbias.data, h * 4));
        QVERIFY(same_bytes(got, want, sizeof got));
        // A target inside the workspace is refused before anything runs.
        tewb::kernels::CurrentScaleTarget in_workspace = target;
        in_workspace.scale = scalar(reinterpret_cast<float*>(ws.data) + 3);
        tewb::test::expect_refusal(
            [&] {
                host::layer_norm_backward_cast_dbias_current_scale(
                    in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()), in.vector_of(in.rstd.data()),
                    gamma, in.tensor(dx, xt), in.tensor(in.dresidual, xt), input(dgamma.data, DType::Float32, 1, h),
                    input(dbeta.data, DType::Float32, 1, h), in_workspace, input(dbias.data, DType::Float32, 1, h), {ws.data, ws_bytes},
                    {});
            },
            {"layer_norm_backward_cast_dbias_current_scale", "a current-scaling target lies in the workspace"});
    }

    // The LayerNorm backward with the Linear's copy and sums: dx, dgamma and dbeta those of layer_norm_backward_add
    // byte for byte, the copy dx's rounding, the sums in the fast kernel's order (one launch) or, on the plain path
    // (hidden 98: not whole 16-byte vectors), cast_dbias's over dx (its launch after the backward's two).
    void layerNormBackwardHandsTheLinearItsGradient_data() {
        QTest::addColumn<int>("x_dtype");
        QTest::addColumn<int>("hidden");
        QTest::addColumn<bool>("residual");
        QTest::addColumn<int>("grad_dtype");  // -1: no copy (the sums alone)
        QTest::newRow("float32 x, bf16 copy (proj, fc2)") << int(DType::Float32) << 768 << true << int(DType::BFloat16);
        QTest::newRow("float32 x, no residual (the head's)") << int(DType::Float32) << 768 << false << int(DType::BFloat16);
        QTest::newRow("float32 x, sums only") << int(DType::Float32) << 768 << true << -1;
        QTest::newRow("bf16 x, float32 copy") << int(DType::BFloat16) << 768 << true << int(DType::Float32);
        QTest::newRow("plain path, hidden 98") << int(DType::Float32) << 98 << true << int(DType::BFloat16);
    }
    void layerNormBackwardHandsTheLinearItsGradient() {
        QFETCH(int, x_dtype);
        QFETCH(int, hidden);
        QFETCH(bool, residual);
        QFETCH(int, grad_dtype);
        const auto xt = static_cast<DType>(x_dtype);
        const std::size_t rows = 1030, h = static_cast<std::size_t>(hidden);
        const NormInputs in(rows, h, xt, 91);
        const Tensor gamma = input(in.gamma.data, DType::Float32, 1, h);
        const Tensor dresidual = residual ? in.tensor(in.dresidual, xt) : Tensor{};
        Aligned want_dx(rows * h * 4), want_dgamma(h * 4), want_dbeta(h * 4), want_ws(tewb::kernels::layer_norm_backward_workspace_bytes(rows, h));
        host::layer_norm_backward_add(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()),
                                      in.vector_of(in.rstd.data()), gamma, in.tensor(want_dx, xt), dresidual,
                                      input(want_dgamma.data, DType::Float32, 1, h), input(want_dbeta.data, DType::Float32, 1, h),
                                      {want_ws.data, want_ws.storage.size() - 512}, {});
        const std::size_t ws_bytes = tewb::kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, h);
        Aligned dx(rows * h * 4), dgamma(h * 4), dbeta(h * 4), grad(rows * h * 4), dbias(h * 4), ws(ws_bytes);
        const Tensor grad_t = grad_dtype < 0 ? Tensor{} : input(grad.data, static_cast<DType>(grad_dtype), rows, h);
        const std::uint64_t launches = launch_count();
        host::layer_norm_backward_cast_dbias(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()),
                                             in.vector_of(in.rstd.data()), gamma, in.tensor(dx, xt), dresidual,
                                             input(dgamma.data, DType::Float32, 1, h), input(dbeta.data, DType::Float32, 1, h), grad_t,
                                             input(dbias.data, DType::Float32, 1, h), {ws.data, ws_bytes}, {});
        const bool fast = h % 4 == 0;
        QCOMPARE(launch_count() - launches, std::uint64_t{fast ? 1u : 3u});
        const std::size_t x_bytes = rows * h * (xt == DType::Float32 ? 4 : 2);
        QVERIFY(same_bytes(dx.data, want_dx.data, x_bytes));
        QVERIFY(same_bytes(dgamma.data, want_dgamma.data, h * 4));
        QVERIFY(same_bytes(dbeta.data, want_dbeta.data, h * 4));
        std::vector<float> stored(rows * h);
        for (std::size_t i = 0; i < rows * h; ++i) stored[i] = tewb::kernels::detail::load(dx.data, xt, i);
        if (grad_dtype >= 0) {
            Aligned rounded(rows * h * 4);
            for (std::size_t i = 0; i < rows * h; ++i) tewb::kernels::detail::store(rounded.data, static_cast<DType>(grad_dtype), i, stored[i]);
            QVERIFY(same_bytes(grad.data, rounded.data, rows * h * (grad_dtype == int(DType::Float32) ? 4 : 2)));
        }
        std::vector<float> want(h);
        if (fast) {
            // float32 x: one row per block (4 warps a row); bfloat16 x: 4 one-warp rows per block.
            want = fast_column_sums(stored, rows, h, xt == DType::Float32 ? 1 : 4);
        } else {
            Aligned sums(h * 4), scratch(cast_dbias_workspace_bytes(rows, h));
            host::cast_dbias(input(dx.data, xt, rows, h), Tensor{}, input(sums.data, DType::Float32, 1, h),
                             {scratch.data, scratch.storage.size() - 512}, {});
            std::memcpy(want.data(), sums.data, h * 4);
        }
        QVERIFY(same_bytes(dbias.data, want.data(), h * 4));
    }

    // The FP8 form: dx byte for byte layer_norm_backward_add's, its FP8 bytes, transposed copy and amax
    // cast_transpose_to_fp8's of dx, and dgamma, dbeta and dx's column sums in the banded kernel's order (one launch);
    // on the plain path (hidden 98) the backward's two launches and cast_transpose_dbias_to_fp8's.
    void layerNormBackwardQuantizedHandsTheFp8Linear_data() {
        QTest::addColumn<int>("x_dtype");
        QTest::addColumn<int>("hidden");
        QTest::addColumn<bool>("residual");
        QTest::addColumn<int>("rows_in");
        QTest::newRow("float32 x (proj, fc2)") << int(DType::Float32) << 768 << true << 1030;
        QTest::newRow("float32 x, no residual (the head's)") << int(DType::Float32) << 768 << false << 1030;
        QTest::newRow("bf16 x, 4 rows a block") << int(DType::BFloat16) << 768 << true << 1030;
        QTest::newRow("bf16 x, bands of 16") << int(DType::BFloat16) << 1024 << true << 4224;
        QTest::newRow("float32 x, bands of 32, 4 groups") << int(DType::Float32) << 512 << true << 8448;
        QTest::newRow("plain path, hidden 98") << int(DType::Float32) << 98 << true << 1030;
    }
    void layerNormBackwardQuantizedHandsTheFp8Linear() {
        QFETCH(int, x_dtype);
        QFETCH(int, hidden);
        QFETCH(bool, residual);
        QFETCH(int, rows_in);
        const auto xt = static_cast<DType>(x_dtype);
        const std::size_t rows = static_cast<std::size_t>(rows_in), h = static_cast<std::size_t>(hidden);
        const NormInputs in(rows, h, xt, 97);
        const Tensor gamma = input(in.gamma.data, DType::Float32, 1, h);
        const Tensor dresidual = residual ? in.tensor(in.dresidual, xt) : Tensor{};
        Aligned want_dx(rows * h * 4), want_dgamma(h * 4), want_dbeta(h * 4), want_ws(tewb::kernels::layer_norm_backward_workspace_bytes(rows, h));
        host::layer_norm_backward_add(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()),
                                      in.vector_of(in.rstd.data()), gamma, in.tensor(want_dx, xt), dresidual,
                                      input(want_dgamma.data, DType::Float32, 1, h), input(want_dbeta.data, DType::Float32, 1, h),
                                      {want_ws.data, want_ws.storage.size() - 512}, {});
        const std::size_t ws_bytes = tewb::kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, h);
        Aligned dx(rows * h * 4), dgamma(h * 4), dbeta(h * 4), q(rows * h), q_t(rows * h), dbias(h * 4), ws(ws_bytes);
        float scale = 24.0f, amax = 0.0f;
        Tensor fp8 = input(q.data, DType::Float8E5M2, rows, h);
        fp8.transposed = q_t.data;
        fp8.scale = &scale;
        fp8.amax = &amax;
        const std::uint64_t launches = launch_count();
        host::layer_norm_backward_quantize_dbias(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, xt), in.vector_of(in.mean.data()),
                                                 in.vector_of(in.rstd.data()), gamma, in.tensor(dx, xt), dresidual,
                                                 input(dgamma.data, DType::Float32, 1, h), input(dbeta.data, DType::Float32, 1, h), fp8,
                                                 input(dbias.data, DType::Float32, 1, h), {ws.data, ws_bytes}, {});
        const bool fast = h % 4 == 0;
        QCOMPARE(launch_count() - launches, std::uint64_t{fast ? 1u : 3u});
        QVERIFY(same_bytes(dx.data, want_dx.data, rows * h * (xt == DType::Float32 ? 4 : 2)));
        // The FP8 bytes: cast_transpose_to_fp8's of dx as stored.
        Aligned want_q(rows * h), want_t(rows * h);
        float want_amax = 0.0f;
        Tensor want_fp8 = input(want_q.data, DType::Float8E5M2, rows, h);
        want_fp8.transposed = want_t.data;
        want_fp8.scale = &scale;
        want_fp8.amax = &want_amax;
        host::cast_transpose_to_fp8(input(dx.data, xt, rows, h), want_fp8, {});
        QVERIFY(same_bytes(q.data, want_q.data, rows * h));
        QVERIFY(same_bytes(q_t.data, want_t.data, rows * h));
        QVERIFY(same_bytes(&amax, &want_amax, 4));
        if (!fast) {
            QVERIFY(same_bytes(dgamma.data, want_dgamma.data, h * 4));
            QVERIFY(same_bytes(dbeta.data, want_dbeta.data, h * 4));
            Aligned sums(h * 4), scratch(cast_transpose_dbias_workspace_bytes(rows, h)), q2(rows * h), t2(rows * h);
            Tensor again = want_fp8;
            again.data = q2.data;
            again.transposed = t2.data;
            float amax2 = 0.0f;
            again.amax = &amax2;
            host::cast_transpose_dbias_to_fp8(input(dx.data, xt, rows, h), again, input(sums.data, DType::Float32, 1, h),
                                              {scratch.data, scratch.storage.size() - 512}, {});
            QVERIFY(same_bytes(dbias.data, sums.data, h * 4));
            return;
        }
        // float32 rows of 768: 4 warps a row, one group a block; rows of 512 and bfloat16 rows: one-warp rows, 4 a block.
        const std::size_t groups = xt == DType::Float32 && h == 768 ? 1 : 4;
        const std::size_t band = static_cast<std::size_t>(tewb::kernels::detail::layer_norm_backward_band_rows(rows, h));
        QCOMPARE(band, std::size_t{rows == 4224 ? 16u : rows == 8448 ? 32u : 8u});
        const auto at = [&](const Aligned& a, DType dtype, std::size_t r, std::size_t c) {
            return tewb::kernels::detail::load(a.data, dtype, r * h + c);
        };
        const std::vector<float> want_g = banded_column_sums(
            [&](std::size_t r, std::size_t c) { return at(in.dy, DType::BFloat16, r, c) * ((at(in.x, xt, r, c) - in.mean[r]) * in.rstd[r]); },
            rows, h, groups, band);
        const std::vector<float> want_b = banded_column_sums([&](std::size_t r, std::size_t c) { return at(in.dy, DType::BFloat16, r, c); },
                                                             rows, h, groups, band);
        const std::vector<float> want_s = banded_column_sums([&](std::size_t r, std::size_t c) { return at(dx, xt, r, c); }, rows, h, groups, band);
        QVERIFY(same_bytes(dgamma.data, want_g.data(), h * 4));
        QVERIFY(same_bytes(dbeta.data, want_b.data(), h * 4));
        QVERIFY(same_bytes(dbias.data, want_s.data(), h * 4));
    }

    void layerNormBackwardCastRefusals() {
        const std::size_t rows = 8, h = 64;
        const NormInputs in(rows, h, DType::Float32, 3);
        Aligned dx(rows * h * 4), dgamma(h * 4), dbeta(h * 4), grad(rows * h * 4), dbias(h * 4),
            ws(tewb::kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, h));
        const Tensor gamma = input(in.gamma.data, DType::Float32, 1, h);
        const auto call = [&](const Tensor& g, const Tensor& d, std::size_t ws_bytes) {
            host::layer_norm_backward_cast_dbias(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, DType::Float32),
                                                 in.vector_of(in.mean.data()), in.vector_of(in.rstd.data()), gamma,
                                                 in.tensor(dx, DType::Float32), Tensor{}, input(dgamma.data, DType::Float32, 1, h),
                                                 input(dbeta.data, DType::Float32, 1, h), g, d, {ws.data, ws_bytes}, {});
        };
        const std::string entry = "tewb::kernels::host::layer_norm_backward_cast_dbias";
        const Tensor good_grad = input(grad.data, DType::BFloat16, rows, h);
        const Tensor good_dbias = input(dbias.data, DType::Float32, 1, h);
        const std::size_t enough = tewb::kernels::layer_norm_backward_cast_dbias_workspace_bytes(rows, h);
        expect_refused([&] { call(input(dx.data, DType::BFloat16, rows, h), good_dbias, enough); }, entry, "grad and dx overlap");
        expect_refused([&] { call(good_grad, input(dbias.data, DType::BFloat16, 1, h), enough); }, entry,
                       "dbias has dtype bfloat16; allowed: float32");
        expect_refused([&] { call(good_grad, input(dbias.data, DType::Float32, 1, h - 1), enough); }, entry, "dbias");
        expect_refused([&] { call(input(grad.data, DType::Float16, rows, h), good_dbias, enough); }, entry, "grad");
        expect_refused([&] { call(good_grad, good_dbias, tewb::kernels::layer_norm_backward_workspace_bytes(rows, h)); }, entry,
                       "layer_norm_backward_cast_dbias_workspace_bytes");
        expect_refused([&] { call(good_grad, input(grad.data, DType::Float32, 1, h), enough); }, entry, "dbias and grad overlap");

        const std::string fp8_entry = "tewb::kernels::host::layer_norm_backward_quantize_dbias";
        Aligned q(rows * h), q_t(rows * h);
        float scale = 1.0f;
        Tensor fp8 = input(q.data, DType::Float8E4M3, rows, h);
        fp8.transposed = q_t.data;
        fp8.scale = &scale;
        const auto quantize = [&](const Tensor& f, const Tensor& d, std::size_t ws_bytes) {
            host::layer_norm_backward_quantize_dbias(in.tensor(in.dy, DType::BFloat16), in.tensor(in.x, DType::Float32),
                                                     in.vector_of(in.mean.data()), in.vector_of(in.rstd.data()), gamma,
                                                     in.tensor(dx, DType::Float32), Tensor{}, input(dgamma.data, DType::Float32, 1, h),
                                                     input(dbeta.data, DType::Float32, 1, h), f, d, {ws.data, ws_bytes}, {});
        };
        expect_refused([&] { quantize(Tensor{}, good_dbias, enough); }, fp8_entry, "fp8 is null");
        Tensor no_t = fp8;
        no_t.transposed = nullptr;
        expect_refused([&] { quantize(no_t, good_dbias, enough); }, fp8_entry, "fp8.transposed is null");
        Tensor wrong = fp8;
        wrong.dtype = DType::BFloat16;
        expect_refused([&] { quantize(wrong, good_dbias, enough); }, fp8_entry, "fp8 has dtype bfloat16; allowed: E4M3, E5M2");
        Tensor over = fp8;
        over.transposed = dx.data;
        expect_refused([&] { quantize(over, good_dbias, enough); }, fp8_entry, "fp8.transposed and dx overlap");
        expect_refused([&] { quantize(fp8, good_dbias, 16); }, fp8_entry, "layer_norm_backward_cast_dbias_workspace_bytes");
    }

    void badPartsAreRefusedWithTheReason() {
        const Parts parts(DType::BFloat16, 8, 16, 3, 16, 1, false);
        Aligned out(8 * 48 * 2), dbias(48 * 4), ws(cast_dbias_workspace_bytes(8, 48));
        const Tensor o = input(out.data, DType::BFloat16, 8, 48);
        const Tensor d = input(dbias.data, DType::Float32, 1, 48);
        const Workspace w{ws.data, ws.storage.size() - 512};
        const std::string entry = "tewb::kernels::host::stacked_cast_dbias";
        const auto with = [&](std::size_t i, const std::function<void(Tensor&)>& change) {
            std::vector<Tensor> p = parts.tensors;
            change(p[i]);
            return p;
        };
        expect_refused([&] { host::stacked_cast_dbias(parts.tensors.data(), 0, o, d, w, {}); }, entry, "count = 0; allowed: 1 to 3");
        expect_refused([&] { host::stacked_cast_dbias(nullptr, 3, o, d, w, {}); }, entry, "parts is null");
        const auto p1 = with(1, [](Tensor& t) { t.dtype = DType::Float32; });
        expect_refused([&] { host::stacked_cast_dbias(p1.data(), 3, o, d, w, {}); }, entry, "parts[1] has dtype float32");
        const auto p2 = with(2, [](Tensor& t) { t.cols = 15; });
        expect_refused([&] { host::stacked_cast_dbias(p2.data(), 3, o, d, w, {}); }, entry, "parts[2]");
        const auto p3 = with(0, [](Tensor& t) { t.row_stride = 10; });
        expect_refused([&] { host::stacked_cast_dbias(p3.data(), 3, o, d, w, {}); }, entry, "parts[0].row_stride = 10");
        const auto p4 = with(1, [](Tensor& t) { t.data = nullptr; });
        expect_refused([&] { host::stacked_cast_dbias(p4.data(), 3, o, d, w, {}); }, entry, "parts[1]");
        expect_refused([&] { host::stacked_cast_dbias(parts.tensors.data(), 3, Tensor{}, d, w, {}); }, entry, "out");
        // An output over a part: the stacked copy written where dk lies.
        const Tensor over = input(parts.tensors[1].data, DType::BFloat16, 8, 48);
        expect_refused([&] { host::stacked_cast_dbias(parts.tensors.data(), 3, over, d, w, {}); }, entry, "parts[1] and out overlap");
        expect_refused([&] { host::stacked_cast_dbias(parts.tensors.data(), 3, o, input(parts.tensors[2].data, DType::Float32, 1, 48), w, {}); },
                       entry, "parts[2] and dbias overlap");
        expect_refused([&] { host::stacked_cast_dbias(parts.tensors.data(), 3, o, d, {ws.data, 4}, {}); }, entry,
                       "cast_dbias_workspace_bytes");

        const std::string fp8_entry = "tewb::kernels::host::stacked_cast_transpose_dbias_to_fp8";
        Aligned q(8 * 48), qt(8 * 48);
        float scale = 1.0f;
        Tensor fp8 = input(q.data, DType::Float8E4M3, 8, 48);
        fp8.transposed = qt.data;
        fp8.scale = &scale;
        expect_refused([&] { host::stacked_cast_transpose_dbias_to_fp8(parts.tensors.data(), 4, fp8, Tensor{}, Workspace{}, {}); },
                       fp8_entry, "count = 4; allowed: 1 to 3");
        Tensor over_t = fp8;
        over_t.transposed = const_cast<void*>(parts.tensors[0].data);
        expect_refused([&] { host::stacked_cast_transpose_dbias_to_fp8(parts.tensors.data(), 3, over_t, Tensor{}, Workspace{}, {}); },
                       fp8_entry, "parts[0] and out.transposed overlap");
        expect_refused([&] { host::stacked_cast_transpose_dbias_to_fp8(parts.tensors.data(), 3, fp8, d, {ws.data, 4}, {}); }, fp8_entry,
                       "cast_transpose_dbias_workspace_bytes");

        // Nothing to do: passes after the shape checks and counts no launch.
        std::vector<Tensor> empty = parts.tensors;
        for (Tensor& t : empty) t.rows = 0;
        const std::uint64_t launches = launch_count();
        host::stacked_cast_dbias(empty.data(), 3, input(nullptr, DType::BFloat16, 0, 48), d, Workspace{}, {});
        QCOMPARE(launch_count(), launches);
    }
};

QTEST_GUILESS_MAIN(TstHostHandoverCasts)
#include "tst_host_handover_casts.moc"
