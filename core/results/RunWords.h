#pragma once

#include <string>
#include <string_view>

// The words for a run whose FP8 GEMMs were emulated (real FP8 casts, GEMMs multiplying the FP8 values in float32:
// the loss is FP8's, the time is not FP8's speed). Tables, legends, CSV files, reports, the sweep's verdicts and the
// trainer's description all take them from here, so no two places can disagree on what "emulated" claims.
namespace tewb {

// The name a run is shown and exported under: its configured name, with " (emulated FP8)" added when its FP8 GEMMs
// were emulated ("(emulated MXFP8)", "(emulated NVFP4)" for Blackwell's formats: `format`), so no table, legend or CSV
// can show an emulated run as if it were that format's speed. Unchanged when the name already says "emulated".
std::string display_name(const std::string& name, bool fp8_emulated, std::string_view format = "FP8");
// A precision as tables show it: "fp8", or "fp8 (emulated)". `precision` is the text to show ("fp8", "FP8").
std::string precision_label(std::string_view precision, bool fp8_emulated);
// What a speedup cell says instead of a ratio when the run's FP8 GEMMs were emulated: the ratio is then the
// emulation's cost, never FP8's speed, so tables, CSV files, the report and the sweep leave it out.
inline constexpr std::string_view kEmulatedSpeedup = "emulated";
// The reason, for tooltips, CSV notes and reports (no comma, so a CSV cell needs no quotes): "FP8 GEMMs
// emulated in higher precision: this ratio is the emulation's cost and not FP8's speed".
std::string emulated_speedup_reason();
// Why an emulated MXFP8 or NVFP4 run has no memory ratio: "emulated: its memory holds the emulation's copies (a byte
// per value, float32 block scales), not the format's bytes".
std::string emulated_format_memory_reason();
// The report's label for such a run among "what to know before trusting its numbers": "emulated FP8".
inline constexpr std::string_view kEmulatedFp8Label = "emulated FP8";

// The precision in the trainer's one-line description of how a run executes: "fp8" or "fp8 emulated".
std::string fp8_implementation_words(bool fp8_emulated);
// After "te path: <implementation>": ", FP8 GEMMs emulated", or nothing.
std::string_view te_path_emulated_clause(bool fp8_emulated);
// After the FP8 cast summary's slot count: "; GEMMs emulated", or nothing.
std::string_view fp8_casts_emulated_clause(bool fp8_emulated);
// The report's headline when the only contender was emulated: "<name> ran with its FP8 GEMMs emulated, so its step
// time is the emulation's cost, not FP8's speed".
std::string emulated_headline(const std::string& name);
// The sweep's verdict for a precision whose FP8 GEMMs were emulated at some size (no break-even is stated).
// `microscaling`: the runs used MXFP8 or NVFP4, whose native GEMMs need compute capability 10.x.
std::string emulated_break_even_sentence(const std::string& precision_label, bool microscaling = false);
// Why an emulated run cannot be the baseline of a speedup.
std::string emulated_baseline_refusal();
// Appended to the report's sentence on FP8's validation loss: where the FP8 was emulated (on the CPU, or its
// GEMMs on a GPU) and what that means for the loss.
std::string emulated_validation_clause(bool on_cpu);
// The comparison table's tooltip on an emulated run's implementation cell.
std::string emulated_implementation_tip();

}  // namespace tewb
