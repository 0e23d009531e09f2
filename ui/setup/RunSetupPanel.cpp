#include "ui/setup/RunSetupPanel.h"

#include "core/results/RunRecord.h"

#include <limits>

#include <QCheckBox>
#include <algorithm>

#include <QAbstractSpinBox>
#include <QPalette>

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPalette>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include "core/common/Error.h"
#include "core/config/Availability.h"
#include "core/config/RunFacts.h"
#include "core/config/RunSettings.h"
#include "ui/common/WheelGuard.h"
#include "ui/setup/FormFields.h"
#include "ui/setup/SettingFields.h"

namespace tewb::ui {

using namespace form;

namespace {

enum PresetChoice { Custom = -1 };

QString presetText(Preset preset) {
    const std::string_view title = preset_title(preset);
    return QString::fromUtf8(title.data(), static_cast<qsizetype>(title.size())) + QStringLiteral(": ") +
           QString::fromStdString(preset_summary(preset));
}

constexpr int kProblemLinesShown = 3;  // the problems area at rest
constexpr int kProblemLinesMost = 8;   // grown for long messages; more scroll

}  // namespace

RunSetupPanel::RunSetupPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("runSetup"));
    // A field with a problem gets a red frame; a spin box a red-tinted base instead (markField): a style sheet's border
    // on a spin box replaces its native up and down arrows with none.
    setStyleSheet(QStringLiteral("QLineEdit[problem=\"true\"], QComboBox[problem=\"true\"], QCheckBox[problem=\"true\"] "
                                 "{ border: 2px solid #d32f2f; border-radius: 3px; }"));
    // The form scrolls; the problems and the buttons under it do not, so "Add to queue" and "Compare" are
    // always in view.
    form_ = new QWidget(this);
    form_->setObjectName(QStringLiteral("setupForm"));
    auto* layout = new QVBoxLayout(form_);
    layout->addLayout(buildPresetRow());
    QWidget* runGroup = buildRunGroup();
    QWidget* fp8Group = buildFp8Group();
    QWidget* modelGroup = buildModelGroup();
    QWidget* dataGroup = buildDataGroup();
    for (QWidget* group : {runGroup, fp8Group, modelGroup, dataGroup}) layout->addWidget(group);
    layout->addStretch();
    formScroll_ = new QScrollArea(this);
    formScroll_->setObjectName(QStringLiteral("setupFormScroll"));
    formScroll_->setWidgetResizable(true);
    formScroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the form fits the pane's width
    formScroll_->setFrameShape(QFrame::NoFrame);
    formScroll_->setWidget(form_);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(formScroll_, 1);
    outer->addWidget(buildActions());

    fields_ = {{"device", device_},   {"backend", backend_}, {"precision", precision_}, {"name", name_}, {"te-impl", teImpl_},
               {"recipe", scaling_},  {"fp8-format", format_}, {"amax-history-len", historyLen_}, {"block-scales", blockPow2_},
               {"calibrate-first-step", calibrate_},
               {"amax-algo", algo_},  {"margin", margin_},   {"inspect-fp8", inspect_}, {"cuda-graph", cudaGraph_}, {"layers", layers_},
               {"hidden", hidden_},   {"heads", heads_},     {"seq", seq_},             {"vocab", vocab_},
               {"batch", batch_},     {"warmup", warmup_},   {"iters", iters_},         {"lr", lr_},
               {"seed", seed_},      {"nproc", processes_}, {"arch", arch_},           {"kv-heads", kvHeads_},
               {"ffn", ffn_},        {"rope-base", ropeBase_}, {"data", dataPath_},  {"data-format", dataFormat_},
               {"val-fraction", valFraction_}, {"eval-every", evalEvery_}};
    addFieldsForOtherSettings(runGroup, fp8Group, modelGroup, dataGroup);
    for (const auto& [field, widget] : fields_) baseTips_[field] = widget->toolTip();
    setTabOrderAsLaidOut();

    connectFields();
    guard_wheel(this);
    applyPreset(Preset::QuickCpu);
}

