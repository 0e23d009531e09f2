#include "core/common/Statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace tewb {

namespace {

double quantile_of_sorted(const std::vector<double>& sorted, double q) {
    // Nearest rank on the resampled statistics: with 2000 resamples the choice of rule moves the bound by
    // well under the interval's own Monte Carlo error.
    const double position = q * static_cast<double>(sorted.size() - 1);
    const auto index = static_cast<std::size_t>(std::llround(position));
    return sorted[std::min(index, sorted.size() - 1)];
}

std::vector<double> resample(const std::vector<double>& sample, std::mt19937_64& rng) {
    std::uniform_int_distribution<std::size_t> pick(0, sample.size() - 1);
    std::vector<double> out(sample.size());
    for (double& v : out) v = sample[pick(rng)];
    return out;
}

Interval interval_of(std::vector<double> statistics, double level) {
    std::sort(statistics.begin(), statistics.end());
    return {quantile_of_sorted(statistics, (1.0 - level) / 2.0), quantile_of_sorted(statistics, (1.0 + level) / 2.0)};
}

}  // namespace

double median_of(std::vector<double> values) {
    if (values.empty()) return 0;
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2.0;
}

double mean_of(const std::vector<double>& values) {
    if (values.empty()) return 0;
    return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

std::optional<double> coefficient_of_variation(const std::vector<double>& values) {
    if (values.size() < 2) return std::nullopt;
    const double mean = mean_of(values);
    if (!(mean > 0)) return std::nullopt;
    double squares = 0;
    for (const double v : values) squares += (v - mean) * (v - mean);
    return std::sqrt(squares / static_cast<double>(values.size() - 1)) / mean;
}

double statistic_of(Statistic statistic, const std::vector<double>& values) {
    return statistic == Statistic::Median ? median_of(values) : mean_of(values);
}

std::optional<Interval> bootstrap_interval(const std::vector<double>& sample, Statistic statistic,
                                           const BootstrapOptions& options) {
    if (sample.empty() || options.resamples < 1) return std::nullopt;
    std::mt19937_64 rng(options.seed);
    std::vector<double> statistics;
    statistics.reserve(static_cast<std::size_t>(options.resamples));
    for (int i = 0; i < options.resamples; ++i) statistics.push_back(statistic_of(statistic, resample(sample, rng)));
    return interval_of(std::move(statistics), options.level);
}

std::optional<Interval> bootstrap_ratio_interval(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                                 Statistic statistic, const BootstrapOptions& options) {
    if (baseline.empty() || candidate.empty() || options.resamples < 1) return std::nullopt;
    std::mt19937_64 rng(options.seed);
    std::vector<double> ratios;
    ratios.reserve(static_cast<std::size_t>(options.resamples));
    for (int i = 0; i < options.resamples; ++i) {
        const double b = statistic_of(statistic, resample(baseline, rng));
        const double c = statistic_of(statistic, resample(candidate, rng));
        if (!(b > 0) || !(c > 0)) return std::nullopt;
        ratios.push_back(b / c);
    }
    return interval_of(std::move(ratios), options.level);
}

}  // namespace tewb
