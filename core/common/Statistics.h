#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace tewb {

// A closed interval [lo, hi].
struct Interval {
    double lo = 0;
    double hi = 0;
    bool contains(double value) const { return lo <= value && value <= hi; }
    friend bool operator==(const Interval&, const Interval&) = default;
};

// The statistic a bootstrap resamples: the median or the mean of a sample.
enum class Statistic { Median, Mean };

double median_of(std::vector<double> values);  // empty: 0
double mean_of(const std::vector<double>& values);  // empty: 0
double statistic_of(Statistic statistic, const std::vector<double>& values);
// The coefficient of variation: the sample standard deviation (n - 1) over the mean, as pyperf reports a
// benchmark's spread. Nothing for fewer than 2 values or a mean that is not positive.
std::optional<double> coefficient_of_variation(const std::vector<double>& values);

// Percentile bootstrap: `resamples` resamples with replacement, each of the sample's size, their statistic
// sorted, the interval between the (1-level)/2 and (1+level)/2 quantiles (nearest rank). Deterministic for
// a given seed, so a report printed twice says the same thing. Nothing for an empty sample.
struct BootstrapOptions {
    int resamples = 2000;
    double level = 0.95;
    std::uint64_t seed = 0x7e3b'2026'1201ULL;
};
std::optional<Interval> bootstrap_interval(const std::vector<double>& sample, Statistic statistic,
                                           const BootstrapOptions& options = {});

// Interval of statistic(baseline) / statistic(candidate), the two samples resampled independently: how
// much faster the candidate is when both are times. Nothing when either sample is empty or a resample's
// statistic is not positive.
std::optional<Interval> bootstrap_ratio_interval(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                                 Statistic statistic, const BootstrapOptions& options = {});

}  // namespace tewb
