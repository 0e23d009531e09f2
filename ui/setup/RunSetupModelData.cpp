// The run setup's architecture fields (gpt | llama and the llama's sizes) and its data group (the token file, its
// format, the held-out fraction and how often its loss is evaluated).
#include <algorithm>
#include <optional>
#include <string>

#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "core/common/Error.h"
#include "core/config/RunConfig.h"
#include "core/data/TokenFile.h"
#include "ui/common/RememberedFolder.h"
#include "ui/setup/FormFields.h"
#include "ui/setup/SettingFields.h"
#include "ui/setup/RunSetupPanel.h"

namespace tewb::ui {

namespace {

// A path set into the narrow field shows its file name from its first letter (the field showed the path's tail,
// "-tokens.txt"): the end is scrolled into view first, then the cursor goes back to where the name starts, so the
// field scrolls left just enough for the name to begin at its left edge (or shows all of it). The full path is
// the field's tooltip.
void show_file_name(QLineEdit* field) {
    const QString path = field->text();
    const qsizetype slash = std::max(path.lastIndexOf(QLatin1Char('/')), path.lastIndexOf(QLatin1Char('\\')));
    field->setCursorPosition(static_cast<int>(path.size()));
    field->setCursorPosition(static_cast<int>(slash + 1));
}

}  // namespace


using namespace form;

namespace {

constexpr int kBig = 100'000'000;

// Why the file cannot be trained on as far as its size and header tell (read from its first bytes, so a 10 GB file
// is checked at once): missing, not a file, unreadable, empty, badly formed for its format, or too short for one
// step's batch or for one held-out sequence. In core's words ("--data …"), which the form puts in its own.
std::optional<std::string> token_file_problem(const QString& path, TokenFormat format, double valFraction, int seq,
                                              std::int64_t globalBatch) {
    const std::string what = "--data " + path.toStdString();
    const QFileInfo info(path);
    if (!info.exists()) return what + ": no such file";
    if (!info.isFile()) return what + ": not a regular file; allowed: a file of tokens";
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return what + ": cannot be read (" + file.errorString().toStdString() + ")";
    const QByteArray head = file.read(kLlmcHeaderBytes);
    TokenLayout layout;
    try {
        layout = token_layout(what, info.fileName().toStdString(), static_cast<std::uint64_t>(info.size()),
                              std::string_view(head.constData(), static_cast<std::size_t>(head.size())), format);
    } catch (const ConfigError& e) {
        return std::string(e.what());
    }
    if (valFraction <= 0 || valFraction > 0.5) return std::nullopt;  // core's range check says so at its field
    const std::int64_t window = static_cast<std::int64_t>(seq) + 1;
    const std::int64_t held = validation_tokens(layout.tokens, valFraction);
    const std::int64_t train = layout.tokens - held;
    if (train < globalBatch * window) {
        return what + ": " + std::to_string(layout.tokens) + " tokens leave " + std::to_string(train) +
               " for training, fewer than one step's batch of " + std::to_string(globalBatch * window) +
               " (--batch × (--seq + 1)); allowed: a longer file, or a smaller --batch or --seq";
    }
    if (held < window) {
        return what + ": the held-out tail (--val-fraction " + QString::number(valFraction).toStdString() + ") holds " +
               std::to_string(held) + " tokens, fewer than one sequence of " + std::to_string(window) +
               " (--seq + 1); allowed: a longer file or a larger --val-fraction";
    }
    return std::nullopt;
}

}  // namespace

void RunSetupPanel::createArchitectureFields(QWidget* parent) {
    arch_ = combo(parent, QStringLiteral("arch"),
                  {{tr("gpt (LayerNorm, GELU, learned positions)"), static_cast<int>(Arch::Gpt)},
                   {tr("llama (RMSNorm, SwiGLU, rotary, grouped-query attention)"), static_cast<int>(Arch::Llama)}},
                  tr("gpt: the seed's MiniGPT (learned positions, pre-LayerNorm with biases, 4× GELU MLP, multi-head "
                     "attention). llama: pre-RMSNorm without biases, SwiGLU MLP, rotary position embeddings and "
                     "grouped-query attention, the blocks Llama-style models train with (Transformer Engine: "
                     "normalization=\"RMSNorm\", activation=\"swiglu\", num_gqa_groups)"));
    nameItems<Arch>(arch_);
    kvHeads_ = spin(parent, QStringLiteral("kvHeads"), 0, kBig, QString());
    ffn_ = spin(parent, QStringLiteral("ffn"), 0, kBig, QString());
    ffn_->setSingleStep(64);
    ropeBase_ = new QLineEdit(parent);
    ropeBase_->setObjectName(QStringLiteral("ropeBase"));
    ropeBase_->setText(realText(kDefaultRopeBase));
    llamaTips_ = {
        {"kv-heads", tr("Grouped-query attention: the key/value heads, each shared by Heads ÷ KV heads query heads; it must "
                        "divide Heads. Equal to Heads (or \"as Heads\") is ordinary multi-head attention; fewer shrink the "
                        "K and V projections and the KV cache.")},
        {"ffn", tr("The SwiGLU's intermediate size: its gate and up projections are each this wide, the down projection "
                   "reads it. Auto: 8/3 × hidden rounded up to a multiple of 64, which keeps the MLP's parameters near a 4× "
                   "GELU MLP's; a size of your own must be a multiple of 64.")},
        {"rope-base", tr("Rotary position embeddings (rotate-half, as Llama): each head's dimension pairs (i, i + d/2) are "
                         "rotated by the angle position · base^(−2i/d). A larger base stretches the longest wavelength "
                         "(Llama 2: 10000, Llama 3: 500000).")}};
}

QWidget* RunSetupPanel::buildDataGroup() {
    auto* dataBox = new QGroupBox(tr("Data"), this);
    auto* dataForm = new QFormLayout(dataBox);
    dataPath_ = new QLineEdit(dataBox);
    dataPath_->setObjectName(QStringLiteral("dataPath"));
    dataPath_->setPlaceholderText(tr("Synthetic tokens"));
    dataPath_->setClearButtonEnabled(true);
    dataPath_->setToolTip(tr("Train on this file's tokens instead of synthetic ones (empty: synthetic tokens). The file is "
                             "read where a batch needs it, so a 10 GB file costs no memory; batches come from seeded random offsets, "
                             "so a run is reproducible. The record keeps the file's name, size and SHA-256, never its "
                             "contents."));
    browse_ = new QPushButton(tr("Browse…"), dataBox);
    browse_->setObjectName(QStringLiteral("browseData"));
    browse_->setToolTip(tr("Choose the token file (the dialog starts in the last folder a file was chosen in)"));
    auto* pathRow = new QHBoxLayout;
    pathRow->setContentsMargins(0, 0, 0, 0);
    dataPath_->setMinimumWidth(60);  // the setup pane is narrow: the path scrolls inside its field
    pathRow->addWidget(dataPath_, 1);
    pathRow->addWidget(browse_);
    dataFormat_ = combo(dataBox, QStringLiteral("dataFormat"),
                        {{tr("auto (from the file)"), static_cast<int>(TokenFormat::Auto)},
                         {tr("bytes (any file, vocabulary 256)"), static_cast<int>(TokenFormat::Bytes)},
                         {tr("uint16 (nanoGPT)"), static_cast<int>(TokenFormat::Uint16)},
                         {tr("llmc (llm.c, with header)"), static_cast<int>(TokenFormat::Llmc)}},
                        QString());
    nameItems<TokenFormat>(dataFormat_);
    valFraction_ = new QDoubleSpinBox(dataBox);
    valFraction_->setObjectName(QStringLiteral("valFraction"));
    valFraction_->setRange(0.0, 0.99);
    valFraction_->setDecimals(3);
    valFraction_->setSingleStep(0.01);
    valFraction_->setKeyboardTracking(true);
    valFraction_->setValue(DataSettings{}.val_fraction);  // what a file chosen in a fresh form starts with
    evalEvery_ = spin(dataBox, QStringLiteral("evalEvery"), 0, kBig, QString());
    evalEvery_->setSpecialValueText(tr("auto (5 per run)"));
    dataTips_ = {
        {"data-format", tr("auto: llm.c's header when its magic number is there, else a .bin file as uint16, else bytes. "
                           "bytes: any file, UTF-8 text included, as byte-level tokens (vocabulary 256). uint16: nanoGPT's "
                           "token files (raw little-endian uint16). llmc: llm.c's token files (a header of 256 int32 with "
                           "its magic number, version and token count, then the tokens). The vocabulary must cover the "
                           "largest token; that is checked before training.")},
        {"val-fraction", tr("The file's held-out tail, never trained on: its loss is evaluated during the run, plotted "
                            "beside the training loss and compared between runs in the report.")},
        {"eval-every", tr("Steps between evaluations of the held-out loss (the last step always evaluates); auto: five "
                          "evaluations over the run.")}};
    dataForm->addRow(formLabel("data"), pathRow);
    dataForm->addRow(formLabel("data-format"), dataFormat_);
    dataForm->addRow(formLabel("val-fraction"), valFraction_);
    dataForm->addRow(formLabel("eval-every"), evalEvery_);
    connect(browse_, &QPushButton::clicked, this, &RunSetupPanel::chooseTokenFile);
    return dataBox;
}

void RunSetupPanel::connectModelAndDataFields(const std::function<void()>& edited) {
    connect(arch_, &QComboBox::currentIndexChanged, this, edited);
    connect(dataFormat_, &QComboBox::currentIndexChanged, this, edited);
    for (QSpinBox* box : {kvHeads_, ffn_, evalEvery_}) connect(box, &QSpinBox::valueChanged, this, edited);
    connect(valFraction_, &QDoubleSpinBox::valueChanged, this, edited);
    for (QLineEdit* line : {ropeBase_, dataPath_}) connect(line, &QLineEdit::textChanged, this, edited);
    connect(dataPath_, &QLineEdit::editingFinished, this, [this] { show_file_name(dataPath_); });
}

void RunSetupPanel::chooseTokenFile() {
    const QString path = choose_open_file(this, tr("Choose a token file"),
                                          tr("Token files (*.bin *.txt *.tokens);;All files (*)"));
    if (!path.isEmpty()) {
        dataPath_->setText(path);
        show_file_name(dataPath_);
    }
}

void RunSetupPanel::showDataFileName() {
    show_file_name(dataPath_);
}

// The llama's fields are enabled for llama only, the data fields with a file only; the automatic values are shown
// in the fields themselves.
void RunSetupPanel::updateModelAndDataFields() {
    const bool llama = current<Arch>(arch_) == Arch::Llama;
    const QString gptOnly = tr("Llama only: choose Architecture llama. The gpt has as many key/value heads as heads, a 4× "
                               "GELU MLP and learned positions.");
    for (const auto& [id, widget] : std::initializer_list<std::pair<std::string, QWidget*>>{
             {"kv-heads", kvHeads_}, {"ffn", ffn_}, {"rope-base", ropeBase_}}) {
        widget->setEnabled(llama);
        baseTips_[id] = llama ? llamaTips_[id] : gptOnly;
    }
    kvHeads_->setSpecialValueText(tr("as Heads (%1)").arg(heads_->value()));
    ModelShape shape;
    shape.arch = Arch::Llama;
    shape.hidden = hidden_->value();
    ffn_->setSpecialValueText(tr("auto (%1)").arg(ffn_hidden(shape)));

    const bool file = !dataPath_->text().trimmed().isEmpty();
    for (const auto& [id, widget] : std::initializer_list<std::pair<std::string, QWidget*>>{
             {"data-format", dataFormat_}, {"val-fraction", valFraction_}, {"eval-every", evalEvery_}}) {
        widget->setEnabled(file);
        baseTips_[id] = file ? dataTips_[id] : tr("Applies to a token file: choose one above (empty: synthetic tokens).");
    }
}

// What the form itself finds before core looks: a RoPE base that does not parse, and a token file that cannot be
// trained on (core's own reading of its size and header; its tokens against the vocabulary are checked when the run
// reads the whole file, before training).
void RunSetupPanel::findModelAndDataProblems(std::vector<ConfigProblem>& found) const {
    if (current<Arch>(arch_) == Arch::Llama) {
        try {
            parse_double("--rope-base", ropeBase_->text().trimmed().toStdString());
        } catch (const ConfigError& e) {
            found.push_back({"rope-base", e.what()});
        }
    }
    const QString path = dataPath_->text().trimmed();
    if (path.isEmpty()) return;
    const int ranks = processes_->isEnabled() ? processes_->value() : 1;
    if (auto problem = token_file_problem(path, current<TokenFormat>(dataFormat_), valFraction_->value(), seq_->value(),
                                          static_cast<std::int64_t>(batch_->value()) * ranks)) {
        found.push_back({"data", std::move(*problem)});
    }
}

}  // namespace tewb::ui
