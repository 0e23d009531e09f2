// te-bench's command line: the bytes split at NUL into arguments. Parsing ends with an exit status
// (help, a bad argument) or a command; a run's flags then convert into a configuration or a ConfigError.
// Nothing else may escape: no crash, no other exception.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "Arguments.h"
#include "core/common/Error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Help texts and messages would flood the fuzzer's own output.
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> words{"te-bench"};
    std::string word;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            words.push_back(word);
            word.clear();
        } else {
            word.push_back(static_cast<char>(data[i]));
        }
    }
    words.push_back(word);
    if (words.size() > 64) return 0;
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);

    const int saved_stderr = ::dup(STDERR_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDERR_FILENO);
    ::close(null);
    CLI::App app{"fuzz"};
    tewb::cli::Commands commands;
    tewb::cli::define_commands(app, commands);
    const auto status = tewb::cli::parse_arguments(app, commands, static_cast<int>(words.size()), argv.data());
    ::dup2(saved_stderr, STDERR_FILENO);
    ::close(saved_stderr);
    if (status) return 0;
    for (const tewb::cli::RunFlags* flags : {&commands.run_flags, &commands.compare_flags}) {
        try {
            const tewb::RunConfig config = tewb::cli::config_from_flags(*flags);
            tewb::cli::check_fp8_flags_apply(*flags, config);
            tewb::validate(config);
            tewb::cli::repeat_from_flags(*flags);
        } catch (const tewb::ConfigError&) {
        }
    }
    try {
        // The sweep's lists and its plan on a machine without a GPU (no training: plan only).
        tewb::SweepSpec spec = tewb::cli::sweep_from_flags(commands.sweep_flags, commands.sweep_precisions);
        tewb::DeviceInfo cpu;
        cpu.gpu_error = "fuzz: no GPU";
        (void)tewb::plan_sweep(spec, cpu);
    } catch (const tewb::ConfigError&) {
    }
    return 0;
}
