#pragma once

#include <functional>

#include <QComboBox>
#include <QString>

#include "core/common/Choice.h"
#include "core/config/RunSettings.h"

class QWidget;

namespace tewb::ui::form {

// The run-setup form's mapping between a settings row (core/config/RunSettings) and its field, whatever the field:
// a spin box for a whole number, a check box for a switch, a combo box for a choice (its items carry the names the
// row reads and writes), a line edit for a real number or text, a double spin box for a fraction.

// The role under which a choice's combo box items hold the setting's names ("fp8", "block").
inline constexpr int kSettingNameRole = Qt::UserRole + 7;

// Gives each item of `box`, whose data is an `Enum` value, the value's name (kSettingNameRole).
template <typename Enum>
void nameItems(QComboBox* box) {
    for (int i = 0; i < box->count(); ++i) {
        const std::string_view name = to_string(static_cast<Enum>(box->itemData(i).toInt()));
        box->setItemData(i, QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())), kSettingNameRole);
    }
}

// A field for a row that has none of its own, made from the row alone: its kind, valid range, label (a check box's
// text) and help (the tooltip). Nullptr for a choice: its names and their words are a field of its own.
QWidget* makeSettingField(QWidget* parent, const RunSetting& s);
// A real number as a person types it: up to 12 significant digits, no trailing zeros ("0.0003", "10000").
QString realText(double value);
// The field shows the setting's value in `config`.
void writeSetting(QWidget* field, const RunSetting& s, const RunConfig& config);
// The setting takes the field's value; text that does not parse leaves the setting as it was (the form's validation
// reports it with core's parser message).
void readSetting(const QWidget* field, const RunSetting& s, RunConfig& config);
// The field's signal for "the user changed me", connected to `edited`.
void onSettingEdited(QWidget* field, QObject* context, const std::function<void()>& edited);

}  // namespace tewb::ui::form
