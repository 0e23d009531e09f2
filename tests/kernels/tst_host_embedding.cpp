// The host token + position embedding (tewb_kernels/host/embedding.h) against loops written here: the forward
// bit for bit against one float add and one rounding, the backward's sums bit for bit against the orders the
// header states and within the stated bounds of double-precision sums, out-of-range tokens, strided tokens,
// null outputs, argument refusals and launch counts.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/embedding.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "host_tensor.h"
#include "launch_checks.h"

using tewb::kernels::DType;
using tewb::kernels::KernelError;
using tewb::kernels::input;
using tewb::kernels::Tensor;
namespace host = tewb::kernels::host;
namespace detail = tewb::kernels::detail;

using tewb::test::expect_refusal;
using tewb::test::launches_of;

namespace {

using Buffer = tewb::test::HostTensor;

// int64 token ids [batch, seq] whose rows are `stride` elements apart.
Tensor tokens_of(const std::int64_t* data, std::size_t batch, std::size_t seq, std::size_t stride) {
    Tensor t = input(data, DType::Int64, batch, seq);
    t.row_stride = stride;
    return t;
}

Buffer random_tensor(DType dtype, std::size_t count, std::mt19937& rng, float spread = 1.0f) {
    Buffer t(dtype, count);
    std::normal_distribution<float> normal(0.0f, spread);
    for (std::size_t i = 0; i < count; ++i) t.set(i, normal(rng));
    return t;
}

// A [batch, stride] token tensor: the first seq of each row drawn from [0, vocab), the rest a value no read
// may take (far out of range).
std::vector<std::int64_t> random_tokens(std::size_t batch, std::size_t seq, std::size_t stride, std::size_t vocab,
                                        std::mt19937& rng) {
    std::vector<std::int64_t> tokens(batch * stride, std::int64_t{1} << 40);
    std::uniform_int_distribution<std::int64_t> pick(0, static_cast<std::int64_t>(vocab) - 1);
    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t s = 0; s < seq; ++s) tokens[b * stride + s] = pick(rng);
    }
    return tokens;
}

// The shape of one embedding call.
struct Shape {
    std::size_t batch, seq, stride, vocab, hidden;
    std::size_t rows() const { return batch * seq; }
    std::int64_t token(const std::vector<std::int64_t>& tokens, std::size_t r) const { return tokens[(r / seq) * stride + r % seq]; }
    bool valid(std::int64_t token) const { return token >= 0 && token < static_cast<std::int64_t>(vocab); }
};

// The header's forward, written out: one float add, one rounding to the dtype; NaN for an out-of-range token.
// No positions: the table's row alone (a model without learned positions).
Buffer forward_reference(const Shape& shape, const std::vector<std::int64_t>& tokens, const Buffer& table,
                         const Buffer* positions) {
    Buffer out(table.dtype(), shape.rows() * shape.hidden);
    for (std::size_t r = 0; r < shape.rows(); ++r) {
        const std::int64_t token = shape.token(tokens, r);
        for (std::size_t c = 0; c < shape.hidden; ++c) {
            float v = detail::bits_float(0x7fc00000u);
            if (shape.valid(token)) {
                v = table.at(static_cast<std::size_t>(token) * shape.hidden + c);
                if (positions != nullptr) v += positions->at((r % shape.seq) * shape.hidden + c);
            }
            out.set(r * shape.hidden + c, v);
        }
    }
    return out;
}

}  // namespace

