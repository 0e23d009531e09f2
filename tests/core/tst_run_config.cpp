#include <QtTest>

#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/common/Error.h"
#include "core/config/Availability.h"
#include "core/config/ComparePlan.h"
#include "core/config/CudaGraphPlan.h"
#include "core/config/SweepPlan.h"
#include "core/config/RunConfig.h"
#include "core/config/RunFacts.h"
#include "core/config/RunNames.h"
#include "core/common/TextCheck.h"
#include "core/config/MemoryEstimate.h"
#include "core/results/RecordJson.h"
#include "core/train/ResolvedRun.h"

using namespace tewb;

namespace {

struct InvalidCase {
    const char* tag;
    std::function<void(RunConfig&)> change;
    const char* field;
    const char* message_part;
};

// A GPU machine whose driver finds no usable GPU: refusals quote the CUDA error.
DeviceInfo no_gpu() {
    DeviceInfo d;
    d.driver_version = "580.65.06";
    d.gpu_error = "no CUDA-capable device is detected (cudaErrorNoDevice)";
    return d;
}

DeviceInfo h200() {
    DeviceInfo d;
    d.gpu_name = "NVIDIA H200";
    d.compute_capability = ComputeCapability{9, 0};
    return d;
}

DeviceInfo a100() {
    DeviceInfo d;
    d.gpu_name = "NVIDIA A100-SXM4-80GB";
    d.compute_capability = ComputeCapability{8, 0};
    return d;
}

}  // namespace

class TestRunConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // A re-run of the same settings gets a number, the smallest free; a numbered name is numbered from its base;
    // a name at the length limit is shortened at a character boundary to make room for the number.
    void repeatedNamesGetANumber() {
        QCOMPARE(distinct_name("te bf16 cpu", {}), std::string("te bf16 cpu"));
        QCOMPARE(distinct_name("te bf16 cpu", {"torch bf16 cpu"}), std::string("te bf16 cpu"));
        QCOMPARE(distinct_name("te bf16 cpu", {"te bf16 cpu"}), std::string("te bf16 cpu #2"));
        QCOMPARE(distinct_name("te bf16 cpu", {"te bf16 cpu", "te bf16 cpu #2", "te bf16 cpu #4"}), std::string("te bf16 cpu #3"));
        QCOMPARE(distinct_name("te bf16 cpu #2", {"te bf16 cpu", "te bf16 cpu #2"}), std::string("te bf16 cpu #3"));
        QCOMPARE(distinct_name("run #x", {"run #x"}), std::string("run #x #2"));  // not a number: kept
        QCOMPARE(distinct_name("run #", {"run #"}), std::string("run # #2"));
        // 198 bytes of "é" (2 bytes each) and one more "a": the number needs 3 bytes, so the base loses 2 and stays valid.
        std::string longest;
        for (int i = 0; i < 99; ++i) longest += "\xc3\xa9";
        longest += "ab";
        QCOMPARE(longest.size(), kMaxRunNameLength);
        const std::string numbered = distinct_name(longest, {longest});
        QVERIFY(numbered.size() <= kMaxRunNameLength);
        QVERIFY(numbered.ends_with(" #2"));
        QVERIFY2(!name_problem(numbered), numbered.c_str());
        std::string multibyte_end(197, 'a');
        multibyte_end += "\xc3\xa9";  // 199 bytes, ending in a two-byte character the cut would split
        const std::string cut = distinct_name(multibyte_end, {multibyte_end});
        QVERIFY2(!name_problem(cut), cut.c_str());
        QCOMPARE(cut, std::string(197, 'a') + " #2");
    }

    void defaultsAreTheSeedBenchmark() {
        const RunConfig c;
        QCOMPARE(c.model, (ModelShape{12, 768, 12, 96, 4096}));
        QCOMPARE(c.batch, 32);
        QCOMPARE(c.warmup, 10);
        QCOMPARE(c.iters, 30);
        QVERIFY(find_problems(c).empty());
        QCOMPARE(make_preset(Preset::Seed), c);
    }

    void quickCpuPreset() {
        const RunConfig c = make_preset(Preset::QuickCpu);
        QCOMPARE(c.model, (ModelShape{2, 128, 4, 32, 256}));
        QCOMPARE(c.batch, 8);
        QCOMPARE(c.device, DeviceKind::Cpu);
        QVERIFY(find_problems(c).empty());
    }

    // llama-seed is the seed's sizes as a llama with a third of the heads as key/value heads; quick-cpu-llama the quick
    // sizes with half. Every preset has its own name, title and summary.
    void llamaPresets() {
        const RunConfig seed = make_preset(Preset::LlamaSeed);
        ModelShape shape{12, 768, 12, 96, 4096};
        shape.arch = Arch::Llama;
        shape.kv_heads = 4;
        QCOMPARE(seed.model, shape);
        QCOMPARE(seed.batch, 32);
        QCOMPARE(seed.device, DeviceKind::Auto);
        QCOMPARE(ffn_hidden(seed.model), std::int64_t{2048});  // 8/3 x 768 = 2048, already a multiple of 64
        QVERIFY(find_problems(seed).empty());

        const RunConfig quick = make_preset(Preset::QuickCpuLlama);
        RunConfig expected = make_preset(Preset::QuickCpu);
        expected.model.arch = Arch::Llama;
        expected.model.kv_heads = 2;
        QCOMPARE(quick, expected);
        QCOMPARE(ffn_hidden(quick.model), std::int64_t{384});  // ceil(8/3 x 128) = 342, rounded up to 384
        QVERIFY(find_problems(quick).empty());

        QCOMPARE(all_presets().size(), std::size_t{4});
        std::set<std::string> names, titles;
        for (const Preset preset : all_presets()) {
            QCOMPARE(parse_name<Preset>("--preset", to_string(preset)), preset);
            QVERIFY(names.insert(std::string(to_string(preset))).second);
            QVERIFY(titles.insert(std::string(preset_title(preset))).second);
        }
        QCOMPARE(parse_name<Preset>("--preset", "llama-seed"), Preset::LlamaSeed);
        QCOMPARE(parse_name<Preset>("--preset", "quick-cpu-llama"), Preset::QuickCpuLlama);
        QCOMPARE(preset_summary(Preset::LlamaSeed), std::string("12 layers, hidden 768, seq 96, batch 32, 10 + 30 steps, llama, 4 KV heads"));
        QCOMPARE(preset_summary(Preset::QuickCpuLlama),
                 std::string("2 layers, hidden 128, seq 32, batch 8, 5 + 55 steps, llama, 2 KV heads, CPU"));
        QCOMPARE(preset_summary(Preset::Seed), std::string("12 layers, hidden 768, seq 96, batch 32, 10 + 30 steps"));
    }

    // The record's config holds a "model" object always (llama's own sizes for a llama only) and a "data" object for a
    // run on a token file; a record from before either reads as a gpt on synthetic tokens.
    void modelAndDataSectionsRoundTrip() {
        const RunConfig gpt = make_preset(Preset::QuickCpu);
        const nlohmann::json plain = nlohmann::json::parse(config_to_json_text(gpt));
        QVERIFY2(plain["model"] == (nlohmann::json{{"arch", "gpt"}}), plain.dump().c_str());
        QVERIFY(!plain.contains("data"));
        QVERIFY(config_from_json_text(plain.dump(), "gpt") == gpt);

        RunConfig llama = make_preset(Preset::QuickCpuLlama);
        llama.model.ffn = 512;
        llama.model.rope_base = 500000;
        llama.data = DataSettings{"/data/tiny shakespeare.txt", TokenFormat::Bytes, 0.1, 7};
        const nlohmann::json written = nlohmann::json::parse(config_to_json_text(llama));
        QVERIFY2(written["model"] == (nlohmann::json{{"arch", "llama"}, {"kv_heads", 2}, {"ffn", 512}, {"rope_base", 500000.0}}),
                 written.dump().c_str());
        QVERIFY2(written["data"] == (nlohmann::json{{"path", "/data/tiny shakespeare.txt"}, {"format", "bytes"},
                                                    {"val_fraction", 0.1}, {"eval_every", 7}}),
                 written.dump().c_str());
        QVERIFY(config_from_json_text(written.dump(), "llama") == llama);

        nlohmann::json old = plain;  // a record from before the architecture could be chosen
        old.erase("model");
        QVERIFY(config_from_json_text(old.dump(), "old") == gpt);
        nlohmann::json unknown = written;
        unknown["model"]["arch"] = "mamba";
        try {
            config_from_json_text(unknown.dump(), "record.json");
            QFAIL("an unknown architecture was read");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("'mamba': unknown value; allowed: gpt|llama") != std::string::npos, e.what());
        }
    }

    // Compare and sweep take the architecture and the data like any setting, and say llama in their runs' names.
    void compareAndSweepCarryTheArchitecture() {
        RunConfig base = make_preset(Preset::QuickCpuLlama);
        base.data.path = "corpus.txt";
        for (const PlannedRun& row : plan_comparison(base, no_gpu())) {
            QCOMPARE(row.config.model, base.model);
            QCOMPARE(row.config.data, base.data);
            QVERIFY2(row.config.name.rfind("llama ", 0) == 0, row.config.name.c_str());
        }
        QCOMPARE(resolve(base, no_gpu()).name, std::string("llama torch fp32 cpu"));
        QCOMPARE(resolve(make_preset(Preset::QuickCpu), no_gpu()).name, std::string("torch fp32 cpu"));

        SweepSpec sweep;
        sweep.base = base;
        sweep.hidden = {128, 256};  // heads 2 and 4: kv heads 2 divides both
        for (const SweepRun& run : plan_sweep(sweep, no_gpu())) {
            QCOMPARE(run.config.model.arch, Arch::Llama);
            QCOMPARE(run.config.model.kv_heads, 2);
            QCOMPARE(run.config.data, base.data);
            QVERIFY2(run.config.name.rfind("sweep llama ", 0) == 0, run.config.name.c_str());
        }
        sweep.hidden = {128, 192};  // heads 3 at 192: 2 kv heads do not divide it
        try {
            plan_sweep(sweep, no_gpu());
            QFAIL("a swept width whose heads --kv-heads does not divide was planned");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("sweep size hidden 192, batch 8, seq 32 (heads 3): --kv-heads 2: does not divide "
                                                "--heads 3") == 0,
                     e.what());
        }
    }

    void invalidConfigurationsAreRejected() {
        const std::vector<InvalidCase> cases{
            {"zero layers", [](RunConfig& c) { c.model.layers = 0; }, "layers", "--layers 0: out of range"},
            {"negative layers", [](RunConfig& c) { c.model.layers = -3; }, "layers", "--layers -3"},
            {"too many layers", [](RunConfig& c) { c.model.layers = 100000; }, "layers", "allowed: 1 to 256"},
            {"zero hidden", [](RunConfig& c) { c.model.hidden = 0; }, "hidden", "--hidden 0"},
            {"negative hidden", [](RunConfig& c) { c.model.hidden = -768; }, "hidden", "--hidden -768"},
            {"hidden not divisible", [](RunConfig& c) { c.model.hidden = 770; }, "hidden",
             "--hidden 770: not divisible by --heads 12"},
            {"zero heads", [](RunConfig& c) { c.model.heads = 0; }, "heads", "--heads 0"},
            {"heads above hidden",
             [](RunConfig& c) {
                 c.model.hidden = 8;
                 c.model.heads = 16;
             },
             "hidden", "not divisible by --heads 16"},
            {"zero seq", [](RunConfig& c) { c.model.seq = 0; }, "seq", "--seq 0"},
            {"huge seq", [](RunConfig& c) { c.model.seq = 1 << 20; }, "seq", "allowed: 1 to 65536"},
            {"vocab one", [](RunConfig& c) { c.model.vocab = 1; }, "vocab", "--vocab 1"},
            {"negative vocab", [](RunConfig& c) { c.model.vocab = -5; }, "vocab", "allowed: 2 to"},
            {"zero batch", [](RunConfig& c) { c.batch = 0; }, "batch", "--batch 0"},
            {"negative warmup", [](RunConfig& c) { c.warmup = -1; }, "warmup", "--warmup -1"},
            {"zero iters", [](RunConfig& c) { c.iters = 0; }, "iters", "--iters 0"},
            {"lr zero", [](RunConfig& c) { c.lr = 0.0; }, "lr", "--lr 0"},
            {"lr negative", [](RunConfig& c) { c.lr = -1e-3; }, "lr", "greater than 0"},
            {"lr nan", [](RunConfig& c) { c.lr = std::nan(""); }, "lr", "finite"},
            {"lr inf", [](RunConfig& c) { c.lr = HUGE_VAL; }, "lr", "--lr inf"},
            {"lr too large", [](RunConfig& c) { c.lr = 50.0; }, "lr", "at most 10"},
            {"seed beyond int64", [](RunConfig& c) { c.seed = ~0ULL; }, "seed", "--seed"},
            {"fp8 with torch", [](RunConfig& c) { c.precision = Precision::Fp8; }, "precision", "FP8 needs --backend te"},
            {"history 0", [](RunConfig& c) { c.fp8.amax_history_len = 0; }, "amax-history-len", "--amax-history-len 0: out of range; allowed: 1 to 65536"},
            {"history too long", [](RunConfig& c) { c.fp8.amax_history_len = 65537; }, "amax-history-len", "--amax-history-len 65537"},
            {"margin negative", [](RunConfig& c) { c.fp8.margin = -1; }, "margin", "--margin -1: negative"},
            {"margin too large", [](RunConfig& c) { c.fp8.margin = 65; }, "margin", "allowed: 0 to 64"},
            {"margin with current", [](RunConfig& c) { c.fp8.scaling = ScalingKind::Current; c.fp8.margin = 2; }, "margin", "current scaling has no margin"},
            {"inspect without fp8", [](RunConfig& c) { c.backend = Backend::Te; c.precision = Precision::Bf16; c.inspect_fp8 = true; }, "inspect-fp8", "needs --precision fp8"},
            {"name too long", [](RunConfig& c) { c.name = std::string(500, 'x'); }, "name", "at most 200"},
            {"name control char", [](RunConfig& c) { c.name = "a\nb"; }, "name", "control character"},
            // llama's own settings on a gpt, and llama's sizes.
            {"kv heads on gpt", [](RunConfig& c) { c.model.kv_heads = 4; }, "kv-heads",
             "--kv-heads 4: grouped-query attention is llama's (a gpt's attention is multi-head); allowed with --arch gpt: leave it out"},
            {"ffn on gpt", [](RunConfig& c) { c.model.ffn = 2048; }, "ffn", "--ffn 2048: the SwiGLU MLP's size is llama's"},
            {"rope base on gpt", [](RunConfig& c) { c.model.rope_base = 500000; }, "rope-base",
             "--rope-base 500000: rotary position embeddings are llama's"},
            {"kv heads not dividing", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.kv_heads = 5; }, "kv-heads",
             "--kv-heads 5: does not divide --heads 12 (each key/value head serves a whole group of query heads); allowed: 1|2|3|4|6|12"},
            {"kv heads above heads", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.kv_heads = 24; }, "kv-heads",
             "--kv-heads 24: does not divide --heads 12"},
            {"kv heads negative", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.kv_heads = -1; }, "kv-heads",
             "--kv-heads -1: out of range; allowed: 0 to 1024"},
            {"ffn not multiple of 64", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.ffn = 2000; }, "ffn",
             "--ffn 2000: not a positive multiple of 64; allowed: a multiple of 64 up to 1048576, or 0 for 8/3 x --hidden"},
            {"ffn negative", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.ffn = -64; }, "ffn",
             "--ffn -64: not a positive multiple of 64"},
            {"odd head size", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.hidden = 36; c.model.heads = 12; }, "heads",
             "--hidden 36 --heads 12: head size 3 is odd and rotary embeddings rotate pairs"},
            {"rope base zero", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.rope_base = 0; }, "rope-base",
             "--rope-base 0: out of range; allowed: a number greater than 1 (default 10000)"},
            {"rope base one", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.rope_base = 1; }, "rope-base",
             "--rope-base 1: out of range; allowed: a number greater than 1 (default 10000)"},
            {"rope base nan", [](RunConfig& c) { c.model.arch = Arch::Llama; c.model.rope_base = std::nan(""); }, "rope-base",
             "not a finite number"},
            // A token file's settings without one, and their ranges with one.
            {"format without data", [](RunConfig& c) { c.data.format = TokenFormat::Uint16; }, "data-format",
             "--data-format uint16: a setting of the token file and this run has none (it trains on synthetic tokens); allowed: --data PATH"},
            {"val fraction without data", [](RunConfig& c) { c.data.val_fraction = 0.1; }, "val-fraction", "--val-fraction 0.1: a setting of the token file"},
            {"eval every without data", [](RunConfig& c) { c.data.eval_every = 5; }, "eval-every", "--eval-every 5: a setting of the token file"},
            {"val fraction zero", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.val_fraction = 0; }, "val-fraction",
             "--val-fraction 0: out of range; allowed: greater than 0 and at most 0.5"},
            {"val fraction above half", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.val_fraction = 0.6; }, "val-fraction",
             "--val-fraction 0.6: out of range"},
            {"val fraction inf", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.val_fraction = HUGE_VAL; }, "val-fraction",
             "not a finite number"},
            {"eval every negative", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.eval_every = -1; }, "eval-every",
             "--eval-every -1: out of range; allowed: 0 to 1000000"},
            {"eval every beyond the steps", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.eval_every = 41; }, "eval-every",
             "--eval-every 41: beyond the run's 40 steps (--warmup plus --iters); allowed: 1 to 40, or 0 for five evaluations"},
            {"bytes below 256", [](RunConfig& c) { c.data.path = "corpus.txt"; c.data.format = TokenFormat::Bytes; c.model.vocab = 200; },
             "vocab", "--vocab 200: below 256 and --data-format bytes makes every byte a token"},
            {"data path not utf-8", [](RunConfig& c) { c.data.path = "corpus\xff.txt"; }, "data", "allowed: a UTF-8 path"},
        };
        QVERIFY(cases.size() >= 20);
        for (const InvalidCase& test : cases) {
            RunConfig config;
            test.change(config);
            const std::vector<ConfigProblem> problems = find_problems(config);
            QVERIFY2(!problems.empty(), test.tag);
            QCOMPARE(problems.front().field, std::string(test.field));
            QVERIFY2(
                problems.front().message.find(test.message_part) != std::string::npos,
                qPrintable(
                    QStringLiteral("%1: '%2' lacks '%3'").arg(test.tag, problems.front().message.c_str(), test.message_part)));
            QVERIFY(problems.front().message.find('\n') == std::string::npos);
            QVERIFY_THROWS_EXCEPTION(ConfigError, validate(config));
        }
    }

    void numbersAreParsedStrictly() {
        QCOMPARE(parse_int("--layers", "12"), 12);
        QCOMPARE(parse_int("--layers", "-4"), -4);
        QCOMPARE(parse_uint64("--seed", "18"), std::uint64_t{18});
        QCOMPARE(parse_double("--lr", "3e-4"), 3e-4);
        const std::vector<std::pair<std::string, std::string>> bad_ints{
            {"abc", "not a whole number"}, {"12x", "not a whole number"},         {"", "not a whole number"},
            {"1.5", "not a whole number"}, {"99999999999999999999", "out of range; allowed: 1 to 32768"}, {" 12", "not a whole number"}};
        for (const auto& [text, why] : bad_ints) {
            try {
                parse_int("--hidden", text);
                QFAIL(qPrintable("accepted '" + QString::fromStdString(text) + "'"));
            } catch (const ConfigError& e) {
                const std::string message = e.what();
                QVERIFY2(message.find("--hidden '" + text + "'") == 0, e.what());
                QVERIFY2(message.find(why) != std::string::npos, e.what());
            }
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_double("--lr", "fast"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_double("--lr", "1e999"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_uint64("--seed", "-1"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_uint64("--seed", "99999999999999999999999"));
    }

    void enumsNameTheAllowedValues() {
        QCOMPARE(parse_name<Backend>("--backend", "torch"), Backend::Torch);
        QCOMPARE(parse_name<Precision>("--precision", "bf16"), Precision::Bf16);
        QCOMPARE(parse_name<DeviceKind>("--device", "cuda"), DeviceKind::Cuda);
        QCOMPARE(parse_name<Preset>("--preset", "quick-cpu"), Preset::QuickCpu);
        try {
            parse_name<Precision>("--precision", "fp16");
            QFAIL("fp16 accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(std::string(e.what()), std::string("--precision 'fp16': unknown value; allowed: auto|fp32|bf16|fp8"));
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<Backend>("--backend", "jax"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<DeviceKind>("--device", "tpu"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<Preset>("--preset", "huge"));
    }

    void resolveChoosesDeviceAndPrecision() {
        const RunConfig cpu = resolve(RunConfig{}, no_gpu());
        QCOMPARE(cpu.device, DeviceKind::Cpu);
        QCOMPARE(cpu.precision, Precision::Fp32);
        QCOMPARE(cpu.name, std::string("torch fp32 cpu"));
        const RunConfig gpu = resolve(RunConfig{}, h200());
        QCOMPARE(gpu.device, DeviceKind::Cuda);
        QCOMPARE(gpu.precision, Precision::Bf16);
    }

    // resolve_run decides a run once: resolve()'s configuration, its facts, the GPU it trains on (a rank's
    // LOCAL_RANK), the CUDA-graph decision; the queue, the worker and the trainer read it and decide nothing again.
    void aRunIsResolvedOnce() {
        DeviceInfo hopper = h200();
        hopper.fused_cuda_kernels = true;
        hopper.block_fp8_gemms = true;
        hopper.gpu_count = 2;
        RunConfig te;
        te.backend = Backend::Te;
        te.precision = Precision::Fp8;
        te.fp8.scaling = ScalingKind::Block;
        const ResolvedRun one = resolve_run(te, hopper);
        const RunConfig resolved = resolve(te, hopper);
        QCOMPARE(one.config.name, resolved.name);
        QCOMPARE(one.config.device, DeviceKind::Cuda);
        QCOMPARE(one.facts.te_ops, run_facts(resolved, hopper).te_ops);
        QVERIFY(one.cuda());
        QCOMPARE(one.device_index, 0);
        QCOMPARE(one.device_name(), std::string("cuda:0"));
        QCOMPARE(one.ranks(), 1);
        QVERIFY(one.facts.block_gemms_native);
        QVERIFY(!one.facts.fp8_emulated);  // Hopper runs block-scaled GEMMs natively
        QVERIFY(!one.graph.reason.empty());

        RunConfig job = te;
        job.dist.nproc = 2;
        const ResolvedRun rank1 = resolve_run(job, hopper, RunPlace::rank(1));
        QCOMPARE(rank1.device_index, 1);
        QCOMPARE(rank1.device_name(), std::string("cuda:1"));  // the record names the GPU the rank trained on
        QCOMPARE(rank1.ranks(), 2);

        hopper.block_fp8_gemms = false;  // detection's probe failed: block GEMMs emulated, and said so
        QVERIFY(!resolve_run(te, hopper).facts.block_gemms_native);
        QVERIFY(resolve_run(te, hopper).facts.fp8_emulated);

        RunConfig cpu_job = job;
        cpu_job.device = DeviceKind::Cpu;
        const ResolvedRun cpu = resolve_run(cpu_job, hopper, RunPlace::rank(1));
        QCOMPARE(cpu.device_index, 0);  // never a GPU's index on the CPU
        QCOMPARE(cpu.device_name(), std::string("cpu"));
        QVERIFY(!cpu.graph.use);
        QVERIFY2(cpu.graph.reason.find("CPU") != std::string::npos, cpu.graph.reason.c_str());
        QVERIFY(!cpu.facts.block_gemms_native);

        RunConfig bad = te;
        bad.batch = 0;
        QVERIFY_THROWS_EXCEPTION(ConfigError, resolve_run(bad, hopper));  // resolve()'s refusals, unchanged
    }

    // One function decides what follows from a run's settings on a machine; everyone reads its answer.
    void runFactsAreDecidedOnce() {
        DeviceInfo hopper = h200();
        hopper.fused_cuda_kernels = true;
        hopper.block_fp8_gemms = true;
        DeviceInfo ampere = a100();
        ampere.fused_cuda_kernels = true;

        RunConfig torch;  // Auto device and precision
        RunFacts f = run_facts(torch, no_gpu());
        QCOMPARE(f.device, DeviceKind::Cpu);
        QCOMPARE(f.precision, Precision::Fp32);
        QCOMPARE(f.baseline, Precision::Fp32);
        QCOMPARE(f.compute, ComputeDtype::Float32);
        QVERIFY(!f.te_ops);
        QVERIFY(!f.fp8_emulated);
        f = run_facts(torch, hopper);
        QCOMPARE(f.device, DeviceKind::Cuda);
        QCOMPARE(f.precision, Precision::Bf16);
        QCOMPARE(f.baseline, Precision::Bf16);
        QCOMPARE(f.compute, ComputeDtype::BFloat16);
        torch.device = DeviceKind::Cpu;  // asked for the CPU on a GPU machine
        QCOMPARE(run_facts(torch, hopper).device, DeviceKind::Cpu);
        QCOMPARE(run_facts(torch, hopper).baseline, Precision::Fp32);
        QCOMPARE(resolve(torch, hopper).precision, run_facts(torch, hopper).precision);  // resolve() agrees

        RunConfig te;
        te.backend = Backend::Te;
        te.precision = Precision::Fp8;
        struct Case {
            const char* what;
            DeviceInfo device;
            DeviceKind kind;
            TeImpl impl;
            ScalingKind scaling;
            OpsKind ops;
            bool emulated;
        };
        DeviceInfo unbuilt = h200();  // a GPU, but a build without the CUDA kernels
        const std::vector<Case> cases = {
            {"CPU, auto", no_gpu(), DeviceKind::Auto, TeImpl::Auto, ScalingKind::Delayed, OpsKind::Reference, true},
            {"CPU, fused", no_gpu(), DeviceKind::Auto, TeImpl::Fused, ScalingKind::Delayed, OpsKind::FusedHost, true},
            {"H200, auto", hopper, DeviceKind::Auto, TeImpl::Auto, ScalingKind::Delayed, OpsKind::FusedCuda, false},
            {"H200, block", hopper, DeviceKind::Auto, TeImpl::Auto, ScalingKind::Block, OpsKind::FusedCuda, false},
            {"H200, reference", hopper, DeviceKind::Auto, TeImpl::Reference, ScalingKind::Delayed, OpsKind::Reference, true},
            {"H200 asked for the CPU", hopper, DeviceKind::Cpu, TeImpl::Auto, ScalingKind::Delayed, OpsKind::Reference, true},
            {"A100, block (no native block GEMM)", ampere, DeviceKind::Auto, TeImpl::Auto, ScalingKind::Block,
             OpsKind::FusedCuda, true},
            {"A100, current", ampere, DeviceKind::Auto, TeImpl::Auto, ScalingKind::Current, OpsKind::FusedCuda, false},
            {"GPU, no CUDA kernels built", unbuilt, DeviceKind::Auto, TeImpl::Auto, ScalingKind::Delayed,
             OpsKind::Reference, true},
        };
        for (const Case& c : cases) {
            te.device = c.kind;
            te.te_impl = c.impl;
            te.fp8.scaling = c.scaling;
            const RunFacts facts = run_facts(te, c.device);
            QVERIFY2(facts.te_ops == c.ops, c.what);
            QVERIFY2(facts.fp8_emulated == c.emulated, c.what);
            QVERIFY2(facts.compute == ComputeDtype::BFloat16, c.what);  // FP8's non-GEMM math is BF16 everywhere
        }
        te.precision = Precision::Bf16;
        te.device = DeviceKind::Auto;
        te.te_impl = TeImpl::Auto;
        QVERIFY(!run_facts(te, no_gpu()).fp8_emulated);  // not an FP8 run: nothing is emulated
        te.te_impl = TeImpl::Fused;
        QVERIFY_THROWS_EXCEPTION(ConfigError, run_facts(te, unbuilt));
    }

    void cudaWithoutGpuIsRefusedWithTheReason() {
        RunConfig c;
        c.device = DeviceKind::Cuda;
        try {
            resolve(c, no_gpu());
            QFAIL("resolved cuda without a GPU");
        } catch (const ConfigError& e) {
            QVERIFY(std::string(e.what()).find("cudaErrorNoDevice") != std::string::npos);
            QVERIFY(std::string(e.what()).find("--device cuda") == 0);
        }
    }

    void comparisonPlanListsWhatCannotRun() {
        const std::vector<PlannedRun> cpu_plan = plan_comparison(make_preset(Preset::QuickCpu), no_gpu());
        QCOMPARE(cpu_plan.size(), std::size_t{5});
        QCOMPARE(cpu_plan[0].config.precision, Precision::Fp32);
        QCOMPARE(cpu_plan[0].config.name, std::string("torch fp32 cpu (baseline)"));
        QCOMPARE(cpu_plan[2].config.name, std::string("te fp32 cpu"));
        QCOMPARE(cpu_plan[3].config.name, std::string("te bf16 cpu"));
        QCOMPARE(cpu_plan[4].config.name, std::string("te fp8 cpu"));
        for (const PlannedRun& row : cpu_plan) {
            QVERIFY2(!row.skip_reason, row.skip_reason ? row.skip_reason->c_str() : "");
        }

        RunConfig base = make_preset(Preset::Seed);
        base.fp8.algo = AmaxAlgo::MostRecent;
        const std::vector<PlannedRun> gpu_plan = plan_comparison(base, h200());
        std::vector<std::string> names;
        for (const PlannedRun& row : gpu_plan) names.push_back(row.config.name);
        const std::vector<std::string> expected{"torch bf16 (baseline)", "torch bf16 graph", "torch fp32", "te bf16",
                                                "te bf16 graph",         "te fp8",           "te fp8 graph"};
        QCOMPARE(names, expected);
        for (const PlannedRun& row : gpu_plan) {
            QCOMPARE(row.config.cuda_graph, row.config.name.find(" graph") != std::string::npos);  // eager rows say so
            QCOMPARE(row.config.device, DeviceKind::Cuda);
        }
        QCOMPARE(gpu_plan[0].config.precision, Precision::Bf16);
        QCOMPARE(gpu_plan[3].config.backend, Backend::Te);
        QCOMPARE(gpu_plan[6].config.precision, Precision::Fp8);
        QCOMPARE(gpu_plan[6].config.fp8.algo, AmaxAlgo::MostRecent);
        RunConfig eager_only = base;
        eager_only.cuda_graph = false;  // --cuda-graph off: no graph rows
        QCOMPARE(plan_comparison(eager_only, h200()).size(), std::size_t{4});
        for (const PlannedRun& row : cpu_plan) QVERIFY(!row.config.cuda_graph);  // CPU: graph rows never appear

        base.inspect_fp8 = true;  // applies to the FP8 row only
        const std::vector<PlannedRun> inspected = plan_comparison(base, h200());
        for (const PlannedRun& row : inspected) {
            QCOMPARE(row.config.inspect_fp8, row.config.precision == Precision::Fp8);
            QVERIFY(!row.skip_reason);
        }
        base.fp8.amax_history_len = 0;
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_comparison(base, h200()));
    }

    // --te-impl: a setting of the te backend, refused on torch runs with the reason; Fused refused where the fused
    // kernels cannot run (a GPU below 8.0); compare and sweep give it to their te rows and auto to the torch rows.
    void teImplAppliesToTeRunsOnly() {
        QCOMPARE(parse_name<TeImpl>("--te-impl", "fused"), TeImpl::Fused);
        try {
            parse_name<TeImpl>("--te-impl", "fast");
            QFAIL("accepted --te-impl fast");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("allowed: auto|fused|reference") != std::string::npos, e.what());
        }

        RunConfig torch = make_preset(Preset::QuickCpu);
        torch.te_impl = TeImpl::Fused;
        const std::vector<ConfigProblem> problems = find_problems(torch);
        QCOMPARE(problems.size(), std::size_t{1});
        QCOMPARE(problems.front().field, std::string("te-impl"));
        QVERIFY2(problems.front().message.find("--te-impl fused: chooses the code of the te backend") == 0,
                 problems.front().message.c_str());
        torch.te_impl = TeImpl::Auto;
        QVERIFY(find_problems(torch).empty());

        RunConfig te = make_preset(Preset::QuickCpu);
        te.backend = Backend::Te;
        te.te_impl = TeImpl::Fused;
        QCOMPARE(resolve(te, no_gpu()).te_impl, TeImpl::Fused);  // the host kernels on the CPU
        DeviceInfo t4 = h200();
        t4.gpu_name = "Tesla T4";
        t4.compute_capability = ComputeCapability{7, 5};
        te.device = DeviceKind::Auto;
        try {
            resolve(te, t4);
            QFAIL("te --te-impl fused resolved on a compute capability 7.5 GPU");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("--te-impl fused: this GPU has compute capability 7.5 and the fused kernels "
                                                "need 8.0") == 0,
                     e.what());
        }
        QVERIFY(!te_impl_availability(TeImpl::Fused, DeviceKind::Cuda, t4).available);
        QVERIFY(te_impl_availability(TeImpl::Fused, DeviceKind::Cpu, t4).available);
        QVERIFY(te_impl_availability(TeImpl::Fused, DeviceKind::Cuda, a100()).available);
        QVERIFY(te_impl_availability(TeImpl::Reference, DeviceKind::Cuda, t4).available);
        te.te_impl = TeImpl::Reference;
        QCOMPARE(resolve(te, t4).te_impl, TeImpl::Reference);

        RunConfig base = make_preset(Preset::QuickCpu);  // a torch base, as the CLI's compare builds it
        base.te_impl = TeImpl::Reference;
        for (const PlannedRun& row : plan_comparison(base, no_gpu())) {
            QCOMPARE(row.config.te_impl, row.config.backend == Backend::Te ? TeImpl::Reference : TeImpl::Auto);
            QVERIFY2(!row.skip_reason, row.skip_reason ? row.skip_reason->c_str() : "");
        }
        base.te_impl = TeImpl::Fused;  // a GPU below 8.0: the te rows cannot run, the torch rows can
        base.device = DeviceKind::Auto;
        for (const PlannedRun& row : plan_comparison(base, t4)) {
            QVERIFY2(row.skip_reason.has_value() == (row.config.backend == Backend::Te),
                     (row.config.name + ": " + row.skip_reason.value_or("runs")).c_str());
        }

        SweepSpec sweep;
        sweep.base = make_preset(Preset::QuickCpu);
        sweep.base.te_impl = TeImpl::Fused;
        sweep.hidden = {64};
        for (const SweepRun& run : plan_sweep(sweep, no_gpu())) {
            QCOMPARE(run.config.te_impl, run.baseline ? TeImpl::Auto : TeImpl::Fused);
        }
        sweep.backend = Backend::Torch;
        sweep.precisions = {Precision::Bf16};
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_sweep(sweep, no_gpu()));
    }

    void cudaGraphIsDecidedWithTheReason() {
        RunConfig c = make_preset(Preset::Seed);
        c.device = DeviceKind::Cuda;
        const GraphDecision yes = decide_cuda_graph(c, true, false);
        QVERIFY(yes.use);
        QCOMPARE(yes.reason, std::string("one CUDA graph per step, captured after 10 eager warm-up steps"));
        const auto no = [&](const RunConfig& config, bool cuda_build, bool blocking, const std::string& part) {
            const GraphDecision d = decide_cuda_graph(config, cuda_build, blocking);
            QVERIFY(!d.use);
            QVERIFY2(d.reason.find(part) != std::string::npos, d.reason.c_str());
        };
        no(c, true, true, "CUDA_LAUNCH_BLOCKING");
        no(c, false, false, "LibTorch has no CUDA");
        RunConfig cpu = c;
        cpu.device = DeviceKind::Cpu;
        no(cpu, true, false, "CPU runs are eager");
        RunConfig off = c;
        off.cuda_graph = false;
        no(off, true, false, "--cuda-graph off");
        RunConfig cold = c;
        cold.warmup = 0;
        no(cold, true, false, "at least one eager warm-up step");
        RunConfig untimed = c;
        untimed.iters = 0;
        no(untimed, true, false, "no timed steps");
        cold.warmup = 1;
        QCOMPARE(decide_cuda_graph(cold, true, false).reason, std::string("one CUDA graph per step, captured after 1 eager warm-up step"));
        // First-step calibration: the calibrating step is not the fused step the graph replays, so the capture
        // waits for a second eager step.
        RunConfig calibrated = cold;
        calibrated.backend = Backend::Te;
        calibrated.precision = Precision::Fp8;
        calibrated.fp8.scaling = ScalingKind::Delayed;
        calibrated.fp8.calibrate_first_step = true;
        no(calibrated, true, false, "two eager warm-up steps");
        calibrated.warmup = 2;
        QVERIFY(decide_cuda_graph(calibrated, true, false).use);
        RunConfig microscaling = calibrated;
        microscaling.fp8.scaling = ScalingKind::Nvfp4;
        no(microscaling, true, false, "the microscaling recipes are emulated, and their stochastic rounding draws");

        QVERIFY(parse_on_off("--cuda-graph", "on"));
        QVERIFY(!parse_on_off("--cuda-graph", "off"));
        try {
            parse_on_off("--cuda-graph", "yes");
            QFAIL("'yes' parsed");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("--cuda-graph") != std::string::npos &&
                         std::string(e.what()).find("on|off") != std::string::npos,
                     e.what());
        }
        QVERIFY(make_preset(Preset::Seed).cuda_graph);  // on by default
    }

    void availabilityFollowsTheHardware() {
        QVERIFY(!device_availability(DeviceKind::Cuda, no_gpu()).available);
        QVERIFY(device_availability(DeviceKind::Cuda, no_gpu()).reason.find("cudaErrorNoDevice") != std::string::npos);
        // An ordinary CPU machine (no NVIDIA driver): said plainly, the runtime's "driver insufficient" not quoted.
        DeviceInfo cpu;
        cpu.gpu_error = "CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)";
        const std::string plain = device_availability(DeviceKind::Cuda, cpu).reason;
        QVERIFY2(plain.find("this machine has no NVIDIA GPU") != std::string::npos && plain.find("insufficient") == std::string::npos,
                 plain.c_str());
        QVERIFY(device_availability(DeviceKind::Cpu, no_gpu()).available);
        QVERIFY(device_availability(DeviceKind::Cuda, a100()).available);

        QVERIFY(!precision_availability(Precision::Fp8, Backend::Torch, DeviceKind::Cpu, no_gpu()).available);
        QVERIFY(precision_availability(Precision::Fp8, Backend::Te, DeviceKind::Cpu, no_gpu()).available);
        QVERIFY(precision_availability(Precision::Fp8, Backend::Te, DeviceKind::Auto, no_gpu()).available);
        const Availability on_a100 = precision_availability(Precision::Fp8, Backend::Te, DeviceKind::Auto, a100());
        QVERIFY(!on_a100.available);
        QVERIFY2(on_a100.reason.find("compute capability 8.0 and FP8 needs 8.9") != std::string::npos, on_a100.reason.c_str());
        QVERIFY(precision_availability(Precision::Fp8, Backend::Te, DeviceKind::Cpu, a100()).available);
        QVERIFY(precision_availability(Precision::Fp8, Backend::Te, DeviceKind::Cuda, h200()).available);
        QVERIFY(precision_availability(Precision::Bf16, Backend::Torch, DeviceKind::Cuda, a100()).available);

        RunConfig fp8;
        fp8.backend = Backend::Te;
        fp8.precision = Precision::Fp8;
        try {
            resolve(fp8, a100());
            QFAIL("FP8 resolved on a CC 8.0 GPU");
        } catch (const ConfigError& e) {
            QCOMPARE(std::string(e.what()), on_a100.reason);
        }
        fp8.device = DeviceKind::Cpu;
        QCOMPARE(resolve(fp8, a100()).device, DeviceKind::Cpu);

        const std::vector<PlannedRun> plan = plan_comparison(make_preset(Preset::Seed), a100());
        QCOMPARE(plan.back().config.precision, Precision::Fp8);
        QVERIFY(plan.back().skip_reason);
        QCOMPARE(*plan.back().skip_reason, on_a100.reason);
        QCOMPARE(plan[3].config.name, std::string("te bf16"));
        QVERIFY(!plan[3].skip_reason);  // te bf16 runs on CC 8.0
        QVERIFY(!plan[4].skip_reason);  // and as a graph
    }

    void fp8Defaults() {
        const RunConfig config;
        QCOMPARE(config.fp8, Fp8Recipe::seed_defaults());
        QCOMPARE(config.fp8.amax_history_len, 16);
        QCOMPARE(Fp8Recipe::te_defaults().amax_history_len, 1024);
        QCOMPARE(Fp8Recipe::te_defaults().format, RecipeFormat::Hybrid);
        QCOMPARE(Fp8Recipe::te_defaults().algo, AmaxAlgo::Max);
        QCOMPARE(Fp8Recipe::te_defaults().margin, 0);
        QVERIFY(!config.inspect_fp8);
        RunConfig te = config;
        te.backend = Backend::Te;
        te.precision = Precision::Fp8;
        te.inspect_fp8 = true;
        QVERIFY(find_problems(te).empty());
    }

    void recipeTextIsParsedWithReasons() {
        try {
            parse_recipe_format("--fp8-format", "e5m2");
            QFAIL("e5m2 accepted as a recipe format");
        } catch (const ConfigError& e) {
            QVERIFY(std::string(e.what()).find("--fp8-format 'e5m2': pure E5M2 is not a recipe format") == 0);
        }
        QCOMPARE(parse_recipe_format("--fp8-format", "hybrid"), RecipeFormat::Hybrid);
        QCOMPARE(parse_recipe_format("--fp8-format", "e4m3"), RecipeFormat::E4M3);
        QCOMPARE(parse_name<AmaxAlgo>("--amax-algo", "most_recent"), AmaxAlgo::MostRecent);
        QCOMPARE(parse_name<ScalingKind>("--recipe", "current"), ScalingKind::Current);
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<AmaxAlgo>("--amax-algo", "mean"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<ScalingKind>("--recipe", "dynamic"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_name<Fp8Dtype>("--dtype", "e3m4"));

        const std::vector<PlannedRun> gpu_plan = plan_comparison(make_preset(Preset::Seed), h200());
        QCOMPARE(gpu_plan[0].config.precision, Precision::Bf16);
        QCOMPARE(gpu_plan[0].config.device, DeviceKind::Cuda);
    }

    // c10::Error::what() carries LibTorch's C++ stack frames after "Exception raised from"; messages keep what
    // comes before them.
    void stackFramesAreLeftOutOfMessages() {
        QCOMPARE(without_stack_frames("store timed out\nException raised from connect at socket.cpp:12 (most recent call "
                                      "first):\nframe #0: c10::Error::Error() + 0x9d\nframe #1: <unknown function>\n"),
                 std::string("store timed out"));
        QCOMPARE(without_stack_frames("no frames here"), std::string("no frames here"));
        QCOMPARE(without_stack_frames("Exception raised from x (most recent call first):\nframe #0"),
                 std::string("Exception raised from x (most recent call first):\nframe #0"));  // nothing before: kept whole
    }

    void textIsCheckedAndMadePrintable() {
        QVERIFY(!text_problem("MiniGPT на H200 ✓", 200));
        QCOMPARE(*text_problem("caf\xe9", 200), std::string("is not valid UTF-8 (byte 4)"));
        QCOMPARE(*text_problem("\xc0\xaf", 200), std::string("is not valid UTF-8 (byte 1)"));          // overlong '/'
        QCOMPARE(*text_problem("\xed\xa0\x80", 200), std::string("is not valid UTF-8 (byte 1)"));      // a surrogate
        QCOMPARE(*text_problem("a\x1b[0m", 200), std::string("contains a control character (U+001B at character 2)"));
        QCOMPARE(*text_problem("\xc2\x9b", 200), std::string("contains a control character (U+009B at character 1)"));
        QCOMPARE(*text_problem("ab", 1), std::string("is 2 characters long"));
        QVERIFY(!text_problem("жж", 2));  // characters, not bytes
        QCOMPARE(printable_text("a\x1b[2J\nb\xff"), std::string("a\xEF\xBF\xBD[2J\xEF\xBF\xBD" "b\xEF\xBF\xBD"));
        QVERIFY(name_problem(std::string(201, 'x')));
        QVERIFY(!name_problem(std::string(200, 'x')));
    }

    // A bidirectional control shows a name in another order than it is stored ("run<U+202E>gpj.exe" reads
    // "runexe.jpg"): refused wherever a name enters (--name, the GUI's field, imported records), naming the
    // character and its position; where one was stored before, it is printed as U+FFFD.
    void bidiControlsInNamesAreRefused() {
        const std::pair<const char*, const char*> controls[] = {
            {"\u061C", "U+061C ARABIC LETTER MARK"},        {"\u200E", "U+200E LEFT-TO-RIGHT MARK"},
            {"\u200F", "U+200F RIGHT-TO-LEFT MARK"},        {"\u202A", "U+202A LEFT-TO-RIGHT EMBEDDING"},
            {"\u202B", "U+202B RIGHT-TO-LEFT EMBEDDING"},   {"\u202C", "U+202C POP DIRECTIONAL FORMATTING"},
            {"\u202D", "U+202D LEFT-TO-RIGHT OVERRIDE"},    {"\u202E", "U+202E RIGHT-TO-LEFT OVERRIDE"},
            {"\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE"},     {"\u2067", "U+2067 RIGHT-TO-LEFT ISOLATE"},
            {"\u2068", "U+2068 FIRST STRONG ISOLATE"},      {"\u2069", "U+2069 POP DIRECTIONAL ISOLATE"},
        };
        for (const auto& [control, named] : controls) {
            const std::optional<std::string> problem = name_problem(std::string("жж") + control + "x");
            QVERIFY2(problem, named);
            const std::string expected = std::string("contains a bidirectional control character (") + named + " at character 3)";
            QVERIFY2(problem->rfind(expected, 0) == 0, problem->c_str());
            QVERIFY2(problem->find("allowed: printable UTF-8 text of at most 200 characters") != std::string::npos,
                     problem->c_str());
            QVERIFY2(problem->find("U+202A to U+202E") != std::string::npos, problem->c_str());
            RunConfig c = make_preset(Preset::QuickCpu);
            c.name = std::string(control) + "run";
            const std::vector<ConfigProblem> problems = find_problems(c);
            QCOMPARE(problems.size(), std::size_t{1});
            QCOMPARE(problems[0].field, std::string("name"));
            QVERIFY2(problems[0].message.rfind("--name: contains a bidirectional control character", 0) == 0,
                     problems[0].message.c_str());
            QCOMPARE(printable_text(std::string("a") + control + "b"), std::string("a\xEF\xBF\xBD" "b"));
        }
        // Right-to-left letters, joiners and other format characters are text, not controls.
        for (const char* fine : {"\u05E9\u05DC\u05D5\u05DD run", "\u0627\u0644\u0639\u0631\u0628\u064A\u0629",
                                 "a\u200Db", "a\u2060b", "a\u202Fb", "a\u2065b"}) {
            QVERIFY2(!name_problem(fine), fine);
            QCOMPARE(printable_text(fine), std::string(fine));
        }
    }

    void memoryBeyondTheMachineIsRefused() {
        RunConfig seed = make_preset(Preset::Seed);
        seed.device = DeviceKind::Cpu;
        seed.precision = Precision::Fp32;
        const MemoryEstimate need = estimate_training_memory(seed);
        QVERIFY(need.parameters > 80'000'000 && need.parameters < 100'000'000);  // MiniGPT at the seed: ~88M
        const DeviceInfo no_gpu;
        QVERIFY(!memory_problem(seed, no_gpu, need.total_bytes()));
        const auto refused = memory_problem(seed, no_gpu, need.total_bytes() - 1);
        QVERIFY(refused);
        QVERIFY2(refused->find("of host memory available") != std::string::npos, refused->c_str());
        QVERIFY(!memory_problem(seed, no_gpu, std::nullopt));  // nothing known: the run decides

        RunConfig huge = seed;
        huge.model.layers = 256;
        huge.model.hidden = 32768;
        huge.model.heads = 16;
        const auto terabytes = memory_problem(huge, no_gpu, std::uint64_t{1} << 40);
        QVERIFY(terabytes && terabytes->find("TiB") != std::string::npos);

        DeviceInfo gpu;
        gpu.compute_capability = ComputeCapability{9, 0};
        gpu.memory_total_bytes = std::uint64_t{140} << 30;
        gpu.memory_free_bytes = std::uint64_t{1} << 30;
        RunConfig on_gpu = seed;
        on_gpu.device = DeviceKind::Cuda;
        on_gpu.precision = Precision::Bf16;
        const auto no_room = memory_problem(on_gpu, gpu, std::nullopt);
        QVERIFY(no_room && no_room->find("free on the GPU") != std::string::npos);
        gpu.memory_free_bytes = std::uint64_t{100} << 30;
        QVERIFY(!memory_problem(on_gpu, gpu, std::nullopt));
    }

    // The CPU estimate against measured peaks (te-bench run --device cpu --warmup 1 --iters 2 on the 2-core
    // development machine, 2026-12-02: the record's peak RSS over the steps and the process's whole peak,
    // /usr/bin/time): at least the larger, at most 1.5× the smaller (docs/reliability.md has the table).
    void memoryEstimateMatchesMeasuredPeaks() {
        struct Measured {
            int layers, hidden, heads, seq, batch;
            Backend backend;
            Precision precision;
            double peak_bytes, process_peak_bytes;
        };
        const Measured grid[] = {
            {2, 128, 2, 32, 8, Backend::Torch, Precision::Fp32, 426024960, 544239616},
            {2, 128, 2, 32, 8, Backend::Te, Precision::Fp32, 414486528, 519655424},
            {12, 768, 12, 96, 32, Backend::Torch, Precision::Fp32, 3659567104, 3631681536},
            {12, 768, 12, 96, 32, Backend::Te, Precision::Fp32, 3686780928, 3686780928},
            {12, 768, 12, 96, 32, Backend::Te, Precision::Bf16, 3159969792, 3137576960},
            {12, 768, 12, 96, 32, Backend::Te, Precision::Fp8, 4414672896, 4414672896},
            {4, 512, 8, 128, 16, Backend::Torch, Precision::Fp32, 997191680, 997191680},
            {4, 512, 8, 128, 16, Backend::Te, Precision::Bf16, 957669376, 957669376},
            {4, 512, 8, 128, 16, Backend::Te, Precision::Fp8, 1191124992, 1191124992},
            {6, 1024, 16, 64, 8, Backend::Torch, Precision::Fp32, 1994510336, 2053623808},
            {6, 1024, 16, 64, 8, Backend::Te, Precision::Fp8, 2514563072, 2573254656},
            {2, 256, 4, 512, 8, Backend::Torch, Precision::Fp32, 786497536, 786497536},
            {2, 256, 4, 512, 8, Backend::Te, Precision::Fp32, 817020928, 817020928},
            {2, 256, 4, 512, 8, Backend::Te, Precision::Fp8, 847171584, 847171584},
            {8, 768, 12, 256, 8, Backend::Torch, Precision::Fp32, 2326605824, 2326499328},
            {8, 768, 12, 256, 12, Backend::Torch, Precision::Fp32, 2666332160, 2666332160},
            {8, 768, 12, 256, 12, Backend::Te, Precision::Bf16, 2339008512, 2339008512},
            {2, 2048, 16, 64, 4, Backend::Torch, Precision::Fp32, 2345168896, 2547052544},
            {2, 2048, 16, 64, 4, Backend::Te, Precision::Fp8, 2689064960, 2806558720},
            {4, 512, 8, 512, 8, Backend::Torch, Precision::Fp32, 1444651008, 1444651008},
            {4, 512, 8, 512, 8, Backend::Te, Precision::Fp8, 1575321600, 1575321600},
            {4, 512, 8, 512, 8, Backend::Te, Precision::Bf16, 1212121088, 1212121088},
            {4, 512, 8, 512, 8, Backend::Torch, Precision::Bf16, 1217167360, 1217167360},
            {12, 768, 12, 96, 32, Backend::Torch, Precision::Bf16, 3120099328, 3120099328},
            {2, 1024, 16, 256, 16, Backend::Torch, Precision::Fp32, 1701904384, 1701904384},
            {2, 1024, 16, 256, 16, Backend::Te, Precision::Fp8, 1939996672, 1939996672},
            {6, 512, 8, 96, 64, Backend::Te, Precision::Bf16, 1834254336, 1834254336},
            {6, 512, 8, 96, 64, Backend::Te, Precision::Fp32, 2354278400, 2354278400},
        };
        for (const Measured& m : grid) {
            RunConfig c = make_preset(Preset::Seed);  // what te-bench run starts from: vocabulary 4096
            c.device = DeviceKind::Cpu;
            c.model.layers = m.layers;
            c.model.hidden = m.hidden;
            c.model.heads = m.heads;
            c.model.seq = m.seq;
            c.batch = m.batch;
            c.backend = m.backend;
            c.precision = m.precision;
            const double estimate = static_cast<double>(estimate_training_memory(c).total_bytes());
            const QString shape = QStringLiteral("%1 layers, hidden %2, seq %3, batch %4, %5 %6: estimate %7 GiB, peaks %8 / %9 GiB")
                                      .arg(m.layers).arg(m.hidden).arg(m.seq).arg(m.batch)
                                      .arg(QString::fromStdString(std::string(to_string(m.backend))))
                                      .arg(QString::fromStdString(std::string(to_string(m.precision))))
                                      .arg(estimate / (1 << 30), 0, 'f', 2).arg(m.peak_bytes / (1 << 30), 0, 'f', 2)
                                      .arg(m.process_peak_bytes / (1 << 30), 0, 'f', 2);
            QVERIFY2(estimate >= std::max(m.peak_bytes, m.process_peak_bytes), qPrintable(shape));
            QVERIFY2(estimate <= 1.5 * std::min(m.peak_bytes, m.process_peak_bytes), qPrintable(shape));
        }
    }

    // A data-parallel job on the CPU: its N processes share the host's memory, so the check counts N of them
    // where the job is planned; a rank counts its own.
    void dataParallelJobsCountEveryProcess() {
        RunConfig job = make_preset(Preset::Seed);
        job.device = DeviceKind::Cpu;
        job.precision = Precision::Fp32;
        job.dist.nproc = 3;
        const std::uint64_t one = estimate_training_memory(job).total_bytes();
        const DeviceInfo no_gpu;
        const auto refused = memory_problem(job, no_gpu, one * 5 / 2);
        QVERIFY(refused);
        QVERIFY2(refused->find("--nproc 3: this run needs about") != std::string::npos &&
                     refused->find("for its 3 processes, each about") != std::string::npos &&
                     refused->find("or fewer processes") != std::string::npos,
                 refused->c_str());
        QVERIFY(!memory_problem(job, no_gpu, one * 3));
        QVERIFY(!memory_problem(job, no_gpu, one * 5 / 2, MemoryScope::OneRank));
        QVERIFY(memory_problem(job, no_gpu, one - 1, MemoryScope::OneRank));
        // On GPUs each rank has its own: the free memory of one is compared with one process.
        DeviceInfo gpu;
        gpu.compute_capability = ComputeCapability{9, 0};
        gpu.gpu_count = 4;
        gpu.memory_total_bytes = std::uint64_t{140} << 30;
        RunConfig on_gpu = job;
        on_gpu.device = DeviceKind::Cuda;
        on_gpu.precision = Precision::Bf16;
        gpu.memory_free_bytes = estimate_training_memory(on_gpu).total_bytes();
        QVERIFY(!memory_problem(on_gpu, gpu, std::nullopt));
    }
};

QTEST_GUILESS_MAIN(TestRunConfig)
#include "tst_run_config.moc"
