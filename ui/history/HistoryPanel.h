#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include <QWidget>

#include "ui/common/Metatypes.h"

class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace tewb::ui {

class HistoryModel;

// Past runs from the run store (shared with te-bench): search, reopen into the charts, delete, run again.
class HistoryPanel : public QWidget {
    Q_OBJECT

public:
    explicit HistoryPanel(std::filesystem::path storePath, QWidget* parent = nullptr);

    HistoryModel* model() const { return model_; }
    QSortFilterProxyModel* filtered() const { return proxy_; }
    QLineEdit* searchField() const { return search_; }
    QTableView* view() const { return view_; }

    // Reads the store again; errors are reported through problem(), so connect it first.
    void refresh();
    // Store ids of the selected rows, in view order.
    std::vector<std::int64_t> selectedIds() const;
    void open(const std::vector<std::int64_t>& ids);
    void remove(const std::vector<std::int64_t>& ids);
    void runAgain(const std::vector<std::int64_t>& ids);
    // Delete (the button, the Delete key): asks first, No the default ("deleteRunsBox"), then remove().
    void confirmAndRemove();

Q_SIGNALS:
    void openRequested(tewb::RunRecord record, qint64 storeId);
    // After open(): how many runs went out through openRequested, one after the other.
    void openFinished(int count);
    void rerunRequested(tewb::RunConfig config);
    void problem(QString message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // fits the columns again when the pane resizes

private:
    std::function<void()> fitName_;
    std::filesystem::path storePath_;
    HistoryModel* model_;
    QSortFilterProxyModel* proxy_;
    QLineEdit* search_;
    QTableView* view_;
};

}  // namespace tewb::ui