// Tab walks the form as it is laid out, top to bottom (the widgets were created in another order: the model group's
// architecture fields after its seed), then the buttons; the scroll areas take no focus of their own.
void RunSetupPanel::setTabOrderAsLaidOut() {
    formScroll_->setFocusPolicy(Qt::NoFocus);
    problemsArea_->setFocusPolicy(Qt::NoFocus);
    const std::vector<QWidget*> order{presets_,    device_,      backend_,  precision_, teImpl_,   name_,     cudaGraph_,
                                      repeats_,    processes_,   scaling_,  format_,    historyLen_, algo_,   margin_,
                                      inspect_,    calibrate_,   blockPow2_, arch_,     layers_,   hidden_,   heads_,
                                      kvHeads_,    ffn_,         ropeBase_, seq_,       vocab_,    batch_,    warmup_,
                                      iters_,      lr_,          seed_,     dataPath_,  browse_,   dataFormat_, valFraction_,
                                      evalEvery_};
    std::vector<QWidget*> all = order;
    all.insert(all.end(), otherFields_.begin(), otherFields_.end());  // fields made from rows, at the form's end
    all.insert(all.end(), {add_, compare_});
    for (std::size_t i = 1; i < all.size(); ++i) QWidget::setTabOrder(all[i - 1], all[i]);
}

void RunSetupPanel::addFieldsForOtherSettings(QWidget* run, QWidget* fp8, QWidget* model, QWidget* data) {
    for (const RunSetting& s : run_settings()) {
        const std::string id(s.id);
        if (!s.in_form || fields_.count(id) != 0) continue;
        QWidget* group = s.section == SettingSection::Fp8    ? fp8
                         : s.section == SettingSection::Data ? data
                         : s.section == SettingSection::Dist ? run
                                                             : model;
        QWidget* widget = makeSettingField(group, s);
        if (widget == nullptr) continue;  // a choice needs its own field (its names' words)
        auto* rows = qobject_cast<QFormLayout*>(group->layout());
        if (qobject_cast<QCheckBox*>(widget) != nullptr) {
            rows->addRow(widget);
        } else {
            rows->addRow(formLabel(id), widget);
        }
        fields_[id] = widget;
        otherFields_.push_back(widget);
    }
}

QLayout* RunSetupPanel::buildPresetRow() {
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(new QLabel(tr("Preset:"), this));
    presets_ = combo(this, QStringLiteral("preset"),
                     {{tr("Custom"), Custom}}, tr("Fill every field with a preset's values"));
    for (const Preset preset : all_presets()) presets_->addItem(presetText(preset), static_cast<int>(preset));
    presetRow->addWidget(presets_, 1);
    return presetRow;

}

