#include <cstdint>
#include <limits>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "loss/loss_call.h"
#include "loss/loss_rule.h"
#include "tewb_kernels/loss.h"

namespace tewb::kernels::detail {

namespace {

// What forward and backward share: the shape, the logits and the targets.
void check_logits_and_targets(const char* call, const Tensor& logits_ref, const TokensRef& targets_ref) {
    const void* logits = logits_ref.data;
    const DType logits_dtype = logits_ref.dtype;
    const std::size_t rows = logits_ref.rows;
    const std::size_t vocab = logits_ref.cols;
    const std::int64_t* targets = targets_ref.data;
    const std::size_t seq = targets_ref.seq;
    const std::size_t target_row_stride = targets_ref.row_stride;
    check_dims(call, rows, vocab);
    if (rows == 0) fail(call, "rows = 0; allowed: 1 or more (the loss is the mean over rows, undefined over none)");
    if (vocab == 0) fail(call, "vocab = 0; allowed: 1 or more");
    if (seq == 0) fail(call, "seq = 0; allowed: 1 or more");
    if (rows % seq != 0) {
        fail(call, "rows = " + std::to_string(rows) + " is not a multiple of seq = " + std::to_string(seq) +
                       "; allowed: rows = batch * seq");
    }
    if (targets_ref.batch != rows / seq) {
        fail(call, "targets are [" + std::to_string(targets_ref.batch) + ", " + std::to_string(seq) + "]; allowed: [" +
                       std::to_string(rows / seq) + ", " + std::to_string(seq) + "] (one target per row of logits)");
    }
    if (target_row_stride < seq) {
        fail(call,
             "target_row_stride = " + std::to_string(target_row_stride) + "; allowed: at least seq = " + std::to_string(seq));
    }
    // The last target's element offset must fit the kernels' 64-bit indexing.
    constexpr auto kMaxOffset = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max() / 8);
    const std::size_t batch = rows / seq;
    if (batch > 1 && target_row_stride > (kMaxOffset - seq) / (batch - 1)) {
        fail(call, "target_row_stride = " + std::to_string(target_row_stride) + " with " + std::to_string(batch) +
                       " sequences; allowed: (batch - 1) * target_row_stride + seq at most " + std::to_string(kMaxOffset));
    }
    check_float_or_bf16(call, logits_dtype, "logits");
    check_buffer(call, logits, "logits", element_size(logits_dtype));
    check_buffer(call, targets, "targets", alignof(std::int64_t));
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a);
    const auto b0 = reinterpret_cast<std::uintptr_t>(b);
    return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

void check_cross_entropy_forward_arguments(const char* call, const Tensor& logits, const TokensRef& targets,
                                           const float* lse, const float* loss, const Workspace& workspace,
                                           std::size_t needed_workspace) {
    check_logits_and_targets(call, logits, targets);
    check_buffer(call, lse, "lse", alignof(float));
    check_buffer(call, loss, "loss", alignof(float));
    check_workspace(call, workspace.data, workspace.bytes, needed_workspace, "cross_entropy_forward_workspace_bytes");
    check_buffer(call, workspace.data, "workspace", alignof(double));  // the partial sums are doubles
}

void check_cross_entropy_forward_with_grad_arguments(const char* call, const Tensor& logits_ref,
                                                     const TokensRef& targets_ref, const float* lse, const float* loss,
                                                     const Workspace& workspace_ref, std::size_t needed_workspace) {
    check_cross_entropy_forward_arguments(call, logits_ref, targets_ref, lse, loss, workspace_ref, needed_workspace);
    const void* logits = logits_ref.data;
    const std::size_t rows = logits_ref.rows;
    const std::size_t seq = targets_ref.seq;
    const std::size_t target_row_stride = targets_ref.row_stride;
    const void* workspace = workspace_ref.data;
    const std::size_t logits_bytes = rows * logits_ref.cols * element_size(logits_ref.dtype);
    const auto refuse_overlap = [&](const void* p, std::size_t bytes, const char* name) {
        if (overlap(logits, logits_bytes, p, bytes)) {
            fail(call, std::string(name) + " overlaps logits; allowed: a separate buffer (the logits are overwritten with "
                                           "their gradient)");
        }
    };
    const std::size_t target_count = (rows / seq - 1) * target_row_stride + seq;  // checked to fit by the forward's rules
    refuse_overlap(targets_ref.data, target_count * sizeof(std::int64_t), "targets");
    refuse_overlap(lse, rows * sizeof(float), "lse");
    refuse_overlap(loss, sizeof(float), "loss");
    refuse_overlap(workspace, needed_workspace, "workspace");
}

void check_cross_entropy_backward_arguments(const char* call, const Tensor& logits_ref, const TokensRef& targets,
                                            const float* lse, const float* grad_loss, const Tensor& dlogits_ref) {
    check_logits_and_targets(call, logits_ref, targets);
    const void* logits = logits_ref.data;
    const DType logits_dtype = logits_ref.dtype;
    const std::size_t rows = logits_ref.rows;
    const std::size_t vocab = logits_ref.cols;
    const void* dlogits = dlogits_ref.data;
    const DType dlogits_dtype = dlogits_ref.dtype;
    check_float_or_bf16(call, dlogits_dtype, "dlogits");
    check_shape(call, dlogits_ref, "dlogits", rows, vocab);
    check_buffer(call, lse, "lse", alignof(float));
    check_buffer(call, grad_loss, "grad_loss", alignof(float));
    check_buffer(call, dlogits, "dlogits", element_size(dlogits_dtype));
    const std::size_t elements = rows * vocab;
    if (dlogits == logits) {
        if (dlogits_dtype != logits_dtype) {
            fail(call, "dlogits is logits (in place) with dtype " + std::string(to_string(dlogits_dtype)) + " over " +
                           std::string(to_string(logits_dtype)) + " logits; allowed in place: the same dtype");
        }
    } else if (overlap(logits, elements * element_size(logits_dtype), dlogits, elements * element_size(dlogits_dtype))) {
        fail(call,
             "dlogits overlaps logits without being the same buffer; allowed: separate buffers, or dlogits == logits "
             "(in place, the same dtype)");
    }
}

}  // namespace

