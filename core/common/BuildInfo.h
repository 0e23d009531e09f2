#pragma once

#include <string>

namespace tewb {

struct BuildInfo {
    std::string version;     // te-workbench version
    std::string commit;      // git commit the build was configured from ("-dirty" when modified)
    std::string build_type;  // CMake build type
    std::string compiler;
    bool cuda_kernels = false;  // built with the CUDA kernels library
};

const BuildInfo& build_info();

}  // namespace tewb
