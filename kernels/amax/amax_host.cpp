#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/fail.h"
#include "common/host_numbers.h"
#include "tewb_kernels/amax.h"

namespace tewb::kernels::host {

namespace {

template <DType kType>
std::uint32_t abs_max_bits(const void* x, std::size_t n) {
    std::uint32_t local = 0;
    for (std::size_t i = 0; i < n; ++i) local = std::max(local, detail::abs_bits(detail::load(x, kType, i)));
    return local;
}

}  // namespace

void abs_max(const Tensor& x, Stream) {
    detail::check_abs_max("tewb::kernels::host::abs_max", x);
    const std::size_t n = x.numel();
    std::uint32_t bits = 0;  // the GPU's one launch writes 0 when n == 0
    if (n > 0) {
        switch (x.dtype) {
            case DType::BFloat16: bits = abs_max_bits<DType::BFloat16>(x.data, n); break;
            case DType::Float16: bits = abs_max_bits<DType::Float16>(x.data, n); break;
            default: bits = abs_max_bits<DType::Float32>(x.data, n); break;
        }
    }
    detail::note_launch();
    std::memcpy(x.amax, &bits, sizeof bits);
}

}  // namespace tewb::kernels::host
