#pragma once

#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QTimer>

#include "core/common/Statistics.h"
#include "core/results/RunRecord.h"

namespace tewb::ui {

class RunCollection;

// One row per run of the collection, in its order: core's summary (over the steps so far for a run still
// going), the last held-out (validation) loss of a run on a token file, and speedup and memory ratio against the baseline run the user picked (core's definitions).
// Spread and the speedup's 95% interval are those of the run's group (core's group_runs): its repeats when
// it is one of several, else its own timed steps; an interval that contains 1.0 reads "not significant".
class ComparisonModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        Name, Status, MeanMs, MedianMs, P90Ms, Noise, TokensPerS, Tflops, Mfu, PeakMemory, FinalLoss, ValLoss, Speedup, SpeedupInterval,
        MemoryRatio, Spread, Scaling, Implementation, ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole + 1;  // the raw number behind a cell
    static constexpr int kLiveUpdateMs = 125;           // how often a running run's row refreshes

    explicit ComparisonModel(RunCollection* runs, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // The run key of the baseline; none until a run exists (then the first run).
    std::optional<int> baseline() const { return baseline_; }
    // A run whose FP8 GEMMs were emulated is never the baseline (core's baseline_refusal): setBaseline ignores it.
    void setBaseline(std::optional<int> key);
    bool canBeBaseline(int key) const;
    std::optional<int> firstPossibleBaseline() const;
    std::optional<std::size_t> baselineIndex() const;
    int keyAt(int row) const { return keys_[static_cast<std::size_t>(row)]; }

    // Records with their current summaries, for core's CSV writer.
    std::vector<RunRecord> summarizedRecords() const;

Q_SIGNALS:
    void baselineChanged();

private:
    struct Row {
        RunSummary summary;
        std::optional<double> speedup;
        std::optional<double> memory_ratio;
        bool emulated_format_memory = false;  // MXFP8 or NVFP4 emulated: no memory ratio (core's ComparisonRow)
        // The run's group (core's group_runs: its repeats, or the run alone): spread and intervals.
        std::string spread;
        std::optional<Interval> speedup_ci;
        bool significant = false;
        bool grouped_baseline = false;
        bool emulated = false;  // FP8 GEMMs emulated: the ratio is the emulation's cost, shown as "emulated"
        bool noisy = false;     // this run's or the baseline's measurement was noisy (core's MeasurementQuality)
        std::vector<std::string> not_comparable;  // why it has no speedup against the baseline (core's Comparability)
        bool per_token = false;                   // another process count than the baseline's: tokens per second
    };
    void recompute();
    void recomputeAll();  // and tell views every row changed
    // data() by role: the cell's text, its sort key (numbers sort as numbers) and its tooltip.
    QVariant displayText(const RunRecord& r, int key, const Row& c, int column) const;
    QVariant sortValue(const RunRecord& r, int key, const Row& c, int column) const;
    QVariant toolTip(const RunRecord& r, const Row& c, int column) const;

    RunCollection* runs_;
    std::vector<int> keys_;
    std::vector<Row> rows_;
    std::optional<int> baseline_;
    QTimer coalesce_;
};

}  // namespace tewb::ui
