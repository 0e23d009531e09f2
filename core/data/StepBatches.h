#pragma once

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "core/config/RunConfig.h"

namespace tewb {

class TokenFile;

// Where each training step's batch comes from, [batch, seq + 1] int64 on the run's device (inputs are its first
// seq columns, targets its last seq). Every step's batch is one global batch of batch × ranks sequences; rank r
// trains on its slice [r · batch, (r + 1) · batch), so a job of N ranks sees exactly the data of one process with
// N times the batch, and a plain run is rank 0 of 1.
// - Synthetic tokens (no file): a pool of distinct batches made once on the device, which the steps cycle through.
// - A token file: each step's sequences drawn at seeded random offsets of the training part (TokenBatches.h),
//   read from the mapping into pinned memory on a GPU and copied without waiting, so the copy queues behind the
//   step before it instead of stalling the host.
class StepBatches {
public:
    // `file` (may be null: synthetic) outlives this.
    StepBatches(const RunConfig& config, const TokenFile* file, const c10::Device& device, int rank);

    at::Tensor batch(int step) const;  // step 0-based; any step, also past the run's last (a profiled step)
    // The validation set (validation_offsets) in chunks of at most `batch` sequences on the device; empty without
    // a file. Every rank holds all of it.
    const std::vector<at::Tensor>& validation() const { return validation_; }

private:
    const RunConfig& config_;
    const TokenFile* file_;
    c10::Device device_;
    int rank_;
    at::Tensor pool_;  // synthetic: [batches, batch, seq + 1]
    std::vector<at::Tensor> validation_;
};

}  // namespace tewb
