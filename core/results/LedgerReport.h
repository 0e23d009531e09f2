#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/results/RunRecord.h"

namespace tewb {

// A ledger from its rows, with the totals per layer (mean over `layers`) and per step computed from them.
Ledger make_ledger(std::vector<LedgerRow> rows, int layers, std::vector<std::int64_t> saved_bytes_by_layer, int step,
                   std::string source);

// One layer's rows as a table (module, op, calls, launches, bytes read, bytes written); a launch count that is not
// known is marked "*".
std::string ledger_layer_table(const Ledger& ledger, int layer);
// The rows outside the layers (embedding, head, loss, optimizer, FP8 updates, other) as the same table.
std::string ledger_outside_table(const Ledger& ledger);
// "launches 123 per step (4 not known), 12.5 per layer; bytes ...; saved for backward ... per layer", in lines.
std::vector<std::string> ledger_totals_lines(const Ledger& ledger);

}  // namespace tewb
