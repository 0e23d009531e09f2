#include "LocalJob.h"

#include <array>
#include <atomic>

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

std::string LocalJobOutcome::describe() const {
    std::string text;
    for (const std::string& f : failures) text += (text.empty() ? "" : "; ") + f;
    if (!stopped.empty()) {
        text += (text.empty() ? "" : "; ") + std::string("the launcher stopped ");
        for (std::size_t i = 0; i < stopped.size(); ++i) text += (i == 0 ? "" : ", ") + stopped[i];
    }
    return text;
}

std::string describe_ranks(const std::vector<int>& pids) {
    std::string text = "data-parallel job:";
    for (std::size_t r = 0; r < pids.size(); ++r) {
        text += (r == 0 ? " rank " : ", rank ") + std::to_string(r) + " is process " + std::to_string(pids[r]);
    }
    return text;
}

namespace {

// The ranks' processes while a job runs, for kill_running_ranks (a signal handler reads them: lock-free atomics).
constexpr std::size_t kMaxRanks = 64;
std::array<std::atomic<pid_t>, kMaxRanks> g_rank_pids{};

void note_rank(std::size_t rank, pid_t pid) {
    if (rank < kMaxRanks) g_rank_pids[rank].store(pid);
}

}  // namespace

void kill_running_ranks() noexcept {
    for (std::atomic<pid_t>& pid : g_rank_pids) {
        if (const pid_t p = pid.load(); p > 0) ::kill(p, SIGKILL);
    }
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
        note_rank(static_cast<std::size_t>(rank), pid);
    }
    std::fprintf(stderr, "%s\n", describe_ranks(std::vector<int>(pids.begin(), pids.end())).c_str());

    LocalJobOutcome outcome;
    int running = job.nproc;
    bool interrupted = false;
    enum class Stop { No, Term, Kill };  // what this launcher did to a rank after the first failure
    std::vector<Stop> stop(pids.size(), Stop::No);
    std::optional<Clock::time_point> kill_at;  // after the first failure: SIGKILL for whoever is left
    while (running > 0) {
        int status = 0;
        const pid_t done = ::waitpid(-1, &status, WNOHANG);
        if (done > 0) {
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (pids[r] != done) continue;
                pids[r] = -1;
                note_rank(r, -1);
                --running;
                const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                // 130 after Ctrl-C: the rank was cancelled, which is not a failure of the job; a rank this
                // launcher stopped ends however it ends, as a consequence of the first failure.
                const bool cancelled = interrupted && WIFEXITED(status) && WEXITSTATUS(status) == 130;
                if (ok || cancelled || stop[r] != Stop::No) continue;
                outcome.failures.push_back(describe_exit(static_cast<int>(r), status));
                if (kill_at) continue;
                // The first death ends the job: nothing can finish without every rank, and waiting for
                // the others to notice could take the whole --dist-timeout (a rank in the rendezvous or in
                // the store waits that long for a peer that is gone).
                for (std::size_t other = 0; other < pids.size(); ++other) {
                    if (pids[other] <= 0) continue;
                    ::kill(pids[other], SIGTERM);
                    stop[other] = Stop::Term;
                }
                kill_at = Clock::now() + kStopGrace;
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
        if (kill_at && Clock::now() >= *kill_at) {
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (pids[r] <= 0 || stop[r] == Stop::Kill) continue;
                ::kill(pids[r], SIGKILL);
                stop[r] = Stop::Kill;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (std::size_t r = 0; r < stop.size(); ++r) {
        if (stop[r] == Stop::No) continue;
        outcome.stopped.push_back("rank " + std::to_string(r) +
                                  (stop[r] == Stop::Term ? std::string(" (SIGTERM)")
                                                         : " (SIGKILL: still running " + std::to_string(kStopGrace.count()) +
                                                               " s after SIGTERM)"));
    }
    return outcome;
}

}  // namespace tewb::cli
