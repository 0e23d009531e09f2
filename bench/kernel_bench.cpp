// The fused kernels' performance targets (issue 4, docs/kernels.md), measured with CUDA events on the
// current GPU: LayerNorm forward/backward, the casts (with their bias gradients) against the measured copy
// bandwidth, the modules' bias-gradient kernels against cuBLASLt's epilogues, the GEMM plans, and the FP8
// GEMM against the BF16 GEMM at 4096³. Prints a table (and, with --json PATH, writes the numbers).
// Exits 77 without a GPU of compute capability 8.9 or newer. A benchmark, never a test.
#include <array>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <torch/autograd.h>
#include <nlohmann/json.hpp>

#include "core/device/DeviceInfo.h"
#include "core/model/Rotary.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/attention.h"
#include "tewb_kernels/rotary.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"
#include "tewb_kernels/embedding.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/normalization.h"

using namespace tewb;

namespace {

constexpr int kWarmup = 5;
constexpr int kRepeats = 50;

cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

// The same stream as the kernels' entry points take it.
kernels::Stream on_stream() {
    return kernels::Stream{stream()};
}

// The GEMM's CUDA entry point on one call's tensors, on that stream.
void run_gemm(const kernels::GemmCall& g) {
    kernels::gemm(g.a, g.b, g.d, g.epilogue, g.options, g.workspace, on_stream());
}

// The mean over kRepeats launches after kWarmup launches, in milliseconds.
double time_ms(const std::function<void()>& launch) {
    for (int i = 0; i < kWarmup; ++i) launch();
    at::cuda::CUDAEvent start(cudaEventDefault);
    at::cuda::CUDAEvent end(cudaEventDefault);
    start.record();
    for (int i = 0; i < kRepeats; ++i) launch();
    end.record();
    end.synchronize();
    return start.elapsed_time(end) / kRepeats;
}

// Current scaling's target in `fresh`'s three floats (scale, scale_inv, staging): what the *_current_scale forms take.
kernels::CurrentScaleTarget current_scale_target(const at::Tensor& fresh, float numerator) {
    kernels::CurrentScaleTarget t;
    t.numerator = numerator;
    t.scale = kernel_tensor(fresh.narrow(0, 0, 1));
    t.scale_inv = kernel_tensor(fresh.narrow(0, 1, 1));
    t.staging = kernel_tensor(fresh.narrow(0, 2, 1));
    return t;
}

struct Row {
    std::string what;
    std::string shape;
    double ms = 0;
    double value = 0;     // GB/s or TFLOP/s
    std::string unit;
    double target = 0;    // the value the target asks for (0: none)
};

// The MLP backward's bias-gradient work at the seed's shape (3072 tokens, hidden 768, FFN 3072), as the modules run
// it against cuBLASLt's epilogues (docs/kernels.md): fc2's dgrad then the GELU backward kernel with fc1's bias
// gradient, against the dgrad with DGELU_BGRAD (its helper kernel and memset included: events around the whole);
// cast_dbias then a plain wgrad, against the cast then a wgrad with BGRADB. The value is how many times faster the
// modules' way is; the target, 1, is "not slower" (where a GPU shows less, the modules go back to the epilogue for
// that work: docs/kernels.md, "Bias gradients without cuBLASLt's epilogues").
// qkv's output gradient at the seed's attention (3072 tokens, 12 heads of 64): the stacked casts read dq, dk and dv
// where they lie, against LibTorch's stack and then the dense cast (docs/kernels.md, "The qkv gradient without a
// stack"). The value is how many times faster the stacked pass is; the target, 1, is "not slower".
void stacked_cast_levers(std::vector<Row>& rows) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::int64_t batch = 32, seq = 96, heads = 12, head_dim = 64;
    const std::int64_t tokens = batch * seq, width = heads * head_dim;
    std::vector<at::Tensor> parts;
    std::vector<kernels::Tensor> refs;
    for (int p = 0; p < 3; ++p) {
        parts.push_back(at::randn({batch, seq, heads, head_dim}, cuda).to(at::kBFloat16));
        refs.push_back(kernels::input(parts.back().data_ptr(), kernels::DType::BFloat16, tokens, width));
    }
    at::Tensor stacked = at::empty({tokens, 3 * width}, cuda.dtype(at::kBFloat16));
    at::Tensor dbias = at::empty({3 * width}, cuda);
    const auto r = static_cast<std::size_t>(tokens);
    const auto c = static_cast<std::size_t>(3 * width);
    const at::Tensor sums_workspace =
        at::empty({static_cast<std::int64_t>(kernels::cast_dbias_workspace_bytes(r, c))}, cuda.dtype(at::kByte));
    const double dense_ms = time_ms([&] {
        const at::Tensor dy = at::stack(parts, 2).reshape({tokens, 3 * width});
        kernels::cast_dbias(kernel_tensor(dy), kernels::Tensor{}, kernel_tensor(dbias), workspace_ref(sums_workspace), on_stream());
    });
    const double stacked_ms = time_ms([&] {
        kernels::stacked_cast_dbias(refs.data(), 3, kernel_tensor(stacked), kernel_tensor(dbias), workspace_ref(sums_workspace),
                                    on_stream());
    });
    const std::string shape = "3x" + std::to_string(tokens) + "x" + std::to_string(width);
    rows.push_back({"stacked_cast_dbias vs stack + cast_dbias", shape, stacked_ms, dense_ms / stacked_ms, "x", 1.0});

    const at::Tensor scale = at::ones({1}, cuda);
    at::Tensor amax = at::zeros({1}, cuda);
    at::Tensor q = at::empty({tokens, 3 * width}, cuda.dtype(at::kByte));
    at::Tensor q_t = at::empty({3 * width, tokens}, cuda.dtype(at::kByte));
    kernels::Tensor fp8 = kernels::input(q.data_ptr(), kernels::DType::Float8E4M3, r, c);
    fp8.transposed = q_t.data_ptr();
    fp8.scale = scale.data_ptr<float>();
    fp8.amax = amax.data_ptr<float>();
    const at::Tensor fp8_workspace =
        at::empty({static_cast<std::int64_t>(kernels::cast_transpose_dbias_workspace_bytes(r, c))}, cuda.dtype(at::kByte));
    const double dense_fp8_ms = time_ms([&] {
        const at::Tensor dy = at::stack(parts, 2).reshape({tokens, 3 * width});
        kernels::cast_transpose_dbias_to_fp8(kernel_tensor(dy), fp8, kernel_tensor(dbias), workspace_ref(fp8_workspace), on_stream());
    });
    const double stacked_fp8_ms = time_ms([&] {
        kernels::stacked_cast_transpose_dbias_to_fp8(refs.data(), 3, fp8, kernel_tensor(dbias), workspace_ref(fp8_workspace), on_stream());
    });
    rows.push_back({"stacked_cast_transpose_dbias_to_fp8 vs stack + cast", shape, stacked_fp8_ms, dense_fp8_ms / stacked_fp8_ms, "x",
                    1.0});
}

