// The te modules' fused path (FusedOps) over the host kernels against the reference, trained end to end on
// the CPU: what every CI machine checks of the orchestration that runs on a GPU.
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "core/device/DeviceInfo.h"
#include "core/results/RunRecord.h"
#include "core/train/Trainer.h"

using namespace tewb;

namespace {

// Two layers, hidden 128 (block scaling needs k a multiple of 128), 128 tokens per step (the wgrad's k), 20
// steps, at the seed's learning rate: the quick preset's 3e-3 turns rounding differences into diverging runs.
RunConfig quick(Precision precision) {
    RunConfig config = make_preset(Preset::QuickCpu);
    config.backend = Backend::Te;
    config.precision = precision;
    config.model.seq = 32;
    config.batch = 4;
    config.warmup = 2;
    config.iters = 18;
    config.lr = 3e-4;
    return config;
}

}  // namespace

class TestFusedHost : public QObject {
    Q_OBJECT

    const Trainer trainer_{detect_device()};

private Q_SLOTS:
    // The fused path's orchestration (FusedOps) over the host kernels trains as the reference does: BF16
    // within 1e-3 relative of the reference's losses, FP8 (every recipe, with and without inspection)
    // within 2e-2 (the casts are the same, but a GEMM summed in another order can move an element across a
    // rounding boundary of the next cast), and never a fallback to the reference.
    void fusedHostTrainsAsTheReference_data() {
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("scaling");
        QTest::addColumn<bool>("calibrate");
        QTest::addColumn<bool>("inspect");
        QTest::newRow("bf16") << int(Precision::Bf16) << int(ScalingKind::Delayed) << false << false;
        for (const bool inspect : {false, true}) {
            const char* tail = inspect ? ", inspected" : "";
            QTest::newRow(qPrintable(QStringLiteral("fp8 delayed%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Delayed) << false << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 delayed, first step calibrated%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Delayed) << true << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 current%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Current) << false << inspect;
            QTest::newRow(qPrintable(QStringLiteral("fp8 block%1").arg(tail)))
                << int(Precision::Fp8) << int(ScalingKind::Block) << false << inspect;
        }
    }

    void fusedHostTrainsAsTheReference() {
        QFETCH(int, precision);
        QFETCH(int, scaling);
        QFETCH(bool, calibrate);
        QFETCH(bool, inspect);
        RunConfig config = quick(static_cast<Precision>(precision));
        config.fp8.scaling = static_cast<ScalingKind>(scaling);
        config.fp8.calibrate_first_step = calibrate;
        if (config.fp8.scaling != ScalingKind::Delayed) config.fp8.margin = 0;
        config.inspect_fp8 = inspect;
        config.te_impl = TeImpl::Reference;
        const RunRecord reference = trainer_.run(config);
        config.te_impl = TeImpl::Fused;
        const RunRecord fused = trainer_.run(config);
        QCOMPARE(reference.status, RunStatus::Finished);
        QVERIFY2(fused.status == RunStatus::Finished, fused.message.c_str());
        QCOMPARE(fused.execution.te_impl, std::string("fused-host"));
        for (const Fallback& f : fused.execution.fallbacks) qWarning("fallback: %s: %s (%lld)", f.op.c_str(), f.reason.c_str(), static_cast<long long>(f.count));
        QVERIFY(fused.execution.fallbacks.empty());
        QVERIFY(fused.execution.fused_launches_per_step && *fused.execution.fused_launches_per_step > 0);
        QCOMPARE(fused.steps.size(), reference.steps.size());
        const double bound = config.precision == Precision::Bf16 ? 1e-3 : 2e-2;
        double worst = 0;
        for (std::size_t i = 0; i < fused.steps.size(); ++i) {
            const double r = reference.steps[i].loss;
            const double f = fused.steps[i].loss;
            QVERIFY(std::isfinite(f));
            worst = std::max(worst, std::abs(f - r) / std::abs(r));
        }
        qInfo("largest relative loss difference over %zu steps: %.2e (bound %.0e)", fused.steps.size(), worst, bound);
        QVERIFY2(worst <= bound, qPrintable(QStringLiteral("relative loss difference %1 above %2").arg(worst).arg(bound)));
        if (inspect) {  // the inspection counts the same casts on both paths
            QVERIFY(!fused.steps.back().fp8.empty());
            QVERIFY(fused.steps.front().fp8[0].saturated.has_value());
        }
    }
};

QTEST_GUILESS_MAIN(TestFusedHost)
#include "tst_fused_host.moc"
