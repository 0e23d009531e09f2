#include <string>

#include "cast/cast_items.h"
#include "common/arguments.h"
#include "common/fail.h"
#include "tewb_kernels/cast.h"
#include "tewb_kernels/cast_multi.h"

namespace tewb::kernels::detail {

namespace {

// Every tensor pair checked by `check` (which names it by its call text), then those with elements made items by
// `item`, in order.
template <typename Item, typename Check, typename MakeItem>
std::vector<Item> checked_items(const char* call, const Tensor* x, const Tensor* out, std::size_t count, Check&& check,
                                MakeItem&& item) {
    if (count > 0 && (x == nullptr || out == nullptr)) fail(call, "x or out is null with count " + std::to_string(count));
    std::vector<Item> work;
    work.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        const std::string item_call = std::string(call) + " (tensor " + std::to_string(i) + ")";
        check(item_call, x[i], out[i]);
        if (x[i].rows > 0 && x[i].cols > 0) work.push_back(item(x[i], out[i]));
    }
    return work;
}

}  // namespace

std::vector<CastTransposeItem> checked_multi_items(const char* call, const Tensor* x, const Tensor* out, std::size_t count) {
    return checked_items<CastTransposeItem>(
        call, x, out, count,
        [](const std::string& item_call, const Tensor& xi, const Tensor& oi) { check_cast_transpose(item_call.c_str(), xi, oi); },
        [](const Tensor& xi, const Tensor& oi) {
            return CastTransposeItem{xi.data, xi.dtype, xi.rows, xi.cols, oi.scale, oi.data, oi.transposed, fp8_type(oi), oi.amax};
        });
}

std::size_t multi_tiles(const CastTransposeItem& item) {
    return ((item.rows + kCastMultiTile - 1) / kCastMultiTile) * ((item.cols + kCastMultiTile - 1) / kCastMultiTile);
}

namespace {

// At most kCastMultiItemsPerLaunch items and 2^31 - 1 tiles per launch.
template <typename Item, typename Tiles>
std::vector<std::pair<std::size_t, std::size_t>> launches_of(const std::vector<Item>& work, Tiles&& tiles_of) {
    constexpr std::size_t kMostTiles = 2147483647;
    std::vector<std::pair<std::size_t, std::size_t>> launches;
    std::size_t first = 0;
    std::size_t tiles = 0;
    for (std::size_t i = 0; i < work.size(); ++i) {
        const std::size_t item_tiles = tiles_of(work[i]);
        if (i > first && (i - first == kCastMultiItemsPerLaunch || tiles + item_tiles > kMostTiles)) {
            launches.emplace_back(first, i);
            first = i;
            tiles = 0;
        }
        tiles += item_tiles;
    }
    if (first < work.size()) launches.emplace_back(first, work.size());
    return launches;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> multi_launches(const std::vector<CastTransposeItem>& work) {
    return launches_of(work, [](const CastTransposeItem& item) { return multi_tiles(item); });
}

std::vector<BlockCastItem> checked_block_multi_items(const char* call, const Tensor* x, const Tensor* out, std::size_t count) {
    const Tensor no_dbias;
    return checked_items<BlockCastItem>(
        call, x, out, count,
        [&](const std::string& item_call, const Tensor& xi, const Tensor& oi) {
            check_block_cast(item_call.c_str(), xi, oi, no_dbias, Workspace{});
            if (xi.dtype != x[0].dtype) {
                fail(item_call, "x has dtype " + std::string(to_string(xi.dtype)) + "; allowed: " +
                                    std::string(to_string(x[0].dtype)) + ", tensor 0's");
            }
            if (oi.scale_mode != out[0].scale_mode) fail(item_call, "out.scale_mode differs from tensor 0's");
        },
        [&](const Tensor& xi, const Tensor& oi) {
            return BlockCastItem{xi.data, xi.rows, xi.cols, block_cast_output(oi, no_dbias, Workspace{})};
        });
}

std::size_t block_multi_tiles(const BlockCastItem& item) {
    return ((item.rows + 127) / 128) * ((item.cols + 127) / 128);
}

std::vector<std::pair<std::size_t, std::size_t>> block_multi_launches(const std::vector<BlockCastItem>& work) {
    return launches_of(work, [](const BlockCastItem& item) { return block_multi_tiles(item); });
}

}  // namespace tewb::kernels::detail
