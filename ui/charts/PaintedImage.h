#pragma once

#include <QImage>
#include <QPainter>
#include <QSize>

namespace tewb::ui {

// What a QPainter-drawn widget paints, as an image of `size` logical pixels at `scale` image pixels each (exports and
// the report): `paint(painter)` draws into it.
template <typename Paint>
QImage painted_image(QSize size, qreal scale, Paint&& paint) {
    QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
    QPainter painter(&image);
    painter.scale(scale, scale);
    paint(painter);
    return image;
}

}  // namespace tewb::ui
