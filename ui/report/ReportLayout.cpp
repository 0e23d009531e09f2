#include "ui/report/ReportLayout.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <QAbstractTextDocumentLayout>
#include <QRegularExpression>
#include <QString>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocumentFragment>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextLayout>
#include <QTextTable>

namespace tewb::ui {

namespace {

constexpr double kSmallestScale = 0.85;  // chart text drawn at 9 pt stays above 7.5 pt
constexpr int kMaxPasses = 12;

struct Figure {
    QTextBlock first;  // the heading
    QTextBlock last;   // the caption
};

// The top and bottom of a block's laid-out lines, in document coordinates (a line pushed to the next page
// carries the page's gap in its own position, not in the block's).
std::pair<double, double> line_extent(const QTextBlock& block) {
    const QTextLayout* layout = block.layout();
    const double top = layout->position().y();
    if (layout->lineCount() == 0) return {top, top};
    const QTextLine first = layout->lineAt(0);
    const QTextLine last = layout->lineAt(layout->lineCount() - 1);
    return {top + first.y(), top + last.y() + last.height()};
}

bool has_image(const QTextBlock& block) {
    for (auto it = block.begin(); !it.atEnd(); ++it) {
        if (it.fragment().charFormat().isImageFormat()) return true;
    }
    return false;
}

std::vector<Figure> find_figures(const QTextDocument& document) {
    std::vector<Figure> figures;
    int number = 1;
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next()) {
        if (!block.text().startsWith(figure_heading_text(number, {}))) continue;
        for (QTextBlock end = block.next(); end.isValid(); end = end.next()) {
            if (end.text().startsWith(figure_caption_prefix(number))) {
                figures.push_back({block, end});
                break;
            }
        }
        ++number;
    }
    return figures;
}

// The figure's height laid out without a page break in it: the gap a line pushed to the next page leaves
// is replaced by the margins between its blocks.
double natural_height(const Figure& figure, double page) {
    double height = 0;
    std::optional<double> previousBottom;
    double previousMargin = 0;
    for (QTextBlock block = figure.first; block.isValid() && block != figure.last.next(); block = block.next()) {
        const QTextLayout* layout = block.layout();
        const double origin = layout->position().y();
        for (int i = 0; i < layout->lineCount(); ++i) {
            const QTextLine line = layout->lineAt(i);
            const double top = origin + line.y();
            if (previousBottom) {
                const bool samePage = static_cast<int>(top / page) == static_cast<int>((*previousBottom - 1) / page);
                const double margin = i == 0 ? std::max(previousMargin, block.blockFormat().topMargin()) : 0.0;
                height += samePage ? top - *previousBottom : margin;
            }
            height += line.height();
            previousBottom = top + line.height();
        }
        previousMargin = block.blockFormat().bottomMargin();
    }
    return height;
}

// Scales every image between the figure's heading and caption by `factor`.
void scale_images(QTextDocument& document, const Figure& figure, double factor) {
    for (QTextBlock block = figure.first; block.isValid() && block != figure.last.next(); block = block.next()) {
        if (!has_image(block)) continue;
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (!fragment.charFormat().isImageFormat()) continue;
            QTextImageFormat image = fragment.charFormat().toImageFormat();
            image.setWidth(std::floor(image.width() * factor));
            image.setHeight(std::floor(image.height() * factor));
            QTextCursor cursor(&document);
            cursor.setPosition(fragment.position());
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
            cursor.setCharFormat(image);
        }
    }
}

double image_height(const Figure& figure) {
    double height = 0;
    for (QTextBlock block = figure.first; block.isValid() && block != figure.last.next(); block = block.next()) {
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextCharFormat format = it.fragment().charFormat();
            if (format.isImageFormat()) height = std::max(height, format.toImageFormat().height());
        }
    }
    return height;
}

bool top_level(const QTextBlock& block) {
    QTextCursor cursor(block);
    return !cursor.currentTable() && cursor.currentFrame() == block.document()->rootFrame();
}

bool is_figure_heading(const QTextBlock& block) {
    static const QRegularExpression heading(QStringLiteral("^Figure \\d+ · "));
    return heading.match(block.text()).hasMatch();
}

