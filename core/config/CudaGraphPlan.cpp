#include "core/config/CudaGraphPlan.h"

#include <cstdlib>
#include <string_view>

namespace tewb {

GraphDecision decide_cuda_graph(const RunConfig& resolved, bool cuda_build, bool launch_blocking) {
    if (resolved.device != DeviceKind::Cuda) return {false, "no CUDA graph: CPU runs are eager"};
    if (!resolved.cuda_graph) return {false, "no CUDA graph: --cuda-graph off"};
    if (!cuda_build) return {false, "no CUDA graph: this build's LibTorch has no CUDA"};
    if (launch_blocking) {
        return {false, "no CUDA graph: CUDA_LAUNCH_BLOCKING is set (a debugging setting; every launch waits), so the steps ran eagerly"};
    }
    if (resolved.warmup < 1) {
        return {false, "no CUDA graph: the capture needs at least one eager warm-up step first (--warmup 0)"};
    }
    // A calibrating first step casts with scales from its own amaxes, not through the fused delayed-scaling
    // kernels: the first step of the path the graph replays must run eagerly before the capture, or the
    // kernels' and GEMM plans' first use (allocations, cuBLASLt's heuristic) would happen inside it.
    const bool calibrating = resolved.backend == Backend::Te && resolved.precision == Precision::Fp8 &&
                             resolved.fp8.scaling == ScalingKind::Delayed && resolved.fp8.calibrate_first_step;
    if (calibrating && resolved.warmup < 2) {
        return {false, "no CUDA graph: with first-step calibration the capture needs two eager warm-up steps (the calibrating "
                       "one and a full fused step; --warmup " + std::to_string(resolved.warmup) + ")"};
    }
    if (resolved.backend == Backend::Te && resolved.precision == Precision::Fp8 && is_microscaling(resolved.fp8.scaling)) {
        return {false, "no CUDA graph: the microscaling recipes are emulated, and their stochastic rounding draws from a "
                       "random stream whose position the host advances each cast (a replay would repeat one step's bits)"};
    }
    if (resolved.iters < 1) return {false, "no CUDA graph: no timed steps to replay (--iters 0)"};
    if (resolved.dist.enabled()) {
        return {false, "no CUDA graph: data-parallel steps run eagerly (the gradient buckets start their all-reduce from "
                       "autograd hooks, host logic a graph replay would skip)"};
    }
    return {true, "one CUDA graph per step, captured after " + std::to_string(resolved.warmup) + " eager warm-up step" +
                      (resolved.warmup == 1 ? "" : "s")};
}

GraphDecision decide_cuda_graph(const RunConfig& resolved, bool cuda_build) {
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    const bool launch_blocking = blocking != nullptr && *blocking != '\0' && std::string_view(blocking) != "0";
    return decide_cuda_graph(resolved, cuda_build, launch_blocking);
}

}  // namespace tewb
