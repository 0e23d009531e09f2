// LayerNorm forward and backward. Where rows are 16-byte aligned and short enough to live in registers
// (hidden a multiple of 8 for bfloat16 x, of 4 for float32 x; at most 8192 / 4096), the fast kernels of
// layer_norm_fast.cuh run: one read of x forward, one read of x and dy backward, dgamma/dbeta partial sums
// in registers and one small reduction launch. Elsewhere the plain kernels below: one warp per row, two
// passes over the row for float32 accuracy (mean, then the variance of x - mean), dx one warp per row and
// dgamma/dbeta in a separate pass over chunks of rows. Both write the same partial rows to the workspace.
#include <algorithm>
#include <cstdint>

#include "cast/cast_launch.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "normalization/layer_norm_fast.cuh"
#include "normalization/normalization_launch.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kColumnThreads = 256;
constexpr int kMaxPartials = 256;  // partial rows of dgamma/dbeta: blocks of the backward
constexpr int kMaxGridX = 2147483647;

__global__ void layer_norm_forward_kernel(const void* __restrict__ x, DType x_dtype, const void* __restrict__ gamma,
                                          const void* __restrict__ beta, DType param_dtype, int rows, int hidden, float eps,
                                          void* out, DType out_dtype, std::uint8_t* q, const float* scale, Fp8Type type,
                                          float* amax, float* __restrict__ mean_out, float* __restrict__ rstd_out) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    unsigned local = 0;
    if (row < rows) {
        const std::size_t base = static_cast<std::size_t>(row) * hidden;
        float sum = 0.0f;
        for (int c = lane; c < hidden; c += 32) sum += load(x, x_dtype, base + c);
        const float mean = warp_sum(sum) / hidden;
        float squares = 0.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float d = load(x, x_dtype, base + c) - mean;
            squares += d * d;
        }
        const float rstd = 1.0f / sqrtf(warp_sum(squares) / hidden + eps);
        const float s = q != nullptr ? *scale : 1.0f;
        for (int c = lane; c < hidden; c += 32) {
            const float y = (load(x, x_dtype, base + c) - mean) * rstd * load(gamma, param_dtype, c) + load(beta, param_dtype, c);
            if (out != nullptr) store(out, out_dtype, base + c, y);
            if (q != nullptr) {
                q[base + c] = fp8_from_float(y * s, type);
                local = max(local, abs_bits(y));
            }
        }
        if (lane == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
    if (q != nullptr) combine_block_amax(local, amax);
}

__global__ void layer_norm_dx_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x, DType x_dtype,
                                     const float* __restrict__ mean, const float* __restrict__ rstd,
                                     const void* __restrict__ gamma, DType param_dtype, int rows, int hidden, void* dx) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= rows) return;
    const std::size_t base = static_cast<std::size_t>(row) * hidden;
    const float mu = mean[row];
    const float r = rstd[row];
    float sum_g = 0.0f;
    float sum_gx = 0.0f;
    for (int c = lane; c < hidden; c += 32) {
        const float g = load(dy, dy_dtype, base + c) * load(gamma, param_dtype, c);
        const float xhat = (load(x, x_dtype, base + c) - mu) * r;
        sum_g += g;
        sum_gx += g * xhat;
    }
    const float mean_g = warp_sum(sum_g) / hidden;
    const float mean_gx = warp_sum(sum_gx) / hidden;
    for (int c = lane; c < hidden; c += 32) {
        const float g = load(dy, dy_dtype, base + c) * load(gamma, param_dtype, c);
        const float xhat = (load(x, x_dtype, base + c) - mu) * r;
        store(dx, x_dtype, base + c, r * (g - mean_g - xhat * mean_gx));
    }
}

// Stage 1: block (x, y) sums rows of chunk y for columns of tile x into partial[y] (dgamma) and
// partial[chunks + y] (dbeta).
__global__ void layer_norm_dparams_partial_kernel(const void* __restrict__ dy, DType dy_dtype, const void* __restrict__ x,
                                                  DType x_dtype,
                                                  const float* __restrict__ mean, const float* __restrict__ rstd, int rows,
                                                  int hidden, int chunks, float* __restrict__ partial) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= hidden) return;
    const int rows_per_chunk = (rows + chunks - 1) / chunks;
    const int first = blockIdx.y * rows_per_chunk;
    const int last = min(rows, first + rows_per_chunk);
    float dgamma = 0.0f;
    float dbeta = 0.0f;
    for (int row = first; row < last; ++row) {
        const std::size_t at = static_cast<std::size_t>(row) * hidden + c;
        const float g = load(dy, dy_dtype, at);
        dgamma += g * (load(x, x_dtype, at) - mean[row]) * rstd[row];
        dbeta += g;
    }
    partial[static_cast<std::size_t>(blockIdx.y) * hidden + c] = dgamma;
    partial[static_cast<std::size_t>(chunks + blockIdx.y) * hidden + c] = dbeta;
}

