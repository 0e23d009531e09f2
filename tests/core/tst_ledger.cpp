// The launch ledger (core/ledger): every launch of a step and the bytes it moves, attributed to where it ran.
// Deterministic on the CPU: the next issue holds launch and byte targets per layer against it.
#include <QtTest>

#include <array>
#include <map>
#include <optional>
#include <tuple>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <torch/autograd.h>

#include "core/common/Error.h"
#include "core/ledger/Ledger.h"
#include "core/ledger/ObservedTorchOps.h"
#include "core/model/ByteMinimum.h"
#include "core/model/MiniGpt.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/results/LedgerReport.h"
#include "core/results/RecordJson.h"
#include "core/train/AutocastScope.h"
#include "core/train/FusedAdamW.h"
#include "core/train/Trainer.h"

using namespace tewb;

// The speed issue's targets train at the seed's layer shape over the host kernels: seconds in Release, tens of
// minutes under AddressSanitizer, whose instrumented GEMM loops are far slower. The counts and bytes are the same
// in both builds (the default stage of CI holds them); under ASan the smaller runs above cover the same code.
#if defined(__SANITIZE_ADDRESS__)
#define TEWB_SKIP_SEED_SHAPE_UNDER_ASAN() QSKIP("seed-shape targets: held by the default build; too slow under ASan")
#else
#define TEWB_SKIP_SEED_SHAPE_UNDER_ASAN() (void)0
#endif

namespace {

RunConfig small(Backend backend, Precision precision, int warmup = 2, int iters = 1) {
    RunConfig config = make_preset(Preset::QuickCpu);
    config.backend = backend;
    config.precision = precision;
    config.model = ModelShape{3, 64, 4, 16, 128};
    config.batch = 2;
    config.warmup = warmup;
    config.iters = iters;
    return config;
}

// The seed's layer shape (hidden 768, 12 heads), 2 layers, 128 tokens per step; te on its fused path (the host
// kernels on the CPU). The launch counts do not depend on the tokens while they are a multiple of 128 (the block
// recipe's tiles): te-bench's ledger at the seed's 3072 tokens gives the same (docs/benchmarks.md).
RunConfig seed_layer_shape(Backend backend, Precision precision, ScalingKind recipe) {
    RunConfig config = make_preset(Preset::Seed);
    config.device = DeviceKind::Cpu;
    config.backend = backend;
    config.precision = precision;
    config.model.layers = 2;
    config.model.seq = 32;
    config.batch = 4;
    config.warmup = 2;  // the ledger's step is the last warm-up step: after the first step's calibration
    config.iters = 1;
    if (precision == Precision::Fp8) {
        config.fp8.scaling = recipe;
        if (recipe == ScalingKind::Block) config.fp8.format = RecipeFormat::E4M3;
    }
    if (backend == Backend::Te) config.te_impl = TeImpl::Fused;
    return config;
}

const LedgerEntry* find_row(const LedgerMeasurement& m, int layer, const std::string& scope, const std::string& op) {
    for (const LedgerEntry& e : m.rows) {
        if (e.layer == layer && e.scope == scope && e.op == op) return &e;
    }
    return nullptr;
}

using RowKey = std::tuple<std::string, std::string, std::uint64_t, std::uint64_t, bool, std::uint64_t, std::uint64_t>;

// A row without its layer: what must be the same in every layer.
std::vector<RowKey> layer_rows(const Ledger& ledger, int layer) {
    std::vector<RowKey> rows;
    for (const LedgerRow& r : ledger.rows) {
        if (r.layer == layer) rows.emplace_back(r.scope, r.op, r.calls, r.launches, r.launches_known, r.bytes_read, r.bytes_written);
    }
    return rows;
}

std::map<std::string, std::uint64_t> launches_by_scope(const Ledger& ledger, int layer) {
    std::map<std::string, std::uint64_t> launches;
    for (const LedgerRow& r : ledger.rows) {
        if (r.layer == layer) launches[r.scope] += r.launches;
    }
    return launches;
}

QString describe(const std::vector<LedgerEntry>& rows) {
    QStringList lines;
    for (const LedgerEntry& e : rows) {
        lines << QStringLiteral("%1 %2 %3 calls %4 launches %5 read %6 written %7")
                     .arg(e.layer)
                     .arg(QString::fromStdString(e.scope), QString::fromStdString(e.op) + " [" + to_string(e.work) + "]")
                     .arg(e.calls)
                     .arg(e.launches)
                     .arg(e.bytes_read)
                     .arg(e.bytes_written);
    }
    return lines.join('\n');
}

bool same_rows(const LedgerMeasurement& a, const LedgerMeasurement& b) {
    if (a.rows.size() != b.rows.size()) return false;
    for (std::size_t i = 0; i < a.rows.size(); ++i) {
        const LedgerEntry& x = a.rows[i];
        const LedgerEntry& y = b.rows[i];
        if (std::tie(x.layer, x.scope, x.op, x.calls, x.launches, x.launches_known, x.bytes_read, x.bytes_written) !=
            std::tie(y.layer, y.scope, y.op, y.calls, y.launches, y.launches_known, y.bytes_read, y.bytes_written)) {
            return false;
        }
    }
    return a.saved_bytes_per_layer == b.saved_bytes_per_layer;
}

// Three BF16 training steps of a model outside the trainer, the last two each measured by a ledger.
std::vector<LedgerMeasurement> measure_steps(Backend backend, TeImpl impl) {
    const RunConfig c = small(backend, Precision::Bf16);
    torch::AutoGradMode grad_mode(true);
    const OpsScope ops(select_ops(at::kCPU, impl));
    const std::shared_ptr<CausalLm> model = make_model(backend, c.model, 7);
    FusedAdamW optimizer(model->parameters(), AdamWSettings{c.lr});
    const at::Tensor tokens = at::randint(c.model.vocab, {c.batch, c.model.seq + 1}, at::kLong);
    std::vector<LedgerMeasurement> out;
    for (int step = 0; step < 3; ++step) {
        std::optional<LedgerRecording> recording;
        if (step > 0) recording.emplace(false, 0);
        optimizer.zero_grad();
        at::Tensor loss;
        {
            AutocastScope autocast(true, at::kCPU);
            const at::Tensor logits = model->forward(tokens.narrow(1, 0, c.model.seq));
            const LedgerScope scope("loss");
            loss = at::cross_entropy_loss(logits.reshape({-1, c.model.vocab}), tokens.narrow(1, 1, c.model.seq).reshape({-1}));
        }
        loss.backward();
        {
            const LedgerScope scope("optimizer");
            optimizer.step();
        }
        if (recording) out.push_back(recording->finish());
    }
    return out;
}

}  // namespace

class TestLedger : public QObject {
    Q_OBJECT

