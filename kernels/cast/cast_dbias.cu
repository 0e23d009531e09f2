// cast_dbias: a Linear's output gradient in its GEMM's dtype and its bias gradient, one pass over dy
// (tewb_kernels/cast.h). The order of the sums follows cast_dbias_geometry.h, as the host twin does
// (cast_dbias_host.cpp).
#include <cstdint>

#include "cast/cast_dbias_geometry.h"
#include "cast/row_sources.h"
#include "common/alignment.h"
#include "common/check.h"
#include "common/column_sum.cuh"
#include "common/column_sum.h"
#include "common/stream.cuh"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::detail {

namespace {

namespace geometry = cast_dbias_geometry;
constexpr int kLanes = static_cast<int>(geometry::kLanes);
constexpr int kGroups = static_cast<int>(geometry::kGroups);
constexpr int kPerLane = static_cast<int>(geometry::kPerLane);
constexpr int kTileCols = static_cast<int>(geometry::kTileCols);
static_assert(kPerLane == 4, "load4 and store4 move four elements");

// Four consecutive elements as floats, and back; 16 bytes (float32) or 8 (bfloat16) in one access.
__device__ inline void load4(const float* p, float (&v)[4]) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
}
__device__ inline void load4(const __nv_bfloat16* p, float (&v)[4]) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    unpack_bf16x2<2>(reinterpret_cast<const __nv_bfloat162*>(&u), v);
}
__device__ inline void store4(float* p, const float (&v)[4]) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ inline void store4(__nv_bfloat16* p, const float (&v)[4]) {
    uint2 u;
    pack_bf16x2<2>(v, reinterpret_cast<__nv_bfloat162*>(&u));
    *reinterpret_cast<uint2*>(p) = u;
}
__device__ inline void store1(float* p, float v) {
    *p = v;
}
__device__ inline void store1(__nv_bfloat16* p, float v) {
    *p = __float2bfloat16(v);
}

// Block (tile, chunk) walks the row groups g = chunk, chunk + chunks, ... (8 rows each, row g * 8 + y for
// thread row y), each thread summing its 4 columns over its rows in order; the chunk's partial row is then
// 0 + thread row 0 + ... + thread row 7, and the tile's last block adds the chunks in order (column_sum.cuh).
// kVector: 16- or 8-byte accesses (cols % 4 == 0 and aligned pointers); the sums are the same either way. x: a
// DenseRows or StackedRows (row_sources.h).
template <typename Source, typename Out, bool kWrite, bool kVector>
__global__ void __launch_bounds__(kLanes* kGroups)
    cast_dbias_kernel(const Source x, int rows, int cols, Out* __restrict__ out, ColumnSumTarget dbias) {
    const int c0 = static_cast<int>(blockIdx.x) * kTileCols;
    const int c = c0 + static_cast<int>(threadIdx.x) * kPerLane;
    const int groups = (rows + kGroups - 1) / kGroups;
    float sums[kPerLane] = {};
    for (int g = blockIdx.y; g < groups; g += gridDim.y) {
        const int r = g * kGroups + static_cast<int>(threadIdx.y);
        if (r >= rows || c >= cols) continue;
        const std::size_t at = static_cast<std::size_t>(r) * cols + c;
        if constexpr (kVector) {
            float v[kPerLane];
            load4(x.at(r, c), v);
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) sums[i] += v[i];
            if constexpr (kWrite) store4(out + at, v);
        } else {
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                if (c + i >= cols) break;
                const float v = to_float(*x.at(r, c + i));
                sums[i] += v;
                if constexpr (kWrite) store1(out + at + i, v);
            }
        }
    }
    __shared__ __align__(16) float group_sums[kGroups][kTileCols];
    *reinterpret_cast<float4*>(&group_sums[threadIdx.y][threadIdx.x * kPerLane]) = make_float4(sums[0], sums[1], sums[2], sums[3]);
    __syncthreads();
    const int thread = static_cast<int>(threadIdx.y) * kLanes + static_cast<int>(threadIdx.x);
    if (thread < kTileCols && c0 + thread < cols) {
        float sum = 0.0f;
#pragma unroll
        for (int y = 0; y < kGroups; ++y) sum += group_sums[y][thread];
        dbias.partial[static_cast<std::size_t>(blockIdx.y) * cols + c0 + thread] = sum;
    }
    finish_column_sum(dbias, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.y), cols, c0, min(kTileCols, cols - c0));
}