class TestHostEmbedding : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void forwardIsOneAddAndOneRounding() {
        std::mt19937 rng(11);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            // hidden 8 and 768 whole 16-byte vectors on the GPU, 13 the scalar path: the same values either way.
            for (const std::size_t hidden : {std::size_t{8}, std::size_t{13}, std::size_t{768}}) {
                const Shape shape{3, 5, 6, 40, hidden};
                const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
                const Buffer table = random_tensor(dtype, shape.vocab * hidden, rng);
                const Buffer positions = random_tensor(dtype, shape.seq * hidden, rng, 0.1f);
                Buffer out(dtype, shape.rows() * hidden);
                host::embedding_forward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                        input(table.data(), dtype, shape.vocab, hidden), input(positions.data(), dtype, shape.seq, hidden),
                                        input(out.data(), dtype, shape.batch * shape.seq, hidden), {});
                const Buffer want = forward_reference(shape, tokens, table, &positions);
                for (std::size_t i = 0; i < shape.rows() * hidden; ++i) {
                    QVERIFY2(out.bits(i) == want.bits(i), ("dtype " + std::string(tewb::kernels::to_string(dtype)) + " hidden " +
                                                           std::to_string(hidden) + " element " + std::to_string(i))
                                                              .c_str());
                }
            }
        }
    }

    void withoutPositionsTheRowsAreTheTables() {
        // Llama's input (rotary embeddings, no learned positions): positions' data null, whatever its shape and dtype
        // say; each row is its token's table row as stored (an out-of-range token still a NaN row), one launch.
        std::mt19937 rng(19);
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const std::size_t hidden : {std::size_t{8}, std::size_t{13}}) {
                const Shape shape{3, 5, 6, 40, hidden};
                auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
                tokens[shape.stride + 2] = static_cast<std::int64_t>(shape.vocab);
                const Buffer table = random_tensor(dtype, shape.vocab * hidden, rng);
                Buffer out = random_tensor(dtype, shape.rows() * hidden, rng, 100.0f);
                const std::uint64_t launches = launches_of([&] {
                    host::embedding_forward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                            input(table.data(), dtype, shape.vocab, hidden), input(nullptr, DType::Float16, 0, 0),
                                            input(out.data(), dtype, shape.batch * shape.seq, hidden), {});
                });
                QCOMPARE(launches, std::uint64_t{1});
                const Buffer want = forward_reference(shape, tokens, table, nullptr);
                for (std::size_t r = 0; r < shape.rows(); ++r) {
                    const std::int64_t token = shape.token(tokens, r);
                    for (std::size_t c = 0; c < hidden; ++c) {
                        const std::size_t i = r * hidden + c;
                        QCOMPARE(out.bits(i), want.bits(i));
                        if (shape.valid(token)) QCOMPARE(out.bits(i), table.bits(static_cast<std::size_t>(token) * hidden + c));
                    }
                }
                QVERIFY(std::isnan(out.at(shape.seq * hidden + 2 * hidden)));
            }
        }
    }

    void stridedTokensReadOnlyTheirRows() {
        // A narrow() of a [batch, seq + 1] token tensor, and a wider stride: the values past seq are never read
        // (they are out of range, so a read would show as a NaN row).
        std::mt19937 rng(12);
        for (const std::size_t extra : {std::size_t{0}, std::size_t{1}, std::size_t{4}}) {
            const Shape shape{4, 7, 7 + extra, 30, 16};
            const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
            const Buffer table = random_tensor(DType::Float32, shape.vocab * shape.hidden, rng);
            const Buffer positions = random_tensor(DType::Float32, shape.seq * shape.hidden, rng);
            Buffer out(DType::Float32, shape.rows() * shape.hidden);
            host::embedding_forward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                    input(table.data(), DType::Float32, shape.vocab, shape.hidden),
                                    input(positions.data(), DType::Float32, shape.seq, shape.hidden),
                                    input(out.data(), DType::Float32, shape.batch * shape.seq, shape.hidden), {});
            for (std::size_t b = 0; b < shape.batch; ++b) {
                for (std::size_t s = 0; s < shape.seq; ++s) {
                    const auto token = static_cast<std::size_t>(tokens[b * shape.stride + s]);
                    for (std::size_t c = 0; c < shape.hidden; ++c) {
                        const float want = table.at(token * shape.hidden + c) + positions.at(s * shape.hidden + c);
                        QCOMPARE(out.at((b * shape.seq + s) * shape.hidden + c), want);
                    }
                }
            }
            // The backward reads the same tokens: each row's dy lands in its token's row of dtable.
            const Buffer dy = random_tensor(DType::Float32, shape.rows() * shape.hidden, rng);
            Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
            host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                     input(dy.data(), DType::Float32, shape.batch * shape.seq, shape.hidden),
                                     input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                     input(nullptr, DType::Float32, shape.seq, shape.hidden), {});
            std::vector<float> want(shape.vocab * shape.hidden, 0.0f);
            for (std::size_t r = 0; r < shape.rows(); ++r) {
                const auto token = static_cast<std::size_t>(shape.token(tokens, r));
                for (std::size_t c = 0; c < shape.hidden; ++c) want[token * shape.hidden + c] += dy.at(r * shape.hidden + c);
            }
            for (std::size_t i = 0; i < want.size(); ++i) QCOMPARE(dtable.at(i), want[i]);
        }
    }

    void backwardSumsAgainstDouble() {
        std::mt19937 rng(13);
        for (const DType dy_dtype : {DType::Float32, DType::BFloat16}) {
            for (const DType dpositions_dtype : {DType::Float32, DType::BFloat16}) {
                // vocab 9 for 96 rows: every token row is hit about ten times.
                const Shape shape{8, 12, 13, 9, 24};
                const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
                const Buffer dy = random_tensor(dy_dtype, shape.rows() * shape.hidden, rng);
                Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
                Buffer dpositions(dpositions_dtype, shape.seq * shape.hidden);
                QCOMPARE(launches_of([&] {
                             host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                                      input(dy.data(), dy_dtype, shape.batch * shape.seq, shape.hidden),
                                                      input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                                      input(dpositions.data(), dpositions_dtype, shape.seq, shape.hidden), {});
                         }),
                         std::uint64_t{1});
                check_dtable(shape, tokens, dy, std::vector<float>(shape.vocab * shape.hidden, 0.0f), dtable);
                check_dpositions(shape, dy, dpositions);
            }
        }
    }

    void repeatedTokensAccumulate() {
        // Every row the same token: its dtable row is the sum of all of dy's rows, the others stay 0.
        std::mt19937 rng(14);
        const Shape shape{5, 6, 7, 4, 10};
        std::vector<std::int64_t> tokens(shape.batch * shape.stride, 2);
        const Buffer dy = random_tensor(DType::Float32, shape.rows() * shape.hidden, rng);
        Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
        host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                 input(dy.data(), DType::Float32, shape.batch * shape.seq, shape.hidden),
                                 input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                 input(nullptr, DType::Float32, shape.seq, shape.hidden), {});
        for (std::size_t c = 0; c < shape.hidden; ++c) {
            float sum = 0.0f;
            for (std::size_t r = 0; r < shape.rows(); ++r) sum += dy.at(r * shape.hidden + c);
            QCOMPARE(dtable.at(2 * shape.hidden + c), sum);
            for (const std::size_t other : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
                QCOMPARE(dtable.bits(other * shape.hidden + c), std::uint32_t{0});
            }
        }
        check_dtable(shape, tokens, dy, std::vector<float>(shape.vocab * shape.hidden, 0.0f), dtable);
    }

    void accumulatesOntoAGivenGradient() {
        // dtable already holds another gradient of the tied weight (the LM head's dW): added to, never replaced;
        // rows of tokens that do not occur keep their bits.
        std::mt19937 rng(15);
        for (const DType dy_dtype : {DType::Float32, DType::BFloat16}) {
            const Shape shape{2, 9, 10, 50, 12};
            const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
            const Buffer dy = random_tensor(dy_dtype, shape.rows() * shape.hidden, rng);
            Buffer dtable = random_tensor(DType::Float32, shape.vocab * shape.hidden, rng, 3.0f);
            std::vector<float> before(shape.vocab * shape.hidden);
            for (std::size_t i = 0; i < before.size(); ++i) before[i] = dtable.at(i);
            host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                     input(dy.data(), dy_dtype, shape.batch * shape.seq, shape.hidden),
                                     input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                     input(nullptr, DType::Float32, shape.seq, shape.hidden), {});
            check_dtable(shape, tokens, dy, before, dtable);
        }
    }

    void outOfRangeTokenIsANaNRowAndSkipped() {
        std::mt19937 rng(16);
        const Shape shape{2, 4, 5, 6, 8};
        for (const DType dtype : {DType::Float32, DType::BFloat16}) {
            for (const std::int64_t bad : {std::int64_t{-1}, std::int64_t{6}, std::int64_t{1} << 40}) {
                auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
                const std::size_t bad_row = 5;  // b = 1, s = 1
                tokens[1 * shape.stride + 1] = bad;
                const Buffer table = random_tensor(dtype, shape.vocab * shape.hidden, rng);
                const Buffer positions = random_tensor(dtype, shape.seq * shape.hidden, rng);
                Buffer out(dtype, shape.rows() * shape.hidden);
                host::embedding_forward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                        input(table.data(), dtype, shape.vocab, shape.hidden),
                                        input(positions.data(), dtype, shape.seq, shape.hidden),
                                        input(out.data(), dtype, shape.batch * shape.seq, shape.hidden), {});
                const std::uint32_t nan_bits = dtype == DType::Float32 ? 0x7fc00000u : 0x7fffu;
                const Buffer want = forward_reference(shape, tokens, table, &positions);
                for (std::size_t r = 0; r < shape.rows(); ++r) {
                    for (std::size_t c = 0; c < shape.hidden; ++c) {
                        const std::size_t i = r * shape.hidden + c;
                        if (r == bad_row) {
                            QCOMPARE(out.bits(i), nan_bits);
                        } else {
                            QCOMPARE(out.bits(i), want.bits(i));
                            QVERIFY(!std::isnan(out.at(i)));
                        }
                    }
                }
                // Backward: the row is left out of dtable (no write anywhere), still part of dpositions.
                const Buffer dy = random_tensor(dtype, shape.rows() * shape.hidden, rng);
                Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
                Buffer dpositions(DType::Float32, shape.seq * shape.hidden);
                host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                         input(dy.data(), dtype, shape.batch * shape.seq, shape.hidden),
                                         input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                         input(dpositions.data(), DType::Float32, shape.seq, shape.hidden), {});
                check_dtable(shape, tokens, dy, std::vector<float>(shape.vocab * shape.hidden, 0.0f), dtable);
                check_dpositions(shape, dy, dpositions);
                for (std::size_t i = 0; i < shape.vocab * shape.hidden; ++i) QVERIFY(std::isfinite(dtable.at(i)));
            }
        }
    }

    void nullOutputsAreLeftOut() {
        std::mt19937 rng(17);
        const Shape shape{3, 4, 5, 7, 6};
        const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
        const Buffer dy = random_tensor(DType::BFloat16, shape.rows() * shape.hidden, rng);

        // dpositions null: dtable only.
        Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
        QCOMPARE(launches_of([&] {
                     host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                              input(dy.data(), DType::BFloat16, shape.batch * shape.seq, shape.hidden),
                                              input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                              input(nullptr, DType::Float32, shape.seq, shape.hidden), {});
                 }),
                 std::uint64_t{1});
        check_dtable(shape, tokens, dy, std::vector<float>(shape.vocab * shape.hidden, 0.0f), dtable);

        // dtable null: dpositions only, written over whatever it held.
        Buffer dpositions = random_tensor(DType::BFloat16, shape.seq * shape.hidden, rng, 100.0f);
        QCOMPARE(launches_of([&] {
                     host::embedding_backward(tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride),
                                              input(dy.data(), DType::BFloat16, shape.batch * shape.seq, shape.hidden),
                                              input(nullptr, DType::Float32, shape.vocab, shape.hidden),
                                              input(dpositions.data(), DType::BFloat16, shape.seq, shape.hidden), {});
                 }),
                 std::uint64_t{1});
        check_dpositions(shape, dy, dpositions);

        // batch 0 with dpositions: the sum over no rows, zeros written (one launch); tokens and dy may be null.
        Buffer zeros = random_tensor(DType::Float32, shape.seq * shape.hidden, rng);
        QCOMPARE(launches_of([&] {
                     host::embedding_backward(tokens_of(nullptr, 0, shape.seq, shape.stride),
                                              input(nullptr, DType::Float32, 0 * shape.seq, shape.hidden),
                                              input(dtable.floats(), DType::Float32, shape.vocab, shape.hidden),
                                              input(zeros.data(), DType::Float32, shape.seq, shape.hidden), {});
                 }),
                 std::uint64_t{1});
        for (std::size_t i = 0; i < shape.seq * shape.hidden; ++i) QCOMPARE(zeros.bits(i), std::uint32_t{0});
    }

    void launchCounts() {
        std::mt19937 rng(18);
        const Shape shape{2, 3, 4, 5, 8};
        const auto tokens = random_tokens(shape.batch, shape.seq, shape.stride, shape.vocab, rng);
        const Buffer table = random_tensor(DType::Float32, shape.vocab * shape.hidden, rng);
        const Buffer positions = random_tensor(DType::Float32, shape.seq * shape.hidden, rng);
        Buffer out(DType::Float32, shape.rows() * shape.hidden);
        const Buffer dy = random_tensor(DType::Float32, shape.rows() * shape.hidden, rng);
        Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
        Buffer dpositions(DType::Float32, shape.seq * shape.hidden);
        const auto forward = [&](std::size_t batch, std::size_t seq) {
            return launches_of([&] {
                host::embedding_forward(tokens_of(tokens.data(), batch, seq, shape.stride),
                                        input(table.data(), DType::Float32, shape.vocab, shape.hidden),
                                        input(positions.data(), DType::Float32, seq, shape.hidden),
                                        input(out.data(), DType::Float32, batch * seq, shape.hidden), {});
            });
        };
        const auto backward = [&](std::size_t batch, std::size_t seq, float* to_table, void* to_positions) {
            return launches_of([&] {
                host::embedding_backward(
                    tokens_of(tokens.data(), batch, seq, shape.stride), input(dy.data(), DType::Float32, batch * seq, shape.hidden),
                    input(to_table, DType::Float32, shape.vocab, shape.hidden), input(to_positions, DType::Float32, seq, shape.hidden), {});
            });
        };
        QCOMPARE(forward(shape.batch, shape.seq), std::uint64_t{1});
        QCOMPARE(forward(0, shape.seq), std::uint64_t{0});
        QCOMPARE(forward(shape.batch, 0), std::uint64_t{0});
        QCOMPARE(backward(shape.batch, shape.seq, dtable.floats(), dpositions.data()), std::uint64_t{1});
        QCOMPARE(backward(shape.batch, shape.seq, dtable.floats(), nullptr), std::uint64_t{1});
        QCOMPARE(backward(shape.batch, shape.seq, nullptr, dpositions.data()), std::uint64_t{1});
        QCOMPARE(backward(0, shape.seq, dtable.floats(), nullptr), std::uint64_t{0});
        QCOMPARE(backward(shape.batch, 0, dtable.floats(), dpositions.data()), std::uint64_t{0});
    }

    void argumentErrors() {
        const Shape shape{2, 3, 4, 5, 8};
        std::vector<std::int64_t> tokens(shape.batch * shape.stride, 1);
        Buffer table(DType::Float32, shape.vocab * shape.hidden);
        Buffer positions(DType::Float32, shape.seq * shape.hidden);
        Buffer out(DType::Float32, shape.rows() * shape.hidden);
        Buffer misaligned(DType::Float32, shape.rows() * shape.hidden, 0, 2);
        Buffer dy(DType::Float32, shape.rows() * shape.hidden);
        Buffer dtable(DType::Float32, shape.vocab * shape.hidden);
        Buffer dpositions(DType::Float32, shape.seq * shape.hidden);
        const auto* misaligned_tokens = reinterpret_cast<const std::int64_t*>(reinterpret_cast<const std::uint8_t*>(tokens.data()) + 4);

        struct Forward {
            const std::int64_t* tokens;
            std::size_t stride, batch, seq;
            const void* table;
            const void* positions;
            DType dtype;
            std::size_t vocab, hidden;
            void* out;
        };
        const Forward good{tokens.data(), shape.stride, shape.batch, shape.seq, table.data(), positions.data(),
                           DType::Float32, shape.vocab, shape.hidden, out.data()};
        const auto forward = [](Forward f) {
            return [f] {
                host::embedding_forward(tokens_of(f.tokens, f.batch, f.seq, f.stride), input(f.table, f.dtype, f.vocab, f.hidden),
                                        input(f.positions, f.dtype, f.seq, f.hidden), input(f.out, f.dtype, f.batch * f.seq, f.hidden), {});
            };
        };
        const std::string fwd = "tewb::kernels::host::embedding_forward: ";
        const auto with = [&](auto change) {
            Forward f = good;
            change(f);
            return forward(f);
        };
        expect_refusal(with([](Forward& f) { f.hidden = 0; }), {fwd, "hidden = 0", "1 or more"});
        expect_refusal(with([](Forward& f) { f.vocab = 0; }), {fwd, "vocab = 0", "1 or more"});
        expect_refusal(with([](Forward& f) { f.stride = 2; }), {fwd, "token_row_stride = 2", "from seq = 3"});
        expect_refusal(with([](Forward& f) { f.dtype = DType::Float16; }), {fwd, "float16", "allowed: float32, bfloat16"});
        expect_refusal(with([](Forward& f) { f.tokens = nullptr; }), {fwd, "tokens is a null pointer"});
        expect_refusal(with([&](Forward& f) { f.tokens = misaligned_tokens; }), {fwd, "tokens is not 8-byte aligned"});
        expect_refusal(with([](Forward& f) { f.table = nullptr; }), {fwd, "table is a null pointer"});
        expect_refusal(with([](Forward& f) { f.out = nullptr; }), {fwd, "out is a null pointer"});
        expect_refusal(with([&](Forward& f) { f.out = misaligned.data(); }), {fwd, "out is not 4-byte aligned"});
        expect_refusal(with([](Forward& f) {
                           f.batch = std::size_t{1} << 20;
                           f.seq = std::size_t{1} << 12;
                           f.stride = f.seq;
                       }),
                       {fwd, "batch = 1048576, seq = 4096", "batch * seq at most 2147483647"});
        // Each tensor carries its dtype and shape: positions and out must agree with the table and the tokens.
        const Tensor all_tokens = tokens_of(tokens.data(), shape.batch, shape.seq, shape.stride);
        expect_refusal(
            [&] {
                host::embedding_forward(all_tokens, input(table.data(), DType::Float32, shape.vocab, shape.hidden),
                                        input(positions.data(), DType::BFloat16, shape.seq, shape.hidden),
                                        input(out.data(), DType::Float32, shape.rows(), shape.hidden), {});
            },
            {fwd, "positions has dtype bfloat16; allowed: float32, table's"});
        expect_refusal(
            [&] {
                host::embedding_forward(all_tokens, input(table.data(), DType::Float32, shape.vocab, shape.hidden),
                                        input(positions.data(), DType::Float32, shape.seq, shape.hidden),
                                        input(out.data(), DType::Float32, shape.rows() - 1, shape.hidden), {});
            },
            {fwd, "out is [5, 8]; allowed: [6, 8]"});

        const std::string bwd = "tewb::kernels::host::embedding_backward: ";
        const auto backward = [&](const std::int64_t* t, std::size_t stride, const void* d, DType dy_dtype, float* to_table,
                                  void* to_positions, DType dpositions_dtype) {
            return [=] {
                host::embedding_backward(tokens_of(t, shape.batch, shape.seq, stride),
                                         input(d, dy_dtype, shape.batch * shape.seq, shape.hidden),
                                         input(to_table, DType::Float32, shape.vocab, shape.hidden),
                                         input(to_positions, dpositions_dtype, shape.seq, shape.hidden), {});
            };
        };
        expect_refusal(backward(tokens.data(), shape.stride, dy.data(), DType::Float32, nullptr, nullptr, DType::Float32),
                       {bwd, "no output: dtable and dpositions are both null"});
        expect_refusal(backward(tokens.data(), 1, dy.data(), DType::Float32, dtable.floats(), nullptr, DType::Float32),
                       {bwd, "token_row_stride = 1"});
        expect_refusal(backward(tokens.data(), shape.stride, dy.data(), DType::Float16, dtable.floats(), nullptr, DType::Float32),
                       {bwd, "dy has dtype float16"});
        expect_refusal(backward(tokens.data(), shape.stride, dy.data(), DType::Float32, nullptr, dpositions.data(), DType::Float16),
                       {bwd, "dpositions has dtype float16"});
        expect_refusal(backward(nullptr, shape.stride, dy.data(), DType::Float32, dtable.floats(), nullptr, DType::Float32),
                       {bwd, "tokens is a null pointer"});
        expect_refusal(backward(tokens.data(), shape.stride, nullptr, DType::Float32, dtable.floats(), nullptr, DType::Float32),
                       {bwd, "dy is a null pointer"});
        expect_refusal(backward(tokens.data(), shape.stride, misaligned.data(), DType::Float32, dtable.floats(), nullptr,
                                DType::Float32),
                       {bwd, "dy is not 4-byte aligned"});
        expect_refusal(backward(tokens.data(), shape.stride, dy.data(), DType::Float32, misaligned.floats(), nullptr, DType::Float32),
                       {bwd, "dtable is not 4-byte aligned"});
        expect_refusal(backward(tokens.data(), shape.stride, dy.data(), DType::Float32, nullptr, misaligned.data(), DType::Float32),
                       {bwd, "dpositions is not 4-byte aligned"});
    }

