#include "ui/window/MainWindow.h"

// The window's layout (panels, tabs, splitters, scroll areas), its place on the screen and what it remembers
// between sessions (layout, theme, last run setup).

#include <algorithm>

#include <QFrame>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>

#include "core/config/RunConfig.h"
#include "core/results/RecordJson.h"
#include "ui/capability/CapabilityPanel.h"
#include "ui/charts/ChartsPanel.h"
#include "ui/charts/Fp8Inspector.h"
#include "ui/charts/Fp8Panel.h"
#include "ui/history/HistoryPanel.h"
#include "ui/runs/RunQueuePanel.h"
#include "ui/sweep/SweepPanel.h"
#include "ui/common/RememberedFolder.h"
#include "ui/common/ScrollArea.h"
#include "ui/setup/RunSetupPanel.h"
#include "ui/table/ComparisonPanel.h"
#include "ui/window/WindowFit.h"

namespace tewb::ui {

namespace {

constexpr const char* kSettingsVersion = "1";

}  // namespace

void MainWindow::buildLayout() {
    leftTabs_ = new QTabWidget(this);
    leftTabs_->addTab(setupPanel_, tr("Run setup"));  // it scrolls its form itself, its buttons pinned under it
    auto* capabilityScroll = new QScrollArea(this);
    capabilityScroll->setWidgetResizable(true);
    capabilityScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    capabilityScroll->setWidget(capabilityPanel_);
    leftTabs_->addTab(capabilityScroll, tr("Capability"));
    auto* left = leftSplitter_ = new QSplitter(Qt::Vertical, this);
    left->addWidget(leftTabs_);
    left->addWidget(queuePanel_);
    left->setStretchFactor(0, 3);
    left->setStretchFactor(1, 2);

    auto* dashboard = dashboardSplitter_ = new QSplitter(Qt::Vertical, this);
    dashboard->setObjectName(QStringLiteral("dashboardSplitter"));
    // The charts scroll inside their panel, so both sides keep a small minimum and the handle moves.
    dashboard->setChildrenCollapsible(false);
    dashboard->addWidget(charts_);
    dashboard->addWidget(comparison_);
    dashboard->setStretchFactor(0, 3);
    dashboard->setStretchFactor(1, 1);
    dashboard->setSizes({600, 260});
    rightTabs_ = new QTabWidget(this);
    rightTabs_->setObjectName(QStringLiteral("rightTabs"));
    // Pages whose charts need more room than a small screen gives scroll inside their tab, so their legible
    // minimum sizes never become the window's (which must fit a 1024×700 screen).
    rightTabs_->addTab(scroll_area_for(dashboard, QStringLiteral("dashboardScroll"), true), tr("Dashboard"));
    fp8Inspector_ = new Fp8Inspector(runs_, this);
    auto* fp8View = new QSplitter(Qt::Vertical, this);
    fp8View->addWidget(fp8Panel_);
    fp8View->addWidget(fp8Inspector_);
    fp8View->setStretchFactor(0, 1);
    fp8View->setStretchFactor(1, 1);
    connect(fp8Inspector_, &Fp8Inspector::slotPicked, this, [this](const Fp8SlotKey& key) {
        const auto& slots = fp8Panel_->slots();
        const auto it = std::find(slots.begin(), slots.end(), key);
        if (it != slots.end()) fp8Panel_->selectSlot(static_cast<int>(it - slots.begin()));
    });
    rightTabs_->addTab(scroll_area_for(fp8View, QStringLiteral("fp8Scroll"), true), tr("FP8"));
    rightTabs_->addTab(history_, tr("History"));
    rightTabs_->addTab(scroll_area_for(sweep_, QStringLiteral("sweepScroll"), true), tr("Sweep"));

    auto* main = mainSplitter_ = new QSplitter(Qt::Horizontal, this);
    main->addWidget(left);
    main->addWidget(rightTabs_);
    main->setStretchFactor(0, 1);
    main->setStretchFactor(1, 3);
    main->setSizes({400, 1000});  // at 1280 px the comparison table keeps its default columns in view
    setCentralWidget(main);
}

void MainWindow::restoreSettings(QSettings& settings) {
    if (settings.value(QStringLiteral("version")).toString() != QLatin1String(kSettingsVersion)) return;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    fitToScreen();  // a geometry saved on a larger screen is brought inside this one
    mainSplitter_->restoreState(settings.value(QStringLiteral("window/mainSplitter")).toByteArray());
    leftSplitter_->restoreState(settings.value(QStringLiteral("window/leftSplitter")).toByteArray());
    dashboardSplitter_->restoreState(settings.value(QStringLiteral("window/dashboardSplitter")).toByteArray());
    comparison_->restoreColumnChoices(settings.value(QStringLiteral("window/comparisonColumns")).toMap());
    const int tab = settings.value(QStringLiteral("window/rightTab"), 0).toInt();
    if (tab >= 0 && tab < rightTabs_->count()) rightTabs_->setCurrentIndex(tab);
    setDark(settings.value(QStringLiteral("view/dark"), false).toBool());
    const QString setup = settings.value(QStringLiteral("setup/config")).toString();
    if (!setup.isEmpty()) {
        try {
            setupPanel_->setConfig(config_from_json_text(setup.toStdString(), "settings setup/config"));
        } catch (const std::exception& e) {
            // A setup written by another version that no longer reads: keep the defaults, say so.
            statusBar()->showMessage(tr("The last run setup could not be restored: %1").arg(QString::fromStdString(e.what())));
        }
    }
    setupPanel_->setRepeats(settings.value(QStringLiteral("setup/repeats"), 1).toInt());
}

void MainWindow::saveSettings(QSettings& settings) const {
    settings.setValue(QStringLiteral("version"), QString::fromLatin1(kSettingsVersion));
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/mainSplitter"), mainSplitter_->saveState());
    settings.setValue(QStringLiteral("window/leftSplitter"), leftSplitter_->saveState());
    settings.setValue(QStringLiteral("window/dashboardSplitter"), dashboardSplitter_->saveState());
    settings.setValue(QStringLiteral("window/comparisonColumns"), comparison_->columnChoices());
    settings.setValue(QStringLiteral("window/rightTab"), rightTabs_->currentIndex());
    settings.setValue(QStringLiteral("view/dark"), dark_);
    settings.setValue(QStringLiteral("setup/config"), QString::fromStdString(config_to_json_text(setupPanel_->config())));
    settings.setValue(QStringLiteral("setup/repeats"), setupPanel_->repeats());
    settings.sync();
}

void MainWindow::rememberIn(std::unique_ptr<QSettings> settings) {
    settings_ = std::move(settings);
    RememberedFolder::attach(settings_.get());
    if (settings_) restoreSettings(*settings_);
}

void MainWindow::setFitToScreen(bool fit) {
    fitToScreen_ = fit;
}

void MainWindow::fitToScreen() {
    if (!fitToScreen_ || !has_real_screen() || !screen() || isMaximized() || isFullScreen()) return;
    const QRect fitted = fit_into(geometry(), frame_of(this), screen()->availableGeometry(), minimumSize());
    if (fitted != geometry()) setGeometry(fitted);
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    fitToScreen();
    framePending_ = true;
}

void MainWindow::moveEvent(QMoveEvent* event) {
    QMainWindow::moveEvent(event);
    // The window manager's frame is known once it has framed the window: fit again with the real frame.
    if (framePending_ && frameGeometry() != geometry()) {
        framePending_ = false;
        fitToScreen();
    }
}

}  // namespace tewb::ui
