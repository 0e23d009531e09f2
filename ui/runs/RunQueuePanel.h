#pragma once

#include <functional>

#include <QWidget>

class QPushButton;
class QTableView;

namespace tewb::ui {

class RunController;

// The queue with start, cancel and clean-up buttons; each row shows step n of N as a bar, elapsed time
// and ETA.
class RunQueuePanel : public QWidget {
    Q_OBJECT

public:
    explicit RunQueuePanel(RunController* controller, QWidget* parent = nullptr);

    QTableView* view() const { return view_; }
    QPushButton* startButton() const { return start_; }
    QPushButton* cancelButton() const { return cancel_; }
    QPushButton* clearQueuedButton() const { return clearQueued_; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // refits the columns when the pane resizes

private:
    void updateButtons();
    std::function<void()> fitColumns_;

    RunController* controller_;
    QTableView* view_;
    QPushButton* start_;
    QPushButton* cancel_;
    QPushButton* clearDone_;
    QPushButton* clearQueued_;
};

}  // namespace tewb::ui
