// The cuBLASLt wrapper. Row-major d[m, n] = a[m, k]·b[n, k]ᵀ is, in cuBLASLt's column-major terms,
// Dᶜ[n, m] = op(A)·op(B) with A = b (stored k x n, transposed: "T") and B = a (stored k x m, "N"): the TN
// layout FP8 needs, with no copies. So cuBLASLt's A scale is b's and its B scale is a's, D's rows are our
// n (bias and DGELU's bias gradient have n entries) and its columns our m (BGRADB's bias gradient). An
// operand stored transposed flips its cuBLASLt op instead (b: "N", a: "T").
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cublasLt.h>

#include "common/check.h"
#include "common/stream.cuh"
#include "gemm/observed_library_work.h"
#include "tewb_kernels/gemm.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/kernel_error.h"

namespace tewb::kernels {

namespace {

constexpr const char* kCall = "tewb::kernels::gemm";

cudaDataType_t cuda_type(DType t) {
    switch (t) {
        case DType::Float32: return CUDA_R_32F;
        case DType::BFloat16: return CUDA_R_16BF;
        case DType::Float8E4M3: return CUDA_R_8F_E4M3;
        case DType::Float8E5M2: return CUDA_R_8F_E5M2;
        case DType::Float4E2M1x2: return CUDA_R_4F_E2M1;  // the layouts count values, not bytes (GemmCall::k)
        default: return CUDA_R_32F;  // not an element type the GEMM takes: the rule table refused it
    }
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

std::uint32_t alignment_of(const void* p) {
    return pointer_alignment(p);  // gemm_rules.h: up to 256, 256 for null (nothing to align)
}

// Every mode that is not one float32 per tensor: Float8BlockScaling's and the microscaling ones.
bool is_block(ScaleMode m) {
    return m != ScaleMode::Tensor;
}

std::int32_t cublas_scale_mode(ScaleMode m) {
    switch (m) {
        case ScaleMode::Tensor: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
        case ScaleMode::Block1x128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        case ScaleMode::Block128x128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        case ScaleMode::Mxfp8Block32: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
        case ScaleMode::Nvfp4Block16: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    }
    return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

// Aux and the bias gradient are in D's precision, bfloat16 where D is FP8.
DType side_type(const GemmCall& g) {
    return is_fp8(g.d.dtype) ? DType::BFloat16 : g.d.dtype;
}

// Per device: the handle, made on first use and kept for the process (it holds no stream, so streams
// share it; workspaces are the callers', one per stream).
struct DeviceResources {
    cublasLtHandle_t handle = nullptr;
    float* constants = nullptr;  // device memory holding 0 and 1: beta when alpha is read from the device
};

// Per shape, types and epilogue: descriptors and the algorithm cuBLASLt's heuristic picked.
struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's answers, best guess first
    bool tuned = false;                             // algo is the fastest candidate, or timing was not allowed
    ~Plan() {
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (d) cublasLtMatrixLayoutDestroy(d);
        if (desc) cublasLtMatmulDescDestroy(desc);
    }
};

// Everything the chosen algorithm depends on. cuBLASLt's heuristic sees the pointers set on the descriptor
// (bias, aux, scales), so their alignments are part of the key, like the operands'.
struct PlanKey {
    int device = 0;
    std::size_t m = 0, n = 0, k = 0;
    DType a_type{}, b_type{}, d_type{}, bias_type{};
    Epilogue epilogue{};
    Accumulation accumulation{};
    std::size_t aux_ld = 0;
    bool d_amax = false;
    bool alpha = false;  // alpha read from memory (the device pointer mode)
    bool a_transposed = false, b_transposed = false;
    ScaleMode a_scale_mode{}, b_scale_mode{};
    std::uint32_t align_a = 0, align_b = 0, align_c = 0, align_d = 0;
    std::uint32_t align_bias = 0, align_aux = 0, align_bias_grad = 0;
    std::uint32_t align_a_scale = 0, align_b_scale = 0, align_d_scale = 0, align_d_amax = 0;
    std::size_t workspace_bytes = 0;

    auto operator<=>(const PlanKey&) const = default;
};

PlanKey plan_key(const GemmCall& g, int device) {
    PlanKey key;
    key.device = device;
    key.m = g.m();
    key.n = g.n();
    key.k = g.k();
    key.a_type = g.a.dtype;
    key.b_type = g.b.dtype;
    key.d_type = g.d.dtype;
    key.bias_type = g.epilogue.bias.dtype;
    key.epilogue = g.options.epilogue;
    key.accumulation = g.options.accumulation;
    key.aux_ld = g.epilogue.aux.stride();
    key.d_amax = g.d.amax != nullptr;
    key.alpha = g.options.alpha != nullptr;
    key.a_transposed = g.options.a_transposed;
    key.b_transposed = g.options.b_transposed;
    key.a_scale_mode = g.a.scale_mode;
    key.b_scale_mode = g.b.scale_mode;
    key.align_a = alignment_of(g.a.data);
    key.align_b = alignment_of(g.b.data);
    key.align_c = alignment_of(gemm_c_operand(g).data);
    key.align_d = alignment_of(g.d.data);
    key.align_bias = alignment_of(g.epilogue.bias.data);
    key.align_aux = alignment_of(g.epilogue.aux.data);
    key.align_bias_grad = alignment_of(g.epilogue.bias_grad.data);
    key.align_a_scale = alignment_of(g.a.scale_inv);
    key.align_b_scale = alignment_of(g.b.scale_inv);
    key.align_d_scale = alignment_of(g.d.scale);
    key.align_d_amax = alignment_of(g.d.amax);
    key.workspace_bytes = g.workspace.bytes;
    return key;
}

struct State {
    std::mutex mutex;  // guards the maps and the plans' pointer attributes between setting and enqueueing
    std::map<int, DeviceResources> devices;
    std::map<PlanKey, std::unique_ptr<Plan>> plans;
    // Calls cuBLASLt refused (its heuristic, or the matmul after planning again), by plan key: refused again at
    // once, so an eager step does not ask on every call. The refusal's rule and message.
    std::map<PlanKey, GemmRefusal> refused;
    std::map<int, bool> block_support;  // block_gemm_supported's answer per device
    std::map<int, GemmTarget> targets;  // each device's compute capability, for the rule table
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

// Under state().mutex: 0 and 1 in device memory, made on first use (only calls with alpha in device memory need them;
// the microscaling recipes that pass one never capture CUDA graphs).
const float* device_constants(DeviceResources& r) {
    if (r.constants == nullptr) {
        const float values[2] = {0.0f, 1.0f};
        void* memory = nullptr;
        detail::check_cuda(cudaMalloc(&memory, sizeof values), kCall, "cudaMalloc (GEMM constants)");
        detail::check_cuda(cudaMemcpy(memory, values, sizeof values, cudaMemcpyHostToDevice), kCall, "cudaMemcpy (GEMM constants)");
        r.constants = static_cast<float*>(memory);
    }
    return r.constants;
}

int compute_capability_major(int device) {
    int major = 0;
    detail::check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), kCall,
                       "cudaDeviceGetAttribute(compute capability)");
    return major;
}

// Under state().mutex.
const GemmTarget& device_target(int device) {
    const auto known = state().targets.find(device);
    if (known != state().targets.end()) return known->second;
    GemmTarget target;
    target.host = false;
    detail::check_cuda(cudaDeviceGetAttribute(&target.cc_major, cudaDevAttrComputeCapabilityMajor, device), kCall,
                       "cudaDeviceGetAttribute(compute capability major)");
    detail::check_cuda(cudaDeviceGetAttribute(&target.cc_minor, cudaDevAttrComputeCapabilityMinor, device), kCall,
                       "cudaDeviceGetAttribute(compute capability minor)");
    return state().targets.emplace(device, target).first->second;
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value, const char* what) {
    detail::check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value), kCall, what);
}

