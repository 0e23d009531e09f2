#include "core/dist/LocalJob.h"

#include <array>
#include <atomic>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tewb {

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

// The ranks' processes while a job runs, for kill_running_ranks (a signal handler reads them: lock-free atomics).
constexpr std::size_t kMaxRanks = 64;
std::array<std::atomic<pid_t>, kMaxRanks> g_rank_pids{};

void note_rank(std::size_t rank, pid_t pid) {
    if (rank < kMaxRanks) g_rank_pids[rank].store(pid);
}

// What one rank's child needs, made before fork: between fork and exec a child of a multi-threaded process
// may only make async-signal-safe calls (no allocation), so every string and array is ready beforehand.
struct RankLaunch {
    std::vector<std::string> environment;  // the launcher's, with the job's variables set for this rank
    std::vector<char*> envp;
    std::string cannot_start;  // "te-bench: rank 1: cannot start: "
};

// The variables that place a process in a job: set for each rank, whatever the launcher's environment says.
constexpr std::array<std::string_view, 9> kJobVariables = {"RANK",        "LOCAL_RANK",        "WORLD_SIZE",         "MASTER_ADDR",
                                                           "MASTER_PORT", "TEWB_JOB_ID",       kRankRecordVariable,  "TEWB_LAUNCHER_PID",
                                                           "TEWB_LAUNCHER_GPUS"};

// A job id no other job on this machine has: this launcher's process id, the clock and a random number.
std::string new_job_id() {
    std::random_device random;
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    return std::to_string(::getpid()) + "-" + std::to_string(now) + "-" + std::to_string(random());
}

std::vector<RankLaunch> prepare_ranks(const LocalJob& job) {
    std::vector<std::string> inherited;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const std::string_view name = text.substr(0, text.find('='));
        bool placed = false;
        for (const std::string_view variable : kJobVariables) placed = placed || name == variable;
        if (!placed) inherited.emplace_back(text);
    }
    const std::string master_addr = "MASTER_ADDR=127.0.0.1";
    const std::string job_id = "TEWB_JOB_ID=" + new_job_id();
    const std::string launcher_pid = "TEWB_LAUNCHER_PID=" + std::to_string(::getpid());
    std::string launcher_gpus = "TEWB_LAUNCHER_GPUS=";
    for (std::size_t i = 0; i < job.launcher_gpus.size(); ++i) launcher_gpus += (i ? "," : "") + std::to_string(job.launcher_gpus[i]);
    std::vector<RankLaunch> ranks(static_cast<std::size_t>(job.nproc));
    for (int rank = 0; rank < job.nproc; ++rank) {
        RankLaunch& r = ranks[static_cast<std::size_t>(rank)];
        r.environment = inherited;
        r.environment.push_back("RANK=" + std::to_string(rank));
        r.environment.push_back("LOCAL_RANK=" + std::to_string(rank));
        r.environment.push_back("WORLD_SIZE=" + std::to_string(job.nproc));
        r.environment.push_back(master_addr);
        r.environment.push_back("MASTER_PORT=" + std::to_string(job.master_port));
        r.environment.push_back(job_id);
        r.environment.push_back(launcher_pid);
        r.environment.push_back(launcher_gpus);
        r.environment.push_back(std::string(kRankRecordVariable) + "=" + job.record_path);
        for (std::string& e : r.environment) r.envp.push_back(e.data());
        r.envp.push_back(nullptr);
        r.cannot_start = "te-bench: rank " + std::to_string(rank) + ": cannot start: ";
    }
    return ranks;
}

