// The llama architecture on the torch backend (core/model/Llama.h): its rotary tables, sizes, parameters,
// grouped-query attention against a hand-written multi-head reference, and training in FP32 and BF16 on the CPU.
#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/triu.h>
#include <torch/optim/adamw.h>

#include "core/common/Error.h"
#include "core/config/MemoryEstimate.h"
#include "core/model/FlopCount.h"
#include "core/model/Llama.h"
#include "core/model/MiniGpt.h"
#include "core/model/Rotary.h"
#include "core/modules/ParameterInit.h"
#include "core/train/Trainer.h"

using namespace tewb;

namespace {

ModelShape small_llama(int kv_heads) {
    ModelShape s{2, 64, 4, 16, 97};
    s.arch = Arch::Llama;
    s.kv_heads = kv_heads;
    return s;
}

at::Tensor param(const CausalLm& model, const std::string& name) {
    // named_parameters() returns a fresh dictionary: keep it while its entry is read.
    const auto named = model.named_parameters();
    const at::Tensor* found = named.find(name);
    if (found == nullptr) throw std::runtime_error("no parameter " + name);
    return *found;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) {
    return x * at::rsqrt(x.pow(2).mean({-1}, true) + kRmsNormEps) * w;
}

// Rotate-half rotary on [b, s, n, d], written out from the definition.
at::Tensor rotate(const at::Tensor& x, const RotaryTables& t) {
    const std::int64_t half = x.size(3) / 2;
    const at::Tensor c = t.cos.narrow(0, 0, x.size(1)).unsqueeze(0).unsqueeze(2);
    const at::Tensor s = t.sin.narrow(0, 0, x.size(1)).unsqueeze(0).unsqueeze(2);
    const at::Tensor a = x.narrow(3, 0, half);
    const at::Tensor b = x.narrow(3, half, half);
    return at::cat({a * c - b * s, a * s + b * c}, 3);
}

// The llama's forward written independently of Llama.cpp: explicit softmax attention, the key/value heads
// repeat-interleaved to one per query head (ordinary multi-head attention).
at::Tensor reference_forward(const CausalLm& model, const ModelShape& shape, const at::Tensor& tokens) {
    const std::int64_t b = tokens.size(0), s = tokens.size(1), h = shape.hidden, n = shape.heads;
    const std::int64_t d = h / n, kv = effective_kv_heads(shape), f = ffn_hidden(shape);
    const RotaryTables tables = rotary_tables(shape.seq, d, shape.rope_base);
    const at::Tensor mask = at::triu(at::ones({s, s}, at::kBool), 1);
    at::Tensor x = at::embedding(param(model, "wte"), tokens);
    for (int i = 0; i < shape.layers; ++i) {
        const std::string p = "blocks_" + std::to_string(i) + "_";
        const at::Tensor qkv = at::linear(rms_norm(x, param(model, p + "attn_norm_weight")), param(model, p + "qkv_weight"))
                                   .view({b, s, n + 2 * kv, d});
        const at::Tensor q = rotate(qkv.narrow(2, 0, n), tables).transpose(1, 2);
        const at::Tensor k = at::repeat_interleave(rotate(qkv.narrow(2, n, kv), tables).transpose(1, 2), n / kv, 1);
        const at::Tensor v = at::repeat_interleave(qkv.narrow(2, n + kv, kv).transpose(1, 2), n / kv, 1);
        const at::Tensor scores =
            at::matmul(q, k.transpose(2, 3)).div(std::sqrt(static_cast<double>(d))).masked_fill(mask, -INFINITY);
        const at::Tensor y = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({b, s, h});
        x = x + at::linear(y, param(model, p + "proj_weight"));
        const at::Tensor g = at::linear(rms_norm(x, param(model, p + "mlp_norm_weight")), param(model, p + "fc1_weight"));
        const at::Tensor gate = g.narrow(-1, 0, f);
        x = x + at::linear(gate * at::sigmoid(gate) * g.narrow(-1, f, f), param(model, p + "fc2_weight"));
    }
    return at::linear(rms_norm(x, param(model, "norm_f_weight")), param(model, "wte"));
}

double relative_error(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

}  // namespace

class TestLlama : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rotaryTablesHoldTheAngles() {
        const RotaryTables t = rotary_tables(7, 8, 10000.0);
        QCOMPARE(t.cos.sizes().vec(), (std::vector<std::int64_t>{7, 4}));
        QCOMPARE(t.sin.scalar_type(), at::kFloat);
        for (std::int64_t i = 0; i < 4; ++i) {
            QCOMPARE(t.cos[0][i].item<float>(), 1.0f);
            QCOMPARE(t.sin[0][i].item<float>(), 0.0f);
        }
        QCOMPARE(t.cos[1][0].item<float>(), static_cast<float>(std::cos(1.0)));
        QCOMPARE(t.sin[6][0].item<float>(), static_cast<float>(std::sin(6.0)));
        const double theta = 5.0 * std::pow(10000.0, -6.0 / 8.0);  // p = 5, i = 3
        QCOMPARE(t.cos[5][3].item<float>(), static_cast<float>(std::cos(theta)));
        QCOMPARE(t.sin[5][3].item<float>(), static_cast<float>(std::sin(theta)));
        const RotaryTables other = rotary_tables(7, 8, 500.0);
        QCOMPARE(other.sin[5][1].item<float>(), static_cast<float>(std::sin(5.0 * std::pow(500.0, -2.0 / 8.0))));
    }