// The call's pointers on the descriptor: before the heuristic (it looks at their alignment) and before
// every matmul with a cached plan (the plan's key holds their alignments, not their addresses).
void set_pointers(const Plan& p, const GemmCall& g) {
    if (is_fp8(g.a.dtype) || g.a.dtype == DType::Float4E2M1x2) {
        // cuBLASLt's A is our b, its B our a.
        set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, g.b.scale_inv, "set A_SCALE_POINTER");
        set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, g.a.scale_inv, "set B_SCALE_POINTER");
    }
    if (is_fp8(g.d.dtype)) {
        set(p.desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, g.d.scale, "set D_SCALE_POINTER");
        set(p.desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, g.d.amax, "set AMAX_D_POINTER");
    }
    switch (g.options.epilogue) {
        case Epilogue::None: break;
        case Epilogue::Bias: set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.epilogue.bias.data, "set BIAS_POINTER"); break;
        case Epilogue::GeluAuxBias:
            set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.epilogue.bias.data, "set BIAS_POINTER");
            set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.epilogue.aux.data, "set EPILOGUE_AUX_POINTER");
            break;
        case Epilogue::DGeluBGrad:
            set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.epilogue.bias_grad.data, "set BIAS_POINTER (gradient)");
            set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.epilogue.aux.data, "set EPILOGUE_AUX_POINTER");
            break;
        case Epilogue::BGradB:
            set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.epilogue.bias_grad.data, "set BIAS_POINTER (gradient)");
            break;
    }
}

