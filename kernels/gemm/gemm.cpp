// The cuBLASLt wrapper. Row-major d[m, n] = a[m, k]·b[n, k]ᵀ is, in cuBLASLt's column-major terms,
// Dᶜ[n, m] = op(A)·op(B) with A = b (stored k x n, transposed: "T") and B = a (stored k x m, "N"): the TN
// layout FP8 needs, with no copies. So cuBLASLt's A scale is b's and its B scale is a's, D's rows are our
// n (bias and DGELU's bias gradient have n entries) and its columns our m (BGRADB's bias gradient). An
// operand stored transposed flips its cuBLASLt op instead (b: "N", a: "T").
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <cublasLt.h>

#include "common/check.h"
#include "tewb_kernels/kernel_error.h"
#include "tewb_kernels/gemm.h"

namespace tewb::kernels {

namespace {

constexpr const char* kCall = "tewb::kernels::gemm";
constexpr std::size_t kAlignment = 16;
constexpr std::uint32_t kMaxAlignment = 256;  // the most cuBLASLt's alignment preferences distinguish

bool is_fp8(GemmType t) {
    return t == GemmType::E4M3 || t == GemmType::E5M2;
}

const char* name(GemmType t) {
    switch (t) {
        case GemmType::Float32: return "float32";
        case GemmType::BFloat16: return "bfloat16";
        case GemmType::E4M3: return "E4M3";
        case GemmType::E5M2: return "E5M2";
    }
    return "unknown";
}

cudaDataType_t cuda_type(GemmType t) {
    switch (t) {
        case GemmType::Float32: return CUDA_R_32F;
        case GemmType::BFloat16: return CUDA_R_16BF;
        case GemmType::E4M3: return CUDA_R_8F_E4M3;
        case GemmType::E5M2: return CUDA_R_8F_E5M2;
    }
    return CUDA_R_32F;
}

cublasLtEpilogue_t cublas_epilogue(Epilogue e) {
    switch (e) {
        case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
        case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
        case Epilogue::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        case Epilogue::DGeluBGrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
        case Epilogue::BGradB: return CUBLASLT_EPILOGUE_BGRADB;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % kAlignment == 0;
}

// The largest power of two (up to 256) that divides the address.
std::uint32_t alignment_of(const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t a = kMaxAlignment;
    while (a > 1 && address % a != 0) a /= 2;
    return a;
}

void need(bool ok, const std::string& what) {
    if (!ok) detail::fail(kCall, what);
}

bool is_block(ScaleMode m) {
    return m != ScaleMode::Tensor;
}

std::size_t round_up(std::size_t x, std::size_t to) {
    return (x + to - 1) / to * to;
}

std::int32_t cublas_scale_mode(ScaleMode m) {
    switch (m) {
        case ScaleMode::Tensor: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
        case ScaleMode::Block1x128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        case ScaleMode::Block128x128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    }
    return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

void check_block_args(const GemmArgs& g) {
    need(is_block(g.a.scale_mode) && is_block(g.b.scale_mode),
         "block-scaled and tensor-scaled operands do not mix; allowed: both operands per tensor, or both per block");
    need(!(g.a.scale_mode == ScaleMode::Block128x128 && g.b.scale_mode == ScaleMode::Block128x128),
         "128x128 x 128x128 block scales have no cuBLASLt kernel; allowed: 1x128 x 128x128, 128x128 x 1x128, 1x128 x 1x128");
    need(g.k % 128 == 0, "block-scaled FP8 GEMMs need k to be a multiple of 128 (got k = " + std::to_string(g.k) +
                             "); pad the operands or use per-tensor scaling");
    need(g.accumulation == Accumulation::Split, "block-scaled FP8 GEMMs accumulate split only; allowed: Accumulation::Split");
    need(!is_fp8(g.d_type), "block-scaled FP8 GEMMs write float32 or bfloat16; allowed d types: float32, bfloat16");
    need(g.epilogue == Epilogue::None || g.epilogue == Epilogue::Bias,
         "block-scaled FP8 GEMMs take no epilogue but bias; allowed: none, bias");
}

void check_args(const GemmArgs& g) {
    const bool fp8 = is_fp8(g.a.type) || is_fp8(g.b.type);
    need(g.k > 0, "k = 0; allowed: 1 or more");
    need(g.m <= INT32_MAX && g.n <= INT32_MAX && g.k <= INT32_MAX, "m, n and k must each fit in 32 bits");
    need(is_fp8(g.a.type) == is_fp8(g.b.type) && (fp8 || g.a.type == g.b.type),
         std::string("operand types ") + name(g.a.type) + " and " + name(g.b.type) +
             " do not mix; allowed: both float32, both bfloat16, or both FP8");
    need(!(g.a.type == GemmType::E5M2 && g.b.type == GemmType::E5M2), "E5M2 x E5M2 has no FP8 GEMM; allowed: E4M3 x E4M3, E4M3 x E5M2");
    need(!is_fp8(g.d_type) || fp8, "an FP8 output needs FP8 operands");
    need(g.d_type != GemmType::E5M2 || g.a.type == GemmType::E5M2 || g.b.type == GemmType::E5M2,
         "E4M3 x E4M3 has no E5M2 output in cuBLASLt; allowed for E4M3 x E4M3: E4M3, bfloat16 or float32 output");
    need(!(fp8 && (g.a.transposed || g.b.transposed)),
         "FP8 operands must be K-contiguous (transposed = false); pass the FP8 transposed copy instead");
    need(fp8 || (!is_block(g.a.scale_mode) && !is_block(g.b.scale_mode)),
         "block scale modes apply to FP8 operands only; allowed for float32 and bfloat16: ScaleMode::Tensor");
    if (fp8 && (is_block(g.a.scale_mode) || is_block(g.b.scale_mode))) check_block_args(g);
    if (fp8) {
        need(g.m % 16 == 0 && g.n % 16 == 0 && g.k % 16 == 0,
             "FP8 GEMMs need m, n and k to be multiples of 16 (got m = " + std::to_string(g.m) + ", n = " + std::to_string(g.n) +
                 ", k = " + std::to_string(g.k) + "); pad the operands or use bfloat16");
        need(g.a.scale_inv != nullptr && g.b.scale_inv != nullptr, "FP8 operands need their scale_inv pointers");
        need(reinterpret_cast<std::uintptr_t>(g.a.scale_inv) % 4 == 0 && reinterpret_cast<std::uintptr_t>(g.b.scale_inv) % 4 == 0,
             "the scale_inv pointers must be 4-byte aligned");
    }
    if (is_fp8(g.d_type)) {
        need(g.d_scale != nullptr, "an FP8 output needs d_scale");
        need(g.epilogue == Epilogue::None || g.epilogue == Epilogue::Bias,
             "an FP8 output takes no epilogue but bias; allowed with FP8 d: none, bias");
    }
    need(g.a.data != nullptr && g.b.data != nullptr && g.d != nullptr, "a, b and d must not be null");
    need(aligned(g.a.data) && aligned(g.b.data) && aligned(g.d), "a, b and d must be 16-byte aligned");
    switch (g.epilogue) {
        case Epilogue::None: break;
        case Epilogue::Bias: need(g.bias != nullptr && aligned(g.bias), "the bias epilogue needs a 16-byte aligned bias"); break;
        case Epilogue::GeluAuxBias:
            need(g.bias != nullptr && aligned(g.bias), "the GELU_AUX_BIAS epilogue needs a 16-byte aligned bias");
            [[fallthrough]];
        case Epilogue::DGeluBGrad:
            need(g.aux != nullptr && aligned(g.aux), "the GELU epilogues need a 16-byte aligned aux buffer");
            need(g.aux_ld >= g.n && g.aux_ld % 8 == 0,
                 "aux_ld = " + std::to_string(g.aux_ld) + "; allowed: at least n = " + std::to_string(g.n) + " and a multiple of 8");
            if (g.epilogue == Epilogue::DGeluBGrad) {
                need(g.bias_grad != nullptr && aligned(g.bias_grad), "the DGELU_BGRAD epilogue needs a 16-byte aligned bias_grad");
            }
            break;
        case Epilogue::BGradB:
            need(g.bias_grad != nullptr && aligned(g.bias_grad), "the BGRADB epilogue needs a 16-byte aligned bias_grad");
            need(g.a.transposed, "the BGRADB epilogue sums a over k and needs a stored transposed ([k, m], a.transposed = true)");
            break;
        default: detail::fail(kCall, "unknown epilogue");
    }
    need(g.workspace_bytes == 0 || (g.workspace != nullptr && reinterpret_cast<std::uintptr_t>(g.workspace) % 256 == 0),
         "the workspace must be 256-byte aligned device memory (or none: workspace_bytes = 0)");
}

// Per device: the handle, made on first use and kept for the process (it holds no stream, so streams
// share it; workspaces are the callers', one per stream).
struct DeviceResources {
    cublasLtHandle_t handle = nullptr;
};

// Per shape, types and epilogue: descriptors and the algorithm cuBLASLt's heuristic picked.
struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ~Plan() {
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (desc) cublasLtMatmulDescDestroy(desc);
    }
};

// Device, m, n, k, types of a, b and d, epilogue, accumulation, aux_ld, d_amax set, a and b transposed,
// the alignments of a, b and d, the workspace size and the scale modes: everything the chosen algorithm
// depends on.
using PlanKey = std::tuple<int, std::size_t, std::size_t, std::size_t, GemmType, GemmType, GemmType, Epilogue, Accumulation,
                           std::size_t, bool, bool, bool, std::uint32_t, std::uint32_t, std::uint32_t, std::size_t, ScaleMode,
                           ScaleMode>;

struct State {
    std::mutex mutex;  // guards both maps and the plans' pointer attributes between setting and enqueueing
    std::map<int, DeviceResources> devices;
    std::map<PlanKey, std::unique_ptr<Plan>> plans;
    std::map<int, bool> block_support;  // block_gemm_supported's answer per device
};

State& state() {
    static State s;  // never destroyed: CUDA may already be shut down at exit
    return s;
}

DeviceResources& resources(int device) {
    DeviceResources& r = state().devices[device];
    if (r.handle == nullptr) detail::check_cublas(cublasLtCreate(&r.handle), kCall, "cublasLtCreate");
    return r;
}

int compute_capability_major(int device) {
    int major = 0;
    detail::check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), kCall,
                       "cudaDeviceGetAttribute(compute capability)");
    return major;
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value, const char* what) {
    detail::check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value), kCall, what);
}

