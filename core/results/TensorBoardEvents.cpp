#include "core/results/TensorBoardEvents.h"

#include <array>
#include <bit>
#include <cmath>
#include <ctime>
#include <map>

#include "core/common/Error.h"
#include "core/common/TextCheck.h"

namespace tewb {

namespace {

constexpr std::uint32_t kCastagnoliReflected = 0x82F63B78u;
constexpr std::uint32_t kCrcMaskDelta = 0xa282ead8u;

constexpr std::array<std::uint32_t, 256> crc32c_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
        table[i] = c;
    }
    return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = crc32c_table();

void put_fixed(std::string& out, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

void put_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80u) {
        out.push_back(static_cast<char>((value & 0x7fu) | 0x80u));
        value >>= 7;
    }
    out.push_back(static_cast<char>(value));
}

// Protocol buffer fields: the key is (field number << 3) | wire type.
void put_double_field(std::string& out, int field, double value) {
    put_varint(out, static_cast<std::uint64_t>(field) << 3 | 1u);
    put_fixed(out, std::bit_cast<std::uint64_t>(value), 8);
}
void put_float_field(std::string& out, int field, float value) {
    put_varint(out, static_cast<std::uint64_t>(field) << 3 | 5u);
    put_fixed(out, std::bit_cast<std::uint32_t>(value), 4);
}
void put_varint_field(std::string& out, int field, std::uint64_t value) {
    put_varint(out, static_cast<std::uint64_t>(field) << 3);
    put_varint(out, value);
}
void put_bytes_field(std::string& out, int field, std::string_view bytes) {
    put_varint(out, static_cast<std::uint64_t>(field) << 3 | 2u);
    put_varint(out, bytes.size());
    out.append(bytes);
}

