// Host-side argument checks of the kernels library: bad arguments are rejected, with the entry
// point's name, before anything reaches the GPU, so these run on machines without one.
#include <QtTest>

#include "tewb_kernels/amax.h"
#include "tewb_kernels/device_query.h"
#include "tewb_kernels/kernel_error.h"

using namespace tewb::kernels;

namespace {

void expect_error(const std::function<void()>& call, const std::string& part) {
    try {
        call();
        QFAIL(qPrintable("no error; expected " + QString::fromStdString(part)));
    } catch (const KernelError& e) {
        const std::string message = e.what();
        QVERIFY2(message.rfind("tewb::kernels::abs_max: ", 0) == 0, e.what());
        QVERIFY2(message.find(part) != std::string::npos, e.what());
    }
}

alignas(16) float device_like[8];  // never dereferenced: every call below fails its checks first

}  // namespace

class TestKernelArguments : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void absMaxRejectsNullOutput() {
        expect_error([] { abs_max(device_like, DType::Float32, 8, nullptr, nullptr); }, "amax_out is a null pointer");
    }
    void absMaxRejectsNullInput() {
        expect_error([] { abs_max(nullptr, DType::BFloat16, 8, device_like, nullptr); }, "x is a null pointer but n = 8");
    }
    void absMaxRejectsMisalignedInput() {
        const auto* bytes = reinterpret_cast<const char*>(device_like);
        expect_error([&] { abs_max(bytes + 1, DType::Float16, 4, device_like, nullptr); },
                     "not aligned to its element size of 2 bytes");
        expect_error([&] { abs_max(bytes + 2, DType::Float32, 4, device_like, nullptr); },
                     "not aligned to its element size of 4 bytes");
    }
    void absMaxRejectsMisalignedOutput() {
        auto* bytes = reinterpret_cast<char*>(device_like);
        expect_error([&] { abs_max(device_like, DType::Float32, 4, reinterpret_cast<float*>(bytes + 2), nullptr); },
                     "not 4-byte aligned");
    }
    void absMaxRejectsUnknownDtype() {
        expect_error([] { abs_max(device_like, static_cast<DType>(42), 4, device_like, nullptr); }, "unsupported dtype");
    }
    void deviceQueryNeverThrows() {
        const CudaQuery query = query_cuda();
        QVERIFY(query.runtime_version > 0);
        QVERIFY(query.cublaslt_version > 0);
        if (query.devices.empty()) QVERIFY(!query.error.empty());
    }
};

QTEST_GUILESS_MAIN(TestKernelArguments)
#include "tst_kernel_arguments.moc"
