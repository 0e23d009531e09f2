// Softmax cross-entropy on the host in the order of loss.cu: a row's online (max, sum) pairs per thread, the
// warp's butterfly and the warps in order (loss_rule.h decides the vector width, so the order), then the
// blocks' double partial sums in block order.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "common/fail.h"
#include "common/host_loops.h"
#include "loss/loss_call.h"
#include "loss/loss_rule.h"
#include "tewb_kernels/loss.h"

namespace tewb::kernels::host {

namespace {

constexpr std::size_t kThreads = detail::kCrossEntropyThreads;
constexpr std::size_t kWarpSize = 32;

// loss.cu's OnlineSum: the largest logit seen (never NaN: it only moves to a larger one) and the sum of
// exp(x - max) over the logits seen.
struct OnlineSum {
    float max = -FLT_MAX;
    float sum = 0.0f;
};

void add_vector(OnlineSum& acc, const float* x, std::size_t width) {
    float top = x[0];
    for (std::size_t k = 1; k < width; ++k) top = std::fmax(top, x[k]);
    if (top > acc.max) {
        acc.sum *= std::exp(acc.max - top);
        acc.max = top;
    }
    for (std::size_t k = 0; k < width; ++k) acc.sum += std::exp(x[k] - acc.max);
}

OnlineSum combine(const OnlineSum& a, const OnlineSum& b) {
    const float top = std::fmax(a.max, b.max);
    return {top, a.sum * std::exp(a.max - top) + b.sum * std::exp(b.max - top)};
}

// The xor butterfly of one warp's 32 pairs; every lane ends with the same pair (the combine commutes).
OnlineSum butterfly(const OnlineSum* lanes) {
    std::array<OnlineSum, kWarpSize> v{};
    std::copy_n(lanes, kWarpSize, v.begin());
    for (std::size_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
        std::array<OnlineSum, kWarpSize> next{};
        for (std::size_t lane = 0; lane < kWarpSize; ++lane) next[lane] = combine(v[lane], v[lane ^ offset]);
        v = next;
    }
    return v[0];
}

// A row's logsumexp in the kernel's order; `lanes` is scratch of kThreads pairs.
float row_logsumexp(const float* x, std::size_t vocab, std::size_t width, std::vector<OnlineSum>& lanes) {
    std::fill(lanes.begin(), lanes.end(), OnlineSum{});
    const std::size_t vectors = vocab / width;
    for (std::size_t v = 0; v < vectors; ++v) add_vector(lanes[v % kThreads], x + v * width, width);
    OnlineSum total = butterfly(lanes.data());
    for (std::size_t w = 1; w < detail::kCrossEntropyWarps; ++w) total = combine(total, butterfly(lanes.data() + w * kWarpSize));
    return total.max + std::log(total.sum);
}

float target_logit(const void* logits, DType dtype, std::size_t row, std::size_t vocab, std::int64_t target) {
    if (target < 0 || static_cast<std::uint64_t>(target) >= vocab) return std::numeric_limits<float>::quiet_NaN();
    return detail::load(logits, dtype, row * vocab + static_cast<std::size_t>(target));
}

// The forward after its checks: lse, the blocks' partial sums in the workspace, and the mean.
void forward_rows(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab, const std::int64_t* targets,
                  std::size_t seq, std::size_t target_row_stride, float* lse, float* loss, void* workspace) {
    const std::size_t width = detail::cross_entropy_forward_width(logits_dtype, vocab, logits);
    const std::size_t blocks = detail::cross_entropy_blocks(rows);
    auto* partial = static_cast<double*>(workspace);
    detail::parallel_for(blocks, (rows / blocks + 1) * vocab * 4, [&](std::size_t first, std::size_t last) {
        std::vector<float> x(vocab);
        std::vector<OnlineSum> lanes(kThreads);
        for (std::size_t block = first; block < last; ++block) {
            double block_sum = 0.0;
            for (std::size_t row = block; row < rows; row += blocks) {
                detail::load_floats(logits, logits_dtype, row * vocab, vocab, x.data());
                const float row_lse = row_logsumexp(x.data(), vocab, width, lanes);
                const std::int64_t target = targets[detail::cross_entropy_target_index(row, seq, target_row_stride)];
                lse[row] = row_lse;
                block_sum += static_cast<double>(row_lse - target_logit(logits, logits_dtype, row, vocab, target));
            }
            partial[block] = block_sum;
        }
    });
    double total = 0.0;  // the last block's sum, in block order
    for (std::size_t block = 0; block < blocks; ++block) total += partial[block];
    *loss = static_cast<float>(total / static_cast<double>(rows));
}

// loss.cu's write_row_gradient: one row's (exp(x - lse) - onehot) * scale, a NaN row for a target outside
// [0, vocab). The whole row is read (into the scratch x of vocab floats) before any of it is written: dlogits
// may be logits.
void write_row_gradient(const void* logits, DType logits_dtype, std::size_t row, std::size_t vocab, std::int64_t target,
                        float row_lse, float scale, void* dlogits, DType dlogits_dtype, std::vector<float>& x) {
    detail::load_floats(logits, logits_dtype, row * vocab, vocab, x.data());
    const bool valid = target >= 0 && static_cast<std::uint64_t>(target) < vocab;
    const float row_scale = valid ? scale : std::numeric_limits<float>::quiet_NaN();
    for (std::size_t c = 0; c < vocab; ++c) {
        const float p = std::exp(x[c] - row_lse);
        const float onehot = static_cast<std::int64_t>(c) == target ? 1.0f : 0.0f;
        x[c] = (p - onehot) * row_scale;
    }
    detail::store_floats(dlogits, dlogits_dtype, row * vocab, vocab, x.data());
}

// Every row's gradient from the saved lse; scale is grad_loss / rows.
void write_gradient(const void* logits, DType logits_dtype, std::size_t rows, std::size_t vocab, const std::int64_t* targets,
                    std::size_t seq, std::size_t target_row_stride, const float* lse, float scale, void* dlogits,
                    DType dlogits_dtype) {
    detail::parallel_for(rows, vocab * 4, [&](std::size_t first, std::size_t last) {
        std::vector<float> x(vocab);
        for (std::size_t row = first; row < last; ++row) {
            const std::int64_t target = targets[detail::cross_entropy_target_index(row, seq, target_row_stride)];
            write_row_gradient(logits, logits_dtype, row, vocab, target, lse[row], scale, dlogits, dlogits_dtype, x);
        }
    });
}

// The kernels divide by their unsigned rows as a float (rows at most INT_MAX, so int is the same value).
float per_row(float grad_loss, std::size_t rows) {
    return grad_loss / static_cast<float>(static_cast<int>(rows));
}

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                           const Workspace& workspace, Stream) {
    const auto a = detail::cross_entropy_forward_call("tewb::kernels::host::cross_entropy_forward", logits, targets, lse, loss,
                                                      workspace, /*with_grad=*/false);
    forward_rows(a.logits.data, a.logits.dtype, a.logits.rows, a.logits.cols, a.targets.data, a.targets.seq, a.targets.row_stride,
                 a.lse, a.loss, a.workspace.data);
    detail::note_launch();
}

void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_loss,
                            const Tensor& dlogits, Stream) {
    const auto a = detail::cross_entropy_backward_call("tewb::kernels::host::cross_entropy_backward", logits, targets, lse,
                                                       grad_loss, dlogits);
    write_gradient(a.logits.data, a.logits.dtype, a.logits.rows, a.logits.cols, a.targets.data, a.targets.seq,
                   a.targets.row_stride, a.lse, per_row(*a.grad_loss, a.logits.rows), a.dlogits.data, a.dlogits.dtype);
    detail::note_launch();
}

// As the kernel: the forward, then each row overwritten by the backward's row routine with grad_loss 1 (the
// kernel does a row's gradient right after its lse; the rows are independent, so the values are the same).
void cross_entropy_forward_with_grad(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& loss,
                                     const Workspace& workspace, Stream) {
    const auto a = detail::cross_entropy_forward_call("tewb::kernels::host::cross_entropy_forward_with_grad", logits, targets, lse,
                                                      loss, workspace, /*with_grad=*/true);
    forward_rows(a.logits.data, a.logits.dtype, a.logits.rows, a.logits.cols, a.targets.data, a.targets.seq, a.targets.row_stride,
                 a.lse, a.loss, a.workspace.data);
    write_gradient(a.logits.data, a.logits.dtype, a.logits.rows, a.logits.cols, a.targets.data, a.targets.seq, a.targets.row_stride,
                   a.lse, per_row(1.0f, a.logits.rows), a.logits.data, a.logits.dtype);
    detail::note_launch();
}

}  // namespace tewb::kernels::host
