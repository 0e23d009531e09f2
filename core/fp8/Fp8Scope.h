#pragma once

#include <memory>

#include "core/fp8/Recipe.h"

namespace tewb {

class Fp8Context;

struct Fp8ScopeSettings {
    Fp8Recipe recipe;
    bool inspect = false;  // count saturated and underflowed elements per cast (costs a pass per cast)
};

// The role of Transformer Engine's fp8_autocast: inside an enabled scope the TE-style modules run their
// GEMMs in FP8 under the scope's recipe. When the outermost scope exits, every FP8 state that ran inside
// it updates its forward slots once (nested scopes do not update). A scope left by an exception does not
// update: the step did not complete. Per thread, like autocast.
class Fp8Scope {
public:
    explicit Fp8Scope(bool enabled, const Fp8ScopeSettings& settings = {Fp8Recipe::seed_defaults(), false});
    ~Fp8Scope() noexcept(false);  // the update may fail (e.g. out of memory): that reaches the caller
    Fp8Scope(const Fp8Scope&) = delete;
    Fp8Scope& operator=(const Fp8Scope&) = delete;

    // The innermost scope's settings when FP8 is on here; nullptr outside a scope or in a disabled one.
    static const Fp8ScopeSettings* active();
    // Called by a module that ran in FP8 inside the scope.
    static void enlist(const std::shared_ptr<Fp8Context>& context);

private:
    int uncaught_exceptions_;
};

}  // namespace tewb
