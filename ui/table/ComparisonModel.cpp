#include "ui/table/ComparisonModel.h"

#include <algorithm>

#include <QColor>
#include <QFont>

#include "core/results/Comparability.h"
#include "core/results/Comparison.h"
#include "core/results/ReportText.h"
#include "core/results/RunGroups.h"
#include "core/common/TextTable.h"
#include "core/results/RunWords.h"
#include "ui/common/ValidationLoss.h"
#include "ui/runs/RunCollection.h"

namespace tewb::ui {

namespace {

QVariant number(const std::optional<double>& value, int decimals, const QString& suffix = {}) {
    if (!value) return QStringLiteral("–");
    return QString::fromStdString(format_fixed(value, decimals)) + suffix;
}

QVariant raw(const std::optional<double>& value) {
    return value ? QVariant(*value) : QVariant();
}

}  // namespace

ComparisonModel::ComparisonModel(RunCollection* runs, QObject* parent) : QAbstractTableModel(parent), runs_(runs) {
    for (const RunCollection::Entry& e : runs_->entries()) keys_.push_back(e.key);
    recompute();
    // Rows change first; a new baseline is a separate change, so views see one thing at a time.
    connect(runs_, &RunCollection::runAdded, this, [this](int key) {
        const int row = static_cast<int>(keys_.size());
        beginInsertRows({}, row, row);
        keys_.push_back(key);
        recompute();
        endInsertRows();
        if (!baseline_) setBaseline(key);
    });
    // A running run changes every step; its row follows at the charts' pace, not per step, since
    // every change makes the views measure their cells again.
    coalesce_.setSingleShot(true);
    coalesce_.setInterval(kLiveUpdateMs);
    connect(&coalesce_, &QTimer::timeout, this, &ComparisonModel::recomputeAll);
    connect(runs_, &RunCollection::runChanged, this, [this](int key) {
        const RunCollection::Entry* e = runs_->find(key);
        if (e && e->record.status == RunStatus::Running) {
            if (!coalesce_.isActive()) coalesce_.start();
        } else {
            coalesce_.stop();
            recomputeAll();
        }
    });
    connect(runs_, &RunCollection::runRemoved, this, [this](int key) {
        const auto it = std::find(keys_.begin(), keys_.end(), key);
        if (it == keys_.end()) return;
        const int row = static_cast<int>(it - keys_.begin());
        beginRemoveRows({}, row, row);
        keys_.erase(it);
        recompute();
        endRemoveRows();
        if (baseline_ == key) {
            baseline_.reset();
            setBaseline(firstPossibleBaseline());
            if (!baseline_) Q_EMIT baselineChanged();
        } else {
            recomputeAll();
        }
    });
}

int ComparisonModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(keys_.size());
}

int ComparisonModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

bool ComparisonModel::canBeBaseline(int key) const {
    const RunCollection::Entry* e = runs_->find(key);
    return e != nullptr && !baseline_refusal(e->record);
}

std::optional<int> ComparisonModel::firstPossibleBaseline() const {
    for (const int key : keys_) {
        if (canBeBaseline(key)) return key;
    }
    return std::nullopt;
}

void ComparisonModel::setBaseline(std::optional<int> key) {
    if (key && runs_->indexOf(*key) < 0) return;
    if (key && !canBeBaseline(*key)) return;  // an emulated run's time is no speed to compare with
    if (key == baseline_) return;
    baseline_ = key;
    recomputeAll();
    Q_EMIT baselineChanged();
}

void ComparisonModel::recomputeAll() {
    recompute();
    if (!keys_.empty()) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

std::optional<std::size_t> ComparisonModel::baselineIndex() const {
    if (!baseline_) return std::nullopt;
    const auto it = std::find(keys_.begin(), keys_.end(), *baseline_);
    return it == keys_.end() ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(it - keys_.begin()));
}

