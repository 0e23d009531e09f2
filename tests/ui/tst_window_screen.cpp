// The window on a real screen. Run under Xvfb and a window manager whose taskbar makes the available area
// smaller than the screen (tests/ui/xvfb-wm-run.sh; CTest runs it at 1280x800 and 1024x700): with every tab
// holding data (a CPU comparison with an inspected FP8 run, the history, a sweep), the window's frame, its
// minimum size, the run setup's "Add to queue" and "Compare" and the status bar lie inside the screen's
// available area; the comparison table needs no horizontal scroll bar at 1280 wide and cuts no header; the
// mouse wheel leaves a spin box or combo box without focus alone; `--demo` opens within the screen.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QHeaderView>
#include <QImage>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QChartView>
#include <QGraphicsScene>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>

#include <cstdlib>
#include <memory>

#include "../helpers/ChildProcess.h"
#include "WindowTestSupport.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/MetricChartView.h"
#include "ui/history/HistoryModel.h"
#include "ui/history/HistoryPanel.h"
#include "ui/runs/RunController.h"
#include "ui/runs/RunQueuePanel.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/table/ComparisonModel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/MainWindow.h"

using namespace tewb;
using namespace tewb::ui;

namespace {

constexpr int kRunTimeoutMs = 180'000;
// The bar: the comparison table fits this width without scrolling.
constexpr int kTableFitsWidth = 1280;

QString text(const QRect& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

QString text(const QSize& s) {
    return QStringLiteral("%1x%2").arg(s.width()).arg(s.height());
}

QRect global_rect(const QWidget* w) {
    return QRect(w->mapToGlobal(QPoint(0, 0)), w->size());
}

// The window manager answers a map, a maximise or a resize asynchronously: wait until the frame has kept its
// place and size for a few turns of the event loop (at most 3 s).
void settle(const QWidget* window) {
    QRect last;
    int same = 0;
    for (int i = 0; i < 60 && same < 4; ++i) {
        QTest::qWait(50);
        const QRect now = window->frameGeometry();
        same = now == last ? same + 1 : 0;
        last = now;
    }
}

// Brings `w` on screen the way a user does: the tab that holds it becomes the current one.
void show_tabs_holding(QWidget* w) {
    for (QWidget* child = w; child; child = child->parentWidget()) {
        auto* stack = qobject_cast<QStackedWidget*>(child->parentWidget());
        auto* tabs = stack ? qobject_cast<QTabWidget*>(stack->parentWidget()) : nullptr;
        if (tabs) tabs->setCurrentWidget(child);
    }
}

QScrollArea* scroll_area_of(QWidget* w) {
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
        if (auto* area = qobject_cast<QScrollArea*>(p)) return area;
    }
    return nullptr;
}

// Counts the wheel events the X server delivers (spontaneous ones), wherever Qt hands them.
class WheelCounter : public QObject {
public:
    int count = 0;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Wheel && event->spontaneous()) ++count;
        return QObject::eventFilter(watched, event);
    }
};

// A real wheel turn of `notches` (positive: away from the user) over the middle of `target`: xdotool moves the
// X pointer there and presses wheel buttons 4 or 5, so the event takes the path a user's takes (the widget
// under the pointer, focus policy, propagation to the parents). Returns once Qt has delivered it.
bool wheel_over(QWidget* target, int notches, WheelCounter& counter) {
    const QString xdotool = QStandardPaths::findExecutable(QStringLiteral("xdotool"));
    if (xdotool.isEmpty()) {
        qWarning("xdotool is not installed (Debian package xdotool; bash packaging/setup-deps.sh installs it)");
        return false;
    }
    const QPoint global = target->mapToGlobal(target->rect().center());
    QProcess tool;
    tool.start(xdotool, {QStringLiteral("mousemove"), QString::number(global.x()), QString::number(global.y()),
                         QStringLiteral("click"), QStringLiteral("--repeat"), QString::number(std::abs(notches)),
                         notches > 0 ? QStringLiteral("4") : QStringLiteral("5")});
    if (!tool.waitForFinished(30'000) || tool.exitCode() != 0) {
        qWarning("xdotool failed: %s", qPrintable(QString::fromUtf8(tool.readAllStandardError())));
        return false;
    }
    QWidget* under = QApplication::widgetAt(global);
    if (!under || !(under == target || target->isAncestorOf(under))) {
        qWarning("the pointer at %d,%d is over %s, not over %s", global.x(), global.y(),
                 under ? under->metaObject()->className() : "nothing", target->metaObject()->className());
        return false;
    }
    const int before = counter.count;
    for (int i = 0; i < 200 && counter.count == before; ++i) QTest::qWait(50);
    QTest::qWait(100);  // the remaining notches of the same turn
    if (counter.count == before) qWarning("no wheel event arrived within 10 s");
    return counter.count > before;
}

}  // namespace

