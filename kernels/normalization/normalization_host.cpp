// LayerNorm on the host in the order of normalization.cu and layer_norm_fast.cuh: which kernel the GPU
// would run (fast or plain) decides how a row's sums and the dgamma/dbeta partial rows are ordered.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "amax/current_scale_host.h"
#include "common/alignment.h"
#include "common/column_sum_rule.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "normalization/layer_norm_rule.h"
#include "normalization/normalization_call.h"
#include "normalization/rms_norm_fast_host.h"
#include "tewb_kernels/amax.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/normalization.h"

namespace tewb::kernels::host {

using detail::Fp8Output;

namespace {

// normalization.cu's constants.
constexpr std::size_t kColumnThreads = 256;  // columns of a plain dgamma/dbeta block: its column tile
constexpr int kWarpSize = 32;
constexpr int kFinalWarps = 8;  // warps of layer_norm_dparams_final_kernel: the classes of layer_norm_dparams.cuh

// How the kernel for these arguments orders a row: thread t of `threads` owns the columns
// (k * threads + t) * width + j, j < width, and adds them in column order; then each warp's 32 threads are
// summed by the butterfly of warp_sum and, where a row has several warps, the warps in order. The plain
// kernels are one warp per row with width 1; the fast kernels WARPS warps per row and 16-byte vectors, with
// `groups` rows per block.
struct RowOrder {
    bool fast = false;
    int threads = kWarpSize;
    std::size_t width = 1;
    int groups = 1;
};

// normalization.cu's fast_shape; `transposed`: the forward with the FP8 transposed copy (layer_norm_rule.h).
RowOrder row_order(DType x_dtype, std::size_t hidden, std::initializer_list<const void*> pointers, bool transposed = false) {
    const std::size_t width = x_dtype == DType::Float32 ? 4 : 8;
    if (x_dtype == DType::Float16 || hidden % width != 0) return {};
    if (!detail::layer_norm_fast_allows_transposed(hidden, transposed)) return {};
    for (const void* p : pointers) {
        if (p != nullptr && !detail::aligned(p, 16)) return {};
    }
    for (const int warps : {1, 4, 8}) {
        const std::size_t per_round = static_cast<std::size_t>(kWarpSize * warps) * width;
        if ((hidden + per_round - 1) / per_round <= 4) {
            const int threads_per_block = kWarpSize * (warps < 4 ? 4 : warps);
            return {true, kWarpSize * warps, width, threads_per_block / (kWarpSize * warps)};
        }
    }
    return {};
}

// warp_sum's xor butterfly: every lane ends with the same value (float addition commutes), lane 0's is returned.
float butterfly_sum(const float* lanes) {
    std::array<float, kWarpSize> v{};
    std::copy_n(lanes, kWarpSize, v.begin());
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        std::array<float, kWarpSize> next{};
        for (int lane = 0; lane < kWarpSize; ++lane) next[lane] = v[lane] + v[lane ^ offset];
        v = next;
    }
    return v[0];
}

// The sum of terms[0, hidden) in the kernel's order, each term added to its thread's running sum by
// add(sum, term); `lanes` is scratch of order.threads floats.
template <typename Add>
float ordered_fold(const float* terms, std::size_t hidden, const RowOrder& order, float* lanes, const Add& add) {
    const auto threads = static_cast<std::size_t>(order.threads);
    std::fill_n(lanes, threads, 0.0f);
    const std::size_t round = threads * order.width;
    for (std::size_t base = 0; base < hidden; base += round) {
        const std::size_t n = std::min(round, hidden - base);
        if (order.width == 1) {
            for (std::size_t i = 0; i < n; ++i) lanes[i] = add(lanes[i], terms[base + i]);
        } else {
            for (std::size_t t = 0; t * order.width < n; ++t) {
                for (std::size_t j = 0; j < order.width; ++j) lanes[t] = add(lanes[t], terms[base + t * order.width + j]);
            }
        }
    }
    const int warps = order.threads / kWarpSize;
    if (warps == 1) return butterfly_sum(lanes);
    float total = 0.0f;  // group_sum: the warps' sums through shared memory, in order
    for (int w = 0; w < warps; ++w) total += butterfly_sum(lanes + static_cast<std::size_t>(w) * kWarpSize);
    return total;
}

float ordered_sum(const float* terms, std::size_t hidden, const RowOrder& order, float* lanes) {
    return ordered_fold(terms, hidden, order, lanes, [](float sum, float term) { return sum + term; });
}

std::vector<float> load_vector(const void* p, DType dtype, std::size_t n) {
    std::vector<float> v(n);
    detail::load_floats(p, dtype, 0, n, v.data());
    return v;
}

}  // namespace

