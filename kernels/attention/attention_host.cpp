// The attention on the host: attention.cu's roundings (P, dS and the outputs to bfloat16) with float32 sums in a
// fixed order, one (sequence, head) at a time (the backward: one (sequence, key/value head), its query heads in order). Every sum is written as an update of a row (x[:] += a · y[:]) so the
// loops vectorise without reordering any single sum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "amax/current_scale_host.h"
#include "attention/attention_call.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/attention.h"

namespace tewb::kernels::host {

namespace {

float round_bf16(float v) {
    return detail::bf16_to_float(detail::float_to_bf16(v));
}

// One (sequence, head)'s rows of a [batch * seq, heads * head_dim] matrix.
struct HeadView {
    const detail::AttentionGeometry& g;
    std::size_t b, h;
    std::size_t first(const detail::HeadRows& m, std::size_t i) const { return (b * g.seq + i) * m.stride + h * g.head_dim; }
    // [seq, head_dim] as floats.
    std::vector<float> load(const detail::HeadRows& m) const {
        std::vector<float> out(g.seq * g.head_dim);
        for (std::size_t i = 0; i < g.seq; ++i) {
            detail::load_floats(m.data, DType::BFloat16, first(m, i), g.head_dim, out.data() + i * g.head_dim);
        }
        return out;
    }
    // rows [seq, head_dim] rounded to bfloat16 after a factor (1: none); the largest |value| bits as stored, read back
    // (the amax hand-off's; 0 without a target).
    std::uint32_t store(const detail::HeadRows& m, std::vector<float>& rows, float factor, const detail::StoredAmax& fresh) const {
        std::uint32_t stored = 0;
        for (std::size_t i = 0; i < g.seq; ++i) {
            float* row = rows.data() + i * g.head_dim;
            if (factor != 1.0f) {
                for (std::size_t d = 0; d < g.head_dim; ++d) row[d] *= factor;
            }
            detail::store_floats(m.data, DType::BFloat16, first(m, i), g.head_dim, row);
            stored = std::max(stored, fresh.of(m.data, first(m, i), g.head_dim, row));
        }
        return stored;
    }
};

std::vector<float> transposed(const std::vector<float>& m, std::size_t rows, std::size_t cols) {
    std::vector<float> t(m.size());
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
    }
    return t;
}

// s[j] = Σ_d a[i, d] · b[j, d] for j < n, d in order, with bt = bᵀ [head_dim, seq].
void row_dots(const float* a_row, const std::vector<float>& bt, std::size_t seq, std::size_t head_dim, std::size_t n, float* s) {
    std::fill(s, s + n, 0.0f);
    for (std::size_t d = 0; d < head_dim; ++d) {
        const float x = a_row[d];
        const float* col = bt.data() + d * seq;
        for (std::size_t j = 0; j < n; ++j) s[j] += x * col[j];
    }
}

void axpy(float a, const float* x, std::size_t n, float* y) {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

std::size_t cost_per_head(const detail::AttentionGeometry& g) {
    return g.seq * g.seq * g.head_dim;
}

// Both forward entry points' work after their checks (fresh.scale null: the plain form).
void forward(const detail::AttentionForwardCall* a, const detail::CurrentScaleCall& fresh) {
    const detail::AttentionGeometry& g = a->g;
    detail::StoredAmax fresh_amax(fresh, nullptr, DType::BFloat16);
    const std::size_t D = g.head_dim;
    detail::parallel_for(g.batch * g.heads, cost_per_head(g), [&](std::size_t first, std::size_t last) {
        std::vector<float> s(g.seq);
        for (std::size_t bh = first; bh < last; ++bh) {
            const HeadView view{g, bh / g.heads, bh % g.heads};
            const HeadView kv_view{g, view.b, view.h / (g.heads / g.kv_heads)};
            const std::vector<float> qs = view.load(a->q);
            const std::vector<float> kt = transposed(kv_view.load(a->k), g.seq, D);
            const std::vector<float> vs = kv_view.load(a->v);
            std::vector<float> out(g.seq * D, 0.0f);
            for (std::size_t i = 0; i < g.seq; ++i) {
                const std::size_t n = i + 1;  // the keys j <= i
                row_dots(qs.data() + i * D, kt, g.seq, D, n, s.data());
                float m = -std::numeric_limits<float>::infinity();
                for (std::size_t j = 0; j < n; ++j) {
                    s[j] *= g.scale;
                    m = std::max(m, s[j]);
                }
                float l = 0.0f;
                for (std::size_t j = 0; j < n; ++j) {
                    s[j] = std::exp(s[j] - m);
                    l += s[j];
                }
                for (std::size_t j = 0; j < n; ++j) axpy(round_bf16(s[j] / l), vs.data() + j * D, D, out.data() + i * D);
                a->lse[bh * g.seq + i] = m + std::log(l);
            }
            fresh_amax.combine(view.store(a->o, out, 1.0f, fresh_amax));
        }
    });
    fresh_amax.apply();
    detail::note_launch();
}

// Both backward entry points' work after their checks (fresh.scale null: the plain form).
void backward(const detail::AttentionBackwardCall* a, const detail::CurrentScaleCall& fresh) {
    const detail::AttentionGeometry& g = a->g;
    detail::StoredAmax fresh_amax(fresh, nullptr, DType::BFloat16);
    const std::size_t D = g.head_dim;
    const std::size_t S = g.seq;
    const std::size_t group = g.heads / g.kv_heads;
    detail::parallel_for(g.batch * g.kv_heads, 3 * group * cost_per_head(g), [&](std::size_t first, std::size_t last) {
        std::vector<float> p(S * S), row(S);
        for (std::size_t bk = first; bk < last; ++bk) {
            const HeadView kv_view{g, bk / g.kv_heads, bk % g.kv_heads};
            const std::vector<float> ks = kv_view.load(a->k);
            const std::vector<float> kt = transposed(ks, S, D);
            const std::vector<float> vt = transposed(kv_view.load(a->v), S, D);
            // dk's and dv's sums over the group's query heads, in order, rounded once after the last.
            std::vector<float> gk(S * D, 0.0f), gv(S * D, 0.0f);
            for (std::size_t member = 0; member < group; ++member) {
                const HeadView view{g, kv_view.b, kv_view.h * group + member};
                const std::vector<float> qs = view.load(a->q);
                const std::vector<float> os = view.load(a->o);
                const std::vector<float> dos = view.load(a->d_o);
                const float* lse_row = a->lse + (view.b * g.heads + view.h) * S;
                std::vector<float> gq(S * D, 0.0f);
                for (std::size_t i = 0; i < S; ++i) {
                    const std::size_t n = i + 1;
                    const float* do_i = dos.data() + i * D;
                    float delta = 0.0f;
                    for (std::size_t d = 0; d < D; ++d) delta += do_i[d] * os[i * D + d];
                    float* p_i = p.data() + i * S;
                    row_dots(qs.data() + i * D, kt, S, D, n, p_i);
                    for (std::size_t j = 0; j < n; ++j) p_i[j] = round_bf16(std::exp(p_i[j] * g.scale - lse_row[i]));
                    // dv[j] += P[i, j] · do[i]: for each j, a sum over i in order.
                    for (std::size_t j = 0; j < n; ++j) axpy(p_i[j], do_i, D, gv.data() + j * D);
                    row_dots(do_i, vt, S, D, n, row.data());
                    for (std::size_t j = 0; j < n; ++j) p_i[j] = round_bf16(p_i[j] * (row[j] - delta));  // dS[i, j]
                    for (std::size_t j = 0; j < n; ++j) {
                        axpy(p_i[j], ks.data() + j * D, D, gq.data() + i * D);
                        axpy(p_i[j], qs.data() + i * D, D, gk.data() + j * D);
                    }
                }
                fresh_amax.combine(view.store(a->dq, gq, g.scale, fresh_amax));
            }
            fresh_amax.combine(kv_view.store(a->dv, gv, 1.0f, fresh_amax));
            fresh_amax.combine(kv_view.store(a->dk, gk, g.scale, fresh_amax));
        }
    });
    fresh_amax.apply();
    detail::note_launch();
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads, const Tensor& o,
                       const Tensor& lse, Stream) {
    if (const auto a = detail::attention_forward_call("tewb::kernels::host::attention_forward", q, k, v, heads, o, lse)) {
        forward(&*a, {});
    }
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                        const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv, const Workspace& workspace, Stream) {
    if (const auto a = detail::attention_backward_call("tewb::kernels::host::attention_backward", q, k, v, o, d_o, lse, heads, dq,
                                                       dk, dv, workspace)) {
        backward(&*a, {});
    }
}

void attention_forward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionHeads& heads,
                                     const Tensor& o, const Tensor& lse, const CurrentScaleTarget& target, Stream stream) {
    detail::CurrentScaleCall fresh;
    const auto a = detail::attention_forward_current_scale_call("tewb::kernels::host::attention_forward_current_scale", q, k, v,
                                                                heads, o, lse, target, fresh);
    if (a) {
        forward(&*a, fresh);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(o, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void attention_backward_current_scale(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& d_o,
                                      const Tensor& lse, const AttentionHeads& heads, const Tensor& dq, const Tensor& dk,
                                      const Tensor& dv, const Workspace& workspace, const CurrentScaleTarget& target,
                                      Stream stream) {
    detail::CurrentScaleCall fresh;
    const auto a = detail::attention_backward_current_scale_call("tewb::kernels::host::attention_backward_current_scale", q, k,
                                                                 v, o, d_o, lse, heads, dq, dk, dv, workspace, target, fresh);
    if (a) {
        backward(&*a, fresh);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(dq, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels::host
