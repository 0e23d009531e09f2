#include <QtTest>
#include <QAbstractScrollArea>
#include <QApplication>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFormLayout>
#include <QTemporaryDir>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QApplication>
#include <QWheelEvent>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardItemModel>

#include "UiTestSupport.h"
#include "../helpers/TestSettingRow.h"
#include "core/config/RunSettings.h"
#include "core/device/Capability.h"
#include "ui/runs/RunCollection.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"

using namespace tewb;
using namespace tewb::ui;

namespace {

QStandardItem* itemOf(QComboBox* box, int value) {
    auto* model = qobject_cast<QStandardItemModel*>(box->model());
    return model->item(box->findData(value));
}

void choose(QComboBox* box, int value) {
    box->setCurrentIndex(box->findData(value));
}

template <typename Enum>
Enum current(const QComboBox* box) {
    return static_cast<Enum>(box->currentData().toInt());
}

}  // namespace

class TestRunSetup : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The run setup's TE implementation goes to a te sweep's rows; a torch sweep takes none (an explicit one on
    // torch runs is refused), so choosing Fused in the setup never blocks a torch sweep.
    void aTorchSweepIgnoresTheTeImplementation() {
        RunCollection runs;
        RunCollection sweepRuns;
        SweepPanel sweep(&runs, &sweepRuns);
        auto* backend = sweep.findChild<QComboBox*>(QStringLiteral("sweepBackend"));
        QVERIFY(backend != nullptr && backend->count() == 2);  // te and torch
        RunConfig base = make_preset(Preset::QuickCpu);
        base.te_impl = TeImpl::Fused;
        auto* baseline = sweep.findChild<QComboBox*>(QStringLiteral("sweepBaseline"));
        QVERIFY(baseline != nullptr && baseline->count() == 2);  // torch (first: the default) and te
        QCOMPARE(static_cast<Backend>(baseline->currentData().toInt()), Backend::Torch);
        for (int b = 0; b < baseline->count(); ++b) {
            baseline->setCurrentIndex(b);
            for (int i = 0; i < backend->count(); ++i) {
                backend->setCurrentIndex(i);
                const SweepSpec spec = sweep.spec(base);
                QCOMPARE(spec.baseline_backend, static_cast<Backend>(baseline->currentData().toInt()));
                const bool any_te = spec.backend == Backend::Te || spec.baseline_backend == Backend::Te;
                QCOMPARE(spec.base.te_impl, any_te ? TeImpl::Fused : TeImpl::Auto);
            }
        }
    }

    // A setting is one row (tests/app/tst_run_settings: te-bench, validation, record, command line): added to the table
    // and nothing else, it gets a field in the form, made from the row (kind, range, label, help), that the form's
    // configuration reads and writes and whose problems it marks in the form's words.
    void aSettingRowGetsAField() {
        std::int64_t& knob = test::test_knob;
        knob = 7;
        const ExtraRunSetting extra(test::test_knob_row());
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        auto* field = qobject_cast<QSpinBox*>(panel.field("test-knob"));
        QVERIFY(field != nullptr);
        QCOMPARE(field->minimum(), 1);
        QCOMPARE(field->toolTip(), QStringLiteral("a knob only this test has"));
        auto* rows = qobject_cast<QFormLayout*>(field->parentWidget()->layout());
        QVERIFY(rows != nullptr);
        auto* label = qobject_cast<QLabel*>(rows->labelForField(field));
        QVERIFY(label != nullptr);
        QCOMPARE(label->text(), QStringLiteral("Test knob:"));

        knob = 42;
        panel.setConfig(make_preset(Preset::QuickCpu));
        QCOMPARE(field->value(), 42);
        field->setValue(13);
        knob = 7;
        panel.config();
        QCOMPARE(knob, std::int64_t{13});

        field->setValue(100);
        QVERIFY2(panel.problemAt("test-knob").contains(QStringLiteral("Test knob 100: out of range; allowed: 1 to 99")),
                 qPrintable(panel.problemAt("test-knob")));
        QVERIFY(!panel.addButton()->isEnabled());
        field->setValue(13);
        QVERIFY(panel.problemAt("test-knob").isEmpty());
    }

    void noGpu() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QStandardItem* cuda = itemOf(panel.deviceBox(), static_cast<int>(DeviceKind::Cuda));
        QVERIFY(!cuda->isEnabled());
        // A machine without an NVIDIA driver: said plainly, no CUDA error quoted (it reads "driver insufficient" there).
        QVERIFY2(cuda->toolTip().contains(QStringLiteral("this machine has no NVIDIA GPU")), qPrintable(cuda->toolTip()));
        QVERIFY(!cuda->toolTip().contains(QStringLiteral("cudaErrorNoDevice")));
        QVERIFY(itemOf(panel.deviceBox(), static_cast<int>(DeviceKind::Cpu))->isEnabled());

        // te FP8 on the CPU is emulated but runs; torch has no FP8 path. The precision box's tooltip follows the backend.
        choose(panel.backendBox(), static_cast<int>(Backend::Torch));
        QVERIFY2(panel.precisionBox()->toolTip().contains(QStringLiteral("FP8 needs the te backend")),
                 qPrintable(panel.precisionBox()->toolTip()));
        choose(panel.backendBox(), static_cast<int>(Backend::Te));
        QVERIFY2(!panel.precisionBox()->toolTip().contains(QStringLiteral("needs the te backend")) &&
                     panel.precisionBox()->toolTip().contains(QStringLiteral("emulated here")),
                 qPrintable(panel.precisionBox()->toolTip()));
        QVERIFY(itemOf(panel.precisionBox(), static_cast<int>(Precision::Fp8))->isEnabled());
        choose(panel.precisionBox(), static_cast<int>(Precision::Fp8));
        QVERIFY(panel.field("amax-history-len")->isEnabled());
        QVERIFY(panel.problems().empty());
        choose(panel.backendBox(), static_cast<int>(Backend::Torch));
        QStandardItem* fp8 = itemOf(panel.precisionBox(), static_cast<int>(Precision::Fp8));
        QVERIFY(!fp8->isEnabled());
        QVERIFY(fp8->toolTip().contains(QStringLiteral("the torch backend has no FP8 path")));
        QCOMPARE(panel.config().precision, Precision::Auto);  // moved off the option that became unavailable
        QVERIFY(!panel.field("amax-history-len")->isEnabled());
        QVERIFY(!panel.field("inspect-fp8")->isEnabled());
        // No GPU: the CUDA graph switch is greyed out with the reason, and keeps its state.
        QWidget* graph = panel.field("cuda-graph");
        QVERIFY(graph);
        QVERIFY(!graph->isEnabled());
        QVERIFY2(graph->toolTip().contains(QStringLiteral("CPU runs are eager")), qPrintable(graph->toolTip()));
    }

    void computeCapability80() {
        RunSetupPanel panel;
        const DeviceInfo device = test::gpu(8, 0, "NVIDIA A100-SXM4-80GB");
        panel.setDevice(device, classify(device));
        QVERIFY(itemOf(panel.deviceBox(), static_cast<int>(DeviceKind::Cuda))->isEnabled());
        choose(panel.deviceBox(), static_cast<int>(DeviceKind::Auto));
        choose(panel.backendBox(), static_cast<int>(Backend::Te));
        QStandardItem* fp8 = itemOf(panel.precisionBox(), static_cast<int>(Precision::Fp8));
        QVERIFY(!fp8->isEnabled());
        QVERIFY2(fp8->toolTip().contains(QStringLiteral("compute capability 8.0 and FP8 needs 8.9")), qPrintable(fp8->toolTip()));
        QVERIFY(itemOf(panel.precisionBox(), static_cast<int>(Precision::Bf16))->isEnabled());
        // On the CPU the same GPU's machine can still emulate FP8.
        choose(panel.deviceBox(), static_cast<int>(DeviceKind::Cpu));
        QVERIFY(itemOf(panel.precisionBox(), static_cast<int>(Precision::Fp8))->isEnabled());
        QVERIFY(itemOf(panel.backendBox(), static_cast<int>(Backend::Te))->toolTip().contains(QStringLiteral("implementation")));
    }

    void computeCapability90() {
        RunSetupPanel panel;
        const DeviceInfo device = test::gpu(9, 0, "NVIDIA H200");
        panel.setDevice(device, classify(device));
        choose(panel.deviceBox(), static_cast<int>(DeviceKind::Cuda));
        choose(panel.backendBox(), static_cast<int>(Backend::Te));
        QVERIFY(itemOf(panel.precisionBox(), static_cast<int>(Precision::Fp8))->isEnabled());
        choose(panel.precisionBox(), static_cast<int>(Precision::Fp8));
        QVERIFY(panel.problems().empty());
        QVERIFY(panel.addButton()->isEnabled());
        QSignalSpy added(&panel, &RunSetupPanel::addRequested);
        panel.addButton()->click();
        QCOMPARE(added.count(), 1);
        const RunConfig config = added.front().front().value<RunConfig>();
        QCOMPARE(config.device, DeviceKind::Cuda);
        QCOMPARE(config.precision, Precision::Fp8);
        QCOMPARE(config.backend, Backend::Te);
        QCOMPARE(config.fp8, Fp8Recipe::seed_defaults());
        QVERIFY(config.cuda_graph);  // on by default

        auto* calibrate = qobject_cast<QCheckBox*>(panel.field("calibrate-first-step"));
        QVERIFY(calibrate && calibrate->isEnabled() && calibrate->isChecked());
        calibrate->setChecked(false);
        QVERIFY(!panel.config().fp8.calibrate_first_step);
        RunConfig calibrated = panel.config();
        calibrated.fp8.calibrate_first_step = true;
        panel.setConfig(calibrated);
        QVERIFY(calibrate->isChecked());

        auto* graph = qobject_cast<QCheckBox*>(panel.field("cuda-graph"));
        QVERIFY(graph && graph->isEnabled());
        graph->setChecked(false);
        QVERIFY(!panel.config().cuda_graph);
        RunConfig loaded = panel.config();
        loaded.cuda_graph = true;
        panel.setConfig(loaded);
        QVERIFY(graph->isChecked());
        choose(panel.deviceBox(), static_cast<int>(DeviceKind::Cpu));
        QVERIFY(!graph->isEnabled());
    }

    void invalidValuesAreRefusedAtTheFieldWithCoresMessage() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QVERIFY(panel.addButton()->isEnabled());
        auto* hidden = qobject_cast<QSpinBox*>(panel.field("hidden"));
        hidden->setValue(130);  // not a multiple of 4 heads
        // In the form's words, not te-bench's flags, and both fields of the conflict are marked.
        const QString message = panel.problemAt("hidden");
        QVERIFY2(message.startsWith(QStringLiteral("Hidden size 130: not divisible by Heads 4")), qPrintable(message));
        QVERIFY2(!message.contains(QStringLiteral("--")), qPrintable(message));
        QCOMPARE(hidden->toolTip(), message);
        QVERIFY(hidden->property("problem").toBool());
        QWidget* heads = panel.field("heads");
        QVERIFY(heads->property("problem").toBool());
        QCOMPARE(panel.problemAt("heads"), message);
        QVERIFY(!panel.field("layers")->property("problem").toBool());
        QVERIFY(!panel.addButton()->isEnabled());
        QVERIFY(!panel.compareButton()->isEnabled());
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("problems"))->text().contains(QStringLiteral("Hidden size 130")));
        QSignalSpy added(&panel, &RunSetupPanel::addRequested);
        panel.addButton()->click();
        QCOMPARE(added.count(), 0);
        hidden->setValue(128);
        QVERIFY(!hidden->property("problem").toBool());
        QVERIFY(!heads->property("problem").toBool());
        QVERIFY(panel.addButton()->isEnabled());

        auto* lr = qobject_cast<QLineEdit*>(panel.field("lr"));
        lr->setText(QStringLiteral("fast"));
        QVERIFY2(panel.problemAt("lr").startsWith(QStringLiteral("Learning rate 'fast'")), qPrintable(panel.problemAt("lr")));
        lr->setText(QStringLiteral("20"));
        QVERIFY(panel.problemAt("lr").contains(QStringLiteral("at most 10")));
        lr->setText(QStringLiteral("0.001"));
        qobject_cast<QLineEdit*>(panel.field("seed"))->setText(QStringLiteral("-5"));
        QVERIFY(!panel.problemAt("seed").isEmpty());
        qobject_cast<QLineEdit*>(panel.field("seed"))->setText(QStringLiteral("7"));
        // Layers offers no value below 1; above 256 the field says what is allowed.
        auto* layers = qobject_cast<QSpinBox*>(panel.field("layers"));
        QCOMPARE(layers->minimum(), 1);
        layers->setValue(0);
        QCOMPARE(layers->value(), 1);
        layers->setValue(300);
        QVERIFY2(panel.problemAt("layers").startsWith(QStringLiteral("Layers 300: out of range; allowed: 1 to 256")),
                 qPrintable(panel.problemAt("layers")));
        layers->setValue(2);
        QVERIFY(panel.problems().empty());

        // Recipe fields, with FP8 chosen.
        choose(panel.backendBox(), static_cast<int>(Backend::Te));
        choose(panel.precisionBox(), static_cast<int>(Precision::Fp8));
        qobject_cast<QSpinBox*>(panel.field("amax-history-len"))->setValue(0);
        QVERIFY(panel.problemAt("amax-history-len").startsWith(QStringLiteral("Amax history length 0")));
        qobject_cast<QSpinBox*>(panel.field("amax-history-len"))->setValue(16);
        choose(qobject_cast<QComboBox*>(panel.field("recipe")), static_cast<int>(ScalingKind::Current));
        qobject_cast<QSpinBox*>(panel.field("margin"))->setValue(2);
        QVERIFY2(!panel.problemAt("margin").isEmpty(), "current scaling with a margin is refused");
        // The margin's conflict is with the scaling: both are marked.
        QVERIFY(panel.field("recipe")->property("problem").toBool());
        qobject_cast<QSpinBox*>(panel.field("margin"))->setValue(0);
        QVERIFY(panel.problems().empty());
        qobject_cast<QCheckBox*>(panel.field("inspect-fp8"))->setChecked(true);
        QVERIFY(panel.config().inspect_fp8);
    }

    // The name field takes core's rule for names: a bidirectional control (the name would show in another order
    // than it is stored) is refused at the field with the character and its position, as a control character is.
    void badNamesAreRefusedAtTheField() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        auto* name = qobject_cast<QLineEdit*>(panel.field("name"));
        QVERIFY(name != nullptr);
        QSignalSpy added(&panel, &RunSetupPanel::addRequested);
        const QString bidi = QStringLiteral("bidirectional control character ");
        for (const auto& [text, expected] :
             {std::pair{QStringLiteral("run\u202Egpj.exe"),
                        bidi + QStringLiteral("(U+202E RIGHT-TO-LEFT OVERRIDE at character 4)")},
              std::pair{QStringLiteral("\u2066fp8\u2069 run"),
                        bidi + QStringLiteral("(U+2066 LEFT-TO-RIGHT ISOLATE at character 1)")},
              std::pair{QStringLiteral("te\u200Fbf16"), bidi + QStringLiteral("(U+200F RIGHT-TO-LEFT MARK at character 3)")},
              std::pair{QStringLiteral("a\u061Cb"), bidi + QStringLiteral("(U+061C ARABIC LETTER MARK at character 2)")},
              std::pair{QStringLiteral("a\x1b[2Jb"), QStringLiteral("control character (U+001B at character 2)")}}) {
            name->setText(text);
            const QString message = panel.problemAt("name");
            QVERIFY2(message.startsWith(QStringLiteral("Name: contains a ") + expected), qPrintable(message));
            QVERIFY2(message.contains(QStringLiteral("allowed:")), qPrintable(message));
            QVERIFY(name->property("problem").toBool());
            QVERIFY(!panel.addButton()->isEnabled());
            panel.addButton()->click();
            QCOMPARE(added.count(), 0);
        }
        name->setText(QStringLiteral("\u05E9\u05DC\u05D5\u05DD te fp8"));  // right-to-left letters are text
        QVERIFY2(panel.problems().empty(), qPrintable(panel.problemAt("name")));
        QVERIFY(panel.addButton()->isEnabled());
    }

    // The TE implementation: TEWB_TE_IMPL its default, set into te configurations, greyed out with the reason for
    // torch (where the configuration says auto), Fused unavailable on a GPU below compute capability 8.0.
    void teImplChoiceSetsTheConfigOfTeRuns() {
        qputenv("TEWB_TE_IMPL", "reference");
        RunSetupPanel fromEnvironment;
        qunsetenv("TEWB_TE_IMPL");
        QCOMPARE(current<TeImpl>(fromEnvironment.teImplBox()), TeImpl::Reference);

        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QComboBox* box = panel.teImplBox();
        QCOMPARE(current<TeImpl>(box), TeImpl::Auto);
        QCOMPARE(panel.field("te-impl"), static_cast<QWidget*>(box));
        choose(panel.backendBox(), static_cast<int>(Backend::Te));
        QVERIFY(box->isEnabled());
        choose(box, static_cast<int>(TeImpl::Fused));
        QCOMPARE(panel.config().te_impl, TeImpl::Fused);
        QVERIFY(panel.problems().empty());
        QVERIFY(itemOf(box, static_cast<int>(TeImpl::Fused))->isEnabled());  // on the CPU: the host kernels
        choose(box, static_cast<int>(TeImpl::Reference));
        QCOMPARE(panel.config().te_impl, TeImpl::Reference);

        choose(panel.backendBox(), static_cast<int>(Backend::Torch));
        QVERIFY(!box->isEnabled());
        QVERIFY2(box->toolTip().contains(QStringLiteral("te backend only")), qPrintable(box->toolTip()));
        QCOMPARE(panel.config().te_impl, TeImpl::Auto);  // a torch run has no te implementation
        QVERIFY(panel.problems().empty());
        QSignalSpy compared(&panel, &RunSetupPanel::compareRequested);
        panel.compareButton()->click();  // Compare gives the choice to its te rows
        QCOMPARE(compared.count(), 1);
        QCOMPARE(compared.front().front().value<RunConfig>().te_impl, TeImpl::Reference);

        panel.applyPreset(Preset::Seed);  // a preset keeps the choice
        QCOMPARE(current<TeImpl>(box), TeImpl::Reference);
        RunConfig loaded = panel.config();
        loaded.backend = Backend::Te;
        loaded.te_impl = TeImpl::Fused;
        panel.setConfig(loaded);
        QCOMPARE(current<TeImpl>(box), TeImpl::Fused);
        QCOMPARE(panel.config().te_impl, TeImpl::Fused);

        RunSetupPanel old;
        const DeviceInfo t4 = test::gpu(7, 5, "Tesla T4");
        old.setDevice(t4, classify(t4));
        choose(old.backendBox(), static_cast<int>(Backend::Te));
        choose(old.deviceBox(), static_cast<int>(DeviceKind::Cuda));
        QStandardItem* fused = itemOf(old.teImplBox(), static_cast<int>(TeImpl::Fused));
        QVERIFY(!fused->isEnabled());
        QVERIFY2(fused->toolTip().contains(QStringLiteral("compute capability 7.5")), qPrintable(fused->toolTip()));
        choose(old.deviceBox(), static_cast<int>(DeviceKind::Cpu));
        QVERIFY(itemOf(old.teImplBox(), static_cast<int>(TeImpl::Fused))->isEnabled());
    }

    // The wheel over a spin box or combo box that does not have focus changes nothing (scrolling the form
    // once changed Layers from 2 to 0); with focus it does. Spin boxes and combo boxes take focus by click or
    // tab only, never by the wheel.
    void theWheelChangesOnlyAFocusedField() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        panel.show();
        panel.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&panel));
        auto* layers = qobject_cast<QSpinBox*>(panel.field("layers"));
        layers->setValue(2);
        QComboBox* box = panel.deviceBox();
        QCOMPARE(current<DeviceKind>(box), DeviceKind::Cpu);  // the quick CPU preset's
        const auto wheel = [](QWidget* target, int notches) {
            const QPointF at(target->width() / 2.0, target->height() / 2.0);
            QWheelEvent event(at, target->mapToGlobal(at), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                              Qt::NoScrollPhase, false);
            QApplication::sendEvent(target, &event);
        };
        QCOMPARE(layers->focusPolicy(), Qt::StrongFocus);
        QCOMPARE(box->focusPolicy(), Qt::StrongFocus);
        panel.field("name")->setFocus();
        QVERIFY(panel.field("name")->hasFocus());
        wheel(layers, -1);
        wheel(layers, 3);
        QCOMPARE(layers->value(), 2);
        wheel(box, 1);
        QCOMPARE(current<DeviceKind>(box), DeviceKind::Cpu);
        QVERIFY(!layers->hasFocus() && !box->hasFocus());  // the wheel did not take focus either

        layers->setFocus();
        QVERIFY(layers->hasFocus());
        wheel(layers, 1);
        QCOMPARE(layers->value(), 3);
        wheel(layers, -5);
        QCOMPARE(layers->value(), 1);  // never below 1
        box->setFocus();
        wheel(box, 1);
        QCOMPARE(current<DeviceKind>(box), DeviceKind::Auto);
    }

    // "Add to queue" and "Compare" sit under the form's scroll area, not in it: in view however far the form is
    // scrolled. A message appearing does not move them or the form.
    void actionButtonsArePinnedUnderTheScrollingForm() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QScrollArea* scroll = panel.formScroll();
        QVERIFY(scroll != nullptr);
        QCOMPARE(scroll->widget(), panel.form());
        QVERIFY(scroll->isAncestorOf(panel.field("layers")));
        for (QPushButton* button : {panel.addButton(), panel.compareButton()}) {
            QVERIFY(!scroll->isAncestorOf(button));
            QVERIFY(panel.isAncestorOf(button));
        }
        panel.resize(380, 360);  // far less than the form's height
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(scroll->verticalScrollBar()->maximum() > 0);
        scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum() / 2);
        QTest::qWait(20);
        for (QPushButton* button : {panel.addButton(), panel.compareButton()}) {
            QVERIFY(button->isVisible());
            QVERIFY(panel.rect().contains(QRect(button->mapTo(&panel, QPoint(0, 0)), button->size())));
        }
        const QPoint buttonAt = panel.addButton()->mapTo(&panel, QPoint(0, 0));
        const int formHeight = scroll->viewport()->height();
        const int scrolled = scroll->verticalScrollBar()->value();
        qobject_cast<QSpinBox*>(panel.field("hidden"))->setValue(130);
        QVERIFY(!panel.problems().empty());
        QTest::qWait(20);
        QCOMPARE(panel.addButton()->mapTo(&panel, QPoint(0, 0)), buttonAt);
        QCOMPARE(scroll->viewport()->height(), formHeight);
        QCOMPARE(scroll->verticalScrollBar()->value(), scrolled);
        // The marked spin box keeps its arrows: no style sheet reaches it (a border there drops the native arrows);
        // its base is tinted red instead, and back to the theme's when the value is good again.
        auto* hidden = qobject_cast<QSpinBox*>(panel.field("hidden"));
        QVERIFY(!panel.styleSheet().contains(QStringLiteral("*[")) && !panel.styleSheet().contains(QStringLiteral("SpinBox")));
        QVERIFY(hidden->palette().color(QPalette::Base) != panel.palette().color(QPalette::Base));
        // Two long messages show whole: the problems area grows (at most 8 lines) rather than cut the second.
        // (validation runs on every edit, synchronously: no wait, nothing timed)
        qobject_cast<QLineEdit*>(panel.field("seed"))->setText(QStringLiteral("not a seed, and long enough to wrap a line or two"));
        QVERIFY(panel.problems().size() >= 2);
        auto* problems = panel.findChild<QLabel*>(QStringLiteral("problems"));
        auto* area = panel.findChild<QScrollArea*>(QStringLiteral("problemsArea"));
        QVERIFY2(problems->heightForWidth(area->viewport()->width()) <= area->viewport()->height(),
                 qPrintable(QStringLiteral("text %1 px high, area %2 px: %3")
                                .arg(problems->heightForWidth(area->viewport()->width()))
                                .arg(area->viewport()->height())
                                .arg(problems->text())));
        hidden->setValue(128);
        qobject_cast<QLineEdit*>(panel.field("seed"))->setText(QStringLiteral("7"));
        QVERIFY(panel.problems().empty());
        QCOMPARE(hidden->palette().color(QPalette::Base), panel.palette().color(QPalette::Base));
    }

    // Tab walks the form top to bottom as it is laid out (the preset, the run, the model, the FP8 recipe...), every
    // stop a visible control a user can see take focus (no scroll area, no label), and ends at the buttons.
    void tabFollowsTheFormTopToBottom() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));  // the buttons take focus once they are enabled
        panel.resize(420, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.activateWindow();
        QWidget* first = panel.findChild<QWidget*>(QStringLiteral("preset"));
        QVERIFY(first);
        first->setFocus(Qt::TabFocusReason);
        QTRY_VERIFY(first->hasFocus());
        QList<QWidget*> stops{first};
        for (int i = 0; i < 80; ++i) {
            QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
            QWidget* now = QApplication::focusWidget();
            if (!now || now == first) break;
            stops << now;
        }
        QStringList names;
        for (QWidget* w : stops) names << (w->objectName().isEmpty() ? QString::fromLatin1(w->metaObject()->className()) : w->objectName());
        const QString chain = names.join(QStringLiteral(" > "));
        for (QWidget* w : stops) {
            QVERIFY2(w->isVisible() && !qobject_cast<QAbstractScrollArea*>(w) && !qobject_cast<QLabel*>(w), qPrintable(chain));
        }
        // Down the form: within the scrolling form each stop lies at or below the one before, or to its right on a row.
        int lastY = -1;
        for (QWidget* w : stops) {
            if (!panel.formScroll()->widget()->isAncestorOf(w)) continue;
            const int y = w->mapTo(panel.formScroll()->widget(), QPoint(0, w->height() / 2)).y();
            QVERIFY2(y + 4 >= lastY, qPrintable(QStringLiteral("%1 goes up at %2").arg(chain, w->objectName())));
            lastY = y;
        }
        QVERIFY2(stops.contains(panel.addButton()) && stops.contains(panel.compareButton()), qPrintable(chain));
    }

    // A long token file path shows its file name from its first letter, not the path's tail.
    void tokenFileFieldShowsTheFileName() {
        RunSetupPanel panel;
        panel.resize(420, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        RunConfig config = make_preset(Preset::QuickCpu);
        config.data.path = "/home/someone/datasets/a/fairly/deep/folder/of/corpora/shakespeare-tokens.txt";
        panel.setConfig(config);
        const QLineEdit* field = panel.dataPathEdit();
        QCOMPARE(field->cursorPosition(), static_cast<int>(std::string_view(config.data.path).rfind('/') + 1));
    }

    void presetsFillEveryField() {
        RunSetupPanel panel;
        panel.applyPreset(Preset::Seed);
        RunConfig seed = panel.config();
        QCOMPARE(seed.model, make_preset(Preset::Seed).model);
        QCOMPARE(seed.batch, 32);
        QCOMPARE(seed.warmup, 10);
        QCOMPARE(seed.iters, 30);
        panel.applyPreset(Preset::QuickCpu);
        QCOMPARE(panel.config(), make_preset(Preset::QuickCpu));
        // Without a device yet, nothing can be queued.
        QVERIFY(!panel.addButton()->isEnabled());
    }

    // The architecture: llama enables KV heads, FFN size and RoPE base (gpt greys them out and keeps their values);
    // the automatic values are shown in the fields; the configuration carries the llama's sizes for llama only.
    void architectureEnablesTheLlamaFields() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QCOMPARE(current<Arch>(panel.archBox()), Arch::Gpt);  // the quick CPU preset
        for (const char* id : {"kv-heads", "ffn", "rope-base"}) {
            QVERIFY2(!panel.field(id)->isEnabled(), id);
            QVERIFY2(panel.field(id)->toolTip().contains(QStringLiteral("Llama only")), id);
        }
        choose(panel.archBox(), static_cast<int>(Arch::Llama));
        for (const char* id : {"kv-heads", "ffn", "rope-base"}) QVERIFY2(panel.field(id)->isEnabled(), id);
        QVERIFY(panel.field("kv-heads")->toolTip().contains(QStringLiteral("Grouped-query attention")));
        QVERIFY(panel.field("ffn")->toolTip().contains(QStringLiteral("8/3 × hidden")));
        QVERIFY(panel.field("rope-base")->toolTip().contains(QStringLiteral("rotate-half")));
        auto* kv = qobject_cast<QSpinBox*>(panel.field("kv-heads"));
        auto* ffn = qobject_cast<QSpinBox*>(panel.field("ffn"));
        QCOMPARE(kv->specialValueText(), QStringLiteral("as Heads (4)"));
        QCOMPARE(ffn->specialValueText(), QStringLiteral("auto (384)"));  // 8/3 · 128 = 341.3, up to a multiple of 64
        qobject_cast<QSpinBox*>(panel.field("hidden"))->setValue(768);
        QCOMPARE(ffn->specialValueText(), QStringLiteral("auto (2048)"));
        qobject_cast<QSpinBox*>(panel.field("hidden"))->setValue(128);
        kv->setValue(2);
        qobject_cast<QLineEdit*>(panel.field("rope-base"))->setText(QStringLiteral("500000"));
        QVERIFY2(panel.problems().empty(), qPrintable(panel.problemAt("kv-heads")));
        RunConfig c = panel.config();
        QCOMPARE(c.model.arch, Arch::Llama);
        QCOMPARE(c.model.kv_heads, 2);
        QCOMPARE(c.model.ffn, 0);
        QCOMPARE(c.model.rope_base, 500000.0);
        QSignalSpy added(&panel, &RunSetupPanel::addRequested);
        panel.addButton()->click();
        QCOMPARE(added.count(), 1);
        QCOMPARE(added.front().front().value<RunConfig>().model.kv_heads, 2);

        // Back to gpt: the configuration has no llama sizes, the fields keep theirs for the next llama.
        choose(panel.archBox(), static_cast<int>(Arch::Gpt));
        c = panel.config();
        QCOMPARE(c.model.kv_heads, 0);
        QCOMPARE(c.model.rope_base, static_cast<double>(kDefaultRopeBase));
        QCOMPARE(kv->value(), 2);
        QVERIFY(!kv->isEnabled());

        // A configuration read back (a stored run, "Run again") fills the fields.
        RunConfig llama = make_preset(Preset::QuickCpu);
        llama.model.arch = Arch::Llama;
        llama.model.kv_heads = 1;
        llama.model.ffn = 256;
        panel.setConfig(llama);
        QCOMPARE(panel.config().model, llama.model);
    }

    // Llama sizes the form refuses, in its words at the field: KV heads that do not divide Heads (core's rule), an
    // FFN size that is not a multiple of 64, a RoPE base that is not a number.
    void badLlamaSizesAreRefusedAtTheField() {
        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        choose(panel.archBox(), static_cast<int>(Arch::Llama));
        auto* kv = qobject_cast<QSpinBox*>(panel.field("kv-heads"));
        kv->setValue(3);  // 4 heads
        const QString message = panel.problemAt("kv-heads");
        QVERIFY2(!message.isEmpty() && message.contains(QStringLiteral("3")), qPrintable(message));
        QVERIFY2(!message.contains(QStringLiteral("--")), qPrintable(message));
        QVERIFY(kv->property("problem").toBool());
        QCOMPARE(kv->toolTip(), message);
        QVERIFY(!panel.addButton()->isEnabled());
        kv->setValue(2);
        QVERIFY(!kv->property("problem").toBool());
        auto* ffn = qobject_cast<QSpinBox*>(panel.field("ffn"));
        ffn->setValue(100);
        QVERIFY2(!panel.problemAt("ffn").isEmpty(), "an FFN size that is not a multiple of 64 is refused");
        ffn->setValue(128);
        QVERIFY(panel.problemAt("ffn").isEmpty());
        auto* rope = qobject_cast<QLineEdit*>(panel.field("rope-base"));
        rope->setText(QStringLiteral("wide"));
        QVERIFY2(panel.problemAt("rope-base").contains(QStringLiteral("'wide'")), qPrintable(panel.problemAt("rope-base")));
        QVERIFY(!panel.addButton()->isEnabled());
        rope->setText(QStringLiteral("10000"));
        QVERIFY2(panel.problems().empty(), qPrintable(panel.findChild<QLabel*>(QStringLiteral("problems"))->text()));
        QVERIFY(panel.addButton()->isEnabled());
    }

    // The token file: its path reaches RunConfig.data; format, validation fraction and evaluate-every are enabled with
    // a file only; a missing or empty file is refused at the field in the form's words before anything is queued.
    void tokenFileReachesTheConfig() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString corpus = dir.filePath(QStringLiteral("corpus.txt"));
        QFile file(corpus);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray("It was the best of times, it was the worst of times. ").repeated(200));
        file.close();
        const QString empty = dir.filePath(QStringLiteral("empty.bin"));
        QFile emptyFile(empty);
        QVERIFY(emptyFile.open(QIODevice::WriteOnly));
        emptyFile.close();

        RunSetupPanel panel;
        const DeviceInfo device = test::no_gpu();
        panel.setDevice(device, classify(device));
        QCOMPARE(panel.dataPathEdit()->placeholderText(), QStringLiteral("Synthetic tokens"));
        QVERIFY(panel.browseDataButton()->isEnabled());
        for (const char* id : {"data-format", "val-fraction", "eval-every"}) QVERIFY2(!panel.field(id)->isEnabled(), id);
        QVERIFY(!panel.config().data.from_file());

        panel.dataPathEdit()->setText(corpus);
        for (const char* id : {"data-format", "val-fraction", "eval-every"}) QVERIFY2(panel.field(id)->isEnabled(), id);
        // A file typed into a fresh form starts from the CLI's defaults, each valid as it stands.
        QVERIFY2(panel.problems().empty(), qPrintable(panel.findChild<QLabel*>(QStringLiteral("problems"))->text()));
        DataSettings typed;
        typed.path = corpus.toStdString();
        QCOMPARE(panel.config().data, typed);
        QVERIFY(panel.field("data-format")->toolTip().contains(QStringLiteral("nanoGPT")));
        choose(qobject_cast<QComboBox*>(panel.field("data-format")), static_cast<int>(TokenFormat::Bytes));
        qobject_cast<QDoubleSpinBox*>(panel.field("val-fraction"))->setValue(0.1);
        qobject_cast<QSpinBox*>(panel.field("eval-every"))->setValue(5);
        QVERIFY2(panel.problems().empty(), qPrintable(panel.findChild<QLabel*>(QStringLiteral("problems"))->text()));
        const RunConfig c = panel.config();
        QCOMPARE(QString::fromStdString(c.data.path), corpus);
        QCOMPARE(c.data.format, TokenFormat::Bytes);
        QCOMPARE(c.data.val_fraction, 0.1);
        QCOMPARE(c.data.eval_every, 5);

        panel.dataPathEdit()->setText(dir.filePath(QStringLiteral("gone.txt")));
        QCOMPARE(panel.problemAt("data"), QStringLiteral("Token file %1: no such file").arg(dir.filePath(QStringLiteral("gone.txt"))));
        QVERIFY(panel.dataPathEdit()->property("problem").toBool());
        QVERIFY(!panel.addButton()->isEnabled());
        panel.dataPathEdit()->setText(empty);
        QVERIFY2(panel.problemAt("data").contains(QStringLiteral("empty")), qPrintable(panel.problemAt("data")));
        panel.dataPathEdit()->setText(dir.path());
        QVERIFY2(panel.problemAt("data").contains(QStringLiteral("not a regular file")), qPrintable(panel.problemAt("data")));
        // Too short for one step (quick CPU: 8 sequences of 32 + 1 tokens), and an odd length for nanoGPT's uint16.
        const auto write = [&](const QString& name, const QByteArray& bytes) {
            QFile f(dir.filePath(name));
            return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
        };
        QVERIFY(write(QStringLiteral("short.txt"), QByteArray(100, 'a')));
        QVERIFY(write(QStringLiteral("odd.bin"), QByteArray(1001, 'a')));
        panel.dataPathEdit()->setText(dir.filePath(QStringLiteral("short.txt")));
        QVERIFY2(panel.problemAt("data").contains(QStringLiteral("fewer than one step's batch of 264 (Batch × (Sequence + 1))")),
                 qPrintable(panel.problemAt("data")));
        choose(qobject_cast<QComboBox*>(panel.field("data-format")), static_cast<int>(TokenFormat::Auto));
        panel.dataPathEdit()->setText(dir.filePath(QStringLiteral("odd.bin")));
        QVERIFY2(panel.problemAt("data").contains(QStringLiteral("odd length for uint16")), qPrintable(panel.problemAt("data")));

        // Cleared: synthetic tokens again, the data settings back to their defaults in the configuration.
        panel.dataPathEdit()->clear();
        QVERIFY(panel.problems().empty());
        QCOMPARE(panel.config().data, DataSettings{});
        // A stored configuration on a file fills the group.
        RunConfig onFile = make_preset(Preset::QuickCpu);
        onFile.data.path = corpus.toStdString();
        onFile.data.format = TokenFormat::Uint16;
        onFile.data.val_fraction = 0.2;
        panel.setConfig(onFile);
        QCOMPARE(panel.config().data, onFile.data);
    }

    // Every preset core has is offered, the llama ones included, and picking one fills the architecture.
    void llamaPresetsAreOffered() {
        RunSetupPanel panel;
        auto* presets = panel.findChild<QComboBox*>(QStringLiteral("preset"));
        for (const Preset preset : all_presets()) QVERIFY(presets->findData(static_cast<int>(preset)) >= 0);
        panel.applyPreset(Preset::LlamaSeed);
        QCOMPARE(panel.config().model, make_preset(Preset::LlamaSeed).model);
        QCOMPARE(current<Arch>(panel.archBox()), Arch::Llama);
        QVERIFY(panel.field("kv-heads")->isEnabled());
        panel.applyPreset(Preset::QuickCpuLlama);
        QCOMPARE(panel.config(), make_preset(Preset::QuickCpuLlama));
    }
};

QTEST_MAIN(TestRunSetup)
#include "tst_run_setup.moc"
