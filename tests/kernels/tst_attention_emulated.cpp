// kernels/attention/attention.cu run on the CPU (tests/kernels/emulated_cuda: a block of fibers, wmma tiles summed
// in order) against its host twin on the same inputs: the kernels' indexing, masks, padding, shared-memory layout and
// synchronisation, checked without a GPU. Not the tensor cores' rounding (the emulated sums run in the twin's order, so
// most outputs agree bit for bit; a warp's shuffled sums of l and delta differ from the twin's by a float ulp, which can
// move a bfloat16 rounding). Outputs and shared memory start as NaN, so an element never written fails, and guards
// around every output catch a write outside it. `tst_attention_emulated sweep` runs every sequence length around the
// tile edges at every head width the rule takes (126 cases, minutes). The amax hand-off's forms (*_current_scale) run on
// the first cases: the same outputs bit for bit, and current scaling's scale of them as abs_max_current_scale writes it
// from the output, kernel and twin alike, twice (the second time on inputs 1024 times smaller: a scratch word left set
// shows). Grouped queries (fewer key/value heads) on four more cases, the hand-off forms on two: the backward's
// workspace NaN before every call (a sum read before a head wrote it shows) and guarded.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "attention/attention_call.h"
#include "common/host_numbers.h"
#include "recipe/recipe_math.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/attention.h"

using namespace tewb::kernels;
using detail::bf16_to_float;
using detail::float_to_bf16;

namespace {

constexpr std::uint16_t kPoison16 = 0xffc1;  // NaNs no conversion writes
constexpr std::uint32_t kPoison32 = 0xffc0deadu;
constexpr std::size_t kGuard = 64;

// n elements starting `offset` elements past a 64-byte boundary, with kGuard elements of `fill` on each side.
template <typename T>
struct Buffer {
    std::vector<T> store;
    std::size_t first;
    Buffer(std::size_t n, std::size_t offset, T fill) : store(n + offset + 2 * kGuard + 64 / sizeof(T), fill) {
        const auto address = reinterpret_cast<std::uintptr_t>(store.data());
        first = (64 - address % 64) % 64 / sizeof(T) + kGuard + offset;
    }
    T* data() { return store.data() + first; }
};

struct Case {
    std::size_t batch, seq, heads, head_dim;
    std::size_t offset;        // elements every buffer starts past alignment (1: the element-wise loads and stores)
    std::size_t stride_extra;  // elements added to the fused buffers' row stride
    std::size_t kv_heads = 0;  // grouped queries: key/value heads (0: heads)
    std::size_t kv() const { return kv_heads == 0 ? heads : kv_heads; }
};

int failures = 0;

// The relative norm error over the (got, want) pairs `get` yields, against want's norm or `floor` where that is larger
// (one-token sequences: dq and dk are zero in exact math, so their rounding is measured against dv's size), counting
// NaNs (never written) as failures.
template <typename Get>
void compare(const char* what, const Case& c, std::size_t count, Get&& get, double bound, double floor = 0) {
    double num = 0, den = 0;
    std::size_t unwritten = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const auto [got, want] = get(i);
        if (std::isnan(got)) {
            ++unwritten;
            continue;
        }
        num += (double(got) - want) * (double(got) - want);
        den += double(want) * want;
    }
    const double error = std::sqrt(num / std::max({den, floor * floor, 1e-30}));
    if (unwritten == 0 && error <= bound) return;
    ++failures;
    std::printf("FAIL (batch %zu, seq %zu, heads %zu/%zu, head_dim %zu, offset %zu, stride +%zu) %s: relative error %.3e "
                "(bound %.0e), %zu never written\n",
                c.batch, c.seq, c.heads, c.kv(), c.head_dim, c.offset, c.stride_extra, what, error, bound, unwritten);
}

template <typename T>
void check_guards(const char* what, const Case& c, Buffer<T>& b, std::size_t n, T fill) {
    for (std::size_t i = 0; i < kGuard; ++i) {
        if (std::memcmp(&b.data()[-1 - static_cast<std::ptrdiff_t>(i)], &fill, sizeof(T)) != 0 ||
            std::memcmp(&b.data()[n + i], &fill, sizeof(T)) != 0) {
            ++failures;
            std::printf("FAIL (batch %zu, seq %zu) %s: written outside it\n", c.batch, c.seq, what);
            return;
        }
    }
}