namespace {

// Both forward entry points' work after their checks.
void forward(const detail::LayerNormForwardCall* call) {
    const float eps = call->eps;
    const Tensor& x_ref = call->x;
    const Tensor& gamma_ref = call->gamma;
    const Tensor& beta_ref = call->beta;
    const Tensor& out_ref = call->out;
    const Fp8Output* fp8 = call->fp8.data != nullptr ? &call->fp8 : nullptr;
    float* mean = call->mean;
    float* rstd = call->rstd;
    const void* x = x_ref.data;
    const DType x_dtype = x_ref.dtype;
    const void* gamma = gamma_ref.data;
    const void* beta = beta_ref.data;
    const DType param_dtype = gamma_ref.dtype;
    const std::size_t rows = x_ref.rows;
    const std::size_t hidden = x_ref.cols;
    void* out = out_ref.data;
    const DType out_dtype = out_ref.dtype;
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    auto* q_t = q != nullptr ? static_cast<std::uint8_t*>(fp8->transposed) : nullptr;
    const RowOrder order = row_order(x_dtype, hidden, {x, gamma, beta, out, q}, q_t != nullptr);
    const std::vector<float> g = load_vector(gamma, param_dtype, hidden);
    const std::vector<float> b = load_vector(beta, param_dtype, hidden);
    const auto count = static_cast<float>(static_cast<int>(hidden));  // the kernel divides by its int hidden
    std::atomic<std::uint32_t> amax_bits{0};
    detail::StoredAmax fresh_amax(call->fresh, out, out_dtype);

    detail::parallel_for(rows, hidden * 4, [&](std::size_t first, std::size_t last) {
        std::vector<float> xs(hidden), terms(hidden), y(hidden), lanes(static_cast<std::size_t>(order.threads));
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * hidden;
            detail::load_floats(x, x_dtype, base, hidden, xs.data());
            const float mu = ordered_sum(xs.data(), hidden, order, lanes.data()) / count;
            for (std::size_t c = 0; c < hidden; ++c) {
                const float d = xs[c] - mu;
                terms[c] = d * d;
            }
            const float r = 1.0f / std::sqrt(ordered_sum(terms.data(), hidden, order, lanes.data()) / count + eps);
            for (std::size_t c = 0; c < hidden; ++c) y[c] = (xs[c] - mu) * r * g[c] + b[c];
            if (out != nullptr) detail::store_floats(out, out_dtype, base, hidden, y.data());
            if (q != nullptr) {
                for (std::size_t c = 0; c < hidden; ++c) {
                    q[base + c] = detail::float_to_fp8(y[c] * s, type);
                    local = std::max(local, detail::abs_bits(y[c]));
                }
            }
            stored_local = std::max(stored_local, fresh_amax.of(base, hidden, y.data()));
            mean[row] = mu;
            rstd[row] = r;
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    fresh_amax.apply();
    if (q != nullptr && fp8->amax != nullptr) {
        *fp8->amax = detail::bits_float(std::max(detail::float_bits(*fp8->amax), amax_bits.load()));
    }
    // The transposed copy comes from the forward kernel's own launch on the GPU (banded, from shared memory).
    if (q_t != nullptr) detail::transpose_bytes(q, rows, hidden, q_t);
    detail::note_launch();
}

}  // namespace

void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out, const Tensor& fp8,
                        const Tensor& mean, const Tensor& rstd, Stream) {
    const auto call =
        detail::layer_norm_forward_call("tewb::kernels::host::layer_norm_forward", x, gamma, beta, eps, out, fp8, mean, rstd);
    if (call) forward(&*call);
}

void layer_norm_forward_current_scale(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out,
                                      const CurrentScaleTarget& target, const Tensor& mean, const Tensor& rstd, Stream stream) {
    const auto call = detail::layer_norm_forward_current_scale_call("tewb::kernels::host::layer_norm_forward_current_scale", x, gamma,
                                                                    beta, eps, out, target, mean, rstd);
    if (call) {
        forward(&*call);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

namespace {

using detail::LayerNormBackwardCall;

// dx, row by row (layer_norm_dx_kernel, or the fast kernel's dx part), with dresidual added when set. a.mean null:
// RMSNorm's on the fast kernel (mu = 0, mean_g = 0: layer_norm_fast.cuh's kRms).
void backward_dx(const LayerNormBackwardCall& a, const RowOrder& order, const std::vector<float>& gam) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const auto count = static_cast<float>(static_cast<int>(hidden));
    const void* dresidual = a.dresidual.data;
    detail::parallel_for(rows, hidden * 6, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden), g(hidden), xhat(hidden), gx(hidden), skip(dresidual != nullptr ? hidden : 0),
            lanes(static_cast<std::size_t>(order.threads));
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * hidden;
            detail::load_floats(a.dy.data, a.dy.dtype, base, hidden, d.data());
            detail::load_floats(a.x.data, a.x.dtype, base, hidden, xs.data());
            const float mu = a.mean != nullptr ? a.mean[row] : 0.0f;
            const float r = a.rstd[row];
            for (std::size_t c = 0; c < hidden; ++c) {
                g[c] = d[c] * gam[c];
                xhat[c] = (xs[c] - mu) * r;
                gx[c] = g[c] * xhat[c];
            }
            const float mean_g = a.mean != nullptr ? ordered_sum(g.data(), hidden, order, lanes.data()) / count : 0.0f;
            const float mean_gx = ordered_sum(gx.data(), hidden, order, lanes.data()) / count;
            for (std::size_t c = 0; c < hidden; ++c) xs[c] = r * (g[c] - mean_g - xhat[c] * mean_gx);
            if (dresidual != nullptr) {  // the skip connection's gradient, added before the store (may alias dx)
                detail::load_floats(dresidual, a.x.dtype, base, hidden, skip.data());
                for (std::size_t c = 0; c < hidden; ++c) xs[c] += skip[c];
            }
            detail::store_floats(a.dx.data, a.x.dtype, base, hidden, xs.data());
        }
    });
}

