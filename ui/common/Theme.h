#pragma once

#include <QColor>
#include <QPalette>

class QChart;

namespace tewb::ui {

// Fusion style with a light or dark palette for the whole application. Charts follow through
// PlotOptions::dark (Qt Charts has its own themes) and style_chart.
void apply_theme(bool dark);

// The palette of the light theme, for what is always light whatever the window shows (the report's paper).
QPalette light_palette();

// The colours every chart uses, in one place so the dark theme covers all of them.
struct ChartColours {
    QColor background;
    QColor plot_background;
    QColor text;
    QColor grid;
    QColor axis_line;
};
ChartColours chart_colours(bool dark);

// Gives `chart`, its axes and its legend the theme's colours (call again after adding axes). Series keep
// their own colours: unlike QChart::setTheme, this leaves them alone.
void style_chart(QChart* chart, bool dark);

}  // namespace tewb::ui