Plan& plan_for(const GemmArgs& g, int device, DeviceResources& r) {
    const std::uint32_t align_a = alignment_of(g.b.data);  // cuBLASLt's A is our b
    const std::uint32_t align_b = alignment_of(g.a.data);
    const std::uint32_t align_d = alignment_of(g.d);
    const PlanKey key{device,        g.m,           g.n,      g.k,         g.a.type,    g.b.type,
                      g.d_type,      g.epilogue,    g.accumulation,        g.aux_ld,    g.d_amax != nullptr,
                      g.a.transposed, g.b.transposed, align_a, align_b,    align_d,     g.workspace_bytes,
                      g.a.scale_mode, g.b.scale_mode};
    if (const auto found = state().plans.find(key); found != state().plans.end()) return *found->second;
    if (is_fp8(g.a.type)) {  // checked once per plan: cuBLASLt would only say "not supported"
        int major = 0;
        int minor = 0;
        detail::check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), kCall, "cudaDeviceGetAttribute");
        detail::check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), kCall, "cudaDeviceGetAttribute");
        if (major * 10 + minor < 89) {
            detail::fail(kCall, "FP8 GEMMs need compute capability 8.9 or newer; this GPU has " + std::to_string(major) + "." +
                                    std::to_string(minor) + " (use bfloat16)");
        }
        if (is_block(g.a.scale_mode) && major != 9) {
            detail::fail(kCall, "block-scaled FP8 GEMMs run on compute capability 9.x (Hopper) only; this GPU has " +
                                    std::to_string(major) + "." + std::to_string(minor) + " (use per-tensor scaling)");
        }
    }
    auto p = std::make_unique<Plan>();
    detail::check_cublas(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), kCall, "cublasLtMatmulDescCreate");
    set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, g.b.transposed ? CUBLAS_OP_N : CUBLAS_OP_T, "set TRANSA");
    set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, g.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, "set TRANSB");
    const bool fp8 = is_fp8(g.a.type);
    if (fp8) {
        set(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<std::int8_t>(g.accumulation == Accumulation::Fast ? 1 : 0),
            "set FAST_ACCUM");
        // cuBLASLt's A is our b, its B our a.
        if (is_block(g.a.scale_mode)) {
            set(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, cublas_scale_mode(g.b.scale_mode), "set A_SCALE_MODE");
            set(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, cublas_scale_mode(g.a.scale_mode), "set B_SCALE_MODE");
        }
    }
    set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cublas_epilogue(g.epilogue), "set EPILOGUE");
    // The bias of an FP8 GEMM is bfloat16 whatever D is (cuBLASLt's FP8 kernels take no other); aux and the
    // bias gradient are in D's precision, bfloat16 where D is FP8.
    const GemmType side = is_fp8(g.d_type) ? GemmType::BFloat16 : g.d_type;
    const bool bias_in = g.epilogue == Epilogue::Bias || g.epilogue == Epilogue::GeluAuxBias;
    if (g.epilogue != Epilogue::None) {
        const GemmType bias_type = bias_in && fp8 ? GemmType::BFloat16 : side;
        set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(bias_type), "set BIAS_DATA_TYPE");
    }
    if (g.epilogue == Epilogue::GeluAuxBias || g.epilogue == Epilogue::DGeluBGrad) {
        set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(g.aux_ld), "set EPILOGUE_AUX_LD");
        set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, cuda_type(side), "set EPILOGUE_AUX_DATA_TYPE");
    }
    const auto rows = static_cast<std::uint64_t>(g.n);
    const auto cols = static_cast<std::uint64_t>(g.m);
    const auto inner = static_cast<std::uint64_t>(g.k);
    // Column-major layouts: A (our b) is k x n with op T, or n x k with op N when b is stored transposed;
    // B (our a) is k x m with op N, or m x k with op T.
    if (g.b.transposed) {
        detail::check_cublas(cublasLtMatrixLayoutCreate(&p->a, cuda_type(g.b.type), rows, inner, static_cast<std::int64_t>(rows)),
                             kCall, "cublasLtMatrixLayoutCreate(A)");
    } else {
        detail::check_cublas(cublasLtMatrixLayoutCreate(&p->a, cuda_type(g.b.type), inner, rows, static_cast<std::int64_t>(inner)),
                             kCall, "cublasLtMatrixLayoutCreate(A)");
    }
    if (g.a.transposed) {
        detail::check_cublas(cublasLtMatrixLayoutCreate(&p->b, cuda_type(g.a.type), cols, inner, static_cast<std::int64_t>(cols)),
                             kCall, "cublasLtMatrixLayoutCreate(B)");
    } else {
        detail::check_cublas(cublasLtMatrixLayoutCreate(&p->b, cuda_type(g.a.type), inner, cols, static_cast<std::int64_t>(inner)),
                             kCall, "cublasLtMatrixLayoutCreate(B)");
    }
    // C is never read (beta = 0) but must describe a valid matrix: D's, or bfloat16 where D is FP8 (then
    // no C pointer is passed: C and D at one address must share one layout).
    detail::check_cublas(cublasLtMatrixLayoutCreate(&p->c, cuda_type(side), rows, cols, static_cast<std::int64_t>(rows)), kCall,
                         "cublasLtMatrixLayoutCreate(C)");
    detail::check_cublas(cublasLtMatrixLayoutCreate(&p->d, cuda_type(g.d_type), rows, cols, static_cast<std::int64_t>(rows)), kCall,
                         "cublasLtMatrixLayoutCreate(D)");

    cublasLtMatmulPreference_t preference = nullptr;
    detail::check_cublas(cublasLtMatmulPreferenceCreate(&preference), kCall, "cublasLtMatmulPreferenceCreate");
    const std::uint64_t workspace = g.workspace_bytes;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &workspace, sizeof workspace);
    // Only algorithms that work at these pointers' alignment (C shares D's address).
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}};
    for (const auto& [attribute, bytes] : alignments) {
        if (status == CUBLAS_STATUS_SUCCESS) {
            status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
        }
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublasLtMatmulAlgoGetHeuristic(r.handle, p->desc, p->a, p->b, p->c, p->d, preference, 1, &result, &found);
    }
    cublasLtMatmulPreferenceDestroy(preference);
    detail::check_cublas(status, kCall, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
        detail::fail(kCall, std::string("cuBLASLt has no algorithm for ") + name(g.a.type) + " x " + name(g.b.type) + " -> " +
                                name(g.d_type) + ", m = " + std::to_string(g.m) + ", n = " + std::to_string(g.n) + ", k = " +
                                std::to_string(g.k) + " on this GPU");
    }
    p->algo = result.algo;
    std::unique_ptr<Plan>& slot = state().plans[key];  // only a plan that works is kept
    slot = std::move(p);
    return *slot;
}

}  // namespace