// Stage 1 of the fast kernel: one partial row of dgamma (partial[k]) and dbeta (partial[written + k]) per
// block; block k's group i takes rows k * groups + i + n * written * groups, and the groups' sums are added in
// order (through shared memory, starting from 0, where a block has several). With `dsum`, a third partial row
// (partial[2 * written + k]) of dx's column sums as stored (layer_norm_backward_cast_dbias). a.dbeta's data null
// (RMSNorm's backward; a.mean null too): dgamma's rows alone. Returns the rows written.
std::size_t fast_partial_rows(const LayerNormBackwardCall& a, const RowOrder& order, std::size_t partials, float* partial,
                              bool dsum = false) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const auto groups = static_cast<std::size_t>(order.groups);
    const std::size_t written = std::min((rows + groups - 1) / groups, partials);
    const bool dbeta = a.dbeta.data != nullptr;
    // The kernel keeps dsum's rows after dbeta's (2 · written): RMSNorm (no dbeta) has no dsum.
    if (dsum && !dbeta) detail::fail("tewb::kernels::host::layer_norm_backward", "dx's column sums without dbeta");
    detail::parallel_for(written, (rows / written + 1) * hidden * 2, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden), dx(hidden), group_g(hidden), group_b(hidden), group_s(hidden);
        for (std::size_t k = first; k < last; ++k) {
            float* dgamma_row = partial + k * hidden;
            float* dbeta_row = dbeta ? partial + (written + k) * hidden : nullptr;
            float* dsum_row = dsum ? partial + (2 * written + k) * hidden : nullptr;
            std::fill_n(dgamma_row, hidden, 0.0f);
            if (dbeta) std::fill_n(dbeta_row, hidden, 0.0f);
            if (dsum) std::fill_n(dsum_row, hidden, 0.0f);
            for (std::size_t group = 0; group < groups; ++group) {
                std::fill(group_g.begin(), group_g.end(), 0.0f);
                std::fill(group_b.begin(), group_b.end(), 0.0f);
                std::fill(group_s.begin(), group_s.end(), 0.0f);
                for (std::size_t row = k * groups + group; row < rows; row += written * groups) {
                    detail::load_floats(a.dy.data, a.dy.dtype, row * hidden, hidden, d.data());
                    detail::load_floats(a.x.data, a.x.dtype, row * hidden, hidden, xs.data());
                    const float mu = a.mean != nullptr ? a.mean[row] : 0.0f;
                    const float r = a.rstd[row];
                    for (std::size_t c = 0; c < hidden; ++c) {
                        group_g[c] += d[c] * ((xs[c] - mu) * r);
                        group_b[c] += d[c];
                    }
                    if (dsum) {
                        detail::load_floats(a.dx.data, a.x.dtype, row * hidden, hidden, dx.data());
                        for (std::size_t c = 0; c < hidden; ++c) group_s[c] += dx[c];
                    }
                }
                for (std::size_t c = 0; c < hidden; ++c) dgamma_row[c] += group_g[c];
                if (dbeta) {
                    for (std::size_t c = 0; c < hidden; ++c) dbeta_row[c] += group_b[c];
                }
                if (dsum) {
                    for (std::size_t c = 0; c < hidden; ++c) dsum_row[c] += group_s[c];
                }
            }
        }
    });
    return written;
}