Tensor matrix(void* data, DType dtype, std::size_t rows, std::size_t cols, std::size_t stride) {
    Tensor t = input(data, dtype, rows, cols);
    t.row_stride = stride;
    return t;
}

float as_float(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// A *_current_scale form's scale, scale_inv and staging (staging starts at a small amax, as a slot's would).
struct Scale {
    float values[3] = {-1.0f, -1.0f, 0.25f};
    CurrentScaleTarget target() {
        CurrentScaleTarget t;
        t.numerator = 448.0f;
        t.scale = input(&values[0], DType::Float32, 1, 1);
        t.scale_inv = input(&values[1], DType::Float32, 1, 1);
        t.staging = input(&values[2], DType::Float32, 1, 1);
        return t;
    }
};

void expect_same_scale(const char* what, const Case& c, const Scale& got, const Scale& want) {
    for (int i = 0; i < 3; ++i) {
        if (bits_of(got.values[i]) == bits_of(want.values[i])) continue;
        ++failures;
        const char* names[] = {"scale", "scale_inv", "staging"};
        std::printf("FAIL (batch %zu, seq %zu, heads %zu, head_dim %zu) %s: %s %g, abs_max_current_scale of the output: %g\n", c.batch,
                    c.seq, c.heads, c.head_dim, what, names[i], got.values[i], want.values[i]);
    }
}

template <typename T>
void expect_same_words(const char* what, const Case& c, const T* got, const T* want, std::size_t n) {
    if (std::memcmp(got, want, n * sizeof(T)) == 0) return;
    ++failures;
    std::printf("FAIL (batch %zu, seq %zu, heads %zu, head_dim %zu) %s: not the plain form's bits\n", c.batch, c.seq, c.heads,
                c.head_dim, what);
}

void expect_same_bits(const char* what, const Case& c, const std::uint16_t* got, const std::uint16_t* want, std::size_t n) {
    expect_same_words(what, c, got, want, n);
}

// A bfloat16 matrix of `rows` rows: where it starts, its row stride and its columns.
struct Part {
    const std::uint16_t* data;
    std::size_t stride, cols;
};

// Current scaling's values (recipe_math.h) from the largest |value| of bfloat16 matrices, from the same starting staging
// as Scale's.
Scale scale_of_stored(std::initializer_list<Part> parts, std::size_t rows) {
    std::uint32_t largest = 0;
    for (const auto& [data, stride, cols] : parts) {
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t e = 0; e < cols; ++e) largest = std::max(largest, bits_of(bf16_to_float(data[r * stride + e])) & 0x7fffffffu);
        }
    }
    Scale s;
    detail::current_scale_values(as_float(largest), 448.0f, &s.values[0], &s.values[1], &s.values[2]);
    return s;
}

