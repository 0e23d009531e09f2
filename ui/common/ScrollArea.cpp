#include "ui/common/ScrollArea.h"

namespace tewb::ui {

QScrollArea* scroll_area_for(QWidget* page, const QString& name, bool sideways, QWidget* parent) {
    auto* area = new QScrollArea(parent);
    area->setObjectName(name);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    if (!sideways) area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    area->setWidget(page);
    return area;
}

}  // namespace tewb::ui