// Stage 1 of the banded FP8 kernel (layer_norm_backward_quantized): block k of min(bands, partials) takes bands k,
// k + blocks, ... of band_rows rows and its group i the band's rows r0 + i, r0 + i + groups, ...; each group sums its
// rows in that order from 0 and the block adds its groups in order. Three partial rows per block: dgamma's
// (partial[k]), dbeta's (partial[blocks + k]) and dx's as stored (partial[2 * blocks + k]); RMSNorm's (a.dbeta's data
// and a.mean null: kRms) dgamma's alone. Returns the blocks.
std::size_t banded_partial_rows(const LayerNormBackwardCall& a, const RowOrder& order, std::size_t partials, std::size_t band_rows,
                                float* partial) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const auto groups = static_cast<std::size_t>(order.groups);
    const std::size_t bands = (rows + band_rows - 1) / band_rows;
    const std::size_t blocks = std::min(bands, partials);
    detail::parallel_for(blocks, (rows / blocks + 1) * hidden * 3, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden), dx(hidden), group_g(hidden), group_b(hidden), group_s(hidden);
        const std::size_t sets = a.dbeta.data != nullptr ? 3 : 1;
        for (std::size_t k = first; k < last; ++k) {
            // RMSNorm's workspace holds dgamma's rows alone: the other two are not formed.
            float* rows_of[3] = {partial + k * hidden, nullptr, nullptr};
            if (sets == 3) {
                rows_of[1] = partial + (blocks + k) * hidden;
                rows_of[2] = partial + (2 * blocks + k) * hidden;
            }
            for (std::size_t set = 0; set < sets; ++set) std::fill_n(rows_of[set], hidden, 0.0f);
            for (std::size_t group = 0; group < groups; ++group) {
                std::fill(group_g.begin(), group_g.end(), 0.0f);
                std::fill(group_b.begin(), group_b.end(), 0.0f);
                std::fill(group_s.begin(), group_s.end(), 0.0f);
                for (std::size_t band = k; band < bands; band += blocks) {
                    for (std::size_t row = band * band_rows + group; row < std::min(rows, (band + 1) * band_rows); row += groups) {
                        detail::load_floats(a.dy.data, a.dy.dtype, row * hidden, hidden, d.data());
                        detail::load_floats(a.x.data, a.x.dtype, row * hidden, hidden, xs.data());
                        detail::load_floats(a.dx.data, a.x.dtype, row * hidden, hidden, dx.data());
                        const float mu = a.mean != nullptr ? a.mean[row] : 0.0f;
                        const float r = a.rstd[row];
                        for (std::size_t c = 0; c < hidden; ++c) {
                            group_g[c] += d[c] * ((xs[c] - mu) * r);
                            group_b[c] += d[c];
                            group_s[c] += dx[c];
                        }
                    }
                }
                for (std::size_t c = 0; c < hidden; ++c) rows_of[0][c] += group_g[c];
                if (sets == 3) {
                    for (std::size_t c = 0; c < hidden; ++c) {
                        rows_of[1][c] += group_b[c];
                        rows_of[2][c] += group_s[c];
                    }
                }
            }
        }
    });
    return blocks;
}

