#include "ui/common/RememberedFolder.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QPointer>
#include <QSettings>

namespace tewb::ui {

namespace {

const QString kKey = QStringLiteral("files/lastFolder");

struct Memory {
    QString folder;
    QPointer<QSettings> settings;
};

Memory& memory() {
    static Memory m;
    return m;
}

void keep(const QString& folder) {
    if (folder.isEmpty()) return;
    Memory& m = memory();
    m.folder = QDir::cleanPath(QFileInfo(folder).absoluteFilePath());
    if (m.settings) m.settings->setValue(kKey, m.folder);
}

}  // namespace

void RememberedFolder::attach(QSettings* settings) {
    Memory& m = memory();
    m.settings = settings;
    if (!settings) return;
    const QString stored = settings->value(kKey).toString();
    if (!stored.isEmpty()) m.folder = stored;
}

QString RememberedFolder::folder() {
    const QString& folder = memory().folder;
    return !folder.isEmpty() && QFileInfo(folder).isDir() ? folder : QDir::homePath();
}

QString RememberedFolder::suggest(const QString& fileName) {
    return QDir(folder()).filePath(fileName);
}

void RememberedFolder::rememberFile(const QString& path) {
    if (!path.isEmpty()) keep(QFileInfo(path).absolutePath());
}

void RememberedFolder::rememberFolder(const QString& path) {
    keep(path);
}

QString choose_save_file(QWidget* parent, const QString& title, const QString& fileName, const QString& filter) {
    const QString path = QFileDialog::getSaveFileName(parent, title, RememberedFolder::suggest(fileName), filter);
    RememberedFolder::rememberFile(path);
    return path;
}

QString choose_open_file(QWidget* parent, const QString& title, const QString& filter) {
    const QString path = QFileDialog::getOpenFileName(parent, title, RememberedFolder::folder(), filter);
    RememberedFolder::rememberFile(path);
    return path;
}

QString choose_folder(QWidget* parent, const QString& title) {
    const QString path = QFileDialog::getExistingDirectory(parent, title, RememberedFolder::folder());
    RememberedFolder::rememberFolder(path);
    return path;
}

}  // namespace tewb::ui
