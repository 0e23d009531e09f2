// CUDA sources run on the CPU (tests/kernels/emulated_cuda: a block of fibers, blocks one after another) against
// their host twins on the same inputs:
//   - kernels/activation/activation.cu's GELU backward (the tiled kernel: with the FP8 output and its transposed copy
//     staged through shared memory, with the FP8 output alone, without one), with and without dx and dbias, float32 and
//     bfloat16, aligned and not, at shapes around the tiles' edges (40 and 65 rows: chunks of 24 rows, the last one short and, at 65, ragged)
//     and past 32768 rows (a chunk of two tiles); its forward on the same x;
//   - kernels/amax/amax.cu (one launch, the scratch word cleared for the next call);
//   - kernels/normalization: LayerNorm's and RMSNorm's forward (FP8, with and without the transposed copy) and backward
//     (with dresidual; LayerNorm's hand-over forms cast_dbias and quantize_dbias), on the fast kernels (1, 4 and 8 warps
//     a row, float32 and bfloat16) and the plain ones (ragged or unaligned rows), fewer and more than 256 partial rows;
//   - kernels/cast (cast.cu, cast_dbias.cu): the plain cast, cast + transpose with and without dbias, cast_dbias, on the same x; the
//     stacked casts of qkv's gradient from three strided parts (stacked_cast_dbias, stacked_cast_transpose_dbias_to_fp8);
//   - kernels/activation/swiglu.cu: SwiGLU's forward and backward with their FP8 forms, with and without the transposed copy;
//   - kernels/embedding/embedding.cu: the token + position embedding, forward and backward (dpositions and dtable);
//   - kernels/loss/loss.cu: the cross-entropy forward, backward and forward with the gradient in place;
//   - kernels/attention/rotary.cu: the rotary embeddings, forward and inverse, their amax hand-off, and rotary_quantize
//     (the tiled kernel writing y, its FP8 bytes and their transposed copy; the two-launch path elsewhere);
//   - the amax hand-off (*_current_scale: LayerNorm's and RMSNorm's forwards, LayerNorm's backward with dx's sums, RMSNorm's
//     backward, GELU's forward and backward): each side called twice, the second time with values a thousand times smaller, so a scratch
//     word the first launch left set shows; the scale, scale_inv and staging entry bit for bit.
// Both sides compute in float32 with the same libm and no fused multiply-adds (the emulation's rsqrtf is 1 / sqrt,
// as the twins'), so every output must agree bit for bit: the high-precision outputs, the FP8 bytes and their
// transposed copy, the statistics, every parameter and bias gradient (the partial sums in the kernels' order) and
// amax. Outputs start as poison and are guarded on both sides, so an element never written or a write outside shows.
// What it cannot check: speed, the GPU's own rounding (nvcc's fused multiply-adds, rsqrtf), real warp scheduling.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/embedding.h"
#include "tewb_kernels/loss.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/rotary.h"

using namespace tewb::kernels;
using detail::bf16_to_float;
using detail::float_to_bf16;

namespace {

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kPoison = 0xa5;

// `bytes` bytes starting `offset` bytes past a 64-byte boundary, with kGuard poison bytes on each side.
struct Buffer {
    std::vector<std::uint8_t> store;
    std::size_t first;
    std::size_t bytes;
    Buffer(std::size_t n, std::size_t offset) : store(n + offset + 2 * kGuard + 64, kPoison), bytes(n) {
        const auto address = reinterpret_cast<std::uintptr_t>(store.data());
        first = (64 - address % 64) % 64 + kGuard + offset;
    }
    std::uint8_t* data() { return store.data() + first; }
    bool guards_intact() const {
        for (std::size_t i = 0; i < kGuard; ++i) {
            if (store[first - 1 - i] != kPoison || store[first + bytes + i] != kPoison) return false;
        }
        return true;
    }
    bool same_as(const Buffer& other) const {
        const std::uint8_t* a = store.data() + first;
        const std::uint8_t* b = other.store.data() + other.first;
        for (std::size_t i = 0; i < bytes; ++i) {
            if (a[i] != b[i]) {
                std::printf("  first difference at byte %zu of %zu: %02x against %02x\n", i, bytes, a[i], b[i]);
                return false;
            }
        }
        return true;
    }
};

// Current scaling's target in f's three floats (scale, scale_inv, staging), as the *_current_scale forms take it.
CurrentScaleTarget target_in(float* f, float numerator) {
    CurrentScaleTarget t;
    t.numerator = numerator;
    t.scale = input(&f[0], DType::Float32, 1, 1);
    t.scale_inv = input(&f[1], DType::Float32, 1, 1);
    t.staging = input(&f[2], DType::Float32, 1, 1);
    return t;
}

// Element i of a float32 or bfloat16 buffer set to v (rounded to nearest even for bfloat16).
void put(Buffer& b, DType dtype, std::size_t i, float v) {
    if (dtype == DType::Float32) {
        std::memcpy(b.data() + 4 * i, &v, 4);
    } else {
        const std::uint16_t h = float_to_bf16(v);
        std::memcpy(b.data() + 2 * i, &h, 2);
    }
}

struct Case {
    DType dtype;
    std::size_t rows, cols;
    bool dx, transposed, dbias;
    DType dbias_dtype;
    std::size_t offset;    // bytes every input and output starts past 64-byte alignment (the unvectorised paths)
    std::size_t q_offset;  // bytes the FP8 outputs start past it (q_t's pieces not 8-byte aligned)
    bool fp8 = true;       // false: no FP8 output (te BF16's GELU backward: dx and dbias only)
};

int failures = 0;
int checks = 0;

std::string describe(const Case& c) {
    char text[200];
    std::snprintf(text, sizeof text, "%s %zu x %zu, dx %d, fp8 %d, transposed %d, dbias %d (%s), offset %zu, fp8 offset %zu",
                  c.dtype == DType::Float32 ? "float32" : "bfloat16", c.rows, c.cols, c.dx, c.fp8, c.transposed, c.dbias,
                  c.dbias_dtype == DType::Float32 ? "float32" : "bfloat16", c.offset, c.q_offset);
    return text;
}

void expect(bool ok, const Case& c, const char* what) {
    ++checks;
    if (ok) return;
    ++failures;
    std::printf("FAIL (%s): %s\n", describe(c).c_str(), what);
}

// One side's outputs.
struct Outputs {
    Buffer dx, q, q_t, dbias, workspace;
    float amax = 0.0f;
    Outputs(const Case& c, std::size_t element)
        : dx(c.rows * c.cols * element, c.offset),
          q(c.rows * c.cols, c.q_offset),
          q_t(c.rows * c.cols, c.q_offset),
          dbias(c.cols * (c.dbias_dtype == DType::Float32 ? 4 : 2), c.offset),
          workspace(gelu_backward_workspace_bytes(c.rows, c.cols), 0) {}
};

void run(const Case& c, std::mt19937& rng) {
    const std::size_t element = c.dtype == DType::Float32 ? 4 : 2;
    const std::size_t n = c.rows * c.cols;
    Buffer dy(n * element, c.offset), x(n * element, c.offset);
    std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
    for (std::size_t i = 0; i < n; ++i) {
        const float a = uniform(rng), b = uniform(rng) / 4;
        put(x, c.dtype, i, a);
        put(dy, c.dtype, i, b);
    }
    const float scale = 37.5f;
    Outputs gpu(c, element), twin(c, element);
    // The case's FP8 output in o (none where c.fp8 is false).
    const auto fp8_of = [&](Outputs& o) {
        Tensor fp8;
        if (c.fp8) {
            fp8 = input(o.q.data(), DType::Float8E4M3, c.rows, c.cols);
            fp8.scale = const_cast<float*>(&scale);
            fp8.amax = &o.amax;
            if (c.transposed) fp8.transposed = o.q_t.data();
        }
        return fp8;
    };
    const auto call = [&](Outputs& o, auto&& entry_point) {
        const Tensor dx = c.dx ? input(o.dx.data(), c.dtype, c.rows, c.cols) : Tensor{};
        const Tensor fp8 = fp8_of(o);
        const Tensor dbias = c.dbias ? input(o.dbias.data(), c.dbias_dtype, 1, c.cols) : Tensor{};
        const Workspace workspace{c.dbias ? o.workspace.data() : nullptr, c.dbias ? o.workspace.bytes : 0};
        entry_point(input(dy.data(), c.dtype, c.rows, c.cols), input(x.data(), c.dtype, c.rows, c.cols), dx, fp8, dbias,
                    workspace, Stream{});
    };
    call(gpu, [](auto&&... a) { gelu_backward(a...); });
    call(twin, [](auto&&... a) { host::gelu_backward(a...); });
    expect(gpu.q.same_as(twin.q), c, "q differs from the host twin's (or was written without an FP8 output)");
    expect(gpu.q.guards_intact(), c, "q written outside it");
    if (c.transposed) {
        expect(gpu.q_t.same_as(twin.q_t), c, "q_t differs from the host twin's (or was left unwritten)");
        expect(gpu.q_t.guards_intact(), c, "q_t written outside it");
    }
    if (c.dx) {
        expect(gpu.dx.same_as(twin.dx), c, "dx differs from the host twin's");
        expect(gpu.dx.guards_intact(), c, "dx written outside it");
    }
    if (c.dbias) {
        expect(gpu.dbias.same_as(twin.dbias), c, "dbias differs from the host twin's (the chunks' order)");
        expect(gpu.dbias.guards_intact(), c, "dbias written outside it");
    }
    expect(std::memcmp(&gpu.amax, &twin.amax, 4) == 0 && (gpu.amax > 0.0f) == c.fp8, c, "amax differs from the host twin's");

    // The forward on the same x (its FP8 output's transposed copy: the 64 x 64 tiled kernel; without it, elementwise),
    // but for the tall case, which adds nothing to it.
    if (c.rows > 4096) return;
    Outputs forward_gpu(c, element), forward_twin(c, element);
    const auto forward = [&](Outputs& o, auto&& entry_point) {
        const Tensor out = c.dx ? input(o.dx.data(), c.dtype, c.rows, c.cols) : Tensor{};
        entry_point(input(x.data(), c.dtype, c.rows, c.cols), out, fp8_of(o), Stream{});
    };
    forward(forward_gpu, [](auto&&... a) { gelu_forward(a...); });
    forward(forward_twin, [](auto&&... a) { host::gelu_forward(a...); });
    expect(forward_gpu.q.same_as(forward_twin.q) && forward_gpu.q.guards_intact(), c, "the forward's q differs or overran");
    if (c.transposed) {
        expect(forward_gpu.q_t.same_as(forward_twin.q_t) && forward_gpu.q_t.guards_intact(), c,
               "the forward's q_t differs or overran");
    }
    if (c.dx) {
        expect(forward_gpu.dx.same_as(forward_twin.dx) && forward_gpu.dx.guards_intact(), c, "the forward's out differs or overran");
    }
    expect(std::memcmp(&forward_gpu.amax, &forward_twin.amax, 4) == 0, c, "the forward's amax differs");

    // The amax hand-off (gelu_forward_current_scale, gelu_backward_current_scale): where dx is kept and there is no FP8
    // output, each side calls both twice, the second time on inputs a thousand times smaller (a scratch word the first call
    // left set would keep its amax); dx or out, dbias and current scaling's scale, scale_inv and staging bit for bit.
    if (!c.dx || !c.fp8 || c.transposed || n > 64 * 1024) return;  // the larger cases add no kernel shape here, only emulation time
    Buffer dy_small(n * element, c.offset), x_small(n * element, c.offset);
    for (std::size_t i = 0; i < n; ++i) {
        for (auto [from, to] : {std::pair{&dy, &dy_small}, std::pair{&x, &x_small}}) {
            if (c.dtype == DType::Float32) {
                float v = 0.0f;
                std::memcpy(&v, from->data() + 4 * i, 4);
                v *= 1e-3f;
                std::memcpy(to->data() + 4 * i, &v, 4);
            } else {
                std::uint16_t h = 0;
                std::memcpy(&h, from->data() + 2 * i, 2);
                const std::uint16_t small = float_to_bf16(bf16_to_float(h) * 1e-3f);
                std::memcpy(to->data() + 2 * i, &small, 2);
            }
        }
    }
    float fresh_gpu[2][3] = {}, fresh_twin[2][3] = {};  // [backward, forward][scale, scale_inv, staging]
    const auto target_of = [](float (&f)[3]) { return target_in(f, 57344.0f); };
    Outputs fresh_outputs_gpu(c, element), fresh_outputs_twin(c, element), fresh_forward_gpu(c, element), fresh_forward_twin(c, element);
    for (const bool on_gpu : {true, false}) {
        Outputs& o = on_gpu ? fresh_outputs_gpu : fresh_outputs_twin;
        Outputs& f = on_gpu ? fresh_forward_gpu : fresh_forward_twin;
        float (&fresh)[2][3] = on_gpu ? fresh_gpu : fresh_twin;
        for (const bool small : {false, true}) {
            const Tensor dbias = c.dbias ? input(o.dbias.data(), c.dbias_dtype, 1, c.cols) : Tensor{};
            const Workspace workspace{c.dbias ? o.workspace.data() : nullptr, c.dbias ? o.workspace.bytes : 0};
            (on_gpu ? &gelu_backward_current_scale : &host::gelu_backward_current_scale)(
                input((small ? dy_small : dy).data(), c.dtype, c.rows, c.cols), input(x.data(), c.dtype, c.rows, c.cols),
                input(o.dx.data(), c.dtype, c.rows, c.cols), target_of(fresh[0]), dbias, workspace, Stream{});
            (on_gpu ? &gelu_forward_current_scale : &host::gelu_forward_current_scale)(
                input((small ? x_small : x).data(), c.dtype, c.rows, c.cols), input(f.dx.data(), c.dtype, c.rows, c.cols),
                target_of(fresh[1]), Stream{});
        }
    }
    expect(fresh_outputs_gpu.dx.same_as(fresh_outputs_twin.dx) && fresh_outputs_gpu.dx.guards_intact(), c,
           "gelu_backward_current_scale's dx differs or overran");
    if (c.dbias) {
        expect(fresh_outputs_gpu.dbias.same_as(fresh_outputs_twin.dbias), c, "gelu_backward_current_scale's dbias differs");
    }
    expect(fresh_forward_gpu.dx.same_as(fresh_forward_twin.dx) && fresh_forward_gpu.dx.guards_intact(), c,
           "gelu_forward_current_scale's out differs or overran");
    expect(std::memcmp(fresh_gpu, fresh_twin, sizeof fresh_gpu) == 0, c,
           "a current-scale form's scale, scale_inv or staging differs from the host twin's");
}

// kernels/amax/amax.cu: one launch, no memset; the blocks combine in a scratch word the last block hands out and
// clears, so a second call (and a call of no elements, which writes 0) must not see the first's maximum.
void run_abs_max(std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-100.0f, 100.0f);
    float previous = 0.0f;
    // 70000 float32 values: 274 blocks arriving (the grid-stride walk past 1024 blocks is not emulated: too slow here).
    for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{257}, std::size_t{5000}, std::size_t{70000},
                                std::size_t{0}, std::size_t{3}}) {
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            if (n == 70000 && dtype == DType::BFloat16) continue;
            std::vector<std::uint8_t> bytes(n * (dtype == DType::Float32 ? 4 : 2) + 4);
            // A later call's values are smaller, so a maximum left over from the call before shows.
            const float reach = n == 3 ? 1e-3f : 1.0f;
            for (std::size_t i = 0; i < n; ++i) {
                const float v = uniform(rng) * reach;
                if (dtype == DType::Float32) {
                    std::memcpy(bytes.data() + 4 * i, &v, 4);
                } else {
                    const std::uint16_t h = float_to_bf16(v);
                    std::memcpy(bytes.data() + 2 * i, &h, 2);
                }
            }
            float gpu = previous, twin = -1.0f;
            Tensor x = input(n > 0 ? bytes.data() : nullptr, dtype, 1, n);
            x.amax = &gpu;
            abs_max(x, Stream{});
            x.amax = &twin;
            host::abs_max(x, Stream{});
            ++checks;
            if (std::memcmp(&gpu, &twin, 4) != 0) {
                ++failures;
                std::printf("FAIL (abs_max of %zu %s values): %g against the host twin's %g\n", n,
                            dtype == DType::Float32 ? "float32" : "bfloat16", gpu, twin);
            }
            previous = gpu;
        }
    }
}

