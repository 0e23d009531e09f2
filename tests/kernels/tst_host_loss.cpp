// The host softmax cross-entropy (tewb_kernels/host/loss.h) against a double-precision reference of the same
// formula written here, within the bounds the header states: lse and the mean loss (float32 and bfloat16
// logits, vectorised and single-element row orders, targets read with row stride seq + 1 and seq), dlogits
// from the saved lse (both dtypes each side, in place, grad_loss other than 1), the mean's block order
// re-derived bit for bit, out-of-range targets and non-finite logits, argument refusals and launch counts; and
// the forward with the gradient bit for bit the forward then the backward with grad_loss 1 in place.
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
#include "tewb_kernels/loss.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "host_tensor.h"
#include "launch_checks.h"
#include "loss_calls.h"

using tewb::kernels::DType;
using tewb::kernels::KernelError;
using tewb::kernels::input;
namespace calls = tewb::test::calls;
namespace host = tewb::kernels::host;
namespace detail = tewb::kernels::detail;

using tewb::test::expect_refusal;
using tewb::test::launches_of;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using Buffer = tewb::test::HostTensor;

// The targets of `rows` rows of logits: [rows / seq, seq], row_stride apart (seq 0, which the kernels refuse: none).
tewb::kernels::Tensor targets_of(const std::int64_t* data, std::size_t rows, std::size_t seq, std::size_t row_stride) {
    tewb::kernels::Tensor t = tewb::kernels::input(data, DType::Int64, seq == 0 ? 0 : rows / seq, seq);
    t.row_stride = row_stride;
    return t;
}

// A token tensor [batch, stride] whose first seq columns of each sequence are the rows' targets; the columns
// past seq hold a value no row may read (out of range), so reading one shows as a NaN loss.
struct Targets {
    std::vector<std::int64_t> tokens;
    std::size_t seq = 1;
    std::size_t stride = 1;

    std::int64_t of(std::size_t row) const { return tokens[(row / seq) * stride + row % seq]; }
    std::int64_t& at(std::size_t row) { return tokens[(row / seq) * stride + row % seq]; }
};

Targets random_targets(std::size_t rows, std::size_t vocab, std::size_t seq, std::size_t stride, std::mt19937& rng) {
    Targets t{std::vector<std::int64_t>((rows / seq) * stride, -12345), seq, stride};
    std::uniform_int_distribution<std::int64_t> pick(0, static_cast<std::int64_t>(vocab) - 1);
    for (std::size_t r = 0; r < rows; ++r) t.at(r) = pick(rng);
    return t;
}

// Logits of several kinds of row: plain normal ones, rows shifted far from 0, rows rising along the row (every
// vector raises its thread's max: the longest rescale chains), and peaked rows (one logit far above the rest).
Buffer random_logits(DType dtype, std::size_t rows, std::size_t vocab, std::mt19937& rng, std::size_t shift = 0) {
    Buffer t(dtype, rows * vocab, shift);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t kind = r % 4;
        const float offset = kind == 1 ? 40.0f * static_cast<float>(r % 7) - 100.0f : 0.0f;
        for (std::size_t c = 0; c < vocab; ++c) {
            float v = normal(rng) + offset;
            if (kind == 2) v = 20.0f * static_cast<float>(c) / static_cast<float>(vocab) + 0.01f * normal(rng);
            if (kind == 3 && c == (r * 7919) % vocab) v = 25.0f;
            t.set(r * vocab + c, v);
        }
    }
    return t;
}

bool same_bits(float a, float b) {
    return detail::float_bits(a) == detail::float_bits(b);
}

// ---- references -----------------------------------------------------------------------------------------

struct ForwardReference {
    std::vector<double> lse, lse_tolerance;
    double loss = 0.0;
    double loss_tolerance = 0.0;
};

// logsumexp in double of the same float inputs, and the header's bounds:
// |lse - exact| <= 2^-21 (k + 32) + 2^-22 (M + |lse|), k = ceil(vocab / 256), M the largest finite |logit|;
// |loss - exact| <= mean of the rows' bounds + 2^-23 |loss|.
ForwardReference forward_reference(const std::vector<float>& x, std::size_t rows, std::size_t vocab, const Targets& targets) {
    ForwardReference ref{std::vector<double>(rows), std::vector<double>(rows)};
    const double k = static_cast<double>((vocab + 255) / 256);
    double loss_sum = 0.0, tolerance_sum = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = x.data() + r * vocab;
        double top = -std::numeric_limits<double>::infinity(), largest = 0.0;
        for (std::size_t c = 0; c < vocab; ++c) {
            top = std::max(top, static_cast<double>(row[c]));
            if (std::isfinite(row[c])) largest = std::max(largest, std::fabs(static_cast<double>(row[c])));
        }
        double sum = 0.0;
        for (std::size_t c = 0; c < vocab; ++c) sum += std::exp(static_cast<double>(row[c]) - top);
        const double lse = std::isinf(top) && top < 0 ? top : top + std::log(sum);
        ref.lse[r] = lse;
        ref.lse_tolerance[r] = std::ldexp(k + 32.0, -21) + std::ldexp(largest + std::fabs(lse), -22);
        const std::int64_t t = targets.of(r);
        const bool valid = t >= 0 && static_cast<std::uint64_t>(t) < vocab;
        loss_sum += valid ? lse - static_cast<double>(row[t]) : std::numeric_limits<double>::quiet_NaN();
        tolerance_sum += ref.lse_tolerance[r];
    }
    ref.loss = loss_sum / static_cast<double>(rows);
    ref.loss_tolerance = tolerance_sum / static_cast<double>(rows) + std::ldexp(std::fabs(ref.loss), -23);
    return ref;
}