std::size_t block_scale_entries(ScaleMode mode, std::size_t rows, std::size_t k) {
    const std::size_t k_blocks = (k + 127) / 128;
    switch (mode) {
        case ScaleMode::Tensor: return 1;
        case ScaleMode::Block1x128: return k_blocks * round_up(rows, 4);
        case ScaleMode::Block128x128: return (rows + 127) / 128 * round_up(k_blocks, 4);
    }
    return 1;
}

bool block_gemm_supported(int device) {
    const std::lock_guard<std::mutex> lock(state().mutex);
    if (const auto known = state().block_support.find(device); known != state().block_support.end()) return known->second;
    bool supported = compute_capability_major(device) == 9;
    if (supported) {
        // The forward's shape class: 1x128 activations x 128x128 weights, bfloat16 out. Descriptors only;
        // cuBLASLt's heuristic needs no pointers.
        GemmArgs probe;
        probe.m = probe.n = probe.k = 256;
        probe.a = {nullptr, GemmType::E4M3, nullptr, false, ScaleMode::Block1x128};
        probe.b = {nullptr, GemmType::E4M3, nullptr, false, ScaleMode::Block128x128};
        probe.d_type = GemmType::BFloat16;
        probe.workspace_bytes = gemm_workspace_bytes(device);
        try {
            plan_for(probe, device, resources(device));
        } catch (const KernelError&) {
            supported = false;
        }
    }
    state().block_support[device] = supported;
    return supported;
}