// The launch for x read through `source`; `vector`: x's rows may be read 4 elements at a time (cols % 4 == 0, every
// row start aligned to 4 elements).
template <typename Source, typename Out>
void cast_dbias_typed(const Source& source, bool x_vector, std::size_t rows, std::size_t cols, const Tensor& out,
                      const ColumnSumTarget& target, dim3 grid, cudaStream_t stream) {
    const dim3 block(kLanes, kGroups);
    auto* o = static_cast<Out*>(out.data);
    const int r = static_cast<int>(rows);
    const int c = static_cast<int>(cols);
    const bool write = out.data != nullptr;
    const bool vector = x_vector && cols % kPerLane == 0 && (!write || aligned(out.data, kPerLane * sizeof(Out)));
    if (write && vector) cast_dbias_kernel<Source, Out, true, true><<<grid, block, 0, stream>>>(source, r, c, o, target);
    if (write && !vector) cast_dbias_kernel<Source, Out, true, false><<<grid, block, 0, stream>>>(source, r, c, o, target);
    if (!write && vector) cast_dbias_kernel<Source, Out, false, true><<<grid, block, 0, stream>>>(source, r, c, o, target);
    if (!write && !vector) cast_dbias_kernel<Source, Out, false, false><<<grid, block, 0, stream>>>(source, r, c, o, target);
}

template <typename Source>
void cast_dbias_from(const Source& source, bool x_vector, std::size_t rows, std::size_t cols, const Tensor& out,
                     const ColumnSumTarget& target, dim3 grid, cudaStream_t stream) {
    // Without `out` the output type is never touched; float32 stands in.
    if (out.data != nullptr && out.dtype == DType::BFloat16) {
        cast_dbias_typed<Source, __nv_bfloat16>(source, x_vector, rows, cols, out, target, grid, stream);
    } else {
        cast_dbias_typed<Source, float>(source, x_vector, rows, cols, out, target, grid, stream);
    }
}

// Either input layout: x dense, or `count` parts side by side (x then describes only the shape and dtype).
template <typename In>
void cast_dbias_any(const Tensor& x, const Tensor* parts, std::size_t count, const Tensor& out, const ColumnSumTarget& target,
                    dim3 grid, cudaStream_t stream) {
    if (parts == nullptr) {
        const DenseRows<In> source{static_cast<const In*>(x.data), x.cols};
        cast_dbias_from(source, aligned(x.data, kPerLane * sizeof(In)), x.rows, x.cols, out, target, grid, stream);
        return;
    }
    StackedRows<In> source;
    source.part_cols = static_cast<int>(parts[0].cols);
    for (std::size_t p = 0; p < count; ++p) {
        source.part[p] = static_cast<const In*>(parts[p].data);
        source.stride[p] = parts[p].stride();
    }
    const bool vector = stacked_parts_aligned(parts, count, kPerLane * sizeof(In)) && parts[0].cols % kPerLane == 0;
    cast_dbias_from(source, vector, x.rows, x.cols, out, target, grid, stream);
}

void launch_cast_dbias(const char* call, const Tensor& x, const Tensor* parts, std::size_t count, const Tensor& out,
                       const Tensor& dbias, const Workspace& workspace, Stream on) {
    const cudaStream_t stream = cuda_stream(on);
    const std::size_t tiles = geometry::column_tiles(x.cols);
    const int chunks = static_cast<int>(geometry::chunks(x.rows));
    const bool in_kernel = column_sum_in_kernel(tiles);
    const ColumnSumTarget target{static_cast<float*>(workspace.data), in_kernel ? dbias.data : nullptr, dbias.dtype};
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
    if (x.dtype == DType::BFloat16) {
        cast_dbias_any<__nv_bfloat16>(x, parts, count, out, target, grid, stream);
    } else {
        cast_dbias_any<float>(x, parts, count, out, target, grid, stream);
    }
    check_last_launch(call);
    if (!in_kernel) launch_column_sum(target.partial, chunks, x.cols, dbias.data, dbias.dtype, stream, call);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void cast_dbias(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::cast_dbias";
    check_cast_dbias(call, x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    launch_cast_dbias(call, x, nullptr, 0, out, dbias, workspace, on);
}

void stacked_cast_dbias(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                        Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::stacked_cast_dbias";
    const Tensor x = check_stacked_cast_dbias(call, parts, count, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    launch_cast_dbias(call, x, parts, count, out, dbias, workspace, on);
}

}  // namespace tewb::kernels
