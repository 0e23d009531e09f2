#pragma once

#include <QMargins>
#include <QRect>
#include <QSize>

class QScreen;
class QWidget;

namespace tewb::ui {

// The size the workbench opens at when nothing asks for another: this, or less on a smaller screen.
inline constexpr QSize kPreferredWindowSize{1400, 900};

// What a window manager's frame adds around the window (title bar, borders) while the real frame is not known
// yet (before the window is shown): generous, so that the frame of a first opening stays on the screen.
inline constexpr QMargins kFrameAllowance{8, 40, 8, 8};

// The window's rectangle (without its frame) moved and shrunk so that, with `frame` around it, it lies inside
// `available` (a screen's available geometry: the screen less taskbars and docks). Never smaller than
// `minimum`; a window that already fits is returned unchanged.
QRect fit_into(const QRect& window, const QMargins& frame, const QRect& available, const QSize& minimum);

// The screen's available area for a window with `frame` around it: its size less the frame.
QSize available_client_size(const QRect& available, const QMargins& frame);

// The frame around `window` as the window manager drew it, or kFrameAllowance while it is not known (not
// shown yet, or no window manager has framed it).
QMargins frame_of(const QWidget* window);

// True on a screen a person sees; false on the offscreen platform, whose 800×600 "screen" is a placeholder
// and must not shrink a window (demo screenshots and tests size it themselves).
bool has_real_screen();

}  // namespace tewb::ui
