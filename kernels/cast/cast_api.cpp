#include "cast/cast_arguments.h"
#include "cast/cast_launch.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels {

void cast_to_fp8(const void* x, DType dtype, std::size_t n, const float* scale, void* out, Fp8Type out_type, float* amax,
                 cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_to_fp8";
    detail::check_cast_arguments(call, x, dtype, n, scale, out, out_type, amax);
    if (n == 0) return;
    detail::launch_cast(x, dtype, n, scale, out, out_type, amax, stream);
}

void cast_transpose_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, const float* scale, void* out,
                           void* out_t, Fp8Type out_type, float* amax, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_to_fp8";
    detail::check_cast_transpose_arguments(call, x, dtype, rows, cols, scale, out, out_t, out_type, amax);
    if (rows == 0 || cols == 0) return;
    detail::launch_cast_transpose(x, dtype, rows, cols, scale, out, out_t, out_type, amax, stream);
}

std::size_t cast_transpose_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return static_cast<std::size_t>(detail::cast_transpose_dbias_chunks(rows)) * cols * sizeof(float);
}

void cast_transpose_dbias_to_fp8(const ConstTensorRef& x, const Fp8Output& out, const TensorRef& dbias,
                                 const Workspace& workspace, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_transpose_dbias_to_fp8";
    detail::check_cast_transpose_dbias_arguments(call, x, out, dbias, workspace,
                                                 cast_transpose_dbias_workspace_bytes(x.rows, x.cols));
    if (x.rows == 0 || x.cols == 0) return;
    detail::launch_cast_transpose_dbias(x, out, dbias, workspace, stream);
}

std::size_t cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return detail::cast_dbias_workspace(rows, cols);
}

void cast_dbias(const ConstTensorRef& x, const TensorRef& out, const TensorRef& dbias, const Workspace& workspace,
                cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::cast_dbias";
    detail::check_cast_dbias_arguments(call, x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    detail::launch_cast_dbias(x, out, dbias, workspace, stream);
}

void block_cast_to_fp8(const void* x, DType dtype, std::size_t rows, std::size_t cols, int block_rows, bool power_of_two,
                       const BlockCastOutput& out, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::block_cast_to_fp8";
    detail::check_block_cast_arguments(call, x, dtype, rows, cols, block_rows, out);
    if (rows == 0 || cols == 0) return;
    detail::launch_block_cast(x, dtype, rows, cols, block_rows, power_of_two, out, stream);
}

std::size_t block_cast_dbias_workspace_bytes(std::size_t rows, std::size_t cols) {
    return detail::block_cast_dbias_workspace(rows, cols);
}

void transpose(const void* x, std::size_t element_bytes, std::size_t rows, std::size_t cols, void* out, cudaStream_t stream) {
    constexpr const char* call = "tewb::kernels::transpose";
    detail::check_transpose_arguments(call, x, element_bytes, rows, cols, out);
    if (rows == 0 || cols == 0) return;
    detail::launch_transpose(x, element_bytes, rows, cols, out, stream);
}

}  // namespace tewb::kernels
