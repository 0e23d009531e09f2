#include "ui/report/ReportModelData.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <QStringList>

#include "core/common/TextTable.h"
#include "core/results/RunWords.h"
#include "ui/common/ValidationLoss.h"
#include "ui/report/ReportLayout.h"

namespace tewb::ui {

namespace {

constexpr double kParityNats = 0.02;  // the bound for FP8 against BF16 at the quick size
constexpr std::size_t kShaPrefix = 12;

std::string count(std::int64_t n) {
    return std::to_string(n);
}

// The settings that decide a run's loss curve: two runs that agree on them and differ in precision (or backend)
// show that precision's effect on the loss.
bool same_training(const RunConfig& a, const RunConfig& b) {
    return a.model == b.model && a.data == b.data && a.batch == b.batch && a.warmup == b.warmup && a.iters == b.iters &&
           a.lr == b.lr && a.seed == b.seed && a.dist.world_size() == b.dist.world_size();
}

// The validation losses of two runs at the last step both evaluated.
struct SharedStep {
    int step = 0;
    double fp8 = 0;
    double bf16 = 0;
};

std::optional<SharedStep> last_shared_evaluation(const RunRecord& fp8, const RunRecord& bf16) {
    std::map<int, double> theirs;
    for (const StepMetrics& s : bf16.steps) {
        if (s.val_loss) theirs[s.step] = *s.val_loss;
    }
    for (auto it = fp8.steps.rbegin(); it != fp8.steps.rend(); ++it) {
        if (!it->val_loss) continue;
        const auto match = theirs.find(it->step);
        if (match != theirs.end()) return SharedStep{it->step, *it->val_loss, match->second};
    }
    return std::nullopt;
}

// The BF16 run an FP8 run is judged against: the same training, with validation losses, of its own backend if
// there is one.
const RunRecord* bf16_partner(const RunRecord& fp8, const std::vector<RunRecord>& runs) {
    const RunRecord* found = nullptr;
    for (const RunRecord& r : runs) {
        if (r.config.precision != Precision::Bf16 || !same_training(r.config, fp8.config) || !has_val_loss(r)) continue;
        if (!last_shared_evaluation(fp8, r)) continue;
        if (r.config.backend == fp8.config.backend) return &r;
        if (!found) found = &r;
    }
    return found;
}

std::string difference_words(const SharedStep& at) {
    const double diff = at.fp8 - at.bf16;
    // Rounded up to the next 0.01, so "within" is never an understatement.
    const double bound = std::max(0.01, std::ceil(std::abs(diff) * 100.0 - 1e-9) / 100.0);
    if (bound <= kParityNats) return "is within " + format_fixed(bound, 2) + " of BF16's";
    return std::string(diff > 0 ? "is higher by " : "is lower by ") + format_fixed(std::abs(diff), 3) + " than BF16's";
}

}  // namespace

std::string model_words(const RunConfig& config) {
    const ModelShape& m = config.model;
    std::string text = std::string(to_string(m.arch)) + ": " + count(m.layers) + " layers, hidden " + count(m.hidden) + ", " +
                       count(m.heads) + " heads";
    if (m.arch == Arch::Llama) {
        const int kv = effective_kv_heads(m);
        text += ", ";
        text += kv == m.heads ? count(kv) + " KV heads (multi-head attention)" : count(kv) + " KV heads (grouped-query attention)";
        text += ", SwiGLU FFN ";
        text += count(ffn_hidden(m));
        text += m.ffn > 0 ? " (set)" : " (auto: 8/3 × hidden rounded up to 64)";
        text += ", RoPE base ";
        text += QString::number(m.rope_base, 'g', 12).toStdString();  // 500000, not 5e+05
        text += ", RMSNorm, no biases";
    } else {
        text += ", GELU MLP ";
        text += count(ffn_hidden(m));
        text += ", LayerNorm, learned positions";
    }
    text += "; sequence ";
    text += count(m.seq);
    text += ", vocabulary ";
    text += count(m.vocab);
    text += ", batch ";
    text += count(config.batch);
    return text;
}

std::string data_words(const RunRecord& record) {
    const DataSettings& d = record.config.data;
    if (!d.from_file()) return "synthetic tokens (seeded random streams; no validation loss)";
    const double percent = d.val_fraction * 100.0;
    const std::string held_out = format_fixed(percent, percent < 1 ? 2 : 1) + " % held out for the validation loss";
    if (!record.data_file) {
        // A run that ended before its file was read keeps only the path it was given.
        const std::size_t slash = d.path.find_last_of('/');
        return "token file " + (slash == std::string::npos ? d.path : d.path.substr(slash + 1)) + " (not read), " + held_out;
    }
    const DataFileInfo& f = *record.data_file;
    std::string text = "token file " + f.name + ", " + format_bytes(f.size_bytes) + ", SHA-256 " +
                       f.sha256.substr(0, std::min(kShaPrefix, f.sha256.size())) + "…, ";
    text += to_string(f.format);
    text += ", ";
    text += count(f.tokens);
    text += " tokens, ";
    text += held_out;
    text += " (";
    text += count(f.val_tokens);
    text += " tokens)";
    return text;
}

QString model_and_data_html(const std::vector<RunRecord>& runs) {
    // Each distinct description once, with the runs it applies to when the runs do not all share it.
    std::vector<std::pair<std::string, std::vector<std::string>>> models;
    std::vector<std::pair<std::string, std::vector<std::string>>> data;
    const auto add = [](auto& list, const std::string& words, const std::string& run) {
        auto it = std::find_if(list.begin(), list.end(), [&](const auto& entry) { return entry.first == words; });
        if (it == list.end()) {
            list.emplace_back(words, std::vector<std::string>{});
            it = list.end() - 1;
        }
        it->second.push_back(run);
    };
    for (const RunRecord& r : runs) {
        add(models, model_words(r.config), display_name(r));
        add(data, data_words(r), display_name(r));
    }
    const auto lines = [](const auto& list, const QString& what) {
        QString html;
        for (const auto& [words, names] : list) {
            html += QStringLiteral("%1 %2").arg(what, esc(words));
            if (list.size() > 1) {
                QStringList who;
                for (const std::string& n : names) who << esc(n);
                html += QStringLiteral(" <small>(%1)</small>").arg(who.join(QStringLiteral(", ")));
            }
            html += QStringLiteral("<br>");
        }
        return html;
    };
    if (runs.empty()) return {};
    return QStringLiteral("<p>%1%2</p>").arg(lines(models, QStringLiteral("<b>Model</b>")), lines(data, QStringLiteral("<b>Data</b>")));
}

std::vector<std::string> validation_sentences(const std::vector<RunRecord>& runs) {
    std::vector<std::string> sentences;
    for (const RunRecord& fp8 : runs) {
        if (fp8.config.precision != Precision::Fp8 || !has_val_loss(fp8)) continue;
        const RunRecord* bf16 = bf16_partner(fp8, runs);
        if (!bf16) continue;
        const SharedStep at = *last_shared_evaluation(fp8, *bf16);
        std::string text = "FP8's validation loss " + difference_words(at) + " (" + format_fixed(at.fp8, 4) + " vs " +
                           format_fixed(at.bf16, 4) + " at step " + count(at.step) + "; " + display_name(fp8) + " against " +
                           display_name(*bf16) + ")";
        if (fp8.execution.fp8_emulated) {
            const bool cpu = fp8.execution.device.empty() || fp8.execution.device == "cpu";
            text += emulated_validation_clause(cpu);
        }
        sentences.push_back(text + ".");
    }
    return sentences;
}

}  // namespace tewb::ui