    const Trainer trainer_{detect_device()};

private Q_SLOTS:
    void countsLaunchesAndBytesOfLibTorchOpsAndOwnKernels() {
        note_own_kernel("before", {1}, 1, 1);  // no ledger records: nothing happens
        const at::Tensor a = at::ones({4, 8});
        const at::Tensor b = at::ones({4, 8});
        LedgerRecording recording(false, 0);
        {
            const LedgerScope layer("layer", 1);
            const LedgerScope scope("qkv");
            const at::Tensor sum = a + b;             // one kernel: reads 2 x 128 bytes, writes 128
            const at::Tensor view = sum.view({8, 4}).t();   // views launch nothing and are not listed
            note_own_kernel("tewb::cast", {2}, 100, 50);
            note_own_kernel("tewb::cast", {2}, 100, 50);
        }
        note_own_kernel("tewb::gemm", {1}, 10, 20);
        const LedgerMeasurement m = recording.finish();
        QVERIFY2(m.rows.size() == 3, qPrintable(describe(m.rows)));
        const LedgerEntry* add = find_row(m, 1, "qkv", "aten::add");
        QVERIFY(add != nullptr);
        QCOMPARE(add->calls, std::uint64_t{1});
        QCOMPARE(add->launches, std::uint64_t{1});
        QVERIFY(add->launches_known);
        QCOMPARE(add->bytes_read, std::uint64_t{256});
        QCOMPARE(add->bytes_written, std::uint64_t{128});
        const LedgerEntry* cast = find_row(m, 1, "qkv", "tewb::cast");
        QVERIFY(cast != nullptr);
        QCOMPARE(cast->calls, std::uint64_t{2});
        QCOMPARE(cast->launches, std::uint64_t{4});
        QCOMPARE(cast->bytes_read, std::uint64_t{200});
        QCOMPARE(cast->bytes_written, std::uint64_t{100});
        const LedgerEntry* other = find_row(m, -1, "other", "tewb::gemm");  // outside every scope: kept, as "other"
        QVERIFY(other != nullptr);
        QCOMPARE(other->launches, std::uint64_t{1});
    }

    void ownKernelsHelpersAndMemsetsAreRowsOfTheirOwn() {
        LedgerRecording recording(false, 0);
        {
            const LedgerScope scope("fc1");
            note_own_kernel("tewb::gemm", {1, 1, 1, true}, 100, 50);   // an observed epilogue: helper and memset
            note_own_kernel("tewb::gemm", {1, 0, 0, false}, 100, 50);  // an unobserved one: its helpers not known
            note_own_kernel("tewb::amax", {1, 0, 1, true}, 8, 4);
        }
        const LedgerMeasurement m = recording.finish();
        const auto row = [&m](const char* op, LaunchWork work) -> const LedgerEntry* {
            for (const LedgerEntry& e : m.rows) {
                if (e.scope == "fc1" && e.op == op && e.work == work) return &e;
            }
            return nullptr;
        };
        QVERIFY2(m.rows.size() == 5, qPrintable(describe(m.rows)));
        const LedgerEntry* gemm = row("tewb::gemm", LaunchWork::Kernel);
        QVERIFY(gemm != nullptr && gemm->calls == 2 && gemm->launches == 2 && gemm->launches_known);
        QCOMPARE(gemm->bytes_read, std::uint64_t{200});
        const LedgerEntry* helper = row("tewb::gemm", LaunchWork::Helper);
        QVERIFY(helper != nullptr && helper->launches == 1 && !helper->launches_known && helper->bytes_read == 0);
        const LedgerEntry* memset = row("tewb::gemm", LaunchWork::Memset);
        QVERIFY(memset != nullptr && memset->launches == 1 && memset->calls == 1);
        QVERIFY(row("tewb::amax", LaunchWork::Memset) != nullptr);
        QVERIFY(row("tewb::amax", LaunchWork::Helper) == nullptr);
        const Ledger ledger = make_ledger(m.rows, 1, {}, 1, "test");
        QCOMPARE(ledger.launches_per_step, std::uint64_t{6});
        QCOMPARE(ledger.unknown_launches_per_step, std::uint64_t{1});
        const std::string table = ledger_outside_table(ledger);
        QVERIFY2(table.find("tewb::gemm (helper kernels)") != std::string::npos, table.c_str());
        QVERIFY2(table.find("tewb::amax (memsets)") != std::string::npos, table.c_str());
        QVERIFY2(ledger_totals_lines(ledger).front().find("(3 kernels, 1 helper kernels, 2 memsets, 0 copies)") !=
                     std::string::npos,
                 ledger_totals_lines(ledger).front().c_str());
    }

    // A copy between the host and another device is a memcpy on the GPU, a row of its own; so is a conversion whose
    // work is that copy. (The meta device stands in for a GPU: no CUDA here.)
    void copiesBetweenDevicesAreCopies() {
        const at::Tensor host = at::ones({64});
        at::Tensor elsewhere = at::empty({64}, at::TensorOptions().device(at::kMeta));
        LedgerRecording recording(false, 0);
        {
            const LedgerScope scope("batch");
            elsewhere.copy_(host);
            const at::Tensor moved = host.to(at::kMeta);
            const at::Tensor same = host.clone();  // on the host: a kernel
        }
        const LedgerMeasurement m = recording.finish();
        const auto launches = [&m](const char* op, LaunchWork work) {
            for (const LedgerEntry& e : m.rows) {
                if (e.op == op && e.work == work) return e.launches;
            }
            return std::uint64_t{0};
        };
        QVERIFY2(launches("aten::copy_", LaunchWork::Copy) == 1 && launches("aten::copy_", LaunchWork::Kernel) == 0,
                 qPrintable(describe(m.rows)));
        QVERIFY2(launches("aten::to", LaunchWork::Copy) == 1 && launches("aten::to", LaunchWork::Kernel) == 0,
                 qPrintable(describe(m.rows)));
        QVERIFY2(launches("aten::clone", LaunchWork::Kernel) == 1, qPrintable(describe(m.rows)));
    }

    void nestedOpsCountOnceAndInPlaceOpsWriteTheirSelf() {
        at::Tensor x = at::ones({16}, at::kFloat);
        const at::Tensor w = at::ones({16, 16});
        LedgerRecording recording(false, 0);
        {
            const LedgerScope scope("s");
            const at::Tensor y = at::linear(x.view({1, 16}), w);  // composite: counts what it calls, once
            x.mul_(2.0);
        }
        const LedgerMeasurement m = recording.finish();
        QVERIFY2(m.rows.size() == 2, qPrintable(describe(m.rows)));
        const LedgerEntry* linear = find_row(m, -1, "s", "aten::linear");
        QVERIFY2(linear != nullptr, qPrintable(describe(m.rows)));
        QCOMPARE(linear->calls, std::uint64_t{1});
        QCOMPARE(linear->bytes_read, std::uint64_t{16 * 4 + 16 * 16 * 4});
        QCOMPARE(linear->bytes_written, std::uint64_t{16 * 4});
        const LedgerEntry* mul = find_row(m, -1, "s", "aten::mul_");
        QVERIFY(mul != nullptr);
        QCOMPARE(mul->launches, std::uint64_t{1});
        QCOMPARE(mul->bytes_written, std::uint64_t{16 * 4});
    }

