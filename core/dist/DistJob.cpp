#include "core/dist/DistJob.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sstream>
#include <thread>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ops/isnan.h>
#include <c10/util/Logging.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/where.h>
#include <ATen/ops/full_like.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#ifdef TEWB_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef TEWB_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "core/common/Error.h"
#include "core/common/TextCheck.h"
#include "core/results/RecordJson.h"

namespace tewb {

namespace {

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

std::string seconds_text(std::chrono::milliseconds t) {
    std::ostringstream out;
    out << static_cast<double>(t.count()) / 1000.0 << " s";
    return out.str();
}

std::string config_key(int rank) {
    return "tewb/config/" + std::to_string(rank);
}

constexpr const char* kVerdict = "tewb/verdict";
constexpr const char* kAgreed = "ok";

std::string text_of(const std::vector<std::uint8_t>& bytes) {
    return std::string(bytes.begin(), bytes.end());
}

// The settings where two ranks' configurations differ, as "batch (8 here, 16 at rank 0)".
std::string config_differences(const std::string& mine, const std::string& reference) {
    const nlohmann::json a = nlohmann::json::parse(mine, nullptr, false);
    const nlohmann::json b = nlohmann::json::parse(reference, nullptr, false);
    if (a.is_discarded() || b.is_discarded()) return "an unreadable configuration";
    std::vector<std::string> fields;
    const nlohmann::json flat_a = a.flatten();
    const nlohmann::json flat_b = b.flatten();
    for (auto it = flat_b.begin(); it != flat_b.end(); ++it) {
        const auto other = flat_a.find(it.key());
        if (other == flat_a.end() || *other != it.value()) {
            fields.push_back(it.key().substr(1) + " (" + (other == flat_a.end() ? std::string("missing") : other->dump()) +
                             " there, " + it.value().dump() + " at rank 0)");
        }
    }
    for (auto it = flat_a.begin(); it != flat_a.end(); ++it) {
        if (!flat_b.contains(it.key())) fields.push_back(it.key().substr(1) + " (only there)");
    }
    std::string out;
    for (const std::string& f : fields) out += (out.empty() ? "" : ", ") + f;
    return out;
}

bool stop_requested(const std::atomic<bool>* cancel) {
    return cancel != nullptr && cancel->load();
}

// "rank 2", "ranks 1, 3"
std::string ranks_text(const std::vector<int>& ranks) {
    std::string list;
    for (const int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    return std::string(ranks.size() == 1 ? "rank " : "ranks ") + list;
}

c10::intrusive_ptr<c10d::Backend> make_group(const DistJob& job, const c10::intrusive_ptr<c10d::Store>& store) {
    switch (job.backend) {
        case DistBackend::Gloo: {
#ifdef TEWB_HAVE_GLOO
            auto options = c10d::ProcessGroupGloo::Options::create(job.timeout);
            options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
            return c10::make_intrusive<c10d::ProcessGroupGloo>(store, job.rank(), job.world_size(), options);
#else
            break;
#endif
        }
        case DistBackend::Nccl: {
#ifdef TEWB_HAVE_NCCL
            // The collectives are waited for on the stream (wait_for): NCCL's watchdog is what bounds them by the
            // job's timeout, and with its error handling off a hung collective would hang the job for ever.
            if (const char* handling = std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");
                handling != nullptr && std::string(handling) == "0") {
                throw DistError(job.who() +
                                "TORCH_NCCL_ASYNC_ERROR_HANDLING=0 turns off NCCL's watchdog, which ends a collective that "
                                "passes the job's timeout; unset it, or set 1, 2 or 3");
            }
            auto options = c10d::ProcessGroupNCCL::Options::create();
            options->timeout = job.timeout;
            return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, job.rank(), job.world_size(), options);
#else
            break;
#endif
        }
        case DistBackend::Auto: break;
    }
    std::string why;
    dist_backend_built(job.backend, &why);
    throw DistError(job.who() + why);
}

}  // namespace

bool dist_backend_built(DistBackend backend, std::string* why) {
    (void)why;  // unused where this build has both backends
    switch (backend) {
        case DistBackend::Gloo:
#ifdef TEWB_HAVE_GLOO
            return true;
#else
            if (why) *why = "this build has no Gloo backend (it was configured without Gloo's headers, Debian's libgloo-dev)";
            return false;
#endif
        case DistBackend::Nccl:
#ifdef TEWB_HAVE_NCCL
            return true;
#else
            if (why) *why = "this build has no NCCL backend (it needs a CUDA LibTorch and NCCL's headers from the nvidia-nccl wheel)";
            return false;
#endif
        case DistBackend::Auto: return true;
    }
    return false;
}

void run_collective(const DistJob& job, const char* what, const std::function<void()>& collective) {
    try {
        collective();
    } catch (const DistError&) {
        throw;
    } catch (const std::exception& e) {
        throw DistError(job.who() + what + " failed: " + first_line(e.what()) + " (another rank stopped, or did not answer within " +
                        seconds_text(job.timeout) + ")");
    }
}

namespace {

// The job's settings from the configuration, refused when the launcher's environment or this build cannot
// run them.
std::unique_ptr<DistJob> job_for(const WorkerEnv& env, const RunConfig& resolved) {
    auto job = std::make_unique<DistJob>();
    job->env = env;
    job->backend = resolved.dist.backend;
    job->timeout = std::chrono::milliseconds(static_cast<std::int64_t>(resolved.dist.timeout_s) * 1000);
    if (env.world_size != resolved.dist.world_size()) {
        throw DistError(job->who() + "WORLD_SIZE is " + std::to_string(env.world_size) + " but the run asks for --nproc " +
                        std::to_string(resolved.dist.nproc) + "; give every process the same --nproc as WORLD_SIZE");
    }
    std::string why;
    if (!dist_backend_built(job->backend, &why)) throw DistError(job->who() + why);
    return job;
}

// Rank 0 writes its job's id into the rendezvous it serves; every other rank reads it before it writes anything
// there. A rank whose own rank 0 could not take the port (another job holds it) reaches that other job's
// rendezvous: it stops at once, and the other job never sees it.
void check_it_is_this_jobs(const DistJob& job) {
    constexpr const char* kJobKey = "tewb/job";
    if (job.rank() == 0) {
        job.store->set(kJobKey, job.env.job_id);
        return;
    }
    if (job.env.job_id.empty()) return;  // a launcher that names no job: nothing to check against
    const auto deadline = std::chrono::steady_clock::now() + job.timeout;
    while (!job.store->check({kJobKey})) {
        if (std::chrono::steady_clock::now() >= deadline) {
            throw DistError(job.who() + "the rendezvous at " + job.env.master_addr + ":" + std::to_string(job.env.master_port) +
                            " names no job within " + seconds_text(job.timeout) + " (it is not one of this program's jobs)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string theirs = text_of(job.store->get(kJobKey));
    if (theirs != job.env.job_id) {
        throw DistError(job.who() + "the rendezvous at " + job.env.master_addr + ":" + std::to_string(job.env.master_port) +
                        " is another job's (its id '" + printable_text(theirs) + "', this job's '" + printable_text(job.env.job_id) +
                        "'): that job holds the port; choose a free one with --master-port or MASTER_PORT");
    }
}

// What LibTorch's store would say wrongly: it reports any failure of its address lookup as "Cannot resolve", a
// process out of file descriptors included, and rank 0 then blamed the port. Checked first, said as it is.
void check_rendezvous_reachable(const DistJob& job) {
    const int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
        const int error = errno;
        throw DistError(job.who() + "cannot open a socket for the rendezvous (" + std::strerror(error) + ")" +
                        (error == EMFILE || error == ENFILE ? "; this process is out of file descriptors: raise `ulimit -n`" : ""));
    }
    close(probe);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    errno = 0;
    const int rc = getaddrinfo(job.env.master_addr.c_str(), nullptr, &hints, &found);
    if (rc == 0) {
        freeaddrinfo(found);
        return;
    }
    const std::string why = rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : std::string(gai_strerror(rc));
    throw DistError(job.who() + "MASTER_ADDR '" + with_long_values_cut(printable_text(job.env.master_addr)) +
                    "' cannot be resolved (" + why + "); allowed: a host name or address of the machine that runs rank 0, "
                    "e.g. 127.0.0.1 on one machine");
}

// The rendezvous: rank 0 serves the TCPStore at MASTER_ADDR:PORT, the others connect to it.
void open_store(DistJob& job) {
    check_rendezvous_reachable(job);
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(job.env.master_port);
    options.isServer = job.rank() == 0;
    options.waitWorkers = false;
    options.timeout = job.timeout;
    try {
        job.store = c10::make_intrusive<c10d::TCPStore>(job.env.master_addr, options);
    } catch (const std::exception& e) {
        const std::string where = job.env.master_addr + ":" + std::to_string(job.env.master_port);
        if (job.rank() == 0) {
            const std::string text = e.what();
            const bool in_use = text.find("EADDRINUSE") != std::string::npos || text.find("already in use") != std::string::npos;
            throw DistError(job.who() + "cannot serve the rendezvous at " + where + ": " + first_line(text) +
                            (in_use ? " (the port is in use, by another job or program: choose another with MASTER_PORT or --master-port)"
                                    : ""));
        }
        throw DistError(job.who() + "no rendezvous at " + where + " within " + seconds_text(job.timeout) + ": " +
                        first_line(e.what()) + " (rank 0 did not start, or MASTER_ADDR / MASTER_PORT differ)");
    }
    check_it_is_this_jobs(job);
}

// Rank 0: waits until every other rank has announced itself; kAgreed, or why the job cannot form (a rank
// that did not arrive within the timeout, or a signal).
std::string wait_for_arrivals(const DistJob& job, const std::atomic<bool>* cancel) {
    const auto deadline = std::chrono::steady_clock::now() + job.timeout;
    while (true) {
        std::vector<int> missing;
        for (int r = 1; r < job.world_size(); ++r) {
            if (!job.store->check({config_key(r)})) missing.push_back(r);
        }
        if (missing.empty()) return kAgreed;
        if (stop_requested(cancel)) {
            return "rank 0 was stopped by a signal while waiting for " + ranks_text(missing) + " to arrive";
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return ranks_text(missing) + " did not arrive within " + seconds_text(job.timeout) +
                   " (not started, crashed, or pointed at another MASTER_ADDR / MASTER_PORT)";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// Rank 0, every rank arrived: kAgreed, or the first rank whose configuration differs from `mine`, and how.
std::string compare_configurations(const DistJob& job, const std::string& mine) {
    for (int r = 1; r < job.world_size(); ++r) {
        const std::string theirs = text_of(job.store->get(config_key(r)));
        if (theirs != mine) {
            return "rank " + std::to_string(r) + "'s configuration differs from rank 0's: " + config_differences(theirs, mine) +
                   "; start every rank with the same settings";
        }
    }
    return kAgreed;
}

// Rank 0, after a verdict that stops the job: the store lives in this process, so it stays up until the
// ranks that came have read the verdict (at most a few seconds), so that they stop with it rather than with
// a lost connection. Stopped by a signal, it must not linger: whoever stops it (a launcher) kills it soon after.
void keep_store_until_verdict_read(const DistJob& job, const std::atomic<bool>* cancel) {
    const auto keep_up = stop_requested(cancel) ? std::chrono::milliseconds(500) : std::chrono::milliseconds(5000);
    const auto until = std::chrono::steady_clock::now() + std::min(job.timeout, keep_up);
    for (int r = 1; r < job.world_size(); ++r) {
        if (!job.store->check({config_key(r)})) continue;
        while (!job.store->check({"tewb/verdict-read/" + std::to_string(r)}) && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
}

// Rank 0: waits for the others, compares their configurations with `mine` and gives every rank the verdict;
// throws it when it stops the job.
void give_verdict(const DistJob& job, const std::string& mine, const std::atomic<bool>* cancel) {
    std::string verdict = wait_for_arrivals(job, cancel);
    if (verdict == kAgreed) verdict = compare_configurations(job, mine);
    job.store->set(kVerdict, verdict);
    if (verdict == kAgreed) return;
    keep_store_until_verdict_read(job, cancel);
    throw DistError(job.who() + verdict);
}

// Every other rank: waits for rank 0's verdict, polled rather than one blocking wait, so that a signal (a
// launcher stopping the job) ends it at once; throws when it stops the job.
void await_verdict(const DistJob& job, const std::atomic<bool>* cancel) {
    const auto deadline = std::chrono::steady_clock::now() + job.timeout;
    while (true) {
        bool given = false;
        try {
            given = job.store->check({kVerdict});
        } catch (const std::exception& e) {
            throw DistError(job.who() + "lost the rendezvous with rank 0 before its verdict on the job: " + first_line(e.what()) +
                            " (rank 0 stopped)");
        }
        if (given) break;
        if (stop_requested(cancel)) {
            throw DistError(job.who() + "stopped by a signal while waiting for rank 0's verdict on the job");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            throw DistError(job.who() + "rank 0 gave no verdict on the job within " + seconds_text(job.timeout) +
                            " (it stopped, or waits for a rank that never came)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string verdict = text_of(job.store->get(kVerdict));
    job.store->set("tewb/verdict-read/" + std::to_string(job.rank()), "1");
    if (verdict != kAgreed) throw DistError(job.who() + "stopped by rank 0: " + verdict);
}

// LibTorch's distributed code logs each retry and failure itself, with the C++ stack frames of the exception
// (about 40 lines before this program's own message, which says the same in one line). A rank keeps only its
// fatal lines; TEWB_TORCH_LOG=1 keeps them all, frames included, for a report of a LibTorch problem.
void quiet_libtorch_log() {
    const char* keep = std::getenv("TEWB_TORCH_LOG");
    if (keep != nullptr && std::string_view(keep) == "1") return;
    FLAGS_caffe2_log_level = c10::GLOG_FATAL;
}

}  // namespace

std::unique_ptr<DistJob> join_job(const WorkerEnv& env, const RunConfig& resolved, const std::atomic<bool>* cancel) {
    quiet_libtorch_log();
    std::unique_ptr<DistJob> job = job_for(env, resolved);
    open_store(*job);
    // Announce this rank and its configuration; rank 0 gives the verdict for all.
    const std::string mine = to_json(resolved).dump();
    job->store->set(config_key(env.rank), mine);
    if (env.rank == 0) {
        give_verdict(*job, mine, cancel);
    } else {
        await_verdict(*job, cancel);
    }
    const auto group_store = c10::make_intrusive<c10d::PrefixStore>("tewb/group", job->store);
    run_collective(*job, "forming the process group", [&] { job->group = make_group(*job, group_store); });
    return job;
}

void wait_for(const DistJob& job, c10d::Work& work) {
    if (job.backend == DistBackend::Nccl) {
        work.wait();
    } else {
        work.wait(job.timeout);
    }
}

c10d::ReduceOp average_op(const DistJob& job) {
    return job.backend == DistBackend::Nccl ? c10d::ReduceOp(c10d::ReduceOp::AVG) : c10d::ReduceOp(c10d::ReduceOp::SUM);
}

bool average_needs_division(const DistJob& job) {
    return job.backend != DistBackend::Nccl && job.world_size() > 1;
}

void broadcast_from_rank0(DistJob& job, std::vector<at::Tensor> tensors) {
    run_collective(job, "broadcasting rank 0's weights", [&] {
        c10d::BroadcastOptions options;
        options.rootRank = 0;
        options.timeout = job.timeout;
        for (at::Tensor& t : tensors) {
            std::vector<at::Tensor> one{t};
            wait_for(job, *job.group->broadcast(one, options));
        }
    });
}

at::Tensor mean_over_ranks(DistJob& job, const at::Tensor& value) {
    std::vector<at::Tensor> one{value.detach().clone()};
    run_collective(job, "averaging the loss", [&] {
        c10d::AllreduceOptions options;
        options.reduceOp = average_op(job);
        options.timeout = job.timeout;
        wait_for(job, *job.group->allreduce(one, options));
    });
    if (average_needs_division(job)) one[0].div_(job.world_size());
    return one[0];
}

void max_over_ranks_nan_wins(DistJob& job, const at::Tensor& values) {
    const at::Tensor v = values.to(at::kFloat);
    const at::Tensor nan = at::isnan(v);
    // One reduction for both: the values with NaN as -inf, and whether any rank saw a NaN.
    std::vector<at::Tensor> both{at::stack({at::where(nan, at::full_like(v, -INFINITY), v), nan.to(at::kFloat)})};
    run_collective(job, "reducing the FP8 amaxes", [&] {
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::MAX;
        options.timeout = job.timeout;
        wait_for(job, *job.group->allreduce(both, options));
    });
    values.copy_(at::where(both[0][1] > 0, at::full_like(v, NAN), both[0][0]));
}

std::vector<std::vector<double>> gather_at_rank0(DistJob& job, const std::string& key, const std::vector<double>& values) {
    std::ostringstream text;
    text.precision(17);
    for (const double v : values) text << v << ' ';
    const std::string prefix = "tewb/gather/" + key + "/";
    std::vector<std::vector<double>> out;
    run_collective(job, "gathering the ranks' step times", [&] {
        job.store->set(prefix + std::to_string(job.rank()), text.str());
        if (job.rank() != 0) return;
        for (int r = 0; r < job.world_size(); ++r) {
            std::istringstream in(text_of(job.store->get(prefix + std::to_string(r))));
            std::vector<double> row;
            double v = 0;
            while (in >> v) row.push_back(v);
            out.push_back(std::move(row));
        }
    });
    return out;
}

}  // namespace tewb
