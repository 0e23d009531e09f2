// Host-side argument checks of the kernels library: bad arguments are rejected, with the entry
// point's name, before anything reaches the GPU, so these run on machines without one.
#include <QtTest>

#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/attention.h"
#include "kernel_tensors.h"
#include "tewb_kernels/cast.h"
#include "gemm_calls.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"
#include "tewb_kernels/device_query.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/launch_count.h"
#include "tewb_kernels/mx.h"
#include "recipe_calls.h"
#include "tewb_kernels/recipe.h"
#include "tewb_kernels/rotary.h"

using namespace tewb::kernels;
using tewb::test::block_tensor;
using tewb::test::fp8_tensor;
using tewb::test::tensor;
using tewb::test::with_amax;
namespace calls = tewb::test::calls;
constexpr calls::UpdateScaling kernels_update_scaling = tewb::kernels::update_scaling;

namespace {

void expect_error(const std::function<void()>& call, const std::string& part,
                  const std::string& entry = "tewb::kernels::abs_max") {
    try {
        call();
        QFAIL(qPrintable("no error; expected " + QString::fromStdString(part)));
    } catch (const KernelError& e) {
        const std::string message = e.what();
        QVERIFY2(message.rfind(entry + ": ", 0) == 0, e.what());
        QVERIFY2(message.find(part) != std::string::npos, e.what());
    }
}

alignas(16) float device_like[8];  // never dereferenced: every call below fails its checks first

}  // namespace

