// host::cast_dbias (tewb_kernels/cast.h): a Linear's output gradient cast to its GEMMs' dtype and its bias
// gradient in one pass. Against references written here: the cast from bfloat16's definition (nearest, ties to
// even, NaN to 0x7fff), the sums by walking the kernel's threads in their documented order (bit for bit, partial
// rows included) and in double (close). Odd shapes, chunks that wrap, NaN and infinities, every dtype pairing,
// the sums alone, the second launch past 2048 column tiles, and the argument refusals.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

using namespace tewb::kernels;

namespace {

// A float's bits and back: the library's, as tst_host_numbers checks them.
using tewb::kernels::detail::bits_float;
using tewb::kernels::detail::float_bits;

// bfloat16 from its definition: the top 16 bits of float32, rounded to nearest with ties to the even pattern;
// every NaN as 0x7fff.
std::uint16_t reference_bf16(float v) {
    if (std::isnan(v)) return 0x7fff;
    const std::uint32_t u = float_bits(v);
    const std::uint32_t truncated = u >> 16;
    const std::uint32_t rest = u & 0xffffu;
    if (rest > 0x8000u || (rest == 0x8000u && (truncated & 1u) != 0)) return static_cast<std::uint16_t>(truncated + 1);
    return static_cast<std::uint16_t>(truncated);
}

float canonical(float v) {
    return std::isnan(v) ? bits_float(0x7fffffffu) : v;
}

std::size_t dtype_bytes(DType dtype) {
    return dtype == DType::Float32 ? 4 : 2;
}

// A row-major [rows, cols] tensor of `dtype` in 256-byte aligned memory (as cudaMalloc gives) and the float each
// element holds.
struct Matrix {
    DType dtype;
    std::size_t rows, cols;
    std::vector<unsigned char> storage;
    unsigned char* data = nullptr;
    std::vector<float> values;

    Matrix(DType dtype_, std::size_t rows_, std::size_t cols_)
        : dtype(dtype_), rows(rows_), cols(cols_), storage(rows_ * cols_ * 4 + 512), values(rows_ * cols_) {
        const auto start = reinterpret_cast<std::uintptr_t>(storage.data());
        data = storage.data() + (256 - start % 256) % 256;
    }
    Matrix(const Matrix&) = delete;
    Matrix& operator=(const Matrix&) = delete;

    void set(std::size_t i, float v) {
        if (dtype == DType::Float32) {
            std::memcpy(data + i * 4, &v, 4);
            values[i] = v;
        } else {
            const std::uint16_t h = reference_bf16(v);
            std::memcpy(data + i * 2, &h, 2);
            values[i] = bits_float(static_cast<std::uint32_t>(h) << 16);
        }
    }
    Tensor cref() const { return input(data, dtype, rows, cols); }
    Tensor ref() { return input(data, dtype, rows, cols); }
};

// Normal values of mixed magnitudes, with NaN and infinities in a few columns when asked.
void fill(Matrix& x, std::uint32_t seed, bool specials) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < x.rows * x.cols; ++i) x.set(i, normal(random) * std::ldexp(1.0f, static_cast<int>(i % 7) - 3));
    if (!specials || x.cols < 4) return;
    x.set(1, std::numeric_limits<float>::quiet_NaN());  // column 1: NaN
    x.set(2, std::numeric_limits<float>::infinity());   // column 2: +inf
    x.set(3, std::numeric_limits<float>::infinity());   // column 3: +inf, then -inf: NaN
    if (x.rows > 1) x.set(x.cols + 3, -std::numeric_limits<float>::infinity());
}

// The kernel's order (cast_dbias.cu), walked thread by thread: chunks = clamp(ceil(rows / 8), 1, 128) block rows;
// block row k, thread row y sums rows g * 8 + y for g = k, k + chunks, ... in order from 0; the partial row is
// 0 + thread row 0 + ... + thread row 7; the sum is 0 + partial row 0 + ... (NaN as the GPU's 0x7fffffff).
struct Sums {
    std::size_t chunks = 0;
    std::vector<float> partial;  // chunks × cols
    std::vector<float> total;
};

