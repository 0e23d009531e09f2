#pragma once

#include <cstdint>
#include <optional>

#include <QImage>
#include <QString>
#include <QWidget>

#include "core/fp8/Fp8Stats.h"

namespace tewb::ui {

// The block scales' histogram of one FP8 slot (or of a slot role's slots added together): a bar per binade of the
// scale (the factor a block's stored values are multiplied by, 2^e up to 2^(e+1)) on a linear count axis, the
// title naming the slot, its blocks and those without a scale. Hovering a bar names its binade, count and share.
class BlockScaleHistogram : public QWidget {
    Q_OBJECT

public:
    explicit BlockScaleHistogram(QWidget* parent = nullptr);
    // `title` names what is shown (e.g. "blocks_0.qkv · input"); without a histogram, `title` says why.
    void show(const std::optional<Fp8ScaleHistogram>& histogram, const QString& title);
    QImage render(QSize size, qreal scale = 1.0) const;
    const std::optional<Fp8ScaleHistogram>& histogram() const { return histogram_; }
    QString title() const { return title_; }
    // The bar under a widget position: its binade e; nothing between or beside the bars.
    std::optional<int> binadeAt(QPoint position) const;

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    void paint(QPainter& painter, QSize size) const;
    QRectF plotArea(QSize size) const;

    std::optional<Fp8ScaleHistogram> histogram_;
    QString title_;
};

}  // namespace tewb::ui