class TestWindowScreen : public QObject {
    Q_OBJECT

    std::unique_ptr<MainWindow> window_;

    QRect available() const { return window_->screen()->availableGeometry(); }

    // What the window manager adds around the window (title bar, borders).
    QSize decoration() const { return window_->frameGeometry().size() - window_->geometry().size(); }

    // Shown normally, the whole frame; maximised, the window inside its frame (a window manager may push a
    // maximised window's borders past the screen's edge, as icewm does).
    void checkFrameInside(const char* when) {
        settle(window_.get());
        const bool maximised = window_->isMaximized();
        const QRect frame = window_->frameGeometry();
        const QRect checked = maximised ? window_->geometry() : frame;
        qInfo("%s: frame %s, window %s, available %s", when, qPrintable(text(frame)), qPrintable(text(window_->geometry())),
              qPrintable(text(available())));
        QVERIFY2(available().contains(checked),
                 qPrintable(QStringLiteral("%1: the window's %2 %3 is not inside the screen's available area %4")
                                .arg(QLatin1String(when), maximised ? QStringLiteral("area") : QStringLiteral("frame"),
                                     text(checked), text(available()))));
    }

    // The smallest the window can be made, with its decoration: it must fit, else even maximised it spills over.
    QSize neededSize(const QString& when) const {
        const QSize hint = window_->minimumSizeHint();
        const QSize minimum = window_->minimumSize();
        const QSize needed = hint.expandedTo(minimum) + decoration();
        qInfo("%s: minimumSizeHint %s, minimumSize %s, with the frame %s, available %s", qPrintable(when),
              qPrintable(text(hint)), qPrintable(text(minimum)), qPrintable(text(needed)), qPrintable(text(available().size())));
        return needed;
    }

    void checkMinimumFits(const QSize& needed, const QString& when) {
        QVERIFY2(needed.width() <= available().width() && needed.height() <= available().height(),
                 qPrintable(QStringLiteral("%1: the window needs at least %2 with its frame (%3) but the screen's available "
                                           "area is %4")
                                .arg(when, text(needed), text(decoration()), text(available().size()))));
    }

    // Fully visible where it is now (no scrolling): shown, not clipped by any parent or covered by a sibling,
    // inside the window and inside the screen's available area.
    void checkOnScreen(QWidget* w, const QString& what) {
        QVERIFY2(w->isVisible(), qPrintable(what + QStringLiteral(" is not visible")));
        const QRect global = global_rect(w);
        const QRect visible = w->visibleRegion().boundingRect();
        QVERIFY2(w->visibleRegion() == QRegion(w->rect()),
                 qPrintable(QStringLiteral("%1 (%2) is only partly visible: %3 of %4 without scrolling")
                                .arg(what, text(global), text(visible), text(w->rect()))));
        QVERIFY2(window_->geometry().contains(global),
                 qPrintable(QStringLiteral("%1 at %2 lies outside the window %3").arg(what, text(global), text(window_->geometry()))));
        QVERIFY2(available().contains(global),
                 qPrintable(QStringLiteral("%1 at %2 lies outside the screen's available area %3").arg(what, text(global), text(available()))));
    }

