#include "core/results/TensorBoardEvents.h"

#include <array>
#include <bit>
#include <cmath>
#include <ctime>
#include <set>

#include "core/common/Error.h"
#include "core/results/AtomicFile.h"

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
    const std::string folder = folder_word(display_name(run)) + "-" + folder_word(run.id.substr(0, 8));
    const long long start = static_cast<long long>(start_seconds(run));
    return dir / folder / ("events.out.tfevents." + std::to_string(start) + ".te-workbench");
}

std::vector<std::filesystem::path> write_tensorboard(const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
                                                     const std::optional<std::filesystem::path>& store) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (fs::exists(status) && !fs::is_directory(status)) {
        throw ConfigError("--tensorboard " + dir.string() + ": exists and is not a folder; give a folder (made if missing)");
    }
    std::vector<OutputRequest> outputs;
    std::set<fs::path> folders;
    for (const RunRecord& run : runs) {
        const fs::path file = tensorboard_event_path(run, dir);
        if (!folders.insert(file.parent_path()).second) {
            throw ConfigError("--tensorboard: two runs would share the folder " + file.parent_path().string() +
                              " (the same run twice?); export each run once");
        }
        outputs.push_back({"--tensorboard", file});
    }
    // The folders first (check_output_path wants the file's folder to exist); the ones made here go again when a
    // check refuses, so a refused export leaves nothing behind.
    std::vector<fs::path> made;
    const auto make = [&made](const fs::path& folder) {
        std::error_code error;
        if (fs::is_directory(folder, error)) return;
        if (!fs::create_directories(folder, error) || error) {
            throw ConfigError("--tensorboard " + folder.string() + ": cannot make this folder (" + error.message() + ")");
        }
        made.push_back(folder);
    };
    try {
        make(dir);
        for (const fs::path& folder : folders) make(folder);
        check_outputs(outputs, store);
    } catch (...) {
        for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
        throw;
    }
    std::vector<fs::path> written;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        write_file_atomically(outputs[i].path, tensorboard_events(runs[i]));
        written.push_back(outputs[i].path);
    }
    return written;
}

}  // namespace tewb
