#pragma once

#include <string>

namespace tewb {

// One thing wrong with a configuration: `field` is the CLI flag without dashes ("hidden"), `message`
// one line naming the flag, the value and what is allowed.
struct ConfigProblem {
    std::string field;
    std::string message;
};

}  // namespace tewb