// Under state().mutex: remembers the refusal for the call's key and throws it.
[[noreturn]] void refuse(const PlanKey& key, GemmRule rule, const std::string& what) {
    const GemmRefusal refusal{rule, what};
    state().refused.insert_or_assign(key, refusal);
    throw_gemm_refused(kCall, refusal);
}

[[noreturn]] void refuse_no_algorithm(const PlanKey& key, const GemmCall& g, const char* why) {
    refuse(key, GemmRule::NoAlgorithm, "cuBLASLt has no algorithm for " + describe_gemm(g) + " on this GPU (" + why + ")");
}

constexpr int kCandidates = 8;

std::atomic<bool>& autotune_flag() {
    static std::atomic<bool> on{[] {
        const char* value = std::getenv("TEWB_GEMM_AUTOTUNE");
        return value == nullptr || std::string(value) != "0";
    }()};
    return on;
}

// The candidates whose split-K and reduction scheme are the heuristic's first's: the helper kernels and memsets the
// launch ledger counts beside a GEMM (observed_library_work.csv) were seen with the first, and a split-K reduction
// of another scheme would launch kernels the ledger does not know.
std::vector<cublasLtMatmulAlgo_t> same_launch_shape(const std::vector<cublasLtMatmulAlgo_t>& candidates) {
    const auto config = [](const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
        std::int64_t value = -1;  // read as the widest type; both attributes are 32-bit
        std::uint32_t narrow = 0;
        std::size_t written = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &narrow, sizeof narrow, &written) == CUBLAS_STATUS_SUCCESS) {
            value = narrow;
        }
        return value;
    };
    std::vector<cublasLtMatmulAlgo_t> kept;
    const std::int64_t split = config(candidates.front(), CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    const std::int64_t scheme = config(candidates.front(), CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    for (const cublasLtMatmulAlgo_t& algo : candidates) {
        if (config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) == split && config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) == scheme) {
            kept.push_back(algo);
        }
    }
    return kept;
}