// Current scaling's step in one launch (abs_max_current_scale, one tensor and many): x read in 16-byte loads from its
// first 16-byte boundary, the elements before it and after the last whole vector by the first threads; the last block
// of each tensor writes its amax, scale, scale_inv and staging entry. Against the host twins bit for bit, at element
// offsets that give every head and tail length, with an inf or NaN in the head, the body or the tail.
struct ScaleRun {
    float amax = -1.0f, scale = -1.0f, scale_inv = -1.0f, staging = 0.0f;
};

CurrentScaleItem scale_item(const Tensor& x, float numerator, ScaleRun& r) {
    CurrentScaleItem item{x, numerator, input(&r.scale, DType::Float32, 1, 1), input(&r.scale_inv, DType::Float32, 1, 1),
                          input(&r.staging, DType::Float32, 1, 1)};
    item.x.amax = &r.amax;
    return item;
}

bool same_run(const ScaleRun& a, const ScaleRun& b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

int abs_max_scale_calls = 0;

void run_abs_max_current_scale(std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
    const float kInf = std::numeric_limits<float>::infinity();
    const float kNan = std::numeric_limits<float>::quiet_NaN();
    // Values of x at an element offset into a 16-byte-aligned buffer, one `special` value at `at` (none when at >= n).
    const auto fill = [&](Buffer& b, DType dtype, std::size_t n, std::size_t at, float special) {
        for (std::size_t i = 0; i < n; ++i) {
            const float v = i == at ? special : uniform(rng);
            if (dtype == DType::Float32) {
                std::memcpy(b.data() + 4 * i, &v, 4);
            } else {
                const std::uint16_t h = float_to_bf16(v);
                std::memcpy(b.data() + 2 * i, &h, 2);
            }
        }
    };
    struct One {
        DType dtype;
        std::size_t n, offset_elements, at;
        float special, staging;
    };
    std::vector<One> ones;
    for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
        ones.push_back({DType::BFloat16, 4100, offset, 5000, 0.0f, 0.0f});
        ones.push_back({DType::Float32, 2051, offset, 5000, 0.0f, 0.25f});
    }
    ones.push_back({DType::BFloat16, 4100, 3, 4, kInf, 0.0f});      // the head's last element
    ones.push_back({DType::BFloat16, 4100, 3, 4099, kNan, 0.0f});   // in the tail
    ones.push_back({DType::Float32, 2051, 1, 1000, -kNan, 1.0f});   // in the body
    ones.push_back({DType::Float32, 9000, 0, 9000, 0.0f, 100.0f});  // the staging entry keeps its larger amax
    ones.push_back({DType::BFloat16, 5, 6, 9, 0.0f, 0.0f});         // head and tail only, no whole vector
    ones.push_back({DType::Float32, 0, 0, 0, 0.0f, 2.0f});          // no elements: amax 0, scale 1
    for (const One& o : ones) {
        const std::size_t element = o.dtype == DType::Float32 ? 4 : 2;
        Buffer b(o.n * element, o.offset_elements * element);
        fill(b, o.dtype, o.n, o.at, o.special);
        const Tensor x = input(o.n > 0 ? b.data() : nullptr, o.dtype, 1, o.n);
        ScaleRun gpu, twin;
        gpu.staging = twin.staging = o.staging;
        abs_max_current_scale(x, 448.0f, input(&gpu.scale, DType::Float32, 1, 1), input(&gpu.scale_inv, DType::Float32, 1, 1),
                              input(&gpu.staging, DType::Float32, 1, 1), Stream{});
        host::abs_max_current_scale(x, 448.0f, input(&twin.scale, DType::Float32, 1, 1),
                                    input(&twin.scale_inv, DType::Float32, 1, 1), input(&twin.staging, DType::Float32, 1, 1),
                                    Stream{});
        ++abs_max_scale_calls;
        ++checks;
        if (!same_run(gpu, twin)) {  // x.amax not set: both leave it at -1
            ++failures;
            std::printf("FAIL (abs_max_current_scale of %zu %s values at element offset %zu): scale %g, scale_inv %g, staging %g "
                        "against the host twin's %g, %g, %g\n",
                        o.n, o.dtype == DType::Float32 ? "float32" : "bfloat16", o.offset_elements, gpu.scale, gpu.scale_inv,
                        gpu.staging, twin.scale, twin.scale_inv, twin.staging);
        }
    }
    // Many tensors in one launch: mixed dtypes and offsets, an empty one, one without x.amax; twice, the second with
    // smaller values, so a scratch word left set by the first would show.
    for (int round = 0; round < 2; ++round) {
        const float reach = round == 0 ? 1.0f : 1e-3f;
        std::vector<One> many = {{DType::BFloat16, 3000, 5, 3000, 0.0f, 0.0f},
                                 {DType::Float32, 1500, 3, 7, kInf * reach, 0.0f},
                                 {DType::Float32, 0, 0, 0, 0.0f, 0.5f},
                                 {DType::BFloat16, 70, 0, 69, -2.5f * reach, 0.0f},
                                 {DType::Float32, 1033, 2, 1033, 0.0f, 0.0f}};
        std::vector<Buffer> buffers;
        for (const One& o : many) {
            const std::size_t element = o.dtype == DType::Float32 ? 4 : 2;
            buffers.emplace_back(o.n * element, o.offset_elements * element);
        }
        std::vector<ScaleRun> gpu(many.size()), twin(many.size());
        std::vector<CurrentScaleItem> gpu_items, twin_items;
        for (std::size_t i = 0; i < many.size(); ++i) {
            const One& o = many[i];
            fill(buffers[i], o.dtype, o.n, o.at, o.special);
            for (std::size_t k = 0; k < o.n; ++k) {  // the later round's values are smaller
                if (k == o.at) continue;
                if (o.dtype == DType::Float32) {
                    float v;
                    std::memcpy(&v, buffers[i].data() + 4 * k, 4);
                    v *= reach;
                    std::memcpy(buffers[i].data() + 4 * k, &v, 4);
                } else {
                    std::uint16_t h;
                    std::memcpy(&h, buffers[i].data() + 2 * k, 2);
                    h = float_to_bf16(bf16_to_float(h) * reach);
                    std::memcpy(buffers[i].data() + 2 * k, &h, 2);
                }
            }
            const Tensor x = input(o.n > 0 ? buffers[i].data() : nullptr, o.dtype, 1, o.n);
            gpu[i].staging = twin[i].staging = o.staging;
            gpu_items.push_back(scale_item(x, 57344.0f, gpu[i]));
            twin_items.push_back(scale_item(x, 57344.0f, twin[i]));
            if (i == 3) gpu_items.back().x.amax = twin_items.back().x.amax = nullptr;
        }
        abs_max_current_scale_multi(gpu_items.data(), gpu_items.size(), Stream{});
        host::abs_max_current_scale_multi(twin_items.data(), twin_items.size(), Stream{});
        ++abs_max_scale_calls;
        for (std::size_t i = 0; i < many.size(); ++i) {
            ++checks;
            if (!same_run(gpu[i], twin[i])) {
                ++failures;
                std::printf("FAIL (abs_max_current_scale_multi, round %d, tensor %zu): amax %g, scale %g, staging %g against the "
                            "host twin's %g, %g, %g\n",
                            round, i, gpu[i].amax, gpu[i].scale, gpu[i].staging, twin[i].amax, twin[i].scale, twin[i].staging);
            }
        }
    }
}