    void checkActionsAndStatusBar(const QString& when) {
        RunSetupPanel* setup = window_->setupPanel();
        show_tabs_holding(setup->addButton());
        QTest::qWait(100);
        checkOnScreen(setup->addButton(), when + QStringLiteral(": \"Add to queue\""));
        checkOnScreen(setup->compareButton(), when + QStringLiteral(": \"Compare\""));
        checkOnScreen(window_->statusBar(), when + QStringLiteral(": the status bar"));
    }

    // Every tab of every tab widget in the window, one after the other; the minimum size must fit after each
    // (it grows with what a tab has shown: the FP8 inspector's heat map, once).
    void visitEveryTab(const QString& when) {
        QSize worst;
        QString worstTab;
        for (QTabWidget* tabs : window_->findChildren<QTabWidget*>()) {
            for (int i = 0; i < tabs->count(); ++i) {
                tabs->setCurrentIndex(i);
                QTest::qWait(150);  // the charts redraw on an 8 Hz timer
                const QSize needed = neededSize(QStringLiteral("%1, tab \"%2\"").arg(when, tabs->tabText(i)));
                if (needed.width() > worst.width() || needed.height() > worst.height()) worstTab = tabs->tabText(i);
                worst = worst.expandedTo(needed);
            }
        }
        checkMinimumFits(worst, QStringLiteral("%1, every tab visited (the largest after \"%2\")").arg(when, worstTab));
    }

    void runComparisonWithInspectedFp8() {
        RunSetupPanel* setup = window_->setupPanel();
        setup->applyPreset(Preset::QuickCpu);
        qobject_cast<QSpinBox*>(setup->field("warmup"))->setValue(1);
        qobject_cast<QSpinBox*>(setup->field("iters"))->setValue(4);
        setup->backendBox()->setCurrentIndex(setup->backendBox()->findData(static_cast<int>(Backend::Te)));
        setup->precisionBox()->setCurrentIndex(setup->precisionBox()->findData(static_cast<int>(Precision::Fp8)));
        auto* inspect = qobject_cast<QCheckBox*>(setup->field("inspect-fp8"));
        QVERIFY(inspect && inspect->isEnabled());
        inspect->setChecked(true);
        QVERIFY2(setup->compareButton()->isEnabled(), qPrintable(setup->problemAt("precision")));
        QSignalSpy drained(window_->controller(), &RunController::queueDrained);
        setup->compareButton()->click();
        window_->queuePanel()->startButton()->click();
        QVERIFY(drained.wait(kRunTimeoutMs));
        QVERIFY(window_->runs()->entries().size() >= 5);  // on the CPU: torch fp32, torch bf16, te fp32, te bf16, te fp8
        QVERIFY2(window_->fp8Inspector()->heatMap()->rows() > 0, "the inspected FP8 run's heat map is empty");
        QVERIFY(window_->history()->model()->rowCount() >= 5);
    }

    void runTinySweep() {
        QVERIFY(test::run_tiny_sweep(*window_, QStringLiteral("64"), kRunTimeoutMs));
        QVERIFY(window_->sweep()->table()->rowCount() >= 1);
    }

private Q_SLOTS:
    void initTestCase() {
        if (QGuiApplication::platformName() != QLatin1String("xcb")) {
            QSKIP("needs a real X server with a window manager (the screen's available area, the window's frame): "
                  "run it through tests/ui/xvfb-wm-run.sh, as `ctest -R tst_window_screen` does");
        }
        window_ = test::make_window();
        QVERIFY(window_->device());
        QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
        qInfo("screen %s, available %s (platform %s)", qPrintable(text(window_->screen()->geometry())),
              qPrintable(text(available())), qPrintable(QGuiApplication::platformName()));
        QVERIFY2(available().height() < window_->screen()->geometry().height(),
                 "the window manager reserves no area (a taskbar): the checks would not see the difference");
    }

    // A first launch: the window as it opens, before any data.
    void opensInsideTheScreen() {
        checkFrameInside("as it opens");
        checkMinimumFits(neededSize(QStringLiteral("as it opens")), QStringLiteral("as it opens"));
        checkActionsAndStatusBar(QStringLiteral("as it opens"));
    }

    void everyTabGetsData() {
        runComparisonWithInspectedFp8();
        runTinySweep();
    }