// Times each candidate of a new plan on this call's own operands (gemm.h, set_gemm_autotune) and keeps the fastest.
// Not during capture of this stream: the plan stays untimed until an eager call. In relaxed capture mode, so that a
// capture another thread runs is not invalidated by the host's wait. A candidate cuBLASLt refuses (a host-side
// check: nothing queued) is skipped; a CUDA error while timing is a fault of the device and is thrown.
template <typename Matmul>
void tune(Plan& p, const GemmCall& g, cudaStream_t stream, const Matmul& matmul) {
    if (p.candidates.size() < 2 || !autotune_flag().load() || !gemm_can_be_timed(g)) {
        p.tuned = true;
        return;
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
        cudaGetLastError();  // e.g. the legacy stream while another stream captures: try on a later call
        return;
    }
    if (capture != cudaStreamCaptureStatusNone) return;
    const std::vector<cublasLtMatmulAlgo_t> candidates = same_launch_shape(p.candidates);
    if (candidates.size() < 2) {
        p.tuned = true;
        return;
    }
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    detail::check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), kCall, "cudaThreadExchangeStreamCaptureMode");
    struct Events {
        cudaEvent_t start = nullptr, end = nullptr;
        cudaStreamCaptureMode* mode = nullptr;
        ~Events() {
            if (start != nullptr) cudaEventDestroy(start);
            if (end != nullptr) cudaEventDestroy(end);
            cudaThreadExchangeStreamCaptureMode(mode);
        }
    } events;
    events.mode = &mode;
    detail::check_cuda(cudaEventCreate(&events.start), kCall, "cudaEventCreate (timing GEMM candidates)");
    detail::check_cuda(cudaEventCreate(&events.end), kCall, "cudaEventCreate (timing GEMM candidates)");
    cublasLtMatmulAlgo_t best = candidates.front();
    float best_ms = 0;
    bool any = false;
    for (const cublasLtMatmulAlgo_t& candidate : candidates) {
        p.algo = candidate;
        if (matmul(p) != CUBLAS_STATUS_SUCCESS) continue;  // warm-up
        detail::check_cuda(cudaEventRecord(events.start, stream), kCall, "cudaEventRecord (timing GEMM candidates)");
        bool ran = true;
        for (int i = 0; i < 3 && ran; ++i) ran = matmul(p) == CUBLAS_STATUS_SUCCESS;
        detail::check_cuda(cudaEventRecord(events.end, stream), kCall, "cudaEventRecord (timing GEMM candidates)");
        detail::check_cuda(cudaEventSynchronize(events.end), kCall, "cudaEventSynchronize (timing GEMM candidates)");
        float ms = 0;
        detail::check_cuda(cudaEventElapsedTime(&ms, events.start, events.end), kCall, "cudaEventElapsedTime");
        if (ran && (!any || ms < best_ms)) {
            best = candidate;
            best_ms = ms;
            any = true;
        }
    }
    p.algo = best;
    p.tuned = true;
}

