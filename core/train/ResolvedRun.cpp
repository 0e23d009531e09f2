#include "core/train/ResolvedRun.h"

#include "core/train/StepGraph.h"

namespace tewb {

std::string ResolvedRun::device_name() const {
    return cuda() ? "cuda:" + std::to_string(device_index) : std::string("cpu");
}

ResolvedRun resolve_run(const RunConfig& config, const DeviceInfo& device, const RunPlace& place) {
    ResolvedRun run;
    run.config = resolve(config, device, place.scope);
    run.facts = run_facts(run.config, device);
    run.device_index = run.cuda() ? place.device_index : 0;
    run.scope = place.scope;
    run.graph = decide_cuda_graph(run.config);
    return run;
}

}  // namespace tewb