QWidget* RunSetupPanel::buildRunGroup() {
    auto* runBox = new QGroupBox(tr("Run"), this);
    auto* runForm = new QFormLayout(runBox);
    device_ = combo(runBox, QStringLiteral("device"),
                    {{tr("Auto (GPU when usable)"), static_cast<int>(DeviceKind::Auto)},
                     {tr("CPU"), static_cast<int>(DeviceKind::Cpu)},
                     {tr("CUDA GPU"), static_cast<int>(DeviceKind::Cuda)}},
                    tr("Where the run executes"));
    nameItems<DeviceKind>(device_);
    backend_ = combo(runBox, QStringLiteral("backend"),
                     {{tr("LibTorch baseline (torch)"), static_cast<int>(Backend::Torch)},
                      {tr("TE modules (te)"), static_cast<int>(Backend::Te)}},
                     tr("torch: plain LibTorch modules; te: this project's Transformer-Engine-style modules"));
    nameItems<Backend>(backend_);
    precision_ = combo(runBox, QStringLiteral("precision"),
                       {{tr("Auto (BF16 on a GPU, FP32 on the CPU)"), static_cast<int>(Precision::Auto)},
                        {tr("FP32"), static_cast<int>(Precision::Fp32)},
                        {tr("BF16"), static_cast<int>(Precision::Bf16)},
                        {tr("FP8"), static_cast<int>(Precision::Fp8)}},
                       tr("FP8 needs the te backend"));
    nameItems<Precision>(precision_);
    teImpl_ = combo(runBox, QStringLiteral("teImpl"),
                    {{tr("Auto (fused kernels on a GPU of compute capability 8.0+, else reference)"),
                      static_cast<int>(TeImpl::Auto)},
                     {tr("Fused (on the CPU: host kernels, FP8 GEMMs emulated)"), static_cast<int>(TeImpl::Fused)},
                     {tr("Reference (LibTorch ops, float32 math)"), static_cast<int>(TeImpl::Reference)}},
                    QString());
    nameItems<TeImpl>(teImpl_);
    // TEWB_TE_IMPL is the default; a bad value is said in the tooltip and Auto is taken.
    QString environmentNote = tr("Default from TEWB_TE_IMPL (unset: Auto).");
    try {
        selectData(teImpl_, static_cast<int>(te_impl_from_environment()));
    } catch (const ConfigError& e) {
        environmentNote = tr("%1; Auto is used instead.").arg(QString::fromStdString(e.what()));
    }
    teImplTip_ = tr("Which code runs the te modules (--te-impl). Auto: the fused kernels on a CUDA GPU of compute capability "
                    "8.0 or newer, else the reference. Fused: the fused path on any device (on the CPU our host kernels, "
                    "FP8 GEMMs emulated). Reference: LibTorch ops in float32 math. The run record says which path ran and "
                    "every fallback to the reference. Compare applies it to its te rows. ") +
                 environmentNote;
    name_ = new QLineEdit(runBox);
    name_->setObjectName(QStringLiteral("name"));
    name_->setPlaceholderText(tr("automatic: backend precision device"));
    runForm->addRow(formLabel("device"), device_);
    runForm->addRow(formLabel("backend"), backend_);
    runForm->addRow(formLabel("precision"), precision_);
    runForm->addRow(formLabel("te-impl"), teImpl_);
    runForm->addRow(formLabel("name"), name_);
    cudaGraph_ = new QCheckBox(settingLabel("cuda-graph"), runBox);
    cudaGraph_->setObjectName(QStringLiteral("cudaGraph"));
    runForm->addRow(cudaGraph_);
    repeats_ = spin(runBox, QStringLiteral("repeats"), 1, kMaxRepeats,
                    tr("Run each configuration this many times, alternating configurations (A B A B …); the charts draw "
                       "the median with a min–max band and the table gives 95% bootstrap intervals"));
    repeats_->setValue(1);
    runForm->addRow(tr("Repeats:"), repeats_);
    processes_ = spin(runBox, QStringLiteral("processes"), 1, kMaxProcesses,
                      tr("Data parallel: this many processes, each training the batch below per step, gradients "
                         "all-reduced while the backward runs (Gloo on CPUs, NCCL on GPUs), with a 1-process run first "
                         "to measure the scaling efficiency"));
    processes_->setValue(1);
    runForm->addRow(formLabel("nproc"), processes_);
    return runBox;

}

