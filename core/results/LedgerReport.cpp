#include "core/results/LedgerReport.h"

#include <sstream>

#include "core/common/TextCheck.h"
#include "core/common/TextTable.h"

namespace tewb {

namespace {

std::string launches_text(const LedgerRow& row) {
    return std::to_string(row.launches) + (row.launches_known ? "" : "*");
}

// The op, and what its row counts when that is not the op's own kernels: "tewb::gemm (helper kernels)".
std::string op_text(const LedgerRow& row) {
    switch (row.work) {
        case LaunchWork::Kernel: return printable_text(row.op);
        case LaunchWork::Helper: return printable_text(row.op) + " (helper kernels)";
        case LaunchWork::Memset: return printable_text(row.op) + " (memsets)";
        case LaunchWork::Copy: return printable_text(row.op) + " (copies)";
    }
    return printable_text(row.op);
}

std::string mean_text(double value) {
    std::ostringstream out;
    out.precision(value == static_cast<double>(static_cast<std::int64_t>(value)) ? 0 : 1);
    out << std::fixed << value;
    return out.str();
}

std::string rows_table(const Ledger& ledger, bool (*keep)(const LedgerRow&, int), int layer) {
    std::vector<std::vector<std::string>> rows;
    for (const LedgerRow& row : ledger.rows) {
        if (!keep(row, layer)) continue;
        rows.push_back({printable_text(row.scope), op_text(row), std::to_string(row.calls), launches_text(row), format_bytes(row.bytes_read),
                        format_bytes(row.bytes_written)});
    }
    return render_text_table({"module", "op", "calls", "launches", "bytes read", "bytes written"}, rows);
}

}  // namespace

Ledger make_ledger(std::vector<LedgerRow> rows, int layers, std::vector<std::int64_t> saved_bytes_by_layer, int step,
                   std::string source) {
    Ledger ledger;
    ledger.step = step;
    ledger.source = std::move(source);
    ledger.layers = layers;
    ledger.rows = std::move(rows);
    ledger.saved_bytes_by_layer = std::move(saved_bytes_by_layer);
    std::uint64_t layer_launches = 0;
    std::uint64_t layer_bytes = 0;
    for (const LedgerRow& row : ledger.rows) {
        const std::uint64_t bytes = row.bytes_read + row.bytes_written;
        ledger.launches_per_step += row.launches;
        ledger.bytes_per_step += bytes;
        if (!row.launches_known) ledger.unknown_launches_per_step += row.launches;
        if (row.layer >= 0) {
            layer_launches += row.launches;
            layer_bytes += bytes;
        }
    }
    std::int64_t saved = 0;
    for (const std::int64_t bytes : ledger.saved_bytes_by_layer) saved += bytes;
    if (layers > 0) {
        ledger.launches_per_layer = static_cast<double>(layer_launches) / layers;
        ledger.bytes_per_layer = static_cast<double>(layer_bytes) / layers;
        ledger.saved_bytes_per_layer = static_cast<double>(saved) / layers;
    }
    return ledger;
}

std::string ledger_layer_table(const Ledger& ledger, int layer) {
    return rows_table(ledger, [](const LedgerRow& row, int l) { return row.layer == l; }, layer);
}

std::string ledger_outside_table(const Ledger& ledger) {
    return rows_table(ledger, [](const LedgerRow& row, int) { return row.layer < 0; }, -1);
}

std::vector<std::string> ledger_totals_lines(const Ledger& ledger) {
    const auto bytes = [](double value) { return format_bytes(value > 0 ? static_cast<std::uint64_t>(value + 0.5) : 0); };
    std::uint64_t by_work[4] = {0, 0, 0, 0};
    for (const LedgerRow& row : ledger.rows) by_work[static_cast<int>(row.work)] += row.launches;
    std::vector<std::string> lines;
    lines.push_back("launches: " + std::to_string(ledger.launches_per_step) + " per step (" + std::to_string(by_work[0]) +
                    " kernels, " + std::to_string(by_work[1]) + " helper kernels, " + std::to_string(by_work[2]) +
                    " memsets, " + std::to_string(by_work[3]) + " copies), " +
                    mean_text(ledger.launches_per_layer) + " per layer (mean over " + std::to_string(ledger.layers) +
                    " layers)" +
                    (ledger.unknown_launches_per_step > 0
                         ? "; " + std::to_string(ledger.unknown_launches_per_step) + " of them in rows whose count is not known (at least 1 per call counted)"
                         : std::string()));
    lines.push_back("bytes moved (read + written): " + format_bytes(ledger.bytes_per_step) + " per step, " +
                    bytes(ledger.bytes_per_layer) + " per layer");
    lines.push_back("saved for backward: " + bytes(ledger.saved_bytes_per_layer) + " per layer");
    lines.push_back("measured on " + ledger.source);
    return lines;
}

}  // namespace tewb
