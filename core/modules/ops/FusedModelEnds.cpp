// The fused ops at the model's ends and its optimizer (FusedOpsImpl.h): the embeddings, the loss with its
// gradient, and the AdamW step with the weights' bfloat16 and FP8 copies.
#include <string>

#include <ATen/ops/embedding.h>
#include <ATen/ops/empty.h>

#include "core/modules/ops/FusedOpsImpl.h"
#include "core/modules/ops/KernelTypes.h"
#include "core/modules/ops/ReferenceOps.h"
#include "tewb_kernels/adamw.h"
#include "tewb_kernels/embedding.h"
#include "tewb_kernels/loss.h"


namespace tewb::fused_ops {

// int64 [batch, seq] token ids as the kernels take them. The distance between the rows: LibTorch leaves a
// single row's stride free (an expand can make it 0), the kernels take seq then.
kernels::Tensor FusedOps::tokens_tensor(const at::Tensor& t) {
    kernels::Tensor tokens = kernels::input(t.data_ptr<std::int64_t>(), kernels::DType::Int64, rows_of(t), cols_of(t));
    tokens.row_stride = static_cast<std::size_t>(t.size(0) > 1 ? t.stride(0) : t.size(1));
    return tokens;
}

// int64 [batch, seq] token ids whose rows may be apart (a narrow of the trainer's [batch, seq + 1] batch).
Misfit FusedOps::tokens_misfit(const at::Tensor& t, const char* what) const {
    if (Misfit m = device_misfit(t, what)) return m;
    if (t.dim() != 2 || t.numel() == 0) return std::string(what) + " are not a non-empty [batch, seq] matrix";
    if (t.scalar_type() != at::kLong)
        return std::string(what) + " are " + c10::toString(t.scalar_type()) + " (the kernels take int64)";
    if (t.stride(1) != 1 || (t.size(0) > 1 && t.stride(0) < t.size(1))) return std::string(what) + "' rows are not row-major";
    return std::nullopt;
}

at::Tensor FusedOps::embedding_forward(const at::Tensor& table, const at::Tensor& positions, const at::Tensor& tokens) const {
    // No position table (llama): the kernel gathers the rows alone, reading the tokens where they lie (LibTorch's
    // embedding copies a narrowed token batch before its gather: two launches).
    Misfit m = matrix_misfit(table, "the token table");
    if (!m) m = tokens_misfit(tokens, "tokens");
    if (!m && positions.defined() &&
        (matrix_misfit(positions, "positions") || positions.scalar_type() != table.scalar_type() ||
         positions.size(0) != tokens.size(1) || positions.size(1) != table.size(1) || positions.device() != table.device())) {
        m = "the position table is not a row-major [seq, hidden] matrix of the token table's dtype on its device";
    }
    if (!m && tokens.device() != table.device()) m = "the tokens are not on the table's device";
    if (m) {
        return fall_back("embedding_forward", *m, [&] { return reference_ops().embedding_forward(table, positions, tokens); });
    }
    at::Tensor out = at::empty({tokens.size(0) * tokens.size(1), table.size(1)}, table.options());
    TEWB_KERNEL(table, (Tensors{tokens, table, positions}), Tensors{out}, embedding_forward, tokens_tensor(tokens),
                kernel_tensor(table), kernel_tensor(positions), kernel_tensor(out));
    return out;
}

// dtable accumulated with atomics on a GPU (order not fixed where a token repeats); dpositions summed in order.
at::Tensor FusedOps::embedding_backward(const at::Tensor& dy, const at::Tensor& tokens, at::Tensor& dtable,
                                        at::ScalarType positions_dtype) const {
    Misfit m = matrix_misfit(dy, "dy");
    if (!m) m = tokens_misfit(tokens, "tokens");
    if (!m && dy.size(0) != tokens.size(0) * tokens.size(1)) m = "dy has not one row per token";
    if (!m && (matrix_misfit(dtable, "the table's gradient") || dtable.scalar_type() != at::kFloat ||
               dtable.size(1) != dy.size(1) || dtable.device() != dy.device())) {
        m = "the table's gradient is not a row-major float32 [vocab, hidden] matrix on dy's device";
    }
    const bool positions = positions_dtype != at::ScalarType::Undefined;
    if (!m && positions && !float_or_bf16(positions_dtype)) m = "the position table is not float32 or bfloat16";
    if (!m && tokens.device() != dy.device()) m = "the tokens are not on dy's device";
    if (m) {
        return fall_back("embedding_backward", *m,
                         [&] { return reference_ops().embedding_backward(dy, tokens, dtable, positions_dtype); });
    }
    const at::Tensor dpositions = positions ? at::empty({tokens.size(1), dy.size(1)}, dy.options().dtype(positions_dtype)) : at::Tensor();
    TEWB_KERNEL(dy, (Tensors{tokens, dy, dtable}), (Tensors{dtable, dpositions}), embedding_backward, tokens_tensor(tokens),
                kernel_tensor(dy), kernel_tensor(dtable), kernel_tensor(dpositions));
    return dpositions;
}

// The loss and, over the logits, its gradient for a loss gradient of 1, in one launch.
at::Tensor FusedOps::cross_entropy_with_grad(at::Tensor& logits, const at::Tensor& targets) const {
    Misfit m = matrix_misfit(logits, "the logits");
    if (!m) m = tokens_misfit(targets, "the targets");
    if (!m && logits.size(0) != targets.size(0) * targets.size(1)) m = "the logits have not one row per target";
    if (!m && targets.device() != logits.device()) m = "the targets are not on the logits' device";
    if (m)
        return fall_back("cross_entropy_with_grad", *m, [&] { return reference_ops().cross_entropy_with_grad(logits, targets); });
    at::Tensor loss = at::empty({}, logits.options().dtype(at::kFloat));
    at::Tensor lse = at::empty({logits.size(0)}, logits.options().dtype(at::kFloat));
    const at::Tensor workspace =
        byte_buffer(kernels::cross_entropy_forward_workspace_bytes(rows_of(logits), cols_of(logits)), logits);
    TEWB_KERNEL(logits, (Tensors{logits, targets}), (Tensors{logits, loss}), cross_entropy_forward_with_grad, kernel_tensor(logits),
                tokens_tensor(targets), kernel_tensor(lse), kernel_tensor(loss), workspace_ref(workspace));
    return loss;
}

// The whole list in one launch (up to kernels::kAdamWTensorsPerLaunch tensors), the bfloat16 copies written by
// the same pass.
std::vector<Fp8Tensor> FusedOps::adamw_step(at::TensorList params, at::TensorList grads, at::TensorList exp_avg,
                                            at::TensorList exp_avg_sq, const at::Tensor& step, at::TensorList copies,
                                            const std::vector<OptimizerFp8Cast>& fp8, const AdamWHyper& hyper) const {
    const auto reference = [&] {
        return reference_ops().adamw_step(params, grads, exp_avg, exp_avg_sq, step, copies, fp8, hyper);
    };
    Misfit m;
    if (params.empty()) m = "no parameters";
    if (!m && (grads.size() != params.size() || exp_avg.size() != params.size() || exp_avg_sq.size() != params.size() ||
               copies.size() != params.size())) {
        m = "the lists differ in length";
    }
    if (!m && (device_misfit(step, "the step") || step.numel() != 1 || step.scalar_type() != at::kFloat)) {
        m = "the step is not one float32 on this implementation's device";
    }
    std::vector<at::Tensor> reads, writes{step};
    std::vector<kernels::AdamWParameter> table;
    for (std::size_t i = 0; !m && i < params.size(); ++i) {
        const at::Tensor* parts[] = {&params[i], &grads[i], &exp_avg[i], &exp_avg_sq[i]};
        for (const at::Tensor* t : parts) {
            if (device_misfit(*t, "a tensor") || !t->is_contiguous() || t->scalar_type() != at::kFloat ||
                t->sizes() != params[i].sizes() || t->device() != step.device()) {
                m = "parameter " + std::to_string(i) + "'s tensors are not contiguous float32 of one shape on the step's device";
                break;
            }
        }
        const at::Tensor& copy = copies[i];
        if (!m && copy.defined() &&
            (!copy.is_contiguous() || copy.scalar_type() != at::kBFloat16 || copy.sizes() != params[i].sizes() ||
             copy.device() != step.device())) {
            m = "parameter " + std::to_string(i) + "'s copy is not a contiguous bfloat16 tensor of its shape";
        }
        if (m) break;
        table.push_back({kernel_tensor(params[i]), kernel_tensor(grads[i]), kernel_tensor(exp_avg[i]), kernel_tensor(exp_avg_sq[i]),
                         kernel_tensor(copy), kernels::Tensor{}});
        reads.insert(reads.end(), {params[i], grads[i], exp_avg[i], exp_avg_sq[i]});
        writes.insert(writes.end(), {params[i], exp_avg[i], exp_avg_sq[i]});
        if (copy.defined()) writes.push_back(copy);
    }
    for (std::size_t i = 0; !m && i < fp8.size(); ++i) {
        if (fp8[i].param >= params.size())
            m = "an FP8 copy names parameter " + std::to_string(fp8[i].param) + " of " + std::to_string(params.size());
    }
    if (m) return fall_back("adamw_step", *m, reference);
    // The FP8 copies a delayed-scaling cast kernel would write come out of the step's own pass over the new
    // weights; any other (inspected, calibrating, block-scaled) is cast after it as the next forward would.
    std::vector<Fp8Tensor> out(fp8.size());
    std::vector<std::size_t> cast_after;
    for (std::size_t i = 0; i < fp8.size(); ++i) {
        const at::Tensor& weight = params[fp8[i].param];
        kernels::AdamWParameter& entry = table[fp8[i].param];
        if (!delayed_kernel_cast(weight, fp8[i].quantizer) || entry.fp8.data != nullptr) {
            cast_after.push_back(i);
            continue;
        }
        out[i] = empty_fp8(weight, fp8[i].quantizer);
        entry.fp8 = fp8_tensor(out[i], fp8[i].quantizer);
        writes.insert(writes.end(), {out[i].data, out[i].transposed});
    }
    TEWB_KERNEL(step, reads, writes, adamw_step, table.data(), table.size(), kernel_tensor(step), hyper.lr, hyper.beta1,
                hyper.beta2, hyper.weight_decay, hyper.eps);
    for (std::size_t i = 0; i < fp8.size(); ++i) {
        if (out[i].data.defined()) hand_out_live_scale_inv(out[i], fp8[i].quantizer);
    }
    if (!cast_after.empty()) {
        std::vector<WeightCast> casts;
        for (const std::size_t i : cast_after) casts.push_back({params[fp8[i].param], fp8[i].quantizer});
        std::vector<Fp8Tensor> values = quantize_weights(casts);
        for (std::size_t k = 0; k < cast_after.size(); ++k) out[cast_after[k]] = std::move(values[k]);
    }
    return out;
}

}  // namespace tewb::fused_ops
