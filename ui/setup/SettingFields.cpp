#include "ui/setup/SettingFields.h"

#include <algorithm>
#include <climits>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>

#include "core/common/Error.h"
#include "core/common/NumberText.h"

namespace tewb::ui::form {

namespace {

QString text_of(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

}  // namespace

QString realText(double value) {
    return QString::number(value, 'g', 12);
}

QWidget* makeSettingField(QWidget* parent, const RunSetting& s) {
    const QString name = text_of(s.id);
    switch (s.kind) {
    case SettingKind::Integer: {
        auto* box = new QSpinBox(parent);
        // The least value validation accepts; higher values than it accepts stay typeable, so that the field can
        // say what the limit is.
        box->setRange(s.valid ? static_cast<int>(std::max<std::int64_t>(s.valid->min, INT_MIN)) : 0, 100'000'000);
        box->setKeyboardTracking(true);
        box->setObjectName(name);
        box->setToolTip(text_of(s.help));
        return box;
    }
    case SettingKind::Switch:
    case SettingKind::Presence: {
        auto* box = new QCheckBox(text_of(s.label), parent);
        box->setObjectName(name);
        box->setToolTip(text_of(s.help));
        return box;
    }
    case SettingKind::Real:
    case SettingKind::Text: {
        auto* line = new QLineEdit(parent);
        line->setObjectName(name);
        line->setToolTip(text_of(s.help));
        return line;
    }
    case SettingKind::Choice:
        break;
    }
    return nullptr;
}

void writeSetting(QWidget* field, const RunSetting& s, const RunConfig& config) {
    const SettingValue value = s.get(config);
    if (auto* box = qobject_cast<QComboBox*>(field)) {
        const int index = box->findData(QString::fromStdString(setting_text(s, config)), kSettingNameRole);
        if (index >= 0) box->setCurrentIndex(index);
    } else if (auto* check = qobject_cast<QCheckBox*>(field)) {
        check->setChecked(std::get<bool>(value));
    } else if (auto* spin = qobject_cast<QSpinBox*>(field)) {
        spin->setValue(static_cast<int>(std::get<std::int64_t>(value)));
    } else if (auto* real = qobject_cast<QDoubleSpinBox*>(field)) {
        real->setValue(std::get<double>(value));
    } else if (auto* line = qobject_cast<QLineEdit*>(field)) {
        line->setText(s.kind == SettingKind::Real ? realText(std::get<double>(value)) : QString::fromStdString(setting_text(s, config)));
    }
}

void readSetting(const QWidget* field, const RunSetting& s, RunConfig& config) {
    if (const auto* box = qobject_cast<const QComboBox*>(field)) {
        s.set(config, box->currentData(kSettingNameRole).toString().toStdString(), s.flag);
    } else if (const auto* check = qobject_cast<const QCheckBox*>(field)) {
        s.set(config, check->isChecked(), s.flag);
    } else if (const auto* spin = qobject_cast<const QSpinBox*>(field)) {
        s.set(config, std::int64_t{spin->value()}, s.flag);
    } else if (const auto* real = qobject_cast<const QDoubleSpinBox*>(field)) {
        s.set(config, real->value(), s.flag);
    } else if (const auto* line = qobject_cast<const QLineEdit*>(field)) {
        const std::string text = line->text().trimmed().toStdString();
        try {
            set_setting_from_text(s, config, text);
        } catch (const ConfigError&) {
        }
    }
}

void onSettingEdited(QWidget* field, QObject* context, const std::function<void()>& edited) {
    if (auto* box = qobject_cast<QComboBox*>(field)) {
        QObject::connect(box, &QComboBox::currentIndexChanged, context, edited);
    } else if (auto* check = qobject_cast<QCheckBox*>(field)) {
        QObject::connect(check, &QCheckBox::toggled, context, edited);
    } else if (auto* spin = qobject_cast<QSpinBox*>(field)) {
        QObject::connect(spin, &QSpinBox::valueChanged, context, edited);
    } else if (auto* real = qobject_cast<QDoubleSpinBox*>(field)) {
        QObject::connect(real, &QDoubleSpinBox::valueChanged, context, edited);
    } else if (auto* line = qobject_cast<QLineEdit*>(field)) {
        QObject::connect(line, &QLineEdit::textChanged, context, edited);
    }
}

}  // namespace tewb::ui::form
