#include "cast/cast_multi_arguments.h"

#include <string>

#include "cast/cast_arguments.h"
#include "common/fail.h"

namespace tewb::kernels::detail {

namespace {

// Every item checked by `check` (which names it by its call text), then the ones with elements, in order.
template <typename Item, typename Check>
std::vector<Item> checked_items(const char* call, const Item* items, std::size_t count, Check&& check) {
    if (count > 0 && items == nullptr) fail(call, "items is null with count " + std::to_string(count));
    std::vector<Item> work;
    work.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        const std::string item_call = std::string(call) + " (item " + std::to_string(i) + ")";
        check(item_call, items[i]);
        if (items[i].rows > 0 && items[i].cols > 0) work.push_back(items[i]);
    }
    return work;
}

}  // namespace

std::vector<CastTransposeItem> checked_multi_items(const char* call, const CastTransposeItem* items, std::size_t count) {
    return checked_items(call, items, count, [](const std::string& item_call, const CastTransposeItem& item) {
        check_cast_transpose_arguments(item_call.c_str(), item.x, item.dtype, item.rows, item.cols, item.scale, item.out,
                                       item.out_t, item.type, item.amax);
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

std::vector<BlockCastItem> checked_block_multi_items(const char* call, const BlockCastItem* items, std::size_t count, DType dtype,
                                                     int block_rows) {
    return checked_items(call, items, count, [&](const std::string& item_call, const BlockCastItem& item) {
        if (item.out.dbias != nullptr) fail(item_call, "out.dbias is set; the multi-tensor block cast writes no bias gradients");
        check_block_cast_arguments(item_call.c_str(), item.x, dtype, item.rows, item.cols, block_rows, item.out);
    });
}

std::size_t block_multi_tiles(const BlockCastItem& item) {
    return ((item.rows + 127) / 128) * ((item.cols + 127) / 128);
}

std::vector<std::pair<std::size_t, std::size_t>> block_multi_launches(const std::vector<BlockCastItem>& work) {
    return launches_of(work, [](const BlockCastItem& item) { return block_multi_tiles(item); });
}

}  // namespace tewb::kernels::detail
