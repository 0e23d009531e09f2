#pragma once

namespace tewb::ui {

// Fusion style with a light or dark palette for the whole application. Charts follow through
// PlotOptions::dark (Qt Charts has its own themes).
void apply_theme(bool dark);

}  // namespace tewb::ui