// Stage 1 of the plain kernels (layer_norm_dparams_partial_kernel): chunk k sums rows
// [k * per_chunk, (k + 1) * per_chunk) in order.
void plain_partial_rows(const LayerNormBackwardCall& a, std::size_t partials, float* partial) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const std::size_t per_chunk = (rows + partials - 1) / partials;
    detail::parallel_for(partials, per_chunk * hidden * 2, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(hidden), xs(hidden);
        for (std::size_t k = first; k < last; ++k) {
            float* dgamma_row = partial + k * hidden;
            float* dbeta_row = partial + (partials + k) * hidden;
            std::fill_n(dgamma_row, hidden, 0.0f);
            std::fill_n(dbeta_row, hidden, 0.0f);
            for (std::size_t row = k * per_chunk; row < std::min(rows, (k + 1) * per_chunk); ++row) {
                detail::load_floats(a.dy.data, a.dy.dtype, row * hidden, hidden, d.data());
                detail::load_floats(a.x.data, a.x.dtype, row * hidden, hidden, xs.data());
                const float mu = a.mean[row];
                const float r = a.rstd[row];
                for (std::size_t c = 0; c < hidden; ++c) {
                    dgamma_row[c] += d[c] * (xs[c] - mu) * r;
                    dbeta_row[c] += d[c];
                }
            }
        }
    });
}

// The final order (layer_norm_dparams_final_kernel, and layer_norm_dparams.cuh in the producing launch):
// sum w of 8 adds partial rows w, w + 8, ..., then the 8 sums in order. The fast kernel's class finishers
// leave their sums in partial rows w (and written + w). `sets`: the sums of the partial rows (1: dgamma alone, RMSNorm's;
// 2: dgamma and dbeta; 3: with dx's column sums, stored to `dsum` as float32).
void finish_dparams(const LayerNormBackwardCall& a, bool fast, std::size_t written, float* partial, int sets = 2,
                    void* dsum = nullptr) {
    const std::size_t hidden = a.x.cols;
    const auto n = static_cast<std::size_t>(sets);
    std::vector<float> warp(n * kFinalWarps * hidden, 0.0f);
    for (std::size_t s = 0; s < n; ++s) {
        for (std::size_t w = 0; w < kFinalWarps; ++w) {
            for (std::size_t k = w; k < written; k += kFinalWarps) {
                for (std::size_t c = 0; c < hidden; ++c) {
                    warp[(s * kFinalWarps + w) * hidden + c] += partial[(s * written + k) * hidden + c];
                }
            }
        }
    }
    std::vector<float> total(n * hidden, 0.0f);
    for (std::size_t s = 0; s < n; ++s) {
        for (std::size_t w = 0; w < kFinalWarps; ++w) {
            for (std::size_t c = 0; c < hidden; ++c) total[s * hidden + c] += warp[(s * kFinalWarps + w) * hidden + c];
        }
    }
    detail::store_floats(a.dgamma.data, a.gamma.dtype, 0, hidden, total.data());
    if (n >= 2) detail::store_floats(a.dbeta.data, a.gamma.dtype, 0, hidden, total.data() + hidden);
    if (n == 3) detail::store_floats(dsum, DType::Float32, 0, hidden, total.data() + 2 * hidden);
    if (!fast) return;
    for (std::size_t s = 0; s < n; ++s) {
        for (std::size_t w = 0; w < std::min<std::size_t>(written, kFinalWarps); ++w) {
            std::copy_n(warp.begin() + static_cast<std::ptrdiff_t>((s * kFinalWarps + w) * hidden), hidden,
                        partial + (s * written + w) * hidden);
        }
    }
}

