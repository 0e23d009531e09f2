// The fused ops' GEMMs (FusedOpsImpl.h): cuBLASLt on a GPU, the host GEMM on the CPU, as the rule table
// (tewb_kernels/gemm_rules.h) allows; a refusal is a counted fallback naming the rule.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include "core/ledger/GemmJournal.h"
#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ParameterCopies.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/gemm_rules.h"

#ifdef TEWB_FUSED_CUDA
#include <map>
#include <utility>
#endif

namespace tewb::fused_ops {

namespace {

// A GEMM operand as cuBLASLt (and the host GEMM) can read it without a copy: row-major as it is, or the
// transposed view of a row-major matrix (the backward's weightᵀ), read as stored.
struct Stored {
    bool fits = false;
    bool transposed = false;
};

Stored stored_layout(const at::Tensor& t) {
    if (t.dim() != 2 || t.numel() == 0) return {};
    if (t.is_contiguous()) return {true, false};
    if (t.t().is_contiguous()) return {true, true};
    return {};
}

#ifdef TEWB_FUSED_CUDA
// cuBLASLt's workspace: one per (device, stream), from LibTorch's caching allocator, so that it shows in
// the peak-memory figures and two streams never share one. Kept for the process, like the streams.
const at::Tensor& gemm_workspace(const at::Tensor& like) {
    static std::mutex mutex;
    static std::map<std::pair<int, cudaStream_t>, at::Tensor> workspaces;
    const int device = like.get_device();
    const cudaStream_t stream = stream_of(like);
    const std::lock_guard<std::mutex> lock(mutex);
    at::Tensor& w = workspaces[{device, stream}];
    if (!w.defined()) {
        w = at::empty({static_cast<std::int64_t>(kernels::gemm_workspace_bytes(device))}, like.options().dtype(at::kByte));
    }
    return w;
}
#endif

// Epilogues cuBLASLt refused (the rule table or its heuristic) stay off for the process, with one line
// on stderr; the step is then composed of separate kernels.
std::mutex& refused_mutex() {
    static std::mutex m;
    return m;
}

std::set<kernels::Epilogue>& refused() {
    static std::set<kernels::Epilogue> s;
    return s;
}

const char* scale_mode_name(kernels::ScaleMode m) {
    switch (m) {
        case kernels::ScaleMode::Tensor: return "tensor";
        case kernels::ScaleMode::Block1x128: return "1x128";
        case kernels::ScaleMode::Block128x128: return "128x128";
        // Not issued today: every MXFP8/NVFP4 GEMM is emulated (TeOps::mx_gemm), none goes through cuBLASLt, so
        // no journal holds these and the reader refuses them until a native microscaled GEMM writes them.
        case kernels::ScaleMode::Mxfp8Block32: return "mxfp8-1x32";
        case kernels::ScaleMode::Nvfp4Block16: return "nvfp4-1x16";
    }
    return "unknown";
}

// The call as the GEMM journal keeps it: everything but the addresses, and each pointer's alignment.
GemmJournalEntry journal_entry(const char* op, const kernels::GemmCall& g) {
    GemmJournalEntry e;
    e.op = op;
    e.m = g.m();
    e.n = g.n();
    e.k = g.k();
    e.a_type = kernels::to_string(g.a.dtype).data();
    e.b_type = kernels::to_string(g.b.dtype).data();
    e.d_type = kernels::to_string(g.d.dtype).data();
    // Without a bias the field says bfloat16, as journals always have (it is read only with a bias epilogue).
    e.bias_type = kernels::to_string(g.epilogue.bias.data != nullptr ? g.epilogue.bias.dtype : kernels::DType::BFloat16).data();
    e.a_transposed = g.options.a_transposed;
    e.b_transposed = g.options.b_transposed;
    const bool fp8 = kernels::is_fp8(g.a.dtype);
    if (fp8) {
        e.a_scales = scale_mode_name(g.a.scale_mode);
        e.b_scales = scale_mode_name(g.b.scale_mode);
    }
    e.epilogue = kernels::epilogue_name(g.options.epilogue);
    e.accumulation = g.options.accumulation == kernels::Accumulation::Fast ? "fast" : "split";
    e.aux_ld = g.epilogue.aux.data != nullptr ? g.epilogue.aux.stride() : 0;
    const kernels::GemmEpilogueTensors& x = g.epilogue;
    const std::pair<const char*, const void*> pointers[] = {{"a", g.a.data},
                                                            {"b", g.b.data},
                                                            {"d", g.d.data},
                                                            {"c", x.c.data},
                                                            {"bias", x.bias.data},
                                                            {"aux", x.aux.data},
                                                            {"bias_grad", x.bias_grad.data},
                                                            {"a.scale_inv", fp8 ? g.a.scale_inv : nullptr},
                                                            {"b.scale_inv", fp8 ? g.b.scale_inv : nullptr},
                                                            {"d_scale", kernels::is_fp8(g.d.dtype) ? g.d.scale : nullptr},
                                                            {"d_amax", g.d.amax}};
    for (const auto& [name, pointer] : pointers) {
        if (pointer != nullptr) e.alignment[name] = std::min(kernels::pointer_alignment(pointer), kJournalAlignment);
    }
    return e;
}

}  // namespace

bool FusedOps::epilogue_refused(kernels::Epilogue e) {
    const std::lock_guard<std::mutex> lock(refused_mutex());
    return refused().count(e) > 0;
}

void FusedOps::refuse_epilogue(kernels::Epilogue e) {
    const std::lock_guard<std::mutex> lock(refused_mutex());
    if (refused().insert(e).second) {
        std::fprintf(stderr, "te-workbench: cuBLASLt refused a GEMM epilogue (%d); it is computed separately from now on\n",
                     static_cast<int>(e));
    }
}

// d [m, n] = a · bᵀ with a [m, k] (or stored [k, m] when `a_transposed`) and b [n, k] (or [k, n]), each as stored.
kernels::GemmCall FusedOps::gemm_call(const at::Tensor& a, bool a_transposed, const at::Tensor& b, bool b_transposed,
                                      const at::Tensor& d) {
    kernels::GemmCall g;
    g.a = kernel_tensor(a);
    g.b = kernel_tensor(b);
    g.d = kernel_tensor(d);
    g.options.a_transposed = a_transposed;
    g.options.b_transposed = b_transposed;
    return g;
}

// The GEMM on this implementation's device; a refusal by the rule table (or cuBLASLt finding no
// algorithm) is returned as the reason, any other failure is an error.
Misfit FusedOps::run_gemm(const char* op, kernels::GemmCall g, const at::Tensor& where, Tensors reads, Tensors writes) const {
    if (gemm_journal_open()) note_gemm(journal_entry(op, g));
#ifdef TEWB_FUSED_CUDA
    if (!where.is_cpu()) {
        const at::Tensor& workspace = gemm_workspace(where);
        g.workspace = {workspace.data_ptr(), static_cast<std::size_t>(workspace.numel())};
    }
#endif
    try {
        TEWB_KERNEL(where, reads, writes, gemm, g.a, g.b, g.d, g.epilogue, g.options, g.workspace);
        return std::nullopt;
    } catch (const kernels::GemmRefused& refused) {
        // The call's description (types, shape, epilogue, every pointer's alignment) goes into the run record.
        return std::string("cuBLASLt refuses it (") + std::string(kernels::to_string(refused.rule())) +
               "): " + kernels::describe_gemm(g);
    }
}

// A GEMM's output added to `residual` in the GEMM: a row-major [m, n] float32 or bfloat16 matrix on this
// implementation's device.
Misfit FusedOps::residual_misfit(const at::Tensor& residual, std::int64_t m, std::int64_t n) const {
    if (Misfit misfit = matrix_misfit(residual, "the residual")) return misfit;
    if (residual.size(0) != m || residual.size(1) != n) return std::string("the residual's shape is not the GEMM output's");
    return std::nullopt;
}

template <typename Reference>
at::Tensor FusedOps::hp_gemm(const char* op, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                             at::ScalarType out_dtype, const at::Tensor& residual, Reference&& reference) const {
    const Stored a_layout = stored_layout(a);
    const Stored b_layout = stored_layout(b);
    Misfit m = device_misfit(a, "a");
    if (!m) m = device_misfit(b, "b");
    if (!m && (!a_layout.fits || !b_layout.fits)) m = "an operand is neither row-major nor a transposed row-major matrix";
    if (!m && (a.size(1) != b.size(1) || a.scalar_type() != b.scalar_type() || !float_or_bf16(a.scalar_type()))) {
        m = "the operands differ in k or dtype, or are not float32 or bfloat16";
    }
    if (!m && !(out_dtype == a.scalar_type() || out_dtype == at::kFloat))
        m = "the output dtype is neither the operands' nor float32";
    if (m) return fall_back(op, *m, reference);
    at::Tensor d = at::empty({a.size(0), b.size(0)}, a.options().dtype(out_dtype));
    // gemm_call takes the operands as stored.
    kernels::GemmCall g =
        gemm_call(a_layout.transposed ? a.t() : a, a_layout.transposed, b_layout.transposed ? b.t() : b, b_layout.transposed, d);
    at::Tensor bias_c;
    if (bias && bias->defined()) {
        bias_c = parameter_copy(*bias, out_dtype).contiguous();
        g.options.epilogue = kernels::Epilogue::Bias;
        g.epilogue.bias = kernel_tensor(bias_c);
    }
    if (residual.defined()) g.epilogue.c = kernel_tensor(residual);
    if (Misfit refused = run_gemm(op, g, a, Tensors{a, b, bias_c, residual}, Tensors{d})) return fall_back(op, *refused, reference);
    return d;
}

template <typename Reference>
at::Tensor FusedOps::fp8_gemm_into(const char* op, const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                   const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                                   Accumulation accumulation, const at::Tensor& residual, Reference&& reference) const {
    Misfit m = matrix_misfit_any_dtype(a, "a");
    if (!m) m = matrix_misfit_any_dtype(b, "b");
    if (!m && a.size(1) != b.size(1)) m = "a and b differ in k";
    if (!m && (device_misfit(a_scale_inv, "a's scale_inv") || device_misfit(b_scale_inv, "b's scale_inv"))) {
        m = "a scale_inv is not on the operands' device";
    }
    if (!m && !float_or_bf16(out_dtype)) m = "the output dtype is not float32 or bfloat16";
    if (m) return fall_back(op, *m, reference);
    const bool blocks = a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1;
    at::Tensor a_scales = a_scale_inv;
    at::Tensor b_scales = b_scale_inv;
    kernels::ScaleMode a_mode = kernels::ScaleMode::Tensor;
    kernels::ScaleMode b_mode = kernels::ScaleMode::Tensor;
    if (blocks) {
        if (kind_ == OpsKind::FusedCuda && !block_gemms_native()) {
            return fall_back(op, "this GPU has no block-scaled FP8 GEMM (cuBLASLt offers it on compute capability 9.x)",
                             reference);
        }
        // The block shape of each operand follows from its scales, as in the reference: one scale row per
        // data row is 1×128.
        const auto block_of = [](const at::Tensor& data, const at::Tensor& scales) {
            return scales.dim() == 2 && scales.size(0) == data.size(0) ? kActivationBlock : kWeightBlock;
        };
        const auto mode = [](BlockShape block) {
            return block == kActivationBlock ? kernels::ScaleMode::Block1x128 : kernels::ScaleMode::Block128x128;
        };
        const BlockShape a_block = block_of(a, a_scale_inv);
        const BlockShape b_block = block_of(b, b_scale_inv);
        if (a_scale_inv.dim() != 2 || b_scale_inv.dim() != 2) return fall_back(op, "block scales are not 2-D", reference);
        a_scales = block_scales_for_gemm(a_scale_inv, a_block);
        b_scales = block_scales_for_gemm(b_scale_inv, b_block);
        a_mode = mode(a_block);
        b_mode = mode(b_block);
    } else if (a_scale_inv.scalar_type() != at::kFloat || b_scale_inv.scalar_type() != at::kFloat) {
        return fall_back(op, "a scale_inv is not float32", reference);
    }
    at::Tensor d = at::empty({a.size(0), b.size(0)}, a.options().dtype(out_dtype));
    kernels::GemmCall g = gemm_call(a, false, b, false, d);
    g.a.scale_inv = a_scales.data_ptr<float>();
    g.a.scale_mode = a_mode;
    g.b.scale_inv = b_scales.data_ptr<float>();
    g.b.scale_mode = b_mode;
    g.options.accumulation =
        accumulation == Accumulation::Fast && !blocks ? kernels::Accumulation::Fast : kernels::Accumulation::Split;
    at::Tensor bias_c;
    if (bias && bias->defined()) {
        // cuBLASLt's FP8 kernels take the bias in bfloat16 only (the H200 refused float32).
        bias_c = parameter_copy(*bias, at::kBFloat16).contiguous();
        g.options.epilogue = kernels::Epilogue::Bias;
        g.epilogue.bias = kernel_tensor(bias_c);
    }
    if (residual.defined()) g.epilogue.c = kernel_tensor(residual);
    if (Misfit refused = run_gemm(op, g, a, Tensors{a, b, a_scales, b_scales, bias_c, residual}, Tensors{d})) {
        return fall_back(op, *refused, reference);
    }
    return d;
}

// Either operand may be the transposed view of a row-major matrix (the backward's weightᵀ): the GEMM
// reads it as stored. The bias goes into the epilogue.
at::Tensor FusedOps::gemm(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                          at::ScalarType out_dtype) const {
    return hp_gemm("gemm", a, b, bias, out_dtype, at::Tensor(), [&] { return reference_ops().gemm(a, b, bias, out_dtype); });
}

// The residual accumulated in the GEMM (C, beta = 1): the output in the residual's dtype, written once.
at::Tensor FusedOps::gemm_add(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                              at::ScalarType product_dtype, const at::Tensor& residual) const {
    const auto reference = [&] { return reference_ops().gemm_add(a, b, bias, product_dtype, residual); };
    if (Misfit m = residual_misfit(residual, a.size(0), b.size(0))) return fall_back("gemm_add", *m, reference);
    return hp_gemm("gemm_add", a, b, bias, residual.scalar_type(), residual, reference);
}

at::Tensor FusedOps::fp8_gemm(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                              const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                              Accumulation accumulation) const {
    return fp8_gemm_into("fp8_gemm", a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation, at::Tensor(),
                         [&] { return reference_ops().fp8_gemm(a, a_scale_inv, b, b_scale_inv, bias, out_dtype, accumulation); });
}

// Delayed (per-tensor) scaling accumulates the residual in the FP8 GEMM; block-scaled GEMMs add it separately
// (cuBLASLt's C with block scales is not used here: gemm_rules.h).
at::Tensor FusedOps::fp8_gemm_add(const at::Tensor& a, const at::Tensor& a_scale_inv, const at::Tensor& b,
                                  const at::Tensor& b_scale_inv, const std::optional<at::Tensor>& bias,
                                  at::ScalarType product_dtype, Accumulation accumulation, const at::Tensor& residual) const {
    if (a_scale_inv.numel() > 1 || b_scale_inv.numel() > 1) {
        return TeOps::fp8_gemm_add(a, a_scale_inv, b, b_scale_inv, bias, product_dtype, accumulation, residual);
    }
    const auto reference = [&] {
        return reference_ops().fp8_gemm_add(a, a_scale_inv, b, b_scale_inv, bias, product_dtype, accumulation, residual);
    };
    if (Misfit m = residual_misfit(residual, a.size(0), b.size(0))) return fall_back("fp8_gemm_add", *m, reference);
    return fp8_gemm_into("fp8_gemm_add", a, a_scale_inv, b, b_scale_inv, bias, residual.scalar_type(), accumulation, residual,
                         reference);
}

// fc1 with GELU in cuBLASLt's epilogue (GELU_AUX_BIAS): the activation and GELU's input in one GEMM.
GeluGemmResult FusedOps::gemm_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                   at::ScalarType out_dtype) const {
    const bool fits = hp_operands(x, weight) && out_dtype == x.scalar_type() && bias.defined() && weight.size(0) % 8 == 0;
    if (!fits) return TeOps::gemm_gelu(x, weight, bias, out_dtype);
    if (epilogue_refused(kernels::Epilogue::GeluAuxBias))
        return composed("gemm_gelu", [&] { return TeOps::gemm_gelu(x, weight, bias, out_dtype); });
    GeluGemmResult r;
    r.activation = at::empty({x.size(0), weight.size(0)}, x.options().dtype(out_dtype));
    r.pre = at::empty_like(r.activation);
    const at::Tensor bias_c = parameter_copy(bias, out_dtype).contiguous();
    kernels::GemmCall g = gemm_call(x, false, weight, false, r.activation);
    g.options.epilogue = kernels::Epilogue::GeluAuxBias;
    g.epilogue.bias = kernel_tensor(bias_c);
    g.epilogue.aux = kernel_tensor(r.pre);
    if (Misfit refused = run_gemm("gemm_gelu", g, x, Tensors{x, weight, bias_c}, Tensors{r.activation, r.pre})) {
        refuse_epilogue(g.options.epilogue);
        return composed("gemm_gelu", [&] { return TeOps::gemm_gelu(x, weight, bias, out_dtype); });
    }
    return r;
}

