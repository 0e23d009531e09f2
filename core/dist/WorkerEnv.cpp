#include "core/dist/WorkerEnv.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/common/Error.h"

namespace tewb {

namespace {

int whole_number(const char* variable, const char* text, long min, long max, const char* allowed) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || value < min || value > max) {
        throw ConfigError(std::string("environment variable ") + variable + " '" + text + "': " + allowed);
    }
    return static_cast<int>(value);
}

}  // namespace

std::optional<WorkerEnv> worker_env_from(const std::function<const char*(const char*)>& getenv) {
    const char* world = getenv("WORLD_SIZE");
    if (world == nullptr) return std::nullopt;
    WorkerEnv env;
    env.world_size = whole_number("WORLD_SIZE", world, 1, 64, "allowed: a whole number from 1 to 64");
    const char* rank = getenv("RANK");
    if (rank == nullptr) throw ConfigError("environment variable RANK is not set but WORLD_SIZE is; a worker needs both");
    const std::string rank_rule = "allowed: a whole number from 0 to WORLD_SIZE - 1 = " + std::to_string(env.world_size - 1);
    env.rank = whole_number("RANK", rank, 0, env.world_size - 1, rank_rule.c_str());
    const char* local = getenv("LOCAL_RANK");
    env.local_rank = local == nullptr ? env.rank : whole_number("LOCAL_RANK", local, 0, 1023, "allowed: a whole number from 0 to 1023");
    if (const char* addr = getenv("MASTER_ADDR"); addr != nullptr) {
        if (*addr == '\0') throw ConfigError("environment variable MASTER_ADDR is empty; allowed: a host name or address");
        env.master_addr = addr;
    }
    if (const char* port = getenv("MASTER_PORT"); port != nullptr) {
        env.master_port = whole_number("MASTER_PORT", port, 1, 65535, "allowed: a port number from 1 to 65535");
    }
    return env;
}

std::optional<WorkerEnv> worker_env() {
    return worker_env_from([](const char* name) { return std::getenv(name); });
}

}  // namespace tewb