QWidget* RunSetupPanel::buildFp8Group() {
    auto* fp8Box = new QGroupBox(tr("FP8 recipe"), this);
    auto* fp8Form = new QFormLayout(fp8Box);
    scaling_ = combo(fp8Box, QStringLiteral("recipe"),
                     {{tr("delayed (amax history)"), static_cast<int>(ScalingKind::Delayed)},
                      {tr("current (this tensor's amax)"), static_cast<int>(ScalingKind::Current)},
                      {tr("block (1×128 / 128×128 block scales)"), static_cast<int>(ScalingKind::Block)},
                      {tr("MXFP8 (1×32 scales, emulated)"), static_cast<int>(ScalingKind::Mxfp8)},
                      {tr("NVFP4 (4-bit, emulated)"), static_cast<int>(ScalingKind::Nvfp4)}},
                     tr("Delayed scaling derives each scale from earlier steps' amax history"));
    nameItems<ScalingKind>(scaling_);
    format_ = combo(fp8Box, QStringLiteral("fp8Format"),
                    {{tr("HYBRID (E4M3 forward, E5M2 backward)"), static_cast<int>(RecipeFormat::Hybrid)},
                     {tr("E4M3 (forward and backward)"), static_cast<int>(RecipeFormat::E4M3)}},
                    tr("FP8 formats of the forward and backward casts"));
    nameItems<RecipeFormat>(format_);
    historyLen_ = spin(fp8Box, QStringLiteral("amaxHistoryLen"), 0, 10'000'000, tr("Steps of amax history a scale looks at"));
    algo_ = combo(fp8Box, QStringLiteral("amaxAlgo"),
                  {{tr("max (of the history)"), static_cast<int>(AmaxAlgo::Max)},
                   {tr("most_recent"), static_cast<int>(AmaxAlgo::MostRecent)}},
                  tr("Which amax of the history sets the scale"));
    nameItems<AmaxAlgo>(algo_);
    margin_ = spin(fp8Box, QStringLiteral("margin"), -1000, 1000, tr("scale = (fp8_max / 2^margin) / amax"));
    inspect_ = new QCheckBox(settingLabel("inspect-fp8"), fp8Box);
    inspect_->setObjectName(QStringLiteral("inspectFp8"));
    inspect_->setToolTip(tr("Per cast slot and step: saturated and underflowed fractions, the quantization error (relative "
                            "MSE, SNR in dB) and what current and block scaling would have made of the same tensors. "
                            "Slows each step (the record says by how much); shown in the FP8 view's inspector"));
    fp8Form->addRow(formLabel("recipe"), scaling_);
    fp8Form->addRow(formLabel("fp8-format"), format_);
    fp8Form->addRow(formLabel("amax-history-len"), historyLen_);
    fp8Form->addRow(formLabel("amax-algo"), algo_);
    fp8Form->addRow(formLabel("margin"), margin_);
    fp8Form->addRow(inspect_);
    blockPow2_ = new QCheckBox(settingLabel("block-scales"), fp8Box);
    blockPow2_->setObjectName(QStringLiteral("blockScales"));
    blockPow2_->setChecked(true);
    blockPow2_->setToolTip(tr("Block scaling: round each block's scale down to a power of two (Transformer Engine's default); "
                              "off: exact float32 scales"));
    calibrate_ = new QCheckBox(settingLabel("calibrate-first-step"), fp8Box);
    calibrate_->setObjectName(QStringLiteral("calibrateFirstStep"));
    calibrate_->setChecked(true);
    calibrate_->setToolTip(tr("Delayed scaling: until the first scale update, each cast takes the scale its own amax gives. "
                              "Off: scale 1 in step 1, as Transformer Engine does, which quantizes the weights into "
                              "E4M3's subnormals and most gradients to zero for that step"));
    // A row each: side by side they made the form wider than the setup pane of a 1280-pixel window.
    fp8Form->addRow(calibrate_);
    fp8Form->addRow(blockPow2_);
    return fp8Box;

}

QWidget* RunSetupPanel::buildModelGroup() {
    auto* modelBox = new QGroupBox(tr("Model and steps"), this);
    auto* modelForm = new QFormLayout(modelBox);
    const int big = 100'000'000;
    // The lowest value a spin box offers is the least validation accepts (Layers 1, never 0); higher values
    // than validation accepts stay typeable so that the field can say what the limit is.
    const auto least = [](std::string_view id) { return static_cast<int>(setting(id).valid->min); };
    layers_ = spin(modelBox, QStringLiteral("layers"), least("layers"), big, tr("Transformer layers"));
    hidden_ = spin(modelBox, QStringLiteral("hidden"), least("hidden"), big, tr("Hidden size, a multiple of the head count"));
    heads_ = spin(modelBox, QStringLiteral("heads"), least("heads"), big, tr("Attention heads"));
    seq_ = spin(modelBox, QStringLiteral("seq"), least("seq"), big, tr("Sequence length in tokens"));
    vocab_ = spin(modelBox, QStringLiteral("vocab"), least("vocab"), big, tr("Vocabulary size: the synthetic data's, or one that covers the token file's largest token (256 for "
                                                                 "bytes)"));
    batch_ = spin(modelBox, QStringLiteral("batch"), least("batch"), big, tr("Sequences per step"));
    warmup_ = spin(modelBox, QStringLiteral("warmup"), least("warmup"), big,
                   tr("Steps before timing starts (dashed in the charts)"));
    iters_ = spin(modelBox, QStringLiteral("iters"), least("iters"), big, tr("Timed steps"));
    lr_ = new QLineEdit(modelBox);
    lr_->setObjectName(QStringLiteral("lr"));
    lr_->setToolTip(tr("AdamW learning rate"));
    seed_ = new QLineEdit(modelBox);
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setToolTip(tr("Seed of the weights and the synthetic data"));
    createArchitectureFields(modelBox);
    modelForm->addRow(formLabel("arch"), arch_);
    modelForm->addRow(formLabel("layers"), layers_);
    modelForm->addRow(formLabel("hidden"), hidden_);
    modelForm->addRow(formLabel("heads"), heads_);
    modelForm->addRow(formLabel("kv-heads"), kvHeads_);
    modelForm->addRow(formLabel("ffn"), ffn_);
    modelForm->addRow(formLabel("rope-base"), ropeBase_);
    modelForm->addRow(formLabel("seq"), seq_);
    modelForm->addRow(formLabel("vocab"), vocab_);
    modelForm->addRow(formLabel("batch"), batch_);
    modelForm->addRow(formLabel("warmup"), warmup_);
    modelForm->addRow(formLabel("iters"), iters_);
    modelForm->addRow(formLabel("lr"), lr_);
    modelForm->addRow(formLabel("seed"), seed_);
    return modelBox;

}

