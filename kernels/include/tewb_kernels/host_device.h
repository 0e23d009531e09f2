#pragma once

// TEWB_HOST_DEVICE: a function the kernels and their host twins share (the *_math.h headers), compiled for both sides
// under nvcc and as plain C++ elsewhere.
#if defined(__CUDACC__)
#define TEWB_HOST_DEVICE __host__ __device__
#else
#define TEWB_HOST_DEVICE
#endif
