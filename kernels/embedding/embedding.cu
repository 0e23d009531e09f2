// Token + position embedding, one launch each way. The forward reads a table row and a position row (none for
// a model without learned positions) and writes their float32 sum, 16 bytes at a time where the rows allow. The backward's grid has two parts: blocks
// [0, position_blocks) write dpositions, one element per thread summing its column over the batch (a fixed
// order, no atomics: deterministic); the blocks after them scatter dy's rows into dtable with float
// atomicAdd, one row per block at a time. Parameters travel as a __grid_constant__ struct.
#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include "common/alignment.h"
#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/arguments.h"
#include "common/stream.cuh"
#include "embedding/embedding_call.h"
#include "tewb_kernels/embedding.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;
// Blocks per part of a grid; grid-stride loops take the rest.
constexpr std::size_t kMaxBlocks = 65536;
// Rows of dy a dpositions thread loads before it adds them.
constexpr int kBatchLoads = 8;

// Row r's token: tokens[(r / seq) * row_stride + r % seq], or -1 outside [0, vocab) (embedding_host.cpp's rule).
struct TokenRows {
    const std::int64_t* tokens;
    std::size_t row_stride;
    std::size_t seq;
    std::size_t vocab;

    __device__ long long operator()(std::size_t r) const {
        const long long token = tokens[(r / seq) * row_stride + r % seq];
        return token >= 0 && static_cast<unsigned long long>(token) < vocab ? token : -1;
    }
};

struct ForwardParams {
    TokenRows token;
    const void* table;
    const void* positions;
    void* out;
    DType dtype;
    std::size_t rows;
    std::size_t hidden;
};

struct BackwardParams {
    TokenRows token;
    const void* dy;
    DType dy_dtype;
    float* dtable;
    void* dpositions;
    DType dpositions_dtype;
    std::size_t batch;
    std::size_t rows;
    std::size_t hidden;
    unsigned position_blocks;  // blocks [0, position_blocks) write dpositions, the rest scatter into dtable
};

__device__ inline std::size_t first_index() {
    return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// hidden a multiple of W and table, positions, out 16-byte aligned: thread i writes out's 16-byte piece i.
template <int W>
__global__ void __launch_bounds__(kThreads) embedding_forward_vector_kernel(const __grid_constant__ ForwardParams p) {
    const std::size_t per_row = p.hidden / W;
    const std::size_t total = p.rows * per_row;
    const auto* table = static_cast<const uint4*>(p.table);
    const auto* positions = static_cast<const uint4*>(p.positions);
    auto* out = static_cast<uint4*>(p.out);
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = first_index(); i < total; i += stride) {
        const std::size_t r = i / per_row;
        const std::size_t piece = i - r * per_row;
        const long long token = p.token(r);
        float sum[W];
        if (token < 0) {
#pragma unroll
            for (int k = 0; k < W; ++k) sum[k] = __uint_as_float(kEmbeddingNaNBits);
        } else {
            unpack(__ldg(table + static_cast<std::size_t>(token) * per_row + piece), sum);
            if (positions != nullptr) {
                float position[W];
                unpack(__ldg(positions + (r % p.token.seq) * per_row + piece), position);
#pragma unroll
                for (int k = 0; k < W; ++k) sum[k] += position[k];
            }
        }
        out[i] = pack(sum);
    }
}

// Any hidden and alignment: one element per thread.
__global__ void __launch_bounds__(kThreads) embedding_forward_kernel(const __grid_constant__ ForwardParams p) {
    const std::size_t total = p.rows * p.hidden;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = first_index(); i < total; i += stride) {
        const std::size_t r = i / p.hidden;
        const std::size_t c = i - r * p.hidden;
        const long long token = p.token(r);
        float value = __uint_as_float(kEmbeddingNaNBits);
        if (token >= 0) {
            value = load(p.table, p.dtype, static_cast<std::size_t>(token) * p.hidden + c);
            if (p.positions != nullptr) value += load(p.positions, p.dtype, (r % p.token.seq) * p.hidden + c);
        }
        store(p.out, p.dtype, i, value);
    }
}

// The sum over b of column[b * stride] in float32, b ascending from 0, kBatchLoads loads issued before their adds.
template <typename T>
__device__ float batch_sum(const T* column, std::size_t batch, std::size_t stride) {
    float sum = 0.0f;
    std::size_t b = 0;
    for (; b + kBatchLoads <= batch; b += kBatchLoads, column += kBatchLoads * stride) {
        float v[kBatchLoads];
#pragma unroll
        for (int k = 0; k < kBatchLoads; ++k) v[k] = to_float(column[k * stride]);
#pragma unroll
        for (int k = 0; k < kBatchLoads; ++k) sum += v[k];
    }
    for (; b < batch; ++b, column += stride) sum += to_float(*column);
    return sum;
}