// ---- kernels/normalization (LayerNorm and RMSNorm, the hand-over forms) and kernels/cast ----

// One side's buffers for a normalization or cast call: every output starts as poison, guarded.
struct NormOutputs {
    Buffer out, q, q_t, mean, rstd, dx, dgamma, dbeta, grad, dbias, workspace;
    float amax = 0.0f;
    float fresh[3] = {0.0f, 0.0f, 0.0f};  // the current-scale forms' scale, scale_inv and staging
    NormOutputs(std::size_t rows, std::size_t hidden, std::size_t x_element, std::size_t param_element, std::size_t offset,
                std::size_t workspace_bytes)
        : out(rows * hidden * x_element, offset),
          q(rows * hidden, offset),
          q_t(rows * hidden, offset),
          mean(rows * 4, 0),
          rstd(rows * 4, 0),
          dx(rows * hidden * x_element, offset),
          dgamma(hidden * param_element, offset),
          dbeta(hidden * param_element, offset),
          grad(rows * hidden * 2, offset),
          dbias(hidden * 4, (offset + 3) / 4 * 4),  // float32: 4-byte aligned, not 16
          workspace(workspace_bytes, 0) {}
};

struct NormCase {
    DType x_dtype, dy_dtype, param_dtype;
    std::size_t rows, hidden, offset;  // offset: bytes past 64-byte alignment of every tensor (not 16: the plain kernels)
    bool banded_only = false;          // only the banded backwards (the *_quantize forms): a tall case's emulation time
};

std::string describe(const NormCase& c, const char* op) {
    const auto name = [](DType t) { return t == DType::Float32 ? "float32" : "bfloat16"; };
    char text[200];
    std::snprintf(text, sizeof text, "%s: x %s, dy %s, gamma %s, %zu x %zu, offset %zu", op, name(c.x_dtype), name(c.dy_dtype),
                  name(c.param_dtype), c.rows, c.hidden, c.offset);
    return text;
}

void expect_same(const Buffer& gpu, const Buffer& twin, const std::string& where, const char* what) {
    ++checks;
    if (gpu.same_as(twin) && gpu.guards_intact()) return;
    ++failures;
    std::printf("FAIL (%s): %s differs from the host twin's or was written outside it\n", where.c_str(), what);
}

void expect_same_amax(float gpu, float twin, const std::string& where) {
    ++checks;
    if (std::memcmp(&gpu, &twin, 4) == 0) return;
    ++failures;
    std::printf("FAIL (%s): amax %g against the host twin's %g\n", where.c_str(), gpu, twin);
}

void fill(Buffer& b, DType dtype, std::size_t n, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> uniform(lo, hi);
    for (std::size_t i = 0; i < n; ++i) put(b, dtype, i, uniform(rng));
}

std::size_t element_of(DType t) {
    return t == DType::Float32 ? 4 : 2;
}

