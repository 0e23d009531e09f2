#pragma once

#include <QScrollArea>

namespace tewb::ui {

// `page` in a frameless scroll area named `name` that gives it the whole area when there is room and scroll bars
// when there is not; `sideways` says whether it may scroll sideways (a page of charts reflows instead).
QScrollArea* scroll_area_for(QWidget* page, const QString& name, bool sideways, QWidget* parent = nullptr);

}  // namespace tewb::ui
