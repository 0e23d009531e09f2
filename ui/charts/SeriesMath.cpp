#include "ui/charts/SeriesMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tewb::ui {

std::vector<QPointF> decimate_min_max(const std::vector<QPointF>& points, double x_min, double x_max, int columns) {
    if (points.empty() || columns < 1 || !(x_max > x_min)) return points;
    const auto first = std::lower_bound(points.begin(), points.end(), x_min,
                                        [](const QPointF& p, double x) { return p.x() < x; });
    const auto last = std::upper_bound(points.begin(), points.end(), x_max,
                                       [](double x, const QPointF& p) { return x < p.x(); });
    std::vector<QPointF> out;
    if (first != points.begin()) out.push_back(*(first - 1));
    const auto inside = last - first;
    if (inside <= 2 * static_cast<std::ptrdiff_t>(columns)) {
        out.insert(out.end(), first, last);
    } else {
        const double width = (x_max - x_min) / columns;
        auto it = first;
        while (it != last) {
            const auto column = static_cast<long long>(std::min<double>(columns - 1, std::floor((it->x() - x_min) / width)));
            auto lo = it;
            auto hi = it;
            auto end = it;
            while (end != last &&
                   static_cast<long long>(std::min<double>(columns - 1, std::floor((end->x() - x_min) / width))) == column) {
                if (end->y() < lo->y() || std::isnan(lo->y())) lo = end;
                if (end->y() > hi->y() || std::isnan(hi->y())) hi = end;
                ++end;
            }
            if (lo == hi) {
                out.push_back(*lo);
            } else if (lo < hi) {
                out.push_back(*lo);
                out.push_back(*hi);
            } else {
                out.push_back(*hi);
                out.push_back(*lo);
            }
            it = end;
        }
    }
    if (last != points.end()) out.push_back(*last);
    return out;
}

std::vector<QPointF> smooth_debiased_ema(const std::vector<QPointF>& points, double smoothing) {
    smoothing = std::clamp(smoothing, 0.0, 0.999);
    std::vector<QPointF> out;
    out.reserve(points.size());
    double average = 0;
    double weight = 1;  // smoothing^n: the part of the average still missing after n values
    for (const QPointF& p : points) {
        if (!std::isfinite(p.y())) {
            out.push_back(p);
            continue;
        }
        average = smoothing * average + (1 - smoothing) * p.y();
        weight *= smoothing;
        const double debiased = weight < 1 ? average / (1 - weight) : p.y();
        out.emplace_back(p.x(), debiased);
    }
    return out;
}

int clamp_for_log(std::vector<QPointF>& points, double floor) {
    int moved = 0;
    for (QPointF& p : points) {
        if (!(p.y() > 0) || !std::isfinite(p.y())) {
            p.setY(floor);
            ++moved;
        }
    }
    return moved;
}

double floor_for_log(const std::vector<std::vector<QPointF>>& traces) {
    double smallest = std::numeric_limits<double>::infinity();
    for (const auto& trace : traces) {
        for (const QPointF& p : trace) {
            if (p.y() > 0 && std::isfinite(p.y())) smallest = std::min(smallest, p.y());
        }
    }
    if (!std::isfinite(smallest)) return 1.0;
    return std::pow(10.0, std::floor(std::log10(smallest)) - 1);
}

NiceRange nice_range(double lo, double hi, int ticks) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1, ticks};
    if (lo > hi) std::swap(lo, hi);
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
        const double pad = std::abs(hi) > 0 ? std::abs(hi) * 0.1 : 1.0;
        lo -= pad;
        hi += pad;
    }
    const double raw = (hi - lo) / std::max(1, ticks - 1);
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    double step = power;
    for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        step = m * power;
        if (step >= raw) break;
    }
    NiceRange r;
    r.lo = std::floor(lo / step) * step;
    r.hi = std::ceil(hi / step) * step;
    r.ticks = static_cast<int>(std::lround((r.hi - r.lo) / step)) + 1;
    return r;
}

NiceRange nice_log_range(double lo, double hi) {
    lo = std::max(lo, std::numeric_limits<double>::min());
    hi = std::max(hi, lo);
    NiceRange r;
    r.lo = std::pow(10.0, std::floor(std::log10(lo)));
    r.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (r.hi <= r.lo) r.hi = r.lo * 10;
    r.ticks = static_cast<int>(std::lround(std::log10(r.hi / r.lo))) + 1;
    return r;
}

int ticks_for_length(double pixels, double pixels_per_tick, int most) {
    if (!(pixels > 0) || !(pixels_per_tick > 0)) return 3;
    return std::clamp(static_cast<int>(pixels / pixels_per_tick), 3, std::max(3, most));
}

NiceRange fitted_range(double lo, double hi, int most) {
    most = std::max(3, most);
    NiceRange best = nice_range(lo, hi, 3);
    for (int ticks = 4; ticks <= most + 1; ++ticks) {
        const NiceRange r = nice_range(lo, hi, ticks);
        if (r.ticks <= most + 1 && r.hi - r.lo <= best.hi - best.lo) best = r;
    }
    return best;
}

QPointF place_inside(const QRectF& area, const QSizeF& size, const QPointF& anchor, qreal gap) {
    qreal x = anchor.x() + gap;
    if (x + size.width() > area.right()) x = anchor.x() - gap - size.width();
    qreal y = anchor.y() + gap;
    if (y + size.height() > area.bottom()) y = anchor.y() - gap - size.height();
    // A label larger than the area keeps its top-left corner inside.
    x = std::max(area.left(), std::min(x, area.right() - size.width()));
    y = std::max(area.top(), std::min(y, area.bottom() - size.height()));
    return {x, y};
}

}  // namespace tewb::ui