Plan& plan_for(const GemmCall& g, int device, DeviceResources& r) {
    const PlanKey key = plan_key(g, device);
    if (const auto found = state().plans.find(key); found != state().plans.end()) return *found->second;
    if (const auto known = state().refused.find(key); known != state().refused.end()) throw_gemm_refused(kCall, known->second);
    auto p = std::make_unique<Plan>();
    detail::check_cublas(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), kCall, "cublasLtMatmulDescCreate");
    set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, g.options.b_transposed ? CUBLAS_OP_N : CUBLAS_OP_T, "set TRANSA");
    set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, g.options.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, "set TRANSB");
    const bool fp8 = is_fp8(g.a.dtype) || g.a.dtype == DType::Float4E2M1x2;
    // alpha read from device memory: then beta is too (the device's constants below).
    if (g.options.alpha != nullptr) set(p->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE, "set POINTER_MODE");
    if (fp8) {
        set(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
            static_cast<std::int8_t>(g.options.accumulation == Accumulation::Fast ? 1 : 0), "set FAST_ACCUM");
        // cuBLASLt's A is our b, its B our a.
        if (is_block(g.a.scale_mode)) {
            set(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, cublas_scale_mode(g.b.scale_mode), "set A_SCALE_MODE");
            set(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, cublas_scale_mode(g.a.scale_mode), "set B_SCALE_MODE");
        }
    }
    set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cublas_epilogue(g.options.epilogue), "set EPILOGUE");
    // The bias is in its own dtype (the rule table allows d's, or bfloat16 for FP8 operands);
    // the bias gradient is in D's precision.
    const DType side = side_type(g);
    const bool bias_in = g.options.epilogue == Epilogue::Bias || g.options.epilogue == Epilogue::GeluAuxBias;
    if (g.options.epilogue != Epilogue::None) {
        set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(bias_in ? g.epilogue.bias.dtype : side),
            "set BIAS_DATA_TYPE");
    }
    if (g.options.epilogue == Epilogue::GeluAuxBias || g.options.epilogue == Epilogue::DGeluBGrad) {
        set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(g.epilogue.aux.stride()),
            "set EPILOGUE_AUX_LD");
        set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, cuda_type(side), "set EPILOGUE_AUX_DATA_TYPE");
    }
    set_pointers(*p, g);
    const auto rows = static_cast<std::uint64_t>(g.n());
    const auto cols = static_cast<std::uint64_t>(g.m());
    const auto inner = static_cast<std::uint64_t>(g.k());
    // Column-major layouts: A (our b) is k x n with op T, or n x k with op N when b is stored transposed;
    // B (our a) is k x m with op N, or m x k with op T.
    if (g.options.b_transposed) {
        detail::check_cublas(
            cublasLtMatrixLayoutCreate(&p->a, cuda_type(g.b.dtype), rows, inner, static_cast<std::int64_t>(rows)), kCall,
            "cublasLtMatrixLayoutCreate(A)");
    } else {
        detail::check_cublas(
            cublasLtMatrixLayoutCreate(&p->a, cuda_type(g.b.dtype), inner, rows, static_cast<std::int64_t>(inner)), kCall,
            "cublasLtMatrixLayoutCreate(A)");
    }
    if (g.options.a_transposed) {
        detail::check_cublas(
            cublasLtMatrixLayoutCreate(&p->b, cuda_type(g.a.dtype), cols, inner, static_cast<std::int64_t>(cols)), kCall,
            "cublasLtMatrixLayoutCreate(B)");
    } else {
        detail::check_cublas(
            cublasLtMatrixLayoutCreate(&p->b, cuda_type(g.a.dtype), inner, cols, static_cast<std::int64_t>(inner)), kCall,
            "cublasLtMatrixLayoutCreate(B)");
    }
    // C is read (beta = 1) when the call accumulates (its c); else never read (beta = 0), but it must describe a
    // valid matrix: the rule table's choice (gemm_c_operand).
    const GemmCOperand c = gemm_c_operand(g);
    detail::check_cublas(cublasLtMatrixLayoutCreate(&p->c, cuda_type(c.type), rows, cols, static_cast<std::int64_t>(rows)), kCall,
                         "cublasLtMatrixLayoutCreate(C)");
    detail::check_cublas(cublasLtMatrixLayoutCreate(&p->d, cuda_type(g.d.dtype), rows, cols, static_cast<std::int64_t>(rows)),
                         kCall, "cublasLtMatrixLayoutCreate(D)");

    cublasLtMatmulPreference_t preference = nullptr;
    detail::check_cublas(cublasLtMatmulPreferenceCreate(&preference), kCall, "cublasLtMatmulPreferenceCreate");
    const std::uint64_t workspace = g.workspace.bytes;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &workspace, sizeof workspace);
    // Only algorithms that work at these pointers' alignment (C: its own, 256 when there is none).
    const std::uint32_t align_c = key.align_c;
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},  // cuBLASLt's A is our b
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
    for (const auto& [attribute, bytes] : alignments) {
        if (status == CUBLAS_STATUS_SUCCESS) {
            status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
        }
    }
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublasLtMatmulAlgoGetHeuristic(r.handle, p->desc, p->a, p->b, p->c, p->d, preference, kCandidates, results,
                                                &found);
        cublasLtMatmulPreferenceDestroy(preference);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED) refuse_no_algorithm(key, g, "cublasLtMatmulAlgoGetHeuristic: status 15");
    } else {
        cublasLtMatmulPreferenceDestroy(preference);
    }
    detail::check_cublas(status, kCall, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) refuse_no_algorithm(key, g, "the heuristic returned none");
    for (int i = 0; i < found; ++i) {
        if (results[i].state == CUBLAS_STATUS_SUCCESS) p->candidates.push_back(results[i].algo);
    }
    if (p->candidates.empty()) refuse_no_algorithm(key, g, "the heuristic returned no algorithm in a usable state");
    p->algo = p->candidates.front();
    std::unique_ptr<Plan>& slot = state().plans[key];  // only a plan that works is kept
    slot = std::move(p);
    return *slot;
}

}  // namespace

