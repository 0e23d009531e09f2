#pragma once

#include <string>

#include "core/config/CudaGraphPlan.h"
#include "core/config/RunConfig.h"
#include "core/config/RunFacts.h"
#include "core/device/DeviceInfo.h"

namespace tewb {

// Everything a run's settings decide on this machine, decided once (resolve_run) and then only read: by the
// trainer's loop, the record's header and the rank that trains it. Torch-free, so the window can hold one.
struct ResolvedRun {
    RunConfig config;            // resolve()'s: Auto device and precision fixed, a name, today's limits checked
    RunFacts facts;              // device kind, precision, compute dtype, te implementation, native block GEMMs,
                                 // FP8 GEMMs emulated
    int device_index = 0;        // the GPU this process trains on: a rank's LOCAL_RANK, else 0 (unused on the CPU)
    MemoryScope scope = MemoryScope::WholeJob;  // whose memory the checks count: the whole job, or this rank's
    GraphDecision graph;         // whether the timed steps replay one CUDA graph, and why (this build, this process)

    bool cuda() const { return facts.device == DeviceKind::Cuda; }
    int ranks() const { return config.dist.world_size(); }
    // As the record names it: "cuda:<device_index>" or "cpu".
    std::string device_name() const;
};

// Where a run trains: its whole job on this machine (a plain run, or a job before it starts), or one rank of
// a job, which counts only its own memory and trains on its LOCAL_RANK's GPU.
struct RunPlace {
    MemoryScope scope = MemoryScope::WholeJob;
    int device_index = 0;

    static RunPlace rank(int local_rank) { return {MemoryScope::OneRank, local_rank}; }
};

// resolve() (ConfigError for what cannot run here, with its words) and every decision that follows from it.
ResolvedRun resolve_run(const RunConfig& config, const DeviceInfo& device, const RunPlace& place = {});

}  // namespace tewb