class TestKernelArguments : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void absMaxRejectsNullOutput() {
        expect_error([] { abs_max(with_amax(device_like, DType::Float32, 8, nullptr), {}); }, "x.amax is a null pointer");
    }
    void absMaxRejectsNullInput() {
        expect_error([] { abs_max(with_amax(nullptr, DType::BFloat16, 8, device_like), {}); }, "x is a null pointer but has 8 elements");
    }
    void absMaxRejectsMisalignedInput() {
        const auto* bytes = reinterpret_cast<const char*>(device_like);
        expect_error([&] { abs_max(with_amax(bytes + 1, DType::Float16, 4, device_like), {}); },
                     "not aligned to its element size of 2 bytes");
        expect_error([&] { abs_max(with_amax(bytes + 2, DType::Float32, 4, device_like), {}); },
                     "not aligned to its element size of 4 bytes");
    }
    void absMaxRejectsMisalignedOutput() {
        auto* bytes = reinterpret_cast<char*>(device_like);
        expect_error([&] { abs_max(with_amax(device_like, DType::Float32, 4, reinterpret_cast<float*>(bytes + 2)), {}); },
                     "not 4-byte aligned");
    }
    void absMaxRejectsUnknownDtype() {
        expect_error([] { abs_max(with_amax(device_like, static_cast<DType>(42), 4, device_like), {}); }, "x has dtype unknown");
    }
    void absMaxCurrentScaleRejectsBadArguments() {
        const Tensor one = input(device_like, DType::Float32, 1, 1);
        const Tensor other = input(device_like + 1, DType::Float32, 1, 1);
        expect_error([&] { abs_max_current_scale(with_amax(device_like, DType::Float32, 8, nullptr), 0.0f, one, other, Tensor{}, {}); },
                     "numerator = 0.000000", "tewb::kernels::abs_max_current_scale");
        expect_error([&] { abs_max_current_scale(with_amax(device_like, DType::Float32, 8, device_like), 448.0f, one, other, Tensor{}, {}); },
                     "x.amax is also the scale or scale_inv it sets", "tewb::kernels::abs_max_current_scale");
        const CurrentScaleItem items[] = {{with_amax(device_like, DType::Float32, 8, nullptr), 448.0f, one, other, Tensor{}},
                                          {with_amax(device_like, DType::Float32, 8, nullptr), 448.0f, other,
                                           input(device_like + 2, DType::Float32, 1, 1), Tensor{}}};
        expect_error([&] { abs_max_current_scale_multi(items, 2, {}); }, "tensors 0 and 1 write the same float",
                     "tewb::kernels::abs_max_current_scale_multi");
    }
    void updateScalingRejectsBadArguments() {
        const std::string entry = "tewb::kernels::update_scaling";
        const auto update = [](float* h, float* s, float* si, std::size_t slots, std::size_t len, float numerator, ScalingRule rule) {
            return [=] { calls::update_scaling(kernels_update_scaling, h, s, si, slots, len, numerator, rule); };
        };
        float* f = device_like;
        expect_error(update(nullptr, f, f, 3, 16, 448.0f, ScalingRule::DelayedMax), "history is a null pointer", entry);
        expect_error(update(f, nullptr, f, 3, 16, 448.0f, ScalingRule::DelayedMax), "scale is a null pointer", entry);
        expect_error(update(f, f, nullptr, 3, 16, 448.0f, ScalingRule::Current), "scale_inv is a null pointer", entry);
        auto* bytes = reinterpret_cast<char*>(device_like);
        expect_error(update(reinterpret_cast<float*>(bytes + 1), f, f, 3, 16, 448.0f, ScalingRule::DelayedMax),
                     "history is not 4-byte aligned", entry);
        expect_error(update(f, f, f, std::size_t{1} << 31, 16, 448.0f, ScalingRule::DelayedMax), "allowed: each at most", entry);
        expect_error(update(f, f, f, 3, 0, 448.0f, ScalingRule::DelayedMax), "history_len = 0; allowed: 1 to 65536", entry);
        expect_error(update(f, f, f, 3, 65537, 448.0f, ScalingRule::DelayedMax), "history_len = 65537", entry);
        expect_error(update(f, f, f, 3, 16, 0.0f, ScalingRule::DelayedMax), "numerator", entry);
        expect_error(update(f, f, f, 3, 16, std::numeric_limits<float>::infinity(), ScalingRule::DelayedMax), "numerator",
                     entry);
        expect_error(update(f, f, f, 3, 16, 448.0f, static_cast<ScalingRule>(9)), "unknown scaling rule", entry);
        // Each tensor carries its shape and row stride: scales are [slots, 1] of one stride, statistics [slots, 2+].
        const Tensor history = tensor(f, DType::Float32, 3, 1);
        const auto scales = [&](float* p, std::size_t rows, std::size_t cols, std::size_t stride) {
            Tensor t = tensor(p, DType::Float32, rows, cols);
            t.row_stride = stride;
            return t;
        };
        expect_error([&] { update_scaling(history, scales(f + 4, 1, 3, 0), scales(f + 8, 3, 1, 0), 448.0f, ScalingRule::DelayedMax,
                                          ScaleUpdateRecord{}, {}); },
                     "scale is [1, 3]; allowed: [3, 1], one value per slot", entry);
        expect_error([&] { update_scaling(history, scales(f + 4, 3, 1, 2), scales(f + 8, 3, 1, 1), 448.0f, ScalingRule::DelayedMax,
                                          ScaleUpdateRecord{}, {}); },
                     "scale_inv's row stride is 1; allowed: scale's, 2", entry);
        expect_error([&] { update_scaling(history, scales(f + 4, 3, 1, 0), tensor(f + 8, DType::BFloat16, 3, 1), 448.0f,
                                          ScalingRule::DelayedMax, ScaleUpdateRecord{}, {}); },
                     "scale_inv has dtype bfloat16; allowed: float32", entry);
        expect_error([&] { update_scaling(history, scales(f + 4, 3, 1, 0), scales(f + 8, 3, 1, 0), 448.0f, ScalingRule::DelayedMax,
                                          ScaleUpdateRecord{scales(f, 3, 1, 0), Tensor{}}, {}); },
                     "statistics is float32 [3, 1]; allowed: float32 [3, 2 or more]", entry);
        expect_error([&] { calls::update_scaling(kernels_update_scaling, f, f + 4, f + 8, 3, 1, 448.0f, ScalingRule::DelayedMax,
                                                 calls::SlotRecord{f, 1, nullptr}); },
                     "statistics_stride = 1; allowed: 2 or more", entry);
        expect_error([&] { calls::update_scaling(kernels_update_scaling, f, f + 4, f + 8, 3, 1, 448.0f, ScalingRule::DelayedMax,
                                                 calls::SlotRecord{nullptr, 0, f + 8}); },
                     "kept_scale_inv and scale_inv are the same buffer", entry);
        expect_error([&] { calls::update_scaling(kernels_update_scaling, f, f + 4, f + 8, 3, 1, 448.0f, ScalingRule::BlockExact,
                                                 calls::SlotRecord{nullptr, 0, reinterpret_cast<float*>(bytes + 2)}); },
                     "kept_scale_inv is not 4-byte aligned", entry);
        // No slots: nothing to check or launch.
        calls::update_scaling(kernels_update_scaling, nullptr, nullptr, nullptr, 0, 16, 448.0f, ScalingRule::DelayedMax);
    }

    void castRejectsBadArguments() {
        const std::string entry = "tewb::kernels::cast_to_fp8";
        float* f = device_like;
        auto* bytes = reinterpret_cast<char*>(device_like);
        const Tensor x16 = tensor(f, DType::BFloat16, 1, 8);
        const Tensor x32 = tensor(f, DType::Float32, 1, 8);
        expect_error([&] { cast_to_fp8(x16, fp8_tensor(f, 1, 8, nullptr, f), {}); }, "out.scale is a null pointer", entry);
        expect_error([&] { cast_to_fp8(tensor(nullptr, DType::BFloat16, 1, 8), fp8_tensor(f, 1, 8, f, f), {}); },
                     "x is a null pointer", entry);
        expect_error([&] { cast_to_fp8(x16, fp8_tensor(nullptr, 1, 8, f, f), {}); }, "out is a null pointer", entry);
        expect_error([&] { cast_to_fp8(tensor(bytes + 1, DType::BFloat16, 1, 8), fp8_tensor(f, 1, 8, f, f), {}); },
                     "x is not 2-byte aligned", entry);
        expect_error([&] { cast_to_fp8(x32, fp8_tensor(f, 1, 8, reinterpret_cast<float*>(bytes + 2), f), {}); },
                     "out.scale is not 4-byte aligned", entry);
        expect_error([&] { cast_to_fp8(x32, fp8_tensor(f, 1, 8, f, reinterpret_cast<float*>(bytes + 1)), {}); },
                     "out.amax is not 4-byte aligned", entry);
        expect_error([&] { cast_to_fp8(tensor(f, static_cast<DType>(42), 1, 8), fp8_tensor(f, 1, 8, f, f), {}); },
                     "x has dtype unknown; allowed: float32, bfloat16, float16", entry);
        expect_error([&] { cast_to_fp8(x32, tensor(f, DType::Float32, 1, 8), {}); }, "out has dtype float32; allowed: E4M3, E5M2",
                     entry);
        expect_error([&] { cast_to_fp8(x32, fp8_tensor(f, 1, 4, f, f), {}); }, "out has 4 elements; allowed: x's 8", entry);
        cast_to_fp8(tensor(nullptr, DType::Float32, 1, 0), fp8_tensor(nullptr, 1, 0, f, nullptr, nullptr, Fp8Type::E5M2),
                    {});  // nothing to cast

        const std::string both = "tewb::kernels::cast_transpose_to_fp8";
        const Tensor x42 = tensor(f, DType::Float32, 4, 2);
        expect_error([&] { cast_transpose_to_fp8(x42, fp8_tensor(f, 4, 2, f, f), {}); }, "out.transposed is a null pointer", both);
        expect_error([&] { cast_transpose_to_fp8(x42, fp8_tensor(f, 4, 2, f, f, f), {}); }, "out and out.transposed are the same buffer",
                     both);
        expect_error([&] { cast_transpose_to_fp8(x42, fp8_tensor(f, 2, 4, f, f, f + 1), {}); }, "out is [2, 4]; allowed: [4, 2]",
                     both);
        expect_error(
            [&] {
                cast_transpose_to_fp8(tensor(f, DType::Float32, std::size_t{1} << 40, 2),
                                      fp8_tensor(f, std::size_t{1} << 40, 2, f, f, f + 1), {});
            },
            "allowed: each at most", both);

        const std::string dbias = "tewb::kernels::cast_transpose_dbias_to_fp8";
        // At most 64 rows of partial sums, one per 32 rows of x.
        QCOMPARE(cast_transpose_dbias_workspace_bytes(10, 768), std::size_t{1 * 768 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(100, 768), std::size_t{4 * 768 * 4});
        QCOMPARE(cast_transpose_dbias_workspace_bytes(3072, 768), std::size_t{64 * 768 * 4});
        const std::size_t needed = cast_transpose_dbias_workspace_bytes(4, 2);
        float* out_t = f + 1;
        float* bias = f + 2;
        float* work = f + 4;
        const Tensor q = fp8_tensor(f, 4, 2, f, f, out_t);
        expect_error([&] { cast_transpose_dbias_to_fp8(x42, q, tensor(nullptr, DType::Float32, 1, 2), {work, needed}, {}); },
                     "dbias is a null pointer", dbias);
        expect_error([&] { cast_transpose_dbias_to_fp8(x42, q, tensor(bias, DType::Float16, 1, 2), {work, needed}, {}); },
                     "dbias has dtype float16", dbias);
        expect_error([&] { cast_transpose_dbias_to_fp8(x42, q, tensor(bias, DType::Float32, 1, 2), {work, needed - 4}, {}); },
                     "workspace of " + std::to_string(needed - 4) + " bytes; needed: " + std::to_string(needed), dbias);
        expect_error([&] { cast_transpose_dbias_to_fp8(x42, q, tensor(bias, DType::Float32, 1, 2), {nullptr, needed}, {}); },
                     "workspace is a null pointer", dbias);
        expect_error(
            [&] { cast_transpose_dbias_to_fp8(x42, fp8_tensor(f, 4, 2, f, f, f), tensor(bias, DType::Float32, 1, 2), {work, needed}, {}); },
            "out and out.transposed are the same buffer", dbias);
        expect_error([&] { cast_transpose_dbias_to_fp8(x42, q, tensor(bias, DType::Float32, 1, 3), {work, needed}, {}); },
                     "dbias is [1, 3]; allowed: [1, 2]", dbias);
        cast_transpose_dbias_to_fp8(tensor(f, DType::Float32, 0, 2), fp8_tensor(nullptr, 0, 2, f),
                                    tensor(nullptr, DType::Float32, 1, 2), {nullptr, 0}, {});  // nothing to cast

        const std::string cast_dbias_call = "tewb::kernels::cast_dbias";
        QCOMPARE(cast_dbias_workspace_bytes(3072, 768), std::size_t{128 * 768 * 4});  // a row per 8 rows of x, at most 128
        const std::size_t dbias_needed = cast_dbias_workspace_bytes(4, 2);
        // Apart, so that only the overlaps a case asks for are there (never dereferenced either).
        alignas(16) static float apart[64];
        float* const dx = apart;
        float* const dout = apart + 16;
        float* const dsum = apart + 32;
        float* const dwork = apart + 48;
        const Tensor dbias_f32 = tensor(dsum, DType::Float32, 1, 2);
        const Tensor x_f32 = tensor(dx, DType::Float32, 4, 2);
        const Workspace dbias_work{dwork, dbias_needed};
        expect_error(
            [&] { cast_dbias(tensor(dx, DType::Float16, 4, 2), tensor(dout, DType::BFloat16, 4, 2), dbias_f32, dbias_work, {}); },
            "x has dtype float16", cast_dbias_call);
        expect_error([&] { cast_dbias(x_f32, tensor(dout, DType::BFloat16, 2, 4), dbias_f32, dbias_work, {}); },
                     "out is [2, 4]; allowed: [4, 2]", cast_dbias_call);
        expect_error([&] { cast_dbias(x_f32, x_f32, dbias_f32, dbias_work, {}); }, "x and out overlap", cast_dbias_call);
        expect_error([&] { cast_dbias(x_f32, Tensor{}, dbias_f32, {dwork, dbias_needed - 4}, {}); },
                     "workspace of " + std::to_string(dbias_needed - 4) + " bytes; needed: " + std::to_string(dbias_needed),
                     cast_dbias_call);
        expect_error([&] { cast_dbias(x_f32, Tensor{}, tensor(nullptr, DType::Float32, 1, 2), dbias_work, {}); },
                     "dbias is a null pointer", cast_dbias_call);
        expect_error([&] { cast_dbias(x_f32, Tensor{}, dbias_f32, {dsum, dbias_needed}, {}); }, "dbias and the workspace overlap",
                     cast_dbias_call);
        cast_dbias(tensor(nullptr, DType::Float32, 0, 2), Tensor{}, tensor(nullptr, DType::Float32, 1, 2), Workspace{}, {});  // nothing

        const std::string blocks = "tewb::kernels::block_cast_to_fp8";
        const Tensor xb = tensor(f, DType::Float32, 4, 256);
        const auto block_out = [](void* data, float* scale_inv, Fp8Type type = Fp8Type::E4M3) {
            return block_tensor(data, 4, 256, scale_inv, ScaleMode::Block1x128, type);
        };
        const auto cast = [&](const Tensor& x, const Tensor& out) { block_cast_to_fp8(x, out, true, Tensor{}, Workspace{}, {}); };
        expect_error([&] { cast(xb, block_tensor(f, 4, 256, f, ScaleMode::Tensor)); },
                     "out.scale_mode is per tensor; allowed: Block1x128 or Block128x128", blocks);
        expect_error([&] { cast(xb, block_out(f, nullptr)); }, "out.scale_inv is a null pointer", blocks);
        expect_error([&] { cast(xb, block_out(nullptr, f)); }, "out is a null pointer", blocks);
        expect_error([&] { cast(tensor(nullptr, DType::Float32, 4, 256), block_out(f, f, Fp8Type::E5M2)); }, "x is a null pointer",
                     blocks);
        expect_error([&] { cast(xb, block_out(f, reinterpret_cast<float*>(bytes + 2))); }, "out.scale_inv is not 4-byte aligned",
                     blocks);
        expect_error([&] { cast(xb, tensor(f, DType::BFloat16, 4, 256)); }, "out.scale_mode is per tensor", blocks);
        expect_error(
            [&] {
                Tensor o = block_out(f, f);
                o.dtype = DType::BFloat16;
                cast(xb, o);
            },
            "out has dtype bfloat16; allowed: E4M3, E5M2", blocks);
        expect_error(
            [&] {
                cast(tensor(f, DType::Float32, std::size_t{1} << 40, 2),
                     block_tensor(f, std::size_t{1} << 40, 2, f, ScaleMode::Block1x128));
            },
            "allowed: each at most", blocks);
        expect_error(
            [&] {
                Tensor o = block_out(f, f + 4);
                o.transposed_scale_inv = f + 8;
                cast(xb, o);
            },
            "out.transposed and out.transposed_scale_inv come together", blocks);
        cast(tensor(nullptr, DType::Float32, 0, 256), block_tensor(nullptr, 0, 256, nullptr, ScaleMode::Block1x128));  // empty
        // The bias gradient: one partial row of cols floats per 128-row tile (at least one).
        QCOMPARE(block_cast_dbias_workspace_bytes(0, 5), std::size_t{1 * 5 * 4});
        QCOMPARE(block_cast_dbias_workspace_bytes(128, 768), std::size_t{1 * 768 * 4});
        QCOMPARE(block_cast_dbias_workspace_bytes(3072, 768), std::size_t{24 * 768 * 4});
        const auto with_dbias = [&](float* dbias_data, void* workspace, std::size_t workspace_bytes) {
            return [=] {
                block_cast_to_fp8(tensor(f, DType::Float32, 4, 2), block_tensor(f, 4, 2, f + 4, ScaleMode::Block1x128), true,
                                  tensor(dbias_data, DType::Float32, 1, 2), Workspace{workspace, workspace_bytes}, {});
            };
        };
        const std::size_t block_needed = block_cast_dbias_workspace_bytes(4, 2);
        expect_error(with_dbias(f + 2, f + 6, block_needed - 4),
                     "dbias_workspace of 4 bytes; needed: 8 (block_cast_dbias_workspace_bytes)", blocks);
        expect_error(with_dbias(f + 2, nullptr, block_needed), "dbias_workspace is a null pointer", blocks);
        expect_error(with_dbias(reinterpret_cast<float*>(bytes + 2), f + 6, block_needed), "dbias is not 4-byte aligned", blocks);
        expect_error(with_dbias(f + 6, f + 6, block_needed), "dbias and dbias_workspace are the same buffer", blocks);

        const std::string t = "tewb::kernels::transpose";
        expect_error([&] { transpose(tensor(f, DType::Int64, 4, 4), tensor(f + 4, DType::Int64, 4, 4), {}); },
                     "x has dtype int64; allowed: one of 1, 2 or 4 bytes", t);
        expect_error([&] { transpose(tensor(f, DType::Float32, 4, 4), tensor(f, DType::Float32, 4, 4), {}); }, "not in place", t);
        expect_error([&] { transpose(tensor(bytes + 2, DType::Float32, 1, 1), tensor(f, DType::Float32, 1, 1), {}); },
                     "x is not 4-byte aligned", t);
        expect_error([&] { transpose(tensor(nullptr, DType::BFloat16, 4, 4), tensor(f, DType::BFloat16, 4, 4), {}); },
                     "x is a null pointer", t);
        expect_error([&] { transpose(tensor(f, DType::BFloat16, 4, 2), tensor(f + 4, DType::BFloat16, 4, 2), {}); },
                     "out is [4, 2]; allowed: [2, 4]", t);
        expect_error([&] { transpose(tensor(f, DType::BFloat16, 4, 2), tensor(f + 4, DType::Float16, 2, 4), {}); },
                     "out has dtype float16; allowed: bfloat16, x's", t);
        transpose(tensor(nullptr, DType::BFloat16, 0, 4), tensor(nullptr, DType::BFloat16, 4, 0), {});  // empty
    }

    void layerNormRejectsBadArguments() {
        const std::string fwd = "tewb::kernels::layer_norm_forward";
        float* f = device_like;
        const auto forward = [&](const void* x, DType x_dtype, std::size_t hidden, float eps, void* out, const Tensor& fp8,
                                 float* mean) {
            return [=] {
                layer_norm_forward(tensor(x, x_dtype, 4, hidden), tensor(f, DType::Float32, 1, hidden),
                                   tensor(f, DType::Float32, 1, hidden), eps, tensor(out, DType::BFloat16, 4, hidden), fp8,
                                   tensor(mean, DType::Float32, 1, 4), tensor(f, DType::Float32, 1, 4), {});
            };
        };
        expect_error(forward(f, DType::Float32, 8, 1e-5f, nullptr, Tensor{}, f), "no output", fwd);
        expect_error(forward(f, DType::Float16, 8, 1e-5f, f, Tensor{}, f), "x has dtype float16; allowed: float32, bfloat16", fwd);
        expect_error(forward(f, DType::Float32, 0, 1e-5f, f, Tensor{}, f), "hidden = 0", fwd);
        expect_error(forward(f, DType::Float32, 8, 0.0f, f, Tensor{}, f), "eps = 0", fwd);
        expect_error(forward(nullptr, DType::Float32, 8, 1e-5f, f, Tensor{}, f), "x is a null pointer", fwd);
        expect_error(forward(f, DType::Float32, 8, 1e-5f, f, Tensor{}, nullptr), "mean is a null pointer", fwd);
        Tensor fp8 = fp8_tensor(f, 4, 8, nullptr, nullptr, f);
        expect_error(forward(f, DType::Float32, 8, 1e-5f, nullptr, fp8, f), "fp8.scale is a null pointer", fwd);
        fp8.scale = f;
        expect_error(forward(f, DType::Float32, 8, 1e-5f, nullptr, fp8, f), "fp8.transposed and fp8.data are the same buffer", fwd);
        expect_error(forward(f, DType::Float32, 8, 1e-5f, nullptr, tensor(f, DType::BFloat16, 4, 8), f),
                     "fp8 has dtype bfloat16; allowed: E4M3, E5M2", fwd);
        expect_error(forward(f, DType::Float32, 8, 1e-5f, nullptr, fp8_tensor(f, 4, 7, f), f), "fp8 is [4, 7]; allowed: [4, 8]", fwd);
        expect_error(
            [&] {
                layer_norm_forward(tensor(f, DType::Float32, 4, 8), tensor(f, DType::Float32, 1, 8), tensor(f, DType::Float32, 1, 8),
                                   1e-5f, tensor(f, DType::Float32, 4, 8), Tensor{}, tensor(f, DType::BFloat16, 1, 4),
                                   tensor(f, DType::Float32, 1, 4), {});
            },
            "mean has dtype bfloat16; allowed: float32", fwd);
        expect_error(
            [&] {
                layer_norm_forward(tensor(f, DType::Float32, 4, 8), tensor(f, DType::Float32, 1, 8), tensor(f, DType::Float32, 1, 8),
                                   1e-5f, tensor(f, DType::Float32, 4, 8), Tensor{}, tensor(f, DType::Float32, 1, 4),
                                   tensor(f, DType::Float32, 1, 3), {});
            },
            "rstd has 3 elements; allowed: 4", fwd);

        const std::string bwd = "tewb::kernels::layer_norm_backward";
        const std::size_t needed = layer_norm_backward_workspace_bytes(4, 8);
        const Tensor stats = tensor(f, DType::Float32, 1, 4);
        QVERIFY(needed >= 2 * 8 * sizeof(float));
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {f, DType::Float32, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 1, 8},
                                    {f, needed - 4}, {});
            },
            "workspace of", bwd);
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {nullptr, DType::Float32, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 1, 8},
                                    {f, needed}, {});
            },
            "dx is a null pointer", bwd);
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float16, 1, 8},
                                    {f, DType::Float32, 4, 8}, {f, DType::Float16, 1, 8}, {f, DType::Float16, 1, 8}, {f, needed}, {});
            },
            "gamma has dtype float16", bwd);
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float16, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {f, DType::Float32, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 1, 8}, {f, needed}, {});
            },
            "dy has dtype float16", bwd);
        // Each tensor carries its own dtype and shape: they must agree with x's and gamma's.
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {f, DType::BFloat16, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 1, 8}, {f, needed}, {});
            },
            "dx has dtype bfloat16; allowed: float32, x's", bwd);
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 7}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {f, DType::Float32, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 1, 8}, {f, needed}, {});
            },
            "dy is [4, 7]; allowed: [4, 8]", bwd);
        expect_error(
            [&] {
                layer_norm_backward({f, DType::Float32, 4, 8}, {f, DType::Float32, 4, 8}, stats, stats, {f, DType::Float32, 1, 8},
                                    {f, DType::Float32, 4, 8}, {f, DType::Float32, 1, 8}, {f, DType::Float32, 8, 1}, {f, needed}, {});
            },
            "dbeta is [8, 1]; allowed: [1, 8]", bwd);
    }

    void rmsNormRejectsBadArguments() {
        const std::string fwd = "tewb::kernels::rms_norm_forward";
        float* f = device_like;
        const auto forward = [&](const void* x, DType x_dtype, std::size_t hidden, std::size_t gamma_hidden, float eps, void* out,
                                 const Tensor& fp8, float* rstd) {
            return [=] {
                rms_norm_forward(tensor(x, x_dtype, 4, hidden), tensor(f, DType::Float32, 1, gamma_hidden), eps,
                                 tensor(out, DType::BFloat16, 4, hidden), fp8, tensor(rstd, DType::Float32, 1, 4), {});
            };
        };
        expect_error(forward(f, DType::Float32, 8, 8, 1e-5f, nullptr, Tensor{}, f), "no output: out and fp8 are both null", fwd);
        expect_error(forward(f, DType::Float16, 8, 8, 1e-5f, f, Tensor{}, f), "x has dtype float16; allowed: float32, bfloat16",
                     fwd);
        expect_error(forward(f, DType::Float32, 0, 0, 1e-5f, f, Tensor{}, f), "hidden = 0; allowed: 1 or more", fwd);
        expect_error(forward(f, DType::Float32, 8, 8, 0.0f, f, Tensor{}, f), "eps = 0", fwd);
        expect_error(forward(f, DType::Float32, 8, 8, -1.0f, f, Tensor{}, f), "allowed: a finite value above 0", fwd);
        expect_error(forward(f, DType::Float32, 8, 8, std::numeric_limits<float>::infinity(), f, Tensor{}, f), "eps = inf", fwd);
        expect_error(forward(f, DType::Float32, 8, 7, 1e-5f, f, Tensor{}, f), "gamma is [1, 7]; allowed: [1, 8]", fwd);
        expect_error(forward(nullptr, DType::Float32, 8, 8, 1e-5f, f, Tensor{}, f), "x is a null pointer", fwd);
        expect_error(forward(f, DType::Float32, 8, 8, 1e-5f, f, Tensor{}, nullptr), "rstd is a null pointer", fwd);
        Tensor fp8 = fp8_tensor(f, 4, 8, nullptr, nullptr, f);
        expect_error(forward(f, DType::Float32, 8, 8, 1e-5f, nullptr, fp8, f), "fp8.scale is a null pointer", fwd);
        fp8.scale = f;
        expect_error(forward(f, DType::Float32, 8, 8, 1e-5f, nullptr, fp8, f), "fp8.transposed and fp8.data are the same buffer",
                     fwd);

        const std::string bwd = "tewb::kernels::rms_norm_backward";
        const std::size_t needed = rms_norm_backward_workspace_bytes(4, 8);
        QCOMPARE(needed, 4 * 8 * sizeof(float));
        const auto backward = [&](Tensor dy, Tensor gamma, Tensor dx, Tensor dgamma, const float* rstd, std::size_t bytes) {
            return [=] {
                rms_norm_backward(dy, tensor(f, DType::Float32, 4, 8), tensor(rstd, DType::Float32, 1, 4), gamma, dx, dgamma,
                                  {f, bytes}, {});
            };
        };
        const Tensor rows = tensor(f, DType::Float32, 4, 8);
        const Tensor param = tensor(f, DType::Float32, 1, 8);
        const Tensor dx = tensor(f, DType::Float32, 4, 8);
        const Tensor dgamma = tensor(f, DType::Float32, 1, 8);
        const Tensor rstd = tensor(f, DType::Float32, 1, 4);
        expect_error(backward(rows, param, dx, dgamma, f, needed - 4), "workspace of", bwd);
        expect_error(backward(rows, param, {nullptr, DType::Float32, 4, 8}, dgamma, f, needed), "dx is a null pointer", bwd);
        expect_error(backward(rows, param, dx, dgamma, nullptr, needed), "rstd is a null pointer", bwd);
        expect_error(backward(rows, {f, DType::Float16, 1, 8}, dx, {f, DType::Float16, 1, 8}, f, needed),
                     "gamma has dtype float16", bwd);
        expect_error(backward({f, DType::Float16, 4, 8}, param, dx, dgamma, f, needed), "dy has dtype float16", bwd);
        expect_error(backward(rows, param, {f, DType::BFloat16, 4, 8}, dgamma, f, needed),
                     "dx has dtype bfloat16; allowed: float32, x's", bwd);
        expect_error(backward(rows, param, dx, {f, DType::BFloat16, 1, 8}, f, needed), "dgamma has dtype bfloat16", bwd);
        expect_error(backward({f, DType::Float32, 4, 7}, param, dx, dgamma, f, needed), "dy is [4, 7]; allowed: [4, 8]", bwd);
        expect_error(backward(rows, param, dx, {f, DType::Float32, 8, 1}, f, needed), "dgamma is [8, 1]; allowed: [1, 8]", bwd);

        const std::string add = "tewb::kernels::rms_norm_backward_add";
        expect_error(
            [&] {
                rms_norm_backward_add(rows, rows, rstd, param, dx, {f, DType::BFloat16, 4, 8}, dgamma, {f, needed}, {});
            },
            "dresidual has dtype bfloat16; allowed: float32, x's", add);
        expect_error(
            [&] {
                rms_norm_backward_add(rows, rows, rstd, param, dx, {f, DType::Float32, 4, 9}, dgamma, {f, needed}, {});
            },
            "dresidual is [4, 9]; allowed: [4, 8]", add);
        // No rows: nothing to check past the shapes, nothing launched.
        const std::uint64_t before = launch_count();
        rms_norm_forward(tensor(nullptr, DType::Float32, 0, 8), tensor(nullptr, DType::Float32, 1, 8), 1e-5f,
                         tensor(f, DType::Float32, 0, 8), Tensor{}, tensor(nullptr, DType::Float32, 1, 0), {});
        QCOMPARE(launch_count(), before);
    }

    // The amax hand-off forms run the same checks as their host twins (tst_host_normalization has them all), before a launch.
    void normCurrentScaleFormsRejectBadArguments() {
        float* f = device_like;
        const Tensor x = tensor(f, DType::Float32, 1, 4);
        const Tensor stat = tensor(f + 4, DType::Float32, 1, 1);
        const Tensor rstd = tensor(f + 5, DType::Float32, 1, 1);
        CurrentScaleTarget target;
        target.numerator = 448.0f;
        target.scale = tensor(f + 6, DType::Float32, 1, 1);
        target.scale_inv = tensor(f + 7, DType::Float32, 1, 1);
        CurrentScaleTarget in_x = target;
        in_x.scale = tensor(f + 1, DType::Float32, 1, 1);
        CurrentScaleTarget no_numerator = target;
        no_numerator.numerator = 0.0f;
        const std::string ln = "tewb::kernels::layer_norm_forward_current_scale";
        expect_error([&] { layer_norm_forward_current_scale(x, x, x, 1e-5f, x, in_x, stat, rstd, {}); }, "scale lies in out", ln);
        expect_error([&] { layer_norm_forward_current_scale(x, x, x, 1e-5f, x, no_numerator, stat, rstd, {}); }, "numerator = 0", ln);
        const std::string rms = "tewb::kernels::rms_norm_forward_current_scale";
        expect_error([&] { rms_norm_forward_current_scale(x, x, 1e-5f, x, in_x, rstd, {}); }, "scale lies in out", rms);
        expect_error([&] { rms_norm_forward_current_scale(x, x, 1e-5f, tensor(nullptr, DType::Float32, 1, 4), target, rstd, {}); },
                     "out is null", rms);
        const std::string gelu_fwd = "tewb::kernels::gelu_forward_current_scale";
        expect_error([&] { gelu_forward_current_scale(x, tensor(f + 8 - 4, DType::Float32, 1, 4), in_x, {}); }, "scale lies in x",
                     gelu_fwd);
        const std::string gelu_bwd = "tewb::kernels::gelu_backward_current_scale";
        expect_error([&] { gelu_backward_current_scale(x, x, tensor(nullptr, DType::Float32, 1, 4), target, Tensor{}, {}, {}); },
                     "dx is null", gelu_bwd);
        const std::string ln_bwd = "tewb::kernels::layer_norm_backward_cast_dbias_current_scale";
        expect_error(
            [&] {
                layer_norm_backward_cast_dbias_current_scale(x, x, stat, rstd, x, tensor(nullptr, DType::Float32, 1, 4), Tensor{}, x, x,
                                                             target, x, {}, {});
            },
            "dx is null", ln_bwd);
        const std::string rms_bwd = "tewb::kernels::rms_norm_backward_current_scale";
        expect_error([&] { rms_norm_backward_current_scale(x, x, rstd, x, tensor(nullptr, DType::Float32, 1, 4), Tensor{}, x, target, {}, {}); },
                     "dx is null", rms_bwd);
        expect_error([&] { rms_norm_backward_current_scale(x, x, rstd, x, x, Tensor{}, x, in_x, {}, {}); }, "scale lies in dx", rms_bwd);
        const std::string swiglu_fwd = "tewb::kernels::swiglu_forward_current_scale";
        expect_error([&] { swiglu_forward_current_scale(tensor(f, DType::Float32, 1, 4), tensor(f + 4, DType::Float32, 1, 2), in_x, {}); },
                     "scale lies in in", swiglu_fwd);
    }

    // The attention's hand-off forms: the target's checks before a launch, over each tensor's whole span (q, k and v
    // narrows of one [16, 48] matrix, the gradients of another: a float in v's or dk's last row lies in it).
    void attentionCurrentScaleFormsRejectBadArguments() {
        alignas(16) static std::uint16_t memory[2048 + 64];  // never dereferenced
        const auto matrix = [&](std::size_t at, std::size_t cols, std::size_t stride) {
            Tensor t = tensor(memory + at, DType::BFloat16, 16, cols);
            t.row_stride = stride;
            return t;
        };
        const auto target_at = [&](std::size_t element) { return tensor(reinterpret_cast<float*>(memory + element), DType::Float32, 1, 1); };
        // qkv [0, 768), o [768, 1024), d_o [1024, 1280), the gradients [1280, 2048), then lse and the targets.
        const Tensor q = matrix(0, 16, 48), k = matrix(16, 16, 48), v = matrix(32, 16, 48);
        const Tensor o = matrix(768, 16, 0), d_o = matrix(1024, 16, 0);
        const Tensor dq = matrix(1280, 16, 48), dk = matrix(1296, 16, 48), dv = matrix(1312, 16, 48);
        const Tensor lse = tensor(reinterpret_cast<float*>(memory + 2048), DType::Float32, 1, 16);
        const AttentionHeads heads{16, 1, 0.25f};
        CurrentScaleTarget target;
        target.numerator = 448.0f;
        target.scale = target_at(2048 + 32);
        target.scale_inv = target_at(2048 + 34);
        const auto with = [&](auto change) {
            CurrentScaleTarget t = target;
            change(t);
            return t;
        };
        const std::string fwd = "tewb::kernels::attention_forward_current_scale";
        const CurrentScaleTarget in_v = with([&](CurrentScaleTarget& t) { t.scale = target_at(15 * 48 + 40); });
        expect_error([&] { attention_forward_current_scale(q, k, v, heads, o, lse, in_v, {}); }, "scale lies in v", fwd);
        const CurrentScaleTarget in_lse = with([&](CurrentScaleTarget& t) { t.scale_inv = target_at(2048 + 6); });
        expect_error([&] { attention_forward_current_scale(q, k, v, heads, o, lse, in_lse, {}); }, "scale_inv lies in lse", fwd);
        const CurrentScaleTarget same = with([&](CurrentScaleTarget& t) { t.staging = t.scale; });
        expect_error([&] { attention_forward_current_scale(q, k, v, heads, o, lse, same, {}); }, "staging is also the scale", fwd);
        const std::string bwd = "tewb::kernels::attention_backward_current_scale";
        const CurrentScaleTarget in_dk = with([&](CurrentScaleTarget& t) { t.scale = target_at(1280 + 15 * 48 + 20); });
        expect_error([&] { attention_backward_current_scale(q, k, v, o, d_o, lse, heads, dq, dk, dv, {}, in_dk, {}); }, "scale lies in dk",
                     bwd);
        const CurrentScaleTarget in_d_o = with([&](CurrentScaleTarget& t) { t.scale = target_at(1024 + 8); });
        expect_error([&] { attention_backward_current_scale(q, k, v, o, d_o, lse, heads, dq, dk, dv, {}, in_d_o, {}); }, "scale lies in d_o",
                     bwd);
        // The plain call's own checks come first.
        expect_error([&] { attention_backward_current_scale(q, k, v, o, d_o, lse, heads, dq, dq, dv, {}, target, {}); }, "dq overlaps dk",
                     bwd);
    }

    // RMSNorm's backward hand-overs (rms_norm_backward_cast, rms_norm_backward_quantize): the backward's own checks, then
    // the copy's (float32 or bfloat16, dx's shape, apart from every tensor and the workspace) and the FP8 gradient's
    // (data, transposed copy and scale required, apart from every tensor and the workspace, the two copies apart).
    void rmsNormHandOversRejectBadArguments() {
        alignas(64) static float memory[6][64];  // never dereferenced
        alignas(64) static std::uint8_t bytes[4][64];
        const Tensor dy = tensor(memory[0], DType::Float32, 4, 8), x = tensor(memory[1], DType::Float32, 4, 8);
        const Tensor dx = tensor(memory[2], DType::Float32, 4, 8), gamma = tensor(memory[3], DType::Float32, 1, 8);
        const Tensor dgamma = tensor(memory[3] + 16, DType::Float32, 1, 8), rstd = tensor(memory[3] + 32, DType::Float32, 1, 4);
        const Workspace workspace{memory[4], rms_norm_backward_workspace_bytes(4, 8)};
        const Tensor grad = tensor(bytes[0], DType::BFloat16, 4, 8);
        const std::string cast = "tewb::kernels::rms_norm_backward_cast";
        const auto with_grad = [&](const Tensor& g) {
            return [=] { rms_norm_backward_cast(dy, x, rstd, gamma, dx, Tensor{}, dgamma, g, workspace, {}); };
        };
        expect_error(with_grad(tensor(nullptr, DType::BFloat16, 4, 8)), "grad is null", cast);
        expect_error(with_grad(tensor(bytes[0], DType::Float16, 4, 8)), "grad has dtype float16; allowed: float32, bfloat16", cast);
        expect_error(with_grad(tensor(bytes[0], DType::BFloat16, 4, 7)), "grad is [4, 7]; allowed: [4, 8]", cast);
        expect_error(with_grad(tensor(memory[2], DType::BFloat16, 4, 8)), "grad and dx overlap", cast);
        expect_error(with_grad(tensor(memory[0] + 8, DType::BFloat16, 4, 8)), "grad and dy overlap", cast);
        expect_error(with_grad(tensor(memory[4], DType::BFloat16, 4, 8)), "grad and the workspace overlap", cast);
        expect_error([&] { rms_norm_backward_cast(dy, x, rstd, gamma, dx, Tensor{}, dgamma, grad, Workspace{memory[4], 4}, {}); },
                     "workspace of 4 bytes", cast);

        const std::string quantize = "tewb::kernels::rms_norm_backward_quantize";
        float* scale = memory[5];
        float* amax = memory[5] + 1;
        const auto with_fp8 = [&](const Tensor& q) {
            return [=] { rms_norm_backward_quantize(dy, x, rstd, gamma, dx, Tensor{}, dgamma, q, workspace, {}); };
        };
        expect_error(with_fp8(fp8_tensor(nullptr, 4, 8, scale, amax, bytes[1])), "fp8 is null", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, amax)), "fp8.transposed is null", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, nullptr, amax, bytes[1])), "fp8.scale", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, amax, bytes[0] + 16)), "fp8 and fp8.transposed overlap", quantize);
        expect_error(with_fp8(fp8_tensor(memory[0], 4, 8, scale, amax, bytes[1])), "fp8 and dy overlap", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, amax, memory[3] + 16)), "fp8.transposed and dgamma overlap", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, amax, memory[4])), "fp8.transposed and the workspace overlap", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, reinterpret_cast<float*>(bytes[1]), amax, bytes[1])),
                     "fp8.scale lies in the FP8 bytes", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, memory[2] + 3, amax, bytes[1])), "fp8.scale and dx overlap", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, memory[3] + 17, bytes[1])), "fp8.amax and dgamma overlap", quantize);
        expect_error(with_fp8(fp8_tensor(bytes[0], 4, 8, scale, memory[4] + 1, bytes[1])), "fp8.amax and the workspace overlap", quantize);
    }

    // Grouped queries: kv_heads a divisor of heads, k's, v's, dk's and dv's columns kv_heads wide, and the backward's
    // workspace (its size, 32-byte alignment, apart from every tensor); no workspace needed without groups.
    void attentionGroupedQueriesRejectBadArguments() {
        alignas(64) static std::uint16_t memory[4096];  // never dereferenced
        const auto matrix = [&](std::size_t at, std::size_t cols, std::size_t stride) {
            Tensor t = tensor(memory + at, DType::BFloat16, 16, cols);
            t.row_stride = stride;
            return t;
        };
        // One sequence of 16, 4 query heads over 2 key/value heads of 16: q | k | v packed in rows of 128 ([0, 2048)),
        // o [2048, 3072), d_o [3072, 4096); the gradients, lse and the workspace in buffers of their own.
        const std::size_t packed = 128;
        const Tensor q = matrix(0, 64, packed), k = matrix(64, 32, packed), v = matrix(96, 32, packed);
        const Tensor o = tensor(memory + 2048, DType::BFloat16, 16, 64), d_o = tensor(memory + 3072, DType::BFloat16, 16, 64);
        alignas(64) static std::uint16_t grads_memory[2048];
        const Tensor dq = tensor(grads_memory, DType::BFloat16, 16, 64), dk = tensor(grads_memory + 1024, DType::BFloat16, 16, 32),
                     dv = tensor(grads_memory + 1536, DType::BFloat16, 16, 32);
        alignas(64) static float lse_memory[64];
        const Tensor lse = tensor(lse_memory, DType::Float32, 4, 16);
        const AttentionHeads heads{16, 4, 0.25f, 2};
        const std::size_t needed = attention_backward_workspace_bytes(16, 64, heads);
        QCOMPARE(needed, std::size_t{2 * 1 * 2 * 16 * 16 * 4});  // dv's and dk's sums for each of 2 key/value heads
        QCOMPARE(attention_backward_workspace_bytes(16, 64, AttentionHeads{16, 4, 0.25f}), std::size_t{0});
        QCOMPARE(attention_backward_workspace_bytes(16, 64, AttentionHeads{16, 4, 0.25f, 4}), std::size_t{0});
        QCOMPARE(attention_backward_workspace_bytes(16, 64, AttentionHeads{16, 4, 0.25f, 3}), std::size_t{0});  // refused by the call
        alignas(64) static float workspace_memory[1024 + 64];
        const Workspace workspace{workspace_memory, needed};
        const std::string fwd = "tewb::kernels::attention_forward";
        const std::string bwd = "tewb::kernels::attention_backward";
        expect_error([&] { attention_forward(q, k, v, AttentionHeads{16, 4, 0.25f, 3}, o, lse, {}); },
                     "kv_heads = 3; allowed: a divisor of heads = 4", fwd);
        expect_error([&] { attention_forward(q, k, v, AttentionHeads{16, 4, 0.25f, 8}, o, lse, {}); },
                     "kv_heads = 8; allowed: a divisor of heads = 4", fwd);
        expect_error([&] { attention_forward(q, matrix(64, 64, packed), v, heads, o, lse, {}); }, "k is [16, 64]; allowed: [16, 32]", fwd);
        expect_error([&] { attention_forward(q, k, q, heads, o, lse, {}); }, "v is [16, 64]; allowed: [16, 32]", fwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dq, dv, workspace, {}); }, "dk is [16, 64]; allowed: [16, 32]",
                     bwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{}, {}); },
                     "workspace of 0 bytes; needed: 4096 (attention_backward_workspace_bytes)", bwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{workspace_memory, needed - 4}, {}); },
                     "workspace of 4092 bytes; needed: 4096", bwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{workspace_memory + 4, needed}, {}); },
                     "workspace is not 32-byte aligned", bwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{grads_memory, needed}, {}); },
                     "workspace overlaps dq; allowed: scratch of its own", bwd);
        expect_error([&] { attention_backward(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{lse_memory, needed}, {}); },
                     "workspace overlaps lse", bwd);
        expect_error([&] { attention_backward_current_scale(q, k, v, o, d_o, lse, heads, dq, dk, dv, Workspace{}, {}, {}); },
                     "workspace of 0 bytes", "tewb::kernels::attention_backward_current_scale");
        // The hand-off's target, like every tensor, apart from the workspace.
        CurrentScaleTarget in_workspace;
        in_workspace.numerator = 448.0f;
        in_workspace.scale = tensor(workspace_memory + 8, DType::Float32, 1, 1);
        in_workspace.scale_inv = tensor(workspace_memory + 1024 + 8, DType::Float32, 1, 1);
        expect_error([&] { attention_backward_current_scale(q, k, v, o, d_o, lse, heads, dq, dk, dv, workspace, in_workspace, {}); },
                     "a current-scaling target lies in the workspace", "tewb::kernels::attention_backward_current_scale");
    }

    void geluRejectsBadArguments() {
        const std::string fwd = "tewb::kernels::gelu_forward";
        float* f = device_like;
        const Tensor x = tensor(f, DType::Float32, 2, 4);
        expect_error([&] { gelu_forward(x, Tensor{}, Tensor{}, {}); }, "no output", fwd);
        expect_error([&] { gelu_forward(tensor(f, DType::Float16, 2, 4), x, Tensor{}, {}); }, "x has dtype float16", fwd);
        expect_error([&] { gelu_forward(tensor(nullptr, DType::Float32, 2, 4), x, Tensor{}, {}); }, "x is a null pointer", fwd);
        expect_error([&] { gelu_forward(x, tensor(f, DType::Float32, 4, 2), Tensor{}, {}); }, "out is [4, 2]; allowed: [2, 4]", fwd);
        expect_error([&] { gelu_forward(x, Tensor{}, tensor(f, DType::Float32, 2, 4), {}); }, "fp8 has dtype float32; allowed: E4M3",
                     fwd);

        const std::string bwd = "tewb::kernels::gelu_backward";
        const std::size_t needed = gelu_backward_workspace_bytes(2, 4);
        expect_error(
            [&] {
                gelu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 4}, {nullptr, DType::Float32, 2, 4}, Tensor{},
                              {nullptr, DType::Float32, 1, 4}, {nullptr, 0}, {});
            },
            "no output", bwd);
        expect_error(
            [&] {
                gelu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 4}, {nullptr, DType::Float32, 2, 4}, Tensor{},
                              {f, DType::Float32, 1, 4}, {f, needed - 1}, {});
            },
            "workspace of", bwd);
        expect_error(
            [&] {
                gelu_backward({f, DType::BFloat16, 2, 4}, {nullptr, DType::BFloat16, 2, 4}, {f, DType::BFloat16, 2, 4}, Tensor{},
                              {nullptr, DType::Float32, 1, 4}, {nullptr, 0}, {});
            },
            "x is a null pointer", bwd);
        expect_error(
            [&] {
                gelu_backward({f, DType::BFloat16, 2, 4}, {f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 4}, Tensor{},
                              {nullptr, DType::Float32, 1, 4}, {nullptr, 0}, {});
            },
            "dy has dtype bfloat16; allowed: float32, x's", bwd);
    }

    void swigluRejectsBadArguments() {
        const std::string fwd = "tewb::kernels::swiglu_forward";
        float* f = device_like;
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float32, 2, 8}, {nullptr, DType::Float32, 2, 4}, Tensor{}, {});
            },
            "no output: out and fp8 are both null", fwd);
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float32, 2, 7}, {f, DType::Float32, 2, 4}, Tensor{}, {});
            },
            "in is [2, 7]: an odd width", fwd);
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float32, 2, 8}, {f, DType::Float32, 2, 8}, Tensor{}, {});
            },
            "out is [2, 8]; allowed: [2, 4]", fwd);
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float16, 2, 8}, {f, DType::Float32, 2, 4}, Tensor{}, {});
            },
            "in has dtype float16", fwd);
        expect_error(
            [&] {
                swiglu_forward({nullptr, DType::BFloat16, 2, 8}, {f, DType::BFloat16, 2, 4}, Tensor{}, {});
            },
            "in is a null pointer", fwd);
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float32, 2, 8}, {nullptr, DType::Float32, 2, 4}, tensor(f, DType::BFloat16, 2, 4), {});
            },
            "fp8 has dtype bfloat16; allowed: E4M3, E5M2", fwd);
        expect_error(
            [&] {
                swiglu_forward({f, DType::Float32, 2, 8}, {nullptr, DType::Float32, 2, 4}, fp8_tensor(f, 2, 8, f), {});
            },
            "fp8 is [2, 8]; allowed: [2, 4]", fwd);

        const std::string bwd = "tewb::kernels::swiglu_backward";
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 8}, {nullptr, DType::Float32, 2, 8}, Tensor{},
                                {});
            },
            "no output: din and fp8 are both null", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 9}, {f, DType::Float32, 2, 9}, Tensor{},
                                {});
            },
            "an odd width", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 8}, {f, DType::Float32, 2, 8}, {f, DType::Float32, 2, 8}, Tensor{},
                                {});
            },
            "dy is [2, 8]; allowed: [2, 4]", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::BFloat16, 2, 4}, {f, DType::Float32, 2, 8}, {f, DType::Float32, 2, 8}, Tensor{},
                                {});
            },
            "dy has dtype bfloat16; allowed: float32, in's", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 8}, {f, DType::BFloat16, 2, 8}, Tensor{},
                                {});
            },
            "din has dtype bfloat16; allowed: float32, in's", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 4}, {f, DType::Float32, 2, 8}, {f, DType::Float32, 4, 4}, Tensor{},
                                {});
            },
            "din is [4, 4]; allowed: [2, 8]", bwd);
        expect_error(
            [&] {
                swiglu_backward({f, DType::Float32, 2, 4}, {nullptr, DType::Float32, 2, 8}, {f, DType::Float32, 2, 8}, Tensor{},
                                {});
            },
            "in is a null pointer", bwd);
    }

    void rotaryRejectsBadArguments() {
        const std::string entry = "tewb::kernels::rotary";
        alignas(16) static float other[8];  // never dereferenced either: y, apart from device_like
        float* f = device_like;
        const Tensor table{f, DType::Float32, 2, 2};  // [seq, head_dim / 2] of x [2, 4] with one head
        const RotaryHeads one_head{2, 1, 1, false};
        const auto call = [&](Tensor x, Tensor cos, Tensor sin, RotaryHeads heads, Tensor y) {
            return [=] { rotary(x, cos, sin, heads, y, {}); };
        };
        expect_error(call({f, DType::Float32, 2, 6}, {f, DType::Float32, 2, 3}, {f, DType::Float32, 2, 3}, {2, 2, 2, false},
                          {other, DType::Float32, 2, 6}),
                     "head_dim = 3 (x's columns / heads) is odd", entry);
        expect_error(call({f, DType::Float32, 2, 4}, table, table, {2, 1, 2, false}, {other, DType::Float32, 2, 4}),
                     "rotated_heads = 2; allowed: 0 to heads = 1", entry);
        expect_error(call({f, DType::Float32, 2, 4}, {f, DType::Float32, 1, 2}, table, one_head, {other, DType::Float32, 2, 4}),
                     "cos is [1, 2]; allowed: [at least seq = 2, head_dim / 2 = 2]", entry);
        expect_error(call({f, DType::Float32, 2, 4}, table, {f, DType::Float32, 2, 4}, one_head, {other, DType::Float32, 2, 4}),
                     "sin is [2, 4]; allowed: [at least seq = 2, head_dim / 2 = 2]", entry);
        expect_error(call({f, DType::Float32, 2, 4}, table, table, one_head, {f, DType::Float32, 2, 4}), "y overlaps x", entry);
        expect_error(call({f, DType::Float32, 2, 4}, {other, DType::Float32, 2, 2}, table, one_head, {other, DType::Float32, 2, 4}),
                     "y overlaps cos", entry);
        expect_error(call({nullptr, DType::BFloat16, 2, 4}, table, table, one_head, {other, DType::BFloat16, 2, 4}),
                     "x is a null pointer", entry);
        expect_error(call({f, DType::Float32, 2, 4}, table, table, one_head, {nullptr, DType::Float32, 2, 4}),
                     "y is a null pointer", entry);
        expect_error(call({f, DType::Float32, 2, 4}, table, {nullptr, DType::Float32, 2, 2}, one_head, {other, DType::Float32, 2, 4}),
                     "sin is a null pointer", entry);
        expect_error(call({f, DType::Float32, 3, 4}, table, table, one_head, {other, DType::Float32, 3, 4}),
                     "3 rows are not whole sequences of seq = 2", entry);
        // The hand-off form: the target's checks first.
        CurrentScaleTarget target;
        target.numerator = 448.0f;
        target.scale = tensor(other + 1, DType::Float32, 1, 1);
        target.scale_inv = tensor(f + 7, DType::Float32, 1, 1);
        const std::string fresh = "tewb::kernels::rotary_current_scale";
        expect_error([&] { rotary_current_scale({f, DType::Float32, 2, 4}, table, table, one_head, {other, DType::Float32, 2, 4}, target, {}); },
                     "scale lies in y", fresh);
        alignas(16) static float apart[1];  // never dereferenced: a scale outside every tensor of the call
        target.scale = tensor(apart, DType::Float32, 1, 1);
        expect_error([&] { rotary_current_scale({f, DType::Float32, 2, 4}, table, table, one_head, {other, DType::Float32, 2, 4}, target, {}); },
                     "scale_inv lies in x", fresh);
        // The FP8 form (delayed scaling): refused before any launch, the rotation's checks and then fp8's.
        const std::string quantize = "tewb::kernels::rotary_quantize";
        alignas(16) static std::uint8_t bytes[16], transposed[16];  // never dereferenced
        Tensor fp8 = tensor(bytes, DType::Float8E5M2, 2, 4);
        fp8.transposed = transposed;
        fp8.scale = apart;
        expect_error([&] { rotary_quantize({f, DType::Float32, 2, 4}, table, table, one_head, {f, DType::Float32, 2, 4}, fp8, {}); },
                     "y overlaps x", quantize);
        Tensor no_copy = fp8;
        no_copy.transposed = nullptr;
        expect_error([&] { rotary_quantize({f, DType::Float32, 2, 4}, table, table, one_head, {other, DType::Float32, 2, 4}, no_copy, {}); },
                     "fp8.transposed is null", quantize);
        Tensor over_y = fp8;
        over_y.data = other;
        expect_error([&] { rotary_quantize({f, DType::Float32, 2, 4}, table, table, one_head, {other, DType::Float32, 2, 4}, over_y, {}); },
                     "fp8 and y overlap", quantize);
        expect_error([&] { rotary_quantize({f, DType::Float32, 2, 4}, table, table, one_head, {other, DType::Float32, 2, 4}, Tensor{}, {}); },
                     "fp8 is null", quantize);
    }

    // The microscaling casts share their checks with the host twins (tst_host_mx has the rest): refused before any launch.
    void microscalingCastsRejectBadArguments() {
        Tensor x = tensor(device_like, DType::Float32, 2, 32);
        const Tensor scales = tensor(device_like, DType::Float8E8M0, 128, 4);
        expect_error([&] { mxfp8_cast(x, tensor(device_like, DType::Float32, 2, 32), scales, {}, {}, {}); },
                     "out has dtype float32; allowed: E4M3, E5M2", "tewb::kernels::mxfp8_cast");
        expect_error([&] { nvfp4_cast(x, tensor(device_like, DType::Float4E2M1x2, 2, 16), scales, {}, {}, {}, {}); },
                     "x.amax is a null pointer", "tewb::kernels::nvfp4_cast");
        expect_error([&] { hadamard16(tensor(device_like, DType::Float32, 1, 8), tensor(device_like, DType::Float32, 1, 8), 0, {}); },
                     "x has 8 columns; allowed: a multiple of 16", "tewb::kernels::hadamard16");
    }
    void gemmRejectsBadArguments() {
        const std::string entry = "tewb::kernels::gemm";
        GemmCall ok;  // E4M3 x E4M3 -> bfloat16, m = n = k = 32
        ok.a = tensor(device_like, DType::Float8E4M3, 32, 32);  // [m, k]
        ok.a.scale_inv = device_like;
        ok.b = tensor(device_like, DType::Float8E4M3, 32, 32);  // [n, k]
        ok.b.scale_inv = device_like;
        ok.d = tensor(device_like, DType::BFloat16, 32, 32);    // [m, n]
        const auto bad = [&](const std::function<void(GemmCall&)>& change, const std::string& part) {
            GemmCall g = ok;
            change(g);
            expect_error([g] { calls::cuda_gemm(g); }, part, entry);
        };
        bad([](GemmCall& g) { g.b.cols = 48; }, "a is [32, 32] and b [32, 48]: a's k is 32, b's 48; allowed: the same k");
        bad([](GemmCall& g) { g.a.rows = g.d.rows = 97; }, "FP8 GEMMs need m, n and k to be multiples of 16 (got m = 97");
        bad([](GemmCall& g) { g.a.cols = g.b.cols = 0; }, "k = 0");
        bad([](GemmCall& g) { g.a.dtype = DType::Float8E5M2; g.b.dtype = DType::Float8E5M2; }, "E5M2 x E5M2");
        bad([](GemmCall& g) { g.a.dtype = DType::BFloat16; }, "do not mix");
        bad([](GemmCall& g) { g.b.scale_inv = nullptr; }, "scale_inv pointers");
        bad([](GemmCall& g) { g.d.dtype = DType::Float8E4M3; }, "an FP8 output needs d.scale");
        bad([](GemmCall& g) { g.a = tensor(device_like, DType::BFloat16, 32, 32); g.b = g.a; g.d.dtype = DType::Float8E4M3; },
            "an FP8 output needs FP8 operands");
        bad([](GemmCall& g) { g.d.data = nullptr; }, "a, b and d must not be null");
        bad([](GemmCall& g) { g.a.data = reinterpret_cast<char*>(device_like) + 4; }, "16-byte aligned");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::Bias; }, "the bias epilogue needs");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::GeluAuxBias;
                              g.epilogue.bias = tensor(device_like, DType::BFloat16, 1, 32);
                              g.epilogue.aux = tensor(device_like, DType::BFloat16, 32, 32); g.epilogue.aux.row_stride = 20; },
            "aux's row stride (cuBLASLt's aux_ld) is 20; allowed: at least n = 32 and a multiple of 8");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::GeluAuxBias;
                              g.epilogue.bias = tensor(device_like, DType::BFloat16, 1, 32);
                              g.epilogue.aux = tensor(device_like, DType::Float32, 32, 32); },
            "aux has dtype float32 with a bfloat16 output; allowed: bfloat16");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::DGeluBGrad;
                              g.epilogue.aux = tensor(device_like, DType::BFloat16, 32, 32); g.epilogue.aux.row_stride = 32; },
            "needs a 16-byte aligned bias_grad");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::BGradB; }, "the BGRADB epilogue needs");
        bad([](GemmCall& g) { g.a.dtype = g.b.dtype = DType::BFloat16; g.a.scale_inv = g.b.scale_inv = nullptr;
                              g.options.epilogue = Epilogue::BGradB;
                              g.epilogue.bias_grad = tensor(device_like, DType::BFloat16, 1, 32); },  // [1, m]
            "needs a stored transposed");
        bad([](GemmCall& g) { g.d.dtype = DType::Float8E5M2; g.d.scale = device_like; }, "E4M3 x E4M3 has no E5M2 output");
        bad([](GemmCall& g) { g.options.a_transposed = true; }, "FP8 operands must be K-contiguous");  // a [k, m], k = m
        bad([](GemmCall& g) { g.workspace.bytes = 1024; }, "with workspace.bytes = 1024: the workspace must be 256-byte aligned");
        bad([](GemmCall& g) { g.d.dtype = DType::Float8E4M3; g.d.scale = device_like; g.options.epilogue = Epilogue::BGradB;
                              g.epilogue.bias_grad = tensor(device_like, DType::BFloat16, 1, 32); },
            "an FP8 output takes no epilogue but bias");
        QCOMPARE(gemm_cache_size(), std::size_t{0});  // nothing reached cuBLASLt
    }

    void blockScaledGemmRejectsBadArguments() {
        const std::string entry = "tewb::kernels::gemm";
        GemmCall ok;  // E4M3 1x128 x 128x128 -> bfloat16, m = 256, n = 128, k = 384
        ok.a = block_tensor(device_like, 256, 384, device_like, ScaleMode::Block1x128);    // [m, k]
        ok.b = block_tensor(device_like, 128, 384, device_like, ScaleMode::Block128x128);  // [n, k]
        ok.d = tensor(device_like, DType::BFloat16, 256, 128);                              // [m, n]
        const auto bad = [&](const std::function<void(GemmCall&)>& change, const std::string& part) {
            GemmCall g = ok;
            change(g);
            expect_error([g] { calls::cuda_gemm(g); }, part, entry);
        };
        bad([](GemmCall& g) { g.a.cols = g.b.cols = 320; }, "need k to be a multiple of 128 (got k = 320)");
        bad([](GemmCall& g) { g.b.scale_mode = ScaleMode::Tensor; }, "block-scaled and tensor-scaled operands do not mix");
        bad([](GemmCall& g) { g.a.scale_mode = ScaleMode::Block128x128; },
            "128x128 x 128x128 block scales have no cuBLASLt kernel");
        bad([](GemmCall& g) { g.options.accumulation = Accumulation::Fast; }, "accumulate split only");
        bad([](GemmCall& g) { g.d.dtype = DType::Float8E4M3; g.d.scale = device_like; }, "write float32 or bfloat16");
        bad([](GemmCall& g) { g.options.epilogue = Epilogue::GeluAuxBias;
                              g.epilogue.bias = tensor(device_like, DType::BFloat16, 1, 128);
                              g.epilogue.aux = tensor(device_like, DType::BFloat16, 256, 128); g.epilogue.aux.row_stride = 128; },
            "take no epilogue but bias");
        bad([](GemmCall& g) { g.a.dtype = g.b.dtype = DType::BFloat16; }, "block scale modes apply to FP8 operands only");
        QCOMPARE(gemm_cache_size(), std::size_t{0});
    }

    // The scale buffers' sizes in cuBLASLt's layouts (ScaleMode's comment): rows padded to 4 for 1x128,
    // k blocks padded to 4 for 128x128, partial row blocks counted.
    void blockScaleEntriesFollowTheLayout() {
        QCOMPARE(block_scale_entries(ScaleMode::Tensor, 3072, 768), std::size_t{1});
        QCOMPARE(block_scale_entries(ScaleMode::Block1x128, 3072, 768), std::size_t{6 * 3072});
        QCOMPARE(block_scale_entries(ScaleMode::Block1x128, 30, 256), std::size_t{2 * 32});
        QCOMPARE(block_scale_entries(ScaleMode::Block128x128, 768, 768), std::size_t{6 * 8});
        QCOMPARE(block_scale_entries(ScaleMode::Block128x128, 2304, 3072), std::size_t{18 * 24});
        QCOMPARE(block_scale_entries(ScaleMode::Block128x128, 200, 128), std::size_t{2 * 4});
    }

    // Runs after every refusal above (QtTest keeps declaration order): none of them launched anything.
    void refusedCallsLaunchNothing() {
        QCOMPARE(launch_count(), std::uint64_t{0});
    }

    void deviceQueryNeverThrows() {
        const CudaQuery query = query_cuda();
        QVERIFY(query.runtime_version > 0);
        QVERIFY(query.cublaslt_version > 0);
        if (query.devices.empty()) QVERIFY(!query.error.empty());
    }
};

QTEST_GUILESS_MAIN(TestKernelArguments)
#include "tst_kernel_arguments.moc"
