#include "core/device/MachineLoad.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "core/common/TextTable.h"

namespace tewb {

namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        const std::size_t begin = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > begin) out.push_back(line.substr(begin, i - begin));
    }
    return out;
}

std::optional<std::uint64_t> whole_number(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::string_view first_line(std::string_view text) {
    return text.substr(0, text.find('\n'));
}

// A short quote of malformed text for the message: its first line, at most 60 characters.
std::string quote(std::string_view text) {
    std::string line(first_line(text));
    if (line.size() > 60) line = line.substr(0, 60) + "...";
    return "\"" + line + "\"";
}

template <typename T>
ProcReading<T> problem(std::string text) {
    return ProcReading<T>{std::nullopt, std::move(text)};
}

std::optional<std::string> read_text(const char* path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

ProcReading<std::uint64_t> parse_busy_jiffies(std::string_view proc_stat) {
    const std::string_view line = first_line(proc_stat);
    const std::vector<std::string_view> f = fields_of(line);
    if (f.empty() || f[0] != "cpu")
        return problem<std::uint64_t>("/proc/stat does not begin with the \"cpu\" line: " + quote(proc_stat));
    // cpu user nice system idle iowait irq softirq steal: 8 numbers at least (steal since Linux 2.6.11).
    if (f.size() < 9) return problem<std::uint64_t>("/proc/stat's cpu line has fewer than 8 counters: " + quote(proc_stat));
    std::uint64_t busy = 0;
    for (std::size_t i = 1; i <= 8; ++i) {
        const std::optional<std::uint64_t> v = whole_number(f[i]);
        if (!v)
            return problem<std::uint64_t>("/proc/stat's cpu line has a counter that is not a whole number: " + quote(proc_stat));
        if (i != 4 && i != 5) busy += *v;  // not idle, not iowait
    }
    return {busy, {}};
}

ProcReading<std::uint64_t> parse_own_jiffies(std::string_view proc_self_stat) {
    const std::size_t close = proc_self_stat.rfind(')');
    if (close == std::string_view::npos) {
        return problem<std::uint64_t>("/proc/self/stat has no \"(command)\" field: " + quote(proc_self_stat));
    }
    // After "pid (comm)": field 3 (state) is the first; utime and stime are fields 14 and 15.
    const std::vector<std::string_view> f = fields_of(first_line(proc_self_stat.substr(close + 1)));
    if (f.size() < 13)
        return problem<std::uint64_t>("/proc/self/stat ends before its utime and stime fields: " + quote(proc_self_stat));
    const std::optional<std::uint64_t> utime = whole_number(f[11]);
    const std::optional<std::uint64_t> stime = whole_number(f[12]);
    if (!utime || !stime)
        return problem<std::uint64_t>("/proc/self/stat's utime or stime is not a whole number: " + quote(proc_self_stat));
    return {*utime + *stime, {}};
}

ProcReading<double> parse_load_average(std::string_view proc_loadavg) {
    const std::vector<std::string_view> f = fields_of(first_line(proc_loadavg));
    if (f.empty()) return problem<double>("/proc/loadavg is empty");
    double value = 0;
    const auto [end, error] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), value);
    if (error != std::errc() || end != f[0].data() + f[0].size() || !std::isfinite(value) || value < 0) {
        return problem<double>("/proc/loadavg's first field is not a load average: " + quote(proc_loadavg));
    }
    return {value, {}};
}

ProcReading<double> others_cpu_cores(const CpuSnapshot& start, const CpuSnapshot& end, double wall_seconds, long ticks_per_second,
                                     std::uint64_t excluded_jiffies) {
    if (!(wall_seconds >= kMinLoadWindowSeconds)) {
        return problem<double>("the timed steps took " + format_fixed(wall_seconds, 2) + " s, too short to measure other " +
                               "processes' CPU time from /proc's 10 ms ticks (needs " + format_fixed(kMinLoadWindowSeconds, 1) +
                               " s)");
    }
    if (ticks_per_second <= 0) return problem<double>("the CPU clock tick rate is unknown");
    if (end.busy_jiffies < start.busy_jiffies || end.own_jiffies < start.own_jiffies) {
        return problem<double>("/proc's CPU counters went backwards during the timed steps");
    }
    const double busy = static_cast<double>(end.busy_jiffies - start.busy_jiffies);
    const double own = static_cast<double>(end.own_jiffies - start.own_jiffies) + static_cast<double>(excluded_jiffies);
    const double others = std::max(0.0, busy - own);
    return {others / static_cast<double>(ticks_per_second) / wall_seconds, {}};
}

ProcReading<CpuSnapshot> read_cpu_snapshot() {
    const std::optional<std::string> stat = read_text("/proc/stat");
    if (!stat) return problem<CpuSnapshot>("/proc/stat cannot be read (not Linux, or /proc not mounted)");
    const std::optional<std::string> self = read_text("/proc/self/stat");
    if (!self) return problem<CpuSnapshot>("/proc/self/stat cannot be read (not Linux, or /proc not mounted)");
    const ProcReading<std::uint64_t> busy = parse_busy_jiffies(*stat);
    if (!busy.value) return problem<CpuSnapshot>(busy.problem);
    const ProcReading<std::uint64_t> own = parse_own_jiffies(*self);
    if (!own.value) return problem<CpuSnapshot>(own.problem);
    return {CpuSnapshot{*busy.value, *own.value}, {}};
}

ProcReading<double> read_load_average() {
    const std::optional<std::string> text = read_text("/proc/loadavg");
    if (!text) return problem<double>("/proc/loadavg cannot be read (not Linux, or /proc not mounted)");
    return parse_load_average(*text);
}

long clock_ticks_per_second() {
    return sysconf(_SC_CLK_TCK);
}

int online_cores() {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 0;
}

}  // namespace tewb