struct BackwardReference {
    std::vector<double> dlogits, tolerance;
};

// From the saved lse, as the backward takes it: (exp(x - lse) - onehot) * grad / rows, and the header's bound
// 2^-22 |g| (p (1 + |x - lse|) + |p - onehot|), plus half a bfloat16 ulp for a bfloat16 dlogits.
BackwardReference backward_reference(const std::vector<float>& x, const std::vector<float>& lse, std::size_t rows,
                                     std::size_t vocab, const Targets& targets, float grad_loss, DType dlogits_dtype) {
    BackwardReference ref{std::vector<double>(rows * vocab), std::vector<double>(rows * vocab)};
    const double g = static_cast<double>(grad_loss) / static_cast<double>(rows);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::int64_t t = targets.of(r);
        const bool valid = t >= 0 && static_cast<std::uint64_t>(t) < vocab;
        for (std::size_t c = 0; c < vocab; ++c) {
            const std::size_t i = r * vocab + c;
            const double d = static_cast<double>(x[i]) - static_cast<double>(lse[r]);
            const double p = std::exp(d);
            const double onehot = valid && static_cast<std::int64_t>(c) == t ? 1.0 : 0.0;
            ref.dlogits[i] = valid ? (p - onehot) * g : std::numeric_limits<double>::quiet_NaN();
            ref.tolerance[i] = std::ldexp(std::fabs(g) * (p * (1.0 + std::fabs(d)) + std::fabs(p - onehot)), -22) +
                               (dlogits_dtype == DType::BFloat16 ? std::ldexp(std::fabs(ref.dlogits[i]), -8) : 0.0);
        }
    }
    return ref;
}

bool agrees(float got, double want, double tolerance) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return static_cast<double>(got) == want;
    return std::fabs(static_cast<double>(got) - want) <= tolerance;
}

std::string describe(const char* what, std::size_t rows, std::size_t vocab, std::size_t i, double got, double want, double tol) {
    return std::string(what) + " rows=" + std::to_string(rows) + " vocab=" + std::to_string(vocab) + " i=" + std::to_string(i) +
           ": got " + std::to_string(got) + ", want " + std::to_string(want) + " (tolerance " + std::to_string(tol) + ")";
}

struct ForwardRun {
    std::vector<float> lse;
    float loss = 0.0f;
    std::vector<double> partial;  // the workspace after the call
};

ForwardRun run_forward(const Buffer& logits, std::size_t rows, std::size_t vocab, const Targets& targets) {
    ForwardRun run{std::vector<float>(rows, kNaN)};
    const std::size_t bytes = tewb::kernels::cross_entropy_forward_workspace_bytes(rows, vocab);
    run.partial.assign(bytes / sizeof(double), -1.0);
    calls::cross_entropy_forward(input(logits.data(), logits.dtype(), rows, vocab),
                                targets_of(targets.tokens.data(), rows, targets.seq, targets.stride), run.lse.data(), &run.loss,
                                {run.partial.data(), bytes});
    return run;
}

// The worst errors seen: as a fraction of the stated bound (lse and loss), and the loss's relative error.
struct Worst {
    double of_bound = 0.0;
    double loss_relative = 0.0;
};

