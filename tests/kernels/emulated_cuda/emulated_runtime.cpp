// The emulated CUDA's state and its block scheduler (emulated_cuda.h, cuda_runtime_api.h), and the kernels library's
// CUDA error helpers.
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TEWB_EMULATED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEWB_EMULATED_ASAN 1
#endif
#endif
#ifndef TEWB_EMULATED_ASAN
#define TEWB_EMULATED_ASAN 0
#endif
#if TEWB_EMULATED_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include "common/host_numbers.h"
#include "cuda_fp16.h"
#include "cuda_fp8.h"
#include "cuda_runtime_api.h"
#include "cublasLt.h"

// CUDA's conversion, as the host twins write it (common/host_numbers.h; tst_host_numbers holds it to CUDA's, bit for bit).
std::uint8_t __nv_cvt_float_to_fp8(float v, __nv_saturation_t, __nv_fp8_interpretation_t type) {
    return tewb::kernels::detail::float_to_fp8(v, type == __NV_E4M3 ? tewb::kernels::Fp8Type::E4M3 : tewb::kernels::Fp8Type::E5M2);
}
// Referenced by common/elementwise.cuh's loads and stores of a dtype the emulated kernels never take.
float __half2float(__half) {
    std::fprintf(stderr, "emulated CUDA: float16 is not emulated\n");
    std::abort();
}
__half __float2half(float) {
    std::fprintf(stderr, "emulated CUDA: float16 is not emulated\n");
    std::abort();
}

EmulatedDim3 threadIdx, blockIdx;
EmulatedDim3 blockDim, gridDim;

namespace emulated {

std::uint64_t* shuffle_slots = nullptr;
unsigned char* dynamic_shared = nullptr;

namespace {
std::mutex limits_mutex;
std::map<const void*, int> limits;
}  // namespace

cudaError_t set_max_dynamic_shared(const void* kernel, int bytes) {
    const std::lock_guard<std::mutex> lock(limits_mutex);
    limits[kernel] = bytes;
    return cudaSuccess;
}

int max_dynamic_shared(const void* kernel) {
    const std::lock_guard<std::mutex> lock(limits_mutex);
    const auto found = limits.find(kernel);
    return found == limits.end() ? 48 * 1024 : found->second;
}

// The block's threads are fibers on the launching thread (ucontext): one runs until it waits at a barrier or ends,
// then the next ready one in line runs. The last to arrive at a barrier puts the waiting ones back in line, in the
// order they arrived, and goes on (so after a barrier the order is the one before it, rotated by one). A block starts
// its threads in ascending order or in descending order, alternately by launch and by block, so a missing barrier
// shows whichever thread writes first. The switches are plain function calls and a signal-mask call: a block of
// std::threads woke every thread through the kernel's scheduler at every barrier (tst_kernels_emulated: 92 s of system
// time and 113 million context switches in a 73 s run).
namespace {

// The deepest emulated kernel used 5 KiB of its stack in the default build and 12 KiB under ASan (2026-12-07; the
// attention's wmma tiles are 1 KiB each); room besides for a sanitizer's report from inside a fiber. Below each stack
// a guard region no single frame steps over faults where a deeper one would overflow.
constexpr std::size_t kStackBytes = 256 * 1024;
constexpr std::size_t kGuardBytes = 64 * 1024;

enum class Waiting { nothing, block, warp };

struct Fiber {
    ucontext_t context{};
    unsigned char* stack = nullptr;  // kStackBytes, the lowest address
    void* fake_stack = nullptr;      // ASan's, while the fiber is switched out
    Waiting waiting = Waiting::nothing;
    bool finished = false;
};

struct Barrier {
    unsigned arrived = 0;
    std::vector<unsigned> waiting;
};

struct Scheduler {
    // Grows to the largest block launched, the stacks kept. Never moved: a saved x86-64 context points into itself.
    std::vector<std::unique_ptr<Fiber>> fibers;
    unsigned threads = 0;         // of the running block
    std::vector<unsigned> ready;  // the line: a ring of `threads` places from `head` (a thread is in it once at most)
    std::size_t head = 0;
    std::size_t queued = 0;
    unsigned running = 0;
    unsigned finished = 0;
    unsigned launches = 0;  // the descending order's parity with the block's index
    Barrier block;
    std::vector<Barrier> warps;
    std::vector<std::uint64_t> slots;
    ucontext_t launcher{};
    void* launcher_fake_stack = nullptr;
    bool from_launcher = false;  // the fiber about to start was switched to by the launcher (ASan: its stack's bounds)
    const void* launcher_stack_bottom = nullptr;
    std::size_t launcher_stack_size = 0;
    void (*body)(const void*) = nullptr;
    const void* context = nullptr;
};

Scheduler scheduler;

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "emulated launch: %s\n", what);
    std::abort();
}

