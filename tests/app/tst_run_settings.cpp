// The settings table (core/config/RunSettings) drives te-bench's flags, the record's config and the
// reproducing command line: for every setting, a non-default value given on te-bench's command line survives
// the record's JSON and the command line written from it, and is read back the same.

#include <QtTest>

#include <set>
#include <string>
#include <vector>

#include "Arguments.h"
#include "../helpers/TestSettingRow.h"
#include "core/common/Error.h"
#include "core/config/RunSettings.h"
#include "core/results/RecordJson.h"
#include "core/results/ReportText.h"

using namespace tewb;

namespace {

// What `te-bench <args>` makes of a run's flags.
RunConfig config_of(const std::vector<std::string>& args) {
    CLI::App app;
    cli::Commands commands;
    cli::define_commands(app, commands);
    std::vector<std::string> words{"te-bench"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    const std::optional<int> exit = cli::parse_arguments(app, commands, static_cast<int>(argv.size()), argv.data());
    if (exit) throw std::runtime_error("te-bench refused its arguments (exit " + std::to_string(*exit) + ")");
    return cli::config_from_flags(commands.run_flags);
}

// The flags a setting needs beside it to mean something (an FP8 run, a block-scaled one, a job).
std::vector<std::string> context_for(const RunSetting& s) {
    std::vector<std::string> args{"run"};
    const auto add = [&](std::initializer_list<const char*> words) { args.insert(args.end(), words.begin(), words.end()); };
    switch (s.use) {
    case SettingUse::Fp8:
    case SettingUse::DelayedFp8:
        add({"--backend", "te", "--precision", "fp8"});
        break;
    case SettingUse::BlockFp8:
        add({"--backend", "te", "--precision", "fp8", "--recipe", "block"});
        break;
    case SettingUse::Nvfp4:
        add({"--backend", "te", "--precision", "fp8", "--recipe", "nvfp4"});
        break;
    case SettingUse::DataParallel:
        if (s.id != "nproc") add({"--nproc", "2"});
        break;
    case SettingUse::Llama:
        add({"--arch", "llama"});
        break;
    case SettingUse::DataFile:
        if (s.id != "data") add({"--data", "corpus.txt"});
        break;
    case SettingUse::Always:
    case SettingUse::NotDefault:
        if (s.id == "te-impl") add({"--backend", "te"});
        break;
    }
    return args;
}

// A value of the setting other than `base`'s, as command-line text (empty for a flag without a value).
std::string other_value(const RunSetting& s, const RunConfig& base) {
    const std::string current = setting_text(s, base);
    switch (s.kind) {
    case SettingKind::Integer: {
        const std::int64_t first = s.valid->min + 1;
        return std::to_string(std::to_string(first) == current ? first + 1 : first);
    }
    case SettingKind::Real:
        return current == "0.000123" ? "0.5" : "0.000123";  // not a short decimal: the shortest text must survive
    case SettingKind::Switch:
        return std::string(current == s.on_word ? s.off_word : s.on_word);
    case SettingKind::Text:
        return "it's a \"run\" named with spaces";
    case SettingKind::Presence:
        return {};
    case SettingKind::Choice:
        for (const char* name : {"cpu", "cuda", "te", "fp32", "bf16", "reference", "fused", "current", "block", "e4m3",
                                 "hybrid", "most_recent", "max", "gloo", "nccl", "torch", "llama", "bytes"}) {
            RunConfig probe = base;
            try {
                s.set(probe, std::string(name), s.flag);
            } catch (const ConfigError&) {
                continue;
            }
            if (setting_text(s, probe) != current) return name;
        }
        break;
    }
    throw std::logic_error("no other value for " + std::string(s.id));
}

class TestRunSettings : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qunsetenv("TEWB_TE_IMPL"); }

    void everySettingRoundTrips_data() {
        QTest::addColumn<QString>("id");
        for (const RunSetting& s : run_settings()) {
            const QString id = QString::fromUtf8(s.id.data(), static_cast<qsizetype>(s.id.size()));
            QTest::newRow(qPrintable(id)) << id;
        }
    }

    // CLI -> record -> command line -> CLI, for a value that is not the default.
    void everySettingRoundTrips() {
        QFETCH(QString, id);
        const RunSetting& s = setting(id.toStdString());
        std::vector<std::string> args = context_for(s);
        const RunConfig base = config_of(args);
        args.emplace_back(s.flag);
        if (s.kind != SettingKind::Presence) args.push_back(other_value(s, base));
        const RunConfig given = config_of(args);
        QVERIFY2(s.get(given) != s.get(base), "the value given must differ from the default, or the test proves nothing");

        const RunConfig stored = config_from_json_text(config_to_json_text(given), "round trip");
        QVERIFY(stored == given);

        const std::vector<std::string> command = command_arguments_for(stored);
        QVERIFY2(std::find(command.begin(), command.end(), std::string(s.flag)) != command.end(),
                 qPrintable(QString::fromStdString(command_line_for(stored))));
        QVERIFY2(config_of(command) == given, qPrintable(QString::fromStdString(command_line_for(stored))));
    }

