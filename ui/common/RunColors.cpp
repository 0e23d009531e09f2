#include "ui/common/RunColors.h"

#include <array>

namespace tewb::ui {

namespace {

constexpr std::array<QRgb, kDistinctRunStyles> kPalette{
    // Tableau 10
    0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac,
    // cyan, olive, violet, magenta, royal blue, jade, dark gold, rust, dark teal, periwinkle
    0x17becf, 0xbcbd22, 0x8e6bd6, 0xd6399e, 0x3b5bdb, 0x2ca58d, 0xb8860b, 0xb5441f, 0x1b7f7a, 0x9c9ede};

}  // namespace

RunStyle run_style(int index) {
    const std::size_t slot = static_cast<std::size_t>(index < 0 ? 0 : index) % kPalette.size();
    // Dash-dot, not dash: warm-up steps are drawn dashed whatever the run.
    const Qt::PenStyle line = slot < kPalette.size() / 2 ? Qt::SolidLine : Qt::DashDotLine;
    return RunStyle{QColor::fromRgb(kPalette[slot]), line};
}

QColor run_colour(int index) {
    return run_style(index).colour;
}

Qt::PenStyle run_line_style(const QColor& colour) {
    for (std::size_t slot = 0; slot < kPalette.size(); ++slot) {
        if (kPalette[slot] == (colour.rgb() & 0xffffff)) return run_style(static_cast<int>(slot)).line;
    }
    return Qt::SolidLine;
}

}  // namespace tewb::ui