    void multiTensorOpsCountTheirChunksNotTheirTensors() {
        // 30 tensors of 1000 elements: 30 chunks, one launch on CUDA (not 30, as the CPU's loop would say);
        // 300 tensors of 70000 elements: 600 chunks, at least two launches of 320 chunks.
        std::vector<at::Tensor> small_list(30, at::ones({1000}));
        std::vector<at::Tensor> large_list;
        for (int i = 0; i < 300; ++i) large_list.push_back(at::ones({70000}));
        LedgerRecording recording(false, 0);
        {
            const LedgerScope scope("small");
            at::_foreach_add_(small_list, 1.0);
        }
        {
            const LedgerScope scope("large");
            at::_foreach_add_(large_list, 1.0);
        }
        const LedgerMeasurement m = recording.finish();
        const LedgerEntry* small_add = find_row(m, -1, "small", "aten::_foreach_add_");
        QVERIFY2(small_add != nullptr, qPrintable(describe(m.rows)));
        QCOMPARE(small_add->launches, std::uint64_t{1});
        QVERIFY(!small_add->launches_known);  // a lower bound: the tensor-count limit may split it
        const LedgerEntry* large_add = find_row(m, -1, "large", "aten::_foreach_add_");
        QVERIFY2(large_add != nullptr, qPrintable(describe(m.rows)));
        QCOMPARE(large_add->launches, std::uint64_t{2});
    }

    void backwardOpsGoToTheScopeOfTheirForward() {
        const at::Tensor x = at::ones({32}).set_requires_grad(true);
        LedgerRecording recording(false, 0);
        at::Tensor y;
        {
            const LedgerScope layer("layer", 0);
            const LedgerScope scope("fc1");
            y = at::tanh(x);
        }
        at::Tensor total;
        {
            const LedgerScope scope("loss");
            total = y.sum();
        }
        total.backward();
        const LedgerMeasurement m = recording.finish();
        QVERIFY2(find_row(m, 0, "fc1", "aten::tanh_backward") != nullptr, qPrintable(describe(m.rows)));
        QVERIFY2(find_row(m, 0, "fc1", "aten::tanh") != nullptr, qPrintable(describe(m.rows)));
        for (const LedgerEntry& e : m.rows) QVERIFY2(e.op != "aten::tanh_backward" || e.layer == 0, qPrintable(describe(m.rows)));
        QCOMPARE(m.saved_bytes_per_layer.size(), std::size_t{1});
        QVERIFY2(m.saved_bytes_per_layer[0] >= 32 * 4, qPrintable(QString::number(m.saved_bytes_per_layer[0])));
    }

    void twoConsecutiveStepsGiveIdenticalRows_data() {
        QTest::addColumn<Backend>("backend");
        QTest::addColumn<TeImpl>("impl");
        QTest::newRow("te") << Backend::Te << TeImpl::Auto;
        QTest::newRow("te fused-host") << Backend::Te << TeImpl::Fused;
        QTest::newRow("torch") << Backend::Torch << TeImpl::Auto;
    }
    void twoConsecutiveStepsGiveIdenticalRows() {
        QFETCH(Backend, backend);
        QFETCH(TeImpl, impl);
        const std::vector<LedgerMeasurement> steps = measure_steps(backend, impl);
        QCOMPARE(steps.size(), std::size_t{2});
        QVERIFY(!steps[0].rows.empty());
        QVERIFY2(same_rows(steps[0], steps[1]), qPrintable(describe(steps[0].rows) + "\n---\n" + describe(steps[1].rows)));
    }

    void runsRecordALedgerWhoseTotalsAreTheSumOfItsRows_data() {
        QTest::addColumn<Backend>("backend");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<TeImpl>("impl");
        QTest::newRow("te bf16") << Backend::Te << Precision::Bf16 << TeImpl::Auto;
        QTest::newRow("te fp8") << Backend::Te << Precision::Fp8 << TeImpl::Auto;
        QTest::newRow("te bf16 fused-host") << Backend::Te << Precision::Bf16 << TeImpl::Fused;
        QTest::newRow("te fp8 fused-host") << Backend::Te << Precision::Fp8 << TeImpl::Fused;
        QTest::newRow("torch bf16") << Backend::Torch << Precision::Bf16 << TeImpl::Auto;
        QTest::newRow("torch fp32") << Backend::Torch << Precision::Fp32 << TeImpl::Auto;
    }
    void runsRecordALedgerWhoseTotalsAreTheSumOfItsRows() {
        QFETCH(Backend, backend);
        QFETCH(Precision, precision);
        QFETCH(TeImpl, impl);
        RunConfig config = small(backend, precision);
        config.te_impl = impl;
        const RunRecord record = trainer_.run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        QVERIFY(record.execution.ledger.has_value());
        const Ledger& ledger = *record.execution.ledger;
        QCOMPARE(ledger.step, 2);
        QVERIFY2(ledger.source.find("eager step 2 (the last warm-up step)") == 0, qPrintable(QString::fromStdString(ledger.source)));
        QCOMPARE(ledger.layers, config.model.layers);
        // The fused path's own kernels are rows of their own, with exact counts.
        bool own_kernels = false;
        for (const LedgerRow& r : ledger.rows) own_kernels = own_kernels || (r.op.rfind("tewb::", 0) == 0 && r.launches_known);
        QCOMPARE(own_kernels, impl == TeImpl::Fused);

        std::uint64_t launches = 0, bytes = 0, unknown = 0, layer_launches = 0, layer_bytes = 0;
        for (const LedgerRow& r : ledger.rows) {
            launches += r.launches;
            bytes += r.bytes_read + r.bytes_written;
            if (!r.launches_known) unknown += r.launches;
            if (r.layer >= 0) layer_launches += r.launches, layer_bytes += r.bytes_read + r.bytes_written;
        }
        QCOMPARE(ledger.launches_per_step, launches);
        QCOMPARE(ledger.bytes_per_step, bytes);
        QCOMPARE(ledger.unknown_launches_per_step, unknown);
        QCOMPARE(ledger.launches_per_layer, static_cast<double>(layer_launches) / config.model.layers);
        QCOMPARE(ledger.bytes_per_layer, static_cast<double>(layer_bytes) / config.model.layers);

        // Every layer launches as many times per module as the first; the layers after the first have the same rows
        // (the first's qkv LayerNorm backward has no Linear before it to hand its gradient to: another op of the same
        // launches on te's fused path, GradientHandOver).
        QCOMPARE(ledger.saved_bytes_by_layer.size(), static_cast<std::size_t>(config.model.layers));
        for (int layer = 0; layer < config.model.layers; ++layer) {
            std::uint64_t in_layer = 0;
            for (const LedgerRow& r : ledger.rows) in_layer += r.layer == layer ? r.launches : 0;
            QVERIFY2(in_layer > 0, qPrintable(QString::number(layer)));
            QVERIFY2(launches_by_scope(ledger, layer) == launches_by_scope(ledger, 0), qPrintable(QString::number(layer)));
            if (layer > 1) QVERIFY2(layer_rows(ledger, layer) == layer_rows(ledger, 1), qPrintable(QString::number(layer)));
            QVERIFY(ledger.saved_bytes_by_layer[layer] > 0);
            QCOMPARE(ledger.saved_bytes_by_layer[layer], ledger.saved_bytes_by_layer[0]);
        }
        // The places outside the layers: embedding, head, loss and optimizer each launch something.
        for (const char* place : {"embedding", "head", "loss", "optimizer"}) {
            bool found = false;
            for (const LedgerRow& r : ledger.rows) found = found || (r.layer < 0 && r.scope == place && r.launches > 0);
            QVERIFY2(found, place);
        }
        if (precision == Precision::Fp8) {
            bool forward_update = false, backward_update = false;
            for (const LedgerRow& r : ledger.rows) {
                forward_update = forward_update || r.scope == "fp8_update_forward";
                backward_update = backward_update || r.scope == "fp8_update_backward";
            }
            QVERIFY(forward_update && backward_update);
        }

        // JSON round trip; a record from before the ledger still reads.
        const RunRecord back = record_from_json_text(record_to_json_text(record), "test");
        QVERIFY(back.execution.ledger == record.execution.ledger);
        nlohmann::json old = to_json(record);
        old["execution"].erase("ledger");
        QVERIFY(!record_from_json(old, "old").execution.ledger.has_value());
    }

