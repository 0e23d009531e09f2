// The host casts, transposes, amax and block cast (tewb_kernels/host/cast.h, host/amax.h) against references
// written here from the documented rules, plain scalar code: the FP8 conversion by a search over the FP8
// values (nearest, ties to the even code, saturating, NaN to 0x7f), amax in double with a NaN flag, dbias by
// walking the GPU kernel's threads in their order (bit for bit) and in double (close), the block scale from
// its formula. Sizes odd and prime, NaN, inf, saturation, zero amax, partial tiles and blocks, the argument
// refusals and the launch counts.
#include <QtTest>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/amax.h"
#include "kernel_tensors.h"
#include "cast_calls.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "tewb_kernels/recipe.h"

using namespace tewb::kernels;
using tewb::test::with_amax;
namespace calls = tewb::test::calls;
using calls::BlockCastOutput;

namespace {

std::uint32_t bits_of(float v) {
    std::uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

float float_of(std::uint32_t u) {
    float v = 0;
    std::memcpy(&v, &u, sizeof v);
    return v;
}

const char* name(Fp8Type type) {
    return fp8_type_name(type);
}

std::string describe(DType dtype) {
    return std::string(to_string(dtype));
}

// --- FP8, written from the format: magnitudes of the codes 0..max_code, nearest, ties to the even code ---

int largest_finite_code(Fp8Type type) {
    return type == Fp8Type::E4M3 ? 0x7e : 0x7b;
}

double fp8_magnitude(int code, Fp8Type type) {
    const int mantissa_bits = type == Fp8Type::E4M3 ? 3 : 2;
    const int bias = type == Fp8Type::E4M3 ? 7 : 15;
    const int exponent = code >> mantissa_bits;
    const int mantissa = code & ((1 << mantissa_bits) - 1);
    if (exponent == 0) return std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits);
    return std::ldexp(1.0 + static_cast<double>(mantissa) / (1 << mantissa_bits), exponent - bias);
}

std::uint8_t reference_fp8(float v, Fp8Type type) {
    if (std::isnan(v)) return 0x7f;
    const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
    const double magnitude = std::fabs(static_cast<double>(v));
    const int top = largest_finite_code(type);
    if (magnitude >= fp8_magnitude(top, type)) return static_cast<std::uint8_t>(sign | top);  // inf too
    int below = 0;  // the largest code whose magnitude is at most `magnitude`
    int above = top;
    while (above - below > 1) {
        const int middle = (below + above) / 2;
        (fp8_magnitude(middle, type) <= magnitude ? below : above) = middle;
    }
    if (fp8_magnitude(above, type) <= magnitude) below = above;
    if (below == top) return static_cast<std::uint8_t>(sign | top);
    above = below + 1;
    const double to_below = magnitude - fp8_magnitude(below, type);
    const double to_above = fp8_magnitude(above, type) - magnitude;
    int code = to_below < to_above ? below : above;
    if (to_below == to_above) code = below % 2 == 0 ? below : above;
    return static_cast<std::uint8_t>(sign | code);
}

// --- elements: bit patterns per dtype, decoded here ---

// A half NaN widens with its sign and payload (the payload's bits move to the top of float's mantissa).
float half_value(std::uint16_t h) {
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
    if (exponent == 0x1f && mantissa != 0) {
        return float_of((static_cast<std::uint32_t>(h & 0x8000) << 16) | 0x7f800000u |
                        (static_cast<std::uint32_t>(mantissa) << 13));
    }
    if (exponent == 0x1f) return static_cast<float>(sign * HUGE_VAL);
    if (exponent == 0) return static_cast<float>(sign * std::ldexp(mantissa, -24));
    return static_cast<float>(sign * std::ldexp(1024.0 + mantissa, exponent - 25));
}

// 256-byte aligned memory, as cudaMalloc gives, with an optional byte offset to misalign it.
class Buffer {
public:
    explicit Buffer(std::size_t bytes, std::size_t offset = 0) : storage_(bytes + 512, 0) {
        const auto start = reinterpret_cast<std::uintptr_t>(storage_.data());
        data_ = storage_.data() + ((256 - start % 256) % 256) + offset;
    }
    Buffer(const Buffer&) = delete;  // data_ points into storage_: a move keeps it valid, a copy would not
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&&) = default;
    Buffer& operator=(Buffer&&) = default;
    unsigned char* data() { return data_; }
    const unsigned char* data() const { return data_; }

private:
    std::vector<unsigned char> storage_;
    unsigned char* data_ = nullptr;
};

enum class Specials { None, Included };

// A tensor of `count` elements of `dtype` and, for the references, the float each one holds.
struct Input {
    DType dtype;
    std::size_t count;
    Buffer buffer;
    std::vector<float> values;

    Input(DType dtype_, std::size_t count_, std::size_t offset) : dtype(dtype_), count(count_), buffer(count_ * 4 + 16, offset) {}
    const void* data() const { return buffer.data(); }

    void set_pattern(std::size_t i, std::uint32_t pattern) {
        if (dtype == DType::Float32) {
            std::memcpy(buffer.data() + i * 4, &pattern, 4);
            values[i] = float_of(pattern);
        } else {
            const auto h = static_cast<std::uint16_t>(pattern);
            std::memcpy(buffer.data() + i * 2, &h, 2);
            values[i] = dtype == DType::BFloat16 ? float_of(static_cast<std::uint32_t>(h) << 16) : half_value(h);
        }
    }
};

// Patterns for NaN, -NaN with a payload, ±inf, -0, a value beyond both FP8 ranges, one below both, the
// smallest subnormal, and two E4M3 ties at scale 1 (1.0625 to 1.0, 1.1875 to 1.25).
std::vector<std::uint32_t> special_patterns(DType dtype) {
    if (dtype == DType::Float32) {
        return {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x80000000u,
                0x49742400u, 0x2edbe6ffu, 0x00000001u, 0x3f880000u, 0x3f980000u};
    }
    if (dtype == DType::BFloat16)
        return {0x7fc0u, 0xffc1u, 0x7f80u, 0xff80u, 0x8000u, 0x4974u, 0x2edcu, 0x0001u, 0x3f88u, 0x3f98u};
    return {0x7e00u, 0xfe01u, 0x7c00u, 0xfc00u, 0x8000u, 0x7bffu, 0x0001u, 0x0200u, 0x3c40u, 0x3cc0u};
}

// Mostly values around 1 (|x| in about 2^-12 .. 2^12, both signs), some anywhere in the format's finite
// range, and, when asked, the specials scattered.
Input make_input(DType dtype, std::size_t count, std::uint32_t seed, Specials specials, std::size_t offset = 0) {
    Input input(dtype, count, offset);
    input.values.assign(count, 0.0f);
    std::mt19937 random(seed);
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t r = random();
        const bool wide_range = r % 16 == 0;
        std::uint32_t pattern = 0;
        if (dtype == DType::Float16) {
            const std::uint32_t exponent = wide_range ? random() % 31 : 3 + random() % 25;
            pattern = ((r >> 8) & 0x8000u) | (exponent << 10) | (random() & 0x3ffu);
        } else {
            const std::uint32_t exponent = wide_range ? random() % 255 : 115 + random() % 25;
            const std::uint32_t mantissa = dtype == DType::Float32 ? (random() & 0x7fffffu) : (random() & 0x7fu);
            pattern = dtype == DType::Float32 ? ((r & 0x80000000u) | (exponent << 23) | mantissa)
                                              : (((r >> 16) & 0x8000u) | (exponent << 7) | mantissa);
        }
        input.set_pattern(i, pattern);
    }
    if (specials == Specials::Included) {
        const std::vector<std::uint32_t> patterns = special_patterns(dtype);
        for (std::size_t k = 0; k < patterns.size() && k < count; ++k) input.set_pattern((k * 7919 + 3) % count, patterns[k]);
    }
    return input;
}

// Finite values of moderate size, for sums compared with a double-precision one.
Input make_finite_input(DType dtype, std::size_t count, std::uint32_t seed, std::size_t offset = 0) {
    Input input(dtype, count, offset);
    input.values.assign(count, 0.0f);
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t i = 0; i < count; ++i) {
        const float v = normal(random) * (random() % 8 == 0 ? 300.0f : 1.0f);
        const std::uint32_t b = bits_of(v);
        if (dtype == DType::Float32) {
            input.set_pattern(i, b);
        } else if (dtype == DType::BFloat16) {
            input.set_pattern(i, b >> 16);  // truncated: exactly a bfloat16
        } else {
            input.set_pattern(i, detail::float_to_fp16(v));  // the pattern only; its value is decoded here
        }
    }
    return input;
}

// --- amax as a max in double with a NaN flag; the NaN the kernel leaves is the largest |x| pattern ---

struct Amax {
    bool has_nan = false;
    double largest = 0.0;
    std::uint32_t largest_nan_bits = 0;
};

Amax reference_amax(const std::vector<float>& values, std::size_t begin, std::size_t end) {
    Amax amax;
    for (std::size_t i = begin; i < end; ++i) {
        const float v = values[i];
        if (std::isnan(v)) {
            amax.has_nan = true;
            amax.largest_nan_bits = std::max(amax.largest_nan_bits, bits_of(v) & 0x7fffffffu);
        } else {
            amax.largest = std::max(amax.largest, std::fabs(static_cast<double>(v)));
        }
    }
    return amax;
}

std::uint32_t expected_amax_bits(const Amax& amax) {
    return amax.has_nan ? amax.largest_nan_bits : bits_of(static_cast<float>(amax.largest));
}

// --- dbias in the GPU's order: the kernel cast_transpose_dbias launches and its threads, walked one by one ---

struct KernelOrder {
    std::size_t tile;
    std::size_t thread_rows;  // threads summing one column of a tile, each every thread_rows-th row
    std::size_t chunks;
};

// cast.cu's choice: the vectorised kernel (64-row tiles; float32 16 thread rows, bfloat16 32) for float32
// and bfloat16 with rows % 8 == 0, cols a multiple of the 16-byte vector and aligned pointers; else the
// 32 x 8 one. At most 64 chunks.
KernelOrder gpu_order(DType dtype, std::size_t rows, std::size_t cols, const void* x, const void* out, const void* out_t) {
    const auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    const std::size_t vector = dtype == DType::Float32 ? 4 : 8;
    const bool wide = dtype != DType::Float16 && rows % 8 == 0 && cols % vector == 0 && at(x) % 16 == 0 &&
                      at(out) % vector == 0 && at(out_t) % 8 == 0;
    KernelOrder order =
        wide ? KernelOrder{64, dtype == DType::Float32 ? std::size_t{16} : std::size_t{32}, 0} : KernelOrder{32, 8, 0};
    order.chunks = std::min<std::size_t>((rows + order.tile - 1) / order.tile, 64);
    return order;
}

