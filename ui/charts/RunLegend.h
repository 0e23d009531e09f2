#pragma once

#include <set>
#include <vector>

#include <QColor>
#include <QListWidget>

namespace tewb::ui {

// The runs of a group of charts, one entry each in the run's colour and line style. A click hides the run from
// every chart of the group or shows it again, a double click shows it alone (again: every run), a right click
// offers the same and "Show every run"; from the keyboard, Space and Enter. Its height is fixed at two rows (more
// rows scroll), so a longer legend never pushes the charts down.
class RunLegend : public QListWidget {
    Q_OBJECT

public:
    struct Entry {
        int key = 0;
        QString name;
        QColor colour;
        friend bool operator==(const Entry&, const Entry&) = default;
    };

    explicit RunLegend(QWidget* parent = nullptr);

    // Replaces the entries (only when something changed: a rebuild relayouts); `notes` ends the legend in italics.
    void setRuns(const std::vector<Entry>& entries, const std::set<int>& hidden, const QString& notes);
    const std::vector<Entry>& entries() const { return entries_; }
    // Every entry's name and the notes, as shown (hidden runs marked "(hidden)").
    QString text() const;
    // The entry of run `key`, or nullptr.
    QListWidgetItem* itemOf(int key) const;

    static constexpr int kKeyRole = Qt::UserRole + 1;
    static constexpr int kNoteRole = Qt::UserRole + 2;

Q_SIGNALS:
    void visibilityToggled(int key);
    void soloRequested(int key);
    void showAllRequested();

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void restyle(QListWidgetItem* item, const Entry& entry) const;

    std::vector<Entry> entries_;
    std::set<int> hidden_;
    QString notes_;
    bool built_ = false;
};

}  // namespace tewb::ui