// One forward case: lse and loss within the bounds.
void check_forward(const Buffer& logits, std::size_t rows, std::size_t vocab, const Targets& targets, Worst& worst) {
    const ForwardRun run = run_forward(logits, rows, vocab, targets);
    const ForwardReference ref = forward_reference(logits.values(), rows, vocab, targets);
    for (std::size_t r = 0; r < rows; ++r) {
        QVERIFY2(agrees(run.lse[r], ref.lse[r], ref.lse_tolerance[r]),
                 describe("lse", rows, vocab, r, run.lse[r], ref.lse[r], ref.lse_tolerance[r]).c_str());
        if (std::isfinite(ref.lse[r])) {
            worst.of_bound = std::max(worst.of_bound, std::fabs(run.lse[r] - ref.lse[r]) / ref.lse_tolerance[r]);
        }
    }
    QVERIFY2(agrees(run.loss, ref.loss, ref.loss_tolerance),
             describe("loss", rows, vocab, 0, run.loss, ref.loss, ref.loss_tolerance).c_str());
    if (std::isfinite(ref.loss)) {
        const double error = std::fabs(run.loss - ref.loss);
        worst.of_bound = std::max(worst.of_bound, error / ref.loss_tolerance);
        if (ref.loss != 0.0) worst.loss_relative = std::max(worst.loss_relative, error / std::fabs(ref.loss));
    }
}

}  // namespace

