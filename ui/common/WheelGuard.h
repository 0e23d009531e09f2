#pragma once

class QWidget;

namespace tewb::ui {

// The mouse wheel over a spin box, combo box or slider changes it only when it has focus (clicked or tabbed
// into); without focus the wheel scrolls whatever holds it (the form's scroll area), so scrolling a long form
// never edits a field the pointer passes over. Applies to every such control under `root` at the time of the
// call (call it again after adding controls; a control is guarded once). Scroll bars are not touched.
void guard_wheel(QWidget* root);

}  // namespace tewb::ui
