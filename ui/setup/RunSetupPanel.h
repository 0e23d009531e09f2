#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <QWidget>

#include "core/common/ConfigProblem.h"
#include "core/device/Capability.h"
#include "core/device/DeviceInfo.h"
#include "ui/common/Metatypes.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace tewb::ui {

// The form for one run: backend, precision, FP8 recipe, architecture and model size, data, batch, steps, seed, name. Validation
// is core's: every edit asks core for the problems of the configuration as typed and for what this
// machine can run; a field with a problem is marked and carries core's message, the options this device
// cannot run are disabled (never hidden) with the reason as their tooltip.
class RunSetupPanel : public QWidget {
    Q_OBJECT

public:
    explicit RunSetupPanel(QWidget* parent = nullptr);

    void setDevice(const DeviceInfo& device, const Capability& capability);
    void applyPreset(Preset preset);
    void setConfig(const RunConfig& config);
    // The configuration as typed; fields whose text does not parse keep their last valid value and are
    // reported by problems().
    RunConfig config() const;
    // How many times "Add to queue" and "Compare" run each configuration (a repeat group when above 1).
    int repeats() const;
    void setRepeats(int repeats);
    std::vector<ConfigProblem> problems() const { return problems_; }
    // The message shown at a field ("hidden", "precision", "amax-history-len", ...), empty when fine.
    QString problemAt(const std::string& field) const;

    // Tests and the window reach the fields by these.
    QComboBox* backendBox() const { return backend_; }
    QComboBox* precisionBox() const { return precision_; }
    QComboBox* deviceBox() const { return device_; }
    QComboBox* teImplBox() const { return teImpl_; }
    QComboBox* archBox() const { return arch_; }
    QLineEdit* dataPathEdit() const { return dataPath_; }
    QPushButton* browseDataButton() const { return browse_; }
    QWidget* field(const std::string& name) const;
    QPushButton* addButton() const { return add_; }
    QPushButton* compareButton() const { return compare_; }
    // The form scrolls in this area; the problems and the buttons sit under it, outside.
    QScrollArea* formScroll() const { return formScroll_; }
    QWidget* form() const { return form_; }

Q_SIGNALS:
    void addRequested(tewb::RunConfig config);
    void compareRequested(tewb::RunConfig config);
    void configChanged();

private:
    // One builder per form group; each creates its widgets into the members below.
    QLayout* buildPresetRow();
    QWidget* buildRunGroup();
    QWidget* buildFp8Group();
    QWidget* buildModelGroup();
    // RunSetupModelData.cpp: the architecture's fields (created here, placed in the model group) and the data group.
    void createArchitectureFields(QWidget* parent);
    QWidget* buildDataGroup();
    void connectModelAndDataFields(const std::function<void()>& edited);
    void chooseTokenFile();
    void showDataFileName();
    // A field for every row of the settings table the groups above made none for (a setting added to the table),
    // placed in its section's group: `groups` are the run, FP8, model and data groups.
    void addFieldsForOtherSettings(QWidget* run, QWidget* fp8, QWidget* model, QWidget* data);
    void updateModelAndDataFields();
    void findModelAndDataProblems(std::vector<ConfigProblem>& found) const;
    QWidget* buildActions();
    void connectFields();  // every field's edit: Custom preset, availability, validation
    void validate();
    // The problems area's height for its text: 3 lines at rest, up to 8 so that two long messages show whole.
    void fitProblems();
    void setTabOrderAsLaidOut();
    void updateAvailability();
    void markField(const std::string& field, const QString& message);
    TeImpl teImplChoice() const;

    QScrollArea* formScroll_;
    QWidget* form_;
    std::optional<DeviceInfo> device_info_;
    Capability capability_;

    QComboBox* presets_;
    QComboBox* device_;
    QComboBox* backend_;
    QComboBox* precision_;
    QComboBox* teImpl_;
    QComboBox* scaling_;
    QComboBox* format_;
    QSpinBox* historyLen_;
    QComboBox* algo_;
    QSpinBox* margin_;
    QCheckBox* inspect_;
    QCheckBox* cudaGraph_;
    QCheckBox* blockPow2_;
    QCheckBox* calibrate_;
    QSpinBox* repeats_;
    QSpinBox* processes_;
    QSpinBox* layers_;
    QSpinBox* hidden_;
    QSpinBox* heads_;
    QSpinBox* seq_;
    QSpinBox* vocab_;
    QSpinBox* batch_;
    QSpinBox* warmup_;
    QSpinBox* iters_;
    QLineEdit* lr_;
    QLineEdit* seed_;
    QLineEdit* name_;
    QComboBox* arch_;
    QSpinBox* kvHeads_;
    QSpinBox* ffn_;
    QLineEdit* ropeBase_;
    QLineEdit* dataPath_;
    QPushButton* browse_;
    QComboBox* dataFormat_;
    QDoubleSpinBox* valFraction_;
    QSpinBox* evalEvery_;
    std::map<std::string, QString> llamaTips_;  // a llama field's tooltip while llama is chosen
    std::map<std::string, QString> dataTips_;   // a data field's tooltip while a file is chosen
    QLabel* problemsLabel_;
    QScrollArea* problemsArea_ = nullptr;
    QPushButton* add_;
    QPushButton* compare_;
    std::map<std::string, QWidget*> fields_;  // every row's field, by the row's id: config() and setConfig() loop over them
    std::vector<QWidget*> otherFields_;       // those made from their rows alone (addFieldsForOtherSettings)
    std::map<std::string, QString> baseTips_;
    QString teImplTip_;
    std::vector<ConfigProblem> problems_;
    bool updating_ = false;
};

}  // namespace tewb::ui
