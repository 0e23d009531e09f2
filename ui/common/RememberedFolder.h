#pragma once

#include <QString>

class QSettings;
class QWidget;

namespace tewb::ui {

// The folder every file dialog starts in: the last one the user chose a file or folder in, for the whole
// process. With settings attached it is read from there ("files/lastFolder") and written back after each
// choice, so the next session starts there too; without (demo, report, tests) it lasts the process only.
class RememberedFolder {
public:
    // Reads the folder remembered in `settings` (kept when it names none); `settings` may go away later
    // (a QSettings is a QObject: the folder is then kept for the process only). nullptr detaches.
    static void attach(QSettings* settings);
    // The remembered folder when it still exists, else the home folder.
    static QString folder();
    // `fileName` in folder(): where a save dialog starts.
    static QString suggest(const QString& fileName);
    // After a choice: a file's folder, or `path` itself when it is a folder.
    static void rememberFile(const QString& path);
    static void rememberFolder(const QString& path);
};

// File dialogs that start in RememberedFolder::folder() and remember what was chosen; an empty result
// means the user cancelled.
QString choose_save_file(QWidget* parent, const QString& title, const QString& fileName, const QString& filter);
QString choose_open_file(QWidget* parent, const QString& title, const QString& filter);
QString choose_folder(QWidget* parent, const QString& title);

}  // namespace tewb::ui
