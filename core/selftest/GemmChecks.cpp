#ifdef TEWB_FUSED_CUDA

// cuBLASLt's GEMMs as the kernels call them: plain, FP8 (tensor-wide and block scales) and with epilogues, against LibTorch.

#include "core/selftest/SelfTestChecks.h"

#include <vector>

#include "core/fp8/BlockScaling.h"
#include "core/fp8/Fp8State.h"
#include "core/modules/ops/KernelTypes.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/gemm.h"

namespace tewb::selftest {

namespace {

// d [m, n] = a [m, k] · b [n, k]ᵀ in float32 or bfloat16, each tensor's dtype and shape its own (an operand stored
// transposed, [k, m] or [k, n], says so in the call's options).
kernels::GemmCall gemm_call(const at::Tensor& a, const at::Tensor& b, const at::Tensor& d) {
    kernels::GemmCall g;
    g.a = kernel_tensor(a);
    g.b = kernel_tensor(b);
    g.d = kernel_tensor(d);
    return g;
}

// The kernels' GEMM with a workspace from LibTorch's allocator, as FusedOps gives it.
void run_gemm(kernels::GemmCall g) {
    const at::Tensor workspace =
        at::empty({static_cast<std::int64_t>(kernels::gemm_workspace_bytes(at::cuda::current_device()))}, cuda().dtype(at::kByte));
    g.workspace = workspace_ref(workspace);
    kernels::gemm(g.a, g.b, g.d, g.epilogue, g.options, g.workspace, kernel_stream());
}

// An FP8 operand as the GEMM takes it: `bytes` [rows, cols] read as `dtype`, with its scale_inv in `mode`'s layout.
kernels::Tensor fp8_operand(const at::Tensor& bytes, kernels::DType dtype, const at::Tensor& scale_inv,
                            kernels::ScaleMode mode = kernels::ScaleMode::Tensor) {
    kernels::Tensor t =
        kernels::input(bytes.data_ptr(), dtype, static_cast<std::size_t>(bytes.size(0)), static_cast<std::size_t>(bytes.size(1)));
    t.scale_inv = scale_inv.data_ptr<float>();
    t.scale_mode = mode;
    return t;
}

std::string gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// A [rows, cols] matrix that starts `offset_bytes` past a 256-byte aligned allocation: the pointer
// alignment cuBLASLt sees is then exactly that offset's.
at::Tensor offset_matrix(const at::Tensor& values, std::int64_t offset_bytes) {
    const std::int64_t skip = offset_bytes / values.element_size();
    at::Tensor storage = at::empty({values.numel() + skip}, values.options());
    at::Tensor view = storage.narrow(0, skip, values.numel()).view(values.sizes());
    view.copy_(values);
    return view;
}

// FP8 operands of a GEMM: a [m, k] in a_type and b [n, k] in E4M3, with their scales and the float32
// product of the dequantized values (the reference).
struct Fp8Operands {
    at::Tensor a8, b8, a_inv, b_inv, product;
};

Fp8Operands fp8_operands(std::int64_t m, std::int64_t n, std::int64_t k, kernels::Fp8Type a_type) {
    const at::Tensor a_hp = at::randn({m, k}, cuda());
    const at::Tensor b_hp = at::randn({n, k}, cuda()) * 0.02;
    const float a_scale = kernels::fp8_max(a_type) / a_hp.abs().max().item<float>();
    const float b_scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / b_hp.abs().max().item<float>();
    Fp8Operands o;
    o.a8 = reference_cast(a_hp, a_scale, a_type);
    o.b8 = reference_cast(b_hp, b_scale, kernels::Fp8Type::E4M3);
    o.a_inv = scalar(1.0f / a_scale);
    o.b_inv = scalar(1.0f / b_scale);
    o.product = at::mm(dequantize(o.a8, a_type, a_scale), dequantize(o.b8, kernels::Fp8Type::E4M3, b_scale).t());
    return o;
}

// The FP8 operands' GEMM into d (its dtype, shape and, for an FP8 d, scale and amax its own).
kernels::GemmCall fp8_call(const Fp8Operands& o, kernels::Fp8Type a_type, const kernels::Tensor& d) {
    kernels::GemmCall g;
    g.a = fp8_operand(o.a8, kernel_dtype(a_type), o.a_inv);
    g.b = fp8_operand(o.b8, kernels::DType::Float8E4M3, o.b_inv);
    g.d = d;
    return g;
}

// d [m, n] = a · bᵀ in bfloat16 operands, each as stored (`transposed`: a [k, m] / b [k, n]).
kernels::GemmCall bf16_call(const at::Tensor& a, bool a_transposed, const at::Tensor& b, bool b_transposed, const at::Tensor& d) {
    kernels::GemmCall g = gemm_call(a, b, d);
    g.options.a_transposed = a_transposed;
    g.options.b_transposed = b_transposed;
    return g;
}

// The MLP backward's GEMMs at the seed shape: fc2's dgrad reading the weight as stored (b stored transposed)
// followed by the GELU backward kernel with fc1's bias gradient, as the TE modules run it (FusedOps::gemm_dgelu);
// and the cuBLASLt epilogues that would do the same work (fc2's dgrad with DGELU_BGRAD; a wgrad with both
// operands as stored, a float32 output and BGRADB's bias gradient), which kernel-bench times against it. fc1's
// GELU_AUX_BIAS is checked above.
void module_epilogues(Checks& check) {
    const std::int64_t tokens = 3072, hidden = 768, ffn = 3072;
    const at::Tensor x = (at::randn({tokens, hidden}, cuda())).to(at::kBFloat16);
    const at::Tensor w1 = (at::randn({ffn, hidden}, cuda()) * 0.02).to(at::kBFloat16);
    const at::Tensor b1 = at::randn({ffn}, cuda()).to(at::kBFloat16);
    const at::Tensor w2 = (at::randn({hidden, ffn}, cuda()) * 0.02).to(at::kBFloat16);
    const at::Tensor dy = (at::randn({tokens, hidden}, cuda()) * 0.01).to(at::kBFloat16);
    const at::Tensor pre = (at::mm(x.to(at::kFloat), w1.to(at::kFloat).t()) + b1.to(at::kFloat)).to(at::kBFloat16);
    check.attempt("gemm DGELU_BGRAD", gemm_shape(tokens, ffn, hidden), "bfloat16, b = the weight as stored", [&] {
        at::Tensor d = poisoned({tokens, ffn}, at::kBFloat16);
        at::Tensor dbias = poisoned({ffn}, at::kBFloat16);
        kernels::GemmCall g = bf16_call(dy, false, w2, true, d);  // w2 [hidden, ffn] = w2ᵀ stored transposed
        g.options.epilogue = kernels::Epilogue::DGeluBGrad;
        g.epilogue.aux = kernel_tensor(pre);  // [tokens, ffn], row stride ffn
        g.epilogue.bias_grad = kernel_tensor(dbias);
        run_gemm(g);
        const at::Tensor want = at::gelu_backward(at::mm(dy.to(at::kFloat), w2.to(at::kFloat)), pre.to(at::kFloat), "tanh");
        const std::string shape = gemm_shape(tokens, ffn, hidden);
        check.relative("gemm DGELU_BGRAD", "d", shape, "bfloat16, b = the weight as stored", d, want, kBf16Bound);
        check.relative("gemm DGELU_BGRAD", "bias_grad", shape, "bfloat16, b = the weight as stored", dbias, want.sum(0), kBf16Bound);
    });
    check.attempt("gemm + gelu_backward", gemm_shape(tokens, ffn, hidden), "bfloat16, the modules' dgelu", [&] {
        at::Tensor d_act = poisoned({tokens, ffn}, at::kBFloat16);
        run_gemm(bf16_call(dy, false, w2, true, d_act));
        at::Tensor dgelu = poisoned({tokens, ffn}, at::kBFloat16);
        at::Tensor dbias = poisoned({ffn}, at::kFloat);
        const std::size_t bytes = kernels::gelu_backward_workspace_bytes(static_cast<std::size_t>(tokens), static_cast<std::size_t>(ffn));
        const at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, cuda().dtype(at::kByte));
        kernels::gelu_backward(kernel_tensor(d_act), kernel_tensor(pre), kernel_tensor(dgelu), kernels::Tensor{}, kernel_tensor(dbias),
                               workspace_ref(workspace), kernel_stream());
        const at::Tensor want = at::gelu_backward(at::mm(dy.to(at::kFloat), w2.to(at::kFloat)), pre.to(at::kFloat), "tanh");
        const std::string shape = gemm_shape(tokens, ffn, hidden);
        check.relative("gemm + gelu_backward", "d", shape, "bfloat16, the modules' dgelu", dgelu, want, kBf16Bound);
        check.relative("gemm + gelu_backward", "bias_grad", shape, "bfloat16, the modules' dgelu", dbias, want.sum(0), kBf16Bound);
    });
    check.attempt("gemm BGRADB", gemm_shape(hidden, ffn, tokens), "bfloat16 -> float32, a and b as stored (wgrad)", [&] {
        const at::Tensor act = (at::randn({tokens, ffn}, cuda())).to(at::kBFloat16);
        at::Tensor dw = poisoned({hidden, ffn}, at::kFloat);
        at::Tensor db = poisoned({hidden}, at::kFloat);
        kernels::GemmCall g = bf16_call(dy, true, act, true, dw);  // dyᵀ and actᵀ stored as dy and act
        g.options.epilogue = kernels::Epilogue::BGradB;
        g.epilogue.bias_grad = kernel_tensor(db);
        run_gemm(g);
        const std::string shape = gemm_shape(hidden, ffn, tokens);
        const std::string dtype = "bfloat16 -> float32, a and b as stored (wgrad)";
        check.relative("gemm BGRADB", "d", shape, dtype, dw, at::mm(dy.to(at::kFloat).t(), act.to(at::kFloat)), kBf16Bound);
        check.relative("gemm BGRADB", "bias_grad", shape, dtype, db, dy.to(at::kFloat).sum(0), kBf16Bound);
    });
}

}  // namespace

