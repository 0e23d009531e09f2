// The microscaling casts and the Hadamard transform on the GPU: one thread per scale entry (a block of 32 or 16
// values, or a padding entry it writes 0), one per run of 16 values for the transform. Written for exactness first
// (mx_blocks.h is the host twin's code too); not tuned: nothing uses them on the hot path until a GPU that runs the
// formats natively (compute capability 10.x) is in reach.
#include <cuda_fp8.h>

#include "common/check.h"
#include "common/elementwise.cuh"
#include "common/stream.cuh"
#include "mx/mx_blocks.h"
#include "tewb_kernels/mx.h"

namespace tewb::kernels::detail {

namespace {

constexpr int kThreads = 256;

struct DeviceNumbers {
    __device__ static float load(const void* p, DType dtype, std::size_t i) { return detail::load(p, dtype, i); }
    __device__ static void store(void* p, DType dtype, std::size_t i, float v) { detail::store(p, dtype, i, v); }
    __device__ static std::uint8_t fp8(float v, Fp8Type type) { return fp8_from_float(v, type); }
    __device__ static float e4m3_value(std::uint8_t code) {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3)));
    }
};

__global__ void mxfp8_kernel(const Mxfp8CastCall c, const MxOutput o, bool transposed) {
    const std::size_t entry = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (entry >= mx_scale_rows(o.rows) * o.scale_cols) return;
    const std::uint32_t amax = mx::mxfp8_block<DeviceNumbers>(c, o, transposed, entry / o.scale_cols, entry % o.scale_cols);
    if (!transposed && c.amax != nullptr && amax != 0) atomicMax(reinterpret_cast<unsigned*>(c.amax), amax);
}

__global__ void nvfp4_kernel(const Nvfp4CastCall c, const MxOutput o, bool transposed, std::uint64_t random_base) {
    const std::size_t entry = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const float s_enc = mx::nvfp4_encode_scale(c.global_amax[0]);
    const float s_dec = 1.0f / s_enc;
    if (entry == 0 && !transposed) c.s_dec[0] = s_dec;
    if (entry >= mx_scale_rows(o.rows) * o.scale_cols) return;
    mx::nvfp4_block<DeviceNumbers>(c, o, transposed, entry / o.scale_cols, entry % o.scale_cols, s_enc, s_dec, random_base);
}

__global__ void hadamard_kernel(const HadamardCall c) {
    const std::size_t chunks = c.cols / 16;
    const std::size_t run = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (run >= c.rows * chunks) return;
    mx::hadamard_chunk<DeviceNumbers>(c, run / chunks, run % chunks);
}

unsigned grid_for(std::size_t work) {
    return static_cast<unsigned>((work + kThreads - 1) / kThreads);
}

}  // namespace

}  // namespace tewb::kernels::detail

namespace tewb::kernels {

void mxfp8_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, Stream on) {
    constexpr const char* call = "tewb::kernels::mxfp8_cast";
    const detail::Mxfp8CastCall c = detail::mxfp8_cast_call(call, x, out, scales, out_transposed, scales_transposed);
    if (c.rows == 0 || c.cols == 0) return;
    const cudaStream_t stream = detail::cuda_stream(on);
    for (const detail::MxOutput* o : {&c.rowwise, &c.columnwise}) {
        if (o->data == nullptr) continue;
        detail::mxfp8_kernel<<<detail::grid_for(mx_scale_rows(o->rows) * o->scale_cols), detail::kThreads, 0, stream>>>(
            c, *o, o == &c.columnwise);
        detail::check_last_launch(call);
    }
}

void nvfp4_cast(const Tensor& x, const Tensor& out, const Tensor& scales, const Tensor& out_transposed,
                const Tensor& scales_transposed, const Nvfp4Cast& options, Stream on) {
    constexpr const char* call = "tewb::kernels::nvfp4_cast";
    const detail::Nvfp4CastCall c =
        detail::nvfp4_cast_call(call, x, out, scales, out_transposed, scales_transposed, options);
    if (c.rows == 0 || c.cols == 0) return;
    const cudaStream_t stream = detail::cuda_stream(on);
    for (const detail::MxOutput* o : {&c.rowwise, &c.columnwise}) {
        if (o->data == nullptr) continue;
        const bool transposed = o == &c.columnwise;
        const std::uint64_t base = options.offset + (transposed ? static_cast<std::uint64_t>(c.rows) * c.cols : 0);
        detail::nvfp4_kernel<<<detail::grid_for(mx_scale_rows(o->rows) * o->scale_cols), detail::kThreads, 0, stream>>>(
            c, *o, transposed, base);
        detail::check_last_launch(call);
    }
}

void hadamard16(const Tensor& x, const Tensor& out, std::uint16_t signs, Stream on) {
    constexpr const char* call = "tewb::kernels::hadamard16";
    const detail::HadamardCall c = detail::hadamard16_call(call, x, out, signs);
    if (c.rows == 0 || c.cols == 0) return;
    detail::hadamard_kernel<<<detail::grid_for(c.rows * (c.cols / 16)), detail::kThreads, 0, detail::cuda_stream(on)>>>(c);
    detail::check_last_launch(call);
}

}  // namespace tewb::kernels