float canonical(float v) {
    return std::isnan(v) ? float_of(0x7fffffffu) : v;
}

struct Dbias {
    std::vector<float> partial;  // chunks × cols, as the workspace holds it
    std::vector<float> sum;      // per column, float32
};

Dbias reference_dbias(const std::vector<float>& values, std::size_t rows, std::size_t cols, const KernelOrder& order) {
    Dbias dbias;
    dbias.partial.assign(order.chunks * cols, 0.0f);
    dbias.sum.assign(cols, 0.0f);
    const std::size_t tiles = (rows + order.tile - 1) / order.tile;
    for (std::size_t chunk = 0; chunk < order.chunks; ++chunk) {
        for (std::size_t c = 0; c < cols; ++c) {
            float block_sum = 0.0f;
            for (std::size_t thread_row = 0; thread_row < order.thread_rows; ++thread_row) {
                float thread_sum = 0.0f;
                for (std::size_t tile = chunk; tile < tiles; tile += order.chunks) {
                    for (std::size_t j = thread_row; j < order.tile; j += order.thread_rows) {
                        const std::size_t r = tile * order.tile + j;
                        if (r < rows) thread_sum += values[r * cols + c];
                    }
                }
                block_sum += thread_sum;
            }
            dbias.partial[chunk * cols + c] = canonical(block_sum);
        }
    }
    for (std::size_t c = 0; c < cols; ++c) {
        float sum = 0.0f;
        for (std::size_t chunk = 0; chunk < order.chunks; ++chunk) sum += dbias.partial[chunk * cols + c];
        dbias.sum[c] = canonical(sum);
    }
    return dbias;
}

// The block cast's bias gradient in its documented order (block_cast_types.h): per 128-row tile, each column
// as 0 + (rows 0-15 of the tile summed from 0 in row order) + (rows 16-31 ...) + ... + (rows 112-127 ...);
// then 0 + tile 0 + tile 1 + ...; a NaN as the GPU's 0x7fffffff. Rows past x add nothing.
Dbias reference_block_dbias(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    const std::size_t tiles = std::max<std::size_t>((rows + 127) / 128, 1);
    Dbias dbias;
    dbias.partial.assign(tiles * cols, 0.0f);
    dbias.sum.assign(cols, 0.0f);
    for (std::size_t tile = 0; tile < tiles; ++tile) {
        for (std::size_t c = 0; c < cols; ++c) {
            float tile_sum = 0.0f;
            for (std::size_t group = 0; group < 8; ++group) {
                float group_sum = 0.0f;
                for (std::size_t i = 0; i < 16; ++i) {
                    const std::size_t r = tile * 128 + group * 16 + i;
                    if (r < rows) group_sum += values[r * cols + c];
                }
                tile_sum += group_sum;
            }
            dbias.partial[tile * cols + c] = canonical(tile_sum);
        }
    }
    for (std::size_t c = 0; c < cols; ++c) {
        float sum = 0.0f;
        for (std::size_t tile = 0; tile < tiles; ++tile) sum += dbias.partial[tile * cols + c];
        dbias.sum[c] = canonical(sum);
    }
    return dbias;
}

// bfloat16 from float32, nearest even, NaN to 0x7fff (CUDA's __float2bfloat16).
std::uint16_t reference_bf16(float v) {
    if (std::isnan(v)) return 0x7fff;
    const std::uint32_t b = bits_of(v);
    const std::uint32_t low = b & 0xffffu;
    std::uint32_t high = b >> 16;
    if (low > 0x8000u || (low == 0x8000u && (high & 1u) != 0)) ++high;
    return static_cast<std::uint16_t>(high);
}

// --- the block cast's scale, from its formula ---

float reference_block_scale(float amax, Fp8Type type, bool power_of_two) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
    float scale = fp8_max(type) / amax;
    if (std::isinf(scale)) scale = FLT_MAX;
    if (power_of_two) scale = std::ldexp(1.0f, std::ilogb(scale));
    return scale;
}

// A float32 [1, 1] at p (a scale, scale_inv or staging entry); null: not given.
Tensor scalar(float* p) {
    return p != nullptr ? input(p, DType::Float32, 1, 1) : Tensor{};
}

void expect_error(const std::function<void()>& call, const std::string& entry, const std::string& part) {
    const std::uint64_t launches = launch_count();
    try {
        call();
        QFAIL(qPrintable(QString::fromStdString("no error from " + entry + "; expected " + part)));
    } catch (const KernelError& e) {
        const std::string message = e.what();
        QVERIFY2(message.rfind("tewb::kernels::host::" + entry + ": ", 0) == 0, e.what());
        QVERIFY2(message.find(part) != std::string::npos, e.what());
    }
    QCOMPARE(launch_count(), launches);
}

// Checks out[i] == fp8(values[i] · scale) for i in [0, n), by the reference and by detail::float_to_fp8.
void check_cast(const std::vector<float>& values, const std::uint8_t* out, float scale, Fp8Type type, const std::string& what) {
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float product = values[i] * scale;
        const std::uint8_t want = reference_fp8(product, type);
        if (out[i] != want || detail::float_to_fp8(product, type) != want) {
            QFAIL(qPrintable(QStringLiteral("%1: element %2 (x bits 0x%3, scale %4) to %5: got 0x%6, reference 0x%7, "
                                            "float_to_fp8 0x%8")
                                 .arg(QString::fromStdString(what))
                                 .arg(i)
                                 .arg(bits_of(values[i]), 8, 16, QLatin1Char('0'))
                                 .arg(static_cast<double>(scale))
                                 .arg(name(type))
                                 .arg(out[i], 2, 16, QLatin1Char('0'))
                                 .arg(want, 2, 16, QLatin1Char('0'))
                                 .arg(detail::float_to_fp8(product, type), 2, 16, QLatin1Char('0'))));
        }
    }
}

void check_amax(float amax, const Amax& want, const std::string& what) {
    const std::uint32_t want_bits = expected_amax_bits(want);
    QVERIFY2(bits_of(amax) == want_bits, qPrintable(QStringLiteral("%1: amax bits 0x%2, want 0x%3")
                                                        .arg(QString::fromStdString(what))
                                                        .arg(bits_of(amax), 8, 16, QLatin1Char('0'))
                                                        .arg(want_bits, 8, 16, QLatin1Char('0'))));
}

// A helper that failed has recorded it; the test function stops there too.
#define CHECKED(call)                           \
    do {                                        \
        call;                                   \
        if (QTest::currentTestFailed()) return; \
    } while (false)

constexpr DType kDTypes[] = {DType::Float32, DType::BFloat16, DType::Float16};
constexpr Fp8Type kFp8Types[] = {Fp8Type::E4M3, Fp8Type::E5M2};

}  // namespace