// fc2's dgrad as a plain GEMM (the weight read as stored, the operand "transposed"), then one pass of the GELU
// backward kernel: GELU's derivative and fc1's bias gradient (float32), summed as it writes. cuBLASLt's
// DGELU_BGRAD epilogue would do both in the GEMM but runs a helper kernel and a memset beside it (observed on an
// H200: 49 µs per call at the seed's shape, the slowest non-GEMM work of the step); kernel-bench times the two.
GradWithBias FusedOps::gemm_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                                  at::ScalarType out_dtype) const {
    const bool fits = !matrix_misfit(dy, "dy") && !matrix_misfit(pre, "pre") && weight.dim() == 2 &&
                      dy.size(1) == weight.size(0) && pre.size(0) == dy.size(0) && pre.size(1) == weight.size(1) &&
                      pre.scalar_type() == out_dtype && float_or_bf16(out_dtype);
    if (!fits) return TeOps::gemm_dgelu(dy, weight, pre, out_dtype);
    // The GEMM writes a new row-major [rows, ffn] in out_dtype, on its kernel or its fallback alike.
    const at::Tensor d_act = gemm(dy, weight.t(), std::nullopt, out_dtype);
    GradWithBias r;
    r.grad = at::empty_like(pre);
    r.bias_grad = at::empty({pre.size(1)}, pre.options().dtype(at::kFloat));
    const at::Tensor workspace = byte_buffer(kernels::gelu_backward_workspace_bytes(rows_of(pre), cols_of(pre)), pre);
    TEWB_KERNEL(pre, (Tensors{d_act, pre}), (Tensors{r.grad, r.bias_grad}), gelu_backward, kernel_tensor(d_act), kernel_tensor(pre),
                kernel_tensor(r.grad), kernels::Tensor{}, kernel_tensor(r.bias_grad), workspace_ref(workspace));
    return r;
}

