#pragma once

#include <string>

namespace tewb {

// A process started with fd 0, 1 or 2 closed would hand that number to the next file it opens (the run store,
// or an eventfd of Qt's): output meant for the terminal would land there. Both programs call this first; a
// closed stdout becomes /dev/null opened read-only, so writing to it still fails and is reported.
void occupy_standard_descriptors();

// Flushes standard output: empty when everything written to it arrived, else why not ("Bad file descriptor",
// "No space left on device").
std::string standard_output_problem();

}  // namespace tewb