// Moves the figure after the text that follows it on its page, the way a float goes to the next page while
// the text fills the room it left (never past the next figure): false when no text fits in that room.
bool float_figure(QTextDocument& document, const Figure& figure, int startPage) {
    const double nextPage = (startPage + 1) * document.pageSize().height();
    const QTextBlock after = figure.last.next();
    if (!after.isValid() || is_figure_heading(after)) return false;
    QTextCursor cut(&document);
    cut.setPosition(figure.first.position());
    cut.setPosition(after.position(), QTextCursor::KeepAnchor);
    const QTextDocumentFragment moved = cut.selection();
    const int from = cut.selectionStart();
    cut.removeSelectedText();
    document.pageCount();
    const QTextBlock first = document.findBlock(from);
    QTextBlock target = first;
    while (target.isValid() && !is_figure_heading(target) && (!top_level(target) || line_extent(target).first < nextPage)) {
        target = target.next();
    }
    QTextCursor insert(&document);
    if (target == first) {
        insert.setPosition(from);  // nothing fits in the room: put it back
    } else if (target.isValid()) {
        insert.setPosition(target.position());
    } else {
        insert.movePosition(QTextCursor::End);
        insert.insertBlock();
    }
    insert.insertFragment(moved);
    return target != first;
}

// Fixes the first figure that crosses a page boundary; false when none does.
bool fix_one(QTextDocument& document) {
    const double page = document.pageSize().height();
    const double margin = document.documentMargin();
    for (const Figure& figure : find_figures(document)) {
        const double top = line_extent(figure.first).first;
        const double bottom = line_extent(figure.last).second;
        const int startPage = static_cast<int>(top / page);
        if (static_cast<int>((bottom - 1) / page) == startPage) continue;
        const double room = (startPage + 1) * page - margin - top;
        const double images = image_height(figure);
        const double height = natural_height(figure, page);
        const double factor = images > 0 ? 1.0 - (height - room + 8.0) / images : 0.0;
        if (factor >= kSmallestScale && factor < 1.0) {
            scale_images(document, figure, factor);
        } else if (!float_figure(document, figure, startPage)) {
            QTextBlockFormat format = figure.first.blockFormat();
            if (format.pageBreakPolicy() & QTextFormat::PageBreak_AlwaysBefore) continue;  // taller than a page
            format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
            QTextCursor(figure.first).setBlockFormat(format);
        }
        return true;
    }
    return false;
}

// The first section heading left as the last line of its page (what follows it starts on the next page) gets a page
// break before it; false when none is.
bool keep_one_heading(QTextDocument& document) {
    const double page = document.pageSize().height();
    for (QTextBlock block = document.begin(); block.isValid(); block = block.next()) {
        if (block.blockFormat().headingLevel() == 0 || !top_level(block) || is_figure_heading(block)) continue;
        const QTextBlock next = block.next();  // a paragraph, or the first cell of a table
        if (!next.isValid() || next.layout()->lineCount() == 0) continue;
        // In document coordinates (a table's cells are laid out inside its frame): the heading's last line, and the
        // first line of what follows.
        const QAbstractTextDocumentLayout* layout = document.documentLayout();
        const QRectF headingRect = layout->blockBoundingRect(block);
        const QRectF nextRect = layout->blockBoundingRect(next);
        const QTextLine nextFirst = next.layout()->lineAt(0);
        const int headingPage = static_cast<int>((headingRect.bottom() - 1) / page);
        const int nextPage = static_cast<int>((nextRect.top() + nextFirst.y()) / page);
        if (nextPage <= headingPage) continue;
        QTextBlockFormat format = block.blockFormat();
        if (format.pageBreakPolicy() & QTextFormat::PageBreak_AlwaysBefore) continue;
        format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
        QTextCursor(block).setBlockFormat(format);
        return true;
    }
    return false;
}

}  // namespace

int keep_headings_with_what_follows(QTextDocument& document) {
    int fixed = 0;
    while (fixed < kMaxPasses) {
        document.pageCount();
        if (!keep_one_heading(document)) break;
        ++fixed;
    }
    return fixed;
}

QString figure_heading_text(int number, const QString& title) {
    return QStringLiteral("Figure %1 · %2").arg(number).arg(title);
}

QString figure_caption_prefix(int number) {
    return QStringLiteral("Figure %1:").arg(number);
}

int keep_figures_on_pages(QTextDocument& document) {
    int fixed = 0;
    // Each fix moves what follows it: lay out again and look from the start.
    while (fixed < kMaxPasses) {
        document.pageCount();  // lays the whole document out for its page size
        if (!fix_one(document)) break;
        ++fixed;
    }
    return fixed;
}

QString esc(const std::string& text) {
    return QString::fromStdString(text).toHtmlEscaped();
}

}  // namespace tewb::ui
