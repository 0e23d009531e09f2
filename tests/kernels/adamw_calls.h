#pragma once

// The AdamW step (tewb_kernels/adamw.h) called as the AdamW suite's cases are written: a list of parameters'
// buffers (the kernels' own view of a checked parameter, optimizer/adamw_call.h), each made the tensors adamw_step
// takes (param of [rows, cols] where an FP8 output is set, [1, numel] otherwise; the other tensors [1, numel]).
#include <cstddef>
#include <vector>

#include "optimizer/adamw_call.h"
#include "tewb_kernels/adamw.h"

namespace tewb::test::calls {

using kernels::DType;
using kernels::Fp8Type;
using kernels::Tensor;
using kernels::input;

inline Tensor fp8_tensor_of(const kernels::detail::AdamWTensor& t) {
    if (t.fp8.data == nullptr) return {};
    const bool known = t.fp8.type == Fp8Type::E4M3 || t.fp8.type == Fp8Type::E5M2;
    Tensor out = input(t.fp8.data, known ? kernels::fp8_dtype(t.fp8.type) : DType::Int64, t.rows, t.cols);
    out.transposed = t.fp8.transposed;
    out.scale = const_cast<float*>(t.fp8.scale);
    out.amax = t.fp8.amax;
    return out;
}

inline void adamw(const kernels::detail::AdamWTensor* list, std::size_t count, float* step_value, double lr, double beta1,
                  double beta2, double weight_decay, double eps) {
    std::vector<kernels::AdamWParameter> parameters;
    for (std::size_t i = 0; list != nullptr && i < count; ++i) {
        const kernels::detail::AdamWTensor& t = list[i];
        const bool fp8 = t.fp8.data != nullptr;
        parameters.push_back({input(t.param, DType::Float32, fp8 ? t.rows : 1, fp8 ? t.cols : t.numel),
                              input(t.grad, DType::Float32, 1, t.numel), input(t.exp_avg, DType::Float32, 1, t.numel),
                              input(t.exp_avg_sq, DType::Float32, 1, t.numel),
                              t.param_bf16 != nullptr ? input(t.param_bf16, DType::BFloat16, 1, t.numel) : Tensor{},
                              fp8_tensor_of(t)});
    }
    const Tensor step = input(step_value, DType::Float32, 1, 1);
    kernels::host::adamw_step(list == nullptr || count == 0 ? nullptr : parameters.data(), count, step, lr, beta1, beta2,
                              weight_decay, eps, {});
}

}  // namespace tewb::test::calls
