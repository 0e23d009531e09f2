#include "ui/charts/RunLegend.h"

#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>

#include "ui/common/RunColors.h"

namespace tewb::ui {

namespace {

constexpr QSize kSwatch{26, 12};

// The run's line as the charts draw it: its colour and style (the second ten runs dash-dot), faded when hidden.
QIcon swatch(const QColor& colour, bool hidden) {
    QPixmap pixmap(kSwatch * 2);
    pixmap.setDevicePixelRatio(2);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    QColor c = colour;
    if (hidden) c.setAlpha(60);
    painter.setPen(QPen(c, 3, run_line_style(colour)));
    painter.drawLine(QPointF(1, kSwatch.height() / 2.0), QPointF(kSwatch.width() - 1, kSwatch.height() / 2.0));
    return QIcon(pixmap);
}

}  // namespace

RunLegend::RunLegend(QWidget* parent) : QListWidget(parent) {
    setObjectName(QStringLiteral("legend"));
    setFlow(QListView::LeftToRight);
    setWrapping(true);
    setResizeMode(QListView::Adjust);
    setSelectionMode(QAbstractItemView::NoSelection);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setFrameShape(QFrame::NoFrame);
    setIconSize(kSwatch);
    setSpacing(2);
    setTextElideMode(Qt::ElideMiddle);
    setAutoFillBackground(false);
    viewport()->setAutoFillBackground(false);
    const int row = std::max(kSwatch.height(), fontMetrics().height()) + 8;
    setFixedHeight(2 * row + 2 * frameWidth() + 4);
    setToolTip(tr("Click a run (or Space) to hide or show it in these charts · double click (or Enter): only this run · "
                  "right click: more"));
    connect(this, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        const QVariant key = item->data(kKeyRole);
        if (key.isValid()) Q_EMIT visibilityToggled(key.toInt());
    });
    connect(this, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
        const QVariant key = item->data(kKeyRole);
        if (key.isValid()) Q_EMIT soloRequested(key.toInt());
    });
}

void RunLegend::setRuns(const std::vector<Entry>& entries, const std::set<int>& hidden, const QString& notes) {
    if (built_ && entries == entries_ && notes == notes_) {
        // Only what is hidden changed: the entries change their look in place. A rebuild would end the click in
        // progress, and a double click (press, release: a click that hides, then the double click) would be lost.
        if (hidden != hidden_) {
            hidden_ = hidden;
            for (std::size_t i = 0; i < entries_.size(); ++i) restyle(item(static_cast<int>(i)), entries_[i]);
        }
        return;
    }
    built_ = true;
    entries_ = entries;
    hidden_ = hidden;
    notes_ = notes;
    clear();
    for (const Entry& e : entries_) {
        auto* item = new QListWidgetItem(this);
        item->setData(kKeyRole, e.key);
        restyle(item, e);
    }
    if (!notes_.isEmpty()) {
        auto* note = new QListWidgetItem(notes_, this);
        note->setFlags(Qt::NoItemFlags);
        QFont italic = font();
        italic.setItalic(true);
        note->setFont(italic);
        note->setData(kNoteRole, true);
        note->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    }
}

void RunLegend::changeEvent(QEvent* event) {
    QListWidget::changeEvent(event);
    // The theme changed: the faded colours of hidden runs and of the notes follow it.
    if (event->type() != QEvent::PaletteChange) return;
    for (int i = 0; i < count(); ++i) {
        if (item(i)->data(kNoteRole).toBool()) item(i)->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    }
    for (std::size_t i = 0; i < entries_.size() && static_cast<int>(i) < count(); ++i) restyle(item(static_cast<int>(i)), entries_[i]);
}

void RunLegend::restyle(QListWidgetItem* item, const Entry& e) const {
    const bool off = hidden_.count(e.key) > 0;
    item->setIcon(swatch(e.colour, off));
    item->setText(off ? tr("%1 (hidden)").arg(e.name) : e.name);
    item->setToolTip(off ? tr("%1 — hidden: click to show it").arg(e.name)
                         : tr("%1 — click to hide it, double click to show only this run").arg(e.name));
    // A shown run's name takes the view's text colour (whatever the theme); a hidden one's the faded one.
    if (off) {
        item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    } else {
        item->setData(Qt::ForegroundRole, QVariant());
    }
}

QString RunLegend::text() const {
    QStringList parts;
    for (int i = 0; i < count(); ++i) parts << item(i)->text();
    return parts.join(QStringLiteral("  "));
}

QListWidgetItem* RunLegend::itemOf(int key) const {
    for (int i = 0; i < count(); ++i) {
        const QVariant k = item(i)->data(kKeyRole);
        if (k.isValid() && k.toInt() == key) return item(i);
    }
    return nullptr;
}

void RunLegend::keyPressEvent(QKeyEvent* event) {
    const QVariant key = currentItem() ? currentItem()->data(kKeyRole) : QVariant();
    if (key.isValid() && event->key() == Qt::Key_Space) {
        Q_EMIT visibilityToggled(key.toInt());
        return;
    }
    if (key.isValid() && (event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter)) {
        Q_EMIT soloRequested(key.toInt());
        return;
    }
    QListWidget::keyPressEvent(event);
}

void RunLegend::contextMenuEvent(QContextMenuEvent* event) {
    QListWidgetItem* at = itemAt(event->pos());
    const QVariant key = at ? at->data(kKeyRole) : QVariant();
    auto* menu = new QMenu(this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    if (key.isValid()) {
        const int k = key.toInt();
        const bool off = hidden_.count(k) > 0;
        menu->addAction(off ? tr("Show this run") : tr("Hide this run"), this, [this, k] { Q_EMIT visibilityToggled(k); });
        menu->addAction(tr("Show only this run"), this, [this, k] { Q_EMIT soloRequested(k); });
    }
    QAction* all = menu->addAction(tr("Show every run"), this, &RunLegend::showAllRequested);
    all->setEnabled(!hidden_.empty());
    menu->popup(event->globalPos());
}

}  // namespace tewb::ui