// Stage 2: the partial rows summed per column. A block takes 32 columns; its 8 warps each sum a share of
// the partial rows (coalesced 128-byte reads), then warp 0 adds the 8 sums.
__global__ void layer_norm_dparams_final_kernel(const float* __restrict__ partial, int hidden, int partials, void* dgamma,
                                                void* dbeta, DType param_dtype) {
    __shared__ float sums[2][8][32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int c = blockIdx.x * 32 + lane;
    float g = 0.0f;
    float b = 0.0f;
    if (c < hidden) {
        for (int k = warp; k < partials; k += 8) {
            g += partial[static_cast<std::size_t>(k) * hidden + c];
            b += partial[static_cast<std::size_t>(partials + k) * hidden + c];
        }
    }
    sums[0][warp][lane] = g;
    sums[1][warp][lane] = b;
    __syncthreads();
    if (warp == 0 && c < hidden) {
        g = 0.0f;
        b = 0.0f;
        for (int w = 0; w < 8; ++w) {
            g += sums[0][w][lane];
            b += sums[1][w][lane];
        }
        store(dgamma, param_dtype, c, g);
        store(dbeta, param_dtype, c, b);
    }
}

int row_blocks(std::size_t rows) {
    return static_cast<int>(std::min<std::size_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGridX));
}

struct ForwardLaunch {
    const void* x;
    const void* gamma;
    const void* beta;
    DType param_dtype;
    std::size_t rows, hidden;
    float eps;
    void* out;
    DType out_dtype;
    std::uint8_t* q;
    const float* scale;
    Fp8Type type;
    float* amax;
    float* mean;
    float* rstd;
    cudaStream_t stream;

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        constexpr int groups = fast::kGroups<WARPS>;
        const auto blocks = static_cast<unsigned>(std::min<std::size_t>((rows + groups - 1) / groups, kMaxGridX));
        fast::layer_norm_forward<T, VECS, WARPS><<<blocks, fast::kThreads<WARPS>, 0, stream>>>(
            static_cast<const T*>(x), gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), eps, out, out_dtype,
            q, scale, type, amax, mean, rstd);
    }
};

struct BackwardLaunch {
    const void* dy;
    DType dy_dtype;
    const void* x;
    const float* mean;
    const float* rstd;
    const void* gamma;
    DType param_dtype;
    std::size_t rows, hidden;
    void* dx;
    float* partial;
    int partials;
    int* written;  // blocks launched: partial rows written
    cudaStream_t stream;

    template <typename T, int VECS, int WARPS>
    void operator()() const {
        constexpr int groups = fast::kGroups<WARPS>;
        *written = static_cast<int>(std::min<std::size_t>((rows + groups - 1) / groups, static_cast<std::size_t>(partials)));
        const std::size_t shared = groups > 1 ? 2 * hidden * sizeof(float) : 0;
        fast::layer_norm_backward<T, VECS, WARPS><<<static_cast<unsigned>(*written), fast::kThreads<WARPS>, shared, stream>>>(
            dy, dy_dtype, static_cast<const T*>(x), mean, rstd, gamma, param_dtype, static_cast<int>(rows), static_cast<int>(hidden),
            static_cast<T*>(dx), partial);
    }
};

}  // namespace

int layer_norm_backward_chunks(std::size_t rows) {
    return static_cast<int>(std::clamp<std::size_t>(rows, 1, kMaxPartials));
}

