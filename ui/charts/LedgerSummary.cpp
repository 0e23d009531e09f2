#include "ui/charts/LedgerSummary.h"

#include "core/common/TextTable.h"
#include "core/results/LedgerReport.h"

namespace tewb::ui {

namespace {

QString bytes_text(double bytes) {
    return QString::fromStdString(format_bytes(bytes > 0 ? static_cast<std::uint64_t>(bytes + 0.5) : 0));
}

}  // namespace

LedgerSummary::LedgerSummary(QWidget* parent) : QLabel(parent) {
    setObjectName(QStringLiteral("ledgerSummary"));
    setWordWrap(true);
    setTextFormat(Qt::PlainText);
    setRecords(std::vector<RunRecord>());
}

void LedgerSummary::setRecords(const std::vector<RunRecord>& records) {
    QStringList lines{tr("Launch ledger (one eager step; per layer: mean over the layers)")};
    QStringList tables;
    for (const RunRecord& r : records) {
        const QString name = QString::fromStdString(display_name(r));
        if (!r.execution.ledger) {
            lines << tr("%1: no ledger").arg(name);
            continue;
        }
        const Ledger& l = *r.execution.ledger;
        QString line = tr("%1: %2 launches per step, %3 per layer; %4 moved and %5 saved for backward per layer")
                           .arg(name)
                           .arg(l.launches_per_step)
                           .arg(QString::number(l.launches_per_layer, 'f', 1))
                           .arg(bytes_text(l.bytes_per_layer), bytes_text(l.saved_bytes_per_layer));
        if (l.unknown_launches_per_step > 0) line += tr(" (%1 launches not known, counted once per call)").arg(l.unknown_launches_per_step);
        lines << line;
        tables << tr("%1, layer 0 (%2):").arg(name, QString::fromStdString(l.source)).toHtmlEscaped() + QStringLiteral("<pre>") +
                      QString::fromStdString(ledger_layer_table(l, 0)).toHtmlEscaped() + QStringLiteral("</pre>");
    }
    setText(lines.join('\n'));
    setToolTip(tables.isEmpty() ? tr("No run has a launch ledger yet") : tables.join(QString()));
}

}  // namespace tewb::ui
