// tewb-gemm-replay: the GEMMs of GEMM journals (te-bench run --gemm-journal; core/ledger/GemmJournal.h) run again
// in isolation, each at the alignments its pointers had, so a rule that only cuBLASLt enforces shows on the first
// GPU minute after a CPU-side change broke it.
//
//   tewb-gemm-replay [--rules-only] [--cc MAJOR.MINOR] JOURNAL...
//
// On a GPU (default): each entry gets device buffers at exactly its recorded alignments (zeros; cuBLASLt's checks do
// not read values), runs through tewb::kernels::gemm on a stream of its own and is synchronised; a refusal or a CUDA
// error is that entry's failure. --rules-only (any machine, CI): each entry at those alignments through the GEMM's
// rule table (gemm_rules.h), for the host and for a GPU of compute capability --cc (default 9.0), nothing run.
// Prints one line per entry and a total. Exit: 0 every entry passed, 1 one failed, 2 bad arguments or an unreadable
// journal, 77 no GPU to replay on (without --rules-only).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/Error.h"
#include "core/ledger/GemmJournal.h"
#include "tewb_kernels/gemm_rules.h"
#include "tewb_kernels/gemm_types.h"

#ifdef TEWB_REPLAY_ON_GPU
#include <cuda_runtime_api.h>

#include "tewb_kernels/gemm.h"
#endif

using namespace tewb;
using kernels::GemmCall;
using kernels::DType;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 77;

DType type_named(const std::string& name) {
    if (name == "float32") return DType::Float32;
    if (name == "bfloat16") return DType::BFloat16;
    if (name == "E4M3") return DType::Float8E4M3;
    return DType::Float8E5M2;  // the journal reader allowed only these four
}

kernels::ScaleMode mode_named(const std::string& name) {
    if (name == "1x128") return kernels::ScaleMode::Block1x128;
    if (name == "128x128") return kernels::ScaleMode::Block128x128;
    return kernels::ScaleMode::Tensor;
}

kernels::Epilogue epilogue_named(const std::string& name) {
    if (name == "BIAS") return kernels::Epilogue::Bias;
    if (name == "GELU_AUX_BIAS") return kernels::Epilogue::GeluAuxBias;
    if (name == "DGELU_BGRAD") return kernels::Epilogue::DGeluBGrad;
    if (name == "BGRADB") return kernels::Epilogue::BGradB;
    return kernels::Epilogue::None;
}

std::size_t element_bytes(DType t) {
    return t == DType::Float32 ? 4 : t == DType::BFloat16 ? 2 : 1;
}

// A tensor of the entry's, [rows, cols] in `dtype`, its data placed afterwards.
kernels::Tensor shaped(DType dtype, std::size_t rows, std::size_t cols) {
    kernels::Tensor t;
    t.dtype = dtype;
    t.rows = rows;
    t.cols = cols;
    return t;
}

// The bytes each pointer of an entry addresses (an upper bound where the layout pads).
std::size_t bytes_of(const std::string& name, const GemmJournalEntry& e, const GemmCall& g) {
    const DType side = kernels::is_fp8(g.d.dtype) ? DType::BFloat16 : g.d.dtype;
    if (name == "a") return e.m * e.k * element_bytes(g.a.dtype);
    if (name == "b") return e.n * e.k * element_bytes(g.b.dtype);
    if (name == "d" || name == "c") return e.m * e.n * element_bytes(g.d.dtype);
    if (name == "bias") return e.n * element_bytes(g.epilogue.bias.dtype);
    if (name == "aux") return e.m * std::max<std::uint64_t>(e.aux_ld, e.n) * element_bytes(side);
    if (name == "bias_grad") return std::max(e.m, e.n) * element_bytes(side);
    if (name == "a.scale_inv") return 4 * kernels::block_scale_entries(g.a.scale_mode, e.m, e.k);
    if (name == "b.scale_inv") return 4 * kernels::block_scale_entries(g.b.scale_mode, e.n, e.k);
    return 4;  // d_scale, d_amax
}