std::vector<RunRecord> ComparisonModel::summarizedRecords() const {
    std::vector<RunRecord> records;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        const RunCollection::Entry* e = runs_->find(keys_[i]);
        if (!e) continue;
        RunRecord r = e->record;
        r.summary = rows_[i].summary;
        records.push_back(std::move(r));
    }
    return records;
}

void ComparisonModel::recompute() {
    // core's comparison reads summaries only: feed it summaries, not whole records with their steps.
    std::vector<RunRecord> summaries;
    summaries.reserve(keys_.size());
    for (const int key : keys_) {
        RunRecord r;
        if (const RunCollection::Entry* e = runs_->find(key)) {
            r.summary = RunCollection::summary_of(e->record);
            r.config = e->record.config;  // what makes two runs comparable (core's Comparability)
            r.status = e->record.status;
            r.execution.device = e->record.execution.device;
            r.execution.fp8_emulated = e->record.execution.fp8_emulated;
            r.execution.quality = e->record.execution.quality;
        }
        summaries.push_back(std::move(r));
    }
    const std::vector<ComparisonRow> compared = compare_runs(summaries, baselineIndex());
    rows_.clear();
    for (std::size_t i = 0; i < compared.size(); ++i) {
        Row row;
        row.summary = summaries[i].summary;
        row.speedup = compared[i].speedup;
        row.memory_ratio = compared[i].memory_ratio;
        row.emulated = compared[i].emulated;
        row.emulated_format_memory = compared[i].emulated_format_memory;
        row.noisy = compared[i].noisy;
        row.not_comparable = compared[i].not_comparable;
        row.per_token = compared[i].per_token;
        rows_.push_back(std::move(row));
    }
    // Groups need the step times and repeat ids as well (not the FP8 samples, the heavy part).
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        const RunCollection::Entry* e = runs_->find(keys_[i]);
        if (!e) continue;
        summaries[i].config.name = e->record.config.name;
        summaries[i].status = e->record.status;
        summaries[i].repeat = e->record.repeat;
        // A running run refreshes 8 times a second: its interval (2000 resamples) waits until it ends.
        if (e->record.status == RunStatus::Running) continue;
        for (const StepMetrics& step : e->record.steps) {
            if (step.phase != Phase::Timed) continue;
            StepMetrics timed;
            timed.step = step.step;
            timed.phase = step.phase;
            timed.step_ms = step.step_ms;
            summaries[i].steps.push_back(timed);
        }
    }
    for (const RunGroup& g : group_runs(summaries, baselineIndex())) {
        std::string spread;
        if (g.min_ms) spread = format_fixed(g.min_ms, 2) + "–" + format_fixed(g.max_ms, 2) + " ms over " + g.sample_basis();
        if (g.repeated && g.centre_ms) spread = "median " + format_fixed(g.centre_ms, 2) + " ms, " + spread;
        for (const std::size_t m : g.members) {
            Row& row = rows_[m];
            row.spread = spread;
            row.speedup_ci = g.speedup_ci;
            row.significant = g.significant();
            row.grouped_baseline = g.is_baseline;
        }
    }
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const std::size_t row = static_cast<std::size_t>(index.row());
    const RunCollection::Entry* e = runs_->find(keys_[row]);
    if (!e) return {};
    const Row& c = rows_[row];
    const int column = index.column();
    if (role == Qt::DisplayRole) return displayText(e->record, e->key, c, column);
    if (role == SortRole) return sortValue(e->record, e->key, c, column);
    if (role == Qt::DecorationRole && column == Name) return e->colour;
    if (role == Qt::FontRole && baseline_ == e->key) {
        QFont bold;
        bold.setBold(true);
        return bold;
    }
    if (role == Qt::TextAlignmentRole && column >= MeanMs && column <= MemoryRatio) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    if (role == Qt::ToolTipRole) return toolTip(e->record, c, column);
    return {};
}