// ASan must be told when the stack changes (its fake stacks and the bounds it checks against).
void start_switch(void** fake_stack_save, const void* bottom, std::size_t size) {
#if TEWB_EMULATED_ASAN
    __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
    (void)fake_stack_save, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake_stack_save, const void** bottom_old = nullptr, std::size_t* size_old = nullptr) {
#if TEWB_EMULATED_ASAN
    __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
    (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

void enqueue(unsigned t) {
    Scheduler& s = scheduler;
    s.ready[(s.head + s.queued++) % s.threads] = t;
}

unsigned dequeue() {
    Scheduler& s = scheduler;
    const unsigned t = s.ready[s.head];
    s.head = (s.head + 1) % s.threads;
    --s.queued;
    return t;
}

void set_thread_index(unsigned t) {
    scheduler.running = t;
    threadIdx = {t % blockDim.x, t / blockDim.x, 0};
}

// Leaves the running fiber (which has ended, or waits and is on a barrier's list) for the next ready one, or for the
// launcher when none is ready; returns when the fiber is switched back to.
void switch_away() {
    Scheduler& s = scheduler;
    Fiber& from = *s.fibers[s.running];
    void** save = from.finished ? nullptr : &from.fake_stack;
    if (s.queued == 0) {
        start_switch(save, s.launcher_stack_bottom, s.launcher_stack_size);
        swapcontext(&from.context, &s.launcher);
    } else {
        const unsigned next = dequeue();
        Fiber& to = *s.fibers[next];
        set_thread_index(next);
        start_switch(save, to.stack, kStackBytes);
        swapcontext(&from.context, &to.context);
    }
    finish_switch(from.fake_stack);
}

// noexcept: an exception has nowhere to go past a fiber's first frame (no kernel throws).
void fiber_main() noexcept {
    Scheduler& s = scheduler;
    if (s.from_launcher) {
        s.from_launcher = false;
        finish_switch(nullptr, &s.launcher_stack_bottom, &s.launcher_stack_size);
    } else {
        finish_switch(nullptr);
    }
    scheduler.body(scheduler.context);
    Fiber& self = *scheduler.fibers[scheduler.running];
    self.finished = true;
    ++scheduler.finished;
    switch_away();
    fail("a finished thread was switched back to");
}

void wait(Barrier& barrier, unsigned count, Waiting what) {
    Scheduler& s = scheduler;
    if (++barrier.arrived == count) {
        barrier.arrived = 0;
        for (const unsigned t : barrier.waiting) {
            s.fibers[t]->waiting = Waiting::nothing;
            enqueue(t);
        }
        barrier.waiting.clear();
        return;
    }
    s.fibers[s.running]->waiting = what;
    barrier.waiting.push_back(s.running);
    switch_away();
}

void ensure_fibers(unsigned threads) {
    Scheduler& s = scheduler;
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    while (s.fibers.size() < threads) {
        const std::size_t guard = (kGuardBytes + page - 1) / page * page;
        void* mapping =
            mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mapping == MAP_FAILED) fail("no memory for a fiber's stack");
        if (mprotect(mapping, guard, PROT_NONE) != 0) fail("could not protect a fiber stack's guard region");
        auto fiber = std::make_unique<Fiber>();
        fiber->stack = static_cast<unsigned char*>(mapping) + guard;
        if (getcontext(&fiber->context) != 0) fail("getcontext failed");
        s.fibers.push_back(std::move(fiber));
    }
}

// The threads that ended and those left waiting, by what they wait for: the first few of each.
[[noreturn]] void report_stuck_block(unsigned block_index, unsigned blocks) {
    const Scheduler& s = scheduler;
    std::fprintf(stderr,
                 "emulated launch: block %u of %u cannot go on: %u of its %u threads ended while others wait at a "
                 "barrier (a return before __syncthreads, or a shuffle or __syncwarp in a divergent branch)\n",
                 block_index, blocks, s.finished, s.threads);
    const auto list = [&](const char* what, auto keep) {
        unsigned count = 0;
        for (unsigned t = 0; t < s.threads; ++t) {
            if (!keep(*s.fibers[t])) continue;
            if (count < 8) std::fprintf(stderr, "%s%u", count == 0 ? what : ", ", t);
            ++count;
        }
        if (count > 8) std::fprintf(stderr, " and %u more", count - 8);
        if (count > 0) std::fprintf(stderr, "\n");
    };
    list("  ended: threads ", [](const Fiber& f) { return f.finished; });
    list("  waiting at __syncthreads: threads ", [](const Fiber& f) { return f.waiting == Waiting::block; });
    list("  waiting for their warp: threads ", [](const Fiber& f) { return f.waiting == Waiting::warp; });
    std::abort();
}

}  // namespace

