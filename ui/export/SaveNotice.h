#pragma once

#include <QLabel>
#include <QString>

class QStatusBar;

namespace tewb::ui {

// What an export says when it wrote: "Saved comparison.csv to /home/me/results".
QString saved_message(const QString& path);
// And when it did not: "Not saved: comparison.csv: <why>".
QString not_saved_message(const QString& path, const QString& error);

// Where the window confirms its exports, visibly: the status bar shows the message for kStatusMs, and this
// label at the status bar's right keeps the last one (the full path in its tooltip) until the next export,
// so it can still be found after the run messages have taken the status bar over.
class SaveNotice : public QLabel {
    Q_OBJECT

public:
    static constexpr int kStatusMs = 10'000;
    static constexpr int kMaxWidth = 360;  // pixels of text; the whole message is the tooltip

    explicit SaveNotice(QStatusBar* bar);

    void saved(const QString& path);
    void failed(const QString& path, const QString& error);
    // The last message in full (the label may show it elided).
    QString message() const;

private:
    void display(const QString& text, const QString& whole);

    QStatusBar* bar_;
};

}  // namespace tewb::ui
