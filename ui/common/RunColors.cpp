#include "ui/common/RunColors.h"

#include <array>

namespace tewb::ui {

QColor run_colour(int index) {
    static constexpr std::array<QRgb, 10> kPalette{0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                                   0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
    const auto slot = static_cast<std::size_t>(index < 0 ? 0 : index) % kPalette.size();
    return QColor::fromRgb(kPalette[slot]);
}

}  // namespace tewb::ui