    // The speed issue's launch counts, at the seed's layer shape (seed_layer_shape), te on its fused path: every
    // launch the GPU runs (kernels, cuBLASLt's helper kernels as observed, memsets; LaunchWork). Each row pins today's
    // figures exactly: a change that adds a launch fails here, and so does one that makes the ledger count fewer than
    // the GPU runs (a rule dropped, such as LibTorch's two-kernel LayerNorm backward); a lever that removes launches
    // changes its row in the same change (docs/benchmarks.md, "Levers of the speed issue"). The targets are per step
    // at the seed preset's 12 layers (te BF16 <= 260, te FP8 <= 300 kernels + memsets): printed with the distance to
    // them, and asserted (both met since 2026-12-06: te BF16 249, te FP8 275).
    void launchCountsAtTheSeedLayerShape_data() {
        QTest::addColumn<Backend>("backend");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<ScalingKind>("recipe");
        QTest::addColumn<double>("layer_count");
        QTest::addColumn<double>("outside_count");
        QTest::addColumn<double>("step_target");  // at 12 layers; 0: the issue sets none
        QTest::addColumn<Arch>("arch");
        const Arch gpt = Arch::Gpt;
        // torch: LayerNorm's backward is two kernels on CUDA (observed), per layer twice and once outside.
        QTest::newRow("torch bf16") << Backend::Torch << Precision::Bf16 << ScalingKind::Delayed << 47.0 << 42.0 << 0.0 << gpt;
        // te BF16: 22 kernels; no cuBLASLt bias-gradient epilogue, so no helper kernels or memsets (was 32: 22 kernels, a
        // helper and a memset beside each BGRADB and DGELU_BGRAD GEMM, two casts of the float32 output gradient; then 25
        // with cast_dbias x3 and the GELU backward kernel doing that work). 24 since qkv's stacks dq, dk and dv and sums
        // its bias gradient in one pass (stacked_cast_dbias, where autograd's stack and a cast_dbias were two); 22 since
        // proj's and fc2's gradients come cast and summed from the LayerNorm backwards that compute them
        // (layer_norm_backward_cast_dbias, GradientHandOver), where each took a cast_dbias of its own. 20 since the
        // attention is the project's own (kernels/attention: one launch each way, where LibTorch's took 1 and 3).
        QTest::newRow("te bf16") << Backend::Te << Precision::Bf16 << ScalingKind::Delayed << 20.0 << 9.0 << 260.0 << gpt;
        // FP8 GEMMs take no gradient epilogue; what cuBLASLt runs beside them is not observed yet (rows not known). 24
        // since qkv's FP8 gradient is cast from dq, dk and dv where they lie (stacked_cast_transpose_dbias_to_fp8; was 27:
        // a stack, then cast_transpose_dbias_to_fp8) and proj's and fc2's by the LayerNorm backwards that compute them
        // (layer_norm_backward_quantize_dbias). Block scaling keeps the stack and its casts. Both 2 fewer since the
        // attention is the project's own.
        QTest::newRow("te fp8 delayed") << Backend::Te << Precision::Fp8 << ScalingKind::Delayed << 22.0 << 11.0 << 300.0 << gpt;
        // Current scaling: a scale from the tensor's own amax before each cast (abs_max_current_scale, one launch where
        // abs_max and current_scale were two), the output gradients cast and summed in one pass after it (no LibTorch sum),
        // qkv's read as the one view the attention's backward leaves (no stack), every weight's scale and cast in one
        // multi-tensor launch each (outside the layers; two per weight before). Was 49 per layer. Block scaling also casts
        // qkv's gradient from that view since (was 31). 34 (was 36) since the LayerNorms hand their output's amax and scale
        // to the casts of qkv's and fc1's inputs (layer_norm_forward_current_scale: no amax launch before those casts); 32
        // since GELU's forward and backward do the same for fc2's input and fc1's output gradient; 29.5 since the LayerNorm
        // backwards hand proj's and fc2's output gradients over with their scale (layer_norm_backward_cast_dbias_current_scale,
        // then the Linear's cast without sums, run in the LayerNorm's module): 30 in every layer but the first, whose qkv
        // LayerNorm hands nothing to the embedding (29); the last layer's fc2 cast is the head's (outside 14, was 13). At 12
        // layers 29 + 11 x 30 + 14 = 373 per step (397 before). 27.5 since the attention's forward and backward do the same
        // for proj's input and qkv's output gradient (attention_forward_current_scale, attention_backward_current_scale): no
        // amax launch is left in the layer; 27 + 11 x 28 + 14 = 349 per step at 12 layers.
        QTest::newRow("te fp8 current") << Backend::Te << Precision::Fp8 << ScalingKind::Current << 27.5 << 14.0 << 0.0 << gpt;
        QTest::newRow("te fp8 block") << Backend::Te << Precision::Fp8 << ScalingKind::Block << 30.0 << 12.0 << 0.0 << gpt;
        // The llama-seed preset's layer (12 query heads over 4 key/value heads, SwiGLU of 2048, rotary): today's figures.
        // Beyond the gpt layer's: the rotary forward and inverse, SwiGLU's two passes (GELU's ride in GEMM epilogues),
        // and under FP8 the output-gradient casts a bias's dbias cast would have done. No biases: no gradient epilogues, no
        // helpers. 2 fewer per layer and 1 fewer outside since the RMSNorm backwards (two per layer, the head's) run on
        // LayerNorm's fast kernel, one launch where dx and dgamma were two. 3 fewer (27 → 24, 29 → 26) since the grouped-
        // query attention runs on the project's kernels over the packed heads (one launch each way, the packed gradient
        // written whole) where LibTorch's took 1 + 3 on the CPU and the q/k/v split's backward concatenated (a cat):
        // 24 x 12 + 10 = 298 per step at 12 layers (334 before), FP8 delayed 26 x 12 + 12 = 324 (360). 2 fewer (22, 24)
        // since the RMSNorm backwards hand proj's and fc2's output gradients over cast (rms_norm_backward_cast: the BF16
        // copy; rms_norm_backward_quantize: delayed scaling's FP8 bytes and transposed copy), where the Linears cast them
        // (aten::to, cast_transpose_to_fp8): 22 x 12 + 10 = 274, 24 x 12 + 12 = 300 per step. Outside the layers 1 fewer
        // in every llama row since its embedding (no position table) runs on the embedding kernel, one launch reading the
        // narrowed tokens where they lie, where LibTorch's copied them before its gather (2): 273 and 299 per step. FP8
        // delayed 23 since the rotary's inverse writes qkv's FP8 output gradient, its transposed copy and amax in its own
        // launch (rotary_quantize, handed over through the ScaleHandOver qkv asked with), where qkv cast it
        // (cast_transpose_to_fp8): 23 x 12 + 11 = 287 per step.
        QTest::newRow("llama te bf16") << Backend::Te << Precision::Bf16 << ScalingKind::Delayed << 22.0 << 9.0 << 0.0
                                       << Arch::Llama;
        QTest::newRow("llama te fp8 delayed") << Backend::Te << Precision::Fp8 << ScalingKind::Delayed << 23.0 << 11.0 << 0.0
                                              << Arch::Llama;
        // Current scaling 39 (was 41) since the RMSNorms hand their output's amax and scale to the casts
        // (rms_norm_forward_current_scale), 37 since SwiGLU's forward and backward do the same for the down projection's
        // input and fc1's output gradient. (Its grouped-query attention runs on LibTorch's backends: no attention hand-off.)
        // 34.5 and 15 outside since the RMSNorm backwards hand proj's and fc2's output gradients over with their scale
        // (rms_norm_backward_current_scale, then the Linear's cast in the RMSNorm's module): 35 in every layer but the
        // first (34), the last fc2's cast in the head; 34 + 11 x 35 + 15 = 434 per step at 12 layers (458 before). 33.5 since
        // the inverse rotation hands qkv's output gradient over with its scale (rotary_current_scale); one amax launch is
        // left, proj's input (the grouped-query attention was LibTorch's, which writes no scale); 33 + 11 x 34 + 15 = 422
        // per step. 29.5 since the grouped-query attention runs on the project's kernels (as the bf16 row: 3 fewer) and its
        // forward hands proj's input over with its scale (attention_forward_current_scale: the last amax launch of the
        // layer gone): 29 + 11 x 30 + 15 = 374 per step at 12 layers; 373 with the embedding kernel (14 outside).
        QTest::newRow("llama te fp8 current") << Backend::Te << Precision::Fp8 << ScalingKind::Current << 29.5 << 14.0 << 0.0
                                              << Arch::Llama;
        QTest::newRow("llama te fp8 block") << Backend::Te << Precision::Fp8 << ScalingKind::Block << 32.0 << 12.0 << 0.0
                                            << Arch::Llama;
    }
    void launchCountsAtTheSeedLayerShape() {
        TEWB_SKIP_SEED_SHAPE_UNDER_ASAN();
        QFETCH(Backend, backend);
        QFETCH(Precision, precision);
        QFETCH(ScalingKind, recipe);
        QFETCH(double, layer_count);
        QFETCH(double, outside_count);
        QFETCH(double, step_target);
        QFETCH(Arch, arch);
        RunConfig config = seed_layer_shape(backend, precision, recipe);
        if (arch == Arch::Llama) {
            config.model.arch = Arch::Llama;
            config.model.kv_heads = 4;
        }
        const RunRecord record = trainer_.run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        QVERIFY2(record.execution.fallbacks.empty(), "the fused path ran fully fused");
        QVERIFY(record.execution.ledger.has_value());
        const Ledger& ledger = *record.execution.ledger;
        const double per_layer = ledger.launches_per_layer;
        const double outside = static_cast<double>(ledger.launches_per_step) - per_layer * ledger.layers;
        const double seed_step = 12 * per_layer + outside;
        const QString figures =
            QStringLiteral("%1 launches per layer (pinned: %2), %3 outside the layers (pinned: %4); %5 per step at 12 layers "
                           "(issue target %6)")
                .arg(per_layer)
                .arg(layer_count)
                .arg(outside)
                .arg(outside_count)
                .arg(seed_step)
                .arg(step_target > 0 ? QString::number(step_target) + (seed_step <= step_target ? ": met" : ": not met yet")
                                     : QStringLiteral("none"));
        qInfo("%s", qPrintable(figures));
        QVERIFY2(per_layer == layer_count, qPrintable(figures + "\n" + describe(ledger.rows)));
        QVERIFY2(outside == outside_count, qPrintable(figures + "\n" + describe(ledger.rows)));
        // Both of the targets are met (te FP8 delayed since 2026-12-06, te BF16 since the project's own
        // attention, 2026-12-06) and held from then on.
        if (step_target > 0) QVERIFY2(seed_step <= step_target, qPrintable(figures));
    }

