// cast_dbias: a Linear's output gradient in its GEMM's dtype and its bias gradient, one pass over dy
// (tewb_kernels/cast.h). The order of the sums follows cast_dbias_geometry.h, as the host twin does
// (cast_dbias_host.cpp).
#include <cstdint>

#include "cast/cast_dbias_geometry.h"
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
// kVector: 16- or 8-byte accesses (cols % 4 == 0 and aligned pointers); the sums are the same either way.
template <typename In, typename Out, bool kWrite, bool kVector>
__global__ void __launch_bounds__(kLanes* kGroups)
    cast_dbias_kernel(const In* __restrict__ x, int rows, int cols, Out* __restrict__ out, ColumnSumTarget dbias) {
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
            load4(x + at, v);
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) sums[i] += v[i];
            if constexpr (kWrite) store4(out + at, v);
        } else {
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                if (c + i >= cols) break;
                const float v = to_float(x[at + i]);
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

bool aligned(const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

template <typename In, typename Out>
void cast_dbias_typed(const Tensor& x, const Tensor& out, const ColumnSumTarget& target, dim3 grid,
                      cudaStream_t stream) {
    const dim3 block(kLanes, kGroups);
    const auto* in = static_cast<const In*>(x.data);
    auto* o = static_cast<Out*>(out.data);
    const int rows = static_cast<int>(x.rows);
    const int cols = static_cast<int>(x.cols);
    const bool write = out.data != nullptr;
    const bool vector =
        cols % kPerLane == 0 && aligned(x.data, kPerLane * sizeof(In)) && (!write || aligned(out.data, kPerLane * sizeof(Out)));
    if (write && vector) cast_dbias_kernel<In, Out, true, true><<<grid, block, 0, stream>>>(in, rows, cols, o, target);
    if (write && !vector) cast_dbias_kernel<In, Out, true, false><<<grid, block, 0, stream>>>(in, rows, cols, o, target);
    if (!write && vector) cast_dbias_kernel<In, Out, false, true><<<grid, block, 0, stream>>>(in, rows, cols, o, target);
    if (!write && !vector) cast_dbias_kernel<In, Out, false, false><<<grid, block, 0, stream>>>(in, rows, cols, o, target);
}

template <typename In>
void cast_dbias_from(const Tensor& x, const Tensor& out, const ColumnSumTarget& target, dim3 grid,
                     cudaStream_t stream) {
    // Without `out` the output type is never touched; float32 stands in.
    if (out.data != nullptr && out.dtype == DType::BFloat16) {
        cast_dbias_typed<In, __nv_bfloat16>(x, out, target, grid, stream);
    } else {
        cast_dbias_typed<In, float>(x, out, target, grid, stream);
    }
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void cast_dbias(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace, Stream on) {
    using namespace detail;
    constexpr const char* call = "tewb::kernels::cast_dbias";
    check_cast_dbias(call, x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    const cudaStream_t stream = cuda_stream(on);
    const std::size_t tiles = geometry::column_tiles(x.cols);
    const int chunks = static_cast<int>(geometry::chunks(x.rows));
    const bool in_kernel = column_sum_in_kernel(tiles);
    const ColumnSumTarget target{static_cast<float*>(workspace.data), in_kernel ? dbias.data : nullptr, dbias.dtype};
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
    if (x.dtype == DType::BFloat16) {
        cast_dbias_from<__nv_bfloat16>(x, out, target, grid, stream);
    } else {
        cast_dbias_from<float>(x, out, target, grid, stream);
    }
    check_last_launch(call);
    if (!in_kernel) launch_column_sum(target.partial, chunks, x.cols, dbias.data, dbias.dtype, stream, call);
}

}  // namespace tewb::kernels