// The entry's call: every tensor shaped from m, n and k as the entry's layout stores it (a [m, k] or, transposed,
// [k, m]; b [n, k] or [k, n]; d and c [m, n]; the bias [1, n]; aux [m, n] with the row stride aux_ld; bias_grad
// [1, m] for BGRADB, else [1, n]; aux, bias_grad and c in d's dtype, bfloat16 for an FP8 d), and every pointer the
// entry passed placed by `place(name, bytes, alignment)` (the rest stay null).
template <typename Place>
GemmCall call_of(const GemmJournalEntry& e, Place&& place) {
    GemmCall g;
    g.options.a_transposed = e.a_transposed;
    g.options.b_transposed = e.b_transposed;
    g.options.epilogue = epilogue_named(e.epilogue);
    g.options.accumulation = e.accumulation == "fast" ? kernels::Accumulation::Fast : kernels::Accumulation::Split;
    const DType a_type = type_named(e.a_type);
    const DType b_type = type_named(e.b_type);
    const DType d_type = type_named(e.d_type);
    const DType side = kernels::is_fp8(d_type) ? DType::BFloat16 : d_type;
    g.a = e.a_transposed ? shaped(a_type, e.k, e.m) : shaped(a_type, e.m, e.k);
    g.a.scale_mode = mode_named(e.a_scales);
    g.b = e.b_transposed ? shaped(b_type, e.k, e.n) : shaped(b_type, e.n, e.k);
    g.b.scale_mode = mode_named(e.b_scales);
    g.d = shaped(d_type, e.m, e.n);
    // The bias's dtype is what the call set (looked at only with a bias epilogue).
    g.epilogue.bias = shaped(type_named(e.bias_type), 1, e.n);
    g.epilogue.aux = shaped(side, e.m, e.n);
    g.epilogue.aux.row_stride = e.aux_ld == 0 ? e.n : e.aux_ld;
    g.epilogue.bias_grad = shaped(side, 1, g.options.epilogue == kernels::Epilogue::BGradB ? e.m : e.n);
    g.epilogue.c = shaped(d_type, e.m, e.n);
    for (const auto& [name, alignment] : e.alignment) {
        void* p = place(name, bytes_of(name, e, g), alignment);
        if (name == "a") g.a.data = p;
        else if (name == "b") g.b.data = p;
        else if (name == "d") g.d.data = p;
        else if (name == "c") g.epilogue.c.data = p;
        else if (name == "bias") g.epilogue.bias.data = p;
        else if (name == "aux") g.epilogue.aux.data = p;
        else if (name == "bias_grad") g.epilogue.bias_grad.data = p;
        else if (name == "a.scale_inv") g.a.scale_inv = static_cast<float*>(p);
        else if (name == "b.scale_inv") g.b.scale_inv = static_cast<float*>(p);
        else if (name == "d_scale") g.d.scale = static_cast<float*>(p);
        else if (name == "d_amax") g.d.amax = static_cast<float*>(p);
    }
    return g;
}

// --rules-only: addresses that are never dereferenced, each pointer in its own 1 GiB-aligned region.
int check_rules(const std::vector<std::pair<std::string, GemmJournal>>& journals, const kernels::GemmTarget& device) {
    int failed = 0, total = 0;
    for (const auto& [path, journal] : journals) {
        for (std::size_t i = 0; i < journal.gemms.size(); ++i) {
            const GemmJournalEntry& e = journal.gemms[i];
            std::uintptr_t next = std::uintptr_t{1} << 40;
            const GemmCall g = call_of(e, [&](const std::string&, std::size_t, std::uint32_t alignment) {
                next += std::uintptr_t{1} << 30;
                return reinterpret_cast<void*>(next + (alignment >= kJournalAlignment ? 0 : alignment));
            });
            ++total;
            std::optional<kernels::GemmRefusal> refusal = kernels::gemm_refusal(g, kernels::GemmTarget{});
            if (!refusal) refusal = kernels::gemm_refusal(g, device);
            if (refusal) {
                ++failed;
                std::printf("REFUSED %s #%zu %s: %s (%s): %s\n", path.c_str(), i, e.op.c_str(), kernels::describe_gemm(g).c_str(),
                            std::string(kernels::to_string(refusal->rule)).c_str(), refusal->message.c_str());
            } else {
                std::printf("ok      %s #%zu %s: %s\n", path.c_str(), i, e.op.c_str(), kernels::describe_gemm(g).c_str());
            }
        }
    }
    std::printf("%d of %d GEMMs pass the rule table (host, and compute capability %d.%d)\n", total - failed, total,
                device.cc_major, device.cc_minor);
    return failed == 0 ? 0 : 1;
}