void run_norm(const NormCase& c, std::mt19937& rng) {
    const std::size_t rows = c.rows, hidden = c.hidden, n = rows * hidden;
    const std::size_t xe = element_of(c.x_dtype), pe = element_of(c.param_dtype);
    Buffer x(n * xe, c.offset), dy(n * element_of(c.dy_dtype), c.offset), residual(n * xe, c.offset);
    Buffer gamma(hidden * pe, c.offset), beta(hidden * pe, c.offset);
    fill(x, c.x_dtype, n, rng, -3.0f, 3.0f);
    fill(dy, c.dy_dtype, n, rng, -1.0f, 1.0f);
    fill(residual, c.x_dtype, n, rng, -0.5f, 0.5f);
    fill(gamma, c.param_dtype, hidden, rng, 0.5f, 1.5f);
    fill(beta, c.param_dtype, hidden, rng, -0.2f, 0.2f);
    const float scale = 11.0f, eps = 1e-5f;
    const std::size_t workspace = std::max(layer_norm_backward_cast_dbias_workspace_bytes(rows, hidden),
                                           rms_norm_backward_workspace_bytes(rows, hidden));
    const auto tensor = [&](Buffer& b, DType t, std::size_t r, std::size_t cols) { return input(b.data(), t, r, cols); };
    const auto fp8_of = [&](NormOutputs& o, bool transposed) {
        Tensor t = input(o.q.data(), DType::Float8E4M3, rows, hidden);
        t.scale = const_cast<float*>(&scale);
        t.amax = &o.amax;
        if (transposed) t.transposed = o.q_t.data();
        return t;
    };
    const auto stats = [&](Buffer& b) { return input(b.data(), DType::Float32, 1, rows); };
    // Runs `call(side, gpu)` on both sides and compares the listed outputs.
    const auto both = [&](const char* op, auto&& call, std::initializer_list<Buffer NormOutputs::*> outputs, bool amax) {
        if (c.banded_only && std::strstr(op, "quantize") == nullptr) return;
        NormOutputs gpu(rows, hidden, xe, pe, c.offset, workspace), twin(rows, hidden, xe, pe, c.offset, workspace);
        call(gpu, true);
        call(twin, false);
        const std::string where = describe(c, op);
        for (Buffer NormOutputs::*b : outputs) expect_same(gpu.*b, twin.*b, where, "an output");
        if (amax) expect_same_amax(gpu.amax, twin.amax, where);
    };
    // The statistics the backward passes read: the twin's forward.
    NormOutputs saved(rows, hidden, xe, pe, 0, 0);
    host::layer_norm_forward(tensor(x, c.x_dtype, rows, hidden), tensor(gamma, c.param_dtype, 1, hidden),
                             tensor(beta, c.param_dtype, 1, hidden), eps, tensor(saved.out, c.x_dtype, rows, hidden), Tensor{},
                             stats(saved.mean), stats(saved.rstd), Stream{});

    for (const bool transposed : {false, true}) {
        both(transposed ? "layer_norm_forward, FP8 with its transposed copy" : "layer_norm_forward, FP8",
             [&](NormOutputs& o, bool gpu) {
                 const auto f = gpu ? &layer_norm_forward : &host::layer_norm_forward;
                 f(tensor(x, c.x_dtype, rows, hidden), tensor(gamma, c.param_dtype, 1, hidden), tensor(beta, c.param_dtype, 1, hidden),
                   eps, tensor(o.out, c.x_dtype, rows, hidden), fp8_of(o, transposed), stats(o.mean), stats(o.rstd), Stream{});
             },
             transposed ? std::initializer_list<Buffer NormOutputs::*>{&NormOutputs::out, &NormOutputs::q, &NormOutputs::q_t,
                                                                       &NormOutputs::mean, &NormOutputs::rstd}
                        : std::initializer_list<Buffer NormOutputs::*>{&NormOutputs::out, &NormOutputs::q, &NormOutputs::mean,
                                                                       &NormOutputs::rstd},
             true);
    }
    for (const bool add : {false, true}) {
        both(add ? "layer_norm_backward_add" : "layer_norm_backward",
             [&](NormOutputs& o, bool gpu) {
                 const Workspace w{o.workspace.data(), o.workspace.bytes};
                 const Tensor dres = add ? tensor(residual, c.x_dtype, rows, hidden) : Tensor{};
                 const auto f = gpu ? &layer_norm_backward_add : &host::layer_norm_backward_add;
                 f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(saved.mean), stats(saved.rstd),
                   tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), dres,
                   tensor(o.dgamma, c.param_dtype, 1, hidden), tensor(o.dbeta, c.param_dtype, 1, hidden), w, Stream{});
             },
             {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::dbeta}, false);
    }
    both("layer_norm_backward_cast_dbias",
         [&](NormOutputs& o, bool gpu) {
             const Workspace w{o.workspace.data(), o.workspace.bytes};
             const auto f = gpu ? &layer_norm_backward_cast_dbias : &host::layer_norm_backward_cast_dbias;
             f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(saved.mean), stats(saved.rstd),
               tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), tensor(residual, c.x_dtype, rows, hidden),
               tensor(o.dgamma, c.param_dtype, 1, hidden), tensor(o.dbeta, c.param_dtype, 1, hidden),
               tensor(o.grad, DType::BFloat16, rows, hidden), tensor(o.dbias, DType::Float32, 1, hidden), w, Stream{});
         },
         {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::dbeta, &NormOutputs::grad, &NormOutputs::dbias}, false);
    both("layer_norm_backward_quantize_dbias",
         [&](NormOutputs& o, bool gpu) {
             const Workspace w{o.workspace.data(), o.workspace.bytes};
             const auto f = gpu ? &layer_norm_backward_quantize_dbias : &host::layer_norm_backward_quantize_dbias;
             f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(saved.mean), stats(saved.rstd),
               tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), tensor(residual, c.x_dtype, rows, hidden),
               tensor(o.dgamma, c.param_dtype, 1, hidden), tensor(o.dbeta, c.param_dtype, 1, hidden), fp8_of(o, true),
               tensor(o.dbias, DType::Float32, 1, hidden), w, Stream{});
         },
         {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::dbeta, &NormOutputs::q, &NormOutputs::q_t, &NormOutputs::dbias},
         true);

    // The amax hand-off (*_current_scale): the forwards with current scaling's scale of out, each side called twice, the
    // second time with gamma 1000 times smaller (a scratch word left set would keep the first call's amax), out in x's
    // dtype and in bfloat16 (the amax of the values as stored).
    Buffer gamma_small(hidden * pe, c.offset);
    fill(gamma_small, c.param_dtype, hidden, rng, 0.5e-3f, 1.5e-3f);
    const auto target_of = [&](NormOutputs& o) { return target_in(o.fresh, 448.0f); };
    const auto expect_same_fresh = [&](const NormOutputs& gpu, const NormOutputs& twin, const char* op) {
        for (int i = 0; i < 3; ++i) expect_same_amax(gpu.fresh[i], twin.fresh[i], describe(c, op) + (i == 0 ? ", scale" : i == 1 ? ", scale_inv" : ", staging"));
    };
    // The forwards' hand-off on the smaller cases only (the emulation's cost; every kernel shape is among them); the
    // backward's below on every case (the prefetching kernel among them).
    for (const DType out_dtype : {c.x_dtype, DType::BFloat16}) {
        if (n > 40 * 1024) break;
        if (out_dtype == DType::BFloat16 && c.x_dtype == DType::BFloat16) continue;  // done in the first round
        const bool bf16_out = out_dtype != c.x_dtype;
        NormOutputs gpu(rows, hidden, xe, pe, c.offset, workspace), twin(rows, hidden, xe, pe, c.offset, workspace);
        for (NormOutputs* o : {&gpu, &twin}) {
            const auto f = o == &gpu ? &layer_norm_forward_current_scale : &host::layer_norm_forward_current_scale;
            for (Buffer* g : {&gamma, &gamma_small}) {
                f(tensor(x, c.x_dtype, rows, hidden), tensor(*g, c.param_dtype, 1, hidden), tensor(beta, c.param_dtype, 1, hidden), eps,
                  tensor(o->out, out_dtype, rows, hidden), target_of(*o), stats(o->mean), stats(o->rstd), Stream{});
            }
        }
        const char* op = bf16_out ? "layer_norm_forward_current_scale, bfloat16 out" : "layer_norm_forward_current_scale";
        for (Buffer NormOutputs::*b : {&NormOutputs::out, &NormOutputs::mean, &NormOutputs::rstd}) {
            expect_same(gpu.*b, twin.*b, describe(c, op), "an output");
        }
        expect_same_fresh(gpu, twin, op);
        NormOutputs rms_gpu(rows, hidden, xe, pe, c.offset, workspace), rms_twin(rows, hidden, xe, pe, c.offset, workspace);
        for (NormOutputs* o : {&rms_gpu, &rms_twin}) {
            const auto f = o == &rms_gpu ? &rms_norm_forward_current_scale : &host::rms_norm_forward_current_scale;
            for (Buffer* g : {&gamma, &gamma_small}) {
                f(tensor(x, c.x_dtype, rows, hidden), tensor(*g, c.param_dtype, 1, hidden), eps, tensor(o->out, out_dtype, rows, hidden),
                  target_of(*o), stats(o->rstd), Stream{});
            }
        }
        const char* rms_op = bf16_out ? "rms_norm_forward_current_scale, bfloat16 out" : "rms_norm_forward_current_scale";
        for (Buffer NormOutputs::*b : {&NormOutputs::out, &NormOutputs::rstd}) {
            expect_same(rms_gpu.*b, rms_twin.*b, describe(c, rms_op), "an output");
        }
        expect_same_fresh(rms_gpu, rms_twin, rms_op);
    }

    // The backward's hand-off (layer_norm_backward_cast_dbias_current_scale): dx's scale for the Linear's own cast, twice on
    // each side, the second time with dy and dresidual a thousand times smaller; on the smaller cases and the float32
    // 300 x 520 one (the kernel that loads its next row ahead, as the seed's residual stream's).
    if (n <= 40 * 1024 || (c.x_dtype == DType::Float32 && hidden == 520)) {
        Buffer dy_small(n * element_of(c.dy_dtype), c.offset), residual_small(n * xe, c.offset);
        fill(dy_small, c.dy_dtype, n, rng, -1e-3f, 1e-3f);
        fill(residual_small, c.x_dtype, n, rng, -0.5e-3f, 0.5e-3f);
        NormOutputs gpu(rows, hidden, xe, pe, c.offset, workspace), twin(rows, hidden, xe, pe, c.offset, workspace);
        for (NormOutputs* o : {&gpu, &twin}) {
            const auto f = o == &gpu ? &layer_norm_backward_cast_dbias_current_scale : &host::layer_norm_backward_cast_dbias_current_scale;
            for (const bool small : {false, true}) {
                const Workspace w{o->workspace.data(), o->workspace.bytes};
                f(tensor(small ? dy_small : dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(saved.mean),
                  stats(saved.rstd), tensor(gamma, c.param_dtype, 1, hidden), tensor(o->dx, c.x_dtype, rows, hidden),
                  tensor(small ? residual_small : residual, c.x_dtype, rows, hidden), tensor(o->dgamma, c.param_dtype, 1, hidden),
                  tensor(o->dbeta, c.param_dtype, 1, hidden), target_of(*o), tensor(o->dbias, DType::Float32, 1, hidden), w, Stream{});
            }
        }
        const char* op = "layer_norm_backward_cast_dbias_current_scale";
        for (Buffer NormOutputs::*b : {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::dbeta, &NormOutputs::dbias}) {
            expect_same(gpu.*b, twin.*b, describe(c, op), "an output");
        }
        expect_same_fresh(gpu, twin, op);
    }

    // RMSNorm: the forward (its rstd saved for the backward), then the backward with and without dresidual.
    NormOutputs rms_saved(rows, hidden, xe, pe, 0, 0);
    host::rms_norm_forward(tensor(x, c.x_dtype, rows, hidden), tensor(gamma, c.param_dtype, 1, hidden), eps,
                           tensor(rms_saved.out, c.x_dtype, rows, hidden), Tensor{}, stats(rms_saved.rstd), Stream{});
    for (const bool transposed : {false, true}) {
        both(transposed ? "rms_norm_forward, FP8 with its transposed copy" : "rms_norm_forward, FP8",
             [&](NormOutputs& o, bool gpu) {
                 const auto f = gpu ? &rms_norm_forward : &host::rms_norm_forward;
                 f(tensor(x, c.x_dtype, rows, hidden), tensor(gamma, c.param_dtype, 1, hidden), eps,
                   tensor(o.out, c.x_dtype, rows, hidden), fp8_of(o, transposed), stats(o.rstd), Stream{});
             },
             transposed ? std::initializer_list<Buffer NormOutputs::*>{&NormOutputs::out, &NormOutputs::q, &NormOutputs::q_t,
                                                                       &NormOutputs::rstd}
                        : std::initializer_list<Buffer NormOutputs::*>{&NormOutputs::out, &NormOutputs::q, &NormOutputs::rstd},
             true);
    }
    for (const bool add : {false, true}) {
        both(add ? "rms_norm_backward_add" : "rms_norm_backward",
             [&](NormOutputs& o, bool gpu) {
                 const Workspace w{o.workspace.data(), o.workspace.bytes};
                 const Tensor dres = add ? tensor(residual, c.x_dtype, rows, hidden) : Tensor{};
                 const auto f = gpu ? &rms_norm_backward_add : &host::rms_norm_backward_add;
                 f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(rms_saved.rstd),
                   tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), dres,
                   tensor(o.dgamma, c.param_dtype, 1, hidden), w, Stream{});
             },
             {&NormOutputs::dx, &NormOutputs::dgamma}, false);
    }
    // RMSNorm's backward hand-off (rms_norm_backward_current_scale): dx's scale for the Linear's own cast, with and without
    // dresidual, twice on each side (dy and dresidual a thousand times smaller the second time); on the cases the
    // LayerNorm backward's hand-off takes.
    if (n <= 40 * 1024 || (c.x_dtype == DType::Float32 && hidden == 520)) {
        Buffer dy_small(n * element_of(c.dy_dtype), c.offset), residual_small(n * xe, c.offset);
        fill(dy_small, c.dy_dtype, n, rng, -1e-3f, 1e-3f);
        fill(residual_small, c.x_dtype, n, rng, -0.5e-3f, 0.5e-3f);
        for (const bool add : {false, true}) {
            NormOutputs gpu(rows, hidden, xe, pe, c.offset, workspace), twin(rows, hidden, xe, pe, c.offset, workspace);
            for (NormOutputs* o : {&gpu, &twin}) {
                const auto f = o == &gpu ? &rms_norm_backward_current_scale : &host::rms_norm_backward_current_scale;
                for (const bool small : {false, true}) {
                    const Workspace w{o->workspace.data(), o->workspace.bytes};
                    const Tensor dres = add ? tensor(small ? residual_small : residual, c.x_dtype, rows, hidden) : Tensor{};
                    f(tensor(small ? dy_small : dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(rms_saved.rstd),
                      tensor(gamma, c.param_dtype, 1, hidden), tensor(o->dx, c.x_dtype, rows, hidden), dres,
                      tensor(o->dgamma, c.param_dtype, 1, hidden), target_of(*o), w, Stream{});
                }
            }
            const char* op = add ? "rms_norm_backward_current_scale, dresidual" : "rms_norm_backward_current_scale";
            for (Buffer NormOutputs::*b : {&NormOutputs::dx, &NormOutputs::dgamma}) expect_same(gpu.*b, twin.*b, describe(c, op), "an output");
            expect_same_fresh(gpu, twin, op);
        }
    }

    // RMSNorm's backward hand-overs (rms_norm_backward_cast: dx's bfloat16 copy for the Linear's BF16 GEMMs;
    // rms_norm_backward_quantize: dx cast for its FP8 GEMMs, delayed scaling, with the transposed copy and amax), with and
    // without dresidual, against the twin bit for bit; the cast form's dx and dgamma are also rms_norm_backward_add's (the
    // same kernel order on every path) and its copy dx as stored.
    for (const bool add : {false, true}) {
        const Tensor dres = add ? tensor(residual, c.x_dtype, rows, hidden) : Tensor{};
        const auto plain_call = [&](NormOutputs& o, bool gpu) {
            const auto f = gpu ? &rms_norm_backward_add : &host::rms_norm_backward_add;
            f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(rms_saved.rstd),
              tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), dres,
              tensor(o.dgamma, c.param_dtype, 1, hidden), Workspace{o.workspace.data(), o.workspace.bytes}, Stream{});
        };
        const auto cast_call = [&](NormOutputs& o, bool gpu) {
            const auto f = gpu ? &rms_norm_backward_cast : &host::rms_norm_backward_cast;
            f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(rms_saved.rstd),
              tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), dres,
              tensor(o.dgamma, c.param_dtype, 1, hidden), tensor(o.grad, DType::BFloat16, rows, hidden),
              Workspace{o.workspace.data(), o.workspace.bytes}, Stream{});
        };
        both(add ? "rms_norm_backward_cast, dresidual" : "rms_norm_backward_cast", cast_call,
             {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::grad}, false);
        if (!c.banded_only) {
            NormOutputs plain(rows, hidden, xe, pe, c.offset, workspace), cast(rows, hidden, xe, pe, c.offset, workspace);
            plain_call(plain, true);
            cast_call(cast, true);
            const std::string where = describe(c, add ? "rms_norm_backward_cast, dresidual" : "rms_norm_backward_cast");
            expect_same(cast.dx, plain.dx, where, "dx against rms_norm_backward_add's");
            expect_same(cast.dgamma, plain.dgamma, where, "dgamma against rms_norm_backward_add's");
            NormOutputs copied(rows, hidden, xe, pe, c.offset, workspace);
            std::vector<float> row(hidden);
            for (std::size_t r = 0; r < rows; ++r) {
                detail::load_floats(cast.dx.data(), c.x_dtype, r * hidden, hidden, row.data());
                detail::store_floats(copied.grad.data(), DType::BFloat16, r * hidden, hidden, row.data());
            }
            expect_same(cast.grad, copied.grad, where, "the copy against dx as stored");
        }
        both(add ? "rms_norm_backward_quantize, dresidual" : "rms_norm_backward_quantize",
             [&](NormOutputs& o, bool gpu) {
                 const auto f = gpu ? &rms_norm_backward_quantize : &host::rms_norm_backward_quantize;
                 f(tensor(dy, c.dy_dtype, rows, hidden), tensor(x, c.x_dtype, rows, hidden), stats(rms_saved.rstd),
                   tensor(gamma, c.param_dtype, 1, hidden), tensor(o.dx, c.x_dtype, rows, hidden), dres,
                   tensor(o.dgamma, c.param_dtype, 1, hidden), fp8_of(o, true), Workspace{o.workspace.data(), o.workspace.bytes},
                   Stream{});
             },
             {&NormOutputs::dx, &NormOutputs::dgamma, &NormOutputs::q, &NormOutputs::q_t}, true);
    }

    // The casts of x itself (cast.cu, cast_dbias.cu): the plain cast (16-byte vectors, element by element for the tail
    // and where x is not aligned), cast + transpose with and without the bias gradient, and cast_dbias to bfloat16.
    both("cast_to_fp8",
         [&](NormOutputs& o, bool gpu) {
             const auto f = gpu ? &cast_to_fp8 : &host::cast_to_fp8;
             f(tensor(x, c.x_dtype, rows, hidden), fp8_of(o, false), Stream{});
         },
         {&NormOutputs::q}, true);
    both("cast_transpose_to_fp8",
         [&](NormOutputs& o, bool gpu) {
             const auto f = gpu ? &cast_transpose_to_fp8 : &host::cast_transpose_to_fp8;
             f(tensor(x, c.x_dtype, rows, hidden), fp8_of(o, true), Stream{});
         },
         {&NormOutputs::q, &NormOutputs::q_t}, true);
    both("cast_transpose_dbias_to_fp8",
         [&](NormOutputs& o, bool gpu) {
             const Workspace w{o.workspace.data(), std::min(o.workspace.bytes, cast_transpose_dbias_workspace_bytes(rows, hidden))};
             const auto f = gpu ? &cast_transpose_dbias_to_fp8 : &host::cast_transpose_dbias_to_fp8;
             f(tensor(x, c.x_dtype, rows, hidden), fp8_of(o, true), tensor(o.dbias, DType::Float32, 1, hidden), w, Stream{});
         },
         {&NormOutputs::q, &NormOutputs::q_t, &NormOutputs::dbias}, true);
    both("cast_dbias",
         [&](NormOutputs& o, bool gpu) {
             const Workspace w{o.workspace.data(), std::min(o.workspace.bytes, cast_dbias_workspace_bytes(rows, hidden))};
             const auto f = gpu ? &cast_dbias : &host::cast_dbias;
             f(tensor(x, c.x_dtype, rows, hidden), tensor(o.grad, DType::BFloat16, rows, hidden),
               tensor(o.dbias, DType::Float32, 1, hidden), w, Stream{});
         },
         {&NormOutputs::grad, &NormOutputs::dbias}, false);
}

