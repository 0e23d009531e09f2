#pragma once

#include <exception>
#include <string>

#include "core/results/RunRecord.h"

namespace tewb {

// What a failed run threw, as its record names it: the one mapping from exceptions to ErrorKind (the trainer's).
// Outside a run, a job that could not form or be set up is "distributed" whatever it threw (DataParallelRun,
// the window's job worker): there the step that failed, not the exception, names the kind.
//   DistError                                   -> distributed
//   NumericsError                               -> numerics
//   c10::OutOfMemoryError                       -> out_of_memory (the GPU's)
//   std::bad_alloc                              -> out_of_memory (the host's)
//   c10::Error saying "out of memory"/"not enough memory" -> out_of_memory (the GPU's on CUDA, else the host's)
//   any other c10::Error or std::exception      -> distributed inside a data-parallel job, else runtime
//   anything else                               -> runtime
// ConfigError is not a failed run but a refused one: callers let it through before asking.
struct RunFailure {
    ErrorKind kind = ErrorKind::Runtime;
    // The cause as the record quotes it: the exception's text; for LibTorch's errors and for a rank's other
    // exceptions its first line only (LibTorch's backtrace and stack frames stay out of a user's message).
    std::string detail;
    bool from_libtorch = false;  // a c10::Error: the message says "LibTorch error"
    bool host_memory = false;    // out_of_memory: the host's memory ran out, not the GPU's
};

RunFailure classify_failure(const std::exception_ptr& error, bool in_job, bool on_cuda);

}  // namespace tewb
