#pragma once

#include <cuda_runtime_api.h>

#include "tewb_kernels/tensor.h"

namespace tewb::kernels::detail {

// The CUDA stream an entry point was given (Stream keeps it opaque so that the public headers need no CUDA).
inline cudaStream_t cuda_stream(Stream stream) {
    return static_cast<cudaStream_t>(stream.handle);
}

}  // namespace tewb::kernels::detail