class TstHostCasts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void referenceFp8KnowsTheRules() {
        // The test's own conversion, on values whose code is known: it must be right for the rest to mean anything.
        QCOMPARE(reference_fp8(1.0f, Fp8Type::E4M3), std::uint8_t{0x38});
        QCOMPARE(reference_fp8(1.0625f, Fp8Type::E4M3), std::uint8_t{0x38});  // tie: to the even code
        QCOMPARE(reference_fp8(1.1875f, Fp8Type::E4M3), std::uint8_t{0x3a});  // tie: to the even code
        QCOMPARE(reference_fp8(448.0f, Fp8Type::E4M3), std::uint8_t{0x7e});
        QCOMPARE(reference_fp8(1e9f, Fp8Type::E4M3), std::uint8_t{0x7e});  // saturates
        QCOMPARE(reference_fp8(-HUGE_VALF, Fp8Type::E4M3), std::uint8_t{0xfe});
        QCOMPARE(reference_fp8(std::nanf(""), Fp8Type::E5M2), std::uint8_t{0x7f});
        QCOMPARE(reference_fp8(-0.0f, Fp8Type::E5M2), std::uint8_t{0x80});
        QCOMPARE(reference_fp8(std::ldexp(1.0f, -9), Fp8Type::E4M3), std::uint8_t{0x01});   // smallest subnormal
        QCOMPARE(reference_fp8(std::ldexp(1.0f, -10), Fp8Type::E4M3), std::uint8_t{0x00});  // half of it: tie to 0
        QCOMPARE(reference_fp8(57344.0f, Fp8Type::E5M2), std::uint8_t{0x7b});
        QCOMPARE(reference_fp8(60000.0f, Fp8Type::E5M2), std::uint8_t{0x7b});
        QCOMPARE(reference_fp8(std::ldexp(1.0f, -16), Fp8Type::E5M2), std::uint8_t{0x01});
        // And it agrees with the library's conversion across the float32 range (a stride over the patterns).
        for (std::uint64_t u = 0; u <= 0xffffffffull; u += 40009) {
            const float v = float_of(static_cast<std::uint32_t>(u));
            for (Fp8Type type : kFp8Types) {
                if (reference_fp8(v, type) != detail::float_to_fp8(v, type)) {
                    QFAIL(qPrintable(QStringLiteral("pattern 0x%1 %2").arg(u, 8, 16, QLatin1Char('0')).arg(name(type))));
                }
            }
        }
    }

    void castToFp8MatchesReference() {
        const std::size_t sizes[] = {1, 3, 17, 127, 129, 255, 4097};
        const float scales[] = {1.0f, 0.37f, 448.0f, 1e30f, 0.0f};
        std::uint32_t seed = 1;
        for (DType dtype : kDTypes) {
            for (Fp8Type type : kFp8Types) {
                for (std::size_t n : sizes) {
                    for (float scale : scales) {
                        const Input x = make_input(dtype, n, seed++, Specials::Included);
                        std::vector<std::uint8_t> out(n, 0xaa);
                        float amax = 0.0f;
                        const std::uint64_t launches = launch_count();
                        calls::cast_to_fp8(x.data(), dtype, n, &scale, out.data(), type, &amax);
                        QCOMPARE(launch_count(), launches + 1);
                        const std::string what = "cast_to_fp8 " + describe(dtype) + " n=" + std::to_string(n);
                        CHECKED(check_cast(x.values, out.data(), scale, type, what));
                        CHECKED(check_amax(amax, reference_amax(x.values, 0, n), what));
                    }
                }
            }
        }
    }

    void castToFp8SplitOverThreadsMatchesReference() {
        // Enough elements for the host to split the work; the result must not show it.
        for (DType dtype : kDTypes) {
            const std::size_t n = 300007;
            const Input x = make_input(dtype, n, 77, Specials::Included);
            const float scale = 3.5f;
            std::vector<std::uint8_t> out(n, 0);
            float amax = 0.0f;
            calls::cast_to_fp8(x.data(), dtype, n, &scale, out.data(), Fp8Type::E4M3, &amax);
            CHECKED(check_cast(x.values, out.data(), scale, Fp8Type::E4M3, "cast_to_fp8 large " + describe(dtype)));
            CHECKED(check_amax(amax, reference_amax(x.values, 0, n), "cast_to_fp8 large " + describe(dtype)));
            // Without the specials: amax is finite, and the largest |x| wherever it falls.
            const Input finite = make_finite_input(dtype, n, 78);
            amax = 0.0f;
            calls::cast_to_fp8(finite.data(), dtype, n, &scale, out.data(), Fp8Type::E5M2, &amax);
            CHECKED(check_cast(finite.values, out.data(), scale, Fp8Type::E5M2, "cast_to_fp8 large finite " + describe(dtype)));
            QVERIFY(std::isfinite(amax));
            CHECKED(check_amax(amax, reference_amax(finite.values, 0, n), "cast_to_fp8 large finite " + describe(dtype)));
        }
    }

    void castAmaxCombinesAsTheKernel() {
        const float scale = 1.0f;
        std::vector<std::uint8_t> out(64);
        const Input finite = make_finite_input(DType::Float32, 64, 5);
        const float largest = static_cast<float>(reference_amax(finite.values, 0, 64).largest);
        QVERIFY(largest > 0.0f);

        float amax = 0.0f;  // an empty staging entry takes the cast's amax
        calls::cast_to_fp8(finite.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, &amax);
        QCOMPARE(bits_of(amax), bits_of(largest));

        amax = 1e9f;  // a larger one already there stays
        calls::cast_to_fp8(finite.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, &amax);
        QCOMPARE(amax, 1e9f);

        amax = largest / 2;  // a smaller one is replaced
        calls::cast_to_fp8(finite.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, &amax);
        QCOMPARE(bits_of(amax), bits_of(largest));

        amax = float_of(0x7fc00000u);  // a NaN already there stays (its bits rank above any |x|)
        calls::cast_to_fp8(finite.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, &amax);
        QCOMPARE(bits_of(amax), 0x7fc00000u);

        Input with_nan = make_finite_input(DType::Float32, 64, 5);
        with_nan.set_pattern(40, 0xffc00123u);  // -NaN: |x| is 0x7fc00123
        amax = 1e9f;                            // a NaN in x wins over any number
        calls::cast_to_fp8(with_nan.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, &amax);
        QCOMPARE(bits_of(amax), 0x7fc00123u);

        Input with_inf = make_finite_input(DType::BFloat16, 64, 6);
        with_inf.set_pattern(0, 0xff80u);  // -inf: amax is +inf
        amax = 1e9f;
        calls::cast_to_fp8(with_inf.data(), DType::BFloat16, 64, &scale, out.data(), Fp8Type::E5M2, &amax);
        QCOMPARE(bits_of(amax), 0x7f800000u);

        // No amax: the cast alone.
        calls::cast_to_fp8(with_nan.data(), DType::Float32, 64, &scale, out.data(), Fp8Type::E4M3, nullptr);
        CHECKED(check_cast(with_nan.values, out.data(), scale, Fp8Type::E4M3, "cast_to_fp8 without amax"));
    }

    void castTransposeMatchesReference() {
        const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},   {1, 17},  {17, 1},    {3, 129}, {127, 129},
                                                              {255, 3}, {64, 64}, {129, 255}, {33, 31}, {1031, 300}};
        std::uint32_t seed = 100;
        for (DType dtype : kDTypes) {
            for (Fp8Type type : kFp8Types) {
                for (const auto& [rows, cols] : shapes) {
                    const Input x = make_input(dtype, rows * cols, seed++, Specials::Included);
                    const float scale = type == Fp8Type::E4M3 ? 2.5f : 0.75f;
                    std::vector<std::uint8_t> out(rows * cols, 0xaa);
                    std::vector<std::uint8_t> out_t(rows * cols, 0xaa);
                    float amax = 0.0f;
                    const std::uint64_t launches = launch_count();
                    calls::cast_transpose_to_fp8(x.data(), dtype, rows, cols, &scale, out.data(), out_t.data(), type, &amax);
                    QCOMPARE(launch_count(), launches + 1);
                    const std::string what =
                        "cast_transpose " + describe(dtype) + " " + std::to_string(rows) + "x" + std::to_string(cols);
                    CHECKED(check_cast(x.values, out.data(), scale, type, what));
                    for (std::size_t r = 0; r < rows; ++r) {
                        for (std::size_t c = 0; c < cols; ++c) {
                            if (out_t[c * rows + r] != out[r * cols + c]) {
                                QFAIL(qPrintable(QString::fromStdString(what + ": out_t[" + std::to_string(c) + ", " +
                                                                        std::to_string(r) + "] is not out[r, c]")));
                            }
                        }
                    }
                    CHECKED(check_amax(amax, reference_amax(x.values, 0, rows * cols), what));
                }
            }
        }
    }

    void dbiasWorkspaceBytesAsTheKernels() {
        QCOMPARE(cast_transpose_dbias_workspace_bytes(10, 768), std::size_t{1 * 768 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(100, 768), std::size_t{4 * 768 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(3072, 768), std::size_t{64 * 768 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(2049, 5), std::size_t{64 * 5 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(32, 5), std::size_t{1 * 5 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(33, 5), std::size_t{2 * 5 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(0, 5), std::size_t{1 * 5 * 4});
    }

    void dbiasMatchesTheKernelOrderBitForBit() {
        // Shapes for both kernels (the vectorised one needs rows % 8 == 0 and cols a multiple of 16 bytes),
        // partial tiles, and more tiles than the 64 chunks (4104 = 64 · 64 + 8 and 4101 rows wrap around).
        const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},     {3, 17},   {17, 3},   {32, 64},   {64, 64}, {96, 40},
                                                              {127, 129}, {256, 96}, {200, 24}, {4104, 24}, {4101, 9}};
        const std::size_t offsets[] = {0, 4};  // 4: x no longer 16-byte aligned, so the GPU takes the 32 x 8 kernel
        std::uint32_t seed = 500;
        for (DType dtype : kDTypes) {
            for (DType dbias_dtype : {DType::Float32, DType::BFloat16}) {
                for (const auto& [rows, cols] : shapes) {
                    for (std::size_t offset : offsets) {
                        const std::size_t n = rows * cols;
                        const Input x = make_finite_input(dtype, n, seed++, offset);
                        Buffer out(n), out_t(n);
                        const std::size_t workspace_bytes = cast_transpose_dbias_workspace_bytes(rows, cols);
                        Buffer workspace(workspace_bytes);
                        Buffer dbias(cols * 4);
                        const float scale = 0.5f;
                        float amax = 0.0f;
                        const std::uint64_t launches = launch_count();
                        calls::cast_transpose_dbias_to_fp8(
                            {x.data(), dtype, rows, cols}, calls::Fp8Out{out.data(), out_t.data(), &scale, &amax, Fp8Type::E5M2},
                            {dbias.data(), dbias_dtype, 1, cols}, {workspace.data(), workspace_bytes});
                        QCOMPARE(launch_count(), launches + 1);  // the column sums finished in the same launch
                        const std::string what = "dbias " + describe(dtype) + " into " + describe(dbias_dtype) + " " +
                                                 std::to_string(rows) + "x" + std::to_string(cols) + " offset " +
                                                 std::to_string(offset);
                        CHECKED(check_cast(x.values, out.data(), scale, Fp8Type::E5M2, what));
                        for (std::size_t r = 0; r < rows; ++r) {
                            for (std::size_t c = 0; c < cols; ++c) {
                                QVERIFY2(out_t.data()[c * rows + r] == out.data()[r * cols + c], what.c_str());
                            }
                        }
                        CHECKED(check_amax(amax, reference_amax(x.values, 0, n), what));

                        const KernelOrder order = gpu_order(dtype, rows, cols, x.data(), out.data(), out_t.data());
                        const Dbias want = reference_dbias(x.values, rows, cols, order);
                        const auto* partial = reinterpret_cast<const float*>(workspace.data());
                        for (std::size_t i = 0; i < order.chunks * cols; ++i) {
                            QVERIFY2(bits_of(partial[i]) == bits_of(want.partial[i]),
                                     qPrintable(QString::fromStdString(what + ": workspace " + std::to_string(i))));
                        }
                        // The sum in double: within the float32 accumulation's error (and bfloat16's rounding).
                        for (std::size_t c = 0; c < cols; ++c) {
                            double exact = 0.0;
                            double magnitude = 0.0;
                            for (std::size_t r = 0; r < rows; ++r) {
                                exact += x.values[r * cols + c];
                                magnitude += std::fabs(static_cast<double>(x.values[r * cols + c]));
                            }
                            float got = 0.0f;
                            double bound = static_cast<double>(rows + order.chunks + order.thread_rows) * 0x1p-24 * magnitude;
                            if (dbias_dtype == DType::Float32) {
                                std::memcpy(&got, dbias.data() + c * 4, 4);
                                QVERIFY2(bits_of(got) == bits_of(want.sum[c]),
                                         qPrintable(QStringLiteral("%1: dbias[%2] %3, kernel order %4")
                                                        .arg(QString::fromStdString(what))
                                                        .arg(c)
                                                        .arg(static_cast<double>(got), 0, 'g', 9)
                                                        .arg(static_cast<double>(want.sum[c]), 0, 'g', 9)));
                            } else {
                                std::uint16_t h = 0;
                                std::memcpy(&h, dbias.data() + c * 2, 2);
                                QVERIFY2(h == reference_bf16(want.sum[c]),
                                         qPrintable(QStringLiteral("%1: dbias[%2] bfloat16 0x%3, want 0x%4")
                                                        .arg(QString::fromStdString(what))
                                                        .arg(c)
                                                        .arg(h, 4, 16, QLatin1Char('0'))
                                                        .arg(reference_bf16(want.sum[c]), 4, 16, QLatin1Char('0'))));
                                got = float_of(static_cast<std::uint32_t>(h) << 16);
                                bound += 0x1p-8 * std::fabs(exact);
                            }
                            QVERIFY2(std::fabs(static_cast<double>(got) - exact) <= bound + 1e-30,
                                     qPrintable(QStringLiteral("%1: dbias[%2] %3, double sum %4")
                                                    .arg(QString::fromStdString(what))
                                                    .arg(c)
                                                    .arg(static_cast<double>(got), 0, 'g', 9)
                                                    .arg(exact, 0, 'g', 17)));
                        }
                    }
                }
            }
        }
    }

    void dbiasOrderFollowsTheKernelChoice() {
        // The two kernels sum in different orders: for this input their float32 results differ, so a host that
        // took the wrong order for a layout fails here.
        const std::size_t rows = 256;
        const std::size_t cols = 96;
        for (DType dtype : {DType::Float32, DType::BFloat16}) {
            const Input aligned = make_finite_input(dtype, rows * cols, 901, 0);
            const Input shifted = make_finite_input(dtype, rows * cols, 901, 4);
            Buffer out(rows * cols), out_t(rows * cols);
            const KernelOrder wide = gpu_order(dtype, rows, cols, aligned.data(), out.data(), out_t.data());
            const KernelOrder narrow = gpu_order(dtype, rows, cols, shifted.data(), out.data(), out_t.data());
            QCOMPARE(wide.tile, std::size_t{64});
            QCOMPARE(narrow.tile, std::size_t{32});
            const Dbias wide_sums = reference_dbias(aligned.values, rows, cols, wide);
            const Dbias narrow_sums = reference_dbias(shifted.values, rows, cols, narrow);
            std::size_t differing = 0;
            for (std::size_t c = 0; c < cols; ++c) differing += bits_of(wide_sums.sum[c]) != bits_of(narrow_sums.sum[c]) ? 1 : 0;
            QVERIFY2(differing > 0, "the two kernel orders give the same sums: this input cannot tell them apart");

            const std::size_t workspace_bytes = cast_transpose_dbias_workspace_bytes(rows, cols);
            Buffer workspace(workspace_bytes);
            const float scale = 1.0f;
            for (const auto& [input, want] : {std::pair{&aligned, &wide_sums}, std::pair{&shifted, &narrow_sums}}) {
                std::vector<float> dbias(cols);
                calls::cast_transpose_dbias_to_fp8({input->data(), dtype, rows, cols},
                                                  calls::Fp8Out{out.data(), out_t.data(), &scale, nullptr, Fp8Type::E4M3},
                                                  {dbias.data(), DType::Float32, 1, cols}, {workspace.data(), workspace_bytes});
                for (std::size_t c = 0; c < cols; ++c) QCOMPARE(bits_of(dbias[c]), bits_of(want->sum[c]));
            }
            // out_t misaligned for 8-byte stores also sends the GPU to the 32 x 8 kernel.
            Buffer odd_out_t(rows * cols + 8, 1);
            QCOMPARE(gpu_order(dtype, rows, cols, aligned.data(), out.data(), odd_out_t.data()).tile, std::size_t{32});
            std::vector<float> dbias(cols);
            calls::cast_transpose_dbias_to_fp8({aligned.data(), dtype, rows, cols},
                                              calls::Fp8Out{out.data(), odd_out_t.data(), &scale, nullptr, Fp8Type::E4M3},
                                              {dbias.data(), DType::Float32, 1, cols}, {workspace.data(), workspace_bytes});
            const Dbias aligned_narrow = reference_dbias(aligned.values, rows, cols, narrow);
            for (std::size_t c = 0; c < cols; ++c) QCOMPARE(bits_of(dbias[c]), bits_of(aligned_narrow.sum[c]));
        }
    }

    void dbiasNanAndInf() {
        // Column 0: a NaN (negative, with a payload); 1: +inf and -inf; 2: +inf only; 3: finite.
        const std::size_t rows = 40;
        const std::size_t cols = 4;
        for (DType dbias_dtype : {DType::Float32, DType::BFloat16}) {
            Input x = make_finite_input(DType::Float32, rows * cols, 42);
            x.set_pattern(5 * cols + 0, 0xffc00007u);
            x.set_pattern(3 * cols + 1, 0x7f800000u);
            x.set_pattern(37 * cols + 1, 0xff800000u);
            x.set_pattern(20 * cols + 2, 0x7f800000u);
            const std::size_t workspace_bytes = cast_transpose_dbias_workspace_bytes(rows, cols);
            Buffer workspace(workspace_bytes), out(rows * cols), out_t(rows * cols), dbias(cols * 4);
            const float scale = 1.0f;
            float amax = 0.0f;
            calls::cast_transpose_dbias_to_fp8({x.data(), DType::Float32, rows, cols},
                                              calls::Fp8Out{out.data(), out_t.data(), &scale, &amax, Fp8Type::E4M3},
                                              {dbias.data(), dbias_dtype, 1, cols}, {workspace.data(), workspace_bytes});
            QCOMPARE(bits_of(amax), 0x7fc00007u);
            const Dbias want =
                reference_dbias(x.values, rows, cols, gpu_order(DType::Float32, rows, cols, x.data(), out.data(), out_t.data()));
            if (dbias_dtype == DType::Float32) {
                const auto* sums = reinterpret_cast<const float*>(dbias.data());
                QCOMPARE(bits_of(sums[0]), 0x7fffffffu);  // the GPU's one NaN
                QCOMPARE(bits_of(sums[1]), 0x7fffffffu);  // inf - inf
                QCOMPARE(bits_of(sums[2]), 0x7f800000u);
                QVERIFY(std::isfinite(sums[3]));
                QCOMPARE(bits_of(sums[3]), bits_of(want.sum[3]));
            } else {
                const auto* sums = reinterpret_cast<const std::uint16_t*>(dbias.data());
                QCOMPARE(sums[0], std::uint16_t{0x7fff});
                QCOMPARE(sums[1], std::uint16_t{0x7fff});
                QCOMPARE(sums[2], std::uint16_t{0x7f80});
                QCOMPARE(sums[3], reference_bf16(want.sum[3]));
            }
            const auto* partial = reinterpret_cast<const float*>(workspace.data());
            QCOMPARE(bits_of(partial[0]), 0x7fffffffu);  // the chunk holding the NaN
        }
        // +inf in one chunk's partial sum and -inf in the next: the NaN appears in the second stage (float16
        // input always takes the 32 x 8 kernel: 64 rows are 2 chunks).
        Input halves = make_finite_input(DType::Float16, 64 * 2, 43);
        halves.set_pattern(1 * 2 + 1, 0x7c00u);
        halves.set_pattern(40 * 2 + 1, 0xfc00u);
        const std::size_t workspace_bytes = cast_transpose_dbias_workspace_bytes(64, 2);
        Buffer workspace(workspace_bytes), out(128), out_t(128), dbias(8);
        const float scale = 1.0f;
        calls::cast_transpose_dbias_to_fp8({halves.data(), DType::Float16, 64, 2},
                                          calls::Fp8Out{out.data(), out_t.data(), &scale, nullptr, Fp8Type::E4M3},
                                          {dbias.data(), DType::Float32, 1, 2}, {workspace.data(), workspace_bytes});
        const auto* partial = reinterpret_cast<const float*>(workspace.data());
        QCOMPARE(bits_of(partial[1]), 0x7f800000u);
        QCOMPARE(bits_of(partial[2 + 1]), 0xff800000u);
        QCOMPARE(bits_of(reinterpret_cast<const float*>(dbias.data())[1]), 0x7fffffffu);
    }

    void transposeCopiesEveryElement() {
        const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},     {1, 5},    {5, 1},    {3, 17},
                                                              {127, 129}, {255, 33}, {33, 255}, {1000, 700}};
        std::mt19937 random(9);
        for (std::size_t element_bytes : {1, 2, 4}) {
            for (const auto& [rows, cols] : shapes) {
                std::vector<unsigned char> x(rows * cols * element_bytes);
                for (unsigned char& b : x) b = static_cast<unsigned char>(random());
                Buffer out(rows * cols * element_bytes);
                const std::uint64_t launches = launch_count();
                calls::transpose(x.data(), element_bytes, rows, cols, out.data());
                QCOMPARE(launch_count(), launches + 1);
                for (std::size_t r = 0; r < rows; ++r) {
                    for (std::size_t c = 0; c < cols; ++c) {
                        if (std::memcmp(out.data() + (c * rows + r) * element_bytes, x.data() + (r * cols + c) * element_bytes,
                                        element_bytes) != 0) {
                            QFAIL(qPrintable(QStringLiteral("%1-byte %2x%3: out[%4, %5] is not x[%5, %4]")
                                                 .arg(element_bytes)
                                                 .arg(rows)
                                                 .arg(cols)
                                                 .arg(c)
                                                 .arg(r)));
                        }
                    }
                }
            }
        }
    }

    void blockCastMatchesReference() {
        const std::size_t row_counts[] = {1, 3, 128, 129, 255};
        const std::size_t col_counts[] = {1, 127, 128, 129, 300};
        std::uint32_t seed = 2000;
        for (DType dtype : kDTypes) {
            for (Fp8Type type : kFp8Types) {
                for (int block_rows : {1, 128}) {
                    for (bool power_of_two : {false, true}) {
                        for (std::size_t rows : row_counts) {
                            for (std::size_t cols : col_counts) {
                                const bool with_specials = (seed % 3) == 0;
                                const Input x =
                                    make_input(dtype, rows * cols, seed++, with_specials ? Specials::Included : Specials::None);
                                CHECKED(check_block_cast(x, rows, cols, block_rows, power_of_two, type));
                            }
                        }
                    }
                }
            }
        }
        // Enough rows for the host to split the work.
        const Input large = make_finite_input(DType::BFloat16, 2000 * 257, 31);
        CHECKED(check_block_cast(large, 2000, 257, 1, true, Fp8Type::E4M3));
        CHECKED(check_block_cast(large, 2000, 257, 128, false, Fp8Type::E5M2));
    }

    void blockCastSpecialBlocks() {
        // One row of 1 x 128 blocks: zeros; a NaN; an inf; amax the smallest subnormal; amax 3; a partial block of 5.
        const std::size_t cols = 5 * 128 + 5;
        for (DType dtype : kDTypes) {
            for (bool power_of_two : {false, true}) {
                Input x = make_input(dtype, cols, 3, Specials::None);
                const bool f32 = dtype == DType::Float32;
                const bool bf16 = dtype == DType::BFloat16;
                for (std::size_t c = 0; c < 128; ++c) x.set_pattern(c, c % 2 == 0 ? 0u : (f32 ? 0x80000000u : 0x8000u));
                x.set_pattern(128 + 17, f32 ? 0x7fc00000u : (bf16 ? 0x7fc0u : 0x7e00u));
                x.set_pattern(256 + 99, f32 ? 0xff800000u : (bf16 ? 0xff80u : 0xfc00u));
                for (std::size_t c = 384; c < 512; ++c) x.set_pattern(c, c % 3 == 0 ? 1u : 0u);
                for (std::size_t c = 512; c < 640; ++c) x.set_pattern(c, f32 ? 0x3f800000u : (bf16 ? 0x3f80u : 0x3c00u));
                x.set_pattern(600, f32 ? 0xc0400000u : (bf16 ? 0xc040u : 0xc200u));  // -3
                const std::uint64_t launches = launch_count();
                const std::vector<float> got = check_block_cast(x, 1, cols, 1, power_of_two, Fp8Type::E4M3);
                if (QTest::currentTestFailed()) return;
                QCOMPARE(launch_count(), launches + 1);
                QCOMPARE(got[0], 1.0f);  // amax 0
                QCOMPARE(got[1], 1.0f);  // NaN
                QCOMPARE(got[2], 1.0f);  // inf
                const float tiny = x.values[384];
                const float tiny_scale = reference_block_scale(tiny, Fp8Type::E4M3, power_of_two);
                QCOMPARE(bits_of(got[3]), bits_of(1.0f / tiny_scale));
                if (dtype != DType::Float16) {  // 448 / the smallest float32 or bfloat16 subnormal overflows
                    QCOMPARE(tiny_scale, power_of_two ? std::ldexp(1.0f, 127) : FLT_MAX);
                }
                QCOMPARE(bits_of(got[4]), bits_of(power_of_two ? 1.0f / 128.0f : 1.0f / (448.0f / 3.0f)));
                QVERIFY(got[5] > 0.0f && std::isfinite(got[5]));
            }
        }
    }

    void dbiasLaunchesFollowTheColumnTiles() {
        // One launch while the kernel's grid has at most 2048 column tiles (the arrival counters,
        // common/column_sum_rule.h), two past that (the partial rows then summed by a launch of their own);
        // the tiles are those of the kernel the GPU picks: 32 columns for the 32 x 8 kernel, 64 for the
        // vectorised one. The sums are in the same order either way.
        struct Case {
            DType dtype;
            std::size_t rows, cols, offset;
            std::uint64_t launches;
        };
        const Case cases[] = {
            {DType::Float16, 3, 2048 * 32, 0, 1},      // 32 x 8 kernel: 2048 tiles
            {DType::Float16, 3, 2048 * 32 + 1, 0, 2},  // 2049 tiles
            {DType::Float32, 8, 2048 * 64, 0, 1},      // vectorised: 2048 tiles of 64
            {DType::Float32, 8, 2048 * 64 + 4, 0, 2},  // 2049
            {DType::Float32, 8, 2048 * 32 + 4, 4, 2},  // x misaligned: the 32 x 8 kernel, 2049 tiles of 32
            {DType::Float32, 8, 2048 * 32 + 4, 0, 1},  // the same shape aligned: 1026 tiles of 64
        };
        std::uint32_t seed = 950;
        for (const Case& k : cases) {
            const std::size_t n = k.rows * k.cols;
            const Input x = make_finite_input(k.dtype, n, seed++, k.offset);
            Buffer out(n), out_t(n), dbias(k.cols * 4);
            const std::size_t workspace_bytes = cast_transpose_dbias_workspace_bytes(k.rows, k.cols);
            Buffer workspace(workspace_bytes);
            const float scale = 1.0f;
            const std::uint64_t launches = launch_count();
            calls::cast_transpose_dbias_to_fp8({x.data(), k.dtype, k.rows, k.cols},
                                              calls::Fp8Out{out.data(), out_t.data(), &scale, nullptr, Fp8Type::E4M3},
                                              {dbias.data(), DType::Float32, 1, k.cols}, {workspace.data(), workspace_bytes});
            const std::string what = describe(k.dtype) + " " + std::to_string(k.rows) + "x" + std::to_string(k.cols) + " offset " +
                                     std::to_string(k.offset);
            QVERIFY2(launch_count() == launches + k.launches, what.c_str());
            const Dbias want =
                reference_dbias(x.values, k.rows, k.cols, gpu_order(k.dtype, k.rows, k.cols, x.data(), out.data(), out_t.data()));
            const auto* sums = reinterpret_cast<const float*>(dbias.data());
            for (std::size_t c = 0; c < k.cols; ++c) {
                if (bits_of(sums[c]) != bits_of(want.sum[c])) QFAIL(qPrintable(QString::fromStdString(what + ": dbias " + std::to_string(c))));
            }
        }
    }

    void blockCastDbiasMatchesColumnSums() {
        // Ragged shapes (rows and cols not multiples of 128), every input dtype, both block shapes, with and
        // without the transposed copy: the bias gradient in the documented order bit for bit, near the double
        // sum, the tiles' partial rows in the workspace, one launch, and the cast's outputs as without dbias.
        const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},     {3, 127},   {128, 128}, {129, 300},
                                                              {255, 129}, {300, 257}, {1000, 65}, {2000, 257}};
        std::uint32_t seed = 4000;
        for (DType dtype : kDTypes) {
            for (const auto& [rows, cols] : shapes) {
                const int block_rows = seed % 2 == 0 ? 1 : 128;
                const bool with_transposed = seed % 3 != 0;
                const Fp8Type type = seed % 5 < 3 ? Fp8Type::E4M3 : Fp8Type::E5M2;
                const Input x = make_finite_input(dtype, rows * cols, seed++);
                const ScaleMode mode = block_scale_mode(block_rows);
                const std::string what = "block_cast dbias " + describe(dtype) + " " + std::to_string(rows) + "x" +
                                         std::to_string(cols) + " block_rows " + std::to_string(block_rows) +
                                         (with_transposed ? " transposed" : "");
                struct Outputs {
                    std::vector<std::uint8_t> data, transposed;
                    std::vector<float> scale_inv, transposed_scale_inv;
                    float amax = 0.0f;
                };
                const auto run = [&](Outputs& o, float* dbias, void* workspace, std::size_t workspace_bytes) {
                    o.data.assign(rows * cols, 0xaa);
                    o.transposed.assign(rows * cols, 0xaa);
                    o.scale_inv.assign(block_scale_entries(mode, rows, cols), -1.0f);
                    o.transposed_scale_inv.assign(block_scale_entries(mode, cols, rows), -1.0f);
                    BlockCastOutput out;
                    out.data = o.data.data();
                    out.scale_inv = o.scale_inv.data();
                    if (with_transposed) {
                        out.transposed = o.transposed.data();
                        out.transposed_scale_inv = o.transposed_scale_inv.data();
                    }
                    out.amax = &o.amax;
                    out.type = type;
                    out.dbias = dbias;
                    out.dbias_workspace = workspace;
                    out.dbias_workspace_bytes = workspace_bytes;
                    calls::block_cast_to_fp8(x.data(), dtype, rows, cols, block_rows, true, out);
                };
                Outputs plain, with;
                run(plain, nullptr, nullptr, 0);
                const std::size_t workspace_bytes = block_cast_dbias_workspace_bytes(rows, cols);
                QCOMPARE(workspace_bytes, std::max<std::size_t>((rows + 127) / 128, 1) * cols * 4);
                std::vector<float> workspace(workspace_bytes / 4, float_of(0xffc00001u));  // unwritten entries show
                std::vector<float> dbias(cols, float_of(0xffc00001u));
                const std::uint64_t launches = launch_count();
                run(with, dbias.data(), workspace.data(), workspace_bytes);
                QVERIFY2(launch_count() == launches + 1, what.c_str());

                QVERIFY2(with.data == plain.data, (what + ": data").c_str());
                QVERIFY2(with.transposed == plain.transposed, (what + ": transposed").c_str());
                QVERIFY2(std::memcmp(with.scale_inv.data(), plain.scale_inv.data(), plain.scale_inv.size() * 4) == 0,
                         (what + ": scale_inv").c_str());
                QVERIFY2(std::memcmp(with.transposed_scale_inv.data(), plain.transposed_scale_inv.data(),
                                     plain.transposed_scale_inv.size() * 4) == 0,
                         (what + ": transposed_scale_inv").c_str());
                QCOMPARE(bits_of(with.amax), bits_of(plain.amax));

                const Dbias want = reference_block_dbias(x.values, rows, cols);
                for (std::size_t i = 0; i < want.partial.size(); ++i) {
                    QVERIFY2(bits_of(workspace[i]) == bits_of(want.partial[i]),
                             qPrintable(QString::fromStdString(what + ": workspace " + std::to_string(i))));
                }
                const std::size_t tiles = want.partial.size() / cols;
                for (std::size_t c = 0; c < cols; ++c) {
                    QVERIFY2(bits_of(dbias[c]) == bits_of(want.sum[c]),
                             qPrintable(QStringLiteral("%1: dbias[%2] %3, documented order %4")
                                            .arg(QString::fromStdString(what))
                                            .arg(c)
                                            .arg(static_cast<double>(dbias[c]), 0, 'g', 9)
                                            .arg(static_cast<double>(want.sum[c]), 0, 'g', 9)));
                    // Against the double sum: a float32 chain of at most 16 + 8 + tiles additions.
                    double exact = 0.0;
                    double magnitude = 0.0;
                    for (std::size_t r = 0; r < rows; ++r) {
                        exact += x.values[r * cols + c];
                        magnitude += std::fabs(static_cast<double>(x.values[r * cols + c]));
                    }
                    const double bound = static_cast<double>(16 + 8 + tiles) * 0x1p-24 * magnitude;
                    QVERIFY2(std::fabs(static_cast<double>(dbias[c]) - exact) <= bound,
                             qPrintable(QStringLiteral("%1: dbias[%2] %3, double sum %4, bound %5")
                                            .arg(QString::fromStdString(what))
                                            .arg(c)
                                            .arg(static_cast<double>(dbias[c]), 0, 'g', 9)
                                            .arg(exact, 0, 'g', 17)
                                            .arg(bound, 0, 'g', 3)));
                }
            }
        }
    }

    void blockCastDbiasNanAndInf() {
        // 300 rows: 3 row tiles. Column 0: a NaN with a payload; 1: +inf in tile 0, -inf in tile 1 (the NaN
        // appears when the tiles are added); 2: +inf only; 3: finite.
        const std::size_t rows = 300;
        const std::size_t cols = 4;
        Input x = make_finite_input(DType::Float32, rows * cols, 44);
        x.set_pattern(5 * cols + 0, 0xffc00007u);
        x.set_pattern(3 * cols + 1, 0x7f800000u);
        x.set_pattern(200 * cols + 1, 0xff800000u);
        x.set_pattern(20 * cols + 2, 0x7f800000u);
        std::vector<std::uint8_t> data(rows * cols);
        std::vector<float> scale_inv(block_scale_entries(block_scale_mode(1), rows, cols));
        std::vector<float> workspace(block_cast_dbias_workspace_bytes(rows, cols) / 4);
        std::vector<float> dbias(cols);
        BlockCastOutput out;
        out.data = data.data();
        out.scale_inv = scale_inv.data();
        out.dbias = dbias.data();
        out.dbias_workspace = workspace.data();
        out.dbias_workspace_bytes = workspace.size() * 4;
        calls::block_cast_to_fp8(x.data(), DType::Float32, rows, cols, 1, false, out);
        QCOMPARE(bits_of(dbias[0]), 0x7fffffffu);  // the GPU's one NaN
        QCOMPARE(bits_of(dbias[1]), 0x7fffffffu);  // inf - inf
        QCOMPARE(bits_of(dbias[2]), 0x7f800000u);
        QCOMPARE(bits_of(dbias[3]), bits_of(reference_block_dbias(x.values, rows, cols).sum[3]));
        QCOMPARE(bits_of(workspace[0]), 0x7fffffffu);           // tile 0, column 0
        QCOMPARE(bits_of(workspace[1]), 0x7f800000u);           // tile 0, column 1
        QCOMPARE(bits_of(workspace[cols + 1]), 0xff800000u);    // tile 1, column 1
    }

    void blockCastDbiasLaunchesFollowTheColumnTiles() {
        // One launch up to 2048 column tiles of 128 (the arrival counters), two past that.
        for (const auto& [cols, want_launches] : {std::pair<std::size_t, std::uint64_t>{2048 * 128, 1}, {2048 * 128 + 1, 2}}) {
            const std::size_t rows = 2;
            const Input x = make_finite_input(DType::BFloat16, rows * cols, 45);
            std::vector<std::uint8_t> data(rows * cols);
            std::vector<float> scale_inv(block_scale_entries(block_scale_mode(1), rows, cols));
            std::vector<float> workspace(block_cast_dbias_workspace_bytes(rows, cols) / 4);
            std::vector<float> dbias(cols);
            BlockCastOutput out;
            out.data = data.data();
            out.scale_inv = scale_inv.data();
            out.dbias = dbias.data();
            out.dbias_workspace = workspace.data();
            out.dbias_workspace_bytes = workspace.size() * 4;
            const std::uint64_t launches = launch_count();
            calls::block_cast_to_fp8(x.data(), DType::BFloat16, rows, cols, 1, true, out);
            QCOMPARE(launch_count(), launches + want_launches);
            const Dbias want = reference_block_dbias(x.values, rows, cols);
            for (std::size_t c = 0; c < cols; ++c) {
                if (bits_of(dbias[c]) != bits_of(want.sum[c])) QFAIL(qPrintable(QStringLiteral("dbias[%1]").arg(c)));
            }
        }
    }

    void blockCastDbiasRefusals() {
        alignas(16) float f[8] = {};
        alignas(16) std::uint8_t bytes[64] = {};
        alignas(16) float work[64] = {};
        alignas(16) float bias[4] = {};
        auto* two = reinterpret_cast<float*>(reinterpret_cast<char*>(bias) + 2);
        const std::string blocks = "block_cast_to_fp8";
        QCOMPARE(block_cast_dbias_workspace_bytes(0, 5), std::size_t{1 * 5 * 4});
        QCOMPARE(block_cast_dbias_workspace_bytes(128, 5), std::size_t{1 * 5 * 4});
        QCOMPARE(block_cast_dbias_workspace_bytes(129, 5), std::size_t{2 * 5 * 4});
        QCOMPARE(block_cast_dbias_workspace_bytes(3072, 768), std::size_t{24 * 768 * 4});
        const std::size_t needed = block_cast_dbias_workspace_bytes(4, 2);
        const auto cast_with = [&](float* dbias, void* workspace, std::size_t workspace_bytes) {
            return [&, dbias, workspace, workspace_bytes] {
                BlockCastOutput o;
                o.data = bytes;
                o.scale_inv = work;
                o.dbias = dbias;
                o.dbias_workspace = workspace;
                o.dbias_workspace_bytes = workspace_bytes;
                calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, o);
            };
        };
        expect_error(cast_with(bias, work + 16, needed - 4), blocks,
                     "dbias_workspace of 4 bytes; needed: 8 (block_cast_dbias_workspace_bytes)");
        expect_error(cast_with(bias, nullptr, needed), blocks, "dbias_workspace is a null pointer");
        expect_error(cast_with(bias, reinterpret_cast<char*>(work + 16) + 2, needed), blocks,
                     "dbias_workspace is not 4-byte aligned");
        expect_error(cast_with(two, work + 16, needed), blocks, "dbias is not 4-byte aligned");
        expect_error(cast_with(work + 16, work + 16, needed), blocks, "dbias and dbias_workspace are the same buffer");
        // Without dbias the workspace fields are not looked at; rows 0 does nothing.
        const std::uint64_t launches = launch_count();
        cast_with(nullptr, nullptr, 0)();
        QCOMPARE(launch_count(), launches + 1);
        BlockCastOutput nothing;
        nothing.dbias = bias;
        calls::block_cast_to_fp8(nullptr, DType::Float32, 0, 2, 1, true, nothing);
        QCOMPARE(launch_count(), launches + 1);
    }

    void absMaxMatchesReference() {
        const std::size_t sizes[] = {1, 3, 17, 127, 129, 255, 100003};
        std::uint32_t seed = 3000;
        for (DType dtype : kDTypes) {
            for (std::size_t n : sizes) {
                for (Specials specials : {Specials::None, Specials::Included}) {
                    const Input x = make_input(dtype, n, seed++, specials);
                    float amax = -5.0f;
                    const std::uint64_t launches = launch_count();
                    host::abs_max(with_amax(x.data(), dtype, n, &amax), {});
                    QCOMPARE(launch_count(), launches + 1);
                    CHECKED(check_amax(amax, reference_amax(x.values, 0, n),
                                       "abs_max " + describe(dtype) + " n=" + std::to_string(n)));
                }
            }
        }
        // A NaN anywhere: the result is NaN, the largest |x| pattern among them.
        Input x = make_finite_input(DType::Float32, 1000, 4);
        x.set_pattern(999, 0x7fc00000u);
        x.set_pattern(3, 0xffc00010u);
        float amax = 0.0f;
        host::abs_max(with_amax(x.data(), DType::Float32, 1000, &amax), {});
        QCOMPARE(bits_of(amax), 0x7fc00010u);
        // Only -0 and 0: 0.
        Input zeros = make_input(DType::BFloat16, 9, 1, Specials::None);
        for (std::size_t i = 0; i < 9; ++i) zeros.set_pattern(i, i % 2 == 0 ? 0x8000u : 0u);
        amax = 7.0f;
        host::abs_max(with_amax(zeros.data(), DType::BFloat16, 9, &amax), {});
        QCOMPARE(bits_of(amax), 0u);
    }

    // Current scaling's step in one launch is abs_max then current_scale, bit for bit: the amax (x.amax optional), the
    // scale (1 for an amax of 0, inf or NaN; FLT_MAX where numerator / amax overflows), scale_inv and the staging entry
    // (the larger amax kept, NaN winning).
    void absMaxCurrentScaleIsAbsMaxThenCurrentScale() {
        std::uint32_t seed = 4000;
        const float kNan = std::numeric_limits<float>::quiet_NaN();
        for (DType dtype : kDTypes) {
            for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{129}, std::size_t{5000}}) {
                for (Specials specials : {Specials::None, Specials::Included}) {
                    for (const float staged : {0.0f, 0.5f, 1e30f, kNan}) {
                        for (const float numerator : {448.0f, 57344.0f, 3.5f}) {
                            const Input x = make_input(dtype, n, seed++, specials);
                            float want_amax = -1.0f, want[3] = {-1.0f, -1.0f, staged};
                            host::abs_max(with_amax(n > 0 ? x.data() : nullptr, dtype, n, &want_amax), {});
                            host::current_scale(with_amax(&want_amax, DType::Float32, 1, nullptr), numerator, scalar(&want[0]),
                                                scalar(&want[1]), scalar(&want[2]), {});
                            for (const bool with_amax_out : {true, false}) {
                                float got_amax = -1.0f, got[3] = {-1.0f, -1.0f, staged};
                                const std::uint64_t launches = launch_count();
                                host::abs_max_current_scale(with_amax(n > 0 ? x.data() : nullptr, dtype, n, with_amax_out ? &got_amax : nullptr),
                                                            numerator, scalar(&got[0]), scalar(&got[1]), scalar(&got[2]), {});
                                QCOMPARE(launch_count(), launches + 1);
                                const std::string what = describe(dtype) + " n=" + std::to_string(n) + " staged " +
                                                         std::to_string(staged) + " numerator " + std::to_string(numerator);
                                QVERIFY2(bits_of(got_amax) == bits_of(with_amax_out ? want_amax : -1.0f), what.c_str());
                                for (int k = 0; k < 3; ++k) QVERIFY2(bits_of(got[k]) == bits_of(want[k]), what.c_str());
                            }
                        }
                    }
                }
            }
        }
        // The rule's edges, written out.
        const auto scale_of = [](float value) {
            float scale = 0.0f, scale_inv = 0.0f;
            const float x[1] = {value};
            host::abs_max_current_scale(with_amax(x, DType::Float32, 1, nullptr), 448.0f, scalar(&scale), scalar(&scale_inv),
                                        Tensor{}, {});
            return std::pair<float, float>{scale, scale_inv};
        };
        QCOMPARE(scale_of(0.0f).first, 1.0f);
        QCOMPARE(scale_of(-std::numeric_limits<float>::infinity()).first, 1.0f);
        QCOMPARE(scale_of(kNan).first, 1.0f);
        QCOMPARE(scale_of(1e-40f).first, FLT_MAX);
        QCOMPARE(scale_of(-2.0f).first, 224.0f);
        QCOMPARE(scale_of(-2.0f).second, 1.0f / 224.0f);
    }

    // Many tensors: each one's results as abs_max_current_scale gives them alone, one launch per 64 tensors, empty
    // tensors included (scale 1).
    void absMaxCurrentScaleMultiIsEachAlone() {
        constexpr std::size_t kCount = 130;
        std::vector<Input> inputs;
        std::vector<std::array<float, 4>> alone(kCount), many(kCount);  // amax, scale, scale_inv, staging
        std::vector<CurrentScaleItem> items;
        for (std::size_t i = 0; i < kCount; ++i) {
            const DType dtype = kDTypes[i % 3];
            const std::size_t n = i % 17 == 0 ? 0 : 1 + (i * 37) % 300;
            inputs.push_back(make_input(dtype, n, static_cast<std::uint32_t>(5000 + i), i % 5 == 0 ? Specials::Included : Specials::None));
            const void* data = n > 0 ? inputs.back().data() : nullptr;
            const float numerator = i % 2 == 0 ? 448.0f : 57344.0f;
            alone[i] = many[i] = {-1.0f, -1.0f, -1.0f, i % 7 == 0 ? 3.0f : 0.0f};
            host::abs_max_current_scale(with_amax(data, dtype, n, &alone[i][0]), numerator, scalar(&alone[i][1]), scalar(&alone[i][2]),
                                        scalar(&alone[i][3]), {});
            items.push_back({with_amax(data, dtype, n, &many[i][0]), numerator, scalar(&many[i][1]), scalar(&many[i][2]),
                             scalar(&many[i][3])});
        }
        const std::uint64_t launches = launch_count();
        host::abs_max_current_scale_multi(items.data(), items.size(), {});
        QCOMPARE(launch_count(), launches + 3);  // 64 + 64 + 2
        for (std::size_t i = 0; i < kCount; ++i) {
            for (int k = 0; k < 4; ++k) QVERIFY2(bits_of(many[i][k]) == bits_of(alone[i][k]), qPrintable(QString::number(i)));
        }
        QCOMPARE(many[17][1], 1.0f);  // empty: the scale of amax 0
        host::abs_max_current_scale_multi(nullptr, 0, {});
        QCOMPARE(launch_count(), launches + 3);
    }

    void absMaxCurrentScaleRefusals() {
        alignas(16) float f[8] = {};
        float scale = 0.0f, scale_inv = 0.0f, staging = 0.0f, amax = 0.0f;
        const auto one = [&](const Tensor& x, float numerator, float* s, float* si) {
            return [=, st = &staging] { host::abs_max_current_scale(x, numerator, scalar(s), scalar(si), scalar(st), {}); };
        };
        const std::string entry = "abs_max_current_scale";
        expect_error(one(with_amax(f, DType::Float32, 8, nullptr), 0.0f, &scale, &scale_inv), entry,
                     "numerator = 0.000000; allowed: a finite value above 0");
        expect_error([&] { host::abs_max_current_scale(with_amax(f, DType::Float32, 8, nullptr), 448.0f, input(nullptr, DType::Float32, 1, 1),
                                                       scalar(&scale_inv), Tensor{}, {}); },
                     entry, "scale is a null pointer");
        expect_error(one(with_amax(f, DType::Float32, 8, nullptr), 448.0f, &scale, &scale), entry,
                     "scale and scale_inv are the same value");
        expect_error(one(with_amax(f, DType::Float32, 8, &scale), 448.0f, &scale, &scale_inv), entry,
                     "x.amax is also the scale or scale_inv it sets");
        expect_error(one(with_amax(nullptr, DType::BFloat16, 8, &amax), 448.0f, &scale, &scale_inv), entry,
                     "x is a null pointer but has 8 elements");
        expect_error(one(with_amax(f, DType::Int64, 8, &amax), 448.0f, &scale, &scale_inv), entry, "x has dtype int64");
        // Many: the tensor is named; two tensors writing one float are refused.
        float other_scale = 0.0f, other_inv = 0.0f;
        std::vector<CurrentScaleItem> items = {
            {with_amax(f, DType::Float32, 8, nullptr), 448.0f, scalar(&scale), scalar(&scale_inv), scalar(&staging)},
            {with_amax(f, DType::Float32, 8, nullptr), 448.0f, scalar(&other_scale), scalar(&other_inv), scalar(&staging)}};
        const std::string multi = "abs_max_current_scale_multi";
        expect_error([&] { host::abs_max_current_scale_multi(items.data(), items.size(), {}); }, multi,
                     "tensors 0 and 1 write the same float");
        items[1].staging = Tensor{};
        items[1].numerator = -1.0f;
        expect_error([&] { host::abs_max_current_scale_multi(items.data(), items.size(), {}); }, multi + " (tensor 1)",
                     "numerator = -1.000000");
        expect_error([&] { host::abs_max_current_scale_multi(nullptr, 2, {}); }, multi, "items is null with count 2");
    }

    void zeroSizesDoNothingAndLaunchNothing() {
        const std::uint64_t launches = launch_count();
        const float scale = 1.0f;
        float amax = 5.0f;
        calls::cast_to_fp8(nullptr, DType::Float32, 0, &scale, nullptr, Fp8Type::E4M3, &amax);
        calls::cast_transpose_to_fp8(nullptr, DType::BFloat16, 0, 7, &scale, nullptr, nullptr, Fp8Type::E5M2, &amax);
        calls::cast_transpose_to_fp8(nullptr, DType::BFloat16, 7, 0, &scale, nullptr, nullptr, Fp8Type::E5M2, &amax);
        calls::cast_transpose_dbias_to_fp8({nullptr, DType::Float32, 0, 2},
                                          calls::Fp8Out{nullptr, nullptr, &scale, &amax, Fp8Type::E4M3},
                                          {nullptr, DType::Float32, 1, 2}, {nullptr, 0});
        calls::transpose(nullptr, 2, 3, 0, nullptr);
        BlockCastOutput nothing;
        nothing.amax = &amax;
        calls::block_cast_to_fp8(nullptr, DType::Float32, 0, 256, 1, true, nothing);
        calls::block_cast_to_fp8(nullptr, DType::BFloat16, 256, 0, 128, false, nothing);
        QCOMPARE(amax, 5.0f);
        QCOMPARE(launch_count(), launches);
        // abs_max of nothing writes 0, in its one launch (the GPU's has no memset to clear it first).
        host::abs_max(with_amax(nullptr, DType::Float16, 0, &amax), {});
        QCOMPARE(bits_of(amax), 0u);
        QCOMPARE(launch_count(), launches + 1);
    }

    void refusesBadArguments() {
        alignas(16) float f[8] = {};
        alignas(16) std::uint8_t bytes[64] = {};
        alignas(16) float bias[4] = {};
        alignas(16) std::uint8_t out_t[64] = {};
        alignas(16) float work[64] = {};
        auto* odd = reinterpret_cast<char*>(f) + 1;
        auto* two = reinterpret_cast<float*>(reinterpret_cast<char*>(f) + 2);
        const Fp8Type bad_type = static_cast<Fp8Type>(3);
        const DType bad_dtype = static_cast<DType>(42);

        const std::string cast = "cast_to_fp8";
        expect_error([&] { calls::cast_to_fp8(f, DType::BFloat16, 8, nullptr, bytes, Fp8Type::E4M3, f); }, cast,
                     "scale is a null pointer");
        expect_error([&] { calls::cast_to_fp8(nullptr, DType::BFloat16, 8, f, bytes, Fp8Type::E4M3, f); }, cast,
                     "x is a null pointer");
        expect_error([&] { calls::cast_to_fp8(f, DType::BFloat16, 8, f, nullptr, Fp8Type::E4M3, f); }, cast,
                     "out is a null pointer");
        expect_error([&] { calls::cast_to_fp8(odd, DType::BFloat16, 8, f, bytes, Fp8Type::E4M3, f); }, cast,
                     "x is not 2-byte aligned");
        expect_error([&] { calls::cast_to_fp8(f, DType::Float32, 8, two, bytes, Fp8Type::E4M3, f); }, cast,
                     "scale is not 4-byte aligned");
        expect_error([&] { calls::cast_to_fp8(f, DType::Float32, 8, f, bytes, Fp8Type::E4M3, two); }, cast,
                     "amax is not 4-byte aligned");
        expect_error([&] { calls::cast_to_fp8(f, bad_dtype, 8, f, bytes, Fp8Type::E4M3, f); }, cast,
                     "x has dtype unknown; allowed: float32, bfloat16, float16");
        expect_error([&] { calls::cast_to_fp8(f, DType::Float32, 8, f, bytes, bad_type, f); }, cast,
                     "out has dtype int64; allowed: E4M3, E5M2");

        const std::string both = "cast_transpose_to_fp8";
        expect_error([&] { calls::cast_transpose_to_fp8(f, DType::Float32, 4, 2, f, bytes, nullptr, Fp8Type::E4M3, f); }, both,
                     "out.transposed is a null pointer");
        expect_error([&] { calls::cast_transpose_to_fp8(f, DType::Float32, 4, 2, f, bytes, bytes, Fp8Type::E4M3, f); }, both,
                     "out and out.transposed are the same buffer");
        expect_error(
            [&] { calls::cast_transpose_to_fp8(f, DType::Float32, std::size_t{1} << 40, 2, f, bytes, out_t, Fp8Type::E4M3, f); },
            both, "rows = 1099511627776, cols = 2; allowed: each at most 2147483647");
        expect_error([&] { calls::cast_transpose_to_fp8(odd, DType::Float16, 4, 2, f, bytes, out_t, Fp8Type::E4M3, f); }, both,
                     "x is not 2-byte aligned");

        const std::string dbias = "cast_transpose_dbias_to_fp8";
        const std::size_t needed = cast_transpose_dbias_workspace_bytes(4, 2);
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, out_t, f, f, Fp8Type::E4M3},
                                                  {nullptr, DType::Float32, 1, 2}, {work, needed});
            },
            dbias, "dbias is a null pointer");
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, out_t, f, f, Fp8Type::E4M3},
                                                  {bias, DType::Float16, 1, 2}, {work, needed});
            },
            dbias, "dbias has dtype float16; allowed: float32, bfloat16");
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, out_t, f, f, Fp8Type::E4M3},
                                                  {bias, DType::Float32, 1, 2}, {work, needed - 4});
            },
            dbias, "workspace of 4 bytes; needed: 8 (cast_transpose_dbias_workspace_bytes)");
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, out_t, f, f, Fp8Type::E4M3},
                                                  {bias, DType::Float32, 1, 2}, {nullptr, needed});
            },
            dbias, "workspace is a null pointer");
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, bytes, f, f, Fp8Type::E4M3},
                                                  {bias, DType::Float32, 1, 2}, {work, needed});
            },
            dbias, "out and out.transposed are the same buffer");
        expect_error(
            [&] {
                calls::cast_transpose_dbias_to_fp8({f, DType::Float32, 4, 2}, calls::Fp8Out{bytes, out_t, f, f, Fp8Type::E4M3},
                                                  {two, DType::Float32, 1, 2}, {work, needed});
            },
            dbias, "dbias is not 4-byte aligned");

        const std::string t = "transpose";
        expect_error([&] { calls::transpose(f, 3, 4, 2, bytes); }, t, "x has dtype int64; allowed: one of 1, 2 or 4 bytes");
        expect_error([&] { calls::transpose(f, 4, 4, 2, f); }, t, "x and out are the same buffer");
        expect_error([&] { calls::transpose(two, 4, 1, 2, bytes); }, t, "x is not 4-byte aligned");
        expect_error([&] { calls::transpose(f, 2, 1, 2, nullptr); }, t, "out is a null pointer");

        const std::string blocks = "block_cast_to_fp8";
        const auto block_out = [&](void* data, float* scale_inv, Fp8Type type = Fp8Type::E4M3) {
            BlockCastOutput o;
            o.data = data;
            o.scale_inv = scale_inv;
            o.type = type;
            return o;
        };
        expect_error([&] { calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 3, true, block_out(bytes, work)); }, blocks,
                     "out.scale_mode is per tensor; allowed: Block1x128 or Block128x128");
        expect_error([&] { calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, block_out(bytes, nullptr)); }, blocks,
                     "scale_inv is a null pointer");
        expect_error([&] { calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, block_out(nullptr, work)); }, blocks,
                     "out is a null pointer");
        expect_error(
            [&] { calls::block_cast_to_fp8(nullptr, DType::Float32, 4, 2, 128, false, block_out(bytes, work, Fp8Type::E5M2)); },
            blocks, "x is a null pointer");
        expect_error([&] { calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, block_out(bytes, two)); }, blocks,
                     "scale_inv is not 4-byte aligned");
        expect_error([&] { calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, block_out(bytes, work, bad_type)); }, blocks,
                     "out has dtype int64; allowed: E4M3, E5M2");
        expect_error([&] { calls::block_cast_to_fp8(f, bad_dtype, 4, 2, 1, true, block_out(bytes, work)); }, blocks,
                     "x has dtype unknown; allowed: float32, bfloat16, float16");
        // A 4 x 2 float32 cast whose outputs differ from block_out(bytes, work) by `change`.
        const auto cast_with = [&](auto change) {
            return [&, change] {
                BlockCastOutput o = block_out(bytes, work);
                change(o);
                calls::block_cast_to_fp8(f, DType::Float32, 4, 2, 1, true, o);
            };
        };
        expect_error(cast_with([&](BlockCastOutput& o) { o.transposed = bytes + 8; }), blocks,
                     "out.transposed and out.transposed_scale_inv come together");
        expect_error(cast_with([&](BlockCastOutput& o) { o.transposed = bytes, o.transposed_scale_inv = work + 8; }), blocks,
                     "out and out.transposed are the same buffer");
        expect_error(cast_with([&](BlockCastOutput& o) { o.transposed = bytes + 8, o.transposed_scale_inv = work; }), blocks,
                     "out.scale_inv and out.transposed_scale_inv are the same buffer");
        expect_error(cast_with([&](BlockCastOutput& o) { o.amax = two; }), blocks, "amax is not 4-byte aligned");

        const std::string amax = "abs_max";
        expect_error([&] { host::abs_max(with_amax(f, DType::Float32, 8, nullptr), {}); }, amax, "x.amax is a null pointer");
        expect_error([&] { host::abs_max(with_amax(nullptr, DType::BFloat16, 8, f), {}); }, amax, "x is a null pointer but has 8 elements");
        expect_error([&] { host::abs_max(with_amax(odd, DType::Float16, 4, f), {}); }, amax,
                     "x is not aligned to its element size of 2 bytes (float16)");
        expect_error([&] { host::abs_max(with_amax(f, DType::Float32, 4, two), {}); }, amax, "x.amax is not 4-byte aligned");
        expect_error([&] { host::abs_max(with_amax(f, static_cast<DType>(42), 4, f), {}); }, amax, "x has dtype unknown; allowed: float32, bfloat16, float16");
    }