    void rotaryTablesRefuseBadSizes() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rotary_tables(0, 8, 10000.0));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rotary_tables(4, 7, 10000.0));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rotary_tables(4, 8, 1.0));
    }

    void applyRotaryMatchesTheDefinition() {
        const RotaryTables t = rotary_tables(5, 6, 10000.0);
        const at::Tensor x = at::randn({2, 5, 3, 6});
        const at::Tensor out = apply_rotary(x, t.cos, t.sin, 2);
        QVERIFY(at::allclose(out.narrow(2, 0, 2), rotate(x.narrow(2, 0, 2), t), 1e-6, 1e-6));
        QVERIFY(at::equal(out.narrow(2, 2, 1), x.narrow(2, 2, 1)));  // heads past rotated_heads pass through
        QVERIFY(at::equal(out.select(1, 0), x.select(1, 0)));        // position 0 does not turn
        // A rotation keeps each pair's length.
        const at::Tensor pair_in = x.narrow(3, 0, 3).pow(2) + x.narrow(3, 3, 3).pow(2);
        const at::Tensor pair_out = out.narrow(3, 0, 3).pow(2) + out.narrow(3, 3, 3).pow(2);
        QVERIFY(at::allclose(pair_out.narrow(2, 0, 2), pair_in.narrow(2, 0, 2), 1e-5, 1e-6));
    }

    void ffnHiddenSizes() {
        ModelShape s;
        QCOMPARE(ffn_hidden(s), std::int64_t{3072});  // gpt: 4 h
        s.arch = Arch::Llama;
        QCOMPARE(ffn_hidden(s), std::int64_t{2048});  // 8/3 · 768 = 2048
        s.hidden = 128;
        QCOMPARE(ffn_hidden(s), std::int64_t{384});  // ceil(341.3) → 342 → 384
        s.hidden = 64;
        QCOMPARE(ffn_hidden(s), std::int64_t{192});  // 170.7 → 192
        s.ffn = 640;
        QCOMPARE(ffn_hidden(s), std::int64_t{640});
        s.kv_heads = 0;
        QCOMPARE(effective_kv_heads(s), s.heads);
    }

    void parametersInOrderWithTheirShapes() {
        const ModelShape shape = small_llama(2);
        const auto model = make_model(Backend::Torch, shape, 7);
        QVERIFY(dynamic_cast<Llama*>(model.get()) != nullptr);
        const auto named = model->named_parameters();
        const std::int64_t h = 64, f = ffn_hidden(shape), d = 16;
        std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected{{"wte", {97, h}}};
        for (int i = 0; i < 2; ++i) {
            const std::string p = "blocks_" + std::to_string(i) + "_";
            expected.push_back({p + "attn_norm_weight", {h}});
            expected.push_back({p + "qkv_weight", {(4 + 2 * 2) * d, h}});
            expected.push_back({p + "proj_weight", {h, h}});
            expected.push_back({p + "mlp_norm_weight", {h}});
            expected.push_back({p + "fc1_weight", {2 * f, h}});
            expected.push_back({p + "fc2_weight", {h, f}});
        }
        expected.push_back({"norm_f_weight", {h}});
        QCOMPARE(named.size(), expected.size());
        std::int64_t count = 0;
        for (std::size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(named[i].key(), expected[i].first);
            QCOMPARE(named[i].value().sizes().vec(), expected[i].second);
            count += named[i].value().numel();
        }
        QCOMPARE(static_cast<double>(count), model_parameters(shape));
        QCOMPARE(model->buffers().size(), std::size_t{2});  // the rotary tables

        // The draws, in order, from one generator: wte, then block 0's qkv.
        ParameterInit init(7);
        QVERIFY(at::equal(param(*model, "wte"), init.normal({97, h}, kGptInitStd)));
        QVERIFY(at::equal(param(*model, "blocks_0_qkv_weight"), init.normal({8 * d, h}, kGptInitStd)));
        QVERIFY(at::equal(param(*model, "blocks_0_proj_weight"), init.normal({h, h}, gpt_residual_init_std(2))));
        QVERIFY(at::equal(param(*model, "blocks_0_attn_norm_weight"), at::ones({h})));
    }

    void badShapesAreRefused() {
        ModelShape shape = small_llama(3);  // 3 does not divide 4 heads
        QVERIFY_THROWS_EXCEPTION(ConfigError, make_model(Backend::Torch, shape, 1));
        shape = small_llama(2);
        shape.hidden = 68;  // head size 17: odd
        QVERIFY_THROWS_EXCEPTION(ConfigError, make_model(Backend::Torch, shape, 1));
    }

    void groupedQueryAttentionEqualsRepeatedHeads_data() {
        QTest::addColumn<int>("kv_heads");
        QTest::newRow("gqa kv 2 of 4") << 2;
        QTest::newRow("multi-query kv 1") << 1;
        QTest::newRow("multi-head kv 4") << 4;
    }

    void groupedQueryAttentionEqualsRepeatedHeads() {
        QFETCH(int, kv_heads);
        const ModelShape shape = small_llama(kv_heads);
        const auto model = make_model(Backend::Torch, shape, 11);
        const at::Tensor tokens = at::randint(shape.vocab, {3, shape.seq}, at::kLong);
        torch::NoGradGuard no_grad;
        const at::Tensor logits = model->forward(tokens);
        QCOMPARE(logits.sizes().vec(), (std::vector<std::int64_t>{3, shape.seq, shape.vocab}));
        const double err = relative_error(logits, reference_forward(*model, shape, tokens));
        QVERIFY2(err < 1e-5, qPrintable(QString::number(err)));
    }

    void ropeBaseChangesTheModel() {
        ModelShape shape = small_llama(2);
        const at::Tensor tokens = at::randint(shape.vocab, {2, shape.seq}, at::kLong);
        torch::NoGradGuard no_grad;
        const at::Tensor a = make_model(Backend::Torch, shape, 3)->forward(tokens);
        shape.rope_base = 500.0;
        const auto model = make_model(Backend::Torch, shape, 3);
        const at::Tensor b = model->forward(tokens);
        QVERIFY(!at::allclose(a, b, 1e-4, 1e-6));
        QVERIFY(relative_error(b, reference_forward(*model, shape, tokens)) < 1e-5);
    }

    void lossDecreasesInFp32() {
        const ModelShape shape = small_llama(2);
        const auto model = make_model(Backend::Torch, shape, 5);
        torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3));
        // A learnable sequence: each row counts up from a random start.
        const at::Tensor start = at::randint(shape.vocab, {8, 1}, at::kLong);
        const at::Tensor batch = (start + at::arange(shape.seq + 1, at::kLong)).remainder(shape.vocab);
        const at::Tensor inputs = batch.narrow(1, 0, shape.seq);
        const at::Tensor targets = batch.narrow(1, 1, shape.seq);
        double first = 0, last = 0;
        for (int step = 0; step < 30; ++step) {
            optimizer.zero_grad();
            const at::Tensor loss = model->loss(inputs, targets);
            loss.backward();
            optimizer.step();
            (step == 0 ? first : last) = loss.item<double>();
        }
        QVERIFY2(std::abs(first - std::log(97.0)) < 0.5, qPrintable(QString::number(first)));
        QVERIFY2(first - last > 1.5, qPrintable(QStringLiteral("first %1, last %2").arg(first).arg(last)));
        for (const at::Tensor& p : model->parameters()) QVERIFY(p.grad().defined());
    }

    void trainsUnderBf16Autocast() {
        RunConfig config = make_preset(Preset::QuickCpuLlama);
        config.precision = Precision::Bf16;
        config.warmup = 2;
        config.iters = 28;
        const RunRecord record = Trainer(detect_device()).run(config);
        QCOMPARE(record.status, RunStatus::Finished);
        QCOMPARE(record.config.model.arch, Arch::Llama);
        QCOMPARE(record.steps.size(), std::size_t{30});
        const double first = record.steps.front().loss;
        const double last = record.steps.back().loss;
        QVERIFY2(std::isfinite(last) && first - last > 0.3, qPrintable(QStringLiteral("first %1, last %2").arg(first).arg(last)));
    }

    void flopsCountGqaAndSwiglu() {
        ModelShape gpt;
        const double h = 768, s = 96, b = 32;
        QCOMPARE(training_flops_per_step(gpt, 32), 3.0 * (12 * (24 * h * h + 4 * s * h) + 2 * h * 4096) * b * s);
        ModelShape llama = gpt;
        llama.arch = Arch::Llama;
        llama.kv_heads = 4;  // llama-seed: q 768, k and v 256 each; SwiGLU 2048
        const double forward = 12 * (2 * h * (768 + 512) + 2 * h * h + 6 * h * 2048 + 4 * s * h) + 2 * h * 4096;
        QCOMPARE(training_flops_per_step(llama, 32), 3.0 * forward * b * s);
        llama.kv_heads = 12;
        QVERIFY(training_flops_per_step(llama, 32) > 3.0 * forward * b * s);
    }

    void parameterCountsAndMemory() {
        ModelShape gpt;
        const double h = 768;
        QCOMPARE(model_parameters(gpt), 12 * (12 * h * h + 13 * h) + 4096 * h + 96 * h + 2 * h);
        ModelShape llama = gpt;
        llama.arch = Arch::Llama;
        llama.kv_heads = 4;
        QCOMPARE(model_parameters(llama), 12 * (h * 1280 + h * h + 3 * h * 2048 + 2 * h) + 4096 * h + h);

        RunConfig config = make_preset(Preset::LlamaSeed);
        config.device = DeviceKind::Cuda;
        config.precision = Precision::Bf16;
        const MemoryEstimate gqa = estimate_training_memory(config);
        QCOMPARE(gqa.parameters, static_cast<std::uint64_t>(model_parameters(config.model)));
        config.model.kv_heads = 12;
        const MemoryEstimate mha = estimate_training_memory(config);
        QVERIFY(mha.parameters > gqa.parameters);
        QVERIFY(mha.activation_bytes > gqa.activation_bytes);
        config.device = DeviceKind::Cpu;
        QVERIFY(estimate_training_memory(config).activation_bytes > 0);
    }
};

QTEST_GUILESS_MAIN(TestLlama)
#include "tst_llama.moc"
