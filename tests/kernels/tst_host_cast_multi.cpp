// The multi-tensor casts (tewb_kernels/cast_multi.h): every item bit for bit what the single cast
// (host::cast_transpose_to_fp8, host::block_cast_to_fp8) gives it alone (values, transposed copy, scales,
// amax combined into what the entry held), one launch per 64 items, empty items skipped, and bad items
// refused naming their index.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/gemm_types.h"
#include "cast_calls.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"

using namespace tewb::kernels;
namespace calls = tewb::test::calls;
using calls::BlockCastOutput;

namespace {

// One tensor of a multi-tensor cast: its input and where its cast goes.
struct Item {
    Tensor x;
    Tensor out;
};

// The multi-tensor entry points over a list of items (two arrays, as they take them).
void cast_multi(const std::vector<Item>& items) {
    std::vector<Tensor> x, out;
    for (const Item& item : items) x.push_back(item.x), out.push_back(item.out);
    host::cast_transpose_multi_to_fp8(x.data(), out.data(), items.size(), {});
}

void block_cast_multi(const std::vector<Item>& items, bool power_of_two) {
    std::vector<Tensor> x, out;
    for (const Item& item : items) x.push_back(item.x), out.push_back(item.out);
    host::block_cast_multi_to_fp8(x.data(), out.data(), items.size(), power_of_two, {});
}

struct Buffer {
    std::size_t rows = 0;
    std::size_t cols = 0;
    DType dtype = DType::Float32;
    std::vector<std::uint8_t> x;  // rows * cols elements of dtype
    float scale = 1.0f;
    Fp8Type type = Fp8Type::E4M3;
    float amax = 0.0f;
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> out_t;

    Item item() {
        out.assign(rows * cols, 0xaa);
        out_t.assign(rows * cols, 0xaa);
        Tensor o = input(out.data(), fp8_dtype(type), rows, cols);
        o.transposed = out_t.data();
        o.scale = &scale;
        o.amax = &amax;
        return {input(x.data(), dtype, rows, cols), o};
    }
};

Buffer random_tensor(std::mt19937& rng, std::size_t rows, std::size_t cols, DType dtype, Fp8Type type, float scale) {
    Buffer t;
    t.rows = rows;
    t.cols = cols;
    t.dtype = dtype;
    t.type = type;
    t.scale = scale;
    const std::size_t size = dtype == DType::Float32 ? 4 : 2;
    t.x.resize(rows * cols * size);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (std::size_t i = 0; i < rows * cols; ++i) {
        const float v = normal(rng);
        if (dtype == DType::Float32) {
            std::memcpy(t.x.data() + 4 * i, &v, 4);
        } else {
            const std::uint16_t h = dtype == DType::BFloat16 ? detail::float_to_bf16(v) : detail::float_to_fp16(v);
            std::memcpy(t.x.data() + 2 * i, &h, 2);
        }
    }
    return t;
}

void put(Buffer& t, std::size_t i, float v) {
    QCOMPARE(t.dtype, DType::Float32);
    std::memcpy(t.x.data() + 4 * i, &v, 4);
}

// What host::cast_transpose_to_fp8 gives the tensor alone, starting from the same amax.
struct Expected {
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> out_t;
    float amax = 0.0f;
};

Expected alone(const Buffer& t) {
    Expected e;
    e.out.assign(t.rows * t.cols, 0);
    e.out_t.assign(t.rows * t.cols, 0);
    e.amax = t.amax;
    calls::cast_transpose_to_fp8(t.x.data(), t.dtype, t.rows, t.cols, &t.scale, e.out.data(), e.out_t.data(), t.type, &e.amax);
    return e;
}

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// A block cast's outputs, sized for x [rows, cols] in 128 x 128 blocks, NaN-filled so an unwritten entry shows.
struct BlockOutputs {
    std::vector<std::uint8_t> data, transposed;
    std::vector<float> scale_inv, transposed_scale_inv;
    float amax = 0.0f;

