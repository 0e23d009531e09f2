#include "core/results/RunWords.h"

#include "core/device/Capability.h"

namespace tewb {

std::string display_name(const std::string& name, bool fp8_emulated, std::string_view format) {
    if (!fp8_emulated || name.find("emulated") != std::string::npos) return name;
    return name + " (emulated " + std::string(format) + ")";
}

std::string precision_label(std::string_view precision, bool fp8_emulated) {
    return std::string(precision) + (fp8_emulated ? " (emulated)" : "");
}

std::string emulated_speedup_reason() {
    return "FP8 GEMMs emulated in higher precision: this ratio is the emulation's cost and not FP8's speed";
}

std::string emulated_format_memory_reason() {
    return "emulated: its memory holds the emulation's copies (a byte per value, float32 block scales), not the format's bytes";
}

std::string fp8_implementation_words(bool fp8_emulated) {
    return fp8_emulated ? "fp8 emulated" : "fp8";
}

std::string_view te_path_emulated_clause(bool fp8_emulated) {
    return fp8_emulated ? ", FP8 GEMMs emulated" : "";
}

std::string_view fp8_casts_emulated_clause(bool fp8_emulated) {
    return fp8_emulated ? "; GEMMs emulated" : "";
}

std::string emulated_headline(const std::string& name) {
    return name + " ran with its FP8 GEMMs emulated, so its step time is the emulation's cost, not FP8's speed";
}

std::string emulated_break_even_sentence(const std::string& precision_label, bool microscaling) {
    const std::string cost = precision_label +
                             ": its FP8 GEMMs are emulated here (in higher precision), so its times are the emulation's cost, "
                             "not FP8's speed; no break-even is stated.";
    if (microscaling) {
        return cost + " MXFP8 and NVFP4 run natively only on compute capability 10.x (Blackwell), which this workbench "
                      "emulates too: compare these runs by their loss, not their time.";
    }
    return cost + " Run the sweep on a GPU of compute capability " + kFp8Minimum.to_string() + " or newer to measure FP8.";
}

std::string emulated_baseline_refusal() {
    return "the baseline's FP8 GEMMs were emulated: its time is the emulation's cost and no speed to compare with";
}

std::string emulated_validation_clause(bool on_cpu) {
    return std::string(on_cpu ? "; FP8 was emulated on the CPU" : "; its FP8 GEMMs were emulated") +
           ": the casts are real FP8 and the GEMMs multiply their FP8 values in float32, so this shows FP8's rounding, "
           "not an FP8 tensor core's accumulation";
}

std::string emulated_implementation_tip() {
    return "FP8 emulated: the casts are real FP8 but the GEMMs ran in higher precision, so the loss is FP8's and the "
           "timings are not FP8 speed.";
}

}  // namespace tewb