// The stacked casts (qkv's output gradient read from dq, dk and dv where they lie): three parts, each a [rows, cols] view
// with a row stride into one buffer, as the attention writes them; `extra` elements pad each row of that buffer.
void run_stacked(DType dtype, std::size_t rows, std::size_t cols, std::size_t extra, std::mt19937& rng) {
    const std::size_t element = element_of(dtype), stride = 3 * cols + extra, wide = 3 * cols;
    Buffer source(rows * stride * element, 0);
    fill(source, dtype, rows * stride, rng, -2.0f, 2.0f);
    Tensor parts[3];
    for (int i = 0; i < 3; ++i) {
        parts[i] = input(source.data() + i * cols * element, dtype, rows, cols);
        parts[i].row_stride = stride;
    }
    const float scale = 5.0f;
    char where[160];
    std::snprintf(where, sizeof where, "stacked casts: %s, 3 parts of %zu x %zu, row stride %zu", dtype == DType::Float32 ? "float32" : "bfloat16",
                  rows, cols, stride);
    const std::size_t workspace = std::max(cast_dbias_workspace_bytes(rows, wide), cast_transpose_dbias_workspace_bytes(rows, wide));
    NormOutputs gpu(rows, wide, element, 4, 0, workspace), twin(rows, wide, element, 4, 0, workspace);
    for (NormOutputs* o : {&gpu, &twin}) {
        const bool on_gpu = o == &gpu;
        const Workspace w{o->workspace.data(), o->workspace.bytes};
        (on_gpu ? &stacked_cast_dbias : &host::stacked_cast_dbias)(parts, 3, input(o->grad.data(), DType::BFloat16, rows, wide),
                                                                   input(o->dgamma.data(), DType::Float32, 1, wide), w, Stream{});
        Tensor fp8 = input(o->q.data(), DType::Float8E5M2, rows, wide);
        fp8.transposed = o->q_t.data();
        fp8.scale = const_cast<float*>(&scale);
        fp8.amax = &o->amax;
        (on_gpu ? &stacked_cast_transpose_dbias_to_fp8 : &host::stacked_cast_transpose_dbias_to_fp8)(
            parts, 3, fp8, input(o->dbias.data(), DType::Float32, 1, wide), w, Stream{});
    }
    for (Buffer NormOutputs::*b : {&NormOutputs::grad, &NormOutputs::dgamma, &NormOutputs::q, &NormOutputs::q_t, &NormOutputs::dbias}) {
        expect_same(gpu.*b, twin.*b, where, "an output");
    }
    expect_same_amax(gpu.amax, twin.amax, where);
}