// Under the form's scroll area: the problems (a fixed-height area, so the form does not move when a message
// appears; several messages scroll inside it) and the action buttons.
QWidget* RunSetupPanel::buildActions() {
    auto* footer = new QWidget(this);
    footer->setObjectName(QStringLiteral("setupActions"));
    auto* layout = new QVBoxLayout(footer);
    layout->setContentsMargins(6, 4, 6, 4);
    problemsLabel_ = new QLabel(footer);
    problemsLabel_->setObjectName(QStringLiteral("problems"));
    problemsLabel_->setWordWrap(true);
    problemsLabel_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    problemsLabel_->setStyleSheet(QStringLiteral("color: #d32f2f;"));
    problemsLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* problemsArea = new QScrollArea(footer);
    problemsArea->setObjectName(QStringLiteral("problemsArea"));
    problemsArea->setWidgetResizable(true);
    problemsArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    problemsArea->setFrameShape(QFrame::NoFrame);
    problemsArea->setWidget(problemsLabel_);
    problemsArea->viewport()->setAutoFillBackground(false);  // the panel's own background: no empty box
    problemsLabel_->setAutoFillBackground(false);
    problemsArea->setFixedHeight(problemsLabel_->fontMetrics().lineSpacing() * kProblemLinesShown + 4);
    problemsArea_ = problemsArea;
    layout->addWidget(problemsArea);

    auto* buttons = new QHBoxLayout;
    add_ = new QPushButton(tr("Add to queue"), footer);
    add_->setObjectName(QStringLiteral("addToQueue"));
    add_->setToolTip(tr("Queue this configuration (Ctrl+Return)"));
    compare_ = new QPushButton(tr("Compare"), footer);
    compare_->setObjectName(QStringLiteral("compare"));
    compare_->setToolTip(tr("Queue the baseline and every TE/FP8 variant this device runs, with these sizes and steps "
                            "(Ctrl+Shift+Return)"));
    buttons->addWidget(add_);
    buttons->addWidget(compare_);
    layout->addLayout(buttons);
    return footer;
}

void RunSetupPanel::connectFields() {
    const auto edited = [this] {
        if (updating_) return;
        {
            const QSignalBlocker block(presets_);
            presets_->setCurrentIndex(presets_->findData(static_cast<int>(Custom)));
        }
        updateAvailability();
        validate();
    };
    for (QComboBox* box : {device_, backend_, precision_, teImpl_, scaling_, format_, algo_}) {
        connect(box, &QComboBox::currentIndexChanged, this, edited);
    }
    for (QSpinBox* box : {historyLen_, margin_, layers_, hidden_, heads_, seq_, vocab_, batch_, warmup_, iters_, processes_}) {
        connect(box, &QSpinBox::valueChanged, this, edited);
    }
    for (QLineEdit* line : {lr_, seed_, name_}) connect(line, &QLineEdit::textChanged, this, edited);
    connect(inspect_, &QCheckBox::toggled, this, edited);
    connect(repeats_, &QSpinBox::valueChanged, this, [this] {
        if (!updating_) validate();
    });
    connect(blockPow2_, &QCheckBox::toggled, this, edited);
    connect(calibrate_, &QCheckBox::toggled, this, edited);
    // Picking block, MXFP8 or NVFP4 scaling picks its own default format (core's default_recipe_format: E4M3, as
    // Transformer Engine's recipes); the user may change it back (NVFP4 then says it has one format). Leaving them
    // keeps the format chosen.
    connect(scaling_, &QComboBox::activated, this, [this] {
        const ScalingKind scaling = current<ScalingKind>(scaling_);
        if (scaling == ScalingKind::Block || is_microscaling(scaling)) {
            selectData(format_, static_cast<int>(default_recipe_format(scaling)));
        }
    });
    connect(cudaGraph_, &QCheckBox::toggled, this, edited);
    connectModelAndDataFields(edited);
    for (QWidget* widget : otherFields_) onSettingEdited(widget, this, edited);
    connect(presets_, &QComboBox::activated, this, [this](int index) {
        const int value = presets_->itemData(index).toInt();
        if (value != Custom) applyPreset(static_cast<Preset>(value));
    });
    connect(add_, &QPushButton::clicked, this, [this] {
        if (problems_.empty()) Q_EMIT addRequested(config());
    });
    connect(compare_, &QPushButton::clicked, this, [this] {
        if (!compare_->isEnabled()) return;
        RunConfig base = config();
        base.te_impl = teImplChoice();  // for the te rows; the plan gives the torch rows Auto
        Q_EMIT compareRequested(base);
    });
}

