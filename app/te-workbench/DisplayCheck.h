#pragma once

#include <optional>
#include <string>

// Whether te-workbench can open a window here, asked before QApplication exists: Qt's platform plugin aborts
// the process (SIGABRT, a core dump) when it finds no display or one that does not answer.
namespace tewb::workbench {

// Why no window can be opened ("no display…", "the X display ':99' (DISPLAY) does not answer…"), or nothing
// when one can (or when the platform is not X11 and Qt is left to judge: QT_QPA_PLATFORM=offscreen, wayland).
// An X display is asked by connecting to it, for at most `limit_ms`.
std::optional<std::string> display_problem(int limit_ms = 10000);

}  // namespace tewb::workbench