// Both entry points' work after their checks: dx (with dresidual added when set), then dgamma and dbeta.
void backward(const LayerNormBackwardCall& a) {
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const RowOrder order = row_order(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data});
    const std::vector<float> gam = load_vector(a.gamma.data, a.gamma.dtype, hidden);
    auto* partial = static_cast<float*>(a.workspace.data);
    const std::size_t partials = static_cast<std::size_t>(detail::norm_backward_chunks(rows));
    backward_dx(a, order, gam);
    std::size_t written = partials;
    if (order.fast) {
        written = fast_partial_rows(a, order, partials, partial);
    } else {
        plain_partial_rows(a, partials, partial);
    }
    finish_dparams(a, order.fast, written, partial);
    if (order.fast) {
        detail::note_launch();  // dx, the partial rows and their sums in one launch
        return;
    }
    // The dx kernel, then the partial rows whose last block per column tile sums them (a third launch past
    // the arrival counters).
    detail::note_launch();
    const int launches = detail::column_sum_launches((hidden + kColumnThreads - 1) / kColumnThreads);
    for (int launch = 0; launch < launches; ++launch) detail::note_launch();
}

// layer_norm_backward_cast_dbias's work after its checks: on the fast kernel's order one launch with the third sum
// and dx's copy; elsewhere the backward and then cast_dbias over dx (whose host twin gives its order and launches).
void backward_cast_dbias(const detail::LayerNormBackwardCastCall& call) {
    const LayerNormBackwardCall& a = call.norm;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    const RowOrder order =
        row_order(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, call.grad.data});
    const std::size_t partials = static_cast<std::size_t>(detail::norm_backward_chunks(rows));
    if (!order.fast) {
        backward(a);
        const Tensor dx = input(a.dx.data, a.x.dtype, rows, hidden);
        host::cast_dbias(dx, call.grad, call.dbias, detail::after_backward_rows(a), Stream{});
        if (call.fresh.scale != nullptr) {  // the plain kernels take no amax: current scaling's step of its own
            const auto scalar = [](float* p) { return p != nullptr ? input(p, DType::Float32, 1, 1) : Tensor{}; };
            host::abs_max_current_scale(dx, call.fresh.numerator, scalar(call.fresh.scale), scalar(call.fresh.scale_inv),
                                        scalar(call.fresh.staging), Stream{});
        }
        return;
    }
    const std::vector<float> gam = load_vector(a.gamma.data, a.gamma.dtype, hidden);
    auto* partial = static_cast<float*>(a.workspace.data);
    backward_dx(a, order, gam);
    const std::size_t written = fast_partial_rows(a, order, partials, partial, /*dsum=*/true);
    finish_dparams(a, true, written, partial, 3, call.dbias.data);
    if (call.grad.data != nullptr) {  // dx as stored, in grad's dtype
        std::vector<float> row(hidden);
        for (std::size_t r = 0; r < rows; ++r) {
            detail::load_floats(a.dx.data, a.x.dtype, r * hidden, hidden, row.data());
            detail::store_floats(call.grad.data, call.grad.dtype, r * hidden, hidden, row.data());
        }
    }
    detail::StoredAmax fresh_amax(call.fresh, a.dx.data, a.x.dtype);  // the kernel's last block, from dx as stored
    if (call.fresh.scale != nullptr) {
        std::vector<float> row(hidden);
        for (std::size_t r = 0; r < rows; ++r) fresh_amax.combine(fresh_amax.of(r * hidden, hidden, row.data()));
        fresh_amax.apply();
    }
    detail::note_launch();
}