// dyᵀ · x with both read as stored (rows × features: the operands "transposed") and, with a bias, dy's
// column sums in cuBLASLt's epilogue (BGRADB), in the output's dtype.
GradWithBias FusedOps::wgrad_gemm(const at::Tensor& dy, const at::Tensor& x, at::ScalarType out_dtype, bool with_bias) const {
    const bool fits = hp_operands(dy, x, /*same_k=*/false) && dy.size(0) == x.size(0) && float_or_bf16(out_dtype) &&
                      (out_dtype == at::kFloat || out_dtype == dy.scalar_type());
    if (!fits) return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias);
    if (with_bias && epilogue_refused(kernels::Epilogue::BGradB)) {
        return composed("wgrad_gemm", [&] { return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias); });
    }
    GradWithBias r;
    r.grad = at::empty({dy.size(1), x.size(1)}, dy.options().dtype(out_dtype));
    kernels::GemmCall g = gemm_call(dy, true, x, true, r.grad);
    if (with_bias) {
        r.bias_grad = at::empty({dy.size(1)}, dy.options().dtype(out_dtype));
        g.options.epilogue = kernels::Epilogue::BGradB;
        g.epilogue.bias_grad = kernel_tensor(r.bias_grad);
    }
    if (Misfit refused = run_gemm("wgrad_gemm", g, dy, Tensors{dy, x}, Tensors{r.grad, r.bias_grad})) {
        if (with_bias) refuse_epilogue(g.options.epilogue);
        return composed("wgrad_gemm", [&] { return TeOps::wgrad_gemm(dy, x, out_dtype, with_bias); });
    }
    return r;
}

}  // namespace tewb::fused_ops
