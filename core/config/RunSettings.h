#pragma once
// One description of every RunConfig setting: its CLI flag and help, its place in a record's JSON, its label in
// the GUI's form, its kind and ranges, and when it applies. te-bench's flags, the record's config object, the
// reproducing command line, validation's ranges and the form's fields are all read from it, so a new setting is
// its RunConfig member and one row here (a field of its own in the form only for words a row cannot carry).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "core/config/RunConfig.h"

namespace tewb {

// A setting's value, whatever its kind: whole numbers, reals, switches and names (enums as their names).
using SettingValue = std::variant<std::int64_t, double, bool, std::string>;

enum class SettingKind {
    Choice,    // one of an enum's names (a string in JSON)
    Integer,   // a whole number
    Real,      // a number
    Switch,    // two words on the command line (on|off, pow2|exact), true or false in JSON
    Text,      // free text
    Presence,  // a command-line flag without a value (--inspect-fp8), true or false in JSON
};

// The object of a record's config that holds the setting: the config itself, or its "fp8" object (written
// for FP8 runs), its "dist" object (written for data-parallel jobs), its "model" object (written always; a
// record without it is from before the architecture could be chosen: a gpt) or its "data" object (written for
// runs on a token file).
enum class SettingSection { Config, Fp8, Dist, Model, Data };

// When the reproducing command line names the setting: always, or only where it means something.
enum class SettingUse {
    Always,
    Fp8,          // FP8 runs
    DelayedFp8,   // FP8 runs under delayed scaling
    BlockFp8,     // FP8 runs under block scaling
    Nvfp4,        // FP8-precision runs under the NVFP4 recipe
    DataParallel, // data-parallel jobs
    NotDefault,   // only when it differs from a fresh RunConfig's value (and, for Presence, when set)
    Llama,        // llama runs, when it differs from a fresh RunConfig's value (0: the automatic size); the
                  // record holds it for every llama run and never for a gpt
    DataFile,     // runs on a token file (--data)
};

// Which of te-bench's training commands take a setting's flag (a bit each). te-impl is none of them: te-bench
// registers it itself, each command with its own words on which runs it reaches.
enum SettingCommands : unsigned {
    kNoCommand = 0,
    kRunCommand = 1,
    kCompareCommand = 2,
    kSweepCommand = 4,
    kRunAndCompare = kRunCommand | kCompareCommand,
    kEveryTrainingCommand = kRunCommand | kCompareCommand | kSweepCommand,
};

struct IntRange {
    std::int64_t min;
    std::int64_t max;
};

struct RunSetting {
    std::string_view id;     // "amax-history-len": the flag without dashes, ConfigProblem::field and the form's field id
    std::string_view flag;   // "--amax-history-len"
    SettingSection section;
    std::string_view json_key;  // "amax_history_len", in its section's object
    std::string_view label;     // the GUI form's words: "Amax history length" (a switch's: its check box's text)
    SettingKind kind;
    SettingUse use;
    std::optional<IntRange> valid = std::nullopt;   // what validation accepts (Integer)
    std::optional<IntRange> stored = std::nullopt;  // what a record may hold (Integer), older records included
    std::string_view on_word = "on";   // Switch: the command line's words for true and false
    std::string_view off_word = "off";
    // A record without the key (one from before the setting existed) reads as this; nothing: the key is required.
    std::optional<SettingValue> when_absent = std::nullopt;

    // te-bench's help for the flag: what it sets, then "(default <RunConfig{}'s value><default_note>)", or
    // "(<default_words>)" where the value alone would mislead (0 for "automatic"); no default for Text and Presence.
    std::string_view help = {};
    std::string_view default_note = {};
    std::string_view default_words = {};
    std::string_view value_name = "N";  // the value's name in the help: N, X, NAME, PATH, on|off
    bool help_range = false;            // the help states `valid` ("; 1 to 65536")
    unsigned commands = kEveryTrainingCommand;
    // Whether the window's run-setup form has a field for it (ui/setup: a row's own, or one made from the row's kind,
    // range, label and help). The job's communication settings have none: the window's jobs take their defaults.
    bool in_form = true;

    SettingValue (*get)(const RunConfig&) = nullptr;
    // Sets the value; `where` names the source in messages ("--device", "$.config.device"). Choices are
    // checked here (ConfigError naming `where` and the allowed names); ranges are validation's.
    void (*set)(RunConfig&, const SettingValue&, std::string_view where) = nullptr;
};

// Every setting, in the order the reproducing command line names them.
std::span<const RunSetting> run_settings();
// The setting with this id or flag ("hidden" or "--hidden"); nullptr when there is none.
const RunSetting* find_setting(std::string_view id_or_flag);
// The setting with this id; throws std::logic_error when there is none (a programming error).
const RunSetting& setting(std::string_view id);

// A setting added to the table for as long as this object lives, read everywhere the table is (te-bench's flags and
// help, validation, records, the reproducing command line, the form): how a test shows that a setting is one row. Rows are added before
// anything reads the table and removed in reverse order; not for use across threads.
class ExtraRunSetting {
public:
    explicit ExtraRunSetting(const RunSetting& row);
    ~ExtraRunSetting();
    ExtraRunSetting(const ExtraRunSetting&) = delete;
    ExtraRunSetting& operator=(const ExtraRunSetting&) = delete;

private:
    std::string_view id_;
};

// Why a setting given explicitly (a flag on the command line) means nothing for `config`, or nothing: a llama's own
// size for a gpt, a token file's setting without a file, a block-scaling option under another scaling, a
// delayed-scaling option under another. te-bench refuses the flag with it.
std::optional<std::string> given_setting_problem(const RunSetting& s, const RunConfig& config);

// "transformer blocks (default 12)": the flag's help as te-bench prints it.
std::string setting_help(const RunSetting& s);
// Whether the setting is part of the FP8 recipe: the fp8 section's rows with a value (not --inspect-fp8).
bool fp8_recipe_setting(const RunSetting& s);
// "--recipe/--fp8-format/...": the flags of the FP8 recipe, as messages that refuse them list them.
std::string fp8_recipe_flags();

// The command line's text of a value ("768", "3e-4", "on", "pow2", "fp8"); empty for Presence.
std::string setting_text(const RunSetting& s, const RunConfig& config);
// Reads the command line's text into the config; throws ConfigError naming the flag.
void set_setting_from_text(const RunSetting& s, RunConfig& config, std::string_view text);
// Whether the reproducing command line names the setting for this configuration.
bool setting_in_command_line(const RunSetting& s, const RunConfig& config);
// Whether a record's config holds the setting's section for this configuration.
bool section_written(SettingSection section, const RunConfig& config);
// Whether a record's config holds the setting: its section is written and, for a llama-only setting, the run is a llama.
bool setting_written(const RunSetting& s, const RunConfig& config);
// Every section, the config itself first.
std::span<const SettingSection> setting_sections();
// The key of the section's object in a record's config ("fp8", "dist", "model", "data"); empty for Config itself.
std::string_view section_key(SettingSection section);

}  // namespace tewb