// The run's start in seconds since the epoch, from its created_at ("2026-12-05T21:00:00Z"); 0 when it does not read.
double start_seconds(const RunRecord& run) {
    std::tm utc{};
    const char* end = strptime(run.created_at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (!end || *end != '\0') return 0;
    return static_cast<double>(timegm(&utc));
}

// A folder name from free text: letters, digits and " ._-()" kept, anything else one '_', at most 80 bytes.
std::string folder_word(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' ||
                          c == '.' || c == '_' || c == '-' || c == '(' || c == ')';
        if (keep) {
            out.push_back(c);
        } else if (out.empty() || out.back() != '_') {
            out.push_back('_');
        }
        if (out.size() >= 80) break;
    }
    while (!out.empty() && (out.front() == '.' || out.front() == ' ')) out.erase(out.begin());
    while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
    return out.empty() ? std::string("run") : out;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
    std::uint32_t crc = 0xffffffffu;
    for (const char c : bytes) crc = kCrcTable[(crc ^ static_cast<unsigned char>(c)) & 0xffu] ^ (crc >> 8);
    return crc ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(std::string_view bytes) {
    const std::uint32_t crc = crc32c(bytes);
    return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

std::string tfrecord(std::string_view payload) {
    std::string length;
    put_fixed(length, payload.size(), 8);
    std::string out = length;
    put_fixed(out, masked_crc32c(length), 4);
    out.append(payload);
    put_fixed(out, masked_crc32c(payload), 4);
    return out;
}

std::string file_version_event(double wall_time) {
    std::string event;
    put_double_field(event, 1, wall_time);
    put_bytes_field(event, 3, "brain.Event:2");
    return event;
}

std::string scalars_event(double wall_time, std::int64_t step, const std::vector<TensorBoardScalar>& scalars) {
    std::string summary;
    for (const TensorBoardScalar& s : scalars) {
        std::string value;
        put_bytes_field(value, 1, s.tag);
        put_float_field(value, 2, s.value);
        put_bytes_field(summary, 1, value);
    }
    std::string event;
    put_double_field(event, 1, wall_time);
    put_varint_field(event, 2, static_cast<std::uint64_t>(step));
    put_bytes_field(event, 5, summary);
    return event;
}

std::vector<TensorBoardScalar> step_scalars(const RunRecord& run, const StepMetrics& step) {
    std::vector<TensorBoardScalar> out;
    const auto add = [&out](std::string tag, double value) {
        if (std::isfinite(value)) out.push_back({std::move(tag), static_cast<float>(value)});
    };
    add("loss", step.loss);
    if (step.val_loss) add("val_loss", *step.val_loss);
    add("step_ms", step.step_ms);
    if (step.tokens_per_s > 0) add("tokens_per_s", step.tokens_per_s);
    if (step.mem_bytes > 0) add("peak_memory_mib", static_cast<double>(step.mem_bytes) / (1024.0 * 1024.0));
    for (std::size_t i = 0; i < step.fp8.size() && i < run.fp8_slots.size(); ++i) {
        const Fp8SlotInfo& slot = run.fp8_slots[i];
        const std::string where = slot.module + "/" + std::string(to_string(slot.role));
        add("fp8_amax/" + where, step.fp8[i].amax);
        add("fp8_scale/" + where, step.fp8[i].scale);
    }
    return out;
}

std::string tensorboard_events(const RunRecord& run) {
    const double start = start_seconds(run);
    std::string out = tfrecord(file_version_event(start));
    for (const StepMetrics& step : run.steps) {
        out += tfrecord(scalars_event(start + step.elapsed_ms / 1000.0, step.step, step_scalars(run, step)));
    }
    return out;
}

std::filesystem::path tensorboard_event_path(const RunRecord& run, const std::filesystem::path& dir) {
    const std::string folder = folder_word(display_name(run)) + "-" + folder_word(run.id);
    const long long start = static_cast<long long>(start_seconds(run));
    return dir / folder / ("events.out.tfevents." + std::to_string(start) + ".te-workbench");
}

TensorBoardFiles prepare_tensorboard(const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
                                     const std::string& label, const std::vector<OutputRequest>& others,
                                     const std::optional<std::filesystem::path>& store) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (fs::exists(status) && !fs::is_directory(status)) {
        throw ConfigError(label + " " + dir.string() + ": exists and is not a folder; give a folder (made if missing)");
    }
    TensorBoardFiles planned;
    std::map<fs::path, const RunRecord*> folders;
    for (const RunRecord& run : runs) {
        const fs::path file = tensorboard_event_path(run, dir);
        const auto [at, fresh] = folders.emplace(file.parent_path(), &run);
        if (!fresh) {
            throw ConfigError(label + ": runs '" + printable_text(at->second->config.name) + "' (id " + at->second->id +
                              ") and '" + printable_text(run.config.name) + "' (id " + run.id + ") would share the folder " +
                              file.parent_path().string() + " (the same run twice?); export each run once");
        }
        planned.files.push_back({label, file});
    }
    // Every folder that does not exist yet, outermost first (check_output_path wants a file's folder to exist); the
    // ones made here go again when a check refuses.
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
        missing.insert(missing.begin(), p);
        if (p == p.parent_path()) break;
    }
    for (const auto& [folder, run] : folders) {
        if (!fs::exists(fs::symlink_status(folder, ec))) missing.push_back(folder);
    }
    std::vector<fs::path> made;
    try {
        for (const fs::path& folder : missing) {
            std::error_code error;
            if (!fs::create_directory(folder, error) && error) {
                throw ConfigError(label + " " + folder.string() + ": cannot make this folder (" + error.message() + ")");
            }
            made.push_back(folder);
        }
        std::vector<OutputRequest> all = others;
        all.insert(all.end(), planned.files.begin(), planned.files.end());
        check_outputs(all, store);
    } catch (...) {
        for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
        throw;
    }
    return planned;
}

std::vector<std::filesystem::path> write_tensorboard(const std::vector<RunRecord>& runs, const TensorBoardFiles& files) {
    std::vector<std::filesystem::path> written;
    for (std::size_t i = 0; i < runs.size() && i < files.files.size(); ++i) {
        write_file_atomically(files.files[i].path, tensorboard_events(runs[i]));
        written.push_back(files.files[i].path);
    }
    return written;
}

std::vector<std::filesystem::path> write_tensorboard(const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
                                                     const std::string& label,
                                                     const std::optional<std::filesystem::path>& store) {
    return write_tensorboard(runs, prepare_tensorboard(runs, dir, label, {}, store));
}

}  // namespace tewb
