// The host kernels' number formats (kernels/common/host_numbers.h) against CUDA's own conversions, which
// cuda_fp8.h, cuda_bf16.h and cuda_fp16.h also define for the host: every FP8 and half bit pattern, and
// float32 bit patterns in a stride that visits every exponent and the rounding boundaries around them.
#include <QtTest>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>

#include "common/host_numbers.h"
#include "mx/mx_math.h"

using namespace tewb::kernels;

namespace {

std::uint16_t raw(__nv_bfloat16 v) {
    std::uint16_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

std::uint16_t raw(__half v) {
    std::uint16_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

bool same(float a, float b) {
    return (a != a && b != b) || detail::float_bits(a) == detail::float_bits(b);
}

// Bit patterns to check: a stride over all of them plus, around every exponent, the patterns nearest the
// FP8, half and bfloat16 rounding points (the low 21 bits ± 2 around each multiple of 2^k).
template <typename Check>
void for_each_pattern(Check&& check) {
    for (std::uint64_t u = 0; u <= 0xffffffffull; u += 65521) check(static_cast<std::uint32_t>(u));
    for (std::uint32_t sign = 0; sign < 2; ++sign) {
        for (std::uint32_t exponent = 0; exponent < 256; ++exponent) {
            for (std::uint32_t high = 0; high < 64; ++high) {  // the top 6 mantissa bits
                const std::uint32_t base = (sign << 31) | (exponent << 23) | (high << 17);
                for (std::uint32_t low : {0u, 1u, 0xffffu, 0x10000u, 0x10001u, 0x1ffffu, 0x7fffu, 0x8000u, 0x8001u, 0xfffu,
                                          0x1000u, 0x1001u, 0x3ffffu & 0x1ffffu}) {
                    check(base | low);
                }
            }
        }
    }
}

}  // namespace

class TstHostNumbers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void floatToFp8MatchesCuda() {
        std::uint64_t checked = 0;
        for_each_pattern([&](std::uint32_t u) {
            const float f = detail::bits_float(u);
            for (const auto& [type, interpretation] : {std::pair{Fp8Type::E4M3, __NV_E4M3}, std::pair{Fp8Type::E5M2, __NV_E5M2}}) {
                const std::uint8_t want = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, interpretation);
                const std::uint8_t got = detail::float_to_fp8(f, type);
                if (got != want) {
                    QFAIL(qPrintable(QStringLiteral("float bits 0x%1 to %2: got 0x%3, CUDA 0x%4")
                                         .arg(u, 8, 16, QLatin1Char('0'))
                                         .arg(tewb::kernels::fp8_type_name(type))
                                         .arg(got, 2, 16, QLatin1Char('0'))
                                         .arg(want, 2, 16, QLatin1Char('0'))));
                }
            }
            ++checked;
        });
        qInfo("%llu float32 patterns checked", static_cast<unsigned long long>(checked));
    }

    void floatToBf16AndHalfMatchCuda() {
        for_each_pattern([&](std::uint32_t u) {
            const float f = detail::bits_float(u);
            QCOMPARE(detail::float_to_bf16(f), raw(__float2bfloat16(f)));
            if (f == f) QCOMPARE(detail::float_to_fp16(f), raw(__float2half_rn(f)));
        });
    }

    void everyFp8AndHalfDecodesAsCuda() {
        for (int b = 0; b < 256; ++b) {
            for (const auto& [type, interpretation] : {std::pair{Fp8Type::E4M3, __NV_E4M3}, std::pair{Fp8Type::E5M2, __NV_E5M2}}) {
                const float want = __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), interpretation)));
                QVERIFY2(same(detail::fp8_to_float(static_cast<std::uint8_t>(b), type), want), qPrintable(QString::number(b)));
            }
        }
        for (int h = 0; h < 65536; ++h) {
            __half_raw r;
            r.x = static_cast<unsigned short>(h);
            QVERIFY2(same(detail::fp16_to_float(static_cast<std::uint16_t>(h)), __half2float(__half(r))), qPrintable(QString::number(h)));
            QVERIFY(same(detail::bf16_to_float(static_cast<std::uint16_t>(h)), __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(h)))));
        }
    }

    // The microscaling formats' element codes (kernels/mx/mx_math.h): E2M1 rounded to nearest as CUDA's
    // __nv_cvt_float_to_fp4 (the definition cuBLASLt's NVFP4 data follows), every E2M1 and E8M0 code decoded as CUDA does.
    void e2m1AndE8m0MatchCuda() {
        std::uint64_t checked = 0;
        for_each_pattern([&](std::uint32_t u) {
            const float f = detail::bits_float(u);
            const auto want = static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(f, __NV_E2M1, cudaRoundNearest));
            const std::uint8_t got = detail::mx::e2m1_nearest(f);
            if (got != want) {
                QFAIL(qPrintable(QStringLiteral("float bits 0x%1 to E2M1: got 0x%2, CUDA 0x%3")
                                     .arg(u, 8, 16, QLatin1Char('0'))
                                     .arg(got, 1, 16)
                                     .arg(want, 1, 16)));
            }
            ++checked;
        });
        qInfo("%llu float32 patterns checked against E2M1", static_cast<unsigned long long>(checked));
        for (int code = 0; code < 16; ++code) {
            const float want = __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(code), __NV_E2M1)));
            QVERIFY2(same(detail::mx::e2m1_value(static_cast<std::uint8_t>(code)), want), qPrintable(QString::number(code)));
        }
        for (int code = 0; code < 256; ++code) {
            const float want = __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(code))));
            QVERIFY2(same(detail::mx::e8m0_value(static_cast<std::uint8_t>(code)), want), qPrintable(QString::number(code)));
        }
    }

    void nanAndSaturation() {
        const float inf = detail::bits_float(0x7f800000u);
        QCOMPARE(detail::float_to_fp8(inf, Fp8Type::E4M3), std::uint8_t{0x7e});   // 448
        QCOMPARE(detail::float_to_fp8(-inf, Fp8Type::E5M2), std::uint8_t{0xfb});  // -57344
        QCOMPARE(detail::float_to_fp8(detail::bits_float(0xffc00000u), Fp8Type::E4M3), std::uint8_t{0x7f});
        QCOMPARE(detail::float_to_bf16(detail::bits_float(0xffc00001u)), std::uint16_t{0x7fff});
    }
};

QTEST_GUILESS_MAIN(TstHostNumbers)
#include "tst_host_numbers.moc"
