// The fused ops' rotary embeddings (FusedOps::rotary over the host kernel) against the reference composition
// (TeOps::rotary, LibTorch): equal within float32 rounding, the copied heads exact, one launch and no fallback
// where the operands fit, its ledger row against the reference's launches; operands the kernel does not take
// go to the reference, counted as a fallback.
#include <QtTest>

#include <cstdint>
#include <string>

#include <ATen/ATen.h>

#include "core/ledger/Ledger.h"
#include "core/fp8/Fp8State.h"
#include "core/model/Rotary.h"
#include "core/modules/ops/Fallbacks.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/ReferenceOps.h"

using namespace tewb;

namespace {

struct Case {
    std::int64_t batch, seq, heads, rotated, head_dim;
};

// The seed's fused qkv (12 query heads and 4 key/value heads of 64: 16 turned, 4 copied), every head turned,
// none, an odd number of pairs (3) and a batch of one.
const Case kCases[] = {{4, 96, 20, 16, 64}, {2, 7, 4, 4, 128}, {3, 5, 3, 0, 8}, {3, 5, 3, 2, 6}, {1, 1, 2, 1, 2}};

// Per element, 2^-22 · (|x_i| + |x_partner|): both sides round a·c and b·s products and a sum in float32
// (|cos|, |sin| <= 1), the fused side with one fma. bfloat16 adds one bfloat16 ulp (the float32 results can
// straddle a rounding boundary).
at::Tensor tolerance(const at::Tensor& x, const at::Tensor& want, std::int64_t rotated) {
    const std::int64_t half = x.size(3) / 2;
    const at::Tensor a = x.narrow(2, 0, rotated).to(at::kDouble).abs();
    const at::Tensor pair = a.narrow(3, 0, half) + a.narrow(3, half, half);
    at::Tensor tol = at::cat({pair, pair}, 3) * std::ldexp(1.0, -22) + std::ldexp(1.0, -140);
    if (x.scalar_type() == at::kBFloat16) tol = tol + want.narrow(2, 0, rotated).to(at::kDouble).abs() * std::ldexp(1.0, -7);
    return tol;
}

void expect_close(const at::Tensor& got, const at::Tensor& want, const at::Tensor& x, std::int64_t rotated) {
    QCOMPARE(got.scalar_type(), want.scalar_type());
    QCOMPARE(got.sizes(), want.sizes());
    if (rotated > 0) {
        const at::Tensor excess = (got.narrow(2, 0, rotated).to(at::kDouble) - want.narrow(2, 0, rotated).to(at::kDouble)).abs() -
                                  tolerance(x, want, rotated);
        const double worst = excess.max().item<double>();
        QVERIFY2(worst <= 0.0, ("a turned element is " + std::to_string(worst) + " past the tolerance").c_str());
    }
    const std::int64_t copied = x.size(2) - rotated;
    if (copied > 0) QVERIFY(at::equal(got.narrow(2, rotated, copied), want.narrow(2, rotated, copied)));
}

}  // namespace

