#pragma once

#include <vector>

#include <QPointF>
#include <QRectF>
#include <QSizeF>

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

// How many ticks an axis of `pixels` length has room for, at least `pixels_per_tick` apart, between 3 and
// `most`: axis numbers of a small chart do not overlap.
int ticks_for_length(double pixels, double pixels_per_tick, int most = 6);

// The round range for an axis with room for `most` ticks that wastes the least of the axis: of the ranges
// nice_range gives for 3 to most + 1 ticks (at most most + 1 ticks drawn), the narrowest, the one with more
// ticks among equals (1..60 with room for 3 ticks is 0..60 in steps of 20, not 0..100 in steps of 50).
NiceRange fitted_range(double lo, double hi, int most);

// Where a hover label of `size` goes for a pointer at `anchor`: right of and below it by `gap`, flipped to
// the left of (or above) the pointer when it would leave `area`, and clamped into `area` as far as it fits.
QPointF place_inside(const QRectF& area, const QSizeF& size, const QPointF& anchor, qreal gap = 12);

}  // namespace tewb::ui