    // The GPU's other work in rows of their own, from the observed data. te BF16 runs no GEMM with a bias-gradient
    // epilogue any more (its bias gradients come from cast_dbias and the GELU backward kernel), and its other
    // epilogues were observed to run nothing beside them: no helper or memset rows. FP8 GEMMs were never observed, so
    // FP8 layers have helper rows marked not known, with no launches.
    // LibTorch's operators as the H200's trace showed them are data the ledger reads (core/ledger/observed_torch_ops.csv),
    // checked line by line; LayerNorm's backward counts its two kernels in a torch run's ledger (the pinned 47 per layer
    // of launchCountsAtTheSeedLayerShape rests on it).
    void observedTorchOpsAreDataCheckedLineByLine_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("fields") << "native_layer_norm_backward,2,0,0\n" << "line 1 \"native_layer_norm_backward,2,0,0\": expected 5 fields";
        QTest::newRow("namespace") << "# c\naten::add,1,0,0,no" << "line 2 \"aten::add,1,0,0,no\": the op is LibTorch's name without";
        QTest::newRow("count") << "add,17,0,0,no" << "a count is not a whole number from 0 to 16";
        QTest::newRow("nothing") << "add,0,0,0,no" << "an observed op runs something";
        QTest::newRow("flag") << "add,1,0,0,maybe" << "memsets_inferred is yes or no";
        QTest::newRow("twice") << "add,1,0,0,no\r\nadd,2,0,0,no" << "line 2 \"add,2,0,0,no\": a second entry for add";
    }
    void observedTorchOpsAreDataCheckedLineByLine() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        try {
            parse_observed_torch_ops(text.toStdString());
            QFAIL("accepted");
        } catch (const DataError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
        }
        const std::vector<ObservedTorchOp>& table = observed_torch_ops();
        QCOMPARE(table.size(), std::size_t{3});
        const auto find = [&](const std::string& op) {
            for (const ObservedTorchOp& o : table) {
                if (o.op == op) return o;
            }
            return ObservedTorchOp{};
        };
        QCOMPARE(find("native_layer_norm_backward").kernels, std::uint64_t{2});
        const ObservedTorchOp cudnn = find("_scaled_dot_product_cudnn_attention_backward");
        QVERIFY(cudnn.kernels == 1 && cudnn.helper_kernels == 2 && cudnn.memsets == 1 && cudnn.memsets_inferred);
    }

    void helperKernelsAndMemsetsAreRowsOfTheirOwn_data() {
        QTest::addColumn<Precision>("precision");
        QTest::newRow("te bf16") << Precision::Bf16;
        QTest::newRow("te fp8") << Precision::Fp8;
    }
    void helperKernelsAndMemsetsAreRowsOfTheirOwn() {
        QFETCH(Precision, precision);
        RunConfig config = small(Backend::Te, precision);
        config.te_impl = TeImpl::Fused;
        const RunRecord record = trainer_.run(config);
        QVERIFY2(record.status == RunStatus::Finished, record.message.c_str());
        QVERIFY(record.execution.fallbacks.empty());
        const Ledger& ledger = *record.execution.ledger;
        std::uint64_t helpers = 0, memsets = 0, unknown_helper_rows = 0;
        for (const LedgerRow& r : ledger.rows) {
            if (r.layer != 0) continue;
            if (r.work == LaunchWork::Helper) {
                helpers += r.launches;
                if (!r.launches_known) ++unknown_helper_rows;
                QVERIFY2(r.op == "tewb::gemm" || r.op.find("tewb::") == 0, r.op.c_str());
                QCOMPARE(r.bytes_read + r.bytes_written, std::uint64_t{0});  // bytes stay with the op's kernel row
            }
            if (r.work == LaunchWork::Memset) memsets += r.launches;
        }
        if (precision == Precision::Bf16) {
            QVERIFY2(helpers == 0 && memsets == 0 && unknown_helper_rows == 0, qPrintable(describe(ledger.rows)));
        } else {
            QVERIFY2(helpers == 0 && unknown_helper_rows > 0, qPrintable(describe(ledger.rows)));
        }
        const std::vector<std::string> totals = ledger_totals_lines(ledger);
        QVERIFY2(totals.front().find(" helper kernels, ") != std::string::npos, totals.front().c_str());
    }

    // The speed issue's byte targets at the seed's layer shape and tokens (3072; one layer: the figures are per
    // layer): bytes moved within 1.3 times the least a layer can move (docs/kernels.md, whose table the first checks
    // hold; the weight copies are made outside the layers) for te FP8 (delayed scaling), and within 1.4 times for te
    // BF16: its least assumes GELU's backward and the bias gradients inside cuBLASLt's epilogues, whose helper
    // kernels the ledger counts no bytes for (on the H200 they took 0.8 ms of a step); te BF16 now does that work in
    // kernels of its own, every byte counted: the GELU backward's read of fc2's dgrad and of GELU's input, and a pass
    // over the qkv gradient for its bias (docs/kernels.md, "The least bytes a layer can move"); bytes saved
    // for the backward: te BF16 at most torch BF16's, te FP8 at most 0.75 times. FP8 runs keep their non-GEMM math
    // in BF16 on the CPU as on a GPU, so these are the GPU's dtypes.
    void bytesAtTheSeedTokensAgainstTheTargets() {
        TEWB_SKIP_SEED_SHAPE_UNDER_ASAN();
        constexpr double kMiB = 1024.0 * 1024.0;
        const ModelShape seed;
        const LayerBytes fp8 = minimum_layer_bytes(seed, 3072, true);
        QVERIFY2(std::abs(fp8.forward / kMiB - 153.1875) < 1e-6 && std::abs(fp8.backward / kMiB - 292.6875) < 1e-6 &&
                     std::abs(fp8.weight_copies / kMiB - 40.5) < 1e-6,
                 qPrintable(QStringLiteral("%1 %2 %3").arg(fp8.forward / kMiB).arg(fp8.backward / kMiB).arg(fp8.weight_copies / kMiB)));
        const LayerBytes bf16 = minimum_layer_bytes(seed, 3072, false);
        QVERIFY2(std::abs(bf16.total() / kMiB - 463.875) < 1e-3, qPrintable(QString::number(bf16.total() / kMiB)));

        const auto at_batch = [&](Backend backend, Precision precision, int batch) {
            RunConfig config = seed_layer_shape(backend, precision, ScalingKind::Delayed);
            config.model.layers = 1;
            config.model.seq = seed.seq;  // the seed's sequence: the bytes, unlike the launches, depend on the tokens
            config.batch = batch;
            // LibTorch's ops save the same tensors on every step (no calibration, no FP8 copies): the first step is
            // measured, alone.
            if (backend == Backend::Torch) config.warmup = 0;
            const RunRecord record = trainer_.run(config);
            if (record.status != RunStatus::Finished || !record.execution.ledger) {
                qWarning("%s", record.message.c_str());
                return Ledger{};
            }
            return *record.execution.ledger;
        };
        // Each ledger at the seed's 3072 tokens (batch 32) without running that batch: LibTorch's BF16 backward GEMMs
        // take a scalar path on a CPU without AVX-512 (about 60 s for the step on CI's machine), and the fused runs
        // at that batch took 27 s each. What a step saves and moves is a part that does not depend on the batch
        // (weights, their copies and scales) plus the same bytes per sequence (each activation is [batch, ...]):
        // measured at batches 1, 2 and 3, checked to lie on one line to the byte, and extended to the seed's batch.
        const int seed_batch = make_preset(Preset::Seed).batch;
        QCOMPARE(seed_batch * seed.seq, 3072);
        const auto at_seed_batch = [&](Backend backend, Precision precision) {
            std::array<Ledger, 3> measured;
            for (int batch = 1; batch <= 3; ++batch) measured[static_cast<std::size_t>(batch - 1)] = at_batch(backend, precision, batch);
            const auto extended = [&](double Ledger::*figure, const char* what) {
                const double one = measured[0].*figure;
                const double per_sequence = measured[1].*figure - one;
                if (!(per_sequence > 0 && measured[2].*figure - measured[1].*figure == per_sequence)) {
                    const std::string run = std::string(to_string(backend)) + " " + std::string(to_string(precision));
                    qWarning("%s: %s at batches 1, 2, 3 not on one line: %.0f %.0f %.0f", run.c_str(), what, one, measured[1].*figure,
                             measured[2].*figure);
                    return -1.0;
                }
                return one + (seed_batch - 1) * per_sequence;
            };
            Ledger out;
            out.saved_bytes_per_layer = extended(&Ledger::saved_bytes_per_layer, "saved bytes");
            out.bytes_per_layer = extended(&Ledger::bytes_per_layer, "moved bytes");
            return out;
        };
        const Ledger torch_bf16 = at_seed_batch(Backend::Torch, Precision::Bf16);
        const Ledger te_bf16 = at_seed_batch(Backend::Te, Precision::Bf16);
        const Ledger te_fp8 = at_seed_batch(Backend::Te, Precision::Fp8);
        for (const Ledger* l : {&torch_bf16, &te_bf16, &te_fp8}) QVERIFY(l->saved_bytes_per_layer > 0 && l->bytes_per_layer > 0);

        const double bf16_moved = te_bf16.bytes_per_layer / (bf16.forward + bf16.backward);
        const double fp8_moved = te_fp8.bytes_per_layer / (fp8.forward + fp8.backward);
        const double bf16_saved = te_bf16.saved_bytes_per_layer / torch_bf16.saved_bytes_per_layer;
        const double fp8_saved = te_fp8.saved_bytes_per_layer / torch_bf16.saved_bytes_per_layer;
        const QString figures =
            QStringLiteral("moved per layer: te BF16 %1 MiB (%2x the least, target 1.4x), te FP8 %3 MiB (%4x, target 1.3x); "
                           "saved per layer: torch BF16 %5 MiB, te BF16 %6 MiB (%7x, target 1x), te FP8 %8 MiB (%9x, target 0.75x)")
                .arg(te_bf16.bytes_per_layer / kMiB, 0, 'f', 1)
                .arg(bf16_moved, 0, 'f', 2)
                .arg(te_fp8.bytes_per_layer / kMiB, 0, 'f', 1)
                .arg(fp8_moved, 0, 'f', 2)
                .arg(torch_bf16.saved_bytes_per_layer / kMiB, 0, 'f', 1)
                .arg(te_bf16.saved_bytes_per_layer / kMiB, 0, 'f', 1)
                .arg(bf16_saved, 0, 'f', 3)
                .arg(te_fp8.saved_bytes_per_layer / kMiB, 0, 'f', 1)
                .arg(fp8_saved, 0, 'f', 3);
        qInfo("%s", qPrintable(figures));
        QVERIFY2(bf16_moved <= 1.4 && fp8_moved <= 1.3, qPrintable(figures));
        QVERIFY2(bf16_saved <= 1.0 && fp8_saved <= 0.75, qPrintable(figures));
    }

    // Delayed scaling on the fused path: a step's FP8 weight copies are written by the optimizer's one launch over
    // the new weights (ParameterCopies::fp8_casts_for), not by a cast per GEMM nor by a cast launch in the next
    // forward; the only per-tensor cast left in a layer is proj's input (the attention output); the skip
    // connections are added in the GEMMs (no aten::add in a layer) and their gradients in the LayerNorm backwards
    // (the engine's only sum left is the tied embedding's).
    void fp8WeightCopiesComeFromTheOptimizersLaunch() {
        RunConfig config = small(Backend::Te, Precision::Fp8);
        config.te_impl = TeImpl::Fused;
        const RunRecord record = trainer_.run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        QVERIFY(record.execution.fallbacks.empty());
        QVERIFY(record.execution.ledger.has_value());
        const Ledger& ledger = *record.execution.ledger;
        const LedgerEntry* optimizer = nullptr;
        std::uint64_t per_tensor_casts = 0;
        for (const LedgerEntry& e : ledger.rows) {
            QVERIFY2(e.op != "tewb::cast_transpose_multi_to_fp8", qPrintable(describe(ledger.rows)));
            if (e.op == "tewb::adamw_step") optimizer = &e;
            if (e.op == "tewb::cast_transpose_to_fp8") {
                QVERIFY2(e.layer >= 0 && e.scope == "proj", qPrintable(describe(ledger.rows)));
                per_tensor_casts += e.calls;
            }
            QVERIFY2(!(e.layer >= 0 && e.op == "aten::add"), qPrintable(describe(ledger.rows)));
        }
        QVERIFY2(optimizer != nullptr, qPrintable(describe(ledger.rows)));
        QCOMPARE(optimizer->layer, -1);
        QCOMPARE(optimizer->scope, std::string("optimizer"));
        QCOMPARE(optimizer->calls, std::uint64_t{1});
        QCOMPARE(optimizer->launches, std::uint64_t{1});
        QCOMPARE(per_tensor_casts, static_cast<std::uint64_t>(config.model.layers));
        std::uint64_t engine_adds = 0;
        std::uint64_t adding_norms = 0;
        for (const LedgerEntry& e : ledger.rows) {
            if (e.layer < 0 && e.scope == "other" && (e.op == "aten::add" || e.op == "aten::add_")) engine_adds += e.calls;
            // The LayerNorm backwards that hand a Linear its FP8 gradient add the skip's gradient too.
            if (e.layer >= 0 && (e.op == "tewb::layer_norm_backward_add" || e.op == "tewb::layer_norm_backward_quantize_dbias")) {
                adding_norms += e.calls;
            }
        }
        QVERIFY2(engine_adds <= 1, qPrintable(describe(ledger.rows)));
        QCOMPARE(adding_norms, static_cast<std::uint64_t>(2 * config.model.layers));
    }

    // The llama te step on its fused path (RMSNorm, SwiGLU, rotary and attention kernels, grouped queries): the launches
    // of each part of a layer, exactly, the same in every layer; the skip connections added in the GEMMs and their
    // gradients in the RMSNorm backwards (two per layer), no fallback. FP8 (delayed scaling) adds proj's input cast; the
    // output gradients come cast from the ops that compute them (qkv's from the rotary's inverse, proj's and fc2's from
    // the RMSNorm backwards, fc1's from SwiGLU's backward).
    void llamaLaunchesPerLayerPart_data() {
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<int>("qkv");
        QTest::addColumn<int>("rotary");
        QTest::addColumn<int>("attention");
        QTest::addColumn<int>("proj");
        QTest::addColumn<int>("mlp");
        // qkv: RMSNorm (FP8: writing the GEMM's FP8 input), 3 GEMMs, the RMSNorm backward with the skip's gradient
        // (1 on LayerNorm's fast kernel since 2026-12-06; was 2); FP8 no more (the output gradient's cast was qkv's own
        // until the rotary's inverse wrote it, 2026-12-07). rotary: forward and inverse (FP8: the inverse writing qkv's
        // FP8 output gradient). attention: the project's forward and backward over the packed heads (grouped queries; the packed
        // gradient written whole, no cat; sdpa's 1 + 3 and the split's cat were 5 before 2026-12-07). proj: 3 GEMMs (FP8:
        // and its input's cast); its output gradient comes cast from the MLP's RMSNorm backward (rms_norm_backward_cast,
        // rms_norm_backward_quantize; a cast of its own before 2026-12-07). mlp: RMSNorm, 6 GEMMs, SwiGLU forward and
        // backward, the RMSNorm backward (1; fc2's gradient comes cast from the next RMSNorm's, counted in its scope).
        QTest::newRow("bf16") << Precision::Bf16 << 5 << 2 << 2 << 3 << 10;
        QTest::newRow("fp8 delayed") << Precision::Fp8 << 5 << 2 << 2 << 4 << 10;
    }
    void llamaLaunchesPerLayerPart() {
        QFETCH(Precision, precision);
        RunConfig config = small(Backend::Te, precision);
        config.model.arch = Arch::Llama;
        config.model.kv_heads = 2;
        config.te_impl = TeImpl::Fused;
        const RunRecord record = trainer_.run(config);
        QVERIFY2(record.status == RunStatus::Finished, record.message.c_str());
        QVERIFY(record.execution.fallbacks.empty());
        QVERIFY(record.execution.ledger.has_value());
        const Ledger& ledger = *record.execution.ledger;
        std::map<std::string, std::uint64_t> parts;
        std::uint64_t norm_adds = 0;
        for (const LedgerEntry& e : ledger.rows) {
            if (e.layer != 0) continue;
            parts[e.scope] += e.launches;
            QVERIFY2(e.op != "aten::add" && e.op != "aten::add_", qPrintable(describe(ledger.rows)));
            // The RMSNorm backwards add the skip's gradient, whether they hand their dx over cast or not.
            if (e.op == "tewb::rms_norm_backward_add" || e.op == "tewb::rms_norm_backward_cast" ||
                e.op == "tewb::rms_norm_backward_quantize") {
                norm_adds += e.calls;
            }
            QVERIFY2(e.op.find("layer_norm") == std::string::npos && e.op.find("gelu") == std::string::npos, e.op.c_str());
        }
        QFETCH(int, qkv);
        QFETCH(int, rotary);
        QFETCH(int, attention);
        QFETCH(int, proj);
        QFETCH(int, mlp);
        const auto n = [](int v) { return static_cast<std::uint64_t>(v); };
        const std::map<std::string, std::uint64_t> want{
            {"qkv", n(qkv)}, {"rotary", n(rotary)}, {"attention", n(attention)}, {"proj", n(proj)}, {"mlp", n(mlp)}};
        QVERIFY2(parts == want, qPrintable(describe(ledger.rows)));
        QCOMPARE(norm_adds, std::uint64_t{2});
        // Every layer launches as many times per module as the first (the first's qkv RMSNorm backward has no Linear
        // before it to hand its gradient to: rms_norm_backward_add where the others cast, the same launches).
        for (int layer = 1; layer < config.model.layers; ++layer) {
            QVERIFY(launches_by_scope(ledger, layer) == launches_by_scope(ledger, 0));
        }
        bool rotary_kernel = false;
        for (const LedgerRow& r : ledger.rows) rotary_kernel = rotary_kernel || (r.scope == "rotary" && r.op.rfind("tewb::", 0) == 0);
        QVERIFY(rotary_kernel);
        // FP8: the inverse rotation writes qkv's FP8 output gradient (rotary_quantize), and qkv casts nothing itself.
        if (precision == Precision::Fp8) {
            bool quantizing_rotary = false, qkv_cast = false;
            for (const LedgerEntry& e : ledger.rows) {
                if (e.layer != 0) continue;
                quantizing_rotary = quantizing_rotary || (e.scope == "rotary" && e.op == "tewb::rotary_quantize");
                qkv_cast = qkv_cast || (e.scope == "qkv" && e.op.find("cast") != std::string::npos);
            }
            QVERIFY2(quantizing_rotary && !qkv_cast, qPrintable(describe(ledger.rows)));
        }
    }

    void twoRunsOfOneConfigurationGiveIdenticalLedgers_data() {
        QTest::addColumn<Backend>("backend");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<TeImpl>("impl");
        QTest::newRow("te") << Backend::Te << Precision::Bf16 << TeImpl::Auto;
        QTest::newRow("te bf16 fused-host") << Backend::Te << Precision::Bf16 << TeImpl::Fused;
        QTest::newRow("te fp8 fused-host") << Backend::Te << Precision::Fp8 << TeImpl::Fused;
        QTest::newRow("torch") << Backend::Torch << Precision::Bf16 << TeImpl::Auto;
    }
    void twoRunsOfOneConfigurationGiveIdenticalLedgers() {
        QFETCH(Backend, backend);
        QFETCH(Precision, precision);
        QFETCH(TeImpl, impl);
        RunConfig config = small(backend, precision);
        config.te_impl = impl;
        const RunRecord a = trainer_.run(config);
        const RunRecord b = trainer_.run(config);
        QVERIFY(a.execution.ledger && b.execution.ledger);
        QVERIFY(!a.execution.ledger->rows.empty());
        QVERIFY(*a.execution.ledger == *b.execution.ledger);
    }

    void withoutWarmUpTheFirstTimedStepIsMeasuredAndSaysSo() {
        const RunRecord record = trainer_.run(small(Backend::Te, Precision::Fp32, 0, 2));
        QVERIFY(record.execution.ledger.has_value());
        QCOMPARE(record.execution.ledger->step, 1);
        QVERIFY(record.execution.ledger->source.find("first timed step") != std::string::npos);
        const std::string table = ledger_layer_table(*record.execution.ledger, 0);
        QVERIFY2(table.find("qkv") != std::string::npos && table.find("launches") != std::string::npos, table.c_str());
    }
};

QTEST_GUILESS_MAIN(TestLedger)
#include "tst_ledger.moc"
