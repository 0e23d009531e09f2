#include "core/modules/ParameterInit.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

namespace tewb {

double gpt_residual_init_std(int layers) {
    return kGptInitStd / std::sqrt(2.0 * layers);
}

ParameterInit::ParameterInit(std::uint64_t seed) : generator_(at::detail::createCPUGenerator(seed)) {}

at::Tensor ParameterInit::normal(at::IntArrayRef shape, double std) {
    return at::empty(shape, at::kFloat).normal_(0.0, std, generator_);
}

at::Tensor ParameterInit::zeros(at::IntArrayRef shape) {
    return at::zeros(shape, at::kFloat);
}

at::Tensor ParameterInit::ones(at::IntArrayRef shape) {
    return at::ones(shape, at::kFloat);
}

}  // namespace tewb
