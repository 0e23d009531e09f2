#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <QComboBox>
#include <QString>

class QSpinBox;
class QWidget;

namespace tewb::ui::form {

// The run setup's building blocks, shared by the form's source files.
QSpinBox* spin(QWidget* parent, const QString& name, int min, int max, const QString& tip);
// A combo box whose long item texts do not set the panel's minimum width (the full text shows in the open list).
QComboBox* combo(QWidget* parent, const QString& name, const std::vector<std::pair<QString, int>>& items, const QString& tip);
void selectData(QComboBox* box, int value);
template <typename Enum>
Enum current(const QComboBox* box) {
    return static_cast<Enum>(box->currentData().toInt());
}
// Enables or disables one item of a combo box, with the reason as its tooltip.
void setItemAvailable(QComboBox* box, int value, bool available, const QString& reason);
bool itemAvailable(const QComboBox* box, int index);

// A setting's words in the form come from the settings table (core/config/RunSettings), as its flag does on the
// command line.
QString settingLabel(std::string_view id);
QString formLabel(std::string_view id);
// The settings whose flags a core message names ("--hidden 130: not divisible by --heads 4" names hidden and
// heads): every field in a conflict is marked, not only the one the problem is filed under.
std::vector<std::string> settings_named(const std::string& message);
// Core's message in the form's words: every flag it names becomes that field's label ("--hidden 130" reads
// "Hidden size 130"), as te-bench's words would be foreign in the window.
QString form_words(const std::string& message);

}  // namespace tewb::ui::form
