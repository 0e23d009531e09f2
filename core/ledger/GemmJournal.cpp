#include "core/ledger/GemmJournal.h"

#include <cstdint>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/common/Error.h"
#include "tewb_kernels/gemm_types.h"

namespace tewb {

namespace {

constexpr const char* kSchema = "tewb-gemm-journal/1";

struct Recorder {
    std::mutex mutex;
    bool open = false;
    std::vector<GemmJournalEntry> entries;
    std::map<std::string, std::size_t> index;  // key -> position in entries
};

Recorder& recorder() {
    static Recorder instance;
    return instance;
}

const std::set<std::string>& known_pointers() {
    static const std::set<std::string> names{"a", "b", "d", "c", "bias", "aux", "bias_grad",
                                             "a.scale_inv", "b.scale_inv", "d_scale", "d_amax"};
    return names;
}

// Reads one entry, naming the field of the first problem.
class EntryReader {
public:
    EntryReader(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw DataError(where_ + "." + field + ": " + what);
    }
    std::string text(const char* field, std::initializer_list<const char*> allowed) const {
        if (!j_.contains(field) || !j_.at(field).is_string()) fail(field, "expected a string");
        const std::string value = j_.at(field).get<std::string>();
        if (allowed.size() == 0) return value;
        std::string list;
        for (const char* a : allowed) {
            if (value == a) return value;
            list += std::string(list.empty() ? "" : ", ") + (*a ? a : "\"\"");
        }
        fail(field, "'" + value + "' is not one of " + list);
    }
    std::uint64_t count(const char* field, std::uint64_t low) const {
        if (!j_.contains(field) || !j_.at(field).is_number_unsigned()) fail(field, "expected a whole number of 0 or more");
        const std::uint64_t value = j_.at(field).get<std::uint64_t>();
        if (value < low || value > INT32_MAX) fail(field, std::to_string(value) + " out of range; allowed: " + std::to_string(low) + " to 2147483647");
        return value;
    }
    bool flag(const char* field) const {
        if (!j_.contains(field) || !j_.at(field).is_boolean()) fail(field, "expected true or false");
        return j_.at(field).get<bool>();
    }

private:
    const nlohmann::json& j_;
    std::string where_;
};

}  // namespace

std::string GemmJournalEntry::key() const {
    std::string text = op + "|" + std::to_string(m) + "|" + std::to_string(n) + "|" + std::to_string(k) + "|" + a_type + "|" +
                    b_type + "|" + d_type + "|" + bias_type + "|" + (a_transposed ? "T" : "N") + (b_transposed ? "T" : "N") +
                    "|" + a_scales + "|" + b_scales + "|" + epilogue + "|" + accumulation + "|" + std::to_string(aux_ld);
    for (const auto& [name, bytes] : alignment) text += "|" + name + "=" + std::to_string(bytes);
    return text;
}

void start_gemm_journal() {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.open = true;
    r.entries.clear();
    r.index.clear();
}

bool gemm_journal_open() {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    return r.open;
}

void note_gemm(const GemmJournalEntry& entry) {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.open) return;
    const std::string key = entry.key();
    const auto found = r.index.find(key);
    if (found != r.index.end()) {
        ++r.entries[found->second].calls;
        return;
    }
    r.index.emplace(key, r.entries.size());
    r.entries.push_back(entry);
    r.entries.back().calls = 1;
}

std::vector<GemmJournalEntry> stop_gemm_journal() {
    Recorder& r = recorder();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.open = false;
    r.index.clear();
    return std::move(r.entries);
}

std::string gemm_journal_json(const GemmJournal& journal) {
    nlohmann::json gemms = nlohmann::json::array();
    for (const GemmJournalEntry& e : journal.gemms) {
        gemms.push_back({{"op", e.op},
                         {"m", e.m},
                         {"n", e.n},
                         {"k", e.k},
                         {"a_type", e.a_type},
                         {"b_type", e.b_type},
                         {"d_type", e.d_type},
                         {"bias_type", e.bias_type},
                         {"a_transposed", e.a_transposed},
                         {"b_transposed", e.b_transposed},
                         {"a_scales", e.a_scales},
                         {"b_scales", e.b_scales},
                         {"epilogue", e.epilogue},
                         {"accumulation", e.accumulation},
                         {"aux_ld", e.aux_ld},
                         {"alignment", e.alignment},
                         {"calls", e.calls}});
    }
    const nlohmann::json doc{{"schema", kSchema}, {"written_by", journal.written_by}, {"run", journal.run}, {"gemms", gemms}};
    return doc.dump(1) + "\n";
}