// proj's and fc2's output gradient at the seed's residual stream (3072 x 768, float32 x, bfloat16 dy): the LayerNorm
// backward that writes the Linear's copy (or FP8 cast) and bias gradient itself, against layer_norm_backward_add and then
// the Linear's own cast (docs/kernels.md, "Gradients handed over cast"). The value is how many times faster; the
// target, 1, is "not slower".
void layer_norm_handover_levers(std::vector<Row>& rows) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::int64_t r = 3072, h = 768;
    const auto ur = static_cast<std::size_t>(r);
    const auto uh = static_cast<std::size_t>(h);
    const at::Tensor x = at::randn({r, h}, cuda);
    const at::Tensor dy = at::randn({r, h}, cuda).to(at::kBFloat16);
    const at::Tensor dresidual = at::randn({r, h}, cuda);
    const at::Tensor gamma = at::ones({h}, cuda);
    const at::Tensor mean = at::zeros({r}, cuda);
    const at::Tensor rstd = at::ones({r}, cuda);
    at::Tensor dx = at::empty({r, h}, cuda);
    at::Tensor dgamma = at::empty({h}, cuda);
    at::Tensor dbeta = at::empty({h}, cuda);
    at::Tensor grad = at::empty({r, h}, cuda.dtype(at::kBFloat16));
    at::Tensor dbias = at::empty({h}, cuda);
    const auto bytes = [&](std::size_t n) { return at::empty({static_cast<std::int64_t>(n)}, cuda.dtype(at::kByte)); };
    const at::Tensor ws = bytes(kernels::layer_norm_backward_cast_dbias_workspace_bytes(ur, uh));
    const at::Tensor sums_ws = bytes(kernels::cast_dbias_workspace_bytes(ur, uh));
    const at::Tensor fp8_ws = bytes(kernels::cast_transpose_dbias_workspace_bytes(ur, uh));
    const auto backward = [&] {
        kernels::layer_norm_backward_add(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                         kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dresidual), kernel_tensor(dgamma),
                                         kernel_tensor(dbeta), workspace_ref(ws), on_stream());
    };
    const double separate_ms = time_ms([&] {
        backward();
        kernels::cast_dbias(kernel_tensor(dx), kernel_tensor(grad), kernel_tensor(dbias), workspace_ref(sums_ws), on_stream());
    });
    const double handed_ms = time_ms([&] {
        kernels::layer_norm_backward_cast_dbias(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dresidual), kernel_tensor(dgamma),
                                                kernel_tensor(dbeta), kernel_tensor(grad), kernel_tensor(dbias), workspace_ref(ws),
                                                on_stream());
    });
    const std::string shape = std::to_string(r) + "x" + std::to_string(h);
    rows.push_back({"layer_norm_backward_cast_dbias vs backward + cast_dbias", shape, handed_ms, separate_ms / handed_ms, "x", 1.0});

    const at::Tensor scale = at::ones({1}, cuda);
    at::Tensor amax = at::zeros({1}, cuda);
    at::Tensor q = at::empty({r, h}, cuda.dtype(at::kByte));
    at::Tensor q_t = at::empty({h, r}, cuda.dtype(at::kByte));
    kernels::Tensor fp8 = kernels::input(q.data_ptr(), kernels::DType::Float8E5M2, ur, uh);
    fp8.transposed = q_t.data_ptr();
    fp8.scale = scale.data_ptr<float>();
    fp8.amax = amax.data_ptr<float>();
    const double separate_fp8_ms = time_ms([&] {
        backward();
        kernels::cast_transpose_dbias_to_fp8(kernel_tensor(dx), fp8, kernel_tensor(dbias), workspace_ref(fp8_ws), on_stream());
    });
    const double handed_fp8_ms = time_ms([&] {
        kernels::layer_norm_backward_quantize_dbias(kernel_tensor(dy), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                                    kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dresidual),
                                                    kernel_tensor(dgamma), kernel_tensor(dbeta), fp8, kernel_tensor(dbias),
                                                    workspace_ref(ws), on_stream());
    });
    rows.push_back({"layer_norm_backward_quantize_dbias vs backward + cast", shape, handed_fp8_ms, separate_fp8_ms / handed_fp8_ms, "x",
                    1.0});

    // The amax hand-off under current scaling (qkv's and fc1's inputs): the forward that also writes its output's scale,
    // against the forward and then abs_max_current_scale over its output; the float32 residual stream to bfloat16 as te FP8
    // runs it. Both write the same bits (the self-test's rows).
    const at::Tensor beta = at::zeros({h}, cuda);
    at::Tensor y = at::empty({r, h}, cuda.dtype(at::kBFloat16));
    at::Tensor stats = at::empty({2, r}, cuda);
    const at::Tensor fresh = at::zeros({3}, cuda);
    const kernels::CurrentScaleTarget target = current_scale_target(fresh, 448.0f);
    const double forward_then_amax_ms = time_ms([&] {
        kernels::layer_norm_forward(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernel_tensor(y),
                                    kernels::Tensor{}, kernel_tensor(stats[0]), kernel_tensor(stats[1]), on_stream());
        kernels::abs_max_current_scale(kernel_tensor(y), 448.0f, target.scale, target.scale_inv, target.staging, on_stream());
    });
    const double handoff_ms = time_ms([&] {
        kernels::layer_norm_forward_current_scale(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernel_tensor(y),
                                                  target, kernel_tensor(stats[0]), kernel_tensor(stats[1]), on_stream());
    });
    rows.push_back({"layer_norm_forward_current_scale vs forward + abs_max_current_scale", shape, handoff_ms,
                    forward_then_amax_ms / handoff_ms, "x", 1.0});
}

// Current scaling's step before each cast (abs_max_current_scale: the amax and the scale from it in one launch) at the
// seed's output gradients under current scaling: fc1's (bfloat16, 3072 x 3072) and proj's or fc2's (the float32 residual
// stream, 3072 x 768); reads 2 or 4 bytes an element, against the copy's bandwidth target. And every weight of the
// seed's 12 layers (float32, 48 tensors) in one multi-tensor launch against a launch each (the target, 1, is "not
// slower"), and their FP8 casts in one multi-tensor launch against the copy's bandwidth target.
void current_scale_levers(std::vector<Row>& rows, double bandwidth_target) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    at::Tensor targets = at::zeros({4 * 64 * 48}, cuda);  // each tensor's scale, scale_inv, staging in slots of their own
    const auto item = [&](const at::Tensor& x, int i) {
        kernels::Tensor source = kernels::input(x.data_ptr(), kernel_dtype(x.scalar_type()), 1, static_cast<std::size_t>(x.numel()));
        const auto slot = [&](int k) { return kernel_tensor(targets.narrow(0, (i * 4 + k) * 64, 1)); };
        return kernels::CurrentScaleItem{source, 448.0f, slot(0), slot(1), slot(2)};
    };
    for (const auto& [r, h, dtype, what] : {std::tuple<std::int64_t, std::int64_t, at::ScalarType, const char*>{3072, 3072, at::kBFloat16, "bf16 (fc1's gradient)"},
                                           {3072, 768, at::kFloat, "f32 (the residual stream's gradient)"}}) {
        const at::Tensor x = at::randn({r, h}, cuda).to(dtype);
        const kernels::CurrentScaleItem one = item(x, 0);
        const double ms = time_ms([&] {
            kernels::abs_max_current_scale(one.x, one.numerator, one.scale, one.scale_inv, one.staging, on_stream());
        });
        const double bytes = static_cast<double>(x.numel()) * static_cast<double>(x.element_size());
        rows.push_back({std::string("abs_max_current_scale ") + what, std::to_string(r) + "x" + std::to_string(h), ms, bytes / (ms * 1e6),
                        "GB/s", bandwidth_target});
    }
    std::vector<at::Tensor> weights;
    std::vector<kernels::CurrentScaleItem> items;
    for (int layer = 0; layer < 12; ++layer) {
        for (const auto& [out, in] : {std::pair<std::int64_t, std::int64_t>{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}}) {
            weights.push_back(at::randn({out, in}, cuda) * 0.02);
            items.push_back(item(weights.back(), static_cast<int>(items.size())));
        }
    }
    const double each_ms = time_ms([&] {
        for (const kernels::CurrentScaleItem& i : items) {
            kernels::abs_max_current_scale(i.x, i.numerator, i.scale, i.scale_inv, i.staging, on_stream());
        }
    });
    const double multi_ms = time_ms([&] { kernels::abs_max_current_scale_multi(items.data(), items.size(), on_stream()); });
    rows.push_back({"abs_max_current_scale_multi vs one launch each", "48 seed weights", multi_ms, each_ms / multi_ms, "x", 1.0});
    // Their FP8 copies with the transposed copies, as a CUDA graph run's forward makes them every step (and current
    // scaling's after the launch above): 4 bytes read and 2 written an element.
    std::vector<at::Tensor> copies;
    std::vector<kernels::Tensor> sources;
    std::vector<kernels::Tensor> outs;
    double elements = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        const at::Tensor& w = weights[i];
        copies.push_back(at::empty(w.sizes(), cuda.dtype(at::kByte)));
        copies.push_back(at::empty({w.size(1), w.size(0)}, cuda.dtype(at::kByte)));
        sources.push_back(kernel_tensor(w));
        kernels::Tensor o = kernels::input(copies[copies.size() - 2].data_ptr(), kernels::DType::Float8E4M3,
                                           static_cast<std::size_t>(w.size(0)), static_cast<std::size_t>(w.size(1)));
        o.transposed = copies.back().data_ptr();
        o.scale = static_cast<float*>(items[i].scale.data);
        outs.push_back(o);
        elements += static_cast<double>(w.numel());
    }
    const double cast_ms = time_ms([&] { kernels::cast_transpose_multi_to_fp8(sources.data(), outs.data(), sources.size(), on_stream()); });
    rows.push_back({"cast_transpose_multi_to_fp8 f32 -> E4M3", "48 seed weights", cast_ms, 6.0 * elements / (cast_ms * 1e6), "GB/s",
                    bandwidth_target});
}

