#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cast/cast_items.h"
#include "common/fail.h"
#include "common/host_loops.h"
#include "common/host_numbers.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"

namespace tewb::kernels::host {

namespace {

using detail::BlockCastItem;
using detail::CastTransposeItem;

// One item: out row by row, its amax as the bits of max |x| (a NaN above inf), then the transposed copy.
void cast_transpose_item(const CastTransposeItem& item) {
    const float scale = *item.scale;
    auto* out = static_cast<std::uint8_t*>(item.out);
    std::atomic<std::uint32_t> amax_bits{0};
    detail::parallel_for(item.rows, item.cols, [&](std::size_t first, std::size_t last) {
        std::vector<float> row(item.cols);
        std::uint32_t local = 0;
        for (std::size_t r = first; r < last; ++r) {
            detail::load_floats(item.x, item.dtype, r * item.cols, item.cols, row.data());
            for (std::size_t c = 0; c < item.cols; ++c) {
                local = std::max(local, detail::abs_bits(row[c]));
                out[r * item.cols + c] = detail::float_to_fp8(row[c] * scale, item.type);
            }
        }
        detail::combine_bits_max(amax_bits, local);
    });
    detail::transpose_bytes(out, item.rows, item.cols, static_cast<std::uint8_t*>(item.out_t));
    if (item.amax != nullptr) {
        std::uint32_t held = 0;
        std::memcpy(&held, item.amax, sizeof held);
        const std::uint32_t bits = amax_bits.load();
        if (bits > held) std::memcpy(item.amax, &bits, sizeof bits);
    }
}

}  // namespace

void cast_transpose_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, Stream) {
    const std::vector<CastTransposeItem> work =
        detail::checked_multi_items("tewb::kernels::host::cast_transpose_multi_to_fp8", x, out, count);
    for (const CastTransposeItem& item : work) cast_transpose_item(item);
    for (std::size_t launch = 0; launch < detail::multi_launches(work).size(); ++launch) detail::note_launch();
}

void block_cast_multi_to_fp8(const Tensor* x, const Tensor* out, std::size_t count, bool power_of_two, Stream) {
    const std::vector<BlockCastItem> work =
        detail::checked_block_multi_items("tewb::kernels::host::block_cast_multi_to_fp8", x, out, count);
    if (work.empty()) return;
    const int block_rows = detail::block_rows(out[0]);
    for (const BlockCastItem& item : work) {
        detail::host_block_cast(item.x, x[0].dtype, item.rows, item.cols, block_rows, power_of_two, item.out);
    }
    for (std::size_t launch = 0; launch < detail::block_multi_launches(work).size(); ++launch) detail::note_launch();
}

}  // namespace tewb::kernels::host