GemmJournal read_gemm_journal(const std::string& text, const std::string& where) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw DataError(where + ": not valid JSON (" + e.what() + ")");
    }
    if (!doc.is_object() || !doc.contains("schema") || doc.at("schema") != kSchema) {
        throw DataError(where + ": not a GEMM journal (no \"schema\": \"" + kSchema + "\")");
    }
    GemmJournal journal;
    for (const char* field : {"written_by", "run"}) {
        if (!doc.contains(field) || !doc.at(field).is_string()) throw DataError(where + "." + field + ": expected a string");
    }
    journal.written_by = doc.at("written_by").get<std::string>();
    journal.run = doc.at("run").get<std::string>();
    if (!doc.contains("gemms") || !doc.at("gemms").is_array()) throw DataError(where + ".gemms: expected an array");
    const nlohmann::json& gemms = doc.at("gemms");
    for (std::size_t i = 0; i < gemms.size(); ++i) {
        const std::string at = where + ".gemms[" + std::to_string(i) + "]";
        if (!gemms[i].is_object()) throw DataError(at + ": expected an object");
        const EntryReader r(gemms[i], at);
        GemmJournalEntry e;
        e.op = r.text("op", {});
        e.m = r.count("m", 0);
        e.n = r.count("n", 0);
        e.k = r.count("k", 1);
        const auto types = {kernels::to_string(kernels::DType::Float32).data(), kernels::to_string(kernels::DType::BFloat16).data(),
                            kernels::to_string(kernels::DType::Float8E4M3).data(), kernels::to_string(kernels::DType::Float8E5M2).data()};
        e.a_type = r.text("a_type", types);
        e.b_type = r.text("b_type", types);
        e.d_type = r.text("d_type", types);
        e.bias_type = r.text("bias_type", types);
        e.a_transposed = r.flag("a_transposed");
        e.b_transposed = r.flag("b_transposed");
        e.a_scales = r.text("a_scales", {"", "tensor", "1x128", "128x128"});
        e.b_scales = r.text("b_scales", {"", "tensor", "1x128", "128x128"});
        e.epilogue = r.text("epilogue", {"none", "BIAS", "GELU_AUX_BIAS", "DGELU_BGRAD", "BGRADB"});
        e.accumulation = r.text("accumulation", {"fast", "split"});
        e.aux_ld = r.count("aux_ld", 0);
        e.calls = r.count("calls", 1);
        const nlohmann::json& alignment = gemms[i].contains("alignment") ? gemms[i].at("alignment") : nlohmann::json();
        if (!alignment.is_object()) r.fail("alignment", "expected an object of pointer names and byte counts");
        for (const auto& [name, value] : alignment.items()) {
            if (known_pointers().count(name) == 0) r.fail("alignment." + name, "not a pointer of the GEMM");
            if (!value.is_number_unsigned()) r.fail("alignment." + name, "expected a power of two");
            const std::uint64_t bytes = value.get<std::uint64_t>();
            if (bytes == 0 || bytes > kJournalAlignment || (bytes & (bytes - 1)) != 0) {
                r.fail("alignment." + name, std::to_string(bytes) + ": expected a power of two from 1 to " +
                                                std::to_string(kJournalAlignment));
            }
            e.alignment[name] = static_cast<std::uint32_t>(bytes);
        }
        for (const char* required : {"a", "b", "d"}) {
            if (e.alignment.count(required) == 0) r.fail(std::string("alignment.") + required, "missing (every GEMM passes a, b and d)");
        }
        journal.gemms.push_back(std::move(e));
    }
    return journal;
}

}  // namespace tewb