void bias_gradient_levers(const kernels::GemmCall& base, std::vector<Row>& rows) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::int64_t tokens = 3072, hidden = 768, ffn = 3072;
    const at::Tensor dy32 = at::randn({tokens, hidden}, cuda) * 0.01;
    const at::Tensor dy = dy32.to(at::kBFloat16);
    const at::Tensor w2 = (at::randn({hidden, ffn}, cuda) * 0.02).to(at::kBFloat16);
    const at::Tensor pre = at::randn({tokens, ffn}, cuda).to(at::kBFloat16);
    const at::Tensor act = at::randn({tokens, ffn}, cuda).to(at::kBFloat16);
    at::Tensor d_act = at::empty({tokens, ffn}, cuda.dtype(at::kBFloat16));
    at::Tensor dgelu = at::empty({tokens, ffn}, cuda.dtype(at::kBFloat16));
    at::Tensor db1_bf16 = at::empty({ffn}, cuda.dtype(at::kBFloat16));
    at::Tensor db1 = at::empty({ffn}, cuda);
    at::Tensor dw2 = at::empty({hidden, ffn}, cuda);
    at::Tensor db2 = at::empty({hidden}, cuda);
    at::Tensor dy_cast = at::empty({tokens, hidden}, cuda.dtype(at::kBFloat16));
    // d [m, n] = a · bᵀ in bfloat16 operands, each as stored (`transposed`: a [k, m] / b [k, n]; m, n and k read from
    // the tensors' shapes), on `base`'s workspace.
    const auto bf16_gemm = [&base](const at::Tensor& a, bool a_transposed, const at::Tensor& b, bool b_transposed,
                                   at::Tensor& d) {
        kernels::GemmCall g = base;
        g.a = kernel_tensor(a);
        g.b = kernel_tensor(b);
        g.options.a_transposed = a_transposed;
        g.options.b_transposed = b_transposed;
        g.d = kernel_tensor(d);
        return g;
    };
    const kernels::GemmCall dgrad = bf16_gemm(dy, false, w2, true, d_act);  // tokens x ffn x hidden; w2 [hidden, ffn] as stored
    kernels::GemmCall dgrad_epilogue = dgrad;
    dgrad_epilogue.d = kernel_tensor(dgelu);
    dgrad_epilogue.options.epilogue = kernels::Epilogue::DGeluBGrad;
    dgrad_epilogue.epilogue.aux = kernel_tensor(pre);
    dgrad_epilogue.epilogue.aux.row_stride = static_cast<std::size_t>(ffn);
    dgrad_epilogue.epilogue.bias_grad = kernel_tensor(db1_bf16);
    const std::size_t gelu_bytes = kernels::gelu_backward_workspace_bytes(tokens, ffn);
    const at::Tensor gelu_workspace = at::empty({static_cast<std::int64_t>(gelu_bytes)}, cuda.dtype(at::kByte));
    const double epilogue_ms = time_ms([&] { run_gemm(dgrad_epilogue); });
    const double ours_ms = time_ms([&] {
        run_gemm(dgrad);
        kernels::gelu_backward(kernel_tensor(d_act), kernel_tensor(pre), kernel_tensor(dgelu), kernels::Tensor{}, kernel_tensor(db1),
                               workspace_ref(gelu_workspace), on_stream());
    });
    const std::string shape = std::to_string(tokens) + "x" + std::to_string(ffn) + "x" + std::to_string(hidden);
    rows.push_back({"dgrad + gelu_backward vs DGELU_BGRAD", shape, ours_ms, epilogue_ms / ours_ms, "x", 1.0});

    const kernels::GemmCall wgrad = bf16_gemm(dy_cast, true, act, true, dw2);  // hidden x ffn x tokens: dyᵀ · act, float32 out
    kernels::GemmCall wgrad_epilogue = wgrad;
    wgrad_epilogue.options.epilogue = kernels::Epilogue::BGradB;
    wgrad_epilogue.epilogue.bias_grad = kernel_tensor(db2);
    const std::size_t sums_bytes = kernels::cast_dbias_workspace_bytes(tokens, hidden);
    const at::Tensor sums_workspace = at::empty({static_cast<std::int64_t>(sums_bytes)}, cuda.dtype(at::kByte));
    const double bgradb_ms = time_ms([&] {
        dy_cast.copy_(dy32);
        run_gemm(wgrad_epilogue);
    });
    const double cast_dbias_ms = time_ms([&] {
        kernels::cast_dbias(kernel_tensor(dy32), kernel_tensor(dy_cast), kernel_tensor(db2), workspace_ref(sums_workspace), on_stream());
        run_gemm(wgrad);
    });
    const std::string wshape = std::to_string(hidden) + "x" + std::to_string(ffn) + "x" + std::to_string(tokens);
    rows.push_back({"cast_dbias + wgrad vs cast + BGRADB", wshape, cast_dbias_ms, bgradb_ms / cast_dbias_ms, "x", 1.0});
}

}  // namespace

