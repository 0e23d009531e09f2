#include "ui/setup/FormFields.h"

#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>

#include "core/config/RunSettings.h"

namespace tewb::ui::form {

QSpinBox* spin(QWidget* parent, const QString& name, int min, int max, const QString& tip) {
    auto* box = new QSpinBox(parent);
    box->setObjectName(name);
    box->setRange(min, max);
    box->setToolTip(tip);
    box->setKeyboardTracking(true);
    return box;
}

QComboBox* combo(QWidget* parent, const QString& name, const std::vector<std::pair<QString, int>>& items, const QString& tip) {
    auto* box = new QComboBox(parent);
    box->setObjectName(name);
    // Long item texts must not set the panel's minimum width: the setup pane is narrow and must not
    // need a horizontal scroll bar. The full text shows in the open list.
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(10);
    for (const auto& [text, value] : items) box->addItem(text, value);
    box->setToolTip(tip);
    return box;
}

void selectData(QComboBox* box, int value) {
    const int index = box->findData(value);
    if (index >= 0) box->setCurrentIndex(index);
}

void setItemAvailable(QComboBox* box, int value, bool available, const QString& reason) {
    auto* model = qobject_cast<QStandardItemModel*>(box->model());
    const int index = box->findData(value);
    if (!model || index < 0) return;
    QStandardItem* item = model->item(index);
    item->setEnabled(available);
    item->setToolTip(reason);
}

bool itemAvailable(const QComboBox* box, int index) {
    const auto* model = qobject_cast<const QStandardItemModel*>(box->model());
    return model && index >= 0 && model->item(index)->isEnabled();
}

QString settingLabel(std::string_view id) {
    const std::string_view label = setting(id).label;
    return QString::fromUtf8(label.data(), static_cast<qsizetype>(label.size()));
}

QString formLabel(std::string_view id) {
    return settingLabel(id) + QStringLiteral(":");
}

std::vector<std::string> settings_named(const std::string& message) {
    std::vector<std::string> ids;
    const auto flag_char = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
    for (std::size_t i = message.find("--"); i != std::string::npos; i = message.find("--", i + 2)) {
        if (i > 0 && flag_char(message[i - 1])) continue;
        std::size_t end = i + 2;
        while (end < message.size() && flag_char(message[end])) ++end;
        const RunSetting* s = find_setting(std::string_view(message).substr(i, end - i));
        if (s && s->flag == std::string_view(message).substr(i, end - i)) ids.emplace_back(s->id);
    }
    return ids;
}

QString form_words(const std::string& message) {
    QString text = QString::fromStdString(message);
    for (const std::string& id : settings_named(message)) {
        const RunSetting& s = setting(id);
        const QString name = QString::fromUtf8(s.flag.data(), static_cast<qsizetype>(s.flag.size()));
        const QRegularExpression flag(QStringLiteral("(?<![a-z0-9-])") + QRegularExpression::escape(name) +
                                      QStringLiteral("(?![a-z0-9-])"));
        text.replace(flag, settingLabel(id));
    }
    return text;
}

}  // namespace tewb::ui::form
