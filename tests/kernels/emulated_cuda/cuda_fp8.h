#pragma once
// CUDA's FP8 conversion, defined in emulated_runtime.cpp as the host twins write it.
#include "emulated_cuda.h"

enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };
std::uint8_t __nv_cvt_float_to_fp8(float, __nv_saturation_t, __nv_fp8_interpretation_t);
