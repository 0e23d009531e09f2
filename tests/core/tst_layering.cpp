// The architecture's layer rules (docs: ARCHITECTURE.md), checked on the sources themselves.
#include <QtTest>

#include <QDirIterator>
#include <QRegularExpression>

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
    void appHoldsNoKernelsIncludes() {
        const QStringList v = violations("app", QRegularExpression("^\\s*#\\s*include\\s*[<\"](tewb_kernels/|torch/|ATen/)"));
        QVERIFY2(v.isEmpty(), qPrintable(v.join('\n')));
    }
};

QTEST_GUILESS_MAIN(TestLayering)
#include "tst_layering.moc"
