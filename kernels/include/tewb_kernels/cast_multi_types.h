#pragma once

#include <cstddef>

#include "tewb_kernels/block_cast_types.h"
#include "tewb_kernels/dtype.h"
#include "tewb_kernels/fp8_type.h"

// What the multi-tensor cast (cast_multi.h, host/cast_multi.h) takes; no CUDA here.
namespace tewb::kernels {

// One tensor of a multi-tensor cast + transpose: x [rows, cols] row-major in `dtype`, cast with its own
// scale (one float32) into out [rows, cols] and out_t [cols, rows], its amax combined into amax[0] (when
// not null) by the rules of cast_to_fp8 (tewb_kernels/cast.h).
struct CastTransposeItem {
    const void* x = nullptr;
    DType dtype = DType::Float32;
    std::size_t rows = 0;
    std::size_t cols = 0;
    const float* scale = nullptr;
    void* out = nullptr;
    void* out_t = nullptr;
    Fp8Type type = Fp8Type::E4M3;
    float* amax = nullptr;
};

// One tensor of a multi-tensor block cast: x [rows, cols] (the call's dtype) and where its cast goes, as
// block_cast_to_fp8 takes them (tewb_kernels/cast.h); no bias gradient (dbias must be null).
struct BlockCastItem {
    const void* x = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
    BlockCastOutput out;
};

// Items one launch takes at most: they travel in the kernel's parameters (about 4 KiB for the cast + transpose,
// 6 KiB for the block cast: beyond the classic 4 KiB, so CUDA 12.1 or later, which takes up to 32 KiB on every
// architecture this project builds for), and the 48 weights of a 12-layer model fit in one.
constexpr std::size_t kCastMultiItemsPerLaunch = 64;

}  // namespace tewb::kernels