// kernels/cast/cast_multi.cu (the weights' FP8 copies in one launch): items that take the vectorised tile (float32 and
// bfloat16, rows a multiple of 8, aligned; tiles cut short at the right and bottom) and items that go element by
// element (ragged rows, an unaligned x), one with a NaN, in one launch; each item's FP8 bytes, transposed bytes and
// amax against the host twin.
void run_cast_multi(std::mt19937& rng) {
    struct Shape {
        DType dtype;
        std::size_t rows, cols, offset;
    };
    const Shape shapes[] = {{DType::Float32, 128, 96, 0}, {DType::BFloat16, 72, 136, 0}, {DType::Float32, 33, 20, 0},
                            {DType::BFloat16, 64, 64, 2},  {DType::Float32, 8, 4, 0},     {DType::BFloat16, 16, 200, 0}};
    constexpr std::size_t kItems = sizeof shapes / sizeof shapes[0];
    std::vector<Buffer> xs;
    for (const Shape& sh : shapes) {
        xs.emplace_back(sh.rows * sh.cols * element_of(sh.dtype), sh.offset);
        fill(xs.back(), sh.dtype, sh.rows * sh.cols, rng, -300.0f, 300.0f);
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(xs[2].data() + 4 * 17, &nan, 4);
    const float scales[kItems] = {0.5f, 1.5f, 2.0f, 0.25f, 1.0f, 3.0f};
    struct Side {
        std::vector<Buffer> q, q_t;
        float amax[kItems] = {};
    };
    Side gpu, twin;
    for (Side* side : {&gpu, &twin}) {
        std::vector<Tensor> x, out;
        for (std::size_t i = 0; i < kItems; ++i) {
            const Shape& sh = shapes[i];
            side->q.emplace_back(sh.rows * sh.cols, 0);
            side->q_t.emplace_back(sh.rows * sh.cols, 0);
            x.push_back(input(xs[i].data(), sh.dtype, sh.rows, sh.cols));
            Tensor o = input(side->q[i].data(), i % 2 == 0 ? DType::Float8E4M3 : DType::Float8E5M2, sh.rows, sh.cols);
            o.transposed = side->q_t[i].data();
            o.scale = const_cast<float*>(&scales[i]);
            o.amax = &side->amax[i];
            out.push_back(o);
        }
        (side == &gpu ? &cast_transpose_multi_to_fp8 : &host::cast_transpose_multi_to_fp8)(x.data(), out.data(), kItems, Stream{});
    }
    for (std::size_t i = 0; i < kItems; ++i) {
        char where[120];
        std::snprintf(where, sizeof where, "cast_transpose_multi_to_fp8: item %zu, %s %zu x %zu at offset %zu", i,
                      shapes[i].dtype == DType::Float32 ? "float32" : "bfloat16", shapes[i].rows, shapes[i].cols, shapes[i].offset);
        expect_same(gpu.q[i], twin.q[i], where, "the FP8 bytes");
        expect_same(gpu.q_t[i], twin.q_t[i], where, "the transposed FP8 bytes");
        expect_same_amax(gpu.amax[i], twin.amax[i], where);
    }
}

// kernels/activation/swiglu.cu (llama's MLP activation): in [rows, 2 * cols] = [gate | up]; the forward's output and
// FP8 form (with and without the transposed copy), the backward's din and its FP8 form with the transposed copy.
void run_swiglu(DType dtype, std::size_t rows, std::size_t cols, std::size_t offset, std::mt19937& rng) {
    const std::size_t element = element_of(dtype), wide = 2 * cols;
    Buffer in(rows * wide * element, offset), dy(rows * cols * element, offset);
    fill(in, dtype, rows * wide, rng, -4.0f, 4.0f);
    fill(dy, dtype, rows * cols, rng, -1.0f, 1.0f);
    const float scale = 3.0f;
    char where[160];
    std::snprintf(where, sizeof where, "swiglu: %s, %zu x %zu, offset %zu", dtype == DType::Float32 ? "float32" : "bfloat16", rows,
                  cols, offset);
    struct Side {
        Buffer out, q, q_t, din, dq, dq_t;
        float amax = 0.0f;
        Side(std::size_t rows, std::size_t cols, std::size_t element, std::size_t offset)
            : out(rows * cols * element, offset), q(rows * cols, offset), q_t(rows * cols, offset),
              din(2 * rows * cols * element, offset), dq(2 * rows * cols, offset), dq_t(2 * rows * cols, offset) {}
    };
    for (const bool transposed : {false, true}) {
        Side gpu(rows, cols, element, offset), twin(rows, cols, element, offset);
        for (Side* o : {&gpu, &twin}) {
            const bool on_gpu = o == &gpu;
            Tensor fp8 = input(o->q.data(), DType::Float8E4M3, rows, cols);
            if (transposed) fp8.transposed = o->q_t.data();
            fp8.scale = const_cast<float*>(&scale);
            fp8.amax = &o->amax;
            (on_gpu ? &swiglu_forward : &host::swiglu_forward)(input(in.data(), dtype, rows, wide), input(o->out.data(), dtype, rows, cols),
                                                               fp8, Stream{});
            Tensor dfp8 = input(o->dq.data(), DType::Float8E5M2, rows, wide);
            if (transposed) dfp8.transposed = o->dq_t.data();
            dfp8.scale = const_cast<float*>(&scale);
            (on_gpu ? &swiglu_backward : &host::swiglu_backward)(input(dy.data(), dtype, rows, cols), input(in.data(), dtype, rows, wide),
                                                                 input(o->din.data(), dtype, rows, wide), dfp8, Stream{});
        }
        expect_same(gpu.out, twin.out, where, "the forward's out");
        expect_same(gpu.q, twin.q, where, "the forward's FP8 bytes");
        if (transposed) expect_same(gpu.q_t, twin.q_t, where, "the forward's transposed FP8 bytes");
        expect_same(gpu.din, twin.din, where, "the backward's din");
        expect_same(gpu.dq, twin.dq, where, "the backward's FP8 bytes");
        if (transposed) expect_same(gpu.dq_t, twin.dq_t, where, "the backward's transposed FP8 bytes");
        expect_same_amax(gpu.amax, twin.amax, where);
    }
    // The amax hand-off (swiglu_forward_current_scale, swiglu_backward_current_scale): each side twice, the second time
    // with in and dy a thousand times smaller; out, din and the scales bit for bit.
    Buffer in_small(rows * wide * element, offset), dy_small(rows * cols * element, offset);
    fill(in_small, dtype, rows * wide, rng, -4e-3f, 4e-3f);
    fill(dy_small, dtype, rows * cols, rng, -1e-3f, 1e-3f);
    Side gpu(rows, cols, element, offset), twin(rows, cols, element, offset);
    float fresh[2][2][3] = {};  // [gpu, twin][forward, backward][scale, scale_inv, staging]
    for (Side* o : {&gpu, &twin}) {
        const bool on_gpu = o == &gpu;
        for (const bool small : {false, true}) {
            for (int k = 0; k < 2; ++k) {
                CurrentScaleTarget t;
                t.numerator = 448.0f;
                float* f = fresh[on_gpu ? 0 : 1][k];
                t.scale = input(&f[0], DType::Float32, 1, 1);
                t.scale_inv = input(&f[1], DType::Float32, 1, 1);
                t.staging = input(&f[2], DType::Float32, 1, 1);
                if (k == 0) {
                    (on_gpu ? &swiglu_forward_current_scale : &host::swiglu_forward_current_scale)(
                        input((small ? in_small : in).data(), dtype, rows, wide), input(o->out.data(), dtype, rows, cols), t, Stream{});
                } else {
                    (on_gpu ? &swiglu_backward_current_scale : &host::swiglu_backward_current_scale)(
                        input((small ? dy_small : dy).data(), dtype, rows, cols), input((small ? in_small : in).data(), dtype, rows, wide),
                        input(o->din.data(), dtype, rows, wide), t, Stream{});
                }
            }
        }
    }
    expect_same(gpu.out, twin.out, where, "swiglu_forward_current_scale's out");
    expect_same(gpu.din, twin.din, where, "swiglu_backward_current_scale's din");
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < 3; ++i) expect_same_amax(fresh[0][k][i], fresh[1][k][i], std::string(where) + (k == 0 ? ", forward" : ", backward") + " current scale");
    }
}

// kernels/embedding/embedding.cu: the forward (16-byte pieces where hidden and the pointers allow, one element a
// thread elsewhere; with and without positions) and the backward: dpositions summed over the batch (rows loaded 8 at a
// time, then the rest one by one) and dtable's scatter, added to what it holds. Tokens repeat and some lie outside
// [0, vocab) (a NaN row forward, left out backward), read through a [batch, seq + 1] tensor's narrow() as a trainer
// hands them. dtable bit for bit too: its blocks take one row each, in index order here (blocks run one after another),
// the order the twin adds them in.
void run_embedding(DType dtype, std::size_t batch, std::size_t seq, std::size_t hidden, std::size_t offset, std::mt19937& rng) {
    const std::size_t element = element_of(dtype), vocab = 7, rows = batch * seq;
    char where[160];
    std::snprintf(where, sizeof where, "embedding: %s, batch %zu, seq %zu, hidden %zu, offset %zu",
                  dtype == DType::Float32 ? "float32" : "bfloat16", batch, seq, hidden, offset);
    std::vector<std::int64_t> token_store(batch * (seq + 1));
    std::uniform_int_distribution<int> pick(-1, static_cast<int>(vocab));  // -1 and vocab: outside the table
    for (std::int64_t& t : token_store) t = pick(rng);
    Tensor tokens = input(token_store.data(), DType::Int64, batch, seq);
    tokens.row_stride = seq + 1;
    Buffer table(vocab * hidden * element, offset), positions(seq * hidden * element, offset), dy(rows * hidden * element, offset);
    fill(table, dtype, vocab * hidden, rng, -1.0f, 1.0f);
    fill(positions, dtype, seq * hidden, rng, -1.0f, 1.0f);
    fill(dy, dtype, rows * hidden, rng, -1.0f, 1.0f);
    std::vector<float> dtable_start(vocab * hidden);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : dtable_start) v = uniform(rng);
    struct Side {
        Buffer out, out_plain, dtable, dpositions, dpositions_alone;
        Side(std::size_t rows, std::size_t vocab, std::size_t seq, std::size_t hidden, std::size_t element, std::size_t offset)
            : out(rows * hidden * element, offset), out_plain(rows * hidden * element, offset), dtable(vocab * hidden * 4, offset),
              dpositions(seq * hidden * element, offset), dpositions_alone(seq * hidden * element, offset) {}
    };
    Side gpu(rows, vocab, seq, hidden, element, offset), twin(rows, vocab, seq, hidden, element, offset);
    for (Side* o : {&gpu, &twin}) {
        const bool on_gpu = o == &gpu;
        std::memcpy(o->dtable.data(), dtable_start.data(), dtable_start.size() * 4);
        const auto forward = on_gpu ? &embedding_forward : &host::embedding_forward;
        const auto backward = on_gpu ? &embedding_backward : &host::embedding_backward;
        const Tensor table_t = input(table.data(), dtype, vocab, hidden);
        forward(tokens, table_t, input(positions.data(), dtype, seq, hidden), input(o->out.data(), dtype, rows, hidden), Stream{});
        forward(tokens, table_t, Tensor{}, input(o->out_plain.data(), dtype, rows, hidden), Stream{});
        const Tensor dy_t = input(dy.data(), dtype, rows, hidden);
        backward(tokens, dy_t, input(o->dtable.data(), DType::Float32, vocab, hidden),
                 input(o->dpositions.data(), dtype, seq, hidden), Stream{});
        backward(tokens, dy_t, input(nullptr, DType::Float32, vocab, hidden), input(o->dpositions_alone.data(), dtype, seq, hidden),
                 Stream{});
    }
    expect_same(gpu.out, twin.out, where, "the forward's out");
    expect_same(gpu.out_plain, twin.out_plain, where, "the forward's out without positions");
    expect_same(gpu.dtable, twin.dtable, where, "dtable");
    expect_same(gpu.dpositions, twin.dpositions, where, "dpositions");
    expect_same(gpu.dpositions_alone, twin.dpositions_alone, where, "dpositions without dtable");
}