    void shownNormallyWithEveryTabVisited() {
        visitEveryTab(QStringLiteral("normal"));
        checkFrameInside("normal, every tab visited");
        checkActionsAndStatusBar(QStringLiteral("normal, every tab visited"));
    }

    void maximisedWithEveryTabVisited() {
        window_->showMaximized();
        QTRY_VERIFY(window_->isMaximized());
        checkFrameInside("maximised");
        visitEveryTab(QStringLiteral("maximised"));
        checkFrameInside("maximised, every tab visited");
        checkActionsAndStatusBar(QStringLiteral("maximised, every tab visited"));
    }

    void shownNormallyAgain() {
        window_->showNormal();
        QTRY_VERIFY(!window_->isMaximized());
        checkFrameInside("shown normally again");
        checkMinimumFits(neededSize(QStringLiteral("shown normally again")), QStringLiteral("shown normally again"));
        checkActionsAndStatusBar(QStringLiteral("shown normally again"));
    }

    // With its default columns and the window maximised, the comparison table needs no horizontal scroll bar on
    // a screen 1280 wide or wider, and no header is cut.
    void comparisonTableFitsWithoutScrolling() {
        QVERIFY(window_->comparison()->model()->rowCount() >= 5);
        window_->showMaximized();
        QTRY_VERIFY(window_->isMaximized());
        settle(window_.get());
        QTableView* view = window_->comparison()->view();
        show_tabs_holding(view);
        QTest::qWait(200);
        QHeaderView* header = view->horizontalHeader();
        QStringList widths;
        for (int i = 0; i < header->count(); ++i) {
            if (header->isSectionHidden(i)) continue;
            widths << QStringLiteral("%1 %2").arg(view->model()->headerData(i, Qt::Horizontal).toString()).arg(header->sectionSize(i));
        }
        qInfo("comparison table: %d of %d columns shown, %d px wide in a %d px viewport (%s)", header->count() - header->hiddenSectionCount(),
              header->count(), header->length(), view->viewport()->width(), qPrintable(widths.join(QStringLiteral(", "))));
        for (int i = 0; i < header->count(); ++i) {
            if (header->isSectionHidden(i)) continue;
            const QString title = view->model()->headerData(i, Qt::Horizontal).toString();
            QVERIFY2(header->sectionSize(i) >= header->sectionSizeHint(i),
                     qPrintable(QStringLiteral("the header \"%1\" is cut: %2 px of the %3 it needs")
                                    .arg(title)
                                    .arg(header->sectionSize(i))
                                    .arg(header->sectionSizeHint(i))));
        }
        if (available().width() < kTableFitsWidth) {
            qInfo("the screen is narrower than %d px: the table may scroll (it needs %d px, the viewport has %d)", kTableFitsWidth,
                  header->length(), view->viewport()->width());
            return;
        }
        QVERIFY2(!view->horizontalScrollBar()->isVisible(),
                 qPrintable(QStringLiteral("the comparison table scrolls sideways at %1 px: its columns take %2 px, the "
                                           "viewport %3")
                                .arg(available().width())
                                .arg(header->length())
                                .arg(view->viewport()->width())));
    }

    // Shown normally at either size, the pages that scroll (dashboard, FP8, sweep) scroll down only, never
    // sideways: the dashboard's charts go into fewer columns rather than past the pane's right edge.
    void pagesNeverScrollSideways() {
        window_->showNormal();
        QTRY_VERIFY(!window_->isMaximized());
        settle(window_.get());
        for (const char* name : {"dashboardScroll", "fp8Scroll", "sweepScroll"}) {
            auto* area = window_->findChild<QScrollArea*>(QLatin1String(name));
            QVERIFY2(area, name);
            show_tabs_holding(area);
            QTest::qWait(100);
            QVERIFY2(!area->horizontalScrollBar()->isVisible(),
                     qPrintable(QStringLiteral("%1 scrolls sideways: its page needs %2 px, the pane has %3")
                                    .arg(QLatin1String(name))
                                    .arg(area->widget()->minimumSizeHint().width())
                                    .arg(area->viewport()->width())));
        }
    }

