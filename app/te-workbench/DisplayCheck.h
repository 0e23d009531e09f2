#pragma once

#include <optional>
#include <string>
#include <vector>

// Whether te-workbench can open a window here, asked before QApplication exists: Qt's platform plugin aborts
// the process (SIGABRT, a core dump) when it finds no display or one that does not answer.
namespace tewb::workbench {

// Why no window can be opened ("no display…", "the X display ':99' (DISPLAY) does not answer…"), or nothing
// when one can (or when the platform is not X11 and Qt is left to judge: QT_QPA_PLATFORM=offscreen, wayland).
// An X display is asked by connecting to it, for at most `limit_ms`.
std::optional<std::string> display_problem(int limit_ms = 10000);

// Why QT_QPA_PLATFORM names no platform Qt can load here ("QT_QPA_PLATFORM 'bogus': no such Qt platform plugin
// …; allowed: offscreen, xcb, …"), or nothing when it is unset or one of its names (it may list several, "a;b",
// each with options after ':') has a plugin in one of `platform_dirs` (Qt's platforms folders). Qt itself aborts then.
std::optional<std::string> platform_problem(const std::vector<std::string>& platform_dirs);

}  // namespace tewb::workbench
