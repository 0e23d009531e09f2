// te-bench info and selftest: what this machine is and can do.
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
#include "core/results/RecordJson.h"
#include "core/selftest/SelfTest.h"

namespace tewb::cli {

namespace {

std::string describe_device(const DeviceInfo& d, const Capability& cap) {
    std::ostringstream out;
    out << "Mode: " << to_string(cap.mode) << "\n";
    for (const std::string& reason : cap.reasons()) {
        out << "  " << reason << "\n";
    }
    out << "  " << cap.microscaling_reason << "\n";
    if (d.has_gpu()) {
        out << "GPU: " << d.gpu_name << " (compute capability " << d.compute_capability->to_string() << ", " << d.sm_count
            << " SMs";
        if (d.gpu_count > 1) out << "; device 0 of " << d.gpu_count;
        out << ")\n";
        out << "Memory: " << format_bytes(d.memory_total_bytes) << " total, " << format_bytes(d.memory_free_bytes) << " free\n";
    } else if (cpu_machine(d)) {
        out << "GPU: none (no NVIDIA driver on this machine)\n";
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

}  // namespace tewb::cli
