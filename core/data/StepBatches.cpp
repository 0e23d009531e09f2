#include "core/data/StepBatches.h"

#include <algorithm>

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include "core/data/SyntheticData.h"
#include "core/data/TokenBatches.h"
#include "core/data/TokenFile.h"

namespace tewb {

namespace {

// The synthetic pool is capped so huge configurations do not spend memory on data (the model learns the corpus
// either way).
constexpr int kMaxPoolBatches = 64;
constexpr std::int64_t kMaxPoolBytes = 256LL << 20;

at::Tensor synthetic_pool(const RunConfig& c, const c10::Device& device, int rank) {
    const std::int64_t global = static_cast<std::int64_t>(c.batch) * c.dist.world_size();
    const std::int64_t row = c.model.seq + 1;
    const std::int64_t batch_bytes = global * row * 8;
    const int batches = static_cast<int>(std::max<std::int64_t>(
        1, std::min<std::int64_t>({c.total_steps(), kMaxPoolBatches, kMaxPoolBytes / std::max<std::int64_t>(batch_bytes, 1)})));
    std::vector<std::int64_t> tokens =
        make_synthetic_tokens({c.model.vocab, static_cast<int>(batches * global), static_cast<int>(row), c.seed});
    const at::Tensor cpu = at::from_blob(tokens.data(), {batches, global, row}, at::kLong).narrow(1, rank * c.batch, c.batch).clone();
    return cpu.to(device);
}

// Host memory the device copies from: pinned on a GPU, so the copy need not wait for the host.
at::Tensor host_tokens(std::int64_t rows, std::int64_t window, const c10::Device& device) {
    return at::empty({rows, window}, at::TensorOptions().dtype(at::kLong).pinned_memory(device.is_cuda()));
}

}  // namespace

StepBatches::StepBatches(const RunConfig& config, const TokenFile* file, const c10::Device& device, int rank)
    : config_(config), file_(file), device_(device), rank_(rank) {
    if (file_ == nullptr) {
        pool_ = synthetic_pool(config_, device_, rank_);
        return;
    }
    const std::int64_t window = config_.model.seq + 1;
    const std::vector<std::int64_t> offsets = validation_offsets(file_->train_tokens(), file_->tokens(), window);
    for (std::size_t first = 0; first < offsets.size(); first += static_cast<std::size_t>(config_.batch)) {
        const std::vector<std::int64_t> chunk(offsets.begin() + static_cast<std::ptrdiff_t>(first),
                                              offsets.begin() + static_cast<std::ptrdiff_t>(std::min(offsets.size(), first + config_.batch)));
        at::Tensor host = host_tokens(static_cast<std::int64_t>(chunk.size()), window, device_);
        read_windows(*file_, chunk, window, host.data_ptr<std::int64_t>());
        validation_.push_back(host.to(device_));
    }
}

at::Tensor StepBatches::batch(int step) const {
    if (file_ == nullptr) return pool_[step % pool_.size(0)];
    const std::int64_t window = config_.model.seq + 1;
    const std::int64_t global = static_cast<std::int64_t>(config_.batch) * config_.dist.world_size();
    std::vector<std::int64_t> offsets = batch_offsets(config_.seed, step, file_->train_tokens(), window, global);
    offsets.erase(offsets.begin() + static_cast<std::ptrdiff_t>(rank_ + 1) * config_.batch, offsets.end());
    offsets.erase(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(rank_) * config_.batch);
    at::Tensor host = host_tokens(config_.batch, window, device_);
    read_windows(*file_, offsets, window, host.data_ptr<std::int64_t>());
    return host.to(device_, /*non_blocking=*/true);
}

}  // namespace tewb