// kernels/loss/loss.cu: the cross-entropy forward (lse and the mean loss, the blocks' sums added by the last block),
// the backward into float32 and bfloat16 dlogits, and the forward with the gradient in place, against the twin, bit for
// bit (the same online sums in the same order; expf and logf from one libm). Targets through a [batch, seq + 1]
// narrow(), one outside [0, vocab) (a NaN loss and a NaN gradient row), vocab in 16-byte vectors (several a thread past
// 2048 bfloat16 logits) or not, more rows than the forward's 1024 blocks (two rows a block).
void run_loss(DType dtype, std::size_t batch, std::size_t seq, std::size_t vocab, std::size_t offset, bool bad_target,
              std::mt19937& rng) {
    const std::size_t element = element_of(dtype), rows = batch * seq;
    char where[160];
    std::snprintf(where, sizeof where, "cross_entropy: %s, %zu rows, vocab %zu, offset %zu%s", dtype == DType::Float32 ? "float32" : "bfloat16",
                  rows, vocab, offset, bad_target ? ", a target outside the vocabulary" : "");
    std::vector<std::int64_t> token_store(batch * (seq + 1));
    std::uniform_int_distribution<int> pick(0, static_cast<int>(vocab) - 1);
    for (std::int64_t& t : token_store) t = pick(rng);
    if (bad_target) token_store[1] = static_cast<std::int64_t>(vocab);
    Tensor targets = input(token_store.data(), DType::Int64, batch, seq);
    targets.row_stride = seq + 1;
    Buffer logits(rows * vocab * element, offset);
    fill(logits, dtype, rows * vocab, rng, -6.0f, 6.0f);
    const float grad_loss = 0.5f;
    struct Side {
        Buffer lse, lse_fused, d32, d16, in_place, workspace;
        float loss = 0.0f, loss_fused = 0.0f;
        Side(std::size_t rows, std::size_t vocab, std::size_t element, std::size_t offset)
            : lse(rows * 4, 0), lse_fused(rows * 4, 0), d32(rows * vocab * 4, offset), d16(rows * vocab * 2, offset),
              in_place(rows * vocab * element, offset), workspace(cross_entropy_forward_workspace_bytes(rows, vocab), 0) {}
    };
    Side gpu(rows, vocab, element, offset), twin(rows, vocab, element, offset);
    for (Side* o : {&gpu, &twin}) {
        const bool on_gpu = o == &gpu;
        const Tensor x = input(logits.data(), dtype, rows, vocab);
        const Workspace workspace{o->workspace.data(), o->workspace.bytes};
        (on_gpu ? &cross_entropy_forward : &host::cross_entropy_forward)(x, targets, input(o->lse.data(), DType::Float32, rows, 1),
                                                                         input(&o->loss, DType::Float32, 1, 1), workspace, Stream{});
        const auto backward = on_gpu ? &cross_entropy_backward : &host::cross_entropy_backward;
        const Tensor lse = input(o->lse.data(), DType::Float32, rows, 1);
        const Tensor grad = input(&grad_loss, DType::Float32, 1, 1);
        backward(x, targets, lse, grad, input(o->d32.data(), DType::Float32, rows, vocab), Stream{});
        backward(x, targets, lse, grad, input(o->d16.data(), DType::BFloat16, rows, vocab), Stream{});
        std::memcpy(o->in_place.data(), logits.data(), rows * vocab * element);
        (on_gpu ? &cross_entropy_forward_with_grad : &host::cross_entropy_forward_with_grad)(
            input(o->in_place.data(), dtype, rows, vocab), targets, input(o->lse_fused.data(), DType::Float32, rows, 1),
            input(&o->loss_fused, DType::Float32, 1, 1), workspace, Stream{});
    }
    expect_same(gpu.lse, twin.lse, where, "lse");
    expect_same_amax(gpu.loss, twin.loss, std::string(where) + ", the loss");
    expect_same(gpu.d32, twin.d32, where, "float32 dlogits");
    expect_same(gpu.d16, twin.d16, where, "bfloat16 dlogits");
    expect_same(gpu.lse_fused, twin.lse_fused, where, "the forward with the gradient's lse");
    expect_same_amax(gpu.loss_fused, twin.loss_fused, std::string(where) + ", the forward with the gradient's loss");
    expect_same(gpu.in_place, twin.in_place, where, "the gradient written in place");
}

// The rotary kernels' float32 cos and sin tables [seq, half] of random angles.
struct AngleTables {
    std::size_t seq, half;
    Buffer cos, sin;
    AngleTables(std::size_t seq_, std::size_t half_, std::mt19937& rng)
        : seq(seq_), half(half_), cos(seq_ * half_ * 4, 0), sin(seq_ * half_ * 4, 0) {
        std::uniform_real_distribution<float> angle(-3.0f, 3.0f);
        for (std::size_t i = 0; i < seq * half; ++i) {
            const float a = angle(rng);
            const float c = std::cos(a), s = std::sin(a);
            std::memcpy(cos.data() + 4 * i, &c, 4);
            std::memcpy(sin.data() + 4 * i, &s, 4);
        }
    }
    Tensor cos_tensor() { return input(cos.data(), DType::Float32, seq, half); }
    Tensor sin_tensor() { return input(sin.data(), DType::Float32, seq, half); }
};

// The rotary kernel (attention/rotary.cu) against its twin, bit for bit: `batch` sequences of `seq` positions, `heads`
// heads of which `rotated` turn, head_dim `head_dim`, every buffer `offset` bytes past alignment; forward and inverse. Then
// the amax hand-off (rotary_current_scale): y as rotary's and the scale of y, each side twice (the second time with x a
// thousand times smaller), with the copied heads holding the largest values once (their amax counts too).
void run_rotary(DType dtype, std::size_t batch, std::size_t seq, std::size_t heads, std::size_t rotated, std::size_t head_dim,
                std::size_t offset, std::mt19937& rng) {
    const std::size_t rows = batch * seq, cols = heads * head_dim, n = rows * cols, half = head_dim / 2;
    const std::size_t element = dtype == DType::Float32 ? 4 : 2;
    char where[160];
    std::snprintf(where, sizeof where, "rotary %s %zu x %zu, %zu of %zu heads turn, head_dim %zu, offset %zu",
                  dtype == DType::Float32 ? "float32" : "bfloat16", rows, cols, rotated, heads, head_dim, offset);
    AngleTables tables(seq, half, rng);
    const Tensor cos_t = tables.cos_tensor(), sin_t = tables.sin_tensor();
    for (const int variant : {0, 1, 2}) {  // 1: the copied heads hold the largest values; 2: a NaN in one of them
        if (variant == 2 && rotated == heads) continue;
        const bool values_largest = variant == 1;
        Buffer x(n * element, offset), x_small(n * element, offset);
        std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
        for (std::size_t i = 0; i < n; ++i) {
            float v = uniform(rng);
            if (values_largest && i % cols >= rotated * head_dim) v *= 8.0f;  // the copied heads hold the largest values
            put(x, dtype, i, v);
            put(x_small, dtype, i, v / 1000.0f);
        }
        if (variant == 2) {  // a NaN with a payload of its own in the first row's last (copied) head, in both inputs
            const std::uint32_t nan32 = 0x7fc01234u;
            const std::uint16_t nan16 = 0x7fc3u;
            for (Buffer* b : {&x, &x_small}) {
                if (dtype == DType::Float32) {
                    std::memcpy(b->data() + 4 * (cols - 1), &nan32, 4);
                } else {
                    std::memcpy(b->data() + 2 * (cols - 1), &nan16, 2);
                }
            }
        }
        for (const bool inverse : {false, true}) {
            const RotaryHeads h{seq, heads, rotated, inverse};
            Buffer y_gpu(n * element, offset), y_twin(n * element, offset);
            rotary(input(x.data(), dtype, rows, cols), cos_t, sin_t, h, input(y_gpu.data(), dtype, rows, cols), Stream{});
            host::rotary(input(x.data(), dtype, rows, cols), cos_t, sin_t, h, input(y_twin.data(), dtype, rows, cols), Stream{});
            expect_same(y_gpu, y_twin, where, inverse ? "rotary (inverse)" : "rotary");
            Buffer f_gpu(n * element, offset), f_twin(n * element, offset);
            float fresh_gpu[3] = {0.0f, 0.0f, 0.25f}, fresh_twin[3] = {0.0f, 0.0f, 0.25f};
            const auto target_of = [](float* f) { return target_in(f, 57344.0f); };
            for (Buffer* in : {&x, &x_small}) {
                rotary_current_scale(input(in->data(), dtype, rows, cols), cos_t, sin_t, h, input(f_gpu.data(), dtype, rows, cols),
                                     target_of(fresh_gpu), Stream{});
                host::rotary_current_scale(input(in->data(), dtype, rows, cols), cos_t, sin_t, h, input(f_twin.data(), dtype, rows, cols),
                                           target_of(fresh_twin), Stream{});
            }
            expect_same(f_gpu, f_twin, where, "rotary_current_scale's y");
            // The second call's y is the small x's rotation: the scale from its stored values (abs_max_current_scale's).
            float want[3] = {0.0f, 0.0f, 0.25f};
            host::abs_max_current_scale(input(f_twin.data(), dtype, rows, cols), 57344.0f, input(&want[0], DType::Float32, 1, 1),
                                        input(&want[1], DType::Float32, 1, 1), Tensor{}, Stream{});
            for (int i = 0; i < 3; ++i) expect_same_amax(fresh_gpu[i], fresh_twin[i], std::string(where) + ", rotary_current_scale");
            for (int i = 0; i < 2; ++i) expect_same_amax(fresh_gpu[i], want[i], std::string(where) + ", rotary_current_scale against abs_max_current_scale");
        }
    }
}

