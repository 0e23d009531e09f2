#include <string>

#include "amax/current_scale_target.h"
#include "common/arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

CurrentScaleCall checked_current_scale_target(const char* call, const CurrentScaleTarget& target, const Tensor& out,
                                              const char* out_name, std::initializer_list<std::pair<Tensor, const char*>> tensors,
                                              const Workspace& workspace) {
    if (out.data == nullptr && out.numel() > 0) {
        fail(call, std::string(out_name) + " is null (the current-scale form keeps the output it scales)");
    }
    const CurrentScaleCall t = current_scale_targets(call, target.numerator, target.scale, target.scale_inv, target.staging);
    const std::pair<const float*, const char*> targets[] = {{t.scale, "scale"}, {t.scale_inv, "scale_inv"}, {t.staging, "staging"}};
    for (const auto& [p, target_name] : targets) {
        if (p == nullptr) continue;
        if (overlap(p, sizeof(float), out.data, tensor_bytes(out))) fail(call, std::string(target_name) + " lies in " + out_name);
        for (const auto& [tensor, name] : tensors) {
            if (overlap(p, sizeof(float), tensor.data, tensor_bytes(tensor))) fail(call, std::string(target_name) + " lies in " + name);
        }
        if (overlap(p, sizeof(float), workspace.data, workspace.bytes)) fail(call, "a current-scaling target lies in the workspace");
    }
    if (t.staging != nullptr && (t.staging == t.scale || t.staging == t.scale_inv)) {
        fail(call, "staging is also the scale or scale_inv; allowed: a float of its own");
    }
    return t;
}

}  // namespace tewb::kernels::detail
