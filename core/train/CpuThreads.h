#pragma once

namespace tewb {

// LibTorch's intra-op threads for CPU work started from the calling thread (OpenMP keeps this setting
// per thread, so call it on the thread that trains). Values below 1 are treated as 1.
void set_cpu_threads(int threads);
int cpu_threads();
// Hardware threads of this machine (at least 1).
int hardware_threads();

}  // namespace tewb