QVariant ComparisonModel::displayText(const RunRecord& r, int key, const Row& c, int column) const {
    const RunSummary& s = c.summary;
    const std::optional<double> mfu_percent = s.mfu ? std::optional<double>(*s.mfu * 100.0) : std::nullopt;
    const std::optional<double> peak =
        s.peak_mem_bytes > 0 ? std::optional<double>(static_cast<double>(s.peak_mem_bytes)) : std::nullopt;
    switch (column) {
        case Name: {
            QString name = QString::fromStdString(display_name(r));
            if (baseline_ == key && !name.contains(QStringLiteral("baseline"))) name += tr(" (baseline)");
            return name;
        }
        case Status: return QString::fromUtf8(to_string(r.status).data());
        case Implementation: {
            const Execution& x = r.execution;
            QString text = QString::fromStdString(x.implementation.empty() ? std::string(to_string(r.config.backend))
                                                                           : x.implementation);
            // The te path and whether anything fell back; the list of fallbacks is the tooltip.
            if (!x.te_impl.empty()) {
                text += QStringLiteral(" · ") + QString::fromStdString(x.te_impl);
                if (!x.fallbacks.empty()) text += QStringLiteral(", ") + QString::fromStdString(fallback_summary(x));
            }
            return text;
        }
        case MeanMs: return number(s.mean_ms, 2);
        case MedianMs: return number(s.median_ms, 2);
        case P90Ms: return number(s.p90_ms, 2);
        case TokensPerS: return number(s.tokens_per_s, 0);
        case Tflops: return s.tflops ? QString::fromStdString(format_tflops(s.tflops)) : QStringLiteral("–");
        case Mfu: return number(mfu_percent, 1, QStringLiteral(" %"));
        case PeakMemory:  // what it is: the process's peak RSS on the CPU, the CUDA allocator's peak on a GPU
            if (!peak) return QStringLiteral("–");
            return QString::fromStdString(format_bytes(s.peak_mem_bytes)) +
                   (r.execution.memory_metric == MemoryMetric::CpuPeakRss ? tr(" RSS") : QString());
        case FinalLoss: return number(s.final_loss, 4);
        case ValLoss: {
            const std::optional<ValLossPoint> val = final_val_loss(r);
            return number(val ? std::optional<double>(val->loss) : std::nullopt, 4);
        }
        case Speedup:
            if (!c.not_comparable.empty()) return tr("not comparable");
            if (c.emulated && c.speedup) return QString::fromUtf8(kEmulatedSpeedup.data(), static_cast<qsizetype>(kEmulatedSpeedup.size()));
            return number(c.speedup, 2, QStringLiteral("×")).toString() + (c.per_token && c.speedup ? tr(" per token") : QString()) +
                   (c.noisy && c.speedup ? tr(" noisy") : QString());
        case Noise:
            return QString::fromStdString(quality_cell(r.execution.quality)).replace(QLatin1Char('-'), QStringLiteral("–"));
        case MemoryRatio: return number(c.memory_ratio, 2, QStringLiteral("×"));
        case Spread: return QString::fromStdString(c.spread);
        case Scaling: {
            if (!r.execution.dist) return QStringLiteral("–");
            const DistExecution& d = *r.execution.dist;
            const QString ranks = d.world_size == 1 ? tr("1 process") : tr("%1 processes").arg(d.world_size);
            if (!d.scaling_efficiency) return ranks;
            const QString efficiency = number(*d.scaling_efficiency * 100.0, 0, QStringLiteral(" %")).toString();
            if (*d.scaling_efficiency > 1.0) return tr("%1 efficient (above 100 %: see tooltip), %2").arg(efficiency, ranks);
            if (scaling_is_noisy(r)) return tr("%1 efficient, %2 (noisy: see tooltip)").arg(efficiency, ranks);
            return tr("%1 efficient, %2").arg(efficiency, ranks);
        }
        case SpeedupInterval: {
            if (c.grouped_baseline) return tr("baseline");
            if (!c.speedup_ci || c.emulated || !c.not_comparable.empty()) return QStringLiteral("–");
            QString text = QStringLiteral("%1–%2×")
                               .arg(QString::fromStdString(format_fixed(c.speedup_ci->lo, 2)),
                                    QString::fromStdString(format_fixed(c.speedup_ci->hi, 2)));
            if (!c.significant) text += tr(" not significant");
            if (c.noisy) text += tr(", noisy");
            return text;
        }
        default: return {};
    }
}