#ifdef TEWB_REPLAY_ON_GPU
int replay_on_gpu(const std::vector<std::pair<std::string, GemmJournal>>& journals) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("no GPU: nothing replayed (--rules-only checks the journals against the rule table)\n");
        return kExitNoGpu;
    }
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        std::printf("cudaStreamCreate failed\n");
        return 1;
    }
    const std::size_t workspace_bytes = kernels::gemm_workspace_bytes(0);
    void* workspace = nullptr;
    if (cudaMalloc(&workspace, workspace_bytes) != cudaSuccess) {
        std::printf("cudaMalloc of the workspace failed\n");
        return 1;
    }
    int failed = 0, total = 0;
    for (const auto& [path, journal] : journals) {
        for (std::size_t i = 0; i < journal.gemms.size(); ++i) {
            const GemmJournalEntry& e = journal.gemms[i];
            std::vector<void*> buffers;
            std::string allocation_error;
            GemmCall g = call_of(e, [&](const std::string& name, std::size_t bytes, std::uint32_t alignment) -> void* {
                void* base = nullptr;
                if (cudaMalloc(&base, bytes + 512) != cudaSuccess) {
                    allocation_error = "cudaMalloc of " + std::to_string(bytes + 512) + " bytes for " + name + " failed";
                    return nullptr;
                }
                cudaMemset(base, 0, bytes + 512);
                buffers.push_back(base);
                // Exactly the recorded alignment below kJournalAlignment (an offset into an allocation); at it, where
                // the CUDA caching allocator starts a block: 512 bytes.
                const auto at = reinterpret_cast<std::uintptr_t>(base);
                const std::uintptr_t aligned = (at + 511) / 512 * 512;
                return reinterpret_cast<void*>(aligned + (alignment >= kJournalAlignment ? 0 : alignment));
            });
            g.workspace.data = workspace;
            g.workspace.bytes = workspace_bytes;
            ++total;
            std::string outcome;
            if (!allocation_error.empty()) {
                outcome = allocation_error;
            } else {
                try {
                    kernels::gemm(g.a, g.b, g.d, g.epilogue, g.options, g.workspace, kernels::Stream{stream});
                    const cudaError_t synced = cudaStreamSynchronize(stream);
                    if (synced != cudaSuccess) outcome = std::string("the GEMM failed on the device: ") + cudaGetErrorString(synced);
                } catch (const kernels::GemmRefused& refused) {
                    outcome = std::string(kernels::to_string(refused.rule())) + ": " + refused.what();
                } catch (const kernels::KernelError& error) {
                    outcome = error.what();
                }
            }
            for (void* b : buffers) cudaFree(b);
            if (outcome.empty()) {
                std::printf("ok      %s #%zu %s: %s\n", path.c_str(), i, e.op.c_str(), kernels::describe_gemm(g).c_str());
            } else {
                ++failed;
                std::printf("FAILED  %s #%zu %s: %s: %s\n", path.c_str(), i, e.op.c_str(), kernels::describe_gemm(g).c_str(),
                            outcome.c_str());
            }
        }
    }
    cudaFree(workspace);
    cudaStreamDestroy(stream);
    std::printf("%d of %d GEMMs ran on the GPU at their journal's alignments\n", total - failed, total);
    return failed == 0 ? 0 : 1;
}
#endif

int usage(const std::string& problem) {
    std::fprintf(stderr, "tewb-gemm-replay: %s\nusage: tewb-gemm-replay [--rules-only] [--cc MAJOR.MINOR] JOURNAL...\n",
                 problem.c_str());
    return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
    bool rules_only = false;
    kernels::GemmTarget device{false, 9, 0};
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--rules-only") {
            rules_only = true;
        } else if (arg == "--cc") {
            if (i + 1 >= argc) return usage("--cc needs a value, e.g. 9.0");
            const std::string value = argv[++i];
            int major = 0, minor = 0;
            char dot = 0, extra = 0;
            std::istringstream in(value);
            if (!(in >> major >> dot >> minor) || dot != '.' || (in >> extra) || major < 1 || major > 20 || minor < 0 || minor > 9) {
                return usage("--cc '" + value + "': expected MAJOR.MINOR, e.g. 9.0 (major 1 to 20, minor 0 to 9)");
            }
            device.cc_major = major;
            device.cc_minor = minor;
        } else if (arg == "-h" || arg == "--help") {
            std::printf("usage: tewb-gemm-replay [--rules-only] [--cc MAJOR.MINOR] JOURNAL...\n");
            return 0;
        } else if (!arg.empty() && arg[0] == '-') {
            return usage("unknown option '" + arg + "'; allowed: --rules-only, --cc MAJOR.MINOR");
        } else {
            paths.push_back(arg);
        }
    }
    if (paths.empty()) return usage("no journal given");
    std::vector<std::pair<std::string, GemmJournal>> journals;
    for (const std::string& path : paths) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return usage(path + ": cannot be read");
        std::ostringstream text;
        text << in.rdbuf();
        try {
            journals.emplace_back(path, read_gemm_journal(text.str(), path));
        } catch (const DataError& e) {
            return usage(e.what());
        }
        if (journals.back().second.gemms.empty()) return usage(path + ": the journal holds no GEMM");
    }
    if (rules_only) return check_rules(journals, device);
#ifdef TEWB_REPLAY_ON_GPU
    return replay_on_gpu(journals);
#else
    std::printf("this build has no CUDA kernels: nothing replayed (--rules-only checks the journals against the rule table)\n");
    return kExitNoGpu;
#endif
}