class TestFusedRotary : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init() { clear_fallbacks(); }

    void fusedEqualsReference_data() {
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<bool>("inverse");
        QTest::newRow("float32") << false << false;
        QTest::newRow("float32 inverse") << false << true;
        QTest::newRow("bfloat16") << true << false;
        QTest::newRow("bfloat16 inverse") << true << true;
    }

    void fusedEqualsReference() {
        QFETCH(bool, bf16);
        QFETCH(bool, inverse);
        at::manual_seed(61);
        const TeOps& fused = fused_host_ops();
        for (const Case& c : kCases) {
            const at::Tensor x = at::randn({c.batch, c.seq, c.heads, c.head_dim}).mul(2).to(bf16 ? at::kBFloat16 : at::kFloat);
            const RotaryTables t = rotary_tables(c.seq + 4, c.head_dim, 10000.0);
            const std::uint64_t before = fused.kernel_launches();
            const at::Tensor got = fused.rotary(x, t.cos, t.sin, c.rotated, inverse);
            QCOMPARE(fused.kernel_launches() - before, std::uint64_t{1});
            expect_close(got, reference_ops().rotary(x, t.cos, t.sin, c.rotated, inverse), x, c.rotated);
        }
        QVERIFY(fallbacks_noted().empty());
    }

    // The hand-overs (rotary_handing_over: the inverse rotation as llama's qkv output gradient): under current scaling
    // (and delayed scaling's calibrating step) y as rotary's and the following cast with the handed scale
    // (quantize_with_handed_scale) as quantize's on the plain y, bit for bit (data, transposed copy, scale_inv, the slot's
    // scale and staged amax), in one launch fewer; under delayed scaling proper the cast itself comes back from the
    // rotation's launch (rotary_quantize), the same bits, one launch fewer too; inspection hands nothing over.
    void rotationHandsItsScaleOver_data() {
        QTest::addColumn<int>("mode");  // 0 current, 1 delayed calibrating, 2 delayed, 3 current inspected
        QTest::newRow("current") << 0;
        QTest::newRow("delayed, calibrating") << 1;
        QTest::newRow("delayed") << 2;
        QTest::newRow("current, inspected") << 3;
    }
    void rotationHandsItsScaleOver() {
        QFETCH(int, mode);
        const bool handed_over = mode <= 1;
        const bool cast_handed_over = mode == 2;
        at::manual_seed(71);
        const TeOps& ops = fused_host_ops();
        for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
            const Case c = kCases[0];
            const at::Tensor dy = at::randn({c.batch, c.seq, c.heads, c.head_dim}).to(dtype);
            const RotaryTables t = rotary_tables(c.seq, c.head_dim, 10000.0);
            const auto context_for = [&] {
                auto context = std::make_shared<Fp8Context>();
                context->add_gemm("qkv");
                Fp8Recipe recipe = Fp8Recipe::seed_defaults();
                recipe.scaling = mode == 1 || mode == 2 ? ScalingKind::Delayed : ScalingKind::Current;
                recipe.calibrate_first_step = mode == 1;
                context->prepare(recipe, mode == 3, c10::Device(c10::kCPU), ops);
                return context;
            };
            const auto plain = context_for(), handing = context_for();
            const Fp8Quantizer q_plain{plain, Fp8Pass::Backward, 0}, q_handing{handing, Fp8Pass::Backward, 0};
            const std::int64_t rows = c.batch * c.seq, cols = c.heads * c.head_dim;
            std::uint64_t before = ops.kernel_launches();
            const at::Tensor want = ops.rotary(dy, t.cos, t.sin, c.rotated, true);
            const Fp8Tensor want_cast = ops.quantize(want.view({rows, cols}), q_plain, true);
            const std::uint64_t plain_launches = ops.kernel_launches() - before;
            before = ops.kernel_launches();
            TeOps::RotaryHandOver got = ops.rotary_handing_over(dy, t.cos, t.sin, c.rotated, true, q_handing);
            QCOMPARE(got.scale_inv.defined(), handed_over);
            QCOMPARE(got.cast.has_value(), cast_handed_over);
            const Fp8Tensor got_cast = got.cast ? std::move(*got.cast)
                                                : ops.quantize_with_handed_scale(got.y.view({rows, cols}), q_handing, got.scale_inv, true);
            QCOMPARE(ops.kernel_launches() - before, plain_launches - (handed_over || cast_handed_over ? 1 : 0));
            const auto bits = [](const at::Tensor& x) { return x.reshape({-1}).contiguous().view(at::kByte); };
            const auto same = [&](const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && at::equal(bits(a), bits(b)); };
            QVERIFY(same(got.y, want));
            QVERIFY(same(got_cast.data, want_cast.data));
            QVERIFY(same(got_cast.transposed, want_cast.transposed));
            QVERIFY(same(got_cast.scale_inv, want_cast.scale_inv));
            QVERIFY(same(handing->scale(Fp8Pass::Backward, 0), plain->scale(Fp8Pass::Backward, 0)));
            QVERIFY(same(handing->history(Fp8Pass::Backward).select(1, 0), plain->history(Fp8Pass::Backward).select(1, 0)));
        }
        QVERIFY(fallbacks_noted().empty());
    }

    // The inverse (the backward) undoes the forward through the fused ops, within float32 rounding.
    void inverseUndoesForward() {
        at::manual_seed(67);
        const at::Tensor x = at::randn({2, 9, 6, 32});
        const RotaryTables t = rotary_tables(9, 32, 500000.0);
        const at::Tensor y = fused_host_ops().rotary(x, t.cos, t.sin, 4, false);
        const at::Tensor back = fused_host_ops().rotary(y, t.cos, t.sin, 4, true);
        QVERIFY(at::allclose(back, x, 0.0, 1e-5));
        QVERIFY(!at::allclose(y.narrow(2, 0, 4), x.narrow(2, 0, 4), 0.0, 1e-3));  // it did turn
        QVERIFY(at::equal(y.narrow(2, 4, 2), x.narrow(2, 4, 2)));
    }

    // The ledger: one row "tewb::rotary" of one launch reading x and the seq rows of both tables and writing y,
    // where the reference's composition launches 8 forward and 9 backward (float32, copied heads: docs/kernels.md).
    void ledgerRowAgainstTheReference() {
        const at::Tensor x = at::randn({2, 6, 5, 16});
        const RotaryTables t = rotary_tables(10, 16, 10000.0);
        for (const bool inverse : {false, true}) {
            LedgerRecording recording(false, 0);
            {
                const LedgerScope fused_scope("fused");
                (void)fused_host_ops().rotary(x, t.cos, t.sin, 3, inverse);
            }
            {
                const LedgerScope reference_scope("reference");
                (void)reference_ops().rotary(x, t.cos, t.sin, 3, inverse);
            }
            const LedgerMeasurement m = recording.finish();
            std::uint64_t reference_launches = 0;
            const LedgerEntry* own = nullptr;
            for (const LedgerEntry& e : m.rows) {
                if (e.scope == "reference") reference_launches += e.launches;
                if (e.scope == "fused") {
                    QCOMPARE(e.op, std::string("tewb::rotary"));
                    own = &e;
                }
            }
            QVERIFY(own != nullptr);
            QCOMPARE(own->calls, std::uint64_t{1});
            QCOMPARE(own->launches, std::uint64_t{1});
            QVERIFY(own->launches_known);
            const auto x_bytes = static_cast<std::uint64_t>(x.numel()) * 4;
            QCOMPARE(own->bytes_read, x_bytes + 2 * 6 * 8 * 4);
            QCOMPARE(own->bytes_written, x_bytes);
            QCOMPARE(reference_launches, std::uint64_t{inverse ? 9u : 8u});
        }
    }

    // What the kernel does not take goes to the reference: the same result, no launch, a fallback with its reason.
    void misfitsFallBackToTheReference_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("reason");
        QTest::newRow("not contiguous") << 0 << "x is not contiguous";
        QTest::newRow("float64") << 1 << "x is Double";
        QTest::newRow("short table") << 2 << "cos is not a contiguous float32";
        QTest::newRow("not 4-D") << 3 << "x is not [batch, seq, heads, head_dim]";
    }

    void misfitsFallBackToTheReference() {
        QFETCH(int, which);
        QFETCH(QString, reason);
        at::manual_seed(71);
        at::Tensor x = at::randn({2, 8, 4, 16});
        RotaryTables t = rotary_tables(8, 16, 10000.0);
        if (which == 0) x = at::randn({2, 4, 8, 16}).transpose(1, 2);
        if (which == 1) x = x.to(at::kDouble);
        if (which == 2) t.cos = t.cos.narrow(0, 0, 7);
        if (which == 3) x = x.reshape({16, 4, 16});
        const TeOps& fused = fused_host_ops();
        const std::uint64_t before = fused.kernel_launches();
        if (which == 2 || which == 3) {
            // The reference itself cannot use these operands: the fused ops hand them over and the reference refuses.
            QVERIFY_THROWS_EXCEPTION(std::exception, fused.rotary(x, t.cos, t.sin, 2, false));
        } else {
            const at::Tensor got = fused.rotary(x, t.cos, t.sin, 2, false);
            QVERIFY(at::equal(got, reference_ops().rotary(x, t.cos, t.sin, 2, false)));
        }
        QCOMPARE(fused.kernel_launches(), before);
        const std::vector<FallbackTally> noted = fallbacks_noted();
        QCOMPARE(noted.size(), std::size_t{1});
        QCOMPARE(noted.front().op, std::string("rotary"));
        QVERIFY2(QString::fromStdString(noted.front().reason).contains(reason), noted.front().reason.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFusedRotary)
#include "tst_fused_rotary.moc"