    // A setting is one row: a row added here, and nothing else, appears in te-bench's help and flags (with its
    // default, from the row), in validation (its range), in the record's config and in the reproducing command line.
    void aSettingIsOneRow() {
        std::int64_t& knob = test::test_knob;
        knob = 7;
        const ExtraRunSetting extra(test::test_knob_row());

        CLI::App app;
        cli::Commands commands;
        cli::define_commands(app, commands);
        const std::string help = commands.run->help();
        QVERIFY2(help.find("--test-knob N") != std::string::npos, help.c_str());
        QVERIFY2(help.find("a knob only this test has (default 7)") != std::string::npos, help.c_str());
        QVERIFY(commands.compare->help().find("--test-knob") != std::string::npos);
        QVERIFY(commands.sweep->help().find("--test-knob") != std::string::npos);

        const RunConfig given = config_of({"run", "--test-knob", "42"});
        QCOMPARE(knob, std::int64_t{42});
        knob = 100;
        const std::vector<ConfigProblem> problems = find_problems(given);
        QVERIFY(std::any_of(problems.begin(), problems.end(), [](const ConfigProblem& p) {
            return p.field == "test-knob" && p.message == "--test-knob 100: out of range; allowed: 1 to 99";
        }));
        knob = 42;

        const std::string json = config_to_json_text(given);
        QVERIFY2(json.find("\"test_knob\":42") != std::string::npos, json.c_str());
        knob = 7;
        config_from_json_text(json, "record");
        QCOMPARE(knob, std::int64_t{42});

        const std::vector<std::string> command = command_arguments_for(given);
        const auto flag = std::find(command.begin(), command.end(), std::string("--test-knob"));
        QVERIFY2(flag != command.end() && std::next(flag) != command.end() && *std::next(flag) == "42",
                 command_line_for(given).c_str());
        knob = 7;
        config_of(command);
        QCOMPARE(knob, std::int64_t{42});
    }

    void rowsAreDistinctAndComplete() {
        std::set<std::string_view> ids, flags;
        std::set<std::string> keys;
        for (const RunSetting& s : run_settings()) {
            QVERIFY2(ids.insert(s.id).second, s.id.data());
            QVERIFY2(flags.insert(s.flag).second, s.flag.data());
            QCOMPARE(std::string(s.flag), "--" + std::string(s.id));
            const std::string key = std::to_string(static_cast<int>(s.section)) + "." + std::string(s.json_key);
            QVERIFY2(keys.insert(key).second, key.c_str());
            QVERIFY(!s.label.empty());
            QVERIFY(s.get != nullptr && s.set != nullptr);
            if (s.kind == SettingKind::Integer) QVERIFY2(s.valid && s.stored, s.id.data());
        }
        // Every setting is read back from a record: a fresh FP8 job's values survive the JSON.
        RunConfig fresh;
        fresh.precision = Precision::Fp8;
        fresh.backend = Backend::Te;
        fresh.dist.nproc = 2;
        QVERIFY(config_from_json_text(config_to_json_text(fresh), "fresh") == fresh);
        fresh.model.arch = Arch::Llama;  // the model and data objects
        fresh.data.path = "corpus.txt";
        QVERIFY(config_from_json_text(config_to_json_text(fresh), "fresh llama") == fresh);
    }

    // Validation's ranges are the table's: the message names the flag, the value and the row's range (the
    // FP8 recipe's rows read theirs from Fp8Recipe, which validates the recipe on its own).
    void validationUsesTheTablesRanges() {
        for (const RunSetting& s : run_settings()) {
            if (s.kind != SettingKind::Integer || s.id == "seed") continue;
            RunConfig c;
            c.dist.nproc = 1;
            c.model.arch = Arch::Llama;  // where llama's and the token file's settings apply
            c.data.path = "corpus.txt";
            s.set(c, s.valid->max + 1, s.flag);
            const std::string value = std::string(s.flag) + " " + std::to_string(s.valid->max + 1) + ": ";
            const std::string range = "allowed: " + std::to_string(s.valid->min) + " to " + std::to_string(s.valid->max);
            bool found = false;
            for (const ConfigProblem& p : find_problems(c)) {
                found = found || (p.field == s.id && p.message.rfind(value, 0) == 0 && p.message.find(range) != std::string::npos);
            }
            QVERIFY2(found, (value + range).c_str());
        }
    }

    // --data keeps an absolute path in the record, so the run can be repeated from any directory.
    void dataPathIsKeptAbsolute() {
        const RunConfig c = config_of({"run", "--data", "corpora/../corpus.txt"});
        QCOMPARE(QString::fromStdString(c.data.path), QDir::cleanPath(QDir::current().absoluteFilePath("corpus.txt")));
        QCOMPARE(config_of({"run", "--data", "/data/corpus.txt"}).data.path, std::string("/data/corpus.txt"));
    }

    // Old records lack the settings added since; they read as the values those runs had.
    void absentKeysReadAsBefore() {
        RunConfig fp8;
        fp8.backend = Backend::Te;
        fp8.precision = Precision::Fp8;
        fp8.model.arch = Arch::Llama;  // llama's own settings are in its record only
        std::string text = config_to_json_text(fp8);
        for (const RunSetting& s : run_settings()) {
            if (!s.when_absent) continue;
            const std::string key = "\"" + std::string(s.json_key) + "\":";
            const auto at = text.find(key);
            QVERIFY2(at != std::string::npos, key.c_str());
            const auto end = text.find_first_of(",}", at);
            text.erase(at, end - at + (text[end] == ',' ? 1 : 0));
        }
        const RunConfig old = config_from_json_text(text, "old record");
        QCOMPARE(old.cuda_graph, false);
        QCOMPARE(old.te_impl, TeImpl::Auto);
        QCOMPARE(old.fp8.block_power_of_two, true);
        QCOMPARE(old.fp8.calibrate_first_step, false);
        QCOMPARE(old.inspect_fp8, false);
        QCOMPARE(old.name, std::string());
        QCOMPARE(old.model.arch, Arch::Gpt);
        QCOMPARE(old.model.kv_heads, 0);
        QCOMPARE(old.model.ffn, 0);
        QCOMPARE(old.model.rope_base, double{kDefaultRopeBase});
    }
};

}  // namespace

QTEST_GUILESS_MAIN(TestRunSettings)
#include "tst_run_settings.moc"