QVariant ComparisonModel::sortValue(const RunRecord& r, int key, const Row& c, int column) const {
    const RunSummary& s = c.summary;
    const std::optional<double> peak =
        s.peak_mem_bytes > 0 ? std::optional<double>(static_cast<double>(s.peak_mem_bytes)) : std::nullopt;
    switch (column) {
        case MeanMs: return raw(s.mean_ms);
        case MedianMs: return raw(s.median_ms);
        case P90Ms: return raw(s.p90_ms);
        case Noise: return r.execution.quality ? raw(r.execution.quality->cv) : QVariant();
        case TokensPerS: return raw(s.tokens_per_s);
        case Tflops: return raw(s.tflops);
        case Mfu: return raw(s.mfu);
        case PeakMemory: return raw(peak);
        case FinalLoss: return raw(s.final_loss);
        case ValLoss: {
            const std::optional<ValLossPoint> val = final_val_loss(r);
            return val ? QVariant(val->loss) : QVariant();
        }
        case Speedup: return raw(c.speedup);
        case MemoryRatio: return raw(c.memory_ratio);
        case SpeedupInterval: return c.speedup_ci ? QVariant(c.speedup_ci->lo) : QVariant();
        case Scaling: return r.execution.dist ? raw(r.execution.dist->scaling_efficiency) : QVariant();
        default: return displayText(r, key, c, column);
    }
}

