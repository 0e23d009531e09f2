#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "core/fp8/Fp8StateOps.h"
#include "core/fp8/Fp8Stats.h"
#include "core/fp8/Recipe.h"

namespace tewb {

enum class Fp8Pass { Forward, Backward };

// The FP8 state of a model (or of one stand-alone module): per GEMM three forward slots (input, weight,
// output) and two backward slots (grad-output, grad-input), each with a scale (starts at 1) and an amax
// history of the recipe's length (starts at zeros; index 0 is the staging entry casts record into).
// All slots of a pass live in one tensor, so updating them is one call (one launch on a GPU).
//
// The scale storage contract (docs/kernels.md): every scale, scale_inv, kept scale_inv and amax staging entry
// sits at the start of its own kSlotBytes slot, as Transformer Engine keeps each in its own tensor, so a pointer
// to one slot's value (what a cast or a GEMM is handed) is as aligned as the allocation: 512 bytes from the CUDA
// caching allocator, 64 from LibTorch's CPU allocator, never less than the 16 the GEMM's rule asks. The tensors
// below are strided views: scale and scale_inv [slots] with a stride of kSlotBytes / 4 floats, the history
// [slots, L] with rows kSlotBytes apart. The H200 refused an FP8 GEMM whose weight scale_inv sat 4 bytes into a
// packed array (cublasLtMatmul, status 15).
class Fp8Context : public std::enable_shared_from_this<Fp8Context> {
public:
    static constexpr std::int64_t kSlotBytes = 256;

    struct GemmSlots {
        int forward = 0;   // first forward slot: input, then weight, then output
        int backward = 0;  // first backward slot: grad-output, then grad-input
    };

    // Declares a GEMM of `module` (a name for statistics); call before the first FP8 forward.
    GemmSlots add_gemm(const std::string& module);
    int gemm_count() const { return static_cast<int>(modules_.size()); }

    // Sizes and places the state for `recipe` on `device` at the first FP8 forward; `ops` (the run's
    // ops, kernels or reference) updates it. A later call with a different history length or device
    // starts the state again from scale 1 (Transformer Engine re-creates its meta likewise); other recipe
    // fields and the ops take effect at once.
    void prepare(const Fp8Recipe& recipe, bool inspect, const c10::Device& device, const Fp8StateOps& ops);
    bool prepared() const { return prepared_; }
    const Fp8Recipe& recipe() const { return recipe_; }
    bool inspect() const { return inspect_; }
    // Data parallelism: called with a pass's staged amaxes ([slots], a view into the history) before every
    // scale update, to reduce them across ranks in place (Transformer Engine's reduce_amax), so every rank
    // derives the same scales. None by default.
    void set_amax_reducer(std::function<void(const at::Tensor& staged)> reducer) { amax_reducer_ = std::move(reducer); }
    Fp8Dtype dtype(Fp8Pass pass) const;

    // What casts use (all float32 tensors on the state's device). scale() is a view into the state.
    at::Tensor scale(Fp8Pass pass, int slot) const;
    // A delayed-scaling cast's scale_inv without a launch: `now`, a view of the slot's scale_inv, right until
    // the pass's next update; `after_update`, where the same value is found after that update (which first
    // copies the pass's scale_inv there, one launch per pass), for the GEMMs that run after it (the backward
    // of a forward cast). Two such copies alternate from update to update, so a forward's values outlive
    // one further forward pass before its backward (gradient accumulation), not two; a CUDA graph replays
    // the copy with the step, into the buffer it captured.
    struct LiveScaleInv {
        at::Tensor now;
        at::Tensor after_update;
    };
    LiveScaleInv live_scale_inv(Fp8Pass pass, int slot) const;
    void record_amax(Fp8Pass pass, int slot, const at::Tensor& amax);  // staging = max(staging, amax); NaN wins
    void set_scale(Fp8Pass pass, int slot, const at::Tensor& scale);   // current scaling: the scale just used
    void count(Fp8Pass pass, int slot, const at::Tensor& saturated, const at::Tensor& underflow, std::int64_t numel);
    // Inspection: the squared errors of this cast (as cast, and under the what-if recipes) and Σx², all
    // float64 scalars on the state's device.
    struct CastErrors {
        at::Tensor error;                                // Σ (dequantized − x)²
        at::Tensor signal;                               // Σ x²
        std::array<at::Tensor, kWhatIfCount> what_if;    // the same under each what-if recipe (kWhatIfs' order)
    };
    void count_errors(Fp8Pass pass, int slot, const CastErrors& errors);
    // Inspection under a recipe with block scales: one bin index per block of a cast (block_scale_bins), added to
    // the slot's histogram of the run.
    void count_block_scales(Fp8Pass pass, int slot, const at::Tensor& bins);
    // Every statistics slot's histogram (quantized_slots' order) since the state was sized; empty unless this
    // state inspected a recipe with block scales. Copies to the host (a device sync): call after the last step.
    std::vector<Fp8ScaleHistogram> block_scale_histograms() const;
    // Host time spent inspecting (measured where the tensors are on the CPU; asynchronous CUDA work is not
    // timed), since the last call.
    void add_inspection_ms(double ms) { inspection_ms_ += ms; }
    double take_inspection_ms() {
        const double ms = inspection_ms_;
        inspection_ms_ = 0;
        return ms;
    }
    // The role of a slot our modules cast into (input, weight, grad-output), for the what-if block shape.
    static SlotRole role_of(Fp8Pass pass, int slot);