namespace {

bool aligned16(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// The fast kernels' shape: threads per row (WARPS warps) and 16-byte vectors per thread (VECS), or 0
// where the plain kernels must run (a row not in whole vectors, unaligned pointers, a row too long).
struct FastShape {
    int warps = 0;
    int vecs = 0;
};

FastShape fast_shape(DType x_dtype, std::size_t hidden, std::initializer_list<const void*> pointers) {
    const int width = x_dtype == DType::Float32 ? 4 : 8;
    if (x_dtype == DType::Float16 || hidden % static_cast<std::size_t>(width) != 0) return {};
    for (const void* p : pointers) {
        if (p != nullptr && !aligned16(p)) return {};
    }
    for (const int warps : {1, 4, 8}) {
        const std::size_t per_round = static_cast<std::size_t>(32 * warps * width);
        const std::size_t vecs = (hidden + per_round - 1) / per_round;
        if (vecs <= 4) return {warps, static_cast<int>(vecs)};
    }
    return {};
}

// Calls f.template operator()<T, VECS, WARPS>() for the shape.
template <typename T, typename F>
void dispatch_shape(const FastShape& shape, const F& f) {
    const auto with_vecs = [&](auto warps) {
        constexpr int W = decltype(warps)::value;
        switch (shape.vecs) {
            case 1: f.template operator()<T, 1, W>(); break;
            case 2: f.template operator()<T, 2, W>(); break;
            case 3: f.template operator()<T, 3, W>(); break;
            default: f.template operator()<T, 4, W>(); break;
        }
    };
    switch (shape.warps) {
        case 1: with_vecs(std::integral_constant<int, 1>{}); break;
        case 4: with_vecs(std::integral_constant<int, 4>{}); break;
        default: with_vecs(std::integral_constant<int, 8>{}); break;
    }
}

template <typename F>
void dispatch_fast(DType x_dtype, const FastShape& shape, const F& f) {
    if (x_dtype == DType::Float32) {
        dispatch_shape<float>(shape, f);
    } else {
        dispatch_shape<__nv_bfloat16>(shape, f);
    }
}

}  // namespace

void launch_layer_norm_forward(const void* x, DType x_dtype, const void* gamma, const void* beta, DType param_dtype,
                               std::size_t rows, std::size_t hidden, float eps, void* out, DType out_dtype,
                               const Fp8Output* fp8, float* mean, float* rstd, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_forward";
    auto* q = fp8 != nullptr ? static_cast<std::uint8_t*>(fp8->data) : nullptr;
    const float* scale = fp8 != nullptr ? fp8->scale : nullptr;
    const Fp8Type type = fp8 != nullptr ? fp8->type : Fp8Type::E4M3;
    float* amax = fp8 != nullptr ? fp8->amax : nullptr;
    const FastShape shape = fast_shape(x_dtype, hidden, {x, gamma, beta, out, q});
    if (shape.warps > 0) {
        dispatch_fast(x_dtype, shape,
                      ForwardLaunch{x, gamma, beta, param_dtype, rows, hidden, eps, out, out_dtype, q, scale, type, amax, mean, rstd, stream});
    } else {
        layer_norm_forward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
            x, x_dtype, gamma, beta, param_dtype, static_cast<int>(rows), static_cast<int>(hidden), eps, out, out_dtype, q, scale,
            type, amax, mean, rstd);
    }
    check_last_launch(call);
    if (fp8 != nullptr && fp8->transposed != nullptr) {
        launch_transpose(fp8->data, 1, rows, hidden, fp8->transposed, stream);
    }
}

void launch_layer_norm_backward(const void* dy, DType dy_dtype, const void* x, DType x_dtype, const float* mean, const float* rstd,
                                const void* gamma, DType param_dtype, std::size_t rows, std::size_t hidden, void* dx,
                                void* dgamma, void* dbeta, void* workspace, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::layer_norm_backward";
    const int h = static_cast<int>(hidden);
    const int partials = layer_norm_backward_chunks(rows);
    auto* partial = static_cast<float*>(workspace);
    const FastShape shape = fast_shape(x_dtype, hidden, {dy, x, gamma, dx});
    int written = partials;  // partial rows the first stage wrote
    if (shape.warps > 0) {
        dispatch_fast(x_dtype, shape,
                      BackwardLaunch{dy, dy_dtype, x, mean, rstd, gamma, param_dtype, rows, hidden, dx, partial, partials, &written, stream});
        check_last_launch(call);
    } else {
        layer_norm_dx_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(dy, dy_dtype, x, x_dtype, mean, rstd, gamma,
                                                                                   param_dtype, static_cast<int>(rows), h, dx);
        check_last_launch(call);
        const unsigned column_blocks = static_cast<unsigned>((hidden + kColumnThreads - 1) / kColumnThreads);
        layer_norm_dparams_partial_kernel<<<dim3(column_blocks, static_cast<unsigned>(partials)), kColumnThreads, 0, stream>>>(
            dy, dy_dtype, x, x_dtype, mean, rstd, static_cast<int>(rows), h, partials, partial);
        check_last_launch(call);
    }
    layer_norm_dparams_final_kernel<<<static_cast<unsigned>((hidden + 31) / 32), 256, 0, stream>>>(partial, h, written, dgamma, dbeta,
                                                                                                   param_dtype);
    check_last_launch(call);
}

}  // namespace tewb::kernels::detail