// The banded kernel's FP8 bytes: dx as stored, cast as cast_transpose_to_fp8 casts it, with its amax and transposed copy.
void quantize_stored_dx(const LayerNormBackwardCall& a, const detail::Fp8Output& fp8) {
    detail::quantize_stored(a.dx.data, a.x.dtype, a.x.rows, a.x.cols, fp8);
}

// layer_norm_backward_quantize_dbias's work after its checks: on the banded kernel's order one launch (dx, the three
// sums, dx's FP8 bytes as cast_transpose_to_fp8 writes them, their transpose and amax); elsewhere the backward and then
// cast_transpose_dbias_to_fp8 over dx (whose host twin gives its order and launches).
void backward_quantize_dbias(const detail::LayerNormBackwardQuantizeCall& call) {
    const LayerNormBackwardCall& a = call.norm;
    const std::size_t rows = a.x.rows;
    const std::size_t hidden = a.x.cols;
    RowOrder order = row_order(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, call.fp8.data});
    if (hidden > detail::kLayerNormBackwardFp8MaxHidden) order = RowOrder{};
    const std::size_t partials = static_cast<std::size_t>(detail::norm_backward_chunks(rows));
    if (!order.fast) {
        backward(a);
        host::cast_transpose_dbias_to_fp8(input(a.dx.data, a.x.dtype, rows, hidden), detail::fp8_output_tensor(call.fp8, rows, hidden),
                                          call.dbias, detail::after_backward_rows(a), Stream{});
        return;
    }
    const std::vector<float> gam = load_vector(a.gamma.data, a.gamma.dtype, hidden);
    auto* partial = static_cast<float*>(a.workspace.data);
    backward_dx(a, order, gam);
    const std::size_t band = static_cast<std::size_t>(detail::layer_norm_backward_band_rows(rows, hidden));
    const std::size_t blocks = banded_partial_rows(a, order, partials, band, partial);
    finish_dparams(a, true, blocks, partial, 3, call.dbias.data);
    quantize_stored_dx(a, call.fp8);
    detail::note_launch();
}

}  // namespace

std::function<float(const float* row)> rms_norm_forward_fast_rstd(const detail::RmsNormForwardCall& call) {
    const detail::Fp8Output& fp8 = call.fp8;
    const RowOrder order = row_order(call.x.dtype, call.x.cols, {call.x.data, call.gamma.data, call.out.data, fp8.data},
                                     fp8.data != nullptr && fp8.transposed != nullptr);
    if (!order.fast) return {};
    const std::size_t hidden = call.x.cols;
    const auto count = static_cast<float>(static_cast<int>(hidden));  // the kernel divides by its int hidden
    const float eps = call.eps;
    return [order, hidden, count, eps](const float* row) {
        std::array<float, 8 * kWarpSize> lanes{};  // a row's threads: at most 8 warps
        const float squares = ordered_fold(row, hidden, order, lanes.data(), [](float sum, float v) { return std::fma(v, v, sum); });
        return 1.0f / std::sqrt(squares / count + eps);
    };
}

namespace {

LayerNormBackwardCall as_layer_norm(const detail::RmsNormBackwardCall& call) {
    return {call.dy, call.x, nullptr, call.rstd, call.gamma, call.dx, call.dresidual, call.dgamma, Tensor{}, call.workspace};
}

}  // namespace

