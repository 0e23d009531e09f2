#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

// The GEMM journal: every distinct GEMM the fused ops issued while it was open (types, shape, layout, scale modes,
// epilogue, and the alignment of every pointer the call actually passed, scales included), as `te-bench run
// --gemm-journal PATH` writes it. Written on the CPU by the fused host path, checked against the GEMM's rule table
// in CI and replayed on a GPU at those alignments by tewb-gemm-replay (bench/gemm_replay.cpp), so a change on the
// CPU side that breaks a rule only cuBLASLt enforces shows in the first minute of the next GPU run. Plain C++: no
// LibTorch, no kernels.
namespace tewb {

struct GemmJournalEntry {
    std::string op;  // the fused op that issued it: fp8_gemm, gemm, gemm_gelu, gemm_dgelu, wgrad_gemm, ...
    std::uint64_t m = 0, n = 0, k = 0;
    std::string a_type, b_type, d_type;  // "float32", "bfloat16", "E4M3", "E5M2"
    std::string bias_type;               // the same names; what the call set, read only with a bias epilogue
    bool a_transposed = false, b_transposed = false;
    std::string a_scales, b_scales;  // FP8 operands: "tensor", "1x128", "128x128"; empty otherwise (microscaled
                                     // GEMMs are emulated, never issued, so no journal names their modes)
    std::string epilogue;            // "none", "BIAS", "GELU_AUX_BIAS", "DGELU_BGRAD", "BGRADB"
    std::string accumulation;        // "fast", "split"
    std::uint64_t aux_ld = 0;
    // Every pointer the call passed ("a", "b", "d", "c", "bias", "aux", "bias_grad", "a.scale_inv", "b.scale_inv",
    // "d_scale", "d_amax"): the largest power of two up to kJournalAlignment that divides its address, in bytes.
    std::map<std::string, std::uint32_t> alignment;
    std::uint64_t calls = 0;  // how often the run issued it

    // Everything but `calls`: two calls with the same key are one entry.
    std::string key() const;
};

struct GemmJournal {
    std::string written_by;  // "te-bench 0.1.0 (<commit>)"
    std::string run;         // what ran: the configuration's name and sizes
    std::vector<GemmJournalEntry> gemms;
};

// What an allocation's start guarantees: LibTorch's CPU allocator 64 bytes, the CUDA caching allocator more. The
// journal records alignments up to this, so a pointer below it (an offset into an allocation: a view, a slot of a
// packed array) is a fact about the code, and one at it is "where an allocation starts", whatever the allocator
// gave that run; the GPU replay puts the latter at 256 bytes, as the CUDA allocator would.
inline constexpr std::uint32_t kJournalAlignment = 64;

// The process-wide recorder (a run trains on one thread at a time; the autograd engine's thread notes too, so it
// locks). note_gemm does nothing while no journal is open.
void start_gemm_journal();
bool gemm_journal_open();
void note_gemm(const GemmJournalEntry& entry);
std::vector<GemmJournalEntry> stop_gemm_journal();  // in the order first issued; closes the journal

std::string gemm_journal_json(const GemmJournal& journal);
// Throws DataError naming `where` and the field when the text is not a journal of this schema.
GemmJournal read_gemm_journal(const std::string& text, const std::string& where);

}  // namespace tewb
