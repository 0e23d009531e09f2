// te-bench-torch's half of run_libtorch_command: the commands themselves.
#include "LibTorchCommands.h"

#include "InfoCommands.h"
#include "RunCommands.h"

namespace tewb::cli {

int run_libtorch_command(const Commands& c) {
    if (c.info->parsed()) return run_info(c);
    if (c.selftest->parsed()) return run_selftest(c);
    if (c.run->parsed()) return run_one(c);
    if (c.compare->parsed()) return run_compare(c);
    return run_sweep(c);
}

}  // namespace tewb::cli
