#pragma once

#include <cstdint>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

namespace tewb {

// GPT-2's initialisation, shared by both MiniGPT backends: weights ~ N(0, 0.02); the two projections
// that write into the residual stream ~ N(0, 0.02 / sqrt(2 * layers)).
constexpr double kGptInitStd = 0.02;
double gpt_residual_init_std(int layers);

// Creates parameter values on the CPU in float32 from one seeded generator, in call order. Every
// backend creates its parameters through this in the same order, so the same seed gives the same
// initial model whatever the backend or device.
class ParameterInit {
public:
    explicit ParameterInit(std::uint64_t seed);

    at::Tensor normal(at::IntArrayRef shape, double std);
    at::Tensor zeros(at::IntArrayRef shape);
    at::Tensor ones(at::IntArrayRef shape);

private:
    at::Generator generator_;
};

}  // namespace tewb
