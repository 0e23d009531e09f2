#pragma once

#include <ATen/autocast_mode.h>

namespace tewb {

// BF16 compute with FP32 master weights: parameters and optimizer state stay float32; inside the scope
// LibTorch's autocast runs matmuls (linear, attention) in BF16 on BF16 copies of the weights, and keeps
// LayerNorm, softmax and the loss in float32. The weight copies are cached for the scope and dropped at
// the outermost exit, as torch.autocast does in Python, so each weight is cast once per forward.
class AutocastScope {
public:
    AutocastScope(bool enabled, at::DeviceType device) : enabled_(enabled), device_(device) {
        if (!enabled_) {
            return;
        }
        previous_enabled_ = at::autocast::is_autocast_enabled(device_);
        previous_dtype_ = at::autocast::get_autocast_dtype(device_);
        at::autocast::set_autocast_dtype(device_, at::kBFloat16);
        at::autocast::set_autocast_enabled(device_, true);
        at::autocast::increment_nesting();
    }
    ~AutocastScope() {
        if (!enabled_) {
            return;
        }
        if (at::autocast::decrement_nesting() == 0) {
            at::autocast::clear_cache();
        }
        at::autocast::set_autocast_enabled(device_, previous_enabled_);
        at::autocast::set_autocast_dtype(device_, previous_dtype_);
    }
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    bool enabled_;
    at::DeviceType device_;
    bool previous_enabled_ = false;
    at::ScalarType previous_dtype_ = at::kBFloat16;
};

}  // namespace tewb