void write_all(int fd, const char* text, std::size_t size) noexcept {
    while (size > 0) {
        const ssize_t n = ::write(fd, text, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        size -= static_cast<std::size_t>(n);
    }
}

// The child's side, from fork to exec: async-signal-safe calls only.
[[noreturn]] void become_rank(const LocalJob& job, char* const* argv, const RankLaunch& launch, pid_t launcher,
                              int output_fd) noexcept {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) ::_exit(125);  // the launcher died before the line above
    // The launcher's handlers (te-bench's, QtTest's) must not run in this copy of it: a SIGTERM that arrives
    // before exec (all signals are blocked from before the fork) meets the default action once unblocked.
    // Ignored signals stay ignored, as exec would keep them (nohup's SIGHUP).
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
        struct sigaction current {};
        if (::sigaction(signal_number, nullptr, &current) != 0) continue;
        if ((current.sa_flags & SA_SIGINFO) == 0 && (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL)) continue;
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        ::sigaction(signal_number, &fallback, nullptr);
    }
    // A rank starts as a process on its own would: no signal blocked by the launcher's thread (a GUI's run
    // thread) where the rank relies on them (a cancel by SIGINT, a stop by SIGTERM), SIGPIPE at its default.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (output_fd >= 0) {
        ::dup2(output_fd, STDOUT_FILENO);
        ::dup2(output_fd, STDERR_FILENO);
    }
    ::execve(job.command.executable.c_str(), argv, launch.envp.data());
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
    const char* why = strerrordesc_np(errno);  // strerror may translate, and allocate
#else
    const char* why = std::strerror(errno);
#endif
    if (why == nullptr) why = "unknown error";
    write_all(STDERR_FILENO, launch.cannot_start.data(), launch.cannot_start.size());
    write_all(STDERR_FILENO, why, std::strlen(why));
    write_all(STDERR_FILENO, "\n", 1);
    ::_exit(127);
}

// The file the ranks' output goes to (closed when the launcher is done with it), or none.
class OutputFile {
public:
    explicit OutputFile(const std::string& path) {
        if (path.empty()) return;
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) throw std::runtime_error("cannot open " + path + " for the ranks' output: " + std::strerror(errno));
    }
    ~OutputFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    int fd() const { return fd_; }

private:
    int fd_ = -1;
};

// Starts every rank; on a failure to fork, kills and reaps the ones started and throws.
std::vector<pid_t> start_ranks(const LocalJob& job) {
    const std::vector<RankLaunch> launches = prepare_ranks(job);
    std::vector<std::string> arguments = job.command.arguments;
    std::vector<char*> argv;
    for (std::string& a : arguments) argv.push_back(a.data());
    argv.push_back(nullptr);
    const OutputFile output(job.command.output);
    std::vector<pid_t> pids(static_cast<std::size_t>(job.nproc), -1);
    const pid_t launcher = ::getpid();
    // Every signal blocked from before each fork until the child has reset the launcher's handlers (see
    // become_rank); the launcher's own mask is restored at once after the fork.
    sigset_t all;
    sigfillset(&all);
    for (int rank = 0; rank < job.nproc; ++rank) {
        sigset_t previous;
        ::pthread_sigmask(SIG_SETMASK, &all, &previous);
        const pid_t pid = ::fork();
        if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        if (pid < 0) {
            const int error = errno;
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (pids[r] <= 0) continue;
                ::kill(pids[r], SIGKILL);
                ::waitpid(pids[r], nullptr, 0);
                note_rank(r, -1);
            }
            throw std::runtime_error(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(error));
        }
        if (pid == 0) become_rank(job, argv.data(), launches[static_cast<std::size_t>(rank)], launcher, output.fd());
        pids[static_cast<std::size_t>(rank)] = pid;
        note_rank(static_cast<std::size_t>(rank), pid);
    }
    return pids;
}

// "rank 0 (SIGTERM)", "rank 2 (SIGKILL: still running 3 s after SIGTERM)"
enum class Stop { No, Term, Kill };  // what the launcher did to a rank after the first failure

std::string stopped_text(std::size_t rank, Stop stop) {
    return "rank " + std::to_string(rank) +
           (stop == Stop::Term ? std::string(" (SIGTERM)")
                               : " (SIGKILL: still running " + std::to_string(kStopGrace.count()) + " s after SIGTERM)");
}

