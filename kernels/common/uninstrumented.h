#pragma once

// TEWB_UNINSTRUMENTED: a leaf loop the sanitizers leave alone. GCC does not vectorize a loop that ASan or UBSan
// instruments, and the host GEMM's dot products ran 7× slower under the asan preset for it (tst_fused_host 118 s
// against 39 s, docs/reliability.md). Only for pure arithmetic over buffers the caller owns and whose bounds it has
// checked in code, so that the sanitizers still see every access whose bounds could be wrong.
#if defined(__GNUC__) || defined(__clang__)
#define TEWB_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))
#else
#define TEWB_UNINSTRUMENTED
#endif