    // Updates every slot of the pass in one call with the rule of FP8_RECIPE.md (current scaling: no
    // history, the staging entries are cleared), after copying this step's amax and scale into the
    // statistics. The forward update advances generation(), which cached FP8 weights key on.
    void update(Fp8Pass pass);
    // Called from backward nodes: runs update(Backward) once when the whole backward pass has finished.
    void request_backward_update();
    std::uint64_t generation() const { return generation_; }
    // Counts every update of either pass and every restart, never going back: a cast made with a slot's scale and
    // used later is still that scale's while this has not moved (GradientHandOver).
    std::uint64_t scale_changes() const { return scale_changes_; }
    // True while the pass's casts calibrate their own scale (Fp8Recipe::calibrate_first_step): delayed
    // scaling with calibration on, and no update of the pass since the state was (re)started. Known on the
    // host, so deciding costs no device sync.
    bool calibrating(Fp8Pass pass) const;
    std::uint64_t weight_casts() const { return weight_casts_; }
    void note_weight_cast() { ++weight_casts_; }
    // NVFP4's stochastic rounding: `count` positions of the state's random stream (seed kRandomSeed, Philox: a run's
    // casts draw in the order they run, so a run's bits repeat in the next run of the same configuration).
    static constexpr std::uint64_t kRandomSeed = 0x7E3B5EEDull;
    std::uint64_t draw_random(std::uint64_t count) {
        const std::uint64_t first = random_drawn_;
        random_drawn_ += count;
        return first;
    }

    // The slots our modules cast into (per GEMM: input, weight, grad-output) with their dtypes under
    // `recipe`, in a fixed order (known before the first step), and their values from the latest
    // updates: [statistics_rows(), kStatisticsColumns] float32 on the state's device with columns amax,
    // scale used, saturated fraction, underflow fraction, relative MSE, then the relative MSE under each what-if
    // recipe in kWhatIfs' order (all but the first two NaN unless inspecting).
    static constexpr int kStatisticsColumns = 5 + static_cast<int>(kWhatIfCount);
    std::vector<Fp8SlotInfo> quantized_slots(const Fp8Recipe& recipe) const;
    at::Tensor statistics() const;
    std::int64_t statistics_rows() const;
    // One step's samples from statistics() copied to the host: `rows` rows of kStatisticsColumns floats.
    static std::vector<Fp8SlotSample> read_statistics(const float* values, std::int64_t rows);

    // The raw state, for tests and the self-test: [slots, L] history, [slots] scale and scale_inv.
    const at::Tensor& history(Fp8Pass pass) const { return bank(pass).history; }
    const at::Tensor& scales(Fp8Pass pass) const { return bank(pass).scale; }
    const at::Tensor& scale_invs(Fp8Pass pass) const { return bank(pass).scale_inv; }
    // Every slot's statistics columns from the pass's latest update, [slots, kStatisticsColumns].
    const at::Tensor& slot_statistics(Fp8Pass pass) const { return bank(pass).last; }

private:
    static constexpr int kCounters = 5 + static_cast<int>(kWhatIfCount);
    struct Bank {
        at::Tensor history;    // [slots, L]
        at::Tensor scale;      // [slots]
        at::Tensor scale_inv;  // [slots]
        at::Tensor kept[2];    // [slots] each: scale_inv as it was before an update (live_scale_inv)
        int next_kept = 0;     // the one the next update fills
        at::Tensor counters;   // [slots, kCounters] float64: saturated, underflow, elements cast, error, signal,
                               // then each what-if recipe's error
        at::Tensor scale_bins;  // [slots, kBins + 1] float64: block scales per binade, then blocks without a scale
        at::Tensor last;       // [slots, kStatisticsColumns]: the statistics columns, written by update()
    };
    Bank& bank(Fp8Pass pass) { return pass == Fp8Pass::Forward ? forward_ : backward_; }
    const Bank& bank(Fp8Pass pass) const { return pass == Fp8Pass::Forward ? forward_ : backward_; }
    void check_prepared(const char* what) const;

    std::vector<std::string> modules_;
    at::Tensor statistics_rows_;  // which rows of the two banks statistics() returns, on the state's device
    const Fp8StateOps* ops_ = nullptr;
    Fp8Recipe recipe_;
    bool inspect_ = false;
    std::function<void(const at::Tensor&)> amax_reducer_;
    bool prepared_ = false;
    Bank forward_;
    Bank backward_;
    std::uint64_t generation_ = 0;
    std::uint64_t scale_changes_ = 0;
    std::uint64_t updates_[2] = {0, 0};  // per pass (forward, backward) since the state was (re)started
    std::uint64_t weight_casts_ = 0;
    std::uint64_t random_drawn_ = 0;
    std::atomic<bool> backward_update_queued_{false};
    double inspection_ms_ = 0;
};

// What one cast needs: where its scale comes from and where its amax goes.
struct Fp8Quantizer {
    std::shared_ptr<Fp8Context> context;
    Fp8Pass pass = Fp8Pass::Forward;
    int slot = 0;

    Fp8Dtype dtype() const { return context->dtype(pass); }
};

}  // namespace tewb
