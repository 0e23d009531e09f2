#pragma once

// Host memory of a run-time dtype for the host-kernel suites.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/host_numbers.h"
#include "tewb_kernels/dtype.h"

namespace tewb::test {

// `count` elements of `dtype`, zero, 16-byte aligned (a float vector's storage from operator new), or moved by
// `shift` elements and `shift_bytes` bytes to misalign it.
class HostTensor {
public:
    HostTensor(kernels::DType dtype, std::size_t count, std::size_t shift = 0, std::size_t shift_bytes = 0)
        : dtype_(dtype),
          count_(count),
          offset_(shift * kernels::element_size(dtype) + shift_bytes),
          storage_(count + shift + shift_bytes / 4 + 8, 0.0f) {}

    void* data() { return reinterpret_cast<std::uint8_t*>(storage_.data()) + offset_; }
    const void* data() const { return reinterpret_cast<const std::uint8_t*>(storage_.data()) + offset_; }
    float* floats() { return static_cast<float*>(data()); }
    kernels::DType dtype() const { return dtype_; }
    std::size_t size() const { return count_; }
    float at(std::size_t i) const { return kernels::detail::load(data(), dtype_, i); }
    void set(std::size_t i, float v) { kernels::detail::store(data(), dtype_, i, v); }
    std::vector<float> values() const {
        std::vector<float> v(count_);
        for (std::size_t i = 0; i < count_; ++i) v[i] = at(i);
        return v;
    }
    // The stored bits of element i (float32 or bfloat16).
    std::uint32_t bits(std::size_t i) const {
        return dtype_ == kernels::DType::Float32 ? kernels::detail::float_bits(at(i))
                                                 : static_cast<const std::uint16_t*>(data())[i];
    }

private:
    kernels::DType dtype_;
    std::size_t count_;
    std::size_t offset_;
    std::vector<float> storage_;
};

}  // namespace tewb::test
