#include "core/fp8/Fp8Scope.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <vector>

#include "core/fp8/Fp8State.h"

namespace tewb {

namespace {

struct ScopeStack {
    std::vector<std::optional<Fp8ScopeSettings>> frames;  // nullopt: a disabled scope
    std::vector<std::shared_ptr<Fp8Context>> enlisted;
};

thread_local ScopeStack t_scopes;

}  // namespace

Fp8Scope::Fp8Scope(bool enabled, const Fp8ScopeSettings& settings) : uncaught_exceptions_(std::uncaught_exceptions()) {
    t_scopes.frames.push_back(enabled ? std::optional<Fp8ScopeSettings>(settings) : std::nullopt);
}

Fp8Scope::~Fp8Scope() noexcept(false) {
    t_scopes.frames.pop_back();
    if (!t_scopes.frames.empty()) {
        return;
    }
    std::vector<std::shared_ptr<Fp8Context>> contexts;
    contexts.swap(t_scopes.enlisted);
    if (std::uncaught_exceptions() > uncaught_exceptions_) {
        return;
    }
    for (const std::shared_ptr<Fp8Context>& context : contexts) {
        context->update(Fp8Pass::Forward);
    }
}

const Fp8ScopeSettings* Fp8Scope::active() {
    if (t_scopes.frames.empty() || !t_scopes.frames.back()) {
        return nullptr;
    }
    return &*t_scopes.frames.back();
}

void Fp8Scope::enlist(const std::shared_ptr<Fp8Context>& context) {
    if (t_scopes.frames.empty()) {
        return;
    }
    if (std::find(t_scopes.enlisted.begin(), t_scopes.enlisted.end(), context) == t_scopes.enlisted.end()) {
        t_scopes.enlisted.push_back(context);
    }
}

}  // namespace tewb