    // Shown normally, the comparison table's speedup cells read whole at either size: "not comparable" (the inspected
    // FP8 run: its step time holds the inspection) and "emulated" are never cut, and each says why in its tooltip.
    void comparabilityCellsReadWhole() {
        window_->showNormal();
        QTRY_VERIFY(!window_->isMaximized());
        settle(window_.get());
        QTableView* view = window_->comparison()->view();
        show_tabs_holding(view);
        QTest::qWait(150);
        QAbstractItemModel* model = view->model();
        QVERIFY(!view->isColumnHidden(ComparisonModel::Speedup));
        const int width = view->horizontalHeader()->sectionSize(ComparisonModel::Speedup);
        int explained = 0;
        for (int row = 0; row < model->rowCount(); ++row) {
            const QModelIndex cell = model->index(row, ComparisonModel::Speedup);
            const QString text = cell.data().toString();
            const QString tip = cell.data(Qt::ToolTipRole).toString();
            qInfo("row %d: \"%s\" (%s)", row, qPrintable(text), qPrintable(tip.left(120)));
            // As the style lays an item's text out: its margin is the focus frame's plus one pixel on each side.
            const int needed =
                view->fontMetrics().horizontalAdvance(text) + 2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1);
            QVERIFY2(width >= needed, qPrintable(QStringLiteral("row %1's speedup \"%2\" needs %3 px, its column has %4")
                                                    .arg(row).arg(text).arg(needed).arg(width)));
            if (text.startsWith(QStringLiteral("not comparable")) || text == QStringLiteral("emulated")) {
                QVERIFY2(!tip.isEmpty(), qPrintable(QStringLiteral("row %1 says \"%2\" without a reason").arg(row).arg(text)));
                ++explained;
            }
        }
        QVERIFY2(explained >= 1, "no run of the comparison is marked not comparable or emulated");
    }

    // Shown normally, every chart (dashboard, FP8, sweep) has a plot area of at least 360×180 px, and the dashboard's
    // splitter between the charts and the table moves both ways (a real drag of its handle).
    void chartsAreLegibleAndTheSplitterMoves() {
        window_->showNormal();
        QTRY_VERIFY(!window_->isMaximized());
        settle(window_.get());
        std::vector<std::pair<QString, QChart*>> charts;
        for (MetricChartView* view : window_->findChildren<MetricChartView*>()) {
            if (view->window() == window_.get()) charts.emplace_back(view->objectName(), view->chart());
        }
        for (QChartView* view : window_->sweep()->findChildren<QChartView*>()) charts.emplace_back(QStringLiteral("sweep"), view->chart());
        QVERIFY(charts.size() >= 6);  // loss, step time, memory, FP8 amax and scale, the sweep's speedup
        for (const auto& [name, chart] : charts) {
            auto* view = qobject_cast<QWidget*>(chart->scene()->views().front());
            show_tabs_holding(view);
            // A slow window manager may still be laying the tab out.
            for (int i = 0; i < 30 && (chart->plotArea().width() < 360 || chart->plotArea().height() < 180); ++i) QTest::qWait(100);
            const QRectF area = chart->plotArea();
            qInfo("%s: plot area %.0f×%.0f in a %d×%d chart", qPrintable(name), area.width(), area.height(), view->width(),
                  view->height());
            QVERIFY2(area.width() >= 360 && area.height() >= 180,
                     qPrintable(QStringLiteral("%1's plot area is %2×%3 px (at least 360×180)").arg(name).arg(area.width()).arg(area.height())));
        }

        auto* splitter = window_->findChild<QSplitter*>(QStringLiteral("dashboardSplitter"));
        QVERIFY(splitter);
        show_tabs_holding(splitter);
        QTest::qWait(150);
        QSplitterHandle* handle = splitter->handle(1);
        const auto drag = [&](int dy) {
            const QPoint from = handle->rect().center();
            QTest::mousePress(handle, Qt::LeftButton, {}, from);
            for (int step = 1; step <= 4; ++step) QTest::mouseMove(handle, from + QPoint(0, dy * step / 4));
            QTest::mouseRelease(handle, Qt::LeftButton, {}, from + QPoint(0, dy));
            QTest::qWait(50);
            return splitter->sizes().front();
        };
        const int before = splitter->sizes().front();
        const int up = drag(-60);
        const int down = drag(120);
        qInfo("dashboard splitter %d px high (charts at least %d, table at least %d): charts %d px, dragged up %d px, down %d px",
              splitter->height(), splitter->widget(0)->minimumSizeHint().height(), splitter->widget(1)->minimumSizeHint().height(),
              before, up, down);
        QVERIFY2(up < before && down > up,
                 qPrintable(QStringLiteral("the handle did not move: charts %1 -> %2 -> %3 px").arg(before).arg(up).arg(down)));
    }

    // The wheel over a field without focus scrolls the form, never the field; a field with focus takes it.
    void wheelLeavesUnfocusedFieldsAlone() {
        window_->showNormal();
        window_->raise();
        window_->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(window_.get()));
        WheelCounter counter;
        qApp->installEventFilter(&counter);
        RunSetupPanel* setup = window_->setupPanel();
        auto* layers = qobject_cast<QSpinBox*>(setup->field("layers"));
        QComboBox* precision = setup->precisionBox();
        QVERIFY(layers && precision);
        QVERIFY2(layers->minimum() >= 1, qPrintable(QStringLiteral("Layers accepts %1").arg(layers->minimum())));
        layers->setValue(3);
        precision->setCurrentIndex(precision->findData(static_cast<int>(Precision::Bf16)));
        const int bf16 = precision->currentIndex();
        auto* name = qobject_cast<QLineEdit*>(setup->field("name"));
        for (QWidget* field : {static_cast<QWidget*>(layers), static_cast<QWidget*>(precision)}) {
            show_tabs_holding(field);
            if (QScrollArea* area = scroll_area_of(field)) area->ensureWidgetVisible(field);
            QTest::qWait(50);
            name->setFocus(Qt::OtherFocusReason);
            QTRY_VERIFY(name->hasFocus());
            QVERIFY(wheel_over(field, -3, counter));
            QVERIFY2(!field->hasFocus(), "the wheel gave the field focus");
        }
        QCOMPARE(layers->value(), 3);
        QCOMPARE(precision->currentIndex(), bf16);

        // With focus, the wheel is the field's (and shows that the turns above did reach the fields).
        layers->setFocus(Qt::OtherFocusReason);
        QTRY_VERIFY(layers->hasFocus());
        if (QScrollArea* area = scroll_area_of(layers)) area->ensureWidgetVisible(layers);
        QVERIFY(wheel_over(layers, -1, counter));
        QTRY_COMPARE(layers->value(), 2);
        QVERIFY(wheel_over(layers, -5, counter));
        QTRY_COMPARE(layers->value(), layers->minimum());
        qApp->removeEventFilter(&counter);
    }

    // `te-workbench --demo` opens at the screen's available size or less (its window.png is the window).
    void demoOpensWithinTheScreen() {
        QTemporaryDir dir;
        const test::ChildResult demo =
            test::run_child(QStringLiteral(TE_WORKBENCH_PATH), {QStringLiteral("--demo"), QStringLiteral("quick-cpu"),
                                                               QStringLiteral("--export"), dir.path(), QStringLiteral("--quit")});
        QVERIFY2(demo.exit_code == 0, qPrintable(QStringLiteral("exit %1: %2").arg(demo.exit_code).arg(demo.err)));
        const QImage shot(dir.filePath(QStringLiteral("window.png")));
        QVERIFY(!shot.isNull());
        const QSize size = shot.size() / shot.devicePixelRatio();
        qInfo("--demo window %s, available %s", qPrintable(text(size)), qPrintable(text(available().size())));
        QVERIFY2(size.width() <= available().width() && size.height() <= available().height(),
                 qPrintable(QStringLiteral("--demo opened a %1 window on a screen whose available area is %2")
                                .arg(text(size), text(available().size()))));
    }

    void cleanupTestCase() { window_.reset(); }
};

QTEST_MAIN(TestWindowScreen)
#include "tst_window_screen.moc"
