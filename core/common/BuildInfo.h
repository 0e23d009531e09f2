#pragma once

#include <string>
#include <string_view>

namespace tewb {

struct BuildInfo {
    std::string version;     // te-workbench version
    std::string commit;      // git commit the build was configured from ("-dirty" when modified)
    std::string build_type;  // CMake build type
    std::string compiler;
    bool cuda_kernels = false;  // built with the CUDA kernels library
};

const BuildInfo& build_info();

// What `--version` prints for a program of this build: "te-bench 0.1.0 (git 1a2b3c4d5e6f, Release)".
std::string version_text(std::string_view program);

}  // namespace tewb