std::size_t gemm_workspace_bytes(int device) {
    return static_cast<std::size_t>(compute_capability_major(device) >= 9 ? 32 : 4) << 20;
}

void gemm(const GemmArgs& g, cudaStream_t stream) {
    check_args(g);
    if (g.m == 0 || g.n == 0) return;
    int device = 0;
    detail::check_cuda(cudaGetDevice(&device), kCall, "cudaGetDevice");
    const std::lock_guard<std::mutex> lock(state().mutex);
    DeviceResources& r = resources(device);
    Plan& p = plan_for(g, device, r);
    if (is_fp8(g.a.type)) {
        set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, g.b.scale_inv, "set A_SCALE_POINTER");
        set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, g.a.scale_inv, "set B_SCALE_POINTER");
    }
    if (is_fp8(g.d_type)) {
        set(p.desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, g.d_scale, "set D_SCALE_POINTER");
        if (g.d_amax != nullptr) set(p.desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, g.d_amax, "set AMAX_D_POINTER");
    }
    switch (g.epilogue) {
        case Epilogue::None: break;
        case Epilogue::Bias: set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, "set BIAS_POINTER"); break;
        case Epilogue::GeluAuxBias:
            set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, "set BIAS_POINTER");
            set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, "set EPILOGUE_AUX_POINTER");
            break;
        case Epilogue::DGeluBGrad:
            set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias_grad, "set BIAS_POINTER (gradient)");
            set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, "set EPILOGUE_AUX_POINTER");
            break;
        case Epilogue::BGradB: set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias_grad, "set BIAS_POINTER (gradient)"); break;
    }
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const void* c = is_fp8(g.d_type) ? nullptr : g.d;
    detail::check_cublas(cublasLtMatmul(r.handle, p.desc, &alpha, g.b.data, p.a, g.a.data, p.b, &beta, c, p.c, g.d, p.d, &p.algo,
                                        g.workspace, g.workspace_bytes, stream),
                         kCall, "cublasLtMatmul");
    detail::note_launch();
}

std::size_t gemm_cache_size() {
    const std::lock_guard<std::mutex> lock(state().mutex);
    return state().plans.size();
}

}  // namespace tewb::kernels
