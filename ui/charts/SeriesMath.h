#pragma once

#include <vector>

#include <QPointF>

namespace tewb::ui {

// At most two points per pixel column: each of `columns` equal-width buckets over [x_min, x_max] keeps
// its lowest and highest point, in x order, so spikes survive. Points must be sorted by x; points outside
// the range are dropped, except the nearest one on each side so lines run to the plot's edge. Input with
// no more than 2 * columns points in range comes back unchanged.
std::vector<QPointF> decimate_min_max(const std::vector<QPointF>& points, double x_min, double x_max, int columns);

// Exponential moving average with weight `smoothing` in [0, 1) on the previous average, debiased the way
// TensorBoard does it (divided by 1 - smoothing^n) so the first points are not pulled towards zero.
// Non-finite values are carried through unchanged and do not enter the average.
std::vector<QPointF> smooth_debiased_ema(const std::vector<QPointF>& points, double smoothing);

// For a logarithmic y axis: values <= 0 (and non-finite ones) cannot be drawn, so they move to `floor`,
// and the count of moved values is returned. floor_for_log picks a floor a decade under the smallest
// positive value (1 when there is none).
int clamp_for_log(std::vector<QPointF>& points, double floor);
double floor_for_log(const std::vector<std::vector<QPointF>>& traces);

// A range that contains [lo, hi] with round ends (1, 2, 2.5 or 5 times a power of ten per tick over
// about `ticks` ticks), so axes move only when the data leaves the rounded range.
struct NiceRange {
    double lo = 0;
    double hi = 1;
    int ticks = 5;
    friend bool operator==(const NiceRange&, const NiceRange&) = default;
};
NiceRange nice_range(double lo, double hi, int ticks = 5);
// Decades around [lo, hi] (both > 0) for a logarithmic axis.
NiceRange nice_log_range(double lo, double hi);

}  // namespace tewb::ui
