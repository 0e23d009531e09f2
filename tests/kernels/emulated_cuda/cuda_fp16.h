#pragma once
// Declared for common/elementwise.cuh only; the emulated kernels take no float16 (its conversions abort).
#include "emulated_cuda.h"

struct __half {
    std::uint16_t x;
};
float __half2float(__half);
__half __float2half(float);
inline __half __ushort_as_half(unsigned short bits) {
    return __half{bits};
}