// The seed llama's grouped-query attention (32 sequences of 96, 12 query heads over 4 key/value heads of 64, views of the
// packed projection's heads): the project's kernels (the backward one block per key/value head, dk's and dv's sums over
// its 3 query heads in the workspace) against LibTorch's scaled_dot_product_attention with enable_gqa, forward with
// backward through autograd (split's concatenation of the gradients included, as the modules needed it before).
void grouped_attention_lever(std::vector<Row>& rows) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::int64_t batch = 32, seq = 96, heads = 12, kv_heads = 4, head_dim = 64, packed = heads + 2 * kv_heads;
    const std::size_t tokens = static_cast<std::size_t>(batch * seq);
    const at::Tensor qkv = at::randn({batch, seq, packed, head_dim}, cuda).to(at::kBFloat16).requires_grad_(true);
    const at::Tensor d_out = at::randn({batch, seq, heads * head_dim}, cuda).to(at::kBFloat16);
    const float scale = 1.0f / 8.0f;
    // Heads [first, first + count) of a packed [tokens, packed · head_dim] matrix.
    auto part = [&](const at::Tensor& t, std::int64_t first, std::int64_t count) {
        kernels::Tensor m = kernels::input(t.data_ptr<at::BFloat16>() + first * head_dim, kernels::DType::BFloat16, tokens,
                                           static_cast<std::size_t>(count * head_dim));
        m.row_stride = static_cast<std::size_t>(packed * head_dim);
        return m;
    };
    const kernels::AttentionHeads h{static_cast<std::size_t>(seq), static_cast<std::size_t>(heads), scale,
                                    static_cast<std::size_t>(kv_heads)};
    at::Tensor out = at::empty({batch * seq, heads * head_dim}, cuda.dtype(at::kBFloat16));
    at::Tensor lse = at::empty({batch * heads, seq}, cuda);
    at::Tensor grads = at::empty(qkv.sizes(), cuda.dtype(at::kBFloat16));
    at::Tensor workspace = at::empty(
        {static_cast<std::int64_t>(kernels::attention_backward_workspace_bytes(tokens, static_cast<std::size_t>(heads * head_dim), h))},
        cuda.dtype(at::kByte));
    const kernels::Workspace scratch{workspace.data_ptr(), static_cast<std::size_t>(workspace.numel())};
    const at::Tensor in = qkv.detach();
    const double own_ms = time_ms([&] {
        kernels::attention_forward(part(in, 0, heads), part(in, heads, kv_heads), part(in, heads + kv_heads, kv_heads), h,
                                   kernel_tensor(out), kernel_tensor(lse), on_stream());
        kernels::attention_backward(part(in, 0, heads), part(in, heads, kv_heads), part(in, heads + kv_heads, kv_heads),
                                    kernel_tensor(out), kernel_tensor(d_out.view({-1, heads * head_dim})), kernel_tensor(lse), h,
                                    part(grads, 0, heads), part(grads, heads, kv_heads), part(grads, heads + kv_heads, kv_heads),
                                    scratch, on_stream());
    });
    const double sdpa_ms = time_ms([&] {
        const std::vector<at::Tensor> p = qkv.split_with_sizes({heads, kv_heads, kv_heads}, 2);
        const at::Tensor y = at::scaled_dot_product_attention(p[0].transpose(1, 2), p[1].transpose(1, 2), p[2].transpose(1, 2), {},
                                                              0.0, true, scale, /*enable_gqa=*/true)
                                 .transpose(1, 2)
                                 .reshape({batch, seq, heads * head_dim});
        (void)torch::autograd::grad({y}, {qkv}, {d_out});
    });
    rows.push_back({"attention fwd+bwd, grouped queries vs sdpa (enable_gqa) + autograd", "32x96, 12x64 over 4 kv heads", own_ms,
                    sdpa_ms / own_ms, "x", 1.0});
}

