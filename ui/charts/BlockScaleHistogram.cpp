#include "ui/charts/BlockScaleHistogram.h"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "ui/charts/PaintedImage.h"

namespace tewb::ui {

namespace {

constexpr double kLeft = 64;     // the count axis' labels
constexpr double kRight = 12;
constexpr double kTop = 24;      // the title line
constexpr double kBottom = 34;   // the binade labels and the axis name

QString power_text(int exponent) {
    return QStringLiteral("2^%1").arg(exponent);
}

}  // namespace

BlockScaleHistogram::BlockScaleHistogram(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("fp8BlockScales"));
    setMouseTracking(true);
    setMinimumHeight(150);
}

void BlockScaleHistogram::show(const std::optional<Fp8ScaleHistogram>& histogram, const QString& title) {
    histogram_ = histogram;
    title_ = title;
    update();
}

QRectF BlockScaleHistogram::plotArea(QSize size) const {
    return QRectF(kLeft, kTop, std::max(1.0, size.width() - kLeft - kRight), std::max(1.0, size.height() - kTop - kBottom));
}

std::optional<int> BlockScaleHistogram::binadeAt(QPoint position) const {
    if (!histogram_ || histogram_->counts.empty()) return std::nullopt;
    const QRectF area = plotArea(size());
    if (!area.contains(position)) return std::nullopt;
    const double width = area.width() / static_cast<double>(histogram_->counts.size());
    const int bar = std::clamp(static_cast<int>((position.x() - area.left()) / width), 0, static_cast<int>(histogram_->counts.size()) - 1);
    return histogram_->lowest_exponent + bar;
}

void BlockScaleHistogram::paint(QPainter& painter, QSize size) const {
    painter.fillRect(QRect(QPoint(0, 0), size), palette().color(QPalette::Base));
    painter.setPen(palette().color(QPalette::Text));
    QFont small = painter.font();
    small.setPixelSize(11);
    painter.setFont(small);
    const QFontMetricsF metrics(small);
    if (!histogram_ || histogram_->counts.empty()) {
        QString text = title_;
        if (histogram_) text += tr(": no block had a scale (%1 without one)").arg(histogram_->empty_blocks);
        painter.drawText(QRect(QPoint(8, 0), size - QSize(16, 0)), Qt::AlignCenter | Qt::TextWordWrap, text);
        return;
    }
    const Fp8ScaleHistogram& h = *histogram_;
    const std::int64_t blocks = h.blocks();
    painter.drawText(QRectF(4, 2, size.width() - 8, kTop - 4), Qt::AlignLeft | Qt::AlignVCenter,
                     metrics.elidedText(tr("block scales of %1: %2 blocks, %3 without a scale (all zero or not finite)")
                                            .arg(title_)
                                            .arg(blocks)
                                            .arg(h.empty_blocks),
                                        Qt::ElideMiddle, size.width() - 8));
    const QRectF area = plotArea(size);
    const std::int64_t most = *std::max_element(h.counts.begin(), h.counts.end());
    const double width = area.width() / static_cast<double>(h.counts.size());
    const QColor bar = palette().color(QPalette::Highlight);
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
        // A binade with any block stays visible (2 px) however tall the largest bar is.
        const double share = most > 0 ? area.height() * static_cast<double>(h.counts[i]) / static_cast<double>(most) : 0.0;
        const double height = h.counts[i] > 0 ? std::max(2.0, share) : 0.0;
        painter.fillRect(QRectF(area.left() + i * width + 1, area.bottom() - height, std::max(1.0, width - 2), height), bar);
    }
    painter.drawLine(area.bottomLeft(), area.bottomRight());
    painter.drawLine(area.bottomLeft(), area.topLeft());
    // The count axis: 0, half and the largest bar.
    for (const double f : {0.0, 0.5, 1.0}) {
        const double y = area.bottom() - f * area.height();
        painter.drawLine(QPointF(area.left() - 3, y), QPointF(area.left(), y));
        painter.drawText(QRectF(0, y - 7, kLeft - 6, 14), Qt::AlignRight | Qt::AlignVCenter,
                         QString::number(std::llround(f * static_cast<double>(most))));
    }
    // Binade labels where they fit: every n-th bar.
    const double label = metrics.horizontalAdvance(power_text(h.lowest_exponent)) + 8;
    const int every = std::max(1, static_cast<int>(std::ceil(label / width)));
    for (std::size_t i = 0; i < h.counts.size(); i += static_cast<std::size_t>(every)) {
        const double x = area.left() + (i + 0.5) * width;
        painter.drawText(QRectF(x - label / 2, area.bottom() + 2, label, 14), Qt::AlignCenter,
                         power_text(h.lowest_exponent + static_cast<int>(i)));
    }
    painter.drawText(QRectF(area.left(), area.bottom() + 16, area.width(), 14), Qt::AlignCenter,
                     tr("scale (the factor a block's values are multiplied by), by binade 2^e … 2^(e+1)"));
}

void BlockScaleHistogram::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    paint(painter, size());
}

QImage BlockScaleHistogram::render(QSize size, qreal scale) const {
    return painted_image(size, scale, [&](QPainter& painter) { paint(painter, size); });
}

void BlockScaleHistogram::mouseMoveEvent(QMouseEvent* event) {
    const std::optional<int> binade = binadeAt(event->position().toPoint());
    if (!binade || !histogram_) {
        QToolTip::hideText();
        return;
    }
    const std::int64_t count = histogram_->counts[static_cast<std::size_t>(*binade - histogram_->lowest_exponent)];
    const std::int64_t blocks = histogram_->blocks();
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("%1 ≤ scale < %2\n%3 blocks (%4% of %5)")
                           .arg(power_text(*binade), power_text(*binade + 1))
                           .arg(count)
                           .arg(QString::number(blocks > 0 ? 100.0 * static_cast<double>(count) / static_cast<double>(blocks) : 0.0, 'f', 1))
                           .arg(blocks),
                       this);
}

}  // namespace tewb::ui
