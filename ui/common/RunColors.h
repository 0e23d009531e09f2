#pragma once

#include <QColor>

namespace tewb::ui {

// How a run is drawn: its colour and the pen style of its timed line (warm-up steps are always dashed).
struct RunStyle {
    QColor colour;
    Qt::PenStyle line = Qt::SolidLine;
};

// Runs in a palette that stays distinct up to kDistinctRunStyles: twenty hues of middle lightness (legible
// on the light and the dark theme; the first ten are Tableau 10, the next ten fill the hues it leaves
// out), the first ten drawn solid and the next ten dash-dotted, so run k and run k + 10 differ in both.
// Index 20 is index 0 again (RunCollection hands out a pair no shown run has while one is free).
inline constexpr int kDistinctRunStyles = 20;
RunStyle run_style(int index);
QColor run_colour(int index);
// The timed line's style of a run drawn in `colour`: the style its palette slot pairs with that colour
// (solid for a colour outside the palette), so a chart that knows a run's colour draws its style too.
Qt::PenStyle run_line_style(const QColor& colour);

}  // namespace tewb::ui