CrossEntropyForwardCall cross_entropy_forward_call(const char* call, const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                                   const Tensor& loss, const Workspace& workspace, bool with_grad) {
    const CrossEntropyForwardCall a{logits, token_rows(call, targets, "targets"), float_vector(call, lse, "lse", logits.rows),
                                    float_vector(call, loss, "loss", 1), workspace};
    const std::size_t needed = cross_entropy_forward_workspace_bytes(logits.rows, logits.cols);
    if (with_grad) {
        check_cross_entropy_forward_with_grad_arguments(call, a.logits, a.targets, a.lse, a.loss, a.workspace, needed);
    } else {
        check_cross_entropy_forward_arguments(call, a.logits, a.targets, a.lse, a.loss, a.workspace, needed);
    }
    return a;
}

CrossEntropyBackwardCall cross_entropy_backward_call(const char* call, const Tensor& logits, const Tensor& targets,
                                                     const Tensor& lse, const Tensor& grad_loss, const Tensor& dlogits) {
    const CrossEntropyBackwardCall a{logits, token_rows(call, targets, "targets"), float_vector(call, lse, "lse", logits.rows),
                                     float_vector(call, grad_loss, "grad_loss", 1), dlogits};
    check_cross_entropy_backward_arguments(call, a.logits, a.targets, a.lse, a.grad_loss, a.dlogits);
    return a;
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

std::size_t cross_entropy_forward_workspace_bytes(std::size_t rows, std::size_t /*vocab*/) {
    return detail::cross_entropy_blocks(rows) * sizeof(double);
}

}  // namespace tewb::kernels