void RunSetupPanel::setDevice(const DeviceInfo& device, const Capability& capability) {
    device_info_ = device;
    capability_ = capability;
    updateAvailability();
    validate();
}

void RunSetupPanel::applyPreset(Preset preset) {
    RunConfig config = make_preset(preset);
    config.te_impl = teImplChoice();  // a preset sets sizes and steps, not the TE implementation
    setConfig(config);
    const QSignalBlocker block(presets_);
    selectData(presets_, static_cast<int>(preset));
}

namespace {

// Whether a setting of `c` applies to what `c` is: a torch configuration says nothing about the te modules, a gpt
// nothing about the llama's sizes, synthetic data nothing about a token file's settings, so their fields keep their
// choices for when they apply again (and a configuration read from the form leaves them at their defaults).
bool applies(const RunSetting& s, const RunConfig& c) {
    if (s.id == "te-impl") return c.backend == Backend::Te;
    if (s.use == SettingUse::Llama) return c.model.arch == Arch::Llama;
    if (s.use == SettingUse::DataFile && s.id != "data") return c.data.from_file();
    return true;
}

// setConfig shows a setting where it applies, and a te implementation a torch configuration still names.
bool shown(const RunSetting& s, const RunConfig& c) {
    return applies(s, c) || (s.id == "te-impl" && c.te_impl != TeImpl::Auto);
}

}  // namespace

void RunSetupPanel::setConfig(const RunConfig& c) {
    updating_ = true;
    for (const RunSetting& s : run_settings()) {
        QWidget* widget = field(std::string(s.id));
        if (widget != nullptr && shown(s, c)) writeSetting(widget, s, c);
    }
    showDataFileName();
    updating_ = false;
    {
        const QSignalBlocker block(presets_);
        presets_->setCurrentIndex(presets_->findData(static_cast<int>(Custom)));
    }
    updateAvailability();
    validate();
}

RunConfig RunSetupPanel::config() const {
    RunConfig c;
    // In the table's order, which lists backend before te-impl, arch before the llama's sizes and the file before its
    // settings: `c` so far says whether the next one applies.
    for (const RunSetting& s : run_settings()) {
        const QWidget* widget = field(std::string(s.id));
        if (widget != nullptr && applies(s, c)) readSetting(widget, s, c);
    }
    c.inspect_fp8 = c.inspect_fp8 && c.precision == Precision::Fp8;
    // One process is no job; a disabled field (one GPU) asks for none.
    if (!processes_->isEnabled() || c.dist.nproc <= 1) c.dist.nproc = 0;
    return c;
}

TeImpl RunSetupPanel::teImplChoice() const {
    return current<TeImpl>(teImpl_);
}

QWidget* RunSetupPanel::field(const std::string& name) const {
    const auto it = fields_.find(name);
    return it == fields_.end() ? nullptr : it->second;
}

QString RunSetupPanel::problemAt(const std::string& field) const {
    QStringList messages;
    for (const ConfigProblem& p : problems_) {
        const std::vector<std::string> named = settings_named(p.message);
        if (p.field == field || std::find(named.begin(), named.end(), field) != named.end()) messages << form_words(p.message);
    }
    messages.removeDuplicates();
    return messages.join(QLatin1Char('\n'));
}

