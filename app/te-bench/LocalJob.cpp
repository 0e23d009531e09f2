#include "LocalJob.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <optional>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tewb::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string describe_exit(int rank, int status) {
    if (WIFSIGNALED(status)) {
        const int signal_number = WTERMSIG(status);
        return "rank " + std::to_string(rank) + " was killed by signal " + std::to_string(signal_number) + " (" +
               strsignal(signal_number) + ")";
    }
    return "rank " + std::to_string(rank) + " exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

int free_local_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error(std::string("cannot open a socket to find a free port: ") + std::strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    ::close(fd);
    if (!ok) throw std::runtime_error(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(errno));
    return ntohs(address.sin_port);
}

LocalJobOutcome run_local_job(int argc, char** argv, const LocalJob& job, const std::atomic<bool>& cancel) {
    std::vector<pid_t> pids(static_cast<std::size_t>(job.nproc), -1);
    const pid_t launcher = ::getpid();
    for (int rank = 0; rank < job.nproc; ++rank) {
        const pid_t pid = ::fork();
        if (pid < 0) {
            for (const pid_t started : pids) {
                if (started > 0) ::kill(started, SIGKILL);
            }
            throw std::runtime_error(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
        }
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != launcher) ::_exit(125);  // the launcher died before the line above
            ::setenv("RANK", std::to_string(rank).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(job.nproc).c_str(), 1);
            ::setenv("MASTER_ADDR", "127.0.0.1", 1);
            ::setenv("MASTER_PORT", std::to_string(job.master_port).c_str(), 1);
            ::setenv("TEWB_DIST_RECORD", job.record_path.c_str(), 1);
            std::vector<char*> args(argv, argv + argc);
            args.push_back(nullptr);
            ::execv("/proc/self/exe", args.data());
            std::fprintf(stderr, "te-bench: rank %d: cannot start: %s\n", rank, std::strerror(errno));
            ::_exit(127);
        }
        pids[static_cast<std::size_t>(rank)] = pid;
    }

    LocalJobOutcome outcome;
    int running = job.nproc;
    bool interrupted = false;
    std::optional<Clock::time_point> stop_by;      // after the first failure: the others' time to stop on their own
    std::optional<Clock::time_point> killed_at;    // SIGTERM sent: SIGKILL 5 s later
    while (running > 0) {
        int status = 0;
        const pid_t done = ::waitpid(-1, &status, WNOHANG);
        if (done > 0) {
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (pids[r] != done) continue;
                pids[r] = -1;
                --running;
                if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                    // 130: the rank was cancelled (Ctrl-C), which is not a failure of the job.
                    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 130 && interrupted)) {
                        outcome.failures.push_back(describe_exit(static_cast<int>(r), status));
                    }
                    // Without rank 0 nothing can finish: the others stop at once. Otherwise rank 0 gets the
                    // timeout and a little more to notice (Gloo sees a closed connection at once) and write the record.
                    const auto grace = r == 0 ? std::chrono::seconds(2) : std::chrono::seconds(job.timeout_s + 5);
                    if (!stop_by || Clock::now() + grace < *stop_by) stop_by = Clock::now() + grace;
                }
            }
            continue;
        }
        if (done < 0 && errno != EINTR && errno != ECHILD) break;
        if (cancel.load() && !interrupted) {
            interrupted = true;
            for (const pid_t pid : pids) {
                if (pid > 0) ::kill(pid, SIGINT);
            }
        }
        const Clock::time_point now = Clock::now();
        if (stop_by && now >= *stop_by && !killed_at) {
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (pids[r] > 0) {
                    outcome.failures.push_back("rank " + std::to_string(r) + " did not stop on its own after the job failed; "
                                               "stopped with SIGTERM");
                    ::kill(pids[r], SIGTERM);
                }
            }
            killed_at = now;
        }
        if (killed_at && now >= *killed_at + std::chrono::seconds(3)) {
            for (const pid_t pid : pids) {
                if (pid > 0) ::kill(pid, SIGKILL);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return outcome;
}

}  // namespace tewb::cli
