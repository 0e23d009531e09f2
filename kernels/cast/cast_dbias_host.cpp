// cast_dbias over host memory, bit for bit the kernel's (cast_dbias.cu): the same walk of the rows and the
// same order of the float32 sums (cast_dbias_geometry.h).
#include <cmath>
#include <cstring>
#include <vector>

#include "cast/cast_dbias_geometry.h"
#include "cast/cast_items.h"
#include "common/column_sum_rule.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/cast.h"

namespace tewb::kernels::host {

namespace {

namespace geometry = detail::cast_dbias_geometry;

// The GPU's float arithmetic gives one NaN, 0x7fffffff, whatever NaN went in; x86 keeps the operand's.
float canonical(float sum) {
    return std::isnan(sum) ? detail::bits_float(0x7fffffffu) : sum;
}

// Block row `chunk` of the grid: its rows cast into `out` (when wanted) and its partial column sums into
// partial[chunk * cols + c]. Thread row y sums rows g * 8 + y, g = chunk, chunk + chunks, ..., in order from
// 0; the partial row is 0 + thread row 0 + ... + thread row 7.
void cast_dbias_chunk(const Tensor& x, const Tensor& out, std::size_t chunks, std::size_t chunk, float* partial) {
    const std::size_t rows = x.rows;
    const std::size_t cols = x.cols;
    const std::size_t groups = (rows + geometry::kGroups - 1) / geometry::kGroups;
    std::vector<float> thread_rows(geometry::kGroups * cols, 0.0f);
    std::vector<float> row(cols);
    for (std::size_t g = chunk; g < groups; g += chunks) {
        for (std::size_t y = 0; y < geometry::kGroups; ++y) {
            const std::size_t r = g * geometry::kGroups + y;
            if (r >= rows) break;
            detail::load_floats(x.data, x.dtype, r * cols, cols, row.data());
            float* sums = thread_rows.data() + y * cols;
            for (std::size_t c = 0; c < cols; ++c) sums[c] += row[c];
            if (out.data != nullptr) detail::store_floats(out.data, out.dtype, r * cols, cols, row.data());
        }
    }
    float* mine = partial + chunk * cols;
    for (std::size_t c = 0; c < cols; ++c) mine[c] = 0.0f;
    for (std::size_t y = 0; y < geometry::kGroups; ++y) {
        const float* sums = thread_rows.data() + y * cols;
        for (std::size_t c = 0; c < cols; ++c) mine[c] += sums[c];
    }
    for (std::size_t c = 0; c < cols; ++c) mine[c] = canonical(mine[c]);
}

// cast_dbias without its checks, for x dense.
void cast_dbias_dense(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace) {
    const std::size_t chunks = geometry::chunks(x.rows);
    auto* partial = static_cast<float*>(workspace.data);
    detail::parallel_for(chunks, x.rows / chunks * x.cols, [&](std::size_t first, std::size_t last) {
        for (std::size_t chunk = first; chunk < last; ++chunk) cast_dbias_chunk(x, out, chunks, chunk, partial);
    });
    std::vector<float> sums(x.cols, 0.0f);
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
        const float* row = partial + chunk * x.cols;
        for (std::size_t c = 0; c < x.cols; ++c) sums[c] += row[c];
    }
    for (std::size_t c = 0; c < x.cols; ++c) detail::store(dbias.data, dbias.dtype, c, canonical(sums[c]));
    detail::note_launch();
    if (!detail::column_sum_in_kernel(geometry::column_tiles(x.cols))) detail::note_launch();
}

}  // namespace

}  // namespace tewb::kernels::host

namespace tewb::kernels::detail {

std::vector<unsigned char> gather_stacked(const Tensor* parts, std::size_t count) {
    const std::size_t rows = parts[0].rows;
    const std::size_t row_bytes = parts[0].cols * element_size(parts[0].dtype);
    std::vector<unsigned char> x(rows * row_bytes * count);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t p = 0; p < count; ++p) {
            const auto* from = static_cast<const unsigned char*>(parts[p].data) + r * parts[p].stride() * element_size(parts[p].dtype);
            std::memcpy(x.data() + (r * count + p) * row_bytes, from, row_bytes);
        }
    }
    return x;
}

}  // namespace tewb::kernels::detail

namespace tewb::kernels::host {

void cast_dbias(const Tensor& x, const Tensor& out, const Tensor& dbias, const Workspace& workspace, Stream) {
    detail::check_cast_dbias("tewb::kernels::host::cast_dbias", x, out, dbias, workspace);
    if (x.rows == 0 || x.cols == 0) return;
    cast_dbias_dense(x, out, dbias, workspace);
}

// The order of the sums does not depend on the kernel's vector choice, so the gathered x gives the kernel's bits.
void stacked_cast_dbias(const Tensor* parts, std::size_t count, const Tensor& out, const Tensor& dbias, const Workspace& workspace,
                        Stream) {
    const Tensor shape = detail::check_stacked_cast_dbias("tewb::kernels::host::stacked_cast_dbias", parts, count, out, dbias, workspace);
    if (shape.rows == 0 || shape.cols == 0) return;
    const std::vector<unsigned char> gathered = detail::gather_stacked(parts, count);
    const Tensor x = input(gathered.data(), shape.dtype, shape.rows, shape.cols);
    cast_dbias_dense(x, out, dbias, workspace);
}

}  // namespace tewb::kernels::host
