// te-bench info, selftest and recipe: what this machine is and can do, and the FP8 recipe replayed.
#include "InfoCommands.h"

#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "CommandSupport.h"
#include "Process.h"
#include "core/common/BuildInfo.h"
#include "core/common/Error.h"
#include "core/common/TextTable.h"
#include "core/device/Capability.h"
#include "core/device/DeviceInfo.h"
#include "core/fp8/ReplayReport.h"
#include "core/results/RecordJson.h"
#include "core/selftest/SelfTest.h"

namespace tewb::cli {

namespace {

// A setting with two accepted flags (its name and an older alias): the text, and the flag it came with, for
// messages in the user's words.
struct SpelledSetting {
    const char* flag;
    std::string text;
};

SpelledSetting either_spelling(const char* name, const std::string& text, const char* alias, const std::string& alias_text) {
    if (!text.empty() && !alias_text.empty()) {
        throw ConfigError(std::string(name) + " and " + alias + ": the same setting given twice; allowed: one of them");
    }
    return alias_text.empty() ? SpelledSetting{name, text} : SpelledSetting{alias, alias_text};
}

std::string describe_device(const DeviceInfo& d, const Capability& cap) {
    std::ostringstream out;
    out << "Mode: " << to_string(cap.mode) << "\n";
    for (const std::string& reason : cap.reasons()) {
        out << "  " << reason << "\n";
    }
    if (d.has_gpu()) {
        out << "GPU: " << d.gpu_name << " (compute capability " << d.compute_capability->to_string() << ", " << d.sm_count
            << " SMs";
        if (d.gpu_count > 1) out << "; device 0 of " << d.gpu_count;
        out << ")\n";
        out << "Memory: " << format_bytes(d.memory_total_bytes) << " total, " << format_bytes(d.memory_free_bytes) << " free\n";
    } else {
        out << "GPU: none usable (" << d.gpu_error << ")\n";
    }
    const auto value = [](const std::string& text) { return text.empty() ? std::string("-") : text; };
    out << "Driver: " << value(d.driver_version) << "\n";
    out << "CUDA runtime: " << value(d.cuda_runtime_version) << "  cuBLASLt: " << value(d.cublaslt_version)
        << "  LibTorch: " << value(d.libtorch_version) << "\n";
    if (!d.cublaslt_library.empty()) out << "cuBLASLt loaded from: " << d.cublaslt_library << "\n";
    out << "CPU: " << d.cpu_model << " (" << d.cpu_threads << " threads)\n";
    const BuildInfo& build = build_info();
    out << "Build: te-workbench " << build.version << " (" << build.commit << ", " << build.build_type
        << (build.cuda_kernels ? ", CUDA kernels" : ", no CUDA kernels") << ")\n";
    return out.str();
}

}  // namespace

int run_info(const Commands& c) {
    const DeviceInfo device = detect_device();
    const Capability capability = classify(device);
    std::cout << (c.info_json ? json_text(capability_json(device, capability)) : describe_device(device, capability));
    return 0;
}

int run_selftest(const Commands& c) {
    const SelfTestReport report = run_self_test(detect_device());
    std::cout << (c.selftest_json ? self_test_json_text(report) : render_self_test_table(report));
    if (!report.ran) return kExitSkipped;
    return report.passed() ? 0 : kExitFailure;
}

int run_recipe(const Commands& c) {
    RecipeReplay replay;
    if (!c.replay_recipe.empty()) replay.scaling = parse_name<ScalingKind>("--recipe", c.replay_recipe);
    if (!c.replay_dtype.empty()) replay.dtype = parse_name<Fp8Dtype>("--dtype", c.replay_dtype);
    const SpelledSetting history = either_spelling("--amax-history-len", c.replay_history_len, "--history-len",
                                                   c.replay_history_len_alias);
    if (!history.text.empty()) replay.history_len = parse_int(history.flag, history.text);
    const SpelledSetting algo = either_spelling("--amax-algo", c.replay_algo, "--algo", c.replay_algo_alias);
    if (!algo.text.empty()) replay.algo = parse_name<AmaxAlgo>(algo.flag, algo.text);
    if (!c.replay_margin.empty()) replay.margin = parse_int("--margin", c.replay_margin);
    if (!c.replay_calibrate.empty()) {
        replay.calibrate_first_step = parse_on_off("--calibrate-first-step", c.replay_calibrate);
        if (replay.scaling != ScalingKind::Delayed) throw ConfigError("--calibrate-first-step goes with --recipe delayed");
    }
    replay.amaxes = parse_amax_list("--amax", c.replay_amax);
    if (replay.scaling == ScalingKind::Block) {
        // Nothing to replay: a block's scale depends on that block alone, in this step alone.
        std::cout << block_scaling_explanation(c.replay_json);
        return 0;
    }
    validate(replay, history.flag);
    const std::vector<RecipeReplayStep> steps =
        replay_recipe(replay.scaling, replay.dtype, replay.history_len, replay.algo, replay.margin, replay.amaxes,
                      replay.calibrate_first_step);
    std::cout << (c.replay_json ? replay_json_text(replay, steps) : replay_table_text(replay, steps));
    return 0;
}

}  // namespace tewb::cli
