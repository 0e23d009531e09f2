#include "core/dist/WorkerEnv.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include <unistd.h>

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
    if (const char* pid = getenv("TEWB_LAUNCHER_PID"); pid != nullptr) {
        env.launcher_pid = whole_number("TEWB_LAUNCHER_PID", pid, 1, std::numeric_limits<int>::max());
    }
    if (const char* gpus = getenv("TEWB_LAUNCHER_GPUS"); gpus != nullptr) {
        const std::string list = gpus;
        for (std::size_t start = 0; !list.empty() && start <= list.size();) {
            const std::size_t comma = std::min(list.find(',', start), list.size());
            const std::string one = list.substr(start, comma - start);
            if (one.empty()) {
                throw ConfigError("environment variable TEWB_LAUNCHER_GPUS '" + list +
                                  "': an empty item; allowed: CUDA device numbers separated by commas, or nothing");
            }
            env.launcher_gpus.push_back(whole_number("TEWB_LAUNCHER_GPUS", one.c_str(), 0, 1023));
            start = comma + 1;
        }
    }
    return env;
}

std::vector<int> idle_job_processes_on(const WorkerEnv& env, int cuda_device) {
    if (!env.launcher_pid || *env.launcher_pid != static_cast<int>(::getppid())) return {};
    const bool holds = std::find(env.launcher_gpus.begin(), env.launcher_gpus.end(), cuda_device) != env.launcher_gpus.end();
    return holds ? std::vector<int>{*env.launcher_pid} : std::vector<int>{};
}

std::optional<WorkerEnv> worker_env() {
    return worker_env_from([](const char* name) { return std::getenv(name); });
}

}  // namespace tewb