__global__ void __launch_bounds__(kThreads) embedding_backward_kernel(const __grid_constant__ BackwardParams p) {
    if (blockIdx.x < p.position_blocks) {
        // Element e = s * hidden + c of dpositions; dy's rows b * seq + s hold it `elements` apart. A thread issues the
        // loads of kBatchLoads rows before it adds them (one load at a time, the seed's 32 rows waited on memory 32
        // times in turn); the adds stay in b order from 0, so the sum's bits are the same.
        const std::size_t elements = p.token.seq * p.hidden;
        const std::size_t stride = static_cast<std::size_t>(p.position_blocks) * blockDim.x;
        for (std::size_t e = first_index(); e < elements; e += stride) {
            const float sum = p.dy_dtype == DType::BFloat16
                                  ? batch_sum(static_cast<const __nv_bfloat16*>(p.dy) + e, p.batch, elements)
                                  : batch_sum(static_cast<const float*>(p.dy) + e, p.batch, elements);
            store(p.dpositions, p.dpositions_dtype, e, sum);
        }
        return;
    }
    const unsigned scatter_blocks = gridDim.x - p.position_blocks;
    for (std::size_t r = blockIdx.x - p.position_blocks; r < p.rows; r += scatter_blocks) {
        const long long token = p.token(r);
        if (token < 0) continue;  // the same for the whole block: out of range, left out of dtable
        float* target = p.dtable + static_cast<std::size_t>(token) * p.hidden;
        const std::size_t base = r * p.hidden;
        for (std::size_t c = threadIdx.x; c < p.hidden; c += blockDim.x) atomicAdd(target + c, load(p.dy, p.dy_dtype, base + c));
    }
}

unsigned blocks_for(std::size_t threads_wanted) {
    return static_cast<unsigned>(std::clamp<std::size_t>((threads_wanted + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

void launch_embedding_forward(const TokensRef& tokens, const Tensor& table_ref, const Tensor& positions_ref,
                              const Tensor& out_ref, cudaStream_t stream) {
    const void* table = table_ref.data;
    const void* positions = positions_ref.data;
    void* out = out_ref.data;
    const DType dtype = table_ref.dtype;
    const std::size_t hidden = table_ref.cols;
    const TokenRows token{tokens.data, tokens.row_stride, tokens.seq, table_ref.rows};
    const ForwardParams params{token, table, positions, out, dtype, tokens.batch * tokens.seq, hidden};
    const std::size_t width = 16 / element_size(dtype);
    const bool vectors = hidden % width == 0 && aligned(table, 16) && aligned(positions, 16) && aligned(out, 16);
    if (!vectors) {
        embedding_forward_kernel<<<blocks_for(params.rows * hidden), kThreads, 0, stream>>>(params);
    } else if (dtype == DType::Float32) {
        embedding_forward_vector_kernel<4><<<blocks_for(params.rows * hidden / 4), kThreads, 0, stream>>>(params);
    } else {
        embedding_forward_vector_kernel<8><<<blocks_for(params.rows * hidden / 8), kThreads, 0, stream>>>(params);
    }
    check_last_launch("tewb::kernels::embedding_forward");
}

void launch_embedding_backward(const TokensRef& tokens, const Tensor& dy, const Tensor& dtable_ref,
                               const Tensor& dpositions_ref, cudaStream_t stream) {
    const std::size_t batch = tokens.batch;
    const std::size_t seq = tokens.seq;
    const std::size_t hidden = dy.cols;
    auto* dtable = static_cast<float*>(dtable_ref.data);
    void* dpositions = dpositions_ref.data;
    const std::size_t rows = batch * seq;
    // The checks leave work for at least one part: dpositions with seq > 0, or dtable with rows > 0.
    const unsigned position_blocks = dpositions != nullptr ? blocks_for(seq * hidden) : 0;
    const auto scatter_blocks = static_cast<unsigned>(dtable != nullptr ? std::min(rows, kMaxBlocks) : 0);
    const TokenRows token{tokens.data, tokens.row_stride, seq, dtable_ref.rows};
    const BackwardParams params{token, dy.data, dy.dtype, dtable, dpositions, dpositions_ref.dtype, batch, rows, hidden,
                                position_blocks};
    embedding_backward_kernel<<<position_blocks + scatter_blocks, kThreads, 0, stream>>>(params);
    check_last_launch("tewb::kernels::embedding_backward");
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void embedding_forward(const Tensor& tokens, const Tensor& table, const Tensor& positions, const Tensor& out, Stream stream) {
    constexpr const char* call = "tewb::kernels::embedding_forward";
    const detail::TokensRef t = detail::token_rows(call, tokens, "tokens");
    if (detail::check_embedding_forward_arguments(call, t, table, positions, out)) {
        detail::launch_embedding_forward(t, table, positions, out, detail::cuda_stream(stream));
    }
}

void embedding_backward(const Tensor& tokens, const Tensor& dy, const Tensor& dtable, const Tensor& dpositions, Stream stream) {
    constexpr const char* call = "tewb::kernels::embedding_backward";
    const detail::TokensRef t = detail::token_rows(call, tokens, "tokens");
    if (detail::check_embedding_backward_arguments(call, t, dy, dtable, dpositions)) {
        detail::launch_embedding_backward(t, dy, dtable, dpositions, detail::cuda_stream(stream));
    }
}

}  // namespace tewb::kernels