void run(const Case& c, std::mt19937& rng, bool current_scale) {
    // The fused buffers' layout: each token's q, k and v side by side ([heads + 2 · kv_heads, head_dim]), then the
    // stride's padding.
    const std::size_t tokens = c.batch * c.seq, hidden = c.heads * c.head_dim, kv_hidden = c.kv() * c.head_dim;
    const std::size_t cols[3] = {hidden, kv_hidden, kv_hidden};
    const std::size_t start[3] = {0, hidden, hidden + kv_hidden};
    const std::size_t packed = hidden + 2 * kv_hidden, wide = packed + c.stride_extra;
    const std::size_t lse_count = c.batch * c.heads * c.seq;
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    Buffer<std::uint16_t> qkv(tokens * wide, c.offset, 0), d_out(tokens * hidden, c.offset, 0);
    for (std::size_t i = 0; i < tokens * wide; ++i) qkv.data()[i] = float_to_bf16(uniform(rng));
    for (std::size_t i = 0; i < tokens * hidden; ++i) d_out.data()[i] = float_to_bf16(uniform(rng) / 2);
    const auto part_of = [&](std::uint16_t* b, std::size_t which) {
        return matrix(b + start[which], DType::BFloat16, tokens, cols[which], wide);
    };
    const Tensor q = part_of(qkv.data(), 0);
    const Tensor k = part_of(qkv.data(), 1);
    const Tensor v = part_of(qkv.data(), 2);
    const Tensor dy = matrix(d_out.data(), DType::BFloat16, tokens, hidden, hidden);
    const AttentionHeads heads{c.seq, c.heads, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), c.kv_heads};
    // The backward's scratch (grouped queries), NaN before every call: a sum read before it was written shows.
    const std::size_t workspace_floats = attention_backward_workspace_bytes(tokens, hidden, heads) / sizeof(float);
    Buffer<std::uint32_t> scratch(workspace_floats, 0, kPoison32);
    const auto workspace = [&] {
        std::fill(scratch.data(), scratch.data() + workspace_floats, kPoison32);
        return Workspace{workspace_floats == 0 ? nullptr : scratch.data(), workspace_floats * sizeof(float)};
    };
    if ((c.kv() == c.heads) != (workspace_floats == 0)) {
        ++failures;
        std::printf("FAIL (heads %zu/%zu) a workspace of %zu floats\n", c.heads, c.kv(), workspace_floats);
    }

    Buffer<std::uint16_t> o(tokens * hidden, c.offset, kPoison16), o_twin(tokens * hidden, c.offset, kPoison16);
    Buffer<std::uint32_t> lse(lse_count, 0, kPoison32), lse_twin(lse_count, 0, kPoison32);
    const auto o_of = [&](Buffer<std::uint16_t>& b) { return matrix(b.data(), DType::BFloat16, tokens, hidden, hidden); };
    const auto lse_of = [&](Buffer<std::uint32_t>& b) { return matrix(b.data(), DType::Float32, c.batch * c.heads, c.seq, c.seq); };
    attention_forward(q, k, v, heads, o_of(o), lse_of(lse), Stream{});
    host::attention_forward(q, k, v, heads, o_of(o_twin), lse_of(lse_twin), Stream{});
    compare("o", c, tokens * hidden, [&](std::size_t i) {
        return std::pair{bf16_to_float(o.data()[i]), bf16_to_float(o_twin.data()[i])};
    }, 1e-2);
    compare("lse", c, lse_count, [&](std::size_t i) { return std::pair{as_float(lse.data()[i]), as_float(lse_twin.data()[i])}; },
            1e-5);
    check_guards("o", c, o, tokens * hidden, kPoison16);
    check_guards("lse", c, lse, lse_count, kPoison32);
    if (current_scale) {
        // v 1024 times smaller the second time (exact in bfloat16): o too, and its scale 1024 times larger.
        Buffer<std::uint16_t> small(tokens * wide, c.offset, 0);
        std::memcpy(small.data(), qkv.data(), tokens * wide * sizeof(std::uint16_t));
        for (std::size_t r = 0; r < tokens; ++r) {
            for (std::size_t e = start[2]; e < packed; ++e) {
                std::uint16_t& x = small.data()[r * wide + e];
                x = float_to_bf16(bf16_to_float(x) / 1024.0f);
            }
        }
        const Tensor v_small = part_of(small.data(), 2);
        for (const Tensor* values : {&v, &v_small}) {
            for (const bool twin : {false, true}) {
                Buffer<std::uint16_t> plain(tokens * hidden, c.offset, kPoison16), fresh(tokens * hidden, c.offset, kPoison16);
                Buffer<std::uint32_t> lse_plain(lse_count, 0, kPoison32), lse_fresh(lse_count, 0, kPoison32);
                Scale got;
                if (twin) {
                    host::attention_forward(q, k, *values, heads, o_of(plain), lse_of(lse_plain), Stream{});
                    host::attention_forward_current_scale(q, k, *values, heads, o_of(fresh), lse_of(lse_fresh), got.target(), Stream{});
                } else {
                    attention_forward(q, k, *values, heads, o_of(plain), lse_of(lse_plain), Stream{});
                    attention_forward_current_scale(q, k, *values, heads, o_of(fresh), lse_of(lse_fresh), got.target(), Stream{});
                }
                const char* what = twin ? "attention_forward_current_scale (twin)" : "attention_forward_current_scale";
                expect_same_bits(what, c, fresh.data(), plain.data(), tokens * hidden);
                expect_same_words("lse", c, lse_fresh.data(), lse_plain.data(), lse_count);
                expect_same_scale(what, c, got, scale_of_stored({{plain.data(), hidden, hidden}}, tokens));
            }
        }
    }

    // The backward on the twin's forward for both, so that only the backward differs.
    Buffer<std::uint16_t> grads(tokens * wide, c.offset, kPoison16), grads_twin(tokens * wide, c.offset, kPoison16);
    const auto part = [&](Buffer<std::uint16_t>& b, std::size_t which) { return part_of(b.data(), which); };
    attention_backward(q, k, v, o_of(o_twin), dy, lse_of(lse_twin), heads, part(grads, 0), part(grads, 1), part(grads, 2), workspace(),
                       Stream{});
    host::attention_backward(q, k, v, o_of(o_twin), dy, lse_of(lse_twin), heads, part(grads_twin, 0), part(grads_twin, 1),
                             part(grads_twin, 2), workspace(), Stream{});
    const auto at = [&](std::size_t which, std::size_t i) { return i / cols[which] * wide + start[which] + i % cols[which]; };
    double dv_norm = 0;
    for (std::size_t i = 0; i < tokens * kv_hidden; ++i) dv_norm += std::pow(bf16_to_float(grads_twin.data()[at(2, i)]), 2.0);
    const char* names[] = {"dq", "dk", "dv"};
    for (std::size_t which = 0; which < 3; ++which) {
        compare(names[which], c, tokens * cols[which], [&](std::size_t i) {
            return std::pair{bf16_to_float(grads.data()[at(which, i)]), bf16_to_float(grads_twin.data()[at(which, i)])};
        }, 1e-2, c.seq == 1 ? std::sqrt(dv_norm) : 0.0);
    }
    // Between the rows, the padding of a wider stride stays untouched.
    for (std::size_t r = 0; r < tokens && c.stride_extra > 0; ++r) {
        for (std::size_t e = packed; e < wide; ++e) {
            if (grads.data()[r * wide + e] != kPoison16) {
                ++failures;
                std::printf("FAIL (batch %zu, seq %zu) gradients: the row stride's padding was written\n", c.batch, c.seq);
                return;
            }
        }
    }
    check_guards("gradients", c, grads, tokens * wide, kPoison16);
    check_guards("workspace", c, scratch, workspace_floats, kPoison32);
    const auto all_of = [&](Buffer<std::uint16_t>& b) {
        return scale_of_stored({{b.data(), wide, hidden}, {b.data() + start[1], wide, kv_hidden}, {b.data() + start[2], wide, kv_hidden}},
                               tokens);
    };
    if (current_scale) {
        // d_o 1024 times smaller the second time (exact in bfloat16): the gradients too, their scale 1024 times larger. Then
        // q 16 times larger and k 16 times smaller, and the other way round (the same scores, so o and lse still hold): dk's
        // values, then dq's, the largest of the three (dv's, most often, with the inputs as drawn).
        Buffer<std::uint16_t> d_small(tokens * hidden, c.offset, 0);
        for (std::size_t i = 0; i < tokens * hidden; ++i) d_small.data()[i] = float_to_bf16(bf16_to_float(d_out.data()[i]) / 1024.0f);
        const Tensor dy_small = matrix(d_small.data(), DType::BFloat16, tokens, hidden, hidden);
        Buffer<std::uint16_t> q_up(tokens * wide, c.offset, 0), k_up(tokens * wide, c.offset, 0);
        for (std::size_t r = 0; r < tokens; ++r) {
            for (std::size_t e = 0; e < packed; ++e) {
                const float x = bf16_to_float(qkv.data()[r * wide + e]);
                const float factor = e < start[1] ? 16.0f : e < start[2] ? 1.0f / 16.0f : 1.0f;
                q_up.data()[r * wide + e] = float_to_bf16(x * factor);
                k_up.data()[r * wide + e] = float_to_bf16(x / factor);
            }
        }
        struct Inputs {
            Tensor q, k, d;
        };
        const Inputs variants[] = {{q, k, dy},
                                   {q, k, dy_small},
                                   {part_of(q_up.data(), 0), part_of(q_up.data(), 1), dy},
                                   {part_of(k_up.data(), 0), part_of(k_up.data(), 1), dy}};
        for (std::size_t variant = 0; variant < 4; ++variant) {
            const Inputs& in = variants[variant];
            const Tensor* d = &in.d;
            for (const bool twin : {false, true}) {
                Buffer<std::uint16_t> plain(tokens * wide, c.offset, kPoison16), fresh(tokens * wide, c.offset, kPoison16);
                Scale got;
                if (twin) {
                    host::attention_backward(in.q, in.k, v, o_of(o_twin), *d, lse_of(lse_twin), heads, part(plain, 0), part(plain, 1),
                                             part(plain, 2), workspace(), Stream{});
                    host::attention_backward_current_scale(in.q, in.k, v, o_of(o_twin), *d, lse_of(lse_twin), heads, part(fresh, 0),
                                                           part(fresh, 1), part(fresh, 2), workspace(), got.target(), Stream{});
                } else {
                    attention_backward(in.q, in.k, v, o_of(o_twin), *d, lse_of(lse_twin), heads, part(plain, 0), part(plain, 1),
                                       part(plain, 2), workspace(), Stream{});
                    attention_backward_current_scale(in.q, in.k, v, o_of(o_twin), *d, lse_of(lse_twin), heads, part(fresh, 0),
                                                     part(fresh, 1), part(fresh, 2), workspace(), got.target(), Stream{});
                }
                const char* what = twin ? "attention_backward_current_scale (twin)" : "attention_backward_current_scale";
                expect_same_bits(what, c, fresh.data(), plain.data(), tokens * wide);
                // The variant's purpose: the part it names holds the largest value (one token: dq and dk are 0).
                const std::size_t largest_part = variant == 2 ? 1 : 0;
                if (variant >= 2 && c.seq > 1 &&
                    scale_of_stored({{plain.data() + start[largest_part], wide, cols[largest_part]}}, tokens).values[0] !=
                        all_of(plain).values[0]) {
                    ++failures;
                    std::printf("FAIL (seq %zu, head_dim %zu) %s: %s does not hold the largest gradient\n", c.seq, c.head_dim, what,
                                largest_part == 1 ? "dk" : "dq");
                }
                expect_same_scale(what, c, got, all_of(plain));
            }
        }
    }
}