void sync_block() {
    wait(scheduler.block, scheduler.threads, Waiting::block);
}

void sync_warp(unsigned warp) {
    wait(scheduler.warps[warp], 32, Waiting::warp);
}

void run_blocks(unsigned blocks, unsigned threads, std::size_t shared_bytes, void (*body)(const void*), const void* context) {
    Scheduler& s = scheduler;
    if (s.threads != 0) fail("a launch from inside a running block");
    ensure_fibers(threads);
    s.threads = threads;
    s.body = body;
    s.context = context;
    s.warps.assign(threads / 32, Barrier{});
    s.slots.assign(threads, 0);
    shuffle_slots = s.slots.data();
    s.ready.assign(threads, 0);
    struct Free {
        void operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t(128)); }
    };
    const std::unique_ptr<unsigned char[], Free> shared(
        static_cast<unsigned char*>(::operator new[](shared_bytes, std::align_val_t(128))));
    dynamic_shared = shared.get();
    const unsigned launch = s.launches++;
    for (unsigned block_index = 0; block_index < blocks; ++block_index) {
        if (shared_bytes > 0) std::memset(shared.get(), 0xff, shared_bytes);
        blockIdx = {block_index % gridDim.x, block_index / gridDim.x, 0};
        s.head = 0;
        s.queued = 0;
        s.finished = 0;
        const bool descending = (launch + block_index) % 2 == 1;
        for (unsigned i = 0; i < threads; ++i) {
            const unsigned t = descending ? threads - 1 - i : i;
            Fiber& fiber = *s.fibers[t];
            fiber.context.uc_stack.ss_sp = fiber.stack;
            fiber.context.uc_stack.ss_size = kStackBytes;
            fiber.context.uc_link = &s.launcher;
            fiber.finished = false;
            fiber.waiting = Waiting::nothing;
            makecontext(&fiber.context, fiber_main, 0);
            // ASan's swapcontext clears the shadow of the stack it switches to, live frames' redzones included (so an
            // overflow of a kernel's local array past a barrier went unreported); the switches tell ASan instead.
            fiber.context.uc_stack.ss_sp = nullptr;
            fiber.context.uc_stack.ss_size = 0;
            enqueue(t);
        }
        const unsigned first = dequeue();
        s.from_launcher = true;
        set_thread_index(first);
        start_switch(&s.launcher_fake_stack, s.fibers[first]->stack, kStackBytes);
        swapcontext(&s.launcher, &s.fibers[first]->context);
        finish_switch(s.launcher_fake_stack);
        if (s.finished != threads) report_stuck_block(block_index, blocks);
    }
    shuffle_slots = nullptr;
    dynamic_shared = nullptr;
    s.threads = 0;
}

}  // namespace emulated

namespace tewb::kernels::detail {

void check_cuda(cudaError_t status, std::string_view call, std::string_view operation) {
    if (status == cudaSuccess) return;
    std::fprintf(stderr, "%.*s: %.*s failed\n", static_cast<int>(call.size()), call.data(), static_cast<int>(operation.size()),
                 operation.data());
    std::abort();
}

void check_last_launch(std::string_view) {}

}  // namespace tewb::kernels::detail