namespace {

// Device memory for the block probe, freed however the probe ends.
struct ProbeBuffer {
    void* p = nullptr;
    explicit ProbeBuffer(std::size_t bytes) {
        detail::check_cuda(cudaMalloc(&p, bytes), kCall, "cudaMalloc (block-scaling probe)");
        detail::check_cuda(cudaMemset(p, 0, bytes), kCall, "cudaMemset (block-scaling probe)");
    }
    ~ProbeBuffer() { cudaFree(p); }
    ProbeBuffer(const ProbeBuffer&) = delete;
    ProbeBuffer& operator=(const ProbeBuffer&) = delete;
};

// A real block-scaled GEMM of the forward's shape class (1x128 activations x 128x128 weights, bfloat16 out) on
// device buffers with real scale pointers, run once on a stream of its own: cuBLASLt refuses the block modes'
// heuristic without scale pointers ("requires a custom pointer for A scale", the H200 on 2026-12-04), so only a
// real call says whether they run. Under state().mutex, on `device` (made current by the caller).
bool block_probe_runs(int device) {
    // Allowed while another stream of this thread's process is being captured into a CUDA graph.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    detail::check_cuda(cudaThreadExchangeStreamCaptureMode(&mode), kCall, "cudaThreadExchangeStreamCaptureMode");
    bool runs = false;
    try {
        constexpr std::size_t n = 256;
        const std::size_t workspace_bytes = gemm_workspace_bytes(device);
        ProbeBuffer a(n * n), b(n * n), d(n * n * 2), workspace(workspace_bytes);
        ProbeBuffer a_scales(sizeof(float) * block_scale_entries(ScaleMode::Block1x128, n, n));
        ProbeBuffer b_scales(sizeof(float) * block_scale_entries(ScaleMode::Block128x128, n, n));
        GemmCall probe;
        probe.a = {a.p, DType::Float8E4M3, n, n};
        probe.a.scale_inv = static_cast<float*>(a_scales.p);
        probe.a.scale_mode = ScaleMode::Block1x128;
        probe.b = {b.p, DType::Float8E4M3, n, n};
        probe.b.scale_inv = static_cast<float*>(b_scales.p);
        probe.b.scale_mode = ScaleMode::Block128x128;
        probe.d = {d.p, DType::BFloat16, n, n};
        probe.workspace = {workspace.p, workspace_bytes};
        DeviceResources& r = resources(device);
        Plan& p = plan_for(probe, device, r);
        set_pointers(p, probe);
        cudaStream_t stream = nullptr;
        detail::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), kCall, "cudaStreamCreate (probe)");
        const float alpha = 1.0f, beta = 0.0f;
        const cublasStatus_t status = cublasLtMatmul(r.handle, p.desc, &alpha, b.p, p.a, a.p, p.b, &beta, d.p, p.c, d.p, p.d,
                                                     &p.algo, workspace.p, workspace_bytes, stream);
        const cudaError_t synced = cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
        runs = status == CUBLAS_STATUS_SUCCESS && synced == cudaSuccess;
        state().plans.erase(plan_key(probe, device));  // the cache holds the run's own calls only
    } catch (const KernelError&) {
        runs = false;
    }
    cudaThreadExchangeStreamCaptureMode(&mode);
    return runs;
}

}  // namespace

bool block_gemm_supported(int device) {
    const std::lock_guard<std::mutex> lock(state().mutex);
    if (const auto known = state().block_support.find(device); known != state().block_support.end()) return known->second;
    int current = 0;
    detail::check_cuda(cudaGetDevice(&current), kCall, "cudaGetDevice");
    bool supported = compute_capability_major(device) == 9;
    if (supported) {
        detail::check_cuda(cudaSetDevice(device), kCall, "cudaSetDevice (block-scaling probe)");
        supported = block_probe_runs(device);
        cudaSetDevice(current);
    }
    state().block_support[device] = supported;
    return supported;
}

