// GELU on the host: activation.cu's float32 expressions, and its backward in the kernel's row chunks so the
// dbias column sums add in the same order.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "activation/activation_call.h"
#include "amax/current_scale_host.h"
#include "common/column_sum_rule.h"
#include "common/fail.h"
#include "common/gelu_math.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/activation.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::host {

using detail::Fp8Output;

namespace {

using detail::gelu;
using detail::gelu_derivative;

std::size_t backward_chunks(std::size_t rows) {
    return detail::gelu_backward_chunks(rows);
}

void combine_amax(const Fp8Output* fp8, const std::atomic<std::uint32_t>& bits) {
    if (fp8 != nullptr && fp8->amax != nullptr) {
        *fp8->amax = detail::bits_float(std::max(detail::float_bits(*fp8->amax), bits.load()));
    }
}

// Both forward entry points' work after their checks.
void forward(const detail::GeluForwardCall* a) {
    const void* x = a->x.data;
    const DType x_dtype = a->x.dtype;
    const std::size_t rows = a->x.rows;
    const std::size_t cols = a->x.cols;
    void* out = a->out.data;
    const DType out_dtype = a->out.dtype;
    const Fp8Output* fp8 = detail::wanted(a->fp8);
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    std::atomic<std::uint32_t> amax_bits{0};
    detail::StoredAmax fresh_amax(a->fresh, out, out_dtype);
    detail::parallel_for(rows, cols * 16, [&](std::size_t first, std::size_t last) {
        std::vector<float> y(cols);
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t row = first; row < last; ++row) {
            const std::size_t base = row * cols;
            detail::load_floats(x, x_dtype, base, cols, y.data());
            for (std::size_t c = 0; c < cols; ++c) y[c] = gelu(y[c]);
            if (out != nullptr) detail::store_floats(out, out_dtype, base, cols, y.data());
            if (q != nullptr) {
                for (std::size_t c = 0; c < cols; ++c) {
                    q[base + c] = detail::float_to_fp8(y[c] * s, type);
                    local = std::max(local, detail::abs_bits(y[c]));
                }
            }
            stored_local = std::max(stored_local, fresh_amax.of(base, cols, y.data()));
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    if (q != nullptr) combine_amax(fp8, amax_bits);
    fresh_amax.apply();
    // The transposed copy comes from the same launch on the GPU (the tiled kernel).
    if (q != nullptr && fp8->transposed != nullptr) detail::transpose_bytes(q, rows, cols, static_cast<std::uint8_t*>(fp8->transposed));
    detail::note_launch();
}

// Both backward entry points' work after their checks.
void backward(const detail::GeluBackwardCall* a) {
    const Tensor& dy_ref = a->dy;
    const Tensor& x_ref = a->x;
    const Tensor& dx_ref = a->dx;
    const Tensor& dbias_ref = a->dbias;
    const Workspace& workspace = a->workspace;
    const Fp8Output* fp8 = detail::wanted(a->fp8);
    const void* dy = dy_ref.data;
    const void* x = x_ref.data;
    const DType dtype = x_ref.dtype;
    const std::size_t rows = x_ref.rows;
    const std::size_t cols = x_ref.cols;
    void* dx = dx_ref.data;
    void* dbias = dbias_ref.data;
    const DType dbias_dtype = dbias_ref.dtype;
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    auto* q_t = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->transposed) : nullptr;
    const float s = q != nullptr ? *fp8->scale : 1.0f;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    auto* partial = dbias != nullptr ? static_cast<float*>(workspace.data) : nullptr;
    const std::size_t chunks = backward_chunks(rows);
    const std::size_t per_chunk = detail::gelu_backward_rows_per_chunk(rows);
    std::atomic<std::uint32_t> amax_bits{0};
    detail::StoredAmax fresh_amax(a->fresh, dx, dtype);

    // Chunk k: rows [k * per_chunk, (k + 1) * per_chunk), each column's sum in row order (partial row k).
    detail::parallel_for(chunks, per_chunk * cols * 20, [&](std::size_t first, std::size_t last) {
        std::vector<float> d(cols), g(cols), sums(cols);
        std::uint32_t local = 0;
        std::uint32_t stored_local = 0;
        for (std::size_t k = first; k < last; ++k) {
            std::fill(sums.begin(), sums.end(), 0.0f);
            for (std::size_t row = k * per_chunk; row < std::min(rows, (k + 1) * per_chunk); ++row) {
                const std::size_t base = row * cols;
                detail::load_floats(dy, dtype, base, cols, d.data());
                detail::load_floats(x, dtype, base, cols, g.data());
                for (std::size_t c = 0; c < cols; ++c) {
                    g[c] = d[c] * gelu_derivative(g[c]);
                    sums[c] += g[c];
                }
                if (dx != nullptr) detail::store_floats(dx, dtype, base, cols, g.data());
                if (q != nullptr) {
                    for (std::size_t c = 0; c < cols; ++c) {
                        const std::uint8_t v = detail::float_to_fp8(g[c] * s, type);
                        q[base + c] = v;
                        if (q_t != nullptr) q_t[c * rows + row] = v;
                        local = std::max(local, detail::abs_bits(g[c]));
                    }
                }
                stored_local = std::max(stored_local, fresh_amax.of(base, cols, d.data()));
            }
            if (partial != nullptr) std::copy(sums.begin(), sums.end(), partial + k * cols);
        }
        detail::combine_bits_max(amax_bits, local);
        fresh_amax.combine(stored_local);
    });
    if (q != nullptr) combine_amax(fp8, amax_bits);
    fresh_amax.apply();
    if (dbias == nullptr) {
        detail::note_launch();
        return;
    }
    // The partial rows 0, 1, ... added in order from 0: by the last block of each column tile in the kernel's
    // launch (column_sum.cuh), or by launch_column_sum where the column tiles outnumber the counters.
    std::vector<float> total(cols, 0.0f);
    for (std::size_t k = 0; k < chunks; ++k) {
        for (std::size_t c = 0; c < cols; ++c) total[c] += partial[k * cols + c];
    }
    detail::store_floats(dbias, dbias_dtype, 0, cols, total.data());
    const std::size_t tile = detail::kGeluBackwardColumnTile;
    const int launches = detail::column_sum_launches((cols + tile - 1) / tile);
    for (int i = 0; i < launches; ++i) detail::note_launch();
}

}  // namespace

void gelu_forward(const Tensor& x, const Tensor& out, const Tensor& fp8, Stream) {
    if (const auto a = detail::gelu_forward_call("tewb::kernels::host::gelu_forward", x, out, fp8)) forward(&*a);
}

void gelu_backward(const Tensor& dy, const Tensor& x, const Tensor& dx, const Tensor& fp8, const Tensor& dbias,
                   const Workspace& workspace, Stream) {
    if (const auto a = detail::gelu_backward_call("tewb::kernels::host::gelu_backward", dy, x, dx, fp8, dbias, workspace)) {
        backward(&*a);
    }
}

void gelu_forward_current_scale(const Tensor& x, const Tensor& out, const CurrentScaleTarget& target, Stream stream) {
    const auto a = detail::gelu_forward_current_scale_call("tewb::kernels::host::gelu_forward_current_scale", x, out, target);
    if (a) {
        forward(&*a);
    } else {  // no elements: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(out, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

void gelu_backward_current_scale(const Tensor& dy, const Tensor& x, const Tensor& dx, const CurrentScaleTarget& target,
                                 const Tensor& dbias, const Workspace& workspace, Stream stream) {
    const auto a = detail::gelu_backward_current_scale_call("tewb::kernels::host::gelu_backward_current_scale", dy, x, dx, target,
                                                            dbias, workspace);
    if (a) {
        backward(&*a);
    } else {  // no elements: the scale of an empty tensor's amax, 0
        host::abs_max_current_scale(dx, target.numerator, target.scale, target.scale_inv, target.staging, stream);
    }
}

}  // namespace tewb::kernels::host
