#pragma once

// What the host-kernel suites check around a call: the launches it counts, and a refusal with a clear message.
#include <QtTest>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

namespace tewb::test {

// The launches `call` counts (tewb_kernels/launch_count.h).
inline std::uint64_t launches_of(const std::function<void()>& call) {
    const std::uint64_t before = kernels::launch_count();
    call();
    return kernels::launch_count() - before;
}

// The call throws KernelError whose message holds every fragment, and counts no launch.
inline void expect_refusal(const std::function<void()>& call, const std::vector<std::string>& fragments) {
    const std::uint64_t before = kernels::launch_count();
    try {
        call();
    } catch (const kernels::KernelError& e) {
        const std::string message = e.what();
        for (const std::string& fragment : fragments) {
            QVERIFY2(message.find(fragment) != std::string::npos, (message + " lacks: " + fragment).c_str());
        }
        QCOMPARE(kernels::launch_count(), before);
        return;
    }
    QFAIL(("no KernelError; expected one with: " + fragments.front()).c_str());
}

}  // namespace tewb::test
