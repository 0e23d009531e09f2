#include "core/dist/WorkerEnv.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "core/common/Error.h"

namespace tewb {

namespace {

// Digits only: no sign, no spaces, no fraction. Out of range or not a number throws ConfigError with the
// variable, its value, why, and what is allowed.
int whole_number(const char* variable, const char* text, long min, long max, const std::string& why_max = {}) {
    const std::string allowed = "allowed: a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    const std::string head = std::string("environment variable ") + variable + " '" + text + "': ";
    bool digits = *text != '\0';
    for (const char* c = text; *c != '\0'; ++c) digits = digits && *c >= '0' && *c <= '9';
    if (!digits) {
        bool negative = text[0] == '-' && text[1] != '\0';
        for (const char* c = text + 1; negative && *c != '\0'; ++c) negative = *c >= '0' && *c <= '9';
        throw ConfigError(head + (negative ? "negative; " : "not a whole number; ") + allowed);
    }
    errno = 0;
    const long value = std::strtol(text, nullptr, 10);
    if (errno == ERANGE || value > max) {
        throw ConfigError(head + (why_max.empty() ? std::string("too large") : why_max) + "; " + allowed);
    }
    if (value < min) throw ConfigError(head + "too small; " + allowed);
    return static_cast<int>(value);
}

}  // namespace

std::optional<WorkerEnv> worker_env_from(const std::function<const char*(const char*)>& getenv) {
    const char* world = getenv("WORLD_SIZE");
    if (world == nullptr) {
        // A launcher sets all of them; one without WORLD_SIZE is a launcher environment gone wrong, not a
        // plain run.
        for (const char* name : {"RANK", "LOCAL_RANK"}) {
            if (const char* value = getenv(name); value != nullptr) {
                throw ConfigError(std::string("environment variable ") + name + " '" + value +
                                  "': set but WORLD_SIZE is not; a worker needs WORLD_SIZE and RANK (unset " + name +
                                  " for a plain run)");
            }
        }
        return std::nullopt;
    }
    WorkerEnv env;
    env.world_size = whole_number("WORLD_SIZE", world, 1, 64, "more processes than a job may have");
    const char* rank = getenv("RANK");
    if (rank == nullptr) {
        throw ConfigError("environment variable RANK is not set but WORLD_SIZE is ('" + std::string(world) +
                          "'); a worker needs both; allowed: a whole number from 0 to " + std::to_string(env.world_size - 1));
    }
    const std::string past_world = "not below WORLD_SIZE (" + std::to_string(env.world_size) + ")";
    env.rank = whole_number("RANK", rank, 0, env.world_size - 1, past_world);
    const char* local = getenv("LOCAL_RANK");
    env.local_rank = local == nullptr ? env.rank : whole_number("LOCAL_RANK", local, 0, env.world_size - 1, past_world);
    if (const char* addr = getenv("MASTER_ADDR"); addr != nullptr) {
        if (*addr == '\0') throw ConfigError("environment variable MASTER_ADDR is empty; allowed: a host name or address");
        env.master_addr = addr;
    }
    if (const char* port = getenv("MASTER_PORT"); port != nullptr) {
        env.master_port = whole_number("MASTER_PORT", port, 1, 65535);
    }
    for (const char* name : {"TEWB_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
        if (const char* id = getenv(name); id != nullptr && *id != '\0') {
            if (std::string_view(id).size() > 256) {
                throw ConfigError(std::string("environment variable ") + name + ": " + std::to_string(std::string_view(id).size()) +
                                  " characters; allowed: at most 256");
            }
            env.job_id = id;
            break;
        }
    }
    return env;
}

std::optional<WorkerEnv> worker_env() {
    return worker_env_from([](const char* name) { return std::getenv(name); });
}

}  // namespace tewb