std::size_t gemm_workspace_bytes(int device) {
    return static_cast<std::size_t>(compute_capability_major(device) >= 9 ? 32 : 4) << 20;
}

void gemm(const Tensor& a, const Tensor& b, const Tensor& d, const GemmEpilogueTensors& epilogue, const GemmOptions& options,
          const Workspace& workspace, Stream on) {
    const GemmCall g{a, b, d, epilogue, options, workspace};
    const cudaStream_t stream = detail::cuda_stream(on);
    // The host target first: every rule but the compute-capability ones, without touching CUDA.
    if (const auto refusal = gemm_refusal(g, GemmTarget{})) throw_gemm_refused(kCall, *refusal);
    if (g.m() == 0 || g.n() == 0) return;
    int device = 0;
    detail::check_cuda(cudaGetDevice(&device), kCall, "cudaGetDevice");
    const std::lock_guard<std::mutex> lock(state().mutex);
    if (const auto refusal = gemm_refusal(g, device_target(device))) throw_gemm_refused(kCall, *refusal);
    DeviceResources& r = resources(device);
    const float host_alpha = 1.0f;
    const float host_beta = g.epilogue.c.data != nullptr ? 1.0f : 0.0f;
    // With alpha in device memory cuBLASLt reads beta there too: the device's constant 0 or 1.
    const void* alpha = g.options.alpha != nullptr ? static_cast<const void*>(g.options.alpha) : &host_alpha;
    const void* beta = g.options.alpha != nullptr ? static_cast<const void*>(device_constants(r) + (host_beta != 0.0f ? 1 : 0)) : &host_beta;
    const void* c = gemm_c_operand(g).data;
    const auto matmul = [&](const Plan& p) {
        return cublasLtMatmul(r.handle, p.desc, alpha, g.b.data, p.a, g.a.data, p.b, beta, c, p.c, g.d.data, p.d, &p.algo,
                              g.workspace.data, g.workspace.bytes, stream);
    };
    Plan* p = &plan_for(g, device, r);
    set_pointers(*p, g);
    if (!p->tuned) tune(*p, g, stream, matmul);
    cublasStatus_t status = matmul(*p);
    // The matmul may refuse what the heuristic and cublasLtMatmulAlgoCheck accepted (the H200: status 15 for a
    // scale pointer 4 bytes into a packed array). Plan once more for these exact pointers; if it still refuses,
    // the call is refused (a GemmRefused the fused ops turn into a recorded fallback), and so is every later call
    // with the same key. Both statuses are cuBLASLt's host-side checks: nothing was queued.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
        const PlanKey key = plan_key(g, device);
        state().plans.erase(key);
        p = &plan_for(g, device, r);
        p->tuned = true;  // planned for these pointers: its first answer, never timed (no re-planning and re-timing in turn)
        set_pointers(*p, g);
        status = matmul(*p);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE) {
            state().plans.erase(key);
            refuse(key, GemmRule::MatmulRefused,
                   "cublasLtMatmul refused " + describe_gemm(g) + " with status " + std::to_string(static_cast<int>(status)) +
                       " after its heuristic accepted it, twice (the second time planned for these pointers)");
        }
    }
    detail::check_cublas(status, kCall, "cublasLtMatmul");
    detail::note_launch();
    detail::note_gemm_library_work(g.options.epilogue, g.a.dtype);
}

void set_gemm_autotune(bool on) {
    autotune_flag().store(on);
}

bool gemm_autotune() {
    return autotune_flag().load();
}

void gemm_forget_plans() {
    const std::lock_guard<std::mutex> lock(state().mutex);
    state().plans.clear();
}

std::size_t gemm_cache_size() {
    const std::lock_guard<std::mutex> lock(state().mutex);
    return state().plans.size();
}

}  // namespace tewb::kernels