// rotary_quantize (delayed scaling's FP8 form of the inverse rotation: llama's qkv output gradient) against its twin, bit
// for bit: y, the FP8 bytes, their transposed copy and amax, forward and inverse turns, with values of both signs and
// the copied heads holding the largest values once, a NaN in one of them once (without an amax); the twin's bytes are
// also checked against cast_transpose_to_fp8 of its own y (the header's promise). Shapes with rows a multiple of 8 and
// half a multiple of the vector run the tiled kernel; the others rotary's kernel and then the cast.
void run_rotary_quantize(DType dtype, std::size_t batch, std::size_t seq, std::size_t heads, std::size_t rotated,
                         std::size_t head_dim, std::size_t offset, std::mt19937& rng) {
    const std::size_t rows = batch * seq, cols = heads * head_dim, n = rows * cols, half = head_dim / 2;
    const std::size_t element = dtype == DType::Float32 ? 4 : 2;
    char where[176];
    std::snprintf(where, sizeof where, "rotary_quantize %s %zu x %zu, %zu of %zu heads turn, head_dim %zu, offset %zu",
                  dtype == DType::Float32 ? "float32" : "bfloat16", rows, cols, rotated, heads, head_dim, offset);
    AngleTables tables(seq, half, rng);
    const Tensor cos_t = tables.cos_tensor(), sin_t = tables.sin_tensor();
    for (const int variant : {0, 1, 2}) {  // 1: the copied heads hold the largest values; 2: a NaN in one of them, no amax
        if (variant == 2 && rotated == heads) continue;
        Buffer x(n * element, offset);
        std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
        for (std::size_t i = 0; i < n; ++i) {
            float v = uniform(rng);
            if (variant == 1 && i % cols >= rotated * head_dim) v *= 8.0f;
            put(x, dtype, i, v);
        }
        if (variant == 2) {  // a NaN with a payload of its own in the last row's last (copied) head
            const std::uint32_t nan32 = 0x7fc01234u;
            const std::uint16_t nan16 = 0x7fc3u;
            if (dtype == DType::Float32) {
                std::memcpy(x.data() + 4 * (n - 1), &nan32, 4);
            } else {
                std::memcpy(x.data() + 2 * (n - 1), &nan16, 2);
            }
        }
        for (const bool inverse : {false, true}) {
            const RotaryHeads h{seq, heads, rotated, inverse};
            struct Side {
                Buffer y, q, q_t;
                float scale = 29.0f, amax = 0.125f;
            };
            Side gpu{Buffer(n * element, offset), Buffer(n, offset), Buffer(n, offset)};
            Side twin{Buffer(n * element, offset), Buffer(n, offset), Buffer(n, offset)};
            const auto fp8_of = [&](Side& s) {
                Tensor fp8 = input(s.q.data(), DType::Float8E5M2, rows, cols);
                fp8.transposed = s.q_t.data();
                fp8.scale = &s.scale;
                fp8.amax = variant == 2 ? nullptr : &s.amax;
                return fp8;
            };
            rotary_quantize(input(x.data(), dtype, rows, cols), cos_t, sin_t, h, input(gpu.y.data(), dtype, rows, cols), fp8_of(gpu),
                            Stream{});
            host::rotary_quantize(input(x.data(), dtype, rows, cols), cos_t, sin_t, h, input(twin.y.data(), dtype, rows, cols),
                                  fp8_of(twin), Stream{});
            const std::string turn = std::string(where) + (inverse ? ", inverse" : ", forward");
            expect_same(gpu.y, twin.y, turn, "y");
            expect_same(gpu.q, twin.q, turn, "the FP8 bytes");
            expect_same(gpu.q_t, twin.q_t, turn, "the FP8 transposed copy");
            expect_same_amax(gpu.amax, twin.amax, turn);
            // The twin's FP8 output is cast_transpose_to_fp8's of its y.
            Side cast{Buffer(0, 0), Buffer(n, offset), Buffer(n, offset)};
            host::cast_transpose_to_fp8(input(twin.y.data(), dtype, rows, cols), fp8_of(cast), Stream{});
            expect_same(twin.q, cast.q, turn, "the twin's FP8 bytes against cast_transpose_to_fp8's");
            expect_same(twin.q_t, cast.q_t, turn, "the twin's transposed copy against cast_transpose_to_fp8's");
            expect_same_amax(twin.amax, cast.amax, turn + " (against cast_transpose_to_fp8)");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool small_only = argc > 1 && std::string(argv[1]) == "small";
    std::mt19937 rng(20261206);
    std::vector<Case> cases;
    for (const DType dtype : {DType::BFloat16, DType::Float32}) {
        const std::size_t element = dtype == DType::Float32 ? 4 : 2;
        // Around the tiled kernel's 64 columns and 32 rows, its 8-row pieces and its vectors (8 bfloat16, 4 float32).
        for (const auto& [rows, cols] : std::vector<std::pair<std::size_t, std::size_t>>{
                 {1, 1}, {7, 5}, {32, 64}, {33, 64}, {40, 72}, {65, 130}, {96, 200}, {130, 64}}) {
            cases.push_back({dtype, rows, cols, true, true, true, DType::Float32, 0, 0});
            cases.push_back({dtype, rows, cols, false, true, true, DType::BFloat16, 0, 0});
            cases.push_back({dtype, rows, cols, true, true, false, DType::Float32, element, 1});
            cases.push_back({dtype, rows, cols, true, false, true, DType::Float32, 0, 0});  // FP8 without the transposed copy
            // te BF16's form: dx and dbias, no FP8 output (aligned, and unaligned: element-wise loads and stores).
            cases.push_back({dtype, rows, cols, true, false, true, DType::Float32, 0, 0, false});
            if (rows == 40) {
                cases.push_back({dtype, rows, cols, true, false, true, DType::BFloat16, element, 0, false});
                // The FP8 output alone at a misaligned q (its bytes one by one), no dbias (current scaling without it too).
                cases.push_back({dtype, rows, cols, true, false, false, DType::Float32, 0, 1});
            }
        }
    }
    // Past 32768 rows a chunk holds more than 32 rows (40 here, 820 chunks): the tiled kernel's second tile of a chunk.
    // 820 blocks of 256 threads take most of the test's time (`tst_kernels_emulated small` leaves it out).
    if (!small_only) cases.push_back({DType::BFloat16, 32800, 8, true, true, true, DType::Float32, 0, 0});
    for (const Case& c : cases) run(c, rng);
    run_abs_max(rng);
    run_abs_max_current_scale(rng);
    // LayerNorm, RMSNorm and the casts: the fast kernels (bfloat16 rows of 8s, float32 of 4s, aligned; 1, 4 and 8 warps a
    // row), the plain ones (a ragged or unaligned row), partial rows fewer and more than 256, bands cut short.
    std::vector<NormCase> norms;
    for (const auto& [rows, hidden] : std::vector<std::pair<std::size_t, std::size_t>>{{1, 64}, {7, 72}, {33, 768}, {19, 100}}) {
        norms.push_back({DType::BFloat16, DType::BFloat16, DType::Float32, rows, hidden, 0});
        norms.push_back({DType::Float32, DType::BFloat16, DType::Float32, rows, hidden, 0});
        norms.push_back({DType::BFloat16, DType::BFloat16, DType::BFloat16, rows, hidden, 2});  // unaligned: the plain kernels
    }
    norms.push_back({DType::BFloat16, DType::BFloat16, DType::Float32, 300, 64, 0});  // more rows than 256 partial rows
    // Several rows a thread where the backward loads the next row ahead (layer_norm_backward_prefetches): the seed's
    // float32 residual stream's kernel (hidden 513..1024: 4 warps a row, 256 blocks of one row group), a short bfloat16
    // row (4 groups of a warp).
    norms.push_back({DType::Float32, DType::BFloat16, DType::Float32, 300, 520, 0});
    norms.push_back({DType::BFloat16, DType::BFloat16, DType::Float32, 1100, 64, 0});
    // More bands than the banded backward's 256 blocks (2100 rows of 8-row bands: 263), so a block's rows run on into a
    // second band (the prefetch of its first row across the band's barriers), float32 and bfloat16, 4 groups a block.
    norms.push_back({DType::BFloat16, DType::BFloat16, DType::Float32, 2100, 64, 0, true});
    norms.push_back({DType::Float32, DType::BFloat16, DType::Float32, 2100, 64, 0, true});
    for (const std::size_t hidden : {std::size_t{1024}, std::size_t{4096}}) {         // 4 and 8 warps a row
        norms.push_back({DType::BFloat16, DType::BFloat16, DType::Float32, hidden == 4096 ? 5u : 40u, hidden, 0});
        norms.push_back({DType::Float32, DType::BFloat16, DType::Float32, hidden == 4096 ? 5u : 40u, hidden, 0});
    }
    norms.push_back({DType::Float32, DType::Float32, DType::BFloat16, 64, 256, 0});
    for (const NormCase& c : norms) run_norm(c, rng);
    // The seed's qkv gradient shape, narrower; a ragged width; float32 parts; a padded row stride.
    run_stacked(DType::BFloat16, 96, 64, 0, rng);
    run_stacked(DType::BFloat16, 33, 20, 0, rng);
    run_stacked(DType::Float32, 40, 32, 0, rng);
    run_stacked(DType::BFloat16, 64, 64, 8, rng);
    run_cast_multi(rng);
    run_swiglu(DType::BFloat16, 40, 64, 0, rng);
    run_swiglu(DType::Float32, 33, 24, 0, rng);
    run_swiglu(DType::BFloat16, 19, 36, 2, rng);
    // The embedding: the seed's batch of 32 (whole groups of 8 rows) and 37 (a tail of 5); hidden of whole 16-byte pieces
    // (24) and not (13), and an unaligned buffer (the element-wise forward).
    run_embedding(DType::BFloat16, 32, 5, 24, 0, rng);
    run_embedding(DType::Float32, 37, 3, 24, 0, rng);
    run_embedding(DType::BFloat16, 37, 4, 13, 0, rng);
    run_embedding(DType::Float32, 5, 6, 16, 4, rng);
    // The cross-entropy: bfloat16 rows of 513 vectors (three loads a thread in the first batch), float32 rows of 4-wide
    // vectors, a vocab of no whole vectors and an unaligned buffer (one logit a thread), 1100 rows (two a block).
    run_loss(DType::BFloat16, 2, 3, 4104, 0, true, rng);
    run_loss(DType::Float32, 1, 4, 2052, 0, false, rng);
    run_loss(DType::Float32, 3, 2, 1030, 4, true, rng);
    run_loss(DType::BFloat16, 20, 55, 24, 0, false, rng);
    // The rotary embeddings: 16-byte pairs (bfloat16 8, float32 4) and one pair a thread (a half not a multiple of
    // them, an unaligned buffer), forward and inverse, value heads copied.
    run_rotary(DType::BFloat16, 2, 5, 6, 4, 16, 0, rng);
    run_rotary(DType::Float32, 3, 4, 4, 3, 8, 0, rng);
    run_rotary(DType::BFloat16, 2, 7, 3, 3, 6, 0, rng);
    run_rotary(DType::Float32, 2, 5, 3, 2, 16, 4, rng);
    // rotary_quantize: the tiled kernel on two column tiles (the second 16 wide), on the llama's head_dim 64 with a
    // second row tile of 8 rows, on float32's 4-wide vectors; the two-launch path where rows are not a multiple of 8
    // and where the buffers are not aligned.
    run_rotary_quantize(DType::BFloat16, 2, 8, 5, 3, 16, 0, rng);
    run_rotary_quantize(DType::BFloat16, 1, 72, 4, 3, 64, 0, rng);
    run_rotary_quantize(DType::Float32, 2, 8, 3, 2, 8, 0, rng);
    run_rotary_quantize(DType::BFloat16, 2, 5, 3, 2, 16, 0, rng);
    run_rotary_quantize(DType::BFloat16, 2, 8, 3, 2, 16, 2, rng);
    std::printf("%d checks over %zu activation cases, 13 abs_max and %d abs_max_current_scale calls, %zu normalization and cast "
                "cases, 4 stacked casts, a multi-tensor cast, 3 SwiGLU, 4 embedding, 4 cross-entropy, 4 rotary and 5 rotary_quantize cases, %d failed\n", checks, cases.size(),
                abs_max_scale_calls, norms.size(), failures);
    return failures == 0 ? 0 : 1;
}
