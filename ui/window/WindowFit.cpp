#include "ui/window/WindowFit.h"

#include <algorithm>

#include <QGuiApplication>
#include <QWidget>

namespace tewb::ui {

QSize available_client_size(const QRect& available, const QMargins& frame) {
    return QSize(std::max(0, available.width() - frame.left() - frame.right()),
                 std::max(0, available.height() - frame.top() - frame.bottom()));
}

QRect fit_into(const QRect& window, const QMargins& frame, const QRect& available, const QSize& minimum) {
    const QSize room = available_client_size(available, frame);
    QRect fitted = window;
    fitted.setSize(window.size().boundedTo(room).expandedTo(minimum));
    // Then moved so that the frame's top left and, as far as the size allows, its bottom right are inside.
    const int left = available.left() + frame.left();
    const int top = available.top() + frame.top();
    const int right = available.right() - frame.right();
    const int bottom = available.bottom() - frame.bottom();
    int x = std::min(fitted.x(), right - fitted.width() + 1);
    int y = std::min(fitted.y(), bottom - fitted.height() + 1);
    x = std::max(x, left);
    y = std::max(y, top);
    fitted.moveTo(x, y);
    return fitted;
}

QMargins frame_of(const QWidget* window) {
    if (!window->isVisible()) return kFrameAllowance;
    const QRect frame = window->frameGeometry();
    const QRect inner = window->geometry();
    const QMargins drawn(inner.left() - frame.left(), inner.top() - frame.top(), frame.right() - inner.right(),
                         frame.bottom() - inner.bottom());
    return drawn.isNull() ? kFrameAllowance : drawn;
}

bool has_real_screen() {
    return QGuiApplication::platformName() != QLatin1String("offscreen") &&
           QGuiApplication::platformName() != QLatin1String("minimal");
}

}  // namespace tewb::ui