class TestHostLoss : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void forwardMatchesDouble() {
        struct Case {
            std::size_t rows, vocab, seq, stride, shift;
        };
        // Vectorised rows (aligned, vocab a multiple of 4 / 8) and single-element ones (odd vocab, or logits one
        // element off 16 bytes); rows past 1024 (several rows per block); targets with stride seq + 1 and seq.
        const std::vector<Case> cases = {
            {1, 1, 1, 1, 0},    {6, 7, 3, 4, 0},         {8, 8192, 4, 5, 0},        {4, 1000, 2, 3, 0},   {5, 1001, 5, 5, 0},
            {4, 4096, 2, 3, 1}, {2100, 33, 700, 701, 0}, {1030, 64, 1030, 1030, 0}, {2, 131072, 2, 3, 0}, {1, 262144, 1, 2, 0}};
        std::mt19937 rng(41);
        Worst worst;
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const Case& c : cases) {
                const Buffer logits = random_logits(dtype, c.rows, c.vocab, rng, c.shift);
                const Targets targets = random_targets(c.rows, c.vocab, c.seq, c.stride, rng);
                check_forward(logits, c.rows, c.vocab, targets, worst);
                if (QTest::currentTestFailed()) return;
            }
        }
        qInfo("cross_entropy forward: worst lse/loss error %.4f of the stated bound; loss within %.2e relative", worst.of_bound,
              worst.loss_relative);
    }

    void lossIsTheMeanInBlockOrder() {
        // Re-derived from the call's own lse: block b's double sum of rows b, b + blocks, ... (each row's loss the
        // float32 lse - logit), the blocks in order, divided by rows in double and rounded once. Bit for bit, and
        // the workspace holds the blocks' sums as the kernel leaves them.
        std::mt19937 rng(3);
        for (const std::size_t rows : {1u, 5u, 1024u, 1025u, 3000u}) {
            const std::size_t vocab = 50;
            const Buffer logits = random_logits(DType::BFloat16, rows, vocab, rng);
            const Targets targets = random_targets(rows, vocab, rows % 5 == 0 ? 5 : 1, rows % 5 == 0 ? 6 : 2, rng);
            const ForwardRun run = run_forward(logits, rows, vocab, targets);
            const std::size_t blocks = std::min<std::size_t>(rows, 1024);
            QCOMPARE(run.partial.size(), blocks);
            double total = 0.0;
            for (std::size_t b = 0; b < blocks; ++b) {
                double block_sum = 0.0;
                for (std::size_t r = b; r < rows; r += blocks) {
                    block_sum += static_cast<double>(run.lse[r] - logits.at(r * vocab + static_cast<std::size_t>(targets.of(r))));
                }
                QVERIFY(run.partial[b] == block_sum);  // exact, not QCOMPARE's fuzzy double comparison
                total += block_sum;
            }
            QVERIFY(same_bits(run.loss, static_cast<float>(total / static_cast<double>(rows))));
        }
    }

    void forwardEdges() {
        const std::size_t vocab = 300;
        const std::size_t rows = 6;
        Buffer logits(DType::Float32, rows * vocab);
        std::mt19937 rng(9);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t i = 0; i < rows * vocab; ++i) logits.set(i, normal(rng));
        for (std::size_t c = 0; c < vocab; c += 3) logits.set(0 * vocab + c, -kInf);              // masked logits add 0
        for (std::size_t c = 0; c < vocab; ++c) logits.set(1 * vocab + c, 1.0e4f + normal(rng));  // far from 0
        for (std::size_t c = 0; c < vocab; ++c) logits.set(2 * vocab + c, -kInf);  // all masked: lse -inf, loss NaN
        logits.set(3 * vocab + 17, kNaN);
        logits.set(4 * vocab + 250, kInf);
        for (std::size_t c = 0; c < vocab; ++c) logits.set(5 * vocab + c, -1.0e4f - 0.5f * static_cast<float>(c));
        Targets targets{{1, 2, 3, 4, 5, 6}, 6, 6};
        const ForwardRun run = run_forward(logits, rows, vocab, targets);
        const ForwardReference ref = forward_reference(logits.values(), rows, vocab, targets);
        for (const std::size_t r : {0u, 1u, 5u}) {
            QVERIFY2(agrees(run.lse[r], ref.lse[r], ref.lse_tolerance[r]),
                     describe("edge lse", rows, vocab, r, run.lse[r], ref.lse[r], ref.lse_tolerance[r]).c_str());
        }
        QCOMPARE(run.lse[2], -kInf);
        QVERIFY(std::isnan(run.lse[3]));
        QVERIFY(std::isnan(run.lse[4]));  // +inf: the header's documented edge (inf - inf)
        QVERIFY(std::isnan(run.loss));

        // Without the non-finite rows the mean is finite and within its bound.
        Targets five{{1, 2, 3, 4, 5}, 1, 1};
        Buffer two(DType::Float32, 2 * vocab);
        for (std::size_t c = 0; c < vocab; ++c) {
            two.set(c, logits.at(c));
            two.set(vocab + c, logits.at(vocab + c));
        }
        Worst worst;
        check_forward(two, 2, vocab, five, worst);
    }

    void backwardMatchesDouble() {
        struct Case {
            std::size_t rows, vocab, seq, stride, shift;
        };
        const std::vector<Case> cases = {
            {1, 1, 1, 1, 0}, {6, 7, 3, 4, 0}, {8, 4096, 4, 5, 0}, {4, 1000, 2, 3, 1}, {12, 520, 12, 12, 0}};
        std::mt19937 rng(77);
        double worst = 0.0;
        for (const DType in : {DType::Float32, DType::BFloat16}) {
            for (const DType out : {DType::Float32, DType::BFloat16}) {
                for (const float grad_loss : {1.0f, 2.5f, -0.375f}) {
                    for (const Case& c : cases) {
                        const Buffer logits = random_logits(in, c.rows, c.vocab, rng, c.shift);
                        const Targets targets = random_targets(c.rows, c.vocab, c.seq, c.stride, rng);
                        const ForwardRun forward = run_forward(logits, c.rows, c.vocab, targets);
                        Buffer dlogits(out, c.rows * c.vocab, c.shift);
                        calls::cross_entropy_backward(input(logits.data(), in, c.rows, c.vocab),
                                                     targets_of(targets.tokens.data(), c.rows, targets.seq, targets.stride),
                                                     forward.lse.data(), &grad_loss, input(dlogits.data(), out, c.rows, c.vocab));
                        const BackwardReference ref =
                            backward_reference(logits.values(), forward.lse, c.rows, c.vocab, targets, grad_loss, out);
                        for (std::size_t i = 0; i < c.rows * c.vocab; ++i) {
                            QVERIFY2(
                                agrees(dlogits.at(i), ref.dlogits[i], ref.tolerance[i]),
                                describe("dlogits", c.rows, c.vocab, i, dlogits.at(i), ref.dlogits[i], ref.tolerance[i]).c_str());
                            if (out == DType::Float32 && ref.tolerance[i] > 0.0) {
                                worst = std::max(worst, std::fabs(dlogits.at(i) - ref.dlogits[i]) / ref.tolerance[i]);
                            }
                        }
                        // The row's gradient sums to 0 (softmax sums to 1): a check independent of the formula's terms.
                        for (std::size_t r = 0; r < c.rows && out == DType::Float32; ++r) {
                            double sum = 0.0;
                            for (std::size_t col = 0; col < c.vocab; ++col) sum += dlogits.at(r * c.vocab + col);
                            QVERIFY2(std::fabs(sum) <= 1e-5 * std::fabs(grad_loss),
                                     describe("row sum", c.rows, c.vocab, r, sum, 0, 1e-5).c_str());
                        }
                        if (QTest::currentTestFailed()) return;
                    }
                }
            }
        }
        qInfo("cross_entropy backward: worst float32 dlogits error %.4f of the stated bound", worst);
    }

    void backwardInPlaceEqualsOutOfPlace() {
        std::mt19937 rng(8);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const std::size_t vocab : {8192u, 999u}) {
                const std::size_t rows = 6;
                const Buffer logits = random_logits(dtype, rows, vocab, rng);
                const Targets targets = random_targets(rows, vocab, 3, 4, rng);
                const ForwardRun forward = run_forward(logits, rows, vocab, targets);
                const float grad_loss = 1.75f;
                Buffer separate(dtype, rows * vocab);
                calls::cross_entropy_backward(input(logits.data(), dtype, rows, vocab), targets_of(targets.tokens.data(), rows, 3, 4),
                                             forward.lse.data(), &grad_loss, input(separate.data(), dtype, rows, vocab));
                Buffer in_place = logits;
                QCOMPARE(launches_of([&] {
                             calls::cross_entropy_backward(input(in_place.data(), dtype, rows, vocab),
                                                          targets_of(targets.tokens.data(), rows, 3, 4), forward.lse.data(),
                                                          &grad_loss, input(in_place.data(), dtype, rows, vocab));
                         }),
                         std::uint64_t{1});
                for (std::size_t i = 0; i < rows * vocab; ++i) QVERIFY(same_bits(in_place.at(i), separate.at(i)));
            }
        }
    }

    void outOfRangeTargetGivesNaNRow() {
        const std::size_t rows = 6, vocab = 64;
        std::mt19937 rng(12);
        const Buffer logits = random_logits(DType::Float32, rows, vocab, rng);
        Targets targets = random_targets(rows, vocab, 3, 4, rng);
        const Targets good = targets;
        targets.at(1) = -1;
        targets.at(3) = static_cast<std::int64_t>(vocab);
        targets.at(4) = std::numeric_limits<std::int64_t>::max();
        const ForwardRun run = run_forward(logits, rows, vocab, targets);
        const ForwardRun reference_run = run_forward(logits, rows, vocab, good);
        QVERIFY(std::isnan(run.loss));
        for (std::size_t r = 0; r < rows; ++r) QVERIFY(same_bits(run.lse[r], reference_run.lse[r]));  // lse ignores the target
        for (const std::size_t b : {1u, 3u, 4u}) QVERIFY(std::isnan(run.partial[b]));
        for (const std::size_t b : {0u, 2u, 5u}) QVERIFY(run.partial[b] == reference_run.partial[b]);

        const float grad_loss = 1.0f;
        Buffer dlogits(DType::BFloat16, rows * vocab);
        calls::cross_entropy_backward(input(logits.data(), DType::Float32, rows, vocab), targets_of(targets.tokens.data(), rows, 3, 4),
                                     run.lse.data(), &grad_loss, input(dlogits.data(), DType::BFloat16, rows, vocab));
        Buffer good_dlogits(DType::BFloat16, rows * vocab);
        calls::cross_entropy_backward(input(logits.data(), DType::Float32, rows, vocab), targets_of(good.tokens.data(), rows, 3, 4),
                                     run.lse.data(), &grad_loss, input(good_dlogits.data(), DType::BFloat16, rows, vocab));
        for (std::size_t r = 0; r < rows; ++r) {
            const bool bad = r == 1 || r == 3 || r == 4;
            for (std::size_t c = 0; c < vocab; ++c) {
                const std::size_t i = r * vocab + c;
                if (bad) {
                    QVERIFY(std::isnan(dlogits.at(i)));
                } else {
                    QVERIFY(same_bits(dlogits.at(i), good_dlogits.at(i)));
                }
            }
        }
    }

    void refusesBadArguments() {
        const std::size_t rows = 4, vocab = 16;
        Buffer logits(DType::Float32, rows * vocab);
        std::vector<std::int64_t> targets(rows, 0);
        std::vector<float> lse(rows);
        float loss = 0.0f;
        const float grad = 1.0f;
        std::vector<double> workspace(8);
        const std::size_t bytes = tewb::kernels::cross_entropy_forward_workspace_bytes(rows, vocab);
        const char* fwd = "tewb::kernels::host::cross_entropy_forward";
        const char* bwd = "tewb::kernels::host::cross_entropy_backward";
        const auto forward = [&](const void* x, DType dtype, std::size_t r, std::size_t v, const std::int64_t* t, std::size_t seq,
                                 std::size_t stride, float* l, float* out, void* ws, std::size_t ws_bytes) {
            return [=] { calls::cross_entropy_forward(input(x, dtype, r, v), targets_of(t, r, seq, stride), l, out, {ws, ws_bytes}); };
        };
        float* lp = lse.data();
        float* outp = &loss;
        double* ws = workspace.data();
        const std::int64_t* tp = targets.data();
        expect_refusal(forward(nullptr, DType::Float32, rows, vocab, tp, 4, 4, lp, outp, ws, bytes),
                       {fwd, "logits is a null pointer"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, nullptr, 4, 4, lp, outp, ws, bytes),
                       {fwd, "targets is a null pointer"});
        expect_refusal(
            [&] {
                calls::cross_entropy_forward(input(logits.data(), DType::Float32, rows, vocab), targets_of(tp, 8, 4, 4), lp, outp,
                                             {ws, bytes});
            },
            {fwd, "targets are [2, 4]; allowed: [1, 4] (one target per row of logits)"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 4, 4, nullptr, outp, ws, bytes),
                       {fwd, "lse is a null pointer"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 4, 4, lp, nullptr, ws, bytes),
                       {fwd, "loss is a null pointer"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 4, 4, lp, outp, nullptr, bytes),
                       {fwd, "workspace is a null pointer"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 4, 4, lp, outp, ws, bytes - 1),
                       {fwd, "workspace of 31 bytes; needed: 32", "cross_entropy_forward_workspace_bytes"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 4, 4, lp, outp,
                               reinterpret_cast<std::uint8_t*>(ws) + 4, bytes),
                       {fwd, "workspace is not 8-byte aligned"});
        expect_refusal(forward(logits.data(), DType::Float32, 0, vocab, tp, 4, 4, lp, outp, ws, bytes),
                       {fwd, "rows = 0; allowed: 1 or more", "undefined"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, 0, tp, 4, 4, lp, outp, ws, bytes),
                       {fwd, "vocab = 0; allowed: 1 or more"});
        expect_refusal(forward(logits.data(), DType::Float16, rows, vocab, tp, 4, 4, lp, outp, ws, bytes),
                       {fwd, "logits has dtype float16; allowed: float32, bfloat16"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 0, 4, lp, outp, ws, bytes), {fwd, "seq = 0"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 3, 4, lp, outp, ws, bytes),
                       {fwd, "rows = 4 is not a multiple of seq = 3"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 2, 1, lp, outp, ws, bytes),
                       {fwd, "target_row_stride = 1; allowed: at least seq = 2"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab, tp, 2, std::size_t{1} << 62, lp, outp, ws, bytes),
                       {fwd, "target_row_stride = 4611686018427387904"});
        expect_refusal(forward(logits.data(), DType::Float32, rows, vocab,
                               reinterpret_cast<const std::int64_t*>(reinterpret_cast<const std::uint8_t*>(tp) + 4), 4, 4, lp,
                               outp, ws, bytes),
                       {fwd, "targets is not 8-byte aligned"});
        expect_refusal(
            forward(static_cast<std::uint8_t*>(logits.data()) + 2, DType::Float32, rows, vocab, tp, 4, 4, lp, outp, ws, bytes),
            {fwd, "logits is not 4-byte aligned"});
        expect_refusal(forward(logits.data(), DType::Float32, std::size_t{1} << 31, vocab, tp, 4, 4, lp, outp, ws, bytes),
                       {fwd, "rows = 2147483648"});

        Buffer dlogits(DType::Float32, rows * vocab);
        const auto backward = [&](const void* x, DType in, std::size_t r, std::size_t v, const std::int64_t* t, const float* l,
                                  const float* g, void* d, DType out) {
            return [=] { calls::cross_entropy_backward(input(x, in, r, v), targets_of(t, r, 4, 4), l, g, input(d, out, r, v)); };
        };
        void* dp = dlogits.data();
        expect_refusal(backward(nullptr, DType::Float32, rows, vocab, tp, lp, &grad, dp, DType::Float32),
                       {bwd, "logits is a null pointer"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, nullptr, lp, &grad, dp, DType::Float32),
                       {bwd, "targets is a null pointer"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, nullptr, &grad, dp, DType::Float32),
                       {bwd, "lse is a null pointer"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, lp, nullptr, dp, DType::Float32),
                       {bwd, "grad_loss is a null pointer"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, lp, &grad, nullptr, DType::Float32),
                       {bwd, "dlogits is a null pointer"});
        expect_refusal(backward(logits.data(), DType::Float32, 0, vocab, tp, lp, &grad, dp, DType::Float32), {bwd, "rows = 0"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, 0, tp, lp, &grad, dp, DType::Float32), {bwd, "vocab = 0"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, lp, &grad, dp, DType::Float16),
                       {bwd, "dlogits has dtype float16; allowed: float32, bfloat16"});
        expect_refusal(backward(logits.data(), DType::Float16, rows, vocab, tp, lp, &grad, dp, DType::Float32),
                       {bwd, "logits has dtype float16"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, lp, &grad, logits.data(), DType::BFloat16),
                       {bwd, "dlogits is logits (in place) with dtype bfloat16 over float32 logits"});
        expect_refusal(backward(logits.data(), DType::Float32, rows, vocab, tp, lp, &grad, static_cast<float*>(logits.data()) + 4,
                                DType::Float32),
                       {bwd, "dlogits overlaps logits without being the same buffer"});
    }

    void forwardWithGradEqualsForwardThenBackward() {
        // Bit for bit cross_entropy_forward, then cross_entropy_backward with grad_loss 1 in place: lse, loss, the
        // workspace and the gradient. Vectorised rows and single-element ones (odd vocab, logits one element off
        // 16 bytes), several rows per block (rows past 1024), targets with stride seq + 1 and seq.
        struct Case {
            std::size_t rows, vocab, seq, stride, shift;
        };
        const std::vector<Case> cases = {{1, 1, 1, 1, 0},     {6, 7, 3, 4, 0},       {8, 4096, 4, 5, 0},
                                         {4, 1000, 2, 3, 1},  {5, 1001, 5, 5, 0},    {12, 520, 12, 12, 0},
                                         {2100, 33, 700, 701, 0}, {1030, 64, 1030, 1030, 1}};
        std::mt19937 rng(23);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const Case& c : cases) {
                const Buffer logits = random_logits(dtype, c.rows, c.vocab, rng, c.shift);
                const Targets targets = random_targets(c.rows, c.vocab, c.seq, c.stride, rng);
                const ForwardRun forward = run_forward(logits, c.rows, c.vocab, targets);
                const float one = 1.0f;
                Buffer separate = logits;
                calls::cross_entropy_backward(input(separate.data(), dtype, c.rows, c.vocab),
                                             targets_of(targets.tokens.data(), c.rows, c.seq, c.stride), forward.lse.data(), &one,
                                             input(separate.data(), dtype, c.rows, c.vocab));

                Buffer fused = logits;
                ForwardRun run{std::vector<float>(c.rows, kNaN)};
                const std::size_t bytes = tewb::kernels::cross_entropy_forward_workspace_bytes(c.rows, c.vocab);
                run.partial.assign(bytes / sizeof(double), -1.0);
                QCOMPARE(launches_of([&] {
                             calls::cross_entropy_forward_with_grad(input(fused.data(), dtype, c.rows, c.vocab),
                                                                   targets_of(targets.tokens.data(), c.rows, c.seq, c.stride),
                                                                   run.lse.data(), &run.loss, {run.partial.data(), bytes});
                         }),
                         std::uint64_t{1});
                const std::string where = std::string(tewb::kernels::to_string(dtype)) + " rows=" + std::to_string(c.rows) +
                                          " vocab=" + std::to_string(c.vocab) + " shift=" + std::to_string(c.shift);
                QVERIFY2(same_bits(run.loss, forward.loss), ("loss " + where).c_str());
                for (std::size_t r = 0; r < c.rows; ++r) QVERIFY2(same_bits(run.lse[r], forward.lse[r]), ("lse " + where).c_str());
                for (std::size_t b = 0; b < run.partial.size(); ++b) {
                    QVERIFY2(run.partial[b] == forward.partial[b], ("workspace " + where).c_str());
                }
                for (std::size_t i = 0; i < c.rows * c.vocab; ++i) {
                    QVERIFY2(same_bits(fused.at(i), separate.at(i)), ("gradient " + where + " i=" + std::to_string(i)).c_str());
                }
                if (QTest::currentTestFailed()) return;
            }
        }
    }

    void forwardWithGradOutOfRangeTarget() {
        // A NaN loss and a NaN gradient row for each bad target, every other row the in-range call's bit for bit.
        const std::size_t rows = 6, vocab = 64;
        std::mt19937 rng(31);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            const Buffer logits = random_logits(dtype, rows, vocab, rng);
            Targets targets = random_targets(rows, vocab, 3, 4, rng);
            const Targets good = targets;
            targets.at(1) = -1;
            targets.at(4) = static_cast<std::int64_t>(vocab);
            std::vector<float> lse(rows), good_lse(rows);
            float loss = 0.0f, good_loss = 0.0f;
            const std::size_t bytes = tewb::kernels::cross_entropy_forward_workspace_bytes(rows, vocab);
            std::vector<double> workspace(bytes / sizeof(double));
            Buffer fused = logits;
            calls::cross_entropy_forward_with_grad(input(fused.data(), dtype, rows, vocab),
                                                  targets_of(targets.tokens.data(), rows, 3, 4), lse.data(), &loss,
                                                  {workspace.data(), bytes});
            Buffer good_fused = logits;
            calls::cross_entropy_forward_with_grad(input(good_fused.data(), dtype, rows, vocab),
                                                  targets_of(good.tokens.data(), rows, 3, 4), good_lse.data(), &good_loss,
                                                  {workspace.data(), bytes});
            QVERIFY(std::isnan(loss));
            QVERIFY(std::isfinite(good_loss));
            for (std::size_t r = 0; r < rows; ++r) {
                QVERIFY(same_bits(lse[r], good_lse[r]));
                const bool bad = r == 1 || r == 4;
                for (std::size_t c = 0; c < vocab; ++c) {
                    const std::size_t i = r * vocab + c;
                    if (bad) {
                        QVERIFY(std::isnan(fused.at(i)));
                    } else {
                        QVERIFY(same_bits(fused.at(i), good_fused.at(i)));
                    }
                }
            }
        }
    }

    void forwardWithGradRefusesBadArguments() {
        const std::size_t rows = 4, vocab = 16;
        Buffer logits(DType::Float32, rows * vocab);
        std::vector<std::int64_t> targets(rows, 0);
        std::vector<float> lse(rows);
        float loss = 0.0f;
        std::vector<double> workspace(8);
        const std::size_t bytes = tewb::kernels::cross_entropy_forward_workspace_bytes(rows, vocab);
        const char* call = "tewb::kernels::host::cross_entropy_forward_with_grad";
        const auto fused = [&](void* x, DType dtype, std::size_t r, std::size_t v, const std::int64_t* t, std::size_t seq,
                               std::size_t stride, float* l, float* out, void* ws, std::size_t ws_bytes) {
            return [=] {
                calls::cross_entropy_forward_with_grad(input(x, dtype, r, v), targets_of(t, r, seq, stride), l, out, {ws, ws_bytes});
            };
        };
        void* xp = logits.data();
        auto* xf = static_cast<float*>(xp);
        float* lp = lse.data();
        double* ws = workspace.data();
        const std::int64_t* tp = targets.data();
        expect_refusal(fused(nullptr, DType::Float32, rows, vocab, tp, 4, 4, lp, &loss, ws, bytes),
                       {call, "logits is a null pointer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, nullptr, 4, 4, lp, &loss, ws, bytes),
                       {call, "targets is a null pointer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, nullptr, &loss, ws, bytes), {call, "lse is a null pointer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, lp, nullptr, ws, bytes), {call, "loss is a null pointer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, lp, &loss, nullptr, bytes),
                       {call, "workspace is a null pointer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, lp, &loss, ws, bytes - 1),
                       {call, "workspace of 31 bytes; needed: 32", "cross_entropy_forward_workspace_bytes"});
        expect_refusal(fused(xp, DType::Float32, 0, vocab, tp, 4, 4, lp, &loss, ws, bytes), {call, "rows = 0"});
        expect_refusal(fused(xp, DType::Float32, rows, 0, tp, 4, 4, lp, &loss, ws, bytes), {call, "vocab = 0"});
        expect_refusal(fused(xp, DType::Float16, rows, vocab, tp, 4, 4, lp, &loss, ws, bytes),
                       {call, "logits has dtype float16; allowed: float32, bfloat16"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 3, 4, lp, &loss, ws, bytes),
                       {call, "rows = 4 is not a multiple of seq = 3"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 2, 1, lp, &loss, ws, bytes),
                       {call, "target_row_stride = 1; allowed: at least seq = 2"});
        expect_refusal(fused(static_cast<std::uint8_t*>(xp) + 2, DType::Float32, rows, vocab, tp, 4, 4, lp, &loss, ws, bytes),
                       {call, "logits is not 4-byte aligned"});
        // The logits are overwritten: lse, loss and the workspace must lie elsewhere.
        expect_refusal(fused(xp, DType::Float32, rows, vocab, reinterpret_cast<const std::int64_t*>(xf + 4), 4, 4, lp, &loss, ws,
                             bytes),
                       {call, "targets overlaps logits"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, xf + 8, &loss, ws, bytes),
                       {call, "lse overlaps logits; allowed: a separate buffer"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, lp, xf + rows * vocab - 1, ws, bytes),
                       {call, "loss overlaps logits"});
        expect_refusal(fused(xp, DType::Float32, rows, vocab, tp, 4, 4, lp, &loss, xf + 2, bytes),
                       {call, "workspace overlaps logits"});
    }

    void launchCountsAndWorkspace() {
        QCOMPARE(tewb::kernels::cross_entropy_forward_workspace_bytes(1, 8192), sizeof(double));
        QCOMPARE(tewb::kernels::cross_entropy_forward_workspace_bytes(1000, 8192), 1000 * sizeof(double));
        QCOMPARE(tewb::kernels::cross_entropy_forward_workspace_bytes(100000, 8192), 1024 * sizeof(double));
        std::mt19937 rng(1);
        const std::size_t rows = 2048, vocab = 128;
        const Buffer logits = random_logits(DType::BFloat16, rows, vocab, rng);
        const Targets targets = random_targets(rows, vocab, 512, 513, rng);
        ForwardRun run;
        QCOMPARE(launches_of([&] { run = run_forward(logits, rows, vocab, targets); }), std::uint64_t{1});
        const float grad = 1.0f;
        Buffer dlogits(DType::BFloat16, rows * vocab);
        QCOMPARE(launches_of([&] {
                     calls::cross_entropy_backward(input(logits.data(), DType::BFloat16, rows, vocab),
                                                  targets_of(targets.tokens.data(), rows, 512, 513), run.lse.data(), &grad,
                                                  input(dlogits.data(), DType::BFloat16, rows, vocab));
                 }),
                 std::uint64_t{1});
    }
};

QTEST_GUILESS_MAIN(TestHostLoss)
#include "tst_host_loss.moc"