void RunSetupPanel::updateAvailability() {
    const bool wasUpdating = updating_;
    updating_ = true;
    const DeviceInfo device = device_info_.value_or(DeviceInfo{});
    if (device_info_) {
        const Availability cuda = device_availability(DeviceKind::Cuda, device);
        setItemAvailable(device_, static_cast<int>(DeviceKind::Cuda), cuda.available, QString::fromStdString(cuda.reason));
    }
    if (!itemAvailable(device_, device_->currentIndex())) selectData(device_, static_cast<int>(DeviceKind::Auto));

    const QString teTip = capability_.te_capable
                              ? tr("Transformer-Engine-style modules; the run record says which implementation ran")
                              : tr("Transformer-Engine-style modules, run by their reference implementation (LibTorch "
                                   "ops) here: %1")
                                    .arg(QString::fromStdString(capability_.fallback_reason.empty() ? capability_.te_reason
                                                                                                    : capability_.fallback_reason));
    setItemAvailable(backend_, static_cast<int>(Backend::Te), true, teTip);

    const Backend backend = current<Backend>(backend_);
    const DeviceKind kind = current<DeviceKind>(device_);
    for (const Precision p : {Precision::Fp32, Precision::Bf16, Precision::Fp8}) {
        const Availability a = precision_availability(p, backend, kind, device);
        setItemAvailable(precision_, static_cast<int>(p), a.available, QString::fromStdString(a.reason));
    }
    if (!itemAvailable(precision_, precision_->currentIndex())) selectData(precision_, static_cast<int>(Precision::Auto));
    // The box's own tooltip says what applies to the backend chosen now (an unavailable item has its reason).
    const bool emulated_here = run_device(kind, device) == DeviceKind::Cpu || !capability_.fp8_capable;
    baseTips_["precision"] = backend == Backend::Torch
                                 ? tr("FP32 or BF16 (autocast) for the torch backend; FP8 needs the te backend")
                                 : emulated_here ? tr("FP32, BF16 or FP8 with the recipe below; FP8's GEMMs are emulated here "
                                                      "(real FP8 casts, GEMMs in higher precision), so its speed is not FP8's")
                                                 : tr("FP32, BF16 or FP8 with the recipe below, on FP8 tensor cores");
    precision_->setToolTip(baseTips_["precision"]);

    const bool fp8 = current<Precision>(precision_) == Precision::Fp8;
    for (const RunSetting& s : run_settings()) {  // the recipe's fields: the table's fp8 section
        if (QWidget* w = field(std::string(s.id)); w != nullptr && s.section == SettingSection::Fp8) w->setEnabled(fp8);
    }

    // The TE implementation applies to te runs; the box keeps its choice while torch is chosen.
    const Availability fused = te_impl_availability(TeImpl::Fused, kind, device);
    setItemAvailable(teImpl_, static_cast<int>(TeImpl::Fused), fused.available, QString::fromStdString(fused.reason));
    if (!itemAvailable(teImpl_, teImpl_->currentIndex())) selectData(teImpl_, static_cast<int>(TeImpl::Auto));
    const bool te = backend == Backend::Te;
    teImpl_->setEnabled(te);
    baseTips_["te-impl"] = te ? teImplTip_
                              : tr("Applies to the te backend only: the torch backend runs plain LibTorch modules, with no TE "
                                   "implementation to choose. Compare still applies it to its te rows.");
    teImpl_->setToolTip(baseTips_["te-impl"]);

    // A graph needs the run on a GPU; the box keeps its state so that it applies again when one is chosen.
    const bool on_gpu = run_device(kind, device) == DeviceKind::Cuda;
    cudaGraph_->setEnabled(on_gpu);
    baseTips_["cuda-graph"] = on_gpu ? tr("After the warm-up, capture forward, backward, the FP8 scale updates and AdamW once "
                                       "and replay them per step: no per-kernel launch cost. The record says whether a "
                                       "graph ran.")
                                  : tr("CPU runs are eager: a CUDA graph needs the run on a GPU");
    cudaGraph_->setToolTip(baseTips_["cuda-graph"]);

    // One process per GPU: several need several GPUs, or CPU processes.
    const bool on_cpu = !on_gpu;
    const bool processes = on_cpu || device.gpu_count > 1;
    processes_->setEnabled(processes);
    baseTips_["nproc"] = processes ? tr("Data parallel: this many processes, each training the batch below per step, gradients "
                                        "all-reduced while the backward runs (Gloo on CPUs, NCCL on GPUs), with a 1-process "
                                        "run first to measure the scaling efficiency")
                                   : tr("This machine has one GPU, and a data-parallel job needs one per process: choose the "
                                        "CPU device for a job of CPU processes");
    processes_->setToolTip(baseTips_["nproc"]);
    updateModelAndDataFields();
    updating_ = wasUpdating;
}

