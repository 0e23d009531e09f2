// GPU suite (label `gpu`) for the kernels library itself: each kernel against core's reference math in
// LibTorch on the same GPU, on fresh random inputs, odd and prime sizes as well as the model's, outputs
// poisoned before the launch so an element the kernel did not write fails. Exits 77 without a GPU.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/device/DeviceInfo.h"
#include "tewb_kernels/cast.h"

using namespace tewb;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++failures;
}

cudaStream_t stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

kernels::DType dtype_of(const at::Tensor& t) {
    return t.scalar_type() == at::kFloat ? kernels::DType::Float32 : kernels::DType::BFloat16;
}

at::ScalarType fp8_of(kernels::Fp8Type type) {
    return type == kernels::Fp8Type::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

// core's reference cast (ReferenceOps::quantize): float32 product, clamp, convert; as bytes.
at::Tensor reference_cast(const at::Tensor& x, float scale, kernels::Fp8Type type) {
    const float max = kernels::fp8_max(type);
    return (x.to(at::kFloat) * scale).clamp(-max, max).to(fp8_of(type)).view(at::kByte);
}

// NaN bytes in both FP8 types: an element the kernel never wrote stays a NaN and fails the comparison.
at::Tensor poisoned(at::IntArrayRef sizes) {
    return at::full(sizes, 0x7f, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
}

bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

void casts() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {1, 768}, {3, 1000}, {97, 33}, {97, 768}, {3072, 768},
                                                            {3072, 3072}, {1000, 97}};
    for (const at::ScalarType input : {at::kBFloat16, at::kFloat}) {
        for (const kernels::Fp8Type type : {kernels::Fp8Type::E4M3, kernels::Fp8Type::E5M2}) {
            for (const auto& [rows, cols] : shapes) {
                const std::string tag = std::string(type == kernels::Fp8Type::E4M3 ? "E4M3" : "E5M2") + " from " +
                                        (input == at::kFloat ? "float32" : "bfloat16") + " " + std::to_string(rows) + "x" +
                                        std::to_string(cols);
                const at::Tensor x = (at::randn({rows, cols}, cuda) * 20).to(input);
                const float scale = kernels::fp8_max(type) / (x.abs().max().item<float>() * 1.5f);
                const at::Tensor scale_t = at::full({1}, scale, cuda.dtype(at::kFloat));
                const at::Tensor want = reference_cast(x, scale, type);
                const float want_amax = x.abs().max().to(at::kFloat).item<float>();

                at::Tensor out = poisoned({rows, cols});
                at::Tensor amax = at::zeros({1}, cuda.dtype(at::kFloat));
                kernels::cast_to_fp8(x.data_ptr(), dtype_of(x), static_cast<std::size_t>(x.numel()), scale_t.data_ptr<float>(),
                                     out.data_ptr(), type, amax.data_ptr<float>(), stream());
                check(out.equal(want), "cast_to_fp8 " + tag + " equals the reference bit for bit");
                check(same_bits(amax.item<float>(), want_amax), "cast_to_fp8 " + tag + " amax exact");

                at::Tensor both = poisoned({rows, cols});
                at::Tensor both_t = poisoned({cols, rows});
                amax.zero_();
                kernels::cast_transpose_to_fp8(x.data_ptr(), dtype_of(x), static_cast<std::size_t>(rows),
                                               static_cast<std::size_t>(cols), scale_t.data_ptr<float>(), both.data_ptr(),
                                               both_t.data_ptr(), type, amax.data_ptr<float>(), stream());
                check(both.equal(want) && both_t.equal(want.t().contiguous()),
                      "cast_transpose_to_fp8 " + tag + " equals the reference and its transpose");
                check(same_bits(amax.item<float>(), want_amax), "cast_transpose_to_fp8 " + tag + " amax exact");
            }
        }
    }

    // Amax combines with what the staging entry holds; a NaN input wins.
    at::Tensor x = at::randn({97}, cuda);
    const at::Tensor one = at::ones({1}, cuda.dtype(at::kFloat));
    at::Tensor out = poisoned({97});
    at::Tensor amax = at::full({1}, 1000.0f, cuda.dtype(at::kFloat));
    kernels::cast_to_fp8(x.data_ptr(), kernels::DType::Float32, 97, one.data_ptr<float>(), out.data_ptr(), kernels::Fp8Type::E4M3,
                         amax.data_ptr<float>(), stream());
    check(amax.item<float>() == 1000.0f, "cast_to_fp8 keeps a larger staged amax");
    x[5] = NAN;
    kernels::cast_to_fp8(x.data_ptr(), kernels::DType::Float32, 97, one.data_ptr<float>(), out.data_ptr(), kernels::Fp8Type::E4M3,
                         amax.data_ptr<float>(), stream());
    check(std::isnan(amax.item<float>()), "cast_to_fp8 records a NaN amax");
}

void transposes() {
    const at::TensorOptions cuda = at::TensorOptions().device(at::kCUDA);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {3, 1000}, {97, 33}, {3072, 768}};
    for (const at::ScalarType type : {at::kByte, at::kBFloat16, at::kFloat}) {
        for (const auto& [rows, cols] : shapes) {
            const at::Tensor x = at::randint(0, 255, {rows, cols}, cuda.dtype(at::kFloat)).to(type);
            at::Tensor out = at::full({cols, rows}, 77, cuda.dtype(type));
            kernels::transpose(x.data_ptr(), x.element_size(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                               out.data_ptr(), stream());
            check(out.equal(x.t().contiguous()), "transpose of " + std::to_string(x.element_size()) + "-byte " +
                                                     std::to_string(rows) + "x" + std::to_string(cols));
        }
    }
}

}  // namespace

int main() {
    const DeviceInfo device = detect_device();
    if (!device.has_gpu()) {
        std::printf("SKIP  no usable CUDA device: %s\n", device.gpu_error.c_str());
        return 77;
    }
    at::manual_seed(17);
    try {
        casts();
        transposes();
        at::cuda::getCurrentCUDAStream().synchronize();
    } catch (const std::exception& e) {
        check(false, std::string("no exception: ") + e.what());
    }
    std::printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