// The forward deals every row block to exactly one warp, and no warp's share of the triangle's tiles exceeds the
// longest-first round robin's (the seed's 6 row blocks: 6 tiles at most instead of 8).
void check_row_block_dealing() {
    using detail::attention_forward_row_block;
    using detail::kAttentionWarps;
    for (int blocks = 1; blocks <= 11; ++blocks) {
        std::vector<int> dealt(static_cast<std::size_t>(blocks), 0);
        int most = 0, most_before = 0;
        for (int warp = 0; warp < kAttentionWarps; ++warp) {
            int tiles = 0, tiles_before = 0;
            for (int round = 0;; ++round) {
                const int rb = attention_forward_row_block(blocks, warp, round);
                if (rb < 0) break;
                if (rb >= blocks) {
                    std::printf("FAIL dealing %d row blocks: warp %d got row block %d\n", blocks, warp, rb);
                    ++failures;
                    break;
                }
                ++dealt[static_cast<std::size_t>(rb)];
                tiles += rb + 1;
            }
            for (int item = warp; item < blocks; item += kAttentionWarps) tiles_before += blocks - item;
            most = std::max(most, tiles);
            most_before = std::max(most_before, tiles_before);
        }
        for (int rb = 0; rb < blocks; ++rb) {
            if (dealt[static_cast<std::size_t>(rb)] != 1) {
                std::printf("FAIL dealing %d row blocks: row block %d dealt %d times\n", blocks, rb, dealt[static_cast<std::size_t>(rb)]);
                ++failures;
            }
        }
        if (most > most_before || (blocks == 6 && most != 6)) {
            std::printf("FAIL dealing %d row blocks: the busiest warp has %d tiles (round robin: %d)\n", blocks, most, most_before);
            ++failures;
        }
    }
}