Sums reference_sums(const Matrix& x) {
    Sums s;
    const std::size_t groups = (x.rows + 7) / 8;
    s.chunks = std::min<std::size_t>(std::max<std::size_t>(groups, 1), 128);
    s.partial.assign(s.chunks * x.cols, 0.0f);
    s.total.assign(x.cols, 0.0f);
    for (std::size_t k = 0; k < s.chunks; ++k) {
        for (std::size_t c = 0; c < x.cols; ++c) {
            float block = 0.0f;
            for (std::size_t y = 0; y < 8; ++y) {
                float thread = 0.0f;
                for (std::size_t g = k; g < groups; g += s.chunks) {
                    const std::size_t r = g * 8 + y;
                    if (r < x.rows) thread += x.values[r * x.cols + c];
                }
                block += thread;
            }
            s.partial[k * x.cols + c] = canonical(block);
        }
    }
    for (std::size_t c = 0; c < x.cols; ++c) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < s.chunks; ++k) sum += s.partial[k * x.cols + c];
        s.total[c] = canonical(sum);
    }
    return s;
}

std::string shape_of(std::size_t rows, std::size_t cols) {
    return std::to_string(rows) + "x" + std::to_string(cols);
}

}  // namespace

class TestHostCastDbias : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void workspaceHoldsOnePartialRowPerBlockRow() {
        QCOMPARE(cast_dbias_workspace_bytes(1, 768), std::size_t{1 * 768 * 4});
        QCOMPARE(cast_dbias_workspace_bytes(8, 768), std::size_t{1 * 768 * 4});
        QCOMPARE(cast_dbias_workspace_bytes(9, 768), std::size_t{2 * 768 * 4});
        QCOMPARE(cast_dbias_workspace_bytes(3072, 768), std::size_t{128 * 768 * 4});
        QCOMPARE(cast_dbias_workspace_bytes(0, 5), std::size_t{1 * 5 * 4});
    }

    void castAndSumsMatchTheKernelOrderBitForBit() {
        // Partial tiles of 128 columns and of 8 rows, chunks that wrap (over 1024 rows), the seed's shape.
        const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},   {3, 17},   {8, 128},  {9, 129},
                                                              {64, 40}, {1025, 7}, {2000, 5}, {3072, 768}};
        std::uint32_t seed = 900;
        for (const DType in : {DType::Float32, DType::BFloat16}) {
            for (const int out_kind : {0, 1, 2}) {  // 0: the sums alone; 1: float32 out; 2: bfloat16 out
                for (const DType dbias_dtype : {DType::Float32, DType::BFloat16}) {
                    for (const auto& [rows, cols] : shapes) {
                        Matrix x(in, rows, cols);
                        fill(x, seed++, /*specials=*/rows < 3072);
                        const DType out_dtype = out_kind == 2 ? DType::BFloat16 : DType::Float32;
                        Matrix out(out_dtype, rows, cols);
                        Tensor out_ref = out.ref();
                        if (out_kind == 0) out_ref = Tensor{};
                        Matrix dbias(dbias_dtype, 1, cols);
                        std::vector<unsigned char> workspace(cast_dbias_workspace_bytes(rows, cols));
                        const std::uint64_t launches = launch_count();
                        host::cast_dbias(x.cref(), out_ref, dbias.ref(), {workspace.data(), workspace.size()}, {});
                        const std::string what = std::string(to_string(in)) + " -> " +
                                                 (out_kind == 0 ? "none" : std::string(to_string(out_dtype))) + ", dbias " +
                                                 std::string(to_string(dbias_dtype)) + ", " + shape_of(rows, cols);
                        QVERIFY2(launch_count() == launches + 1, what.c_str());

                        for (std::size_t i = 0; out_kind != 0 && i < rows * cols; ++i) {
                            if (out_dtype == DType::Float32) {
                                float got = 0;
                                std::memcpy(&got, out.data + i * 4, 4);
                                QVERIFY2(float_bits(got) == float_bits(x.values[i]) || (std::isnan(got) && std::isnan(x.values[i])),
                                         (what + ": out " + std::to_string(i)).c_str());
                            } else {
                                std::uint16_t got = 0;
                                std::memcpy(&got, out.data + i * 2, 2);
                                QVERIFY2(got == reference_bf16(x.values[i]), (what + ": out " + std::to_string(i)).c_str());
                            }
                        }

                        const Sums want = reference_sums(x);
                        const auto* partial = reinterpret_cast<const float*>(workspace.data());
                        for (std::size_t i = 0; i < want.chunks * cols; ++i) {
                            QVERIFY2(float_bits(partial[i]) == float_bits(want.partial[i]),
                                     (what + ": partial " + std::to_string(i)).c_str());
                        }
                        for (std::size_t c = 0; c < cols; ++c) {
                            float got = 0;
                            if (dbias_dtype == DType::Float32) {
                                std::memcpy(&got, dbias.data + c * 4, 4);
                                QVERIFY2(float_bits(got) == float_bits(want.total[c]), (what + ": dbias " + std::to_string(c)).c_str());
                            } else {
                                std::uint16_t h = 0;
                                std::memcpy(&h, dbias.data + c * 2, 2);
                                QVERIFY2(h == reference_bf16(want.total[c]), (what + ": dbias " + std::to_string(c)).c_str());
                                got = bits_float(static_cast<std::uint32_t>(h) << 16);
                            }
                            // Against the sum in double: float32 accumulation's error bound (and bfloat16's rounding).
                            double exact = 0.0, magnitude = 0.0;
                            for (std::size_t r = 0; r < rows; ++r) {
                                exact += x.values[r * cols + c];
                                magnitude += std::fabs(static_cast<double>(x.values[r * cols + c]));
                            }
                            if (!std::isfinite(exact)) {
                                QVERIFY2(std::isnan(got) || std::isinf(got), (what + ": dbias " + std::to_string(c)).c_str());
                                continue;
                            }
                            double bound = static_cast<double>(rows + want.chunks + 8) * 0x1p-24 * magnitude;
                            if (dbias_dtype == DType::BFloat16) bound += 0x1p-8 * std::fabs(exact);
                            QVERIFY2(std::fabs(static_cast<double>(got) - exact) <= bound + 1e-30,
                                     (what + ": dbias " + std::to_string(c) + " far from the double sum").c_str());
                        }
                    }
                }
            }
        }
    }

    void specialsFollowTheGpu() {
        // A NaN column sums to the GPU's one NaN, +inf stays +inf, +inf and -inf make that NaN; in bfloat16 0x7fff.
        Matrix x(DType::Float32, 2, 4);
        for (std::size_t i = 0; i < 8; ++i) x.set(i, 1.0f);
        x.set(1, bits_float(0xffc00001u));  // a negative NaN with a payload
        x.set(2, std::numeric_limits<float>::infinity());
        x.set(3, std::numeric_limits<float>::infinity());
        x.set(7, -std::numeric_limits<float>::infinity());
        Matrix dbias(DType::Float32, 1, 4);
        Matrix dbias16(DType::BFloat16, 1, 4);
        std::vector<unsigned char> workspace(cast_dbias_workspace_bytes(2, 4));
        host::cast_dbias(x.cref(), Tensor{}, dbias.ref(), {workspace.data(), workspace.size()}, {});
        host::cast_dbias(x.cref(), Tensor{}, dbias16.ref(), {workspace.data(), workspace.size()}, {});
        float got[4];
        std::memcpy(got, dbias.data, sizeof got);
        QCOMPARE(got[0], 2.0f);
        QCOMPARE(float_bits(got[1]), 0x7fffffffu);
        QCOMPARE(got[2], std::numeric_limits<float>::infinity());
        QCOMPARE(float_bits(got[3]), 0x7fffffffu);
        std::uint16_t half[4];
        std::memcpy(half, dbias16.data, sizeof half);
        QCOMPARE(half[1], std::uint16_t{0x7fff});
        QCOMPARE(half[3], std::uint16_t{0x7fff});
    }

    void pastTheArrivalCountersItTakesASecondLaunch() {
        // 2049 tiles of 128 columns: more than the 2048 arrival counters, so the sums take launch_column_sum's pass.
        const std::size_t cols = 2049 * 128;
        Matrix x(DType::BFloat16, 2, cols);
        for (std::size_t i = 0; i < 2 * cols; ++i) x.set(i, static_cast<float>(i % 5) - 2.0f);
        Matrix out(DType::BFloat16, 2, cols);
        Matrix dbias(DType::Float32, 1, cols);
        std::vector<unsigned char> workspace(cast_dbias_workspace_bytes(2, cols));
        const std::uint64_t launches = launch_count();
        host::cast_dbias(x.cref(), out.ref(), dbias.ref(), {workspace.data(), workspace.size()}, {});
        QCOMPARE(launch_count(), launches + 2);
        const Sums want = reference_sums(x);
        QVERIFY(std::memcmp(dbias.data, want.total.data(), cols * 4) == 0);
        QVERIFY(std::memcmp(out.data, x.data, cols * 2 * 2) == 0);
    }

    void badArgumentsAreRefusedWithTheReason() {
        Matrix x(DType::Float32, 4, 8);
        Matrix out(DType::BFloat16, 4, 8);
        Matrix dbias(DType::Float32, 1, 8);
        std::vector<unsigned char> workspace(cast_dbias_workspace_bytes(4, 8));
        const Workspace ws{workspace.data(), workspace.size()};
        const auto refused = [&](const Tensor& in, const Tensor& o, const Tensor& d, const Workspace& w,
                                 const char* expected) {
            try {
                host::cast_dbias(in, o, d, w, {});
            } catch (const KernelError& e) {
                const std::string message = e.what();
                return message.find("tewb::kernels::host::cast_dbias") != std::string::npos &&
                       message.find(expected) != std::string::npos;
            }
            return false;
        };
        QVERIFY(refused({x.data, DType::Float16, 4, 8}, out.ref(), dbias.ref(), ws, "x"));
        QVERIFY(refused(x.cref(), {out.data, DType::BFloat16, 4, 7}, dbias.ref(), ws, "out"));
        QVERIFY(refused(x.cref(), {out.data, DType::Float16, 4, 8}, dbias.ref(), ws, "out"));
        QVERIFY(refused(x.cref(), out.ref(), {dbias.data, DType::Float32, 1, 7}, ws, "dbias"));
        QVERIFY(refused(x.cref(), out.ref(), dbias.ref(), {workspace.data(), 4}, "cast_dbias_workspace_bytes"));
        QVERIFY(refused(x.cref(), x.ref(), dbias.ref(), ws, "x and out overlap"));
        // Partial overlaps too: out starting one row into x, dbias inside x or out, the workspace over dbias.
        QVERIFY(refused(x.cref(), {x.data + 8 * 4, DType::BFloat16, 4, 8}, dbias.ref(), ws, "x and out overlap"));
        QVERIFY(refused(x.cref(), out.ref(), {x.data + 4 * 4, DType::Float32, 1, 8}, ws, "x and dbias overlap"));
        QVERIFY(refused(x.cref(), out.ref(), {out.data + 2, DType::Float32, 1, 8}, ws, "out and dbias overlap"));
        QVERIFY(refused(x.cref(), out.ref(), {workspace.data() + 4, DType::Float32, 1, 8}, ws, "dbias and the workspace overlap"));
        // The kernel's int indices: a row group and a column tile of room below INT_MAX.
        QVERIFY(refused({x.data, DType::Float32, 2147483647, 8}, Tensor{}, dbias.ref(), ws, "rows at most 2147483639"));
        QVERIFY(refused({x.data, DType::Float32, 4, 2147483600}, Tensor{}, {dbias.data, DType::Float32, 1, 2147483600}, ws,
                        "cols at most 2147483519"));
        QVERIFY(refused({nullptr, DType::Float32, 4, 8}, out.ref(), dbias.ref(), ws, "x"));
        QVERIFY(refused(x.cref(), out.ref(), {nullptr, DType::Float32, 1, 8}, ws, "dbias"));
        // Nothing to do: passes without touching anything, and counts no launch.
        const std::uint64_t launches = launch_count();
        host::cast_dbias({nullptr, DType::Float32, 0, 8}, Tensor{}, {dbias.data, DType::Float32, 1, 8}, Workspace{}, {});
        QCOMPARE(launch_count(), launches);
    }
};

QTEST_APPLESS_MAIN(TestHostCastDbias)
#include "tst_host_cast_dbias.moc"