private:
    // dtable against `before` plus dy's rows by token: bit for bit the header's index order, and within
    // k * 2^-24 * (|before| + sum |dy|) of the double-precision sum for a row hit k times (the GPU's bound).
    static void check_dtable(const Shape& shape, const std::vector<std::int64_t>& tokens, const Buffer& dy,
                             const std::vector<float>& before, const Buffer& dtable) {
        std::vector<float> in_order = before;
        std::vector<double> exact(before.begin(), before.end());
        std::vector<double> magnitude(before.size());
        std::vector<std::size_t> hits(shape.vocab, 0);
        for (std::size_t i = 0; i < before.size(); ++i) magnitude[i] = std::fabs(before[i]);
        for (std::size_t r = 0; r < shape.rows(); ++r) {
            const std::int64_t token = shape.token(tokens, r);
            if (!shape.valid(token)) continue;
            const auto t = static_cast<std::size_t>(token);
            ++hits[t];
            for (std::size_t c = 0; c < shape.hidden; ++c) {
                const float d = dy.at(r * shape.hidden + c);
                in_order[t * shape.hidden + c] += d;
                exact[t * shape.hidden + c] += d;
                magnitude[t * shape.hidden + c] += std::fabs(d);
            }
        }
        for (std::size_t i = 0; i < before.size(); ++i) {
            const std::string where = "dtable element " + std::to_string(i);
            QVERIFY2(dtable.bits(i) == detail::float_bits(in_order[i]), (where + ": not the index-order sum").c_str());
            const double tolerance = static_cast<double>(hits[i / shape.hidden]) * std::ldexp(magnitude[i], -24);
            QVERIFY2(std::fabs(dtable.at(i) - exact[i]) <= tolerance,
                     (where + ": " + std::to_string(dtable.at(i)) + " vs " + std::to_string(exact[i])).c_str());
        }
    }

    // dpositions: bit for bit the float32 sum over b ascending from 0, rounded once; within
    // (batch - 1) * 2^-24 * sum |dy| (plus half a bfloat16 ulp) of the double-precision sum.
    static void check_dpositions(const Shape& shape, const Buffer& dy, const Buffer& dpositions) {
        for (std::size_t s = 0; s < shape.seq; ++s) {
            for (std::size_t c = 0; c < shape.hidden; ++c) {
                float in_order = 0.0f;
                double exact = 0.0, magnitude = 0.0;
                for (std::size_t b = 0; b < shape.batch; ++b) {
                    const float d = dy.at((b * shape.seq + s) * shape.hidden + c);
                    in_order += d;
                    exact += d;
                    magnitude += std::fabs(d);
                }
                const std::size_t i = s * shape.hidden + c;
                Buffer rounded(dpositions.dtype(), 1);
                rounded.set(0, in_order);
                QVERIFY2(dpositions.bits(i) == rounded.bits(0), ("dpositions element " + std::to_string(i)).c_str());
                const double sum_error = static_cast<double>(shape.batch - 1) * std::ldexp(magnitude, -24);
                const double store_error =
                    dpositions.dtype() == DType::BFloat16 ? std::ldexp(std::fabs(exact) + sum_error, -8) : 0.0;
                QVERIFY2(std::fabs(dpositions.at(i) - exact) <= sum_error + store_error,
                         ("dpositions element " + std::to_string(i) + ": " + std::to_string(dpositions.at(i)) + " vs " +
                          std::to_string(exact))
                             .c_str());
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestHostEmbedding)
#include "tst_host_embedding.moc"
