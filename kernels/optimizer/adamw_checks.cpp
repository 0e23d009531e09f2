#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

#include "common/arguments.h"
#include "common/fail.h"
#include "optimizer/adamw_call.h"

namespace tewb::kernels::detail {

namespace {

std::string number(double value) {
    std::ostringstream text;
    text << value;
    return text.str();
}

// A hyperparameter within [0, upper) (upper_open) or [0, upper], and finite once rounded to float32.
void check_scalar(const char* call, const char* name, double value, double upper, bool upper_open, const char* allowed) {
    const bool in_range = value >= 0.0 && (upper_open ? value < upper : value <= upper);
    if (!in_range || !std::isfinite(static_cast<float>(value))) {
        fail(call, std::string(name) + " = " + number(value) + "; allowed: " + allowed);
    }
}

// The kernel indexes a tile's rows and columns in int, as the cast it stands in for: at most kAdamWMaxChunks
// tiles keep both within an int.
static_assert(kAdamWMaxChunks * kAdamWFp8Tile <= std::size_t{std::numeric_limits<int>::max()});

// The [rows, cols] matrix of a tensor with an FP8 output: numel's elements in at most kAdamWMaxChunks tiles.
void check_fp8_shape(const std::string& call, const AdamWTensor& t) {
    if (t.rows == 0 || t.cols == 0 || t.rows > t.numel / t.cols || t.rows * t.cols != t.numel) {
        fail(call, "rows = " + std::to_string(t.rows) + ", cols = " + std::to_string(t.cols) + " with numel = " +
                       std::to_string(t.numel) + "; allowed with fp8.data set: rows, cols > 0 and rows * cols == numel");
    }
    const std::size_t tiles = adamw_fp8_tiles(t.rows, t.cols);
    if (tiles > kAdamWMaxChunks) {
        fail(call, "rows = " + std::to_string(t.rows) + ", cols = " + std::to_string(t.cols) + " make " + std::to_string(tiles) +
                       " tiles of " + std::to_string(kAdamWFp8Tile) + " x " + std::to_string(kAdamWFp8Tile) +
                       "; allowed: at most " + std::to_string(kAdamWMaxChunks));
    }
}

void check_tensor(const std::string& call, const AdamWTensor& t) {
    if (t.numel > kAdamWMaxNumel) {
        fail(call, "numel = " + std::to_string(t.numel) + "; allowed: at most " + std::to_string(kAdamWMaxNumel));
    }
    check_buffer(call, t.param, "param", alignof(float));
    check_buffer(call, t.grad, "grad", alignof(float));
    check_buffer(call, t.exp_avg, "exp_avg", alignof(float));
    check_buffer(call, t.exp_avg_sq, "exp_avg_sq", alignof(float));
    if (t.param_bf16 != nullptr) check_buffer(call, t.param_bf16, "param_bf16", 2);
    const bool fp8 = t.fp8.data != nullptr;
    if (fp8) {
        check_fp8_shape(call, t);
        check_fp8_output(call, t.fp8);
    }
    // The FP8 outputs only where they are written (fp8.data null: the other fp8 fields are not looked at).
    const std::pair<const void*, const char*> buffers[] = {{t.param, "param"},
                                                           {t.grad, "grad"},
                                                           {t.exp_avg, "exp_avg"},
                                                           {t.exp_avg_sq, "exp_avg_sq"},
                                                           {t.param_bf16, "param_bf16"},
                                                           {fp8 ? t.fp8.data : nullptr, "fp8.data"},
                                                           {fp8 ? t.fp8.transposed : nullptr, "fp8.transposed"},
                                                           {fp8 ? t.fp8.scale : nullptr, "fp8.scale"},
                                                           {fp8 ? t.fp8.amax : nullptr, "fp8.amax"}};
    for (std::size_t a = 0; a < std::size(buffers); ++a) {
        for (std::size_t b = a + 1; b < std::size(buffers); ++b) {
            if (buffers[a].first != nullptr && buffers[a].first == buffers[b].first) {
                fail(call, std::string(buffers[a].second) + " and " + buffers[b].second +
                               " are the same buffer; each must be its own");
            }
        }
    }
}

// A parameter's tensors as the kernel takes them: each of float32 (param_bf16 bfloat16, fp8 E4M3 or E5M2) with param's
// number of elements (fp8 param's shape).
AdamWTensor adamw_tensor(const std::string& call, const AdamWParameter& p) {
    const std::size_t numel = p.param.numel();
    const std::pair<const Tensor*, const char*> floats[] = {
        {&p.param, "param"}, {&p.grad, "grad"}, {&p.exp_avg, "exp_avg"}, {&p.exp_avg_sq, "exp_avg_sq"}};
    for (const auto& [tensor, name] : floats) float_vector(call, *tensor, name, numel);
    if (p.param_bf16.data != nullptr) {
        check_same_dtype(call, p.param_bf16.dtype, "param_bf16", DType::BFloat16, "a bfloat16 copy");
        if (p.param_bf16.numel() != numel) {
            fail(call, "param_bf16 has " + std::to_string(p.param_bf16.numel()) + " elements; allowed: " + std::to_string(numel) +
                           ", param's");
        }
    }
    return {static_cast<float*>(p.param.data),
            static_cast<const float*>(p.grad.data),
            static_cast<float*>(p.exp_avg.data),
            static_cast<float*>(p.exp_avg_sq.data),
            p.param_bf16.data,
            numel,
            fp8_output(call, p.fp8, "fp8", p.param.rows, p.param.cols),
            p.param.rows,
            p.param.cols};
}

}  // namespace

std::vector<AdamWTensor> checked_adamw_tensors(const char* call, const AdamWParameter* parameters, std::size_t count,
                                               const float* step, double lr, double beta1, double beta2, double weight_decay,
                                               double eps) {
    if (count > 0 && parameters == nullptr) fail(call, "parameters is null with count " + std::to_string(count));
    check_buffer(call, step, "step", alignof(float));
    constexpr double kFloatMax = std::numeric_limits<float>::max();
    check_scalar(call, "lr", lr, kFloatMax, false, "0 <= lr, finite in float32");
    check_scalar(call, "beta1", beta1, 1.0, true, "0 <= beta1 < 1");
    check_scalar(call, "beta2", beta2, 1.0, true, "0 <= beta2 < 1");
    check_scalar(call, "weight_decay", weight_decay, kFloatMax, false, "0 <= weight_decay, finite in float32");
    check_scalar(call, "eps", eps, kFloatMax, false, "0 <= eps, finite in float32");
    std::vector<AdamWTensor> work;
    work.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (parameters[i].param.numel() == 0) continue;
        const std::string tensor_call = std::string(call) + " (tensor " + std::to_string(i) + ")";
        work.push_back(adamw_tensor(tensor_call, parameters[i]));
        check_tensor(tensor_call, work.back());
    }
    return work;
}

AdamWScalars adamw_scalars(double lr, double beta1, double beta2, double weight_decay, double eps) {
    return {static_cast<float>(lr), static_cast<float>(beta1), static_cast<float>(beta2), static_cast<float>(weight_decay),
            static_cast<float>(eps)};
}

std::size_t adamw_fp8_tiles(std::size_t rows, std::size_t cols) {
    return ((rows + kAdamWFp8Tile - 1) / kAdamWFp8Tile) * ((cols + kAdamWFp8Tile - 1) / kAdamWFp8Tile);
}

std::size_t adamw_chunks(const AdamWTensor& t) {
    if (t.fp8.data != nullptr) return adamw_fp8_tiles(t.rows, t.cols);
    return (t.numel + kAdamWChunkElements - 1) / kAdamWChunkElements;
}

std::vector<std::pair<std::size_t, std::size_t>> adamw_launch_ranges(std::size_t work) {
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    for (std::size_t first = 0; first < work; first += kAdamWTensorsPerLaunch) {
        ranges.emplace_back(first, std::min(work, first + kAdamWTensorsPerLaunch));
    }
    if (ranges.empty()) ranges.emplace_back(0, 0);
    return ranges;
}

}  // namespace tewb::kernels::detail