// The seed's attention (32 sequences of 96, 12 heads of 64, q, k and v views of the fused projection's output): the
// project's kernels (kernels/attention: one launch each way, the gradients written in the projection's layout)
// against LibTorch's scaled_dot_product_attention as the dispatcher picks it, forward, and forward with backward through
// autograd (its gradient of the projection's output included, as the modules need it). The value is how many times
// faster the project's kernels are; the target, 1, is "not slower" (where a GPU shows less, TeOps::owns_attention
// should hand the attention back to LibTorch: docs/kernels.md, "Attention").
void attention_levers(std::vector<Row>& rows) {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::int64_t batch = 32, seq = 96, heads = 12, head_dim = 64, width = heads * head_dim;
    const std::size_t tokens = static_cast<std::size_t>(batch * seq);
    const at::Tensor qkv = at::randn({batch, seq, 3, heads, head_dim}, cuda).to(at::kBFloat16).requires_grad_(true);
    const at::Tensor d_out = at::randn({batch, seq, width}, cuda).to(at::kBFloat16);
    const float scale = 1.0f / 8.0f;
    auto part = [&](const at::Tensor& t, int i) {
        kernels::Tensor m = kernels::input(t.data_ptr<at::BFloat16>() + i * width, kernels::DType::BFloat16, tokens,
                                           static_cast<std::size_t>(width));
        m.row_stride = static_cast<std::size_t>(3 * width);
        return m;
    };
    at::Tensor out = at::empty({batch * seq, width}, cuda.dtype(at::kBFloat16));
    at::Tensor lse = at::empty({batch * heads, seq}, cuda);
    at::Tensor grads = at::empty(qkv.sizes(), cuda.dtype(at::kBFloat16));
    const kernels::AttentionHeads h{static_cast<std::size_t>(seq), static_cast<std::size_t>(heads), scale};
    const at::Tensor in = qkv.detach();
    auto forward = [&] {
        kernels::attention_forward(part(in, 0), part(in, 1), part(in, 2), h, kernel_tensor(out), kernel_tensor(lse), on_stream());
    };
    const double own_forward_ms = time_ms(forward);
    const double own_both_ms = time_ms([&] {
        forward();
        kernels::attention_backward(part(in, 0), part(in, 1), part(in, 2), kernel_tensor(out), kernel_tensor(d_out.view({-1, width})),
                                    kernel_tensor(lse), h, part(grads, 0), part(grads, 1), part(grads, 2), kernels::Workspace{},
                                    on_stream());
    });
    auto sdpa = [&](const at::Tensor& x) {
        const std::vector<at::Tensor> p = x.unbind(2);
        return at::scaled_dot_product_attention(p[0].transpose(1, 2), p[1].transpose(1, 2), p[2].transpose(1, 2), {}, 0.0, true,
                                                scale);
    };
    double sdpa_forward_ms = 0;
    {
        const at::NoGradGuard no_grad;
        sdpa_forward_ms = time_ms([&] { (void)sdpa(in); });
    }
    const double sdpa_both_ms = time_ms([&] {
        const at::Tensor y = sdpa(qkv).transpose(1, 2).reshape({batch, seq, width});
        (void)torch::autograd::grad({y}, {qkv}, {d_out});
    });
    const std::string shape = std::to_string(batch) + "x" + std::to_string(seq) + ", 12x64";
    rows.push_back({"attention_forward vs sdpa", shape, own_forward_ms, sdpa_forward_ms / own_forward_ms, "x", 1.0});
    rows.push_back({"attention fwd+bwd vs sdpa + autograd", shape, own_both_ms, sdpa_both_ms / own_both_ms, "x", 1.0});
    grouped_attention_lever(rows);

    // The amax hand-off under current scaling (proj's input, qkv's output gradient): each kernel that also writes its
    // output's scale, against the kernel and then abs_max_current_scale over its output. The same bits (the self-test's
    // rows); the target, 1, is "not slower": the hand-off's per-store maximum and last-block epilogue must cost less
    // than the amax pass's launch and read it saves.
    const at::Tensor fresh = at::zeros({3}, cuda);
    const kernels::CurrentScaleTarget target = current_scale_target(fresh, 448.0f);
    const double forward_then_amax_ms = time_ms([&] {
        forward();
        kernels::abs_max_current_scale(kernel_tensor(out), 448.0f, target.scale, target.scale_inv, target.staging, on_stream());
    });
    const double forward_handoff_ms = time_ms([&] {
        kernels::attention_forward_current_scale(part(in, 0), part(in, 1), part(in, 2), h, kernel_tensor(out), kernel_tensor(lse), target,
                                                 on_stream());
    });
    rows.push_back({"attention_forward_current_scale vs forward + abs_max_current_scale", shape, forward_handoff_ms,
                    forward_then_amax_ms / forward_handoff_ms, "x", 1.0});
    const kernels::Tensor dy = kernel_tensor(d_out.view({-1, width}));
    const kernels::Tensor all_grads = kernels::input(grads.data_ptr(), kernels::DType::BFloat16, tokens, static_cast<std::size_t>(3 * width));
    const double backward_then_amax_ms = time_ms([&] {
        kernels::attention_backward(part(in, 0), part(in, 1), part(in, 2), kernel_tensor(out), dy, kernel_tensor(lse), h, part(grads, 0),
                                    part(grads, 1), part(grads, 2), kernels::Workspace{}, on_stream());
        kernels::abs_max_current_scale(all_grads, 448.0f, target.scale, target.scale_inv, target.staging, on_stream());
    });
    const double backward_handoff_ms = time_ms([&] {
        kernels::attention_backward_current_scale(part(in, 0), part(in, 1), part(in, 2), kernel_tensor(out), dy, kernel_tensor(lse), h,
                                                  part(grads, 0), part(grads, 1), part(grads, 2), kernels::Workspace{}, target,
                                                  on_stream());
    });
    rows.push_back({"attention_backward_current_scale vs backward + abs_max_current_scale", shape, backward_handoff_ms,
                    backward_then_amax_ms / backward_handoff_ms, "x", 1.0});
    // llama's qkv output gradient comes out of the inverse rotation (the seed's 20 heads of 64, 16 turned): the rotation that
    // also writes its output's scale, against the rotation and then abs_max_current_scale.
    const at::Tensor dq = at::randn({batch, seq, 20, head_dim}, cuda).to(at::kBFloat16);
    at::Tensor dq_out = at::empty_like(dq);
    const RotaryTables tables = rotary_tables(seq, head_dim, 10000.0);
    const at::Tensor cos_t = tables.cos.to(at::kCUDA), sin_t = tables.sin.to(at::kCUDA);
    const kernels::RotaryHeads rot{static_cast<std::size_t>(seq), 20, 16, /*inverse=*/true};
    const kernels::Tensor dq_in = kernels::input(dq.data_ptr(), kernels::DType::BFloat16, tokens, 20 * static_cast<std::size_t>(head_dim));
    const kernels::Tensor dq_y = kernels::input(dq_out.data_ptr(), kernels::DType::BFloat16, tokens, 20 * static_cast<std::size_t>(head_dim));
    const double rotary_then_amax_ms = time_ms([&] {
        kernels::rotary(dq_in, kernel_tensor(cos_t), kernel_tensor(sin_t), rot, dq_y, on_stream());
        kernels::abs_max_current_scale(dq_y, target.numerator, target.scale, target.scale_inv, target.staging, on_stream());
    });
    const double rotary_handoff_ms = time_ms([&] {
        kernels::rotary_current_scale(dq_in, kernel_tensor(cos_t), kernel_tensor(sin_t), rot, dq_y, target, on_stream());
    });
    rows.push_back({"rotary_current_scale vs rotary + abs_max_current_scale (llama's qkv gradient)", std::to_string(batch) + "x" +
                    std::to_string(seq) + ", 20x64", rotary_handoff_ms, rotary_then_amax_ms / rotary_handoff_ms, "x", 1.0});
    // Under delayed scaling the inverse rotation writes qkv's FP8 output gradient itself (rotary_quantize: y, the E5M2
    // bytes, their transposed copy staged in shared memory, the amax), against the rotation and then cast_transpose_to_fp8
    // (a launch and a read of y more). Target 1: "not slower".
    const std::size_t qkv_cols = 20 * static_cast<std::size_t>(head_dim);
    const at::Tensor q_bytes = at::empty({static_cast<std::int64_t>(tokens), static_cast<std::int64_t>(qkv_cols)}, cuda.dtype(at::kByte));
    const at::Tensor q_transposed = at::empty({static_cast<std::int64_t>(qkv_cols), static_cast<std::int64_t>(tokens)}, cuda.dtype(at::kByte));
    const at::Tensor q_scalars = at::ones({8}, cuda);  // scale at 0, amax at 4: 16 bytes apart
    kernels::Tensor q_fp8 = kernels::input(q_bytes.data_ptr(), kernels::DType::Float8E5M2, tokens, qkv_cols);
    q_fp8.transposed = q_transposed.data_ptr();
    q_fp8.scale = q_scalars.data_ptr<float>();
    q_fp8.amax = q_scalars.data_ptr<float>() + 4;
    const double rotary_then_cast_ms = time_ms([&] {
        kernels::rotary(dq_in, kernel_tensor(cos_t), kernel_tensor(sin_t), rot, dq_y, on_stream());
        kernels::cast_transpose_to_fp8(dq_y, q_fp8, on_stream());
    });
    const double rotary_quantize_ms = time_ms([&] {
        kernels::rotary_quantize(dq_in, kernel_tensor(cos_t), kernel_tensor(sin_t), rot, dq_y, q_fp8, on_stream());
    });
    rows.push_back({"rotary_quantize vs rotary + cast_transpose_to_fp8 (llama's qkv gradient, delayed)", std::to_string(batch) + "x" +
                    std::to_string(seq) + ", 20x64", rotary_quantize_ms, rotary_then_cast_ms / rotary_quantize_ms, "x", 1.0});
}