// The shared-memory rule with the static reserve: every shape the rule takes fits the opt-in limit with the reserve
// beside it, and the shapes whose dynamic bytes are exactly 48 KiB (the forward at seq 49 to 64, head_dim 64; the
// backward at seq 33 to 48, head_dim 128) ask for the raised limit, which the hand-off forms' static words need there.
void check_shared_rule() {
    for (std::size_t head_dim = 16; head_dim <= kAttentionMaxHeadDim; head_dim += 16) {
        for (std::size_t seq = 1; seq <= kAttentionMaxSeq; ++seq) {
            if (attention_refusal(seq, head_dim)) continue;
            const std::size_t need = std::max(attention_forward_shared_bytes(seq, head_dim), attention_backward_shared_bytes(seq, head_dim));
            if (need + kAttentionStaticSharedReserve > kAttentionSharedBytesLimit) {
                ++failures;
                std::printf("FAIL seq %zu, head_dim %zu: %zu bytes and the reserve pass the limit\n", seq, head_dim, need);
            }
        }
    }
    const std::size_t edges[] = {attention_forward_shared_bytes(64, 64), attention_backward_shared_bytes(48, 128)};
    for (const std::size_t bytes : edges) {
        if (bytes != 48 * 1024 || !detail::attention_needs_raised_limit(bytes)) {
            ++failures;
            std::printf("FAIL %zu dynamic bytes (48 KiB expected) do not ask for the raised limit\n", bytes);
        }
    }
    if (detail::attention_needs_raised_limit(48 * 1024 - kAttentionStaticSharedReserve)) {
        ++failures;
        std::printf("FAIL 48 KiB less the reserve asks for the raised limit\n");
    }
}

