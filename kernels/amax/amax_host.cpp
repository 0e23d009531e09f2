#include <algorithm>
#include <cstdint>
#include <cstring>

#include "amax/amax_arguments.h"
#include "common/fail.h"
#include "common/host_numbers.h"
#include "tewb_kernels/host/amax.h"

namespace tewb::kernels::host {

namespace {

template <DType kType>
std::uint32_t abs_max_bits(const void* x, std::size_t n) {
    std::uint32_t local = 0;
    for (std::size_t i = 0; i < n; ++i) local = std::max(local, detail::abs_bits(detail::load(x, kType, i)));
    return local;
}

}  // namespace

void abs_max(const void* x, DType dtype, std::size_t n, float* amax_out) {
    detail::check_abs_max_arguments("tewb::kernels::host::abs_max", x, dtype, n, amax_out);
    std::uint32_t bits = 0;  // the GPU clears amax_out first (a memset), and launches nothing more when n == 0
    detail::note_memset();
    if (n > 0) {
        switch (dtype) {
            case DType::Float32: bits = abs_max_bits<DType::Float32>(x, n); break;
            case DType::BFloat16: bits = abs_max_bits<DType::BFloat16>(x, n); break;
            case DType::Float16: bits = abs_max_bits<DType::Float16>(x, n); break;
        }
        detail::note_launch();
    }
    std::memcpy(amax_out, &bits, sizeof bits);
}

}  // namespace tewb::kernels::host
