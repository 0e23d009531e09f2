#pragma once

// Declares an op's entry points once for both of their implementations: tewb::kernels::f (CUDA, in the op's
// <op>.cu, on the stream it is given) and tewb::kernels::host::f (the host twin over host memory, in
// <op>_host.cpp: the same checks, the same results within the op's stated bounds, the same launch count; it
// does not look at the stream). Both take the same arguments, so a caller switches between them by namespace
// alone (core's TEWB_KERNEL).
#define TEWB_ENTRY_POINTS(...)              \
    namespace tewb::kernels {               \
    __VA_ARGS__                             \
    }                                       \
    namespace tewb::kernels::host {         \
    __VA_ARGS__                             \
    }
