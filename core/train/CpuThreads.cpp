#include "core/train/CpuThreads.h"

#include <algorithm>
#include <thread>

#include <ATen/Parallel.h>

namespace tewb {

void set_cpu_threads(int threads) {
    at::set_num_threads(std::max(1, threads));
}

int cpu_threads() {
    return at::get_num_threads();
}

int hardware_threads() {
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace tewb