bool rms_norm_backward_fast(const detail::RmsNormBackwardCall& call) {
    const LayerNormBackwardCall a = as_layer_norm(call);
    const std::size_t hidden = a.x.cols;
    const RowOrder order = row_order(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, call.grad.data});
    if (!order.fast) return false;
    const std::vector<float> gam = load_vector(a.gamma.data, a.gamma.dtype, hidden);
    auto* partial = static_cast<float*>(a.workspace.data);
    backward_dx(a, order, gam);
    const std::size_t written =
        fast_partial_rows(a, order, static_cast<std::size_t>(detail::norm_backward_chunks(a.x.rows)), partial);
    finish_dparams(a, true, written, partial, 1);
    detail::note_launch();  // dx, dgamma's partial rows and their sum in one launch
    return true;
}

bool rms_norm_backward_banded(const detail::RmsNormBackwardCall& call) {
    const LayerNormBackwardCall a = as_layer_norm(call);
    const std::size_t hidden = a.x.cols;
    RowOrder order = row_order(a.x.dtype, hidden, {a.dy.data, a.x.data, a.gamma.data, a.dx.data, a.dresidual.data, call.fp8.data});
    if (call.fp8.data == nullptr || hidden > detail::kLayerNormBackwardFp8MaxHidden) order = RowOrder{};
    if (!order.fast) return false;
    const std::vector<float> gam = load_vector(a.gamma.data, a.gamma.dtype, hidden);
    auto* partial = static_cast<float*>(a.workspace.data);
    const auto partials = static_cast<std::size_t>(detail::norm_backward_chunks(a.x.rows));
    backward_dx(a, order, gam);
    const auto band = static_cast<std::size_t>(detail::layer_norm_backward_band_rows(a.x.rows, hidden));
    finish_dparams(a, true, banded_partial_rows(a, order, partials, band, partial), partial, 1);
    quantize_stored_dx(a, call.fp8);
    detail::note_launch();  // dx, dgamma's partial rows and their sum, the FP8 bytes in one launch
    return true;
}

void layer_norm_backward_quantize_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                        const Tensor& dbeta, const Tensor& fp8, const Tensor& dbias, const Workspace& workspace,
                                        Stream) {
    const auto call = detail::layer_norm_backward_quantize_call("tewb::kernels::host::layer_norm_backward_quantize_dbias", dy, x,
                                                                mean, rstd, gamma, dx, dresidual, dgamma, dbeta, fp8, dbias, workspace);
    if (call) backward_quantize_dbias(*call);
}

void layer_norm_backward_cast_dbias(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                    const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                                    const Tensor& grad, const Tensor& dbias, const Workspace& workspace, Stream) {
    const auto call = detail::layer_norm_backward_cast_call("tewb::kernels::host::layer_norm_backward_cast_dbias", dy, x, mean, rstd,
                                                            gamma, dx, dresidual, dgamma, dbeta, grad, dbias, workspace);
    if (call) backward_cast_dbias(*call);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                         const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta, const Workspace& workspace, Stream) {
    const auto call = detail::layer_norm_backward_call("tewb::kernels::host::layer_norm_backward", dy, x, mean, rstd, gamma, dx,
                                                       Tensor{}, dgamma, dbeta, workspace);
    if (call) backward(*call);
}

void layer_norm_backward_cast_dbias_current_scale(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                                  const Tensor& gamma, const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma,
                                                  const Tensor& dbeta, const CurrentScaleTarget& target, const Tensor& dbias,
                                                  const Workspace& workspace, Stream stream) {
    const auto call = detail::layer_norm_backward_cast_current_scale_call(
        "tewb::kernels::host::layer_norm_backward_cast_dbias_current_scale", dy, x, mean, rstd, gamma, dx, dresidual, dgamma, dbeta,
        target, dbias, workspace);
    if (call) {
        backward_cast_dbias(*call);
    } else {  // no rows: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void layer_norm_backward_add(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                             const Tensor& dx, const Tensor& dresidual, const Tensor& dgamma, const Tensor& dbeta,
                             const Workspace& workspace, Stream) {
    const auto call = detail::layer_norm_backward_call("tewb::kernels::host::layer_norm_backward_add", dy, x, mean, rstd, gamma,
                                                       dx, dresidual, dgamma, dbeta, workspace);
    if (call) backward(*call);
}

}  // namespace tewb::kernels::host