    BlockOutputs(std::size_t rows, std::size_t cols)
        : data(rows * cols, 0xaa),
          transposed(rows * cols, 0xaa),
          scale_inv(block_scale_entries(ScaleMode::Block128x128, rows, cols), std::numeric_limits<float>::quiet_NaN()),
          transposed_scale_inv(block_scale_entries(ScaleMode::Block128x128, cols, rows), std::numeric_limits<float>::quiet_NaN()) {}

    BlockCastOutput view(Fp8Type type) {
        BlockCastOutput out;
        out.data = data.data();
        out.scale_inv = scale_inv.data();
        out.transposed = transposed.data();
        out.transposed_scale_inv = transposed_scale_inv.data();
        out.amax = &amax;
        out.type = type;
        return out;
    }

    // The outputs as block_cast_multi_to_fp8 takes them for x [rows, cols] in 128 x 128 blocks.
    Tensor tensor(std::size_t rows, std::size_t cols) { return calls::block_out(view(Fp8Type::E4M3), rows, cols, 128); }
};

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

class TestHostCastMulti : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Shapes of a model's weights and ragged ones, three input dtypes, both FP8 types, each its own scale; one
    // item holds a NaN (its amax becomes NaN), one an inf, one starts from a larger amax than its own.
    void everyItemAsCastAlone() {
        std::mt19937 rng(7);
        std::vector<Buffer> tensors;
        tensors.push_back(random_tensor(rng, 192, 64, DType::Float32, Fp8Type::E4M3, 0.5f));
        tensors.push_back(random_tensor(rng, 64, 256, DType::Float32, Fp8Type::E4M3, 2.0f));
        tensors.push_back(random_tensor(rng, 67, 131, DType::Float32, Fp8Type::E5M2, 100.0f));
        tensors.push_back(random_tensor(rng, 1, 1, DType::Float32, Fp8Type::E4M3, 1.0f));
        tensors.push_back(random_tensor(rng, 129, 65, DType::BFloat16, Fp8Type::E4M3, 16.0f));
        tensors.push_back(random_tensor(rng, 33, 17, DType::Float16, Fp8Type::E5M2, 0.25f));
        tensors.push_back(random_tensor(rng, 40, 40, DType::Float32, Fp8Type::E4M3, 1.0f));
        tensors.push_back(random_tensor(rng, 40, 40, DType::Float32, Fp8Type::E4M3, 1.0f));
        put(tensors[6], 17, std::numeric_limits<float>::quiet_NaN());
        put(tensors[7], 3, -std::numeric_limits<float>::infinity());
        tensors[1].amax = 1000.0f;
        std::vector<Expected> expected;
        for (const Buffer& t : tensors) expected.push_back(alone(t));
        std::vector<Item> items;
        for (Buffer& t : tensors) items.push_back(t.item());
        const std::uint64_t before = launch_count();
        cast_multi(items);
        QCOMPARE(launch_count() - before, std::uint64_t{1});
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            QVERIFY2(tensors[i].out == expected[i].out, qPrintable(QStringLiteral("item %1: data").arg(i)));
            QVERIFY2(tensors[i].out_t == expected[i].out_t, qPrintable(QStringLiteral("item %1: transposed").arg(i)));
            QVERIFY2(same_bits(tensors[i].amax, expected[i].amax),
                     qPrintable(QStringLiteral("item %1: amax %2, alone %3").arg(i).arg(tensors[i].amax).arg(expected[i].amax)));
        }
        QVERIFY(std::isnan(tensors[6].amax));
        QCOMPARE(tensors[7].amax, std::numeric_limits<float>::infinity());
        QCOMPARE(tensors[1].amax, 1000.0f);
    }

    // One launch per 64 items that have elements; none for none.
    void launchesPerSixtyFourItems_data() {
        QTest::addColumn<int>("items");
        QTest::addColumn<int>("empty");
        QTest::addColumn<int>("launches");
        QTest::newRow("none") << 0 << 0 << 0;
        QTest::newRow("only empty") << 0 << 3 << 0;
        QTest::newRow("1") << 1 << 0 << 1;
        QTest::newRow("48 (12 layers x 4)") << 48 << 0 << 1;
        QTest::newRow("64") << 64 << 0 << 1;
        QTest::newRow("64 and empties") << 64 << 5 << 1;
        QTest::newRow("65") << 65 << 0 << 2;
        QTest::newRow("129") << 129 << 0 << 3;
    }
    void launchesPerSixtyFourItems() {
        QFETCH(int, items);
        QFETCH(int, empty);
        QFETCH(int, launches);
        std::mt19937 rng(11);
        std::vector<Buffer> tensors;
        for (int i = 0; i < items; ++i) tensors.push_back(random_tensor(rng, 3, 5, DType::Float32, Fp8Type::E4M3, 1.0f));
        for (int i = 0; i < empty; ++i) tensors.push_back(random_tensor(rng, i % 2 == 0 ? 0 : 4, i % 2 == 0 ? 4 : 0, DType::Float32,
                                                                        Fp8Type::E4M3, 1.0f));
        std::vector<Item> list;
        for (Buffer& t : tensors) list.push_back(t.item());
        const std::uint64_t before = launch_count();
        cast_multi(list);
        QCOMPARE(launch_count() - before, static_cast<std::uint64_t>(launches));
        for (int i = 0; i < items; ++i) QVERIFY(tensors[i].out == alone(tensors[i]).out);
    }

    // A bad item is refused before anything is written, and the message names it.
    void badItemsAreRefusedByIndex() {
        std::mt19937 rng(3);
        Buffer good = random_tensor(rng, 4, 4, DType::Float32, Fp8Type::E4M3, 1.0f);
        Buffer bad = random_tensor(rng, 4, 4, DType::Float32, Fp8Type::E4M3, 1.0f);
        std::vector<Item> items{good.item(), bad.item()};
        items[1].out.scale = nullptr;
        const std::uint64_t before = launch_count();
        try {
            cast_multi(items);
            QFAIL("a null scale was accepted");
        } catch (const KernelError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("(tensor 1): out.scale is a null pointer")), e.what());
        }
        QCOMPARE(launch_count(), before);
        QVERIFY(good.out == std::vector<std::uint8_t>(16, 0xaa));
        try {
            host::cast_transpose_multi_to_fp8(nullptr, nullptr, 2, {});
            QFAIL("null items were accepted");
        } catch (const KernelError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("x or out is null with count 2")), e.what());
        }
        host::cast_transpose_multi_to_fp8(nullptr, nullptr, 0, {});  // nothing to do
    }

    // The weights' block cast under Float8BlockScaling (128 x 128 blocks): ragged shapes, float32 and bfloat16,
    // both scale rules, a NaN; each item as block_cast_to_fp8 gives it alone, in one launch.
    void blockItemsAsCastAlone_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<bool>("power_of_two");
        QTest::newRow("float32, pow2") << int(DType::Float32) << true;
        QTest::newRow("float32, exact") << int(DType::Float32) << false;
        QTest::newRow("bfloat16, pow2") << int(DType::BFloat16) << true;
    }
    void blockItemsAsCastAlone() {
        QFETCH(int, dtype);
        QFETCH(bool, power_of_two);
        const auto type = static_cast<DType>(dtype);
        std::mt19937 rng(21);
        const std::vector<std::pair<std::size_t, std::size_t>> shapes{{256, 128}, {130, 300}, {1, 1}, {128, 257}, {64, 64}};
        std::vector<Buffer> tensors;
        for (const auto& [rows, cols] : shapes) tensors.push_back(random_tensor(rng, rows, cols, type, Fp8Type::E4M3, 1.0f));
        if (type == DType::Float32) put(tensors[1], 77, std::numeric_limits<float>::quiet_NaN());
        std::vector<BlockOutputs> alone, together;
        std::vector<Item> items;
        for (Buffer& t : tensors) {
            alone.emplace_back(t.rows, t.cols);
            together.emplace_back(t.rows, t.cols);
        }
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            calls::block_cast_to_fp8(tensors[i].x.data(), type, tensors[i].rows, tensors[i].cols, 128, power_of_two,
                                     alone[i].view(Fp8Type::E4M3));
            items.push_back({input(tensors[i].x.data(), type, tensors[i].rows, tensors[i].cols),
                             together[i].tensor(tensors[i].rows, tensors[i].cols)});
        }
        const std::uint64_t before = launch_count();
        block_cast_multi(items, power_of_two);
        QCOMPARE(launch_count() - before, std::uint64_t{1});
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const QByteArray item = QByteArray::number(static_cast<qulonglong>(i));
            QVERIFY2(together[i].data == alone[i].data, "data of item " + item);
            QVERIFY2(together[i].transposed == alone[i].transposed, "transposed copy of item " + item);
            QVERIFY2(same_floats(together[i].scale_inv, alone[i].scale_inv), "scale_inv of item " + item);
            QVERIFY2(same_floats(together[i].transposed_scale_inv, alone[i].transposed_scale_inv), "transposed scale_inv of item " + item);
            QVERIFY2(same_bits(together[i].amax, alone[i].amax), "amax of item " + item);
        }
        if (type == DType::Float32) QVERIFY(std::isnan(together[1].amax));
    }

    // Block items: a per-tensor scale layout, mixed dtypes or block shapes and bad items are refused before anything
    // runs, naming the tensor.
    void badBlockItemsAreRefused() {
        std::mt19937 rng(2);
        Buffer t = random_tensor(rng, 128, 128, DType::Float32, Fp8Type::E4M3, 1.0f);
        Buffer half = random_tensor(rng, 128, 128, DType::BFloat16, Fp8Type::E4M3, 1.0f);
        BlockOutputs outputs(128, 128);
        BlockOutputs second(128, 128);
        const Item item{input(t.x.data(), DType::Float32, 128, 128), outputs.tensor(128, 128)};
        const std::uint64_t before = launch_count();
        const auto refused = [&](const std::vector<Item>& items, const char* expected) {
            try {
                block_cast_multi(items, true);
                return QStringLiteral("no error");
            } catch (const KernelError& e) {
                const QString message = QString::fromUtf8(e.what());
                return message.contains(QLatin1String(expected)) ? QString() : message;
            }
        };
        Item per_tensor = item;
        per_tensor.out.scale_mode = ScaleMode::Tensor;
        QCOMPARE(refused({per_tensor}, "(tensor 0): out.scale_mode is per tensor"), QString());
        const Item other_dtype{input(half.x.data(), DType::BFloat16, 128, 128), second.tensor(128, 128)};
        QCOMPARE(refused({item, other_dtype}, "(tensor 1): x has dtype bfloat16; allowed: float32, tensor 0's"), QString());
        Item other_blocks{input(t.x.data(), DType::Float32, 128, 128), second.tensor(128, 128)};
        other_blocks.out.scale_mode = ScaleMode::Block1x128;
        QCOMPARE(refused({item, other_blocks}, "(tensor 1): out.scale_mode differs from tensor 0's"), QString());
        Item no_data = item;
        no_data.out.data = nullptr;
        QCOMPARE(refused({no_data}, "(tensor 0): out is a null pointer"), QString());
        QCOMPARE(launch_count(), before);
        QVERIFY(outputs.data == std::vector<std::uint8_t>(128 * 128, 0xaa));
        QVERIFY(second.data == std::vector<std::uint8_t>(128 * 128, 0xaa));
    }
};

QTEST_GUILESS_MAIN(TestHostCastMulti)
#include "tst_host_cast_multi.moc"
