#pragma once

// Whether this build runs under AddressSanitizer (the `asan` preset, GCC's and clang's macro). A few rows train
// for far longer than finding a memory error needs; under ASan they run a smaller shape of the same code path, and
// their numeric bounds are held by the default build (docs/reliability.md, "CI's time", lists each).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif
