#ifdef TEWB_FUSED_CUDA

// The FP8 recipe's scale update, the model's ends and AdamW, and whole layers: the fused ops against the reference.

#include "core/selftest/SelfTestChecks.h"

#include <vector>

#include "core/fp8/Fp8Scope.h"
#include "core/fp8/Fp8State.h"
#include "core/fp8/ScaleUpdate.h"
#include "core/model/ModelShape.h"
#include "core/model/Rotary.h"
#include "core/modules/ParameterInit.h"
#include "core/modules/TransformerLayer.h"
#include "core/modules/ops/FusedOps.h"
#include "core/modules/ops/OpsChoice.h"
#include "core/modules/ops/ReferenceOps.h"
#include "core/train/AutocastScope.h"

namespace tewb::selftest {

namespace {

void recipe_case(Checks& check, int len, AmaxAlgo algo) {
    const float specials[] = {0.0f, 1e-37f, 1e-40f, INFINITY, NAN, 3.5f, 1e30f, 0.02f};
    const Fp8Recipe recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, len, algo, 1};
    auto context = std::make_shared<Fp8Context>();
    for (int g = 0; g < 5; ++g) context->add_gemm("g" + std::to_string(g));
    context->prepare(recipe, false, c10::Device(c10::kCUDA, 0), fused_cuda_ops());
    std::int64_t mismatched = 0;
    std::int64_t compared = 0;
    for (const Fp8Pass pass : {Fp8Pass::Forward, Fp8Pass::Backward}) {
        const int slots = static_cast<int>(context->scales(pass).size(0));
        std::vector<SlotScaleState> host(static_cast<std::size_t>(slots), SlotScaleState(len));
        for (int step = 0; step < 2 * len + 3 && step < 24; ++step) {
            for (int s = 0; s < slots; ++s) {
                const float a = specials[(step * 7 + s * 3) % 8] * (1.0f + 0.125f * static_cast<float>(step % 5));
                host[static_cast<std::size_t>(s)].history[0] = a;
                context->record_amax(pass, s, at::scalar_tensor(a, cuda()));
            }
            context->update(pass);
            const at::Tensor scales = context->scales(pass).cpu();
            const at::Tensor history = context->history(pass).cpu().contiguous();
            for (int s = 0; s < slots; ++s) {
                SlotScaleState& h = host[static_cast<std::size_t>(s)];
                update_delayed(h, fp8_max(context->dtype(pass)), algo, 1);
                const auto same = [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); };
                mismatched += same(scales[s].item<float>(), h.scale) ? 0 : 1;
                const float* row = history.data_ptr<float>() + static_cast<std::ptrdiff_t>(s) * len;
                for (int i = 0; i < len; ++i) mismatched += same(row[i], h.history[static_cast<std::size_t>(i)]) ? 0 : 1;
                compared += len + 1;
            }
        }
    }
    check.mismatches("update_scaling", "scales and histories", "10 slots x " + std::to_string(len),
                     "delayed, " + std::string(to_string(algo)), mismatched, compared);
}

// The llama block at the llama-seed preset's layer shape: RMSNorm, SwiGLU of 2048, no biases, 12 query heads over
// 4 key/value heads, rotary embeddings.
TransformerLayer::Options llama_options(std::int64_t hidden) {
    TransformerLayer::Options options{hidden, 12, 2048, 0.02, 0.02, kRmsNormEps};
    options.normalization = Normalization::RmsNorm;
    options.activation = Activation::Swiglu;
    options.bias = false;
    options.kv_heads = 4;
    return options;
}

// The glue: one transformer layer (the model's own module; the gpt block or, with `llama`, the llama block) forward
// and backward through FusedOps against the same layer through the reference ops, same weights and input, two steps
// (the second with FP8 scales the first one set).
void layer_glue_case(Checks& check, bool fp8, const Fp8Recipe& recipe, bool llama) {
    const std::int64_t batch = 4, seq = 96, hidden = 768;
    const std::string shape = std::to_string(batch) + "x" + std::to_string(seq) + "x" + std::to_string(hidden) + (llama ? ", llama" : "");
    const std::string dtype = !fp8 ? "BF16 autocast"
                              : recipe.scaling == ScalingKind::Block ? "FP8 (block scaling, E4M3), BF16 autocast"
                                                                     : "FP8 (delayed, HYBRID), BF16 autocast";
    const c10::Device device(c10::kCUDA, 0);
    const TransformerLayer::Options options =
        llama ? llama_options(hidden) : TransformerLayer::Options{hidden, 12, 4 * hidden, 0.02, 0.02, kLayerNormEps};
    const RotaryTables tables = rotary_tables(seq, hidden / 12, kDefaultRopeBase);
    const RotaryAngles rotary{tables.cos.to(device), tables.sin.to(device)};
    struct Side {
        std::shared_ptr<Fp8Context> fp8 = std::make_shared<Fp8Context>();
        std::shared_ptr<TransformerLayer> layer;
    };
    Side fused, reference;
    for (Side* side : {&fused, &reference}) {
        ParameterInit init(1234);
        side->layer = std::make_shared<TransformerLayer>("layer", options, init, side->fp8);
        side->layer->to(device);
    }
    const at::Tensor x0 = at::randn({batch, seq, hidden}, cuda());
    const at::Tensor probe = at::randn({batch, seq, hidden}, cuda());
    const Fp8ScopeSettings settings{recipe, false};
    at::Tensor out[2], dx[2];
    for (int step = 0; step < 2; ++step) {
        for (int which = 0; which < 2; ++which) {
            Side& side = which == 0 ? fused : reference;
            const OpsScope ops(which == 0 ? fused_cuda_ops() : reference_ops());
            side.layer->zero_grad();
            const at::Tensor x = x0.clone().requires_grad_(true);
            at::Tensor y;
            {
                AutocastScope autocast(true, c10::kCUDA);
                const Fp8Scope scope(fp8, settings);
                y = side.layer->forward(x, llama ? &rotary : nullptr);
            }
            (y.to(at::kFloat) * probe).sum().backward();
            out[which] = y.detach().to(at::kFloat);
            dx[which] = x.grad().detach();
        }
    }
    const double bound = fp8 ? kE4m3Bound : kBf16Bound;
    check.relative("te layer (fused vs reference)", "out", shape, dtype, out[0], out[1], bound);
    check.relative("te layer (fused vs reference)", "dx", shape, dtype, dx[0], dx[1], bound);
    const auto fused_params = fused.layer->named_parameters();
    const auto reference_params = reference.layer->named_parameters();
    for (const auto& item : fused_params) {
        const at::Tensor& grad = item.value().grad();
        const at::Tensor* want = reference_params.find(item.key());
        if (!grad.defined() || want == nullptr || !want->grad().defined()) {
            check.mismatches("te layer (fused vs reference)", "grad " + item.key(), shape, dtype, 1, 1);
            continue;
        }
        check.relative("te layer (fused vs reference)", "grad " + item.key(), shape, dtype, grad, want->grad(), bound);
    }
}

// The model's ends and the optimizer through the fused ops against the reference ops on the same GPU: the
// embedding with and without a position table (tokens read with the trainer's row stride, repeated), the tied table's gradient added onto a
// given one, the loss with its in-place gradient, and AdamW with the bfloat16 copies, at the seed's shapes.
void model_ends_case(Checks& check, at::ScalarType dtype) {
    const std::int64_t batch = 32, seq = 96, hidden = 768, vocab = 4096;
    const std::string name = dtype_name(dtype);
    const double bound = dtype == at::kFloat ? kFloat32Bound : kBf16Bound;
    const TeOps& fused = fused_cuda_ops();
    const TeOps& reference = reference_ops();
    const at::Tensor batch_tokens = at::randint(vocab, {batch, seq + 1}, cuda().dtype(at::kLong));
    const at::Tensor tokens = batch_tokens.narrow(1, 0, seq);
    const at::Tensor targets = batch_tokens.narrow(1, 1, seq);
    const at::Tensor table = (at::randn({vocab, hidden}, cuda()) * 0.02).to(dtype);
    const at::Tensor positions = (at::randn({seq, hidden}, cuda()) * 0.02).to(dtype);
    const std::string rows = shape_text(batch * seq, hidden);
    check.exact("embedding_forward", "out", rows, name, fused.embedding_forward(table, positions, tokens),
                reference.embedding_forward(table, positions, tokens));
    // Without a position table (llama): the kernel's gather alone.
    check.exact("embedding_forward", "out, no positions", rows, name, fused.embedding_forward(table, at::Tensor(), tokens),
                reference.embedding_forward(table, at::Tensor(), tokens));

    const at::Tensor dy = at::randn({batch * seq, hidden}, cuda()).to(dtype);
    const at::Tensor start = at::randn({vocab, hidden}, cuda());
    at::Tensor dtable = start.clone(), want_dtable = start.clone();
    const at::Tensor dpositions = fused.embedding_backward(dy, tokens, dtable, dtype);
    const at::Tensor want_dpositions = reference.embedding_backward(dy, tokens, want_dtable, dtype);
    check.relative("embedding_backward", "dtable (added to a given one)", shape_text(vocab, hidden), name, dtable, want_dtable,
                   kFloat32Bound);
    check.relative("embedding_backward", "dpositions", shape_text(seq, hidden), name, dpositions, want_dpositions, bound);

    const at::Tensor logits = (at::randn({batch * seq, vocab}, cuda()) * 2).to(dtype);
    at::Tensor grad = logits.clone(), want_grad = logits.clone();
    const at::Tensor loss = fused.cross_entropy_with_grad(grad, targets);
    const at::Tensor want_loss = reference.cross_entropy_with_grad(want_grad, targets);
    const std::string logits_shape = shape_text(batch * seq, vocab);
    check.relative("cross_entropy_with_grad", "loss", logits_shape, name, loss, want_loss, kFloat32Bound);
    check.relative("cross_entropy_with_grad", "dlogits (in place)", logits_shape, name, grad, want_grad, bound);
}

void adamw_case(Checks& check) {
    const TeOps& fused = fused_cuda_ops();
    const TeOps& reference = reference_ops();
    std::vector<at::Tensor> params[2], grads, exp_avg[2], exp_avg_sq[2], copies[2];
    for (const std::vector<std::int64_t>& shape : std::vector<std::vector<std::int64_t>>{{4096, 768}, {2304, 768}, {2304}, {7}}) {
        const at::Tensor p = at::randn(shape, cuda());
        grads.push_back(at::randn(shape, cuda()) * 0.01);
        for (int side = 0; side < 2; ++side) {
            params[side].push_back(p.clone());
            exp_avg[side].push_back(at::zeros_like(p));
            exp_avg_sq[side].push_back(at::zeros_like(p));
            copies[side].push_back(at::empty_like(p, p.options().dtype(at::kBFloat16)));
        }
    }
    const at::Tensor steps[2] = {at::zeros({}, cuda()), at::zeros({}, cuda())};
    const AdamWHyper hyper{3e-4, 0.9, 0.95, 1e-8, 0.1};
    for (int step = 0; step < 3; ++step) {
        fused.adamw_step(params[0], grads, exp_avg[0], exp_avg_sq[0], steps[0], copies[0], {}, hyper);
        reference.adamw_step(params[1], grads, exp_avg[1], exp_avg_sq[1], steps[1], copies[1], {}, hyper);
    }
    const std::string shape = "4 tensors, 5.0M elements, 3 steps";
    check.exact("adamw_step", "step", shape, "float32", steps[0], steps[1]);
    for (std::size_t i = 0; i < grads.size(); ++i) {
        const std::string what = "tensor " + std::to_string(i);
        check.relative("adamw_step", what + " param", shape, "float32", params[0][i], params[1][i], kFloat32Bound);
        check.relative("adamw_step", what + " exp_avg", shape, "float32", exp_avg[0][i], exp_avg[1][i], kFloat32Bound);
        check.relative("adamw_step", what + " exp_avg_sq", shape, "float32", exp_avg_sq[0][i], exp_avg_sq[1][i], kFloat32Bound);
        check.exact("adamw_step", what + " bfloat16 copy", shape, "bfloat16", copies[0][i], params[0][i].to(at::kBFloat16));
    }

    // A fourth step that also writes the two weights' FP8 copies (delayed scaling, a scale that is not 1): the
    // cast kernel's bytes on the new weights, and the amax it records.
    auto context = std::make_shared<Fp8Context>();
    for (int g = 0; g < 2; ++g) context->add_gemm("w" + std::to_string(g));
    context->prepare(Fp8Recipe{ScalingKind::Delayed, RecipeFormat::Hybrid, 4, AmaxAlgo::Max, 0}, false, c10::Device(c10::kCUDA, 0),
                     fused_cuda_ops());
    const std::vector<OptimizerFp8Cast> fp8 = {{0, {context, Fp8Pass::Forward, 1}}, {1, {context, Fp8Pass::Forward, 4}}};
    for (const OptimizerFp8Cast& c : fp8) context->record_amax(c.quantizer.pass, c.quantizer.slot, at::scalar_tensor(3.5f, cuda()));
    context->update(Fp8Pass::Forward);
    context->history(Fp8Pass::Forward).select(1, 0).zero_();
    const std::vector<Fp8Tensor> written = fused.adamw_step(params[0], grads, exp_avg[0], exp_avg_sq[0], steps[0], copies[0], fp8, hyper);
    const at::Tensor amaxes = context->history(Fp8Pass::Forward).select(1, 0).clone();
    context->history(Fp8Pass::Forward).select(1, 0).zero_();
    const std::vector<Fp8Tensor> cast =
        fused.quantize_weights({{params[0][0], fp8[0].quantizer}, {params[0][1], fp8[1].quantizer}});
    const std::string fp8_shape = "2 weights, step 4";
    for (std::size_t i = 0; i < fp8.size(); ++i) {
        const std::string what = "weight " + std::to_string(i);
        const std::string e4m3(to_string(Fp8Dtype::E4M3));
        check.exact("adamw_step", what + " FP8 copy", fp8_shape, e4m3, written[i].data.view(at::kByte), cast[i].data.view(at::kByte));
        check.exact("adamw_step", what + " FP8 transposed copy", fp8_shape, e4m3, written[i].transposed.view(at::kByte),
                    cast[i].transposed.view(at::kByte));
    }
    check.exact("adamw_step", "amaxes recorded", fp8_shape, "float32", amaxes, context->history(Fp8Pass::Forward).select(1, 0));
}

}  // namespace

void recipe_updates(Checks& check) {
    for (const int len : {1, 5, 300}) {
        for (const AmaxAlgo algo : {AmaxAlgo::Max, AmaxAlgo::MostRecent}) {
            check.attempt("update_scaling", "10 slots x " + std::to_string(len), "delayed, " + std::string(to_string(algo)),
                          [&] { recipe_case(check, len, algo); });
        }
    }
}

void model_ends(Checks& check) {
    for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        check.attempt("model ends (fused vs reference)", "32x96, vocab 4096", dtype_name(dtype), [&] { model_ends_case(check, dtype); });
    }
    check.attempt("adamw_step", "4 tensors", "float32", [&] { adamw_case(check); });
}

void layer_glue(Checks& check, bool fp8_capable, bool block_capable) {
    for (const bool llama : {false, true}) {
        const std::string shape = llama ? "4x96x768, llama" : "4x96x768";
        for (const bool fp8 : {false, true}) {
            if (fp8 && !fp8_capable) continue;
            check.attempt("te layer (fused vs reference)", shape, fp8 ? "FP8" : "BF16",
                          [&] { layer_glue_case(check, fp8, Fp8Recipe::seed_defaults(), llama); });
        }
        if (block_capable) {
            Fp8Recipe block = Fp8Recipe::seed_defaults();
            block.scaling = ScalingKind::Block;
            block.format = RecipeFormat::E4M3;
            check.attempt("te layer (fused vs reference)", shape, "FP8 block scaling",
                          [&] { layer_glue_case(check, true, block, llama); });
        }
    }
}

}  // namespace tewb::selftest

#endif  // TEWB_FUSED_CUDA
