#include "core/ledger/LaunchWork.h"

namespace tewb {

const char* to_string(LaunchWork work) {
    switch (work) {
        case LaunchWork::Kernel: return "kernel";
        case LaunchWork::Helper: return "helper";
        case LaunchWork::Memset: return "memset";
        case LaunchWork::Copy: return "copy";
    }
    return "kernel";
}

std::optional<LaunchWork> launch_work_from(std::string_view text) {
    for (LaunchWork work : {LaunchWork::Kernel, LaunchWork::Helper, LaunchWork::Memset, LaunchWork::Copy}) {
        if (text == to_string(work)) return work;
    }
    return std::nullopt;
}

}  // namespace tewb
