#include "ui/common/WheelGuard.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QSlider>
#include <QWidget>

namespace tewb::ui {

namespace {

constexpr const char* kGuarded = "tewbWheelGuarded";
constexpr const char* kFilterName = "tewbWheelGuard";

class WheelGuard : public QObject {
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() != QEvent::Wheel) return false;
        const auto* widget = qobject_cast<QWidget*>(watched);
        if (!widget || widget->hasFocus()) return false;
        // Ignored and swallowed: Qt hands an ignored wheel event on to the parent widgets, up to the scroll area.
        event->ignore();
        return true;
    }
};

void guard(QWidget* control, QObject* filter) {
    if (control->property(kGuarded).toBool()) return;
    control->setProperty(kGuarded, true);
    control->setFocusPolicy(Qt::StrongFocus);  // not WheelFocus: the wheel must not take focus either
    control->installEventFilter(filter);
}

}  // namespace

void guard_wheel(QWidget* root) {
    if (!root) return;
    QObject* filter = root->findChild<QObject*>(QString::fromLatin1(kFilterName), Qt::FindDirectChildrenOnly);
    if (!filter) {
        filter = new WheelGuard(root);
        filter->setObjectName(QString::fromLatin1(kFilterName));
    }
    for (QAbstractSpinBox* box : root->findChildren<QAbstractSpinBox*>()) guard(box, filter);
    for (QComboBox* box : root->findChildren<QComboBox*>()) guard(box, filter);
    for (QSlider* slider : root->findChildren<QSlider*>()) guard(slider, filter);
}

}  // namespace tewb::ui
