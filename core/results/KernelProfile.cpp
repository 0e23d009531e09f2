#include "core/results/KernelProfile.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/common/NumberText.h"
#include "core/common/TextTable.h"
#include "core/results/RecordCsv.h"

namespace tewb {

namespace {

constexpr std::size_t kNameWidth = 90;

std::vector<KernelTime> sorted_rows(std::map<std::string, KernelTime>& by_name) {
    std::vector<KernelTime> rows;
    rows.reserve(by_name.size());
    for (auto& [name, row] : by_name) rows.push_back(std::move(row));
    std::stable_sort(rows.begin(), rows.end(), [](const KernelTime& a, const KernelTime& b) { return a.total_us > b.total_us; });
    return rows;
}

void add(std::map<std::string, KernelTime>& by_name, const ProfiledEvent& e) {
    KernelTime& row = by_name[e.name];
    row.name = e.name;
    row.work = e.work;
    row.launches += 1;
    row.total_us += static_cast<double>(e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0) / 1000.0;
}

std::string fixed(double value, int decimals) { return format_fixed(value, decimals); }

std::string share_percent(double share) { return fixed(share * 100.0, 1) + "%"; }

// Kernel names from templates run to hundreds of characters: the start says which kernel it is.
std::string shortened(const std::string& name) {
    if (name.size() <= kNameWidth) return name;
    std::size_t cut = kNameWidth - 3;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    return name.substr(0, cut) + "...";
}

}  // namespace

std::vector<KernelTime> outermost_times(std::vector<ProfiledEvent> events, const std::string& wrapper_row) {
    // Per lane, by start; at equal starts the longer first, so an operator comes before the first one it calls.
    std::sort(events.begin(), events.end(), [](const ProfiledEvent& a, const ProfiledEvent& b) {
        if (a.lane != b.lane) return a.lane < b.lane;
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        return a.end_ns > b.end_ns;
    });
    std::map<std::string, KernelTime> by_name;
    struct Wrapper {
        std::uint64_t start = 0, end = 0, covered = 0;
    };
    std::optional<Wrapper> wrapper;
    const auto close_wrapper = [&] {
        if (!wrapper) return;
        const std::uint64_t length = wrapper->end > wrapper->start ? wrapper->end - wrapper->start : 0;
        KernelTime& row = by_name[wrapper_row];
        row.name = wrapper_row;
        row.launches += 1;
        row.total_us += static_cast<double>(length > wrapper->covered ? length - wrapper->covered : 0) / 1000.0;
        wrapper.reset();
    };
    bool first = true;
    std::uint64_t lane = 0;
    std::uint64_t op_until = 0;  // the end of the outermost operator counted last on this lane
    for (const ProfiledEvent& e : events) {
        if (first || e.lane != lane) {
            close_wrapper();
            first = false;
            lane = e.lane;
            op_until = 0;
        }
        if (e.start_ns < op_until) continue;  // inside an operator already counted
        if (wrapper && e.start_ns >= wrapper->end) close_wrapper();
        if (e.wrapper) {
            if (!wrapper) wrapper = Wrapper{e.start_ns, std::max(e.end_ns, e.start_ns), 0};  // nested wrappers: seen through
            continue;
        }
        add(by_name, e);
        op_until = std::max(e.end_ns, e.start_ns);
        if (wrapper) wrapper->covered += std::min(op_until, wrapper->end) - e.start_ns;
    }
    close_wrapper();
    return sorted_rows(by_name);
}

std::vector<KernelTime> every_event_times(const std::vector<ProfiledEvent>& events) {
    std::map<std::string, KernelTime> by_name;
    for (const ProfiledEvent& e : events) add(by_name, e);
    return sorted_rows(by_name);
}

std::vector<OpLaunches> launches_by_op(std::vector<ProfiledOp> ops, const std::vector<ProfiledEvent>& device_events) {
    std::sort(ops.begin(), ops.end(), [](const ProfiledOp& a, const ProfiledOp& b) {
        if (a.thread != b.thread) return a.thread < b.thread;
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        return a.end_ns > b.end_ns;
    });
    // Each operator's correlation id -> the outermost operator around it (itself when none is).
    std::unordered_map<std::uint64_t, std::string> outermost;
    const ProfiledOp* outer = nullptr;
    for (const ProfiledOp& op : ops) {
        if (op.wrapper) continue;
        if (outer == nullptr || op.thread != outer->thread || op.start_ns >= outer->end_ns) outer = &op;
        if (op.correlation != 0) outermost.emplace(op.correlation, outer->name);
    }
    std::map<std::string, OpLaunches> by_op;
    for (const ProfiledEvent& e : device_events) {
        const auto found = e.correlation != 0 ? outermost.find(e.correlation) : outermost.end();
        const std::string op = found != outermost.end() ? found->second : std::string();
        OpLaunches& row = by_op[op];
        row.op = op;
        switch (e.work) {
            case LaunchWork::Memset: row.memsets += 1; break;
            case LaunchWork::Copy: row.copies += 1; break;
            case LaunchWork::Kernel:
            case LaunchWork::Helper: row.kernels += 1; break;
        }
    }
    std::vector<OpLaunches> out;
    for (auto& [name, row] : by_op) out.push_back(std::move(row));
    std::stable_sort(out.begin(), out.end(), [](const OpLaunches& a, const OpLaunches& b) { return a.total() > b.total(); });
    return out;
}

std::string top_kernels_table(const KernelProfile& profile, std::size_t limit) {
    std::vector<std::vector<std::string>> rows;
    double rest_us = 0;
    std::size_t rest = 0;
    for (std::size_t i = 0; i < profile.kernels.size(); ++i) {
        const KernelTime& k = profile.kernels[i];
        if (i >= limit) {
            rest_us += k.total_us;
            ++rest;
            continue;
        }
        rows.push_back({shortened(k.name), std::to_string(k.launches), fixed(k.total_us, 1), fixed(k.mean_us(), 1),
                        share_percent(profile.share_of_step(k))});
    }
    std::string out = render_text_table({"kernel", "launches", "total µs", "mean µs", "share"}, rows);
    if (rest > 0) {
        out += std::to_string(rest) + " more: " + fixed(rest_us, 1) + " µs (" +
               share_percent(profile.step_ms > 0 ? rest_us / (profile.step_ms * 1000.0) : 0.0) + ")\n";
    }
    const double total = profile.total_us();
    out += "total: " + fixed(total, 1) + " µs in " + std::to_string(profile.kernels.size()) + " kernels, " +
           share_percent(profile.step_ms > 0 ? total / (profile.step_ms * 1000.0) : 0.0) + " of the profiled step's " +
           fixed(profile.step_ms, 3) + " ms\n";
    return out;
}

std::vector<std::string> top_kernels_lines(const KernelProfile& profile, std::size_t limit) {
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < profile.kernels.size() && i < limit; ++i) {
        const KernelTime& k = profile.kernels[i];
        lines.push_back(shortened(k.name) + ": " + fixed(k.total_us, 1) + " µs in " + std::to_string(k.launches) +
                        (k.launches == 1 ? " launch (" : " launches (") + share_percent(profile.share_of_step(k)) + " of the step)");
    }
    return lines;
}

std::string kernel_profile_csv_text(const KernelProfile& profile) {
    std::string out = "kernel,launches,total_us,mean_us,share_of_step\n";
    for (const KernelTime& k : profile.kernels) {
        out += csv_field(k.name) + "," + std::to_string(k.launches) + "," + shortest_text(k.total_us) + "," +
               shortest_text(k.mean_us()) + "," + shortest_text(profile.share_of_step(k)) + "\n";
    }
    return out;
}

}  // namespace tewb