private:
    // Runs host::block_cast_to_fp8 with both orientations and the amax, and checks every output against the
    // reference: data, the scales in cuBLASLt's layout with padding 1, the transposed copy cast along x's
    // columns, and max |x|. Returns the data's scale_inv as [row blocks][column blocks].
    std::vector<float> check_block_cast(const Input& x, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                                        Fp8Type type) {
        const ScaleMode mode = block_scale_mode(block_rows);
        std::vector<std::uint8_t> data(rows * cols, 0xaa);
        std::vector<std::uint8_t> transposed(rows * cols, 0xaa);
        std::vector<float> scale_inv(block_scale_entries(mode, rows, cols), -1.0f);
        std::vector<float> transposed_scale_inv(block_scale_entries(mode, cols, rows), -1.0f);
        float amax = 0.0f;
        BlockCastOutput out;
        out.data = data.data();
        out.scale_inv = scale_inv.data();
        out.transposed = transposed.data();
        out.transposed_scale_inv = transposed_scale_inv.data();
        out.amax = &amax;
        out.type = type;
        const std::uint64_t launches = launch_count();
        calls::block_cast_to_fp8(x.data(), x.dtype, rows, cols, block_rows, power_of_two, out);
        std::vector<float> logical;
        if (launch_count() != launches + 1) {
            QTest::qFail("block_cast_to_fp8 did not count one launch", __FILE__, __LINE__);
            return logical;
        }
        const std::string what = "block_cast " + describe(x.dtype) + " " + name(type) + " " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + " block_rows " + std::to_string(block_rows) +
                                 (power_of_two ? " power of two" : "");
        check_amax(amax, reference_amax(x.values, 0, rows * cols), what + " amax");
        if (QTest::currentTestFailed()) return logical;
        const auto value = [&](std::size_t r, std::size_t c) { return x.values[r * cols + c]; };
        logical = check_block_orientation(value, rows, cols, block_rows, type, power_of_two, data, scale_inv, what);
        if (QTest::currentTestFailed()) return logical;
        const auto value_t = [&](std::size_t r, std::size_t c) { return x.values[c * cols + r]; };
        check_block_orientation(value_t, cols, rows, block_rows, type, power_of_two, transposed, transposed_scale_inv,
                                what + " transposed");
        return logical;
    }

    // One orientation of a block cast, m [rows, cols] given by `value`: each block's scale_inv at its place in
    // cuBLASLt's layout, every element's FP8 byte, and 1 in each padding entry. Returns the scales as
    // [row blocks][column blocks].
    template <typename Value>
    std::vector<float> check_block_orientation(const Value& value, std::size_t rows, std::size_t cols, int block_rows,
                                               Fp8Type type, bool power_of_two, const std::vector<std::uint8_t>& data,
                                               const std::vector<float>& layout, const std::string& what) {
        const std::size_t row_blocks = (rows + block_rows - 1) / block_rows;
        const std::size_t col_blocks = (cols + 127) / 128;
        const auto round_up_4 = [](std::size_t n) { return (n + 3) / 4 * 4; };
        std::vector<float> logical(row_blocks * col_blocks);
        std::vector<bool> used(layout.size(), false);
        for (std::size_t rb = 0; rb < row_blocks; ++rb) {
            for (std::size_t cb = 0; cb < col_blocks; ++cb) {
                const std::size_t r0 = rb * block_rows;
                const std::size_t r1 = std::min(rows, r0 + block_rows);
                const std::size_t c0 = cb * 128;
                const std::size_t c1 = std::min(cols, c0 + 128);
                Amax amax;
                for (std::size_t r = r0; r < r1; ++r) {
                    for (std::size_t c = c0; c < c1; ++c) {
                        const float v = value(r, c);
                        if (std::isnan(v))
                            amax.has_nan = true;
                        else
                            amax.largest = std::max(amax.largest, static_cast<double>(std::fabs(v)));
                    }
                }
                const float block_amax =
                    amax.has_nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(amax.largest);
                const float scale = reference_block_scale(block_amax, type, power_of_two);
                const float want_inv = 1.0f / scale;
                const std::size_t at = block_rows == 1 ? cb * round_up_4(rows) + rb : rb * round_up_4(col_blocks) + cb;
                used[at] = true;
                logical[rb * col_blocks + cb] = layout[at];
                if (bits_of(layout[at]) != bits_of(want_inv)) {
                    QTest::qFail(qPrintable(QStringLiteral("%1: block (%2, %3) amax %4: scale_inv %5 (layout entry %6), want %7")
                                                .arg(QString::fromStdString(what))
                                                .arg(rb)
                                                .arg(cb)
                                                .arg(static_cast<double>(block_amax))
                                                .arg(static_cast<double>(layout[at]), 0, 'g', 9)
                                                .arg(at)
                                                .arg(static_cast<double>(want_inv), 0, 'g', 9)),
                                 __FILE__, __LINE__);
                    return logical;
                }
                for (std::size_t r = r0; r < r1; ++r) {
                    for (std::size_t c = c0; c < c1; ++c) {
                        const float v = value(r, c);
                        const std::uint8_t want = reference_fp8(v * scale, type);
                        const std::uint8_t got = data[r * cols + c];
                        if (got != want || detail::float_to_fp8(v * scale, type) != want) {
                            QTest::qFail(qPrintable(QStringLiteral("%1: element (%2, %3) x %4 scale %5: got 0x%6, want 0x%7")
                                                        .arg(QString::fromStdString(what))
                                                        .arg(r)
                                                        .arg(c)
                                                        .arg(static_cast<double>(v))
                                                        .arg(static_cast<double>(scale))
                                                        .arg(got, 2, 16, QLatin1Char('0'))
                                                        .arg(want, 2, 16, QLatin1Char('0'))),
                                         __FILE__, __LINE__);
                            return logical;
                        }
                    }
                }
            }
        }
        for (std::size_t i = 0; i < layout.size(); ++i) {
            if (!used[i] && layout[i] != 1.0f) {
                QTest::qFail(qPrintable(QStringLiteral("%1: padding entry %2 of the scale layout holds %3, want 1")
                                            .arg(QString::fromStdString(what))
                                            .arg(i)
                                            .arg(static_cast<double>(layout[i]))),
                             __FILE__, __LINE__);
                return logical;
            }
        }
        return logical;
    }
};

QTEST_GUILESS_MAIN(TstHostCasts)
#include "tst_host_casts.moc"
