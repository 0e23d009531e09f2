// The architecture's layer rules (docs/architecture.md), checked on the sources themselves.
#include <QtTest>

#include <QDirIterator>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

// core's inner layers, lowest first: a folder may include its own headers and those of folders before it,
// never one after it (docs/architecture.md says why each sits where it does).
const QStringList kCoreLayers = {"common", "device", "ledger", "fp8", "modules", "model", "config", "results", "data", "dist", "train", "selftest"};

// The core folder a quoted include in `file` (under <root>/core/) reaches: "core/<dir>/…" as the project
// writes it, or a path relative to the file ("../train/Trainer.h", "Recipe.h" beside it). Empty when it
// reaches no core folder (a system or third-party header).
QString included_core_folder(const QString& root, const QString& file, const QString& include) {
    if (include.startsWith(QStringLiteral("core/"))) return include.section(QLatin1Char('/'), 1, 1);
    const QString core = QDir::cleanPath(root + QStringLiteral("/core"));
    const QString resolved = QDir::cleanPath(QFileInfo(file).path() + QLatin1Char('/') + include);
    if (!resolved.startsWith(core + QLatin1Char('/')) || !QFileInfo::exists(resolved)) return {};
    return resolved.mid(core.size() + 1).section(QLatin1Char('/'), 0, 0);
}

// Every include in <root>/core/<layer>/ of a core folder above that layer, or of a folder the order does
// not know, however it is written; and every folder of core the order does not know.
QStringList inner_order_violations(const QString& root) {
    QStringList found;
    static const QRegularExpression include("^\\s*#\\s*include\\s*\"([^\"]+)\"");
    const QDir core(root + QStringLiteral("/core"));
    for (const QString& folder : core.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        const qsizetype rank = kCoreLayers.indexOf(folder);
        if (rank < 0) {
            found << QStringLiteral("core/%1: a folder the layer order does not know (add it to kCoreLayers and "
                                    "docs/architecture.md)").arg(folder);
            continue;
        }
        QDirIterator it(core.filePath(folder), {"*.h", "*.cpp", "*.in"}, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            QFile file(it.next());
            if (!file.open(QIODevice::ReadOnly)) continue;
            int line_number = 0;
            while (!file.atEnd()) {
                const QString line = QString::fromUtf8(file.readLine());
                ++line_number;
                const QRegularExpressionMatch m = include.match(line);
                if (!m.hasMatch()) continue;
                const QString reached = included_core_folder(root, file.fileName(), m.captured(1));
                if (reached.isEmpty() || reached == folder) continue;
                const qsizetype target = kCoreLayers.indexOf(reached);
                if (target < 0 || target > rank) {
                    found << QStringLiteral("%1:%2: core/%3 includes core/%4, which is %5: %6")
                                 .arg(file.fileName())
                                 .arg(line_number)
                                 .arg(folder, reached, target < 0 ? QStringLiteral("not a layer") : QStringLiteral("above it"),
                                      line.trimmed());
                }
            }
        }
    }
    return found;
}

}  // namespace

class TestLayering : public QObject {
    Q_OBJECT

    QStringList violations(const QString& folder, const QRegularExpression& forbidden) {
        QStringList found;
        QDirIterator it(QStringLiteral(TEWB_SOURCE_DIR "/") + folder, {"*.h", "*.hpp", "*.cpp", "*.cu", "*.cuh", "*.in"},
                        QDir::Files, QDirIterator::Subdirectories);
        int files = 0;
        while (it.hasNext()) {
            QFile file(it.next());
            if (!file.open(QIODevice::ReadOnly)) continue;
            ++files;
            int line_number = 0;
            while (!file.atEnd()) {
                const QString line = QString::fromUtf8(file.readLine());
                ++line_number;
                if (forbidden.match(line).hasMatch())
                    found << QStringLiteral("%1:%2: %3").arg(file.fileName()).arg(line_number).arg(line.trimmed());
            }
        }
        if (files == 0) found << QStringLiteral("no sources found in ") + folder;
        return found;
    }