// No rows: nothing to launch, and the scale of amax 0 (what abs_max_current_scale of an empty tensor writes), both ways.
void check_no_rows() {
    const AttentionHeads heads{4, 2, 0.25f};
    std::uint16_t none[1] = {0};
    float lse[1] = {0.0f};
    const Tensor empty = input(none, DType::BFloat16, 0, 64);
    const Tensor no_lse = input(lse, DType::Float32, 0, 4);
    const Case c{0, 4, 2, 32, 0, 0};
    Scale want;
    detail::current_scale_values(0.0f, 448.0f, &want.values[0], &want.values[1], &want.values[2]);
    for (int form = 0; form < 4; ++form) {
        Scale got;
        switch (form) {
            case 0: attention_forward_current_scale(empty, empty, empty, heads, empty, no_lse, got.target(), Stream{}); break;
            case 1: host::attention_forward_current_scale(empty, empty, empty, heads, empty, no_lse, got.target(), Stream{}); break;
            case 2:
                attention_backward_current_scale(empty, empty, empty, empty, empty, no_lse, heads, empty, empty, empty, Workspace{},
                                                 got.target(), Stream{});
                break;
            default:
                host::attention_backward_current_scale(empty, empty, empty, empty, empty, no_lse, heads, empty, empty, empty,
                                                       Workspace{}, got.target(), Stream{});
        }
        expect_same_scale("no rows", c, got, want);
    }
}

}  // namespace

int main(int argc, char** argv) {
    // The seed's head width at seq 96, an odd length, one token, the longest sequences the rule takes at head_dim 64
    // and 16, the widest head, and the element-wise paths (every buffer one element past alignment; a row stride that
    // is not a multiple of 8 elements); then grouped queries: the seed llama's groups of 3 at seq 96, one key/value head
    // for 4 query heads at an odd length over 2 sequences, one token, and the element-wise paths.
    std::vector<Case> cases = {{1, 96, 2, 64, 0, 0},    {3, 17, 2, 16, 0, 0},    {2, 1, 3, 32, 0, 0},    {1, 128, 1, 64, 0, 0},
                               {1, 80, 1, 128, 0, 0},   {1, 176, 1, 16, 0, 0},   {2, 33, 2, 32, 0, 0},   {2, 33, 1, 32, 1, 0},
                               {3, 17, 1, 16, 1, 0},    {1, 80, 1, 128, 1, 0},   {1, 33, 2, 32, 0, 1},   {1, 96, 6, 64, 0, 0, 2},
                               {2, 17, 4, 16, 0, 0, 1}, {2, 1, 4, 32, 0, 0, 2},  {1, 33, 4, 32, 1, 1, 2}};
    const std::size_t first_grouped = 11;
    if (argc > 1 && std::string(argv[1]) == "sweep") {
        cases.clear();
        for (std::size_t seq : {1, 2, 7, 15, 16, 17, 31, 32, 47, 48, 49, 63, 64, 65, 95, 111, 112, 113, 127, 128, 129, 160, 175, 176}) {
            for (std::size_t head_dim : {16, 32, 48, 64, 96, 128, 256}) {
                if (!attention_refusal(seq, head_dim)) cases.push_back({1, seq, 2, head_dim, seq % 2, 0});
            }
        }
    }
    check_row_block_dealing();
    check_no_rows();
    check_shared_rule();
    std::mt19937 rng(20261206);
    // The amax hand-off's forms on the first five cases (the seed's shape, an odd length, one token, the longest at
    // head_dim 64 and the widest head) and the first two with grouped queries, both ways.
    for (std::size_t i = 0; i < cases.size(); ++i) run(cases[i], rng, i < 5 || (cases[i].kv_heads != 0 && i < first_grouped + 2));
    std::printf("%zu cases, %d failing checks\n", cases.size(), failures);
    return failures == 0 ? 0 : 1;
}