void plain_gemms(Checks& check) {
    using Triple = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
    for (const auto& [m, n, k] : {Triple{3072, 768, 768}, Triple{3072, 3072, 768}, Triple{3072, 768, 3072}, Triple{97, 1000, 33},
                                  Triple{1, 7, 13}}) {
        check.attempt("gemm", gemm_shape(m, n, k), "bfloat16", [&, m = m, n = n, k = k] {
            const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
            const at::Tensor b = at::randn({n, k}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({m, n}, at::kBFloat16);
            run_gemm(gemm_call(a, b, d));
            check.relative("gemm", "d", gemm_shape(m, n, k), "bfloat16", d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
    // Operands stored transposed (a backward's dy and x as they are).
    for (const auto& [ta, tb] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
        const std::string dtype = std::string("bfloat16, ") + (ta ? "a" : "") + (ta && tb ? " and " : "") + (tb ? "b" : "") +
                                  " stored transposed";
        check.attempt("gemm", "3072x768x768", dtype, [&, ta = ta, tb = tb] {
            const at::Tensor a = at::randn({3072, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor b = at::randn({768, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor a_stored = ta ? a.t().contiguous() : a;
            const at::Tensor b_stored = tb ? b.t().contiguous() : b;
            at::Tensor d = poisoned({3072, 768}, at::kBFloat16);
            run_gemm(bf16_call(a_stored, ta, b_stored, tb, d));
            check.relative("gemm", "d", "3072x768x768", dtype, d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
    // Accumulated onto d itself (c = d, a residual added in the GEMM) on its plan's first call, when a plan is timed
    // on its candidates (gemm.h, set_gemm_autotune): the product is added once, never once per timed run. And the
    // same call onto a separate c, which may be timed, gives the same sum.
    for (const bool in_place : {true, false}) {
        const std::string dtype = std::string("bfloat16 -> float32, accumulated onto ") + (in_place ? "d itself (c = d)" : "a separate c");
        check.attempt("gemm", "3072x2304x768", dtype, [&] {
            const at::Tensor a = at::randn({3072, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor b = at::randn({2304, 768}, cuda()).to(at::kBFloat16);
            const at::Tensor residual = at::randn({3072, 2304}, cuda());
            at::Tensor d = in_place ? residual.clone() : poisoned({3072, 2304}, at::kFloat);
            kernels::GemmCall g = gemm_call(a, b, d);  // d float32
            g.epilogue.c = kernel_tensor(in_place ? d : residual);
            run_gemm(g);
            check.relative("gemm", "d", "3072x2304x768", dtype, d, residual + at::mm(a.to(at::kFloat), b.to(at::kFloat).t()),
                           kBf16Bound);
        });
    }
    // Operands and output at 16-byte (not 256-byte) aligned addresses: the plan must fit the pointers.
    for (const std::int64_t offset : {16, 32, 48}) {
        const std::string dtype = "bfloat16, pointers at +" + std::to_string(offset) + " bytes";
        check.attempt("gemm", "3072x768x768", dtype, [&] {
            const at::Tensor a = offset_matrix(at::randn({3072, 768}, cuda()).to(at::kBFloat16), offset);
            const at::Tensor b = offset_matrix(at::randn({768, 768}, cuda()).to(at::kBFloat16), offset);
            at::Tensor d = offset_matrix(poisoned({3072, 768}, at::kBFloat16), offset);
            run_gemm(gemm_call(a, b, d));
            check.relative("gemm", "d", "3072x768x768", dtype, d, at::mm(a.to(at::kFloat), b.to(at::kFloat).t()), kBf16Bound);
        });
    }
}

void fp8_gemms(Checks& check) {
    // Forward (E4M3 x E4M3, fast accumulation) and dgrad (E5M2 x E4M3, split), BF16 output with a bias.
    for (const bool backward : {false, true}) {
        const auto a_type = backward ? kernels::Fp8Type::E5M2 : kernels::Fp8Type::E4M3;
        const std::string dtype = backward ? "E5M2 x E4M3 -> bfloat16, bias" : "E4M3 x E4M3 -> bfloat16, bias";
        check.attempt("gemm", "3072x768x768", dtype, [&] {
            const Fp8Operands o = fp8_operands(3072, 768, 768, a_type);
            const at::Tensor bias = at::randn({768}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({3072, 768}, at::kBFloat16);
            kernels::GemmCall g = fp8_call(o, a_type, kernel_tensor(d));
            g.options.epilogue = kernels::Epilogue::Bias;
            g.epilogue.bias = kernel_tensor(bias);
            g.options.accumulation = backward ? kernels::Accumulation::Split : kernels::Accumulation::Fast;
            run_gemm(g);
            check.relative("gemm", backward ? "d (split accumulation)" : "d (fast accumulation)", "3072x768x768", dtype, d,
                           o.product + bias.to(at::kFloat), kBf16Bound);
        });
    }
    // The wgrad path: dyᵀ (E5M2) x xᵀ (E4M3) over the tokens, float32 output, split accumulation.
    check.attempt("gemm", "768x768x3072", "E5M2 x E4M3 -> float32", [&] {
        const Fp8Operands o = fp8_operands(768, 768, 3072, kernels::Fp8Type::E5M2);
        at::Tensor d = poisoned({768, 768}, at::kFloat);
        run_gemm(fp8_call(o, kernels::Fp8Type::E5M2, kernel_tensor(d)));  // d float32
        check.relative("gemm", "d (wgrad)", "768x768x3072", "E5M2 x E4M3 -> float32", d, o.product, kFloat32Bound * 100);
    });
    // Float32 output with a bias (BF16, the only bias type cuBLASLt's FP8 kernels take).
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> float32, bias", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        const at::Tensor bias = at::randn({768}, cuda()).to(at::kBFloat16);
        at::Tensor d = poisoned({3072, 768}, at::kFloat);
        kernels::GemmCall g = fp8_call(o, kernels::Fp8Type::E4M3, kernel_tensor(d));  // d float32
        g.options.epilogue = kernels::Epilogue::Bias;
        g.epilogue.bias = kernel_tensor(bias);
        run_gemm(g);
        check.relative("gemm", "d", "3072x768x768", "E4M3 x E4M3 -> float32, bias", d, o.product + bias.to(at::kFloat),
                       kFloat32Bound * 100);
    });
    // FP8 output: D scaled and cast to E4M3 in the epilogue, with max |D| before scaling.
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> E4M3", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        const float want_amax = o.product.abs().max().item<float>();
        const float d_scale = kernels::fp8_max(kernels::Fp8Type::E4M3) / (want_amax * 1.25f);
        const at::Tensor d_scale_t = scalar(d_scale);
        at::Tensor d = poisoned_fp8({3072, 768});
        at::Tensor amax = at::zeros({1}, cuda().dtype(at::kFloat));
        run_gemm(fp8_call(o, kernels::Fp8Type::E4M3, fp8_out(d, at::Tensor(), d_scale_t, amax, kernels::Fp8Type::E4M3)));
        check.relative("gemm", "FP8 d", "3072x768x768", "E4M3 x E4M3 -> E4M3", dequantize(d, kernels::Fp8Type::E4M3, d_scale),
                       o.product, kE4m3Bound);
        check.amax("gemm", "3072x768x768", "E4M3 x E4M3 -> E4M3", amax, want_amax, kComputedAmaxBound * 10);
    });
    // FP8 operands at 16-byte offsets.
    check.attempt("gemm", "3072x768x768", "E4M3 x E4M3 -> bfloat16, pointers at +16 bytes", [&] {
        const Fp8Operands o = fp8_operands(3072, 768, 768, kernels::Fp8Type::E4M3);
        Fp8Operands shifted = o;
        shifted.a8 = offset_matrix(o.a8, 16);
        shifted.b8 = offset_matrix(o.b8, 16);
        at::Tensor d = offset_matrix(poisoned({3072, 768}, at::kBFloat16), 16);
        run_gemm(fp8_call(shifted, kernels::Fp8Type::E4M3, kernel_tensor(d)));
        check.relative("gemm", "d", "3072x768x768", "E4M3 x E4M3 -> bfloat16, pointers at +16 bytes", d, o.product, kBf16Bound);
    });
}

// Float8BlockScaling's GEMMs through cuBLASLt's block modes (Hopper), scales in its layout
// (block_scales_for_gemm), against core's emulation of the same quantized operands.
void block_gemms(Checks& check) {
    check.attempt("gemm (block-scaled)", "probe", "E4M3 1x128 x 128x128", [&] {
        if (!kernels::block_gemm_supported(at::cuda::current_device())) {
            throw std::runtime_error("cuBLASLt found no block-scaled FP8 GEMM on this compute capability 9.x GPU");
        }
    });
    struct Case {
        std::int64_t m, n, k;
        BlockShape a_block, b_block;
        at::ScalarType out;
        bool bias;
        const char* what;
    };
    const Case cases[] = {
        {3072, 2304, 768, kActivationBlock, kWeightBlock, at::kBFloat16, true, "E4M3 1x128 x 128x128 -> bfloat16, bias (forward)"},
        {3072, 768, 3072, kActivationBlock, kWeightBlock, at::kBFloat16, false, "E4M3 1x128 x 128x128 -> bfloat16 (dgrad)"},
        {768, 3072, 3072, kActivationBlock, kActivationBlock, at::kFloat, false, "E4M3 1x128 x 1x128 -> float32 (wgrad)"},
        // m and n multiples of 16 (the rule table), n = 400 ends in a partial 128-row weight tile
        {208, 400, 384, kActivationBlock, kWeightBlock, at::kFloat, false, "E4M3 1x128 x 128x128 -> float32, partial tiles"},
    };
    for (const Case& c : cases) {
        const std::string shape = gemm_shape(c.m, c.n, c.k);
        check.attempt("gemm (block-scaled)", shape, c.what, [&] {
            const at::Tensor a_hp = at::randn({c.m, c.k}, cuda()) * 4;
            at::Tensor b_hp = at::randn({c.n, c.k}, cuda()) * 0.02;
            b_hp.narrow(0, 0, 1).mul_(100);  // one tile far larger than the rest: per-block scales matter
            const BlockQuantized a = block_quantize(a_hp, c.a_block, Fp8Dtype::E4M3);
            const BlockQuantized b = block_quantize(b_hp, c.b_block, Fp8Dtype::E4M3);
            const at::Tensor a_scales = block_scales_for_gemm(a.scale_inv, c.a_block);
            const at::Tensor b_scales = block_scales_for_gemm(b.scale_inv, c.b_block);
            const auto mode = [](BlockShape block) {
                return block == kActivationBlock ? kernels::ScaleMode::Block1x128 : kernels::ScaleMode::Block128x128;
            };
            const at::Tensor bias = at::randn({c.n}, cuda()).to(at::kBFloat16);
            at::Tensor d = poisoned({c.m, c.n}, c.out);
            kernels::GemmCall g;
            g.a = fp8_operand(a.data, kernels::DType::Float8E4M3, a_scales, mode(c.a_block));  // [m, k]
            g.b = fp8_operand(b.data, kernels::DType::Float8E4M3, b_scales, mode(c.b_block));  // [n, k]
            g.d = kernel_tensor(d);
            if (c.bias) {
                g.options.epilogue = kernels::Epilogue::Bias;
                g.epilogue.bias = kernel_tensor(bias);
            }
            run_gemm(g);
            at::Tensor want = block_gemm_reference(a, b);
            if (c.bias) want = want + bias.to(at::kFloat);
            check.relative("gemm (block-scaled)", "d", shape, c.what, d, want, c.out == at::kFloat ? kFloat32Bound * 100 : kBf16Bound);
        });
    }
}

// Epilogues: GELU with its aux output, DGELU with the bias gradient, BGRADB.
void gemm_epilogues(Checks& check) {
    const std::int64_t m = 256, n = 384, k = 128;
    const std::string shape = gemm_shape(m, n, k);
    const at::Tensor a = at::randn({m, k}, cuda()).to(at::kBFloat16);
    const at::Tensor b = (at::randn({n, k}, cuda()) * 0.1).to(at::kBFloat16);
    const at::Tensor bias = at::randn({n}, cuda()).to(at::kBFloat16);
    const at::Tensor product = at::mm(a.to(at::kFloat), b.to(at::kFloat).t());
    const at::Tensor pre = product + bias.to(at::kFloat);
    at::Tensor aux = poisoned({m, n}, at::kBFloat16);
    bool aux_written = false;
    check.attempt("gemm GELU_AUX_BIAS", shape, "bfloat16", [&] {
        at::Tensor d = poisoned({m, n}, at::kBFloat16);
        kernels::GemmCall g = gemm_call(a, b, d);
        g.options.epilogue = kernels::Epilogue::GeluAuxBias;
        g.epilogue.bias = kernel_tensor(bias);
        g.epilogue.aux = kernel_tensor(aux);  // [m, n], row stride n
        run_gemm(g);
        aux_written = true;
        check.relative("gemm GELU_AUX_BIAS", "aux", shape, "bfloat16", aux, pre, kBf16Bound);
        check.relative("gemm GELU_AUX_BIAS", "d", shape, "bfloat16", d, at::gelu(pre, "tanh"), kBf16Bound);
    });
    if (aux_written) {
        check.attempt("gemm DGELU_BGRAD", shape, "bfloat16", [&] {
            at::Tensor dgelu = poisoned({m, n}, at::kBFloat16);
            at::Tensor dbias = poisoned({n}, at::kBFloat16);
            kernels::GemmCall g = gemm_call(a, b, dgelu);
            g.options.epilogue = kernels::Epilogue::DGeluBGrad;
            g.epilogue.aux = kernel_tensor(aux);  // [m, n], row stride n
            g.epilogue.bias_grad = kernel_tensor(dbias);
            run_gemm(g);
            const at::Tensor want_dgelu = at::gelu_backward(product, aux.to(at::kFloat), "tanh");
            check.relative("gemm DGELU_BGRAD", "d", shape, "bfloat16", dgelu, want_dgelu, kBf16Bound);
            check.relative("gemm DGELU_BGRAD", "bias_grad", shape, "bfloat16", dbias, want_dgelu.sum(0), kBf16Bound);
        });
    }
    check.attempt("gemm BGRADB", shape, "bfloat16, a stored transposed", [&] {
        at::Tensor plain = poisoned({m, n}, at::kBFloat16);
        at::Tensor row_sums = poisoned({m}, at::kBFloat16);
        const at::Tensor a_t = a.t().contiguous();  // the wgrad's dy as it is: [tokens, out]
        kernels::GemmCall g = bf16_call(a_t, true, b, false, plain);
        g.options.epilogue = kernels::Epilogue::BGradB;
        g.epilogue.bias_grad = kernel_tensor(row_sums);
        run_gemm(g);
        check.relative("gemm BGRADB", "d", shape, "bfloat16, a stored transposed", plain, product, kBf16Bound);
        check.relative("gemm BGRADB", "bias_grad", shape, "bfloat16, a stored transposed", row_sums, a.to(at::kFloat).sum(1),
                       kBf16Bound);
    });
    module_epilogues(check);
}

// The recipe kernel (Fp8Context::update on CUDA) against the host rule, bit for bit.

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