int main(int argc, char** argv) {
    const std::string json_path = argc == 3 && std::string(argv[1]) == "--json" ? argv[2] : "";
    const DeviceInfo device = detect_device();
    if (!device.has_gpu() || *device.compute_capability < ComputeCapability{8, 9}) {
        std::printf("kernel bench skipped: needs a GPU of compute capability 8.9 or newer (%s)\n",
                    device.has_gpu() ? device.compute_capability->to_string().c_str() : device.gpu_error.c_str());
        return 77;
    }
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    std::vector<Row> rows;

    // Copy bandwidth: read + write of a 1 GiB buffer.
    const std::int64_t copy_bytes = std::int64_t{1} << 30;
    at::Tensor src = at::empty({copy_bytes}, cuda.dtype(at::kByte));
    at::Tensor dst = at::empty({copy_bytes}, cuda.dtype(at::kByte));
    const double copy_ms = time_ms([&] { cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), copy_bytes, cudaMemcpyDeviceToDevice, stream()); });
    const double copy_gbs = 2.0 * copy_bytes / (copy_ms * 1e6);
    rows.push_back({"copy (device to device)", "1 GiB", copy_ms, copy_gbs, "GB/s", 0});
    const double bandwidth_target = 0.7 * copy_gbs;

    for (const auto& [r, h] : {std::pair<std::int64_t, std::int64_t>{3072, 768}, {16384, 4096}}) {
        const std::string shape = std::to_string(r) + "x" + std::to_string(h);
        const at::Tensor x = at::randn({r, h}, cuda).to(at::kBFloat16);
        const at::Tensor gamma = at::ones({h}, cuda);
        const at::Tensor beta = at::zeros({h}, cuda);
        at::Tensor out = at::empty_like(x);
        at::Tensor mean = at::empty({r}, cuda);
        at::Tensor rstd = at::empty({r}, cuda);
        const double fwd = time_ms([&] {
            kernels::layer_norm_forward(kernel_tensor(x), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernel_tensor(out),
                                        kernels::Tensor{}, kernel_tensor(mean), kernel_tensor(rstd), on_stream());
        });
        rows.push_back({"layer_norm_forward bf16", shape, fwd, 4.0 * r * h / (fwd * 1e6), "GB/s", bandwidth_target});
        at::Tensor dx = at::empty_like(x);
        at::Tensor dgamma = at::empty_like(gamma);
        at::Tensor dbeta = at::empty_like(gamma);
        const std::size_t bytes = kernels::layer_norm_backward_workspace_bytes(r, h);
        at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda.dtype(at::kByte));
        const double bwd = time_ms([&] {
            kernels::layer_norm_backward(kernel_tensor(out), kernel_tensor(x), kernel_tensor(mean), kernel_tensor(rstd),
                                         kernel_tensor(gamma), kernel_tensor(dx), kernel_tensor(dgamma), kernel_tensor(dbeta),
                                         workspace_ref(workspace), on_stream());
        });
        rows.push_back({"layer_norm_backward bf16", shape, bwd, 6.0 * r * h / (bwd * 1e6), "GB/s", bandwidth_target});
        if (h == 768) {
            // What the te model runs at the seed's shape: the float32 residual stream's backward with the skip's gradient
            // (layer_norm_backward_add; dy BF16, x, dresidual and dx float32), the kernel that loads its next row ahead
            // (layer_norm_backward_prefetches). Reads 10 bytes an element, writes 4.
            const at::Tensor x32 = x.to(at::kFloat);
            const at::Tensor dresidual = at::randn({r, h}, cuda);
            at::Tensor mean32 = at::empty({r}, cuda);
            at::Tensor rstd32 = at::empty({r}, cuda);
            at::Tensor y32 = at::empty({r, h}, cuda);
            kernels::layer_norm_forward(kernel_tensor(x32), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernel_tensor(y32),
                                        kernels::Tensor{}, kernel_tensor(mean32), kernel_tensor(rstd32), on_stream());
            at::Tensor dx32 = at::empty_like(x32);
            const double add = time_ms([&] {
                kernels::layer_norm_backward_add(kernel_tensor(out), kernel_tensor(x32), kernel_tensor(mean32), kernel_tensor(rstd32),
                                                 kernel_tensor(gamma), kernel_tensor(dx32), kernel_tensor(dresidual), kernel_tensor(dgamma),
                                                 kernel_tensor(dbeta), workspace_ref(workspace), on_stream());
            });
            rows.push_back({"layer_norm_backward_add fp32 x, bf16 dy (the seed's residual stream)", shape, add, 14.0 * r * h / (add * 1e6),
                            "GB/s", bandwidth_target});
            // The gpt model's input gradient at the seed (batch 32 x seq 96, vocab 4096), one launch: dpositions summed
            // over the batch (a thread loads 8 rows of dy before it adds them) and dy's rows added into the float32 dtable
            // with atomics. Bytes: dy read twice, dtable read and written, dpositions written. No target (the atomics).
            const std::int64_t seq = 96, vocab = 4096;
            const at::Tensor tokens = at::randint(vocab, {r / seq, seq}, cuda.dtype(at::kLong));
            at::Tensor dtable = at::zeros({vocab, h}, cuda);
            at::Tensor dpositions = at::empty({seq, h}, cuda.dtype(at::kBFloat16));
            const double emb = time_ms([&] {
                kernels::embedding_backward(kernel_tensor(tokens), kernel_tensor(x), kernel_tensor(dtable), kernel_tensor(dpositions),
                                            on_stream());
            });
            rows.push_back({"embedding_backward bf16 dy -> dpositions + dtable (gpt's input)", shape, emb,
                            (12.0 * r * h + 2.0 * seq * h) / (emb * 1e6), "GB/s", 0});
        }
        // RMSNorm (llama) at the same shape: reads dy and x, writes dx (gamma's gradient summed beside it).
        at::Tensor rms_out = at::empty_like(x);
        const double rms_fwd = time_ms([&] {
            kernels::rms_norm_forward(kernel_tensor(x), kernel_tensor(gamma), 1e-5f, kernel_tensor(rms_out), kernels::Tensor{},
                                      kernel_tensor(rstd), on_stream());
        });
        rows.push_back({"rms_norm_forward bf16", shape, rms_fwd, 4.0 * r * h / (rms_fwd * 1e6), "GB/s", bandwidth_target});
        const std::size_t rms_bytes = kernels::rms_norm_backward_workspace_bytes(r, h);
        at::Tensor rms_workspace = at::empty({static_cast<std::int64_t>(rms_bytes)}, cuda.dtype(at::kByte));
        const double rms_bwd = time_ms([&] {
            kernels::rms_norm_backward(kernel_tensor(rms_out), kernel_tensor(x), kernel_tensor(rstd), kernel_tensor(gamma),
                                       kernel_tensor(dx), kernel_tensor(dgamma), workspace_ref(rms_workspace), on_stream());
        });
        rows.push_back({"rms_norm_backward bf16", shape, rms_bwd, 6.0 * r * h / (rms_bwd * 1e6), "GB/s", bandwidth_target});
        const at::Tensor scale = at::ones({1}, cuda);
        at::Tensor amax = at::zeros({1}, cuda);
        at::Tensor q = at::empty({r, h}, cuda.dtype(at::kByte));
        at::Tensor q_t = at::empty({h, r}, cuda.dtype(at::kByte));
        kernels::Tensor fp8 = kernels::input(q.data_ptr(), kernels::DType::Float8E4M3, r, h);
        fp8.transposed = q_t.data_ptr();
        fp8.scale = scale.data_ptr<float>();
        fp8.amax = amax.data_ptr<float>();
        const double ct = time_ms([&] {
            kernels::cast_transpose_to_fp8(kernel_tensor(x), fp8, on_stream());
        });
        rows.push_back({"cast_transpose_to_fp8 bf16 -> E4M3", shape, ct, 4.0 * r * h / (ct * 1e6), "GB/s", bandwidth_target});
        kernels::Tensor plain = fp8;
        plain.transposed = nullptr;
        const double pc = time_ms([&] { kernels::cast_to_fp8(kernel_tensor(x), plain, on_stream()); });
        rows.push_back({"cast_to_fp8 bf16 -> E4M3", shape, pc, 3.0 * r * h / (pc * 1e6), "GB/s", bandwidth_target});
        if (h == 768) {
            // llama's FP8 RMSNorm (rms_norm_quantize) at the seed's shape: the float32 residual stream normalised straight
            // to FP8 with its transposed copy and amax (the fast kernel's banded form). Reads 4 bytes an element, writes 2.
            const at::Tensor x32 = x.to(at::kFloat);
            at::Tensor rstd32 = at::empty({r}, cuda);
            const double rq = time_ms([&] {
                kernels::rms_norm_forward(kernel_tensor(x32), kernel_tensor(gamma), 1e-5f, kernels::Tensor{}, fp8, kernel_tensor(rstd32),
                                          on_stream());
            });
            rows.push_back({"rms_norm_forward fp32 x -> E4M3 + transposed (llama's FP8 RMSNorm)", shape, rq, 6.0 * r * h / (rq * 1e6),
                            "GB/s", bandwidth_target});
            // gpt's FP8 LayerNorm (qkv's and fc1's input under delayed scaling): the same read and writes, mean and rstd saved.
            at::Tensor mean32 = at::empty({r}, cuda);
            const double lq = time_ms([&] {
                kernels::layer_norm_forward(kernel_tensor(x32), kernel_tensor(gamma), kernel_tensor(beta), 1e-5f, kernels::Tensor{}, fp8,
                                            kernel_tensor(mean32), kernel_tensor(rstd32), on_stream());
            });
            rows.push_back({"layer_norm_forward fp32 x -> E4M3 + transposed (gpt's FP8 LayerNorm)", shape, lq, 6.0 * r * h / (lq * 1e6),
                            "GB/s", bandwidth_target});
            // llama's proj and down projection under current scaling: the RMSNorm backward over the float32 residual stream that
            // also writes dx's scale (rms_norm_backward_current_scale), against the backward and then abs_max_current_scale
            // over dx. The same bits (the self-test's rows); the target, 1, is "not slower".
            const at::Tensor dy32 = at::randn({r, h}, cuda), dres32 = at::randn({r, h}, cuda);
            at::Tensor dx32 = at::empty({r, h}, cuda);
            const at::Tensor fresh = at::zeros({3}, cuda);
            const kernels::CurrentScaleTarget target = current_scale_target(fresh, 57344.0f);
            const double then_amax = time_ms([&] {
                kernels::rms_norm_backward_add(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                               kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), workspace_ref(rms_workspace),
                                               on_stream());
                kernels::abs_max_current_scale(kernel_tensor(dx32), 57344.0f, target.scale, target.scale_inv, target.staging, on_stream());
            });
            const double handoff = time_ms([&] {
                kernels::rms_norm_backward_current_scale(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                                         kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), target,
                                                         workspace_ref(rms_workspace), on_stream());
            });
            rows.push_back({"rms_norm_backward_current_scale vs backward_add + abs_max_current_scale (fp32)", shape, handoff,
                            then_amax / handoff, "x", 1.0});
            // The same Linears in BF16 and under delayed scaling: the backward that also writes dx's bfloat16 copy
            // (rms_norm_backward_cast) against the backward and then the copy (the Linear's cast before), and the one that
            // writes dx's FP8 bytes and transposed copy (rms_norm_backward_quantize, banded) against the backward and then
            // cast_transpose_to_fp8. The target, 1, is "not slower" (each saves a read of the float32 dx and a launch).
            at::Tensor copy = at::empty({r, h}, cuda.dtype(at::kBFloat16));
            const double then_copy = time_ms([&] {
                kernels::rms_norm_backward_add(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                               kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), workspace_ref(rms_workspace),
                                               on_stream());
                copy.copy_(dx32);
            });
            const double with_copy = time_ms([&] {
                kernels::rms_norm_backward_cast(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                                kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), kernel_tensor(copy),
                                                workspace_ref(rms_workspace), on_stream());
            });
            rows.push_back({"rms_norm_backward_cast vs backward_add + bf16 copy (fp32)", shape, with_copy, then_copy / with_copy, "x", 1.0});
            const double then_cast = time_ms([&] {
                kernels::rms_norm_backward_add(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                               kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), workspace_ref(rms_workspace),
                                               on_stream());
                kernels::cast_transpose_to_fp8(kernel_tensor(dx32), fp8, on_stream());
            });
            const double with_cast = time_ms([&] {
                kernels::rms_norm_backward_quantize(kernel_tensor(dy32), kernel_tensor(x32), kernel_tensor(rstd32), kernel_tensor(gamma),
                                                    kernel_tensor(dx32), kernel_tensor(dres32), kernel_tensor(dgamma), fp8,
                                                    workspace_ref(rms_workspace), on_stream());
            });
            rows.push_back({"rms_norm_backward_quantize vs backward_add + cast_transpose_to_fp8 (fp32)", shape, with_cast,
                            then_cast / with_cast, "x", 1.0});
        }
        // Bytes as above plus the float32 bias gradient (the partial sums stay in L2 at these sizes).
        at::Tensor dbias = at::empty({h}, cuda);
        const std::size_t dbias_bytes = kernels::cast_transpose_dbias_workspace_bytes(r, h);
        at::Tensor dbias_workspace = at::empty({static_cast<std::int64_t>(dbias_bytes)}, cuda.dtype(at::kByte));
        const double ctb = time_ms([&] {
            kernels::cast_transpose_dbias_to_fp8(kernel_tensor(x), fp8, kernel_tensor(dbias), workspace_ref(dbias_workspace),
                                                 on_stream());
        });
        rows.push_back({"cast_transpose_dbias_to_fp8 bf16 -> E4M3", shape, ctb, (4.0 * r * h + 4.0 * h) / (ctb * 1e6), "GB/s",
                        bandwidth_target});
        // A high-precision Linear's output gradient: the float32 residual stream's gradient cast to bfloat16 with its bias
        // gradient, and (qkv's) the bias gradient alone of a bfloat16 gradient.
        const at::Tensor dy32 = at::randn({r, h}, cuda);
        at::Tensor dy16 = at::empty({r, h}, cuda.dtype(at::kBFloat16));
        const std::size_t sums_bytes = kernels::cast_dbias_workspace_bytes(r, h);
        at::Tensor sums_workspace = at::empty({static_cast<std::int64_t>(sums_bytes)}, cuda.dtype(at::kByte));
        const double cd = time_ms([&] {
            kernels::cast_dbias(kernel_tensor(dy32), kernel_tensor(dy16), kernel_tensor(dbias), workspace_ref(sums_workspace), on_stream());
        });
        rows.push_back({"cast_dbias f32 -> bf16", shape, cd, (6.0 * r * h + 4.0 * h) / (cd * 1e6), "GB/s", bandwidth_target});
        const double sums = time_ms([&] {
            kernels::cast_dbias(kernel_tensor(x), kernels::Tensor{}, kernel_tensor(dbias), workspace_ref(sums_workspace), on_stream());
        });
        rows.push_back({"cast_dbias bf16, sums only", shape, sums, (2.0 * r * h + 4.0 * h) / (sums * 1e6), "GB/s", bandwidth_target});
        // fc1's FP8 backward in one pass (the delayed-scaling MLP): dy and x read, the E4M3 gradient and its transposed
        // copy written (staged through shared memory), the float32 bias gradient summed beside them.
        const std::size_t gelu_bytes = kernels::gelu_backward_workspace_bytes(r, h);
        at::Tensor gelu_workspace = at::empty({static_cast<std::int64_t>(gelu_bytes)}, cuda.dtype(at::kByte));
        const double gb = time_ms([&] {
            kernels::gelu_backward(kernel_tensor(out), kernel_tensor(x), kernels::Tensor{}, fp8, kernel_tensor(dbias),
                                   workspace_ref(gelu_workspace), on_stream());
        });
        rows.push_back({"gelu_backward bf16 -> E4M3 + transpose + dbias", shape, gb, (6.0 * r * h + 4.0 * h) / (gb * 1e6), "GB/s",
                        bandwidth_target});
        // te BF16's fc1 gradient (fc2's dgrad is a plain GEMM): dy and x read, dx written, the float32 bias gradient summed.
        at::Tensor gelu_dx = at::empty({r, h}, cuda.dtype(at::kBFloat16));
        const double gbf = time_ms([&] {
            kernels::gelu_backward(kernel_tensor(out), kernel_tensor(x), kernel_tensor(gelu_dx), kernels::Tensor{}, kernel_tensor(dbias),
                                   workspace_ref(gelu_workspace), on_stream());
        });
        rows.push_back({"gelu_backward bf16 + dbias (te BF16)", shape, gbf, (6.0 * r * h + 4.0 * h) / (gbf * 1e6), "GB/s",
                        bandwidth_target});
        // The element-wise forward (current scaling's GELU writes bfloat16 y, then casts it).
        const double gf = time_ms([&] {
            kernels::gelu_forward(kernel_tensor(x), kernel_tensor(gelu_dx), kernels::Tensor{}, on_stream());
        });
        rows.push_back({"gelu_forward bf16", shape, gf, (4.0 * r * h) / (gf * 1e6), "GB/s", bandwidth_target});
        // llama's MLP activation under FP8 (SwiGLU of width h: in [r, 2h]): the forward reads the gate and up halves and
        // writes the FP8 output with its transposed copy (no high-precision copy); the backward reads dy and both halves
        // and writes din's FP8 form with its transposed copy (fc1's dgrad and wgrad operands).
        const at::Tensor gate_up = at::randn({r, 2 * h}, cuda).to(at::kBFloat16);
        at::Tensor sq = at::empty({r, h}, cuda.dtype(at::kByte));
        at::Tensor sq_t = at::empty({h, r}, cuda.dtype(at::kByte));
        kernels::Tensor swiglu_fp8 = kernels::input(sq.data_ptr(), kernels::DType::Float8E4M3, r, h);
        swiglu_fp8.transposed = sq_t.data_ptr();
        swiglu_fp8.scale = scale.data_ptr<float>();
        swiglu_fp8.amax = amax.data_ptr<float>();
        const double sf = time_ms([&] { kernels::swiglu_forward(kernel_tensor(gate_up), kernels::Tensor{}, swiglu_fp8, on_stream()); });
        rows.push_back({"swiglu_forward bf16 -> E4M3 + transpose", shape, sf, 6.0 * r * h / (sf * 1e6), "GB/s", bandwidth_target});
        at::Tensor dq = at::empty({r, 2 * h}, cuda.dtype(at::kByte));
        at::Tensor dq_t = at::empty({2 * h, r}, cuda.dtype(at::kByte));
        kernels::Tensor swiglu_dfp8 = kernels::input(dq.data_ptr(), kernels::DType::Float8E5M2, r, 2 * h);
        swiglu_dfp8.transposed = dq_t.data_ptr();
        swiglu_dfp8.scale = scale.data_ptr<float>();
        swiglu_dfp8.amax = amax.data_ptr<float>();
        const double sb = time_ms([&] {
            kernels::swiglu_backward(kernel_tensor(x), kernel_tensor(gate_up), kernels::Tensor{}, swiglu_dfp8, on_stream());
        });
        rows.push_back({"swiglu_backward bf16 -> E5M2 + transpose", shape, sb, 10.0 * r * h / (sb * 1e6), "GB/s", bandwidth_target});
    }

    const std::int64_t n = 4096;
    const double flops = 2.0 * n * n * n;
    const at::Tensor a16 = at::randn({n, n}, cuda).to(at::kBFloat16);
    const at::Tensor b16 = at::randn({n, n}, cuda).to(at::kBFloat16);
    at::Tensor d = at::empty({n, n}, cuda.dtype(at::kBFloat16));
    kernels::GemmCall g;
    g.a = kernel_tensor(a16);
    g.b = kernel_tensor(b16);
    g.d = kernel_tensor(d);
    const at::Tensor workspace =
        at::empty({static_cast<std::int64_t>(kernels::gemm_workspace_bytes(at::cuda::current_device()))}, cuda.dtype(at::kByte));
    g.workspace = workspace_ref(workspace);
    // The seed's GEMM shapes (3072 tokens; qkv, proj and fc2, fc1) with the heuristic's first algorithm, then with the
    // plan timed on its candidates (gemm.h, set_gemm_autotune): the lever's target is never slower than the first (3 %
    // allowed: each side is one timing, and a rerun of the same plan moves by about that much).
    const bool autotune = kernels::gemm_autotune();
    for (const auto& [m, nn, k] : {std::array<std::int64_t, 3>{3072, 2304, 768}, std::array<std::int64_t, 3>{3072, 768, 768},
                                   std::array<std::int64_t, 3>{3072, 768, 3072}, std::array<std::int64_t, 3>{3072, 3072, 768}}) {
        const at::Tensor a = at::randn({m, k}, cuda).to(at::kBFloat16);
        const at::Tensor b = at::randn({nn, k}, cuda).to(at::kBFloat16);
        at::Tensor out = at::empty({m, nn}, cuda.dtype(at::kBFloat16));
        kernels::GemmCall s = g;
        s.a = kernel_tensor(a);
        s.b = kernel_tensor(b);
        s.d = kernel_tensor(out);
        const std::string shape = std::to_string(m) + "x" + std::to_string(nn) + "x" + std::to_string(k);
        const double shape_flops = 2.0 * static_cast<double>(m * nn * k);
        kernels::gemm_forget_plans();
        kernels::set_gemm_autotune(false);
        const double first_ms = time_ms([&] { run_gemm(s); });
        kernels::gemm_forget_plans();
        kernels::set_gemm_autotune(true);
        const double tuned_ms = time_ms([&] { run_gemm(s); });
        rows.push_back({"gemm bf16, heuristic's first", shape, first_ms, shape_flops / (first_ms * 1e9), "TFLOP/s", 0});
        rows.push_back({"gemm bf16, autotuned", shape, tuned_ms, shape_flops / (tuned_ms * 1e9), "TFLOP/s",
                        0.97 * shape_flops / (first_ms * 1e9)});
    }
    kernels::gemm_forget_plans();
    kernels::set_gemm_autotune(autotune);
    try {
        bias_gradient_levers(g, rows);
    } catch (const std::exception& e) {  // an epilogue cuBLASLt refuses: the other rows still count
        std::printf("bias-gradient levers not timed: %s\n", e.what());
    }
    try {
        stacked_cast_levers(rows);
        layer_norm_handover_levers(rows);
    } catch (const std::exception& e) {
        std::printf("hand-over levers not timed: %s\n", e.what());
    }
    try {
        current_scale_levers(rows, bandwidth_target);
    } catch (const std::exception& e) {
        std::printf("current-scaling levers not timed: %s\n", e.what());
    }
    try {
        attention_levers(rows);
    } catch (const std::exception& e) {
        std::printf("attention not timed: %s\n", e.what());
    }
    const double bf16_ms = time_ms([&] { run_gemm(g); });
    const double bf16_tflops = flops / (bf16_ms * 1e9);
    rows.push_back({"gemm bf16", "4096x4096x4096", bf16_ms, bf16_tflops, "TFLOP/s", 0});
    const at::Tensor a8 = a16.clamp(-448, 448).to(at::kFloat8_e4m3fn);
    const at::Tensor b8 = b16.clamp(-448, 448).to(at::kFloat8_e4m3fn);
    const at::Tensor one = at::ones({1}, cuda);
    g.a = kernel_tensor(a8);
    g.a.scale_inv = one.data_ptr<float>();
    g.b = kernel_tensor(b8);
    g.b.scale_inv = one.data_ptr<float>();
    g.options.accumulation = kernels::Accumulation::Fast;
    const double fp8_ms = time_ms([&] { run_gemm(g); });
    rows.push_back({"gemm fp8 E4M3 (fast accumulation)", "4096x4096x4096", fp8_ms, flops / (fp8_ms * 1e9), "TFLOP/s", 1.3 * bf16_tflops});

    std::printf("%-46s %-16s %10s %12s %12s  %s\n", "kernel", "shape", "ms", "achieved", "target", "");
    nlohmann::json report = nlohmann::json::array();
    for (const Row& row : rows) {
        const bool met = row.target == 0 || row.value >= row.target;
        std::printf("%-46s %-16s %10.4f %8.1f %-7s %8.1f %s\n", row.what.c_str(), row.shape.c_str(), row.ms, row.value, row.unit.c_str(),
                    row.target, row.target == 0 ? "" : (met ? "met" : "MISSED"));
        report.push_back({{"kernel", row.what}, {"shape", row.shape}, {"ms", row.ms}, {"value", row.value}, {"unit", row.unit},
                          {"target", row.target}, {"met", met}});
    }
    if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";
    return 0;
}