void RunSetupPanel::markField(const std::string& field, const QString& message) {
    QWidget* w = this->field(field);
    if (!w) return;
    const bool bad = !message.isEmpty();
    if (w->property("problem").toBool() != bad) {
        w->setProperty("problem", bad);
        w->style()->unpolish(w);
        w->style()->polish(w);
        if (auto* spin = qobject_cast<QAbstractSpinBox*>(w)) {
            if (bad) {
                QPalette tinted = spin->palette();
                const QColor base = tinted.color(QPalette::Base);
                const QColor red(0xd3, 0x2f, 0x2f);
                tinted.setColor(QPalette::Base, QColor::fromRgbF(0.75f * base.redF() + 0.25f * red.redF(),
                                                                 0.75f * base.greenF() + 0.25f * red.greenF(),
                                                                 0.75f * base.blueF() + 0.25f * red.blueF()));
                spin->setPalette(tinted);
            } else {
                spin->setPalette(QPalette());  // back to the inherited palette (the theme's)
            }
        }
    }
    w->setToolTip(bad ? message : baseTips_[field]);
}

void RunSetupPanel::fitProblems() {
    // Three lines when there is little to say (the form does not move for one short message); up to eight so that
    // two long messages show whole; more scroll inside.
    const int line = problemsLabel_->fontMetrics().lineSpacing();
    const int width = std::max(100, problemsArea_->viewport()->width());
    const int needed = problemsLabel_->text().isEmpty() ? 0 : problemsLabel_->heightForWidth(width);
    problemsArea_->setFixedHeight(std::clamp(needed, line * kProblemLinesShown, line * kProblemLinesMost) + 4);
}

void RunSetupPanel::validate() {
    const RunConfig c = config();
    std::vector<ConfigProblem> found;
    // Text fields first: a value that does not parse is refused with core's parser message.
    try {
        parse_double("--lr", lr_->text().trimmed().toStdString());
    } catch (const ConfigError& e) {
        found.push_back({"lr", e.what()});
    }
    try {
        parse_uint64("--seed", seed_->text().trimmed().toStdString());
    } catch (const ConfigError& e) {
        found.push_back({"seed", e.what()});
    }
    findModelAndDataProblems(found);
    for (ConfigProblem& p : find_problems(c)) {
        if (p.field == "inspect-fp8") continue;  // the checkbox is disabled unless FP8 is chosen
        found.push_back(std::move(p));
    }
    if (device_info_) {
        if (const Availability a = device_availability(c.device, *device_info_); !a.available) {
            found.push_back({"device", a.reason});
        }
        if (const Availability a = precision_availability(c.precision, c.backend, c.device, *device_info_);
            !a.available && c.backend == Backend::Te) {
            found.push_back({"precision", a.reason});
        }
    }
    if (c.dist.enabled() && repeats_->value() > 1) {
        found.push_back({"nproc", "Processes " + std::to_string(c.dist.nproc) +
                                      " with Repeats " + std::to_string(repeats_->value()) +
                                      ": a data-parallel job runs once; allowed with several processes: Repeats 1"});
    }
    problems_ = std::move(found);

    for (const auto& [field, widget] : fields_) markField(field, problemAt(field));
    QStringList lines;
    for (const ConfigProblem& p : problems_) lines << form_words(p.message);
    problemsLabel_->setText(lines.join(QLatin1Char('\n')));
    fitProblems();
    add_->setEnabled(problems_.empty() && device_info_.has_value());
    // Compare sets backend and precision per row itself: only the shared settings must be valid.
    const bool sharedValid = std::all_of(problems_.begin(), problems_.end(), [](const ConfigProblem& p) {
        return p.field == "precision" || p.field == "backend" || p.field == "name";
    });
    compare_->setEnabled(sharedValid && device_info_.has_value());
    Q_EMIT configChanged();
}

int RunSetupPanel::repeats() const {
    return repeats_->value();
}

void RunSetupPanel::setRepeats(int repeats) {
    repeats_->setValue(std::clamp(repeats, 1, kMaxRepeats));
}

}  // namespace tewb::ui
