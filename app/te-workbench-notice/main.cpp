// te-workbench-notice: shows, in a dialog, why te-workbench cannot start. The installed launcher runs it
// when LibTorch is missing and no terminal is there to read the message (te-workbench started from the
// desktop menu). Qt Widgets only: it must work exactly when LibTorch does not.
#include <QApplication>
#include <QMessageBox>
#include <QString>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    const QString message = argc > 1 ? QString::fromLocal8Bit(argv[1])
                                     : QStringLiteral("TE Workbench cannot start; run te-workbench in a terminal to see why.");
    QMessageBox box(QMessageBox::Warning, QStringLiteral("TE Workbench"), message, QMessageBox::Ok);
    box.setTextInteractionFlags(Qt::TextSelectableByMouse);  // so the command can be copied
    box.exec();
    return 0;
}
