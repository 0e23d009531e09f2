// The architecture's layer rules (docs/architecture.md), checked on the sources themselves.
#include <QtTest>

#include <QDirIterator>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

// core's inner layers, lowest first: a folder may include its own headers and those of folders before it,
// never one after it (docs/architecture.md says why each sits where it does).
const QStringList kCoreLayers = {"common", "device", "ledger", "fp8", "modules", "model", "config", "results", "dist", "train", "selftest"};

// Every include in <root>/core/<layer>/ of a core folder above that layer, or of a folder the order does
// not know; and every folder of core the order does not know.
QStringList inner_order_violations(const QString& root) {
    QStringList found;
    static const QRegularExpression include("^\\s*#\\s*include\\s*\"core/([^/\"]+)/");
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
                if (!m.hasMatch() || m.captured(1) == folder) continue;
                const qsizetype target = kCoreLayers.indexOf(m.captured(1));
                if (target < 0 || target > rank) {
                    found << QStringLiteral("%1:%2: core/%3 includes core/%4, which is %5: %6")
                                 .arg(file.fileName())
                                 .arg(line_number)
                                 .arg(folder, m.captured(1), target < 0 ? QStringLiteral("not a layer") : QStringLiteral("above it"),
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
        const QStringList v = inner_order_violations(root.path());
        QCOMPARE(v.size(), 2);
        QVERIFY2(v.join('\n').contains(QStringLiteral("core/fp8 includes core/train, which is above it")), qPrintable(v.join('\n')));
        QVERIFY2(v.join('\n').contains(QStringLiteral("core/gadgets: a folder the layer order does not know")),
                 qPrintable(v.join('\n')));
    }
    void appHoldsNoKernelsIncludes() {
        const QStringList v = violations("app", QRegularExpression("^\\s*#\\s*include\\s*[<\"](tewb_kernels/|torch/|ATen/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
    }
};

QTEST_GUILESS_MAIN(TestLayering)
#include "tst_layering.moc"
