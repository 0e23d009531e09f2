// te-workbench: the desktop GUI of TE Workbench. Wiring only; the window lives in ui/.
#include <QApplication>
#include <QIcon>

#include "core/device/DeviceInfo.h"
#include "ui/window/MainWindow.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("te-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("TE Workbench"));
    QApplication::setOrganizationName(QStringLiteral("te-workbench"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/te-workbench.svg")));
    QApplication::setDesktopFileName(QStringLiteral("te-workbench"));
    tewb::ui::MainWindow window(&tewb::detect_device);
    window.show();
    return QApplication::exec();
}
