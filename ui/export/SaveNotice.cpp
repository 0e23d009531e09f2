#include "ui/export/SaveNotice.h"

#include <QDir>
#include <QFileInfo>
#include <QStatusBar>

namespace tewb::ui {

namespace {

QString name_of(const QString& path) {
    const QFileInfo info(path);
    return info.fileName().isEmpty() ? QDir::toNativeSeparators(path) : info.fileName();
}

QString folder_of(const QString& path) {
    const QFileInfo info(path);
    return QDir::toNativeSeparators(info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

}  // namespace

QString saved_message(const QString& path) {
    const QFileInfo info(path);
    if (info.isDir()) return SaveNotice::tr("Saved into %1").arg(folder_of(path));
    return SaveNotice::tr("Saved %1 to %2").arg(name_of(path), folder_of(path));
}

QString not_saved_message(const QString& path, const QString& error) {
    return SaveNotice::tr("Not saved: %1: %2").arg(name_of(path), error);
}

SaveNotice::SaveNotice(QStatusBar* bar) : QLabel(bar), bar_(bar) {
    setObjectName(QStringLiteral("saveNotice"));
    setTextInteractionFlags(Qt::TextSelectableByMouse);
    bar->addPermanentWidget(this);
}

void SaveNotice::saved(const QString& path) {
    const QString message = saved_message(path);
    bar_->showMessage(message, kStatusMs);
    display(message, message);
}

void SaveNotice::failed(const QString& path, const QString& error) {
    const QString message = not_saved_message(path, error);
    bar_->showMessage(message, kStatusMs);
    display(tr("Not saved: %1").arg(name_of(path)), message);
}

QString SaveNotice::message() const {
    return toolTip();
}

// Elided, so a deep folder never widens the status bar (and with it the window's minimum width).
void SaveNotice::display(const QString& text, const QString& whole) {
    setText(fontMetrics().elidedText(text, Qt::ElideMiddle, kMaxWidth));
    setToolTip(whole);
}

}  // namespace tewb::ui
