#pragma once

#include <QColor>

namespace tewb::ui {

// The n-th run's colour: ten hues that stay apart for colour-blind viewers and on dark and light
// backgrounds (Tableau 10), then repeated. A run keeps its colour on every chart and in every table.
QColor run_colour(int index);

}  // namespace tewb::ui