QVariant ComparisonModel::toolTip(const RunRecord& r, const Row& c, int column) const {
    if (column == Name) return QString::fromStdString(display_name(r));  // the cell may be elided
    if (column == Status && !r.message.empty()) return QString::fromStdString(r.message);
    if (column == MeanMs && r.config.inspect_fp8) {
        return tr("Includes FP8 inspection (--inspect-fp8): every cast's saturation and underflow read back to the host, "
                  "inside forward and backward. Compare speed with a run without inspection.");
    }
    if (column == Speedup && !c.not_comparable.empty()) {
        QStringList why;
        for (const std::string& reason : c.not_comparable) why << QString::fromStdString(reason);
        return tr("No speedup against the baseline: %1.").arg(why.join(QStringLiteral("; ")));
    }
    if (column == Speedup && c.per_token && c.speedup) {
        return tr("Tokens per second against the baseline's: the two ran on different numbers of processes, so a "
                  "step holds different numbers of tokens.");
    }
    if (column == MemoryRatio && c.emulated_format_memory) {
        return tr("No memory ratio: %1.").arg(QString::fromStdString(emulated_format_memory_reason()));
    }
    if (column == Speedup && c.emulated && c.speedup) {
        return tr("Measured ratio %1×, not a speedup: %2.")
            .arg(QString::fromStdString(format_fixed(c.speedup, 2)), QString::fromStdString(emulated_speedup_reason()));
    }
    if (column == Implementation) {
        QStringList tips;
        if (r.execution.fp8_emulated) {
            tips << QString::fromStdString(emulated_implementation_tip());
        }
        if (const std::string path = te_path_words(r); !path.empty()) {
            QString te = QString::fromStdString(path);
            const Execution& x = r.execution;
            if (!x.te_impl.empty()) {
                const std::string fallbacks = fully_fused(x) ? std::string("fully fused, no fallbacks") : fallback_summary(x);
                te += QStringLiteral("; ") + QString::fromStdString(fallbacks);
            }
            for (const std::string& line : fallback_lines(x)) te += QStringLiteral("\n  ") + QString::fromStdString(line);
            tips << te;
        }
        if (!tips.isEmpty()) return tips.join(QStringLiteral("\n"));
    }
    if (column == Noise) return QString::fromStdString(quality_details_text(r.execution.quality));
    if (column == Speedup && c.noisy) {
        return tr("Not clean evidence: this run or the baseline was measured noisily.\nThis run: %1")
            .arg(QString::fromStdString(quality_details_text(r.execution.quality)));
    }
    if (column == Mfu && !r.execution.peak_source.empty()) return QString::fromStdString(r.execution.peak_source);
    if (column == PeakMemory) {
        return r.execution.memory_metric == MemoryMetric::CpuPeakRss
                   ? tr("The process's peak resident set (RSS) over the run: everything it held in memory, not only tensors")
                   : tr("The CUDA caching allocator's peak of allocated memory over the run (tensors on the GPU; the "
                        "allocator's cache and the CUDA context are not counted)");
    }
    if (column == ValLoss) {
        const std::optional<ValLossPoint> val = final_val_loss(r);
        if (!val) return tr("No validation loss: the run trained on synthetic tokens (or has not evaluated yet)");
        QString tip = tr("Loss on the held-out tail of the token file at step %1 (its last evaluation)").arg(val->step);
        if (r.data_file) {
            tip += tr(": %1, %2 held-out tokens of %3")
                       .arg(QString::fromStdString(r.data_file->name))
                       .arg(r.data_file->val_tokens)
                       .arg(r.data_file->tokens);
        }
        return tip;
    }
    if (column == Scaling && r.execution.dist) {
        const DistExecution& d = *r.execution.dist;
        QString ranks;
        for (std::size_t i = 0; i < d.rank_mean_ms.size(); ++i) {
            ranks += (i ? QStringLiteral(", ") : QString()) + number(d.rank_mean_ms[i], 2).toString();
        }
        QString tip = tr("Data-parallel job of %1 over %2; mean ms per step by rank: %3. Scaling efficiency: the 1-process "
                         "run's median ms per step over the job's, with the same batch per process (100 % = perfect scaling).")
                          .arg(d.world_size)
                          .arg(QString::fromStdString(d.backend), ranks);
        if (const std::string threads = scaling_threads_words(r); !threads.empty()) {
            tip += QStringLiteral("\n") + tr("Threads: %1.").arg(QString::fromStdString(threads));
        }
        if (d.scaling_efficiency && *d.scaling_efficiency > 1.0) {
            tip += QStringLiteral("\n") + QString::fromStdString(scaling_above_perfect_words()) + QStringLiteral(".");
        }
        if (scaling_is_noisy(r)) {
            tip += QStringLiteral("\n") + QString::fromStdString(scaling_noisy_words(r)) + QStringLiteral(".");
        }
        return tip;
    }
    if (column == SpeedupInterval) {
        return tr("95% bootstrap interval of the speedup of this run's group against the baseline's (repeats: "
                  "median of the repeats' mean ms/step; one run: mean over its timed steps). When it contains "
                  "1.0 the difference is not significant.");
    }
    return {};
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
        case Name: return tr("Run");
        case Status: return tr("Status");
        case Implementation: return tr("Implementation");
        case MeanMs: return tr("Mean ms");
        case MedianMs: return tr("Median ms");
        case P90Ms: return tr("p90 ms");
        case Noise: return tr("Noise (CV)");
        case TokensPerS: return tr("Tokens/s");
        case Tflops: return tr("TFLOP/s");
        case Mfu: return tr("MFU");
        case PeakMemory: return tr("Peak memory");
        case FinalLoss: return tr("Final loss");
        case ValLoss: return tr("Val loss");
        case Speedup: return tr("Speedup");
        case MemoryRatio: return tr("Memory ratio");
        case Spread: return tr("Spread");
        case SpeedupInterval: return tr("Speedup 95% interval");
        case Scaling: return tr("Scaling");
        default: return {};
    }
}

}  // namespace tewb::ui