    // The core headers `header` includes, directly or through other core headers, that pull in LibTorch.
    QStringList tensor_headers_behind(const QString& header, QSet<QString>& seen) {
        QStringList found;
        if (seen.contains(header)) return found;
        seen.insert(header);
        QFile file(QStringLiteral(TEWB_SOURCE_DIR "/") + header);
        if (!file.open(QIODevice::ReadOnly)) return {header + " (not found)"};
        static const QRegularExpression torch("^\\s*#\\s*include\\s*[<\"](torch/|ATen/|c10/)");
        static const QRegularExpression core("^\\s*#\\s*include\\s*\"(core/[^\"]+)\"");
        while (!file.atEnd()) {
            const QString line = QString::fromUtf8(file.readLine());
            if (torch.match(line).hasMatch()) {
                found << header + ": " + line.trimmed();
            } else if (const QRegularExpressionMatch m = core.match(line); m.hasMatch()) {
                found << tensor_headers_behind(m.captured(1), seen);
            }
        }
        return found;
    }

private Q_SLOTS:
    void coreHasNoQt() {
        const QStringList v = violations("core", QRegularExpression("^\\s*#\\s*include\\s*[<\"](Q[A-Za-z]+|qt[a-z]*/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
    }
    void kernelsHaveNoLibTorchOrQt() {
        const QStringList v = violations(
            "kernels", QRegularExpression("^\\s*#\\s*include\\s*[<\"](torch/|ATen/|c10/|caffe2/|Q[A-Za-z]+|qt[a-z]*/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
    }
    // Each op's entry points are declared once for both implementations (TEWB_ENTRY_POINTS, tewb_kernels/entry_points.h)
    // and take an opaque Stream, so no public header declares host twins apart or needs a CUDA header.
    void kernelEntryPointsAreDeclaredOnce() {
        QStringList found;
        static const QRegularExpression apart("namespace\\s+tewb::kernels::host|\\bcudaStream_t\\b|#\\s*include\\s*<(cuda|cublas)");
        QDirIterator it(QStringLiteral(TEWB_SOURCE_DIR "/kernels/include/tewb_kernels"), {"*.h"}, QDir::Files,
                        QDirIterator::Subdirectories);
        int headers = 0;
        while (it.hasNext()) {
            const QString path = it.next();
            // entry_points.h is where both namespaces are opened, once.
            if (path.endsWith(QStringLiteral("/entry_points.h"))) continue;
            QFile file(path);
            QVERIFY(file.open(QIODevice::ReadOnly));
            ++headers;
            const QString text = QString::fromUtf8(file.readAll());
            if (const QRegularExpressionMatch m = apart.match(text); m.hasMatch()) found << path + ": " + m.captured(0);
        }
        QVERIFY2(headers >= 12, "the kernels' public headers were not found");
        QVERIFY2(found.isEmpty(), qPrintable(found.join('\n')));
    }
    void uiHasNoKernelsAndNoTensors() {
        const QStringList v =
            violations("ui", QRegularExpression("^\\s*#\\s*include\\s*[<\"](kernels/|tewb_kernels/|torch/|ATen/|c10/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
        // Every core header the GUI includes must be free of LibTorch, also through the headers it includes.
        QStringList torch_headers;
        QDirIterator it(QStringLiteral(TEWB_SOURCE_DIR "/ui"), {"*.h", "*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
        static const QRegularExpression core("^\\s*#\\s*include\\s*\"(core/[^\"]+)\"");
        QSet<QString> seen;
        while (it.hasNext()) {
            QFile file(it.next());
            if (!file.open(QIODevice::ReadOnly)) continue;
            while (!file.atEnd()) {
                const QRegularExpressionMatch m = core.match(QString::fromUtf8(file.readLine()));
                if (m.hasMatch()) torch_headers << tensor_headers_behind(m.captured(1), seen);
            }
        }
        QVERIFY2(torch_headers.isEmpty(), qPrintable(torch_headers.join('\n')));
        QSet<QString> probe;  // the check itself finds LibTorch behind a tensor header
        QVERIFY(!tensor_headers_behind(QStringLiteral("core/fp8/Fp8State.h"), probe).isEmpty());
        probe.clear();
        QVERIFY(tensor_headers_behind(QStringLiteral("core/fp8/Recipe.h"), probe).isEmpty());
    }
    void coreInnerLayersPointDown() {
        const QStringList v = inner_order_violations(QStringLiteral(TEWB_SOURCE_DIR));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
    }
    void innerOrderCheckFindsAPlantedBackArrow() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        const auto plant = [&](const QString& path, const QByteArray& text) {
            QVERIFY(QDir(root.path()).mkpath(QFileInfo(root.filePath(path)).path()));
            QFile file(root.filePath(path));
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(text);
        };
        plant(QStringLiteral("core/fp8/Fine.h"), "#include \"core/common/Error.h\"\n#include \"core/fp8/Recipe.h\"\n");
        plant(QStringLiteral("core/train/Fine.cpp"), "#include \"core/results/RunRecord.h\"\n");
        QVERIFY2(inner_order_violations(root.path()).isEmpty(), qPrintable(inner_order_violations(root.path()).join('\n')));
        plant(QStringLiteral("core/fp8/Planted.h"), "#pragma once\n#include \"core/train/Trainer.h\"\n");
        plant(QStringLiteral("core/gadgets/Thing.h"), "#pragma once\n");
        // The same back-arrow written relative to the file, which the "core/<dir>/" pattern alone missed.
        plant(QStringLiteral("core/train/Trainer.h"), "#pragma once\n");
        plant(QStringLiteral("core/fp8/Relative.cpp"), "#include \"../train/Trainer.h\"\n#include \"Fine.h\"\n#include \"nlohmann/json.hpp\"\n");
        const QStringList v = inner_order_violations(root.path());
        QCOMPARE(v.size(), 3);
        QVERIFY2(v.join('\n').contains(QStringLiteral("Relative.cpp:1: core/fp8 includes core/train, which is above it")),
                 qPrintable(v.join('\n')));
        QVERIFY2(v.join('\n').contains(QStringLiteral("core/fp8 includes core/train, which is above it")), qPrintable(v.join('\n')));
        QVERIFY2(v.join('\n').contains(QStringLiteral("core/gadgets: a folder the layer order does not know")),
                 qPrintable(v.join('\n')));
    }
    void appHoldsNoKernelsIncludes() {
        const QStringList v =
            violations("app", QRegularExpression("^\\s*#\\s*include\\s*[<\"](tewb_kernels/|kernels/|torch/|ATen/|c10/|caffe2/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
        // te-bench is the headless program for GPU servers: no Qt (the GUI's programs are the other folders).
        const QStringList qt = violations("app/te-bench", QRegularExpression("^\\s*#\\s*include\\s*[<\"](Q[A-Za-z]+|qt[a-z]*/)"));
        QVERIFY2(qt.isEmpty(), qPrintable(qt.join('\n')));
    }
    // What the build links says the same as the includes: the GUI library and te-bench link neither LibTorch
    // nor the kernels directly (they reach them through core only; a target named te-bench-torch is no link).
    void buildLinksFollowTheLayers() {
        for (const char* list : {"ui/CMakeLists.txt", "app/CMakeLists.txt"}) {
            QFile file(QStringLiteral(TEWB_SOURCE_DIR "/") + QString::fromLatin1(list));
            QVERIFY(file.open(QIODevice::ReadOnly));
            static const QRegularExpression link("target_link_libraries\\(([^)]*)\\)");
            QRegularExpressionMatchIterator it = link.globalMatch(QString::fromUtf8(file.readAll()));
            int links = 0;
            while (it.hasNext()) {
                const QString call = it.next().captured(1);
                ++links;
                QVERIFY2(!call.contains(QRegularExpression("(?<!-)\\b(torch|tewb_kernels|TORCH_LIBRARIES)\\b")),
                         qPrintable(QString::fromLatin1(list) + ": " + call));
            }
            QVERIFY2(links > 0, list);
        }
    }
};

QTEST_GUILESS_MAIN(TestLayering)
#include "tst_layering.moc"
