// Precompiled header for core's LibTorch translation units: the ATen/torch headers they share.
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/nn/module.h>
