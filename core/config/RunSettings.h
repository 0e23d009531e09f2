#pragma once
// One description of every RunConfig setting: its CLI flag, its place in a record's JSON, its label in the
// GUI's form, its kind and ranges, and when it applies. te-bench's flags, the record's config object, the
// reproducing command line, validation's ranges and the form's labels are all read from it, so a new setting
// is one row here (and its widget in the form).

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
    DataParallel, // data-parallel jobs
    NotDefault,   // only when it differs from a fresh RunConfig's value (and, for Presence, when set)
    Llama,        // llama runs, when it differs from a fresh RunConfig's value (0: the automatic size); the
                  // record holds it for every llama run and never for a gpt
    DataFile,     // runs on a token file (--data)
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
