#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tewb {

// What the rest of the machine did while a run was timed, read from Linux's /proc. The parsers take a
// file's contents, so tests feed fixed texts; each answers a value or, instead, why there is none.

template <typename T>
struct ProcReading {
    std::optional<T> value;
    std::string problem;  // set when value is empty: what was wrong, in words
};

// /proc/stat's first line, "cpu  user nice system idle iowait irq softirq steal [guest guest_nice]": the jiffies
// all CPUs together spent busy, user + nice + system + irq + softirq + steal (guest time is already inside
// user and nice; idle and iowait are not busy).
ProcReading<std::uint64_t> parse_busy_jiffies(std::string_view proc_stat);
// /proc/self/stat: this process's utime + stime (fields 14 and 15), every thread; the command name in
// parentheses may hold spaces and parentheses, so fields are counted after its last ')'.
ProcReading<std::uint64_t> parse_own_jiffies(std::string_view proc_self_stat);
// /proc/loadavg: the first field, the 1-minute load average.
ProcReading<double> parse_load_average(std::string_view proc_loadavg);

// Busy jiffies of the whole machine and of this process at one moment.
struct CpuSnapshot {
    std::uint64_t busy_jiffies = 0;
    std::uint64_t own_jiffies = 0;
};

// Shortest timed phase whose other processes' CPU time is worth stating: /proc counts in ticks of 10 ms per
// CPU, so over a shorter phase the ticks' rounding alone could look like a busy core.
inline constexpr double kMinLoadWindowSeconds = 0.5;

// Cores' worth of CPU time other processes used between two snapshots:
// ((busy_end - busy_start) - (own_end - own_start) - `excluded_jiffies`) / ticks per second / wall seconds,
// never below 0. `excluded_jiffies`: CPU time of processes that belong to the measurement (a job's other
// ranks). Nothing, with the reason, for a window under kMinLoadWindowSeconds, counters that went backwards
// or a tick rate that is not positive.
ProcReading<double> others_cpu_cores(const CpuSnapshot& start, const CpuSnapshot& end, double wall_seconds, long ticks_per_second,
                                     std::uint64_t excluded_jiffies = 0);

// The live machine: /proc/stat and /proc/self/stat now; /proc/loadavg now; CPU ticks per second
// (sysconf(_SC_CLK_TCK)); cores online. Where /proc cannot be read, the reading says so.
ProcReading<CpuSnapshot> read_cpu_snapshot();
ProcReading<double> read_load_average();
long clock_ticks_per_second();
int online_cores();

}  // namespace tewb