// Watches the started ranks to their end (LocalJob.h says how a failure ends the job).
class RankWatch {
public:
    RankWatch(std::vector<pid_t> pids, const std::atomic<bool>& cancel)
        : pids_(std::move(pids)), stop_(pids_.size(), Stop::No), running_(static_cast<int>(pids_.size())), cancel_(cancel) {}

    LocalJobOutcome run() {
        while (running_ > 0) {
            if (reap_one()) continue;
            pass_on_cancel();
            kill_after_grace();
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        for (std::size_t r = 0; r < stop_.size(); ++r) {
            if (stop_[r] != Stop::No) outcome_.stopped.push_back(stopped_text(r, stop_[r]));
        }
        return outcome_;
    }

private:
    // Whether a rank has ended (it is then accounted for). Waits for this job's ranks only: another child of
    // the process (a GUI's other programs) is left to whoever started it.
    bool reap_one() {
        for (std::size_t r = 0; r < pids_.size(); ++r) {
            if (pids_[r] <= 0) continue;
            int status = 0;
            const pid_t done = ::waitpid(pids_[r], &status, WNOHANG);
            if (done == 0 || (done < 0 && errno == EINTR)) continue;
            pids_[r] = -1;
            note_rank(r, -1);
            --running_;
            if (done > 0) ended(r, status);  // ECHILD: reaped elsewhere (SIGCHLD ignored); rank 0's record tells
            return true;
        }
        return false;
    }

    void ended(std::size_t r, int status) {
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        // 130 after Ctrl-C: the rank was cancelled, which is not a failure of the job; so is a rank that the
        // same Ctrl-C ended before it had installed its handler (it was still starting). A rank this launcher
        // stopped ends however it ends, as a consequence of the first failure.
        const bool after_cancel = interrupted_ || cancel_.load();
        const bool cancelled = after_cancel && ((WIFEXITED(status) && WEXITSTATUS(status) == 130) ||
                                                (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT));
        if (ok || cancelled || stop_[r] != Stop::No) return;
        outcome_.failures.push_back(describe_exit(static_cast<int>(r), status));
        if (kill_at_) return;
        // The first death ends the job: nothing can finish without every rank, and waiting for the others to
        // notice could take the whole --dist-timeout (a rank in the rendezvous or in the store waits that
        // long for a peer that is gone).
        for (std::size_t other = 0; other < pids_.size(); ++other) {
            if (pids_[other] <= 0) continue;
            ::kill(pids_[other], SIGTERM);
            stop_[other] = Stop::Term;
        }
        kill_at_ = Clock::now() + kStopGrace;
    }

    void pass_on_cancel() {
        if (!cancel_.load() || interrupted_) return;
        interrupted_ = true;
        for (const pid_t pid : pids_) {
            if (pid > 0) ::kill(pid, SIGINT);
        }
    }

    void kill_after_grace() {
        if (!kill_at_ || Clock::now() < *kill_at_) return;
        for (std::size_t r = 0; r < pids_.size(); ++r) {
            if (pids_[r] <= 0 || stop_[r] == Stop::Kill) continue;
            ::kill(pids_[r], SIGKILL);
            stop_[r] = Stop::Kill;
        }
    }

    std::vector<pid_t> pids_;
    std::vector<Stop> stop_;
    int running_;
    const std::atomic<bool>& cancel_;
    bool interrupted_ = false;
    std::optional<Clock::time_point> kill_at_;  // after the first failure: SIGKILL for whoever is left
    LocalJobOutcome outcome_;
};

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

void kill_running_ranks() noexcept {
    for (std::atomic<pid_t>& pid : g_rank_pids) {
        if (const pid_t p = pid.load(); p > 0) ::kill(p, SIGKILL);
    }
}

LocalJobOutcome run_local_job(const LocalJob& job, const std::atomic<bool>& cancel,
                              const std::function<void(const std::vector<int>& pids)>& started) {
    std::vector<pid_t> pids = start_ranks(job);
    if (started) started(std::vector<int>(pids.begin(), pids.end()));
    return RankWatch(std::move(pids), cancel).run();
}

}  // namespace tewb
