#include "ui/common/Theme.h"

#include <QAbstractAxis>
#include <QApplication>
#include <QChart>
#include <QLegend>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QWidget>

namespace tewb::ui {

namespace {

// A widget with a style sheet keeps the palette it had when the sheet was applied: one that fills its
// background (a label in a scroll area) stayed light in the dark theme. Setting its sheet again takes the
// new palette.
void repolish_style_sheet_widgets() {
    for (QWidget* widget : QApplication::allWidgets()) {
        if (widget->styleSheet().isEmpty()) continue;
        const QString sheet = widget->styleSheet();
        widget->setStyleSheet(QString());
        widget->setStyleSheet(sheet);
    }
}

}  // namespace

void apply_theme(bool dark) {
    if (QApplication::style()->name().compare(QStringLiteral("fusion"), Qt::CaseInsensitive) != 0) {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    }
    if (!dark) {
        QApplication::setPalette(QApplication::style()->standardPalette());
        repolish_style_sheet_widgets();
        return;
    }
    QPalette p;
    const QColor window(0x2b, 0x2b, 0x2b);
    const QColor base(0x1f, 0x1f, 0x1f);
    const QColor text(0xe8, 0xe8, 0xe8);
    const QColor disabled(0x80, 0x80, 0x80);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3a, 0x3a));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, QColor(0x6a, 0xa9, 0xff));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xd6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, disabled);
    for (const auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
        p.setColor(QPalette::Disabled, role, disabled);
    }
    QApplication::setPalette(p);
    repolish_style_sheet_widgets();
}

QPalette light_palette() {
    QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"));
    const QPalette palette = fusion ? fusion->standardPalette() : QPalette(Qt::white);
    delete fusion;
    return palette;
}

ChartColours chart_colours(bool dark) {
    if (dark) {
        return {QColor(0x26, 0x26, 0x26), QColor(0x1f, 0x1f, 0x1f), QColor(0xe8, 0xe8, 0xe8), QColor(0x48, 0x48, 0x48),
                QColor(0x9a, 0x9a, 0x9a)};
    }
    return {QColor(Qt::white), QColor(Qt::white), QColor(0x20, 0x20, 0x20), QColor(0xdd, 0xdd, 0xdd), QColor(0x70, 0x70, 0x70)};
}

void style_chart(QChart* chart, bool dark) {
    const ChartColours c = chart_colours(dark);
    chart->setBackgroundRoundness(0);
    chart->setBackgroundBrush(c.background);
    chart->setBackgroundPen(Qt::NoPen);
    chart->setPlotAreaBackgroundBrush(c.plot_background);
    chart->setPlotAreaBackgroundVisible(true);
    chart->setTitleBrush(c.text);
    chart->legend()->setLabelColor(c.text);
    chart->legend()->setBrush(Qt::NoBrush);
    chart->legend()->setPen(Qt::NoPen);
    for (QAbstractAxis* axis : chart->axes()) {
        axis->setLabelsColor(c.text);
        axis->setTitleBrush(c.text);
        axis->setGridLineColor(c.grid);
        axis->setMinorGridLineColor(c.grid);
        axis->setLinePenColor(c.axis_line);
    }
}

}  // namespace tewb::ui
