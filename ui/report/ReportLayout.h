#pragma once

#include <QString>

#include <string>

class QTextDocument;

namespace tewb::ui {

// The report's figures as laid out on pages: a figure is the run of top-level blocks from its heading
// ("Figure N · …") to its caption ("Figure N: …"), images in between. keep_figures_on_pages makes each
// figure end on the page it starts on, for a document already given its page size. A figure that crosses
// a page boundary is, in this order: scaled down to the room left on its page when that keeps at least 85%
// of its size (its text stays legible); moved after the text that follows it on that page, as a float, so
// the text fills the room; or started on a new page when no text follows. Returns how many fixes it made.
int keep_figures_on_pages(QTextDocument& document);
// Keeps each section heading (<h1>…<h6>, not a figure's) on the page of what follows it: a heading that would be
// the last line of its page starts the next one instead. Returns how many headings it moved.
int keep_headings_with_what_follows(QTextDocument& document);

// The heading and caption texts keep_figures_on_pages looks for.
QString figure_heading_text(int number, const QString& title);
QString figure_caption_prefix(int number);
// Text from a record, escaped for the report's HTML.
QString esc(const std::string& text);

}  // namespace tewb::ui
