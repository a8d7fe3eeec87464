#include "agent/runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "agent/job_env.hpp"
#include "agent/job_user.hpp"
#include "common/exec/process.hpp"
#include "common/util/error.hpp"
#include "common/util/log.hpp"

extern char** environ;

namespace jobctl::agent {
namespace {

// A run ended before its process started.
Finished ended_unstarted(store::ClaimedRun run, Ending why) {
  Finished f;
  f.run = std::move(run);
  f.ending = why;
  f.ran = false;
  return f;
}

}  // namespace

Runner::~Runner() {
  for (auto& [pid, job] : jobs_) {
    exec::signal_group(pid, SIGKILL);
    if (job.out_fd >= 0) close(job.out_fd);
    if (job.err_fd >= 0) close(job.err_fd);
  }
}

std::optional<std::string> Runner::start(const store::ClaimedRun& run) {
  std::string user = job_user(run.spec, opts_);
  if (auto refused = refuse_user(user, opts_)) return refused;
  if (user == opts_.own_user) user.clear();  // nothing to switch
  // Read at the first start: by then the agent has set job_db and taken
  // its secrets out of its environment.
  if (!environment_) environment_.emplace(environ, opts_.job_db);
  exec::SpawnRequest req{run.spec.command.exec_argv(),
                         environment_->for_run(run, user.empty() ? OtherUser::no : OtherUser::yes), run.spec.cwd,
                         run.spec.payload.value_or(""), user};
  queued_.push_back(Queued{run, std::move(req)});
  send_queued();
  return std::nullopt;
}

// Once the supervisor is gone, nothing is sent: the next reap() says so,
// and the agent stops, leaving the queued runs to their leases (they are
// not the jobs' failures).
void Runner::send_queued() {
  while (!queued_.empty() && !supervisor_.lost() && supervisor_.unanswered() < exec::Supervisor::kWindow) {
    Queued& q = queued_.front();
    exec::Fd out, err;
    try {
      const uint32_t ticket = supervisor_.request_spawn(q.request, out, err);
      starting_.emplace(ticket, Starting{std::move(q.run), std::move(out), std::move(err)});
    } catch (const Error& e) {
      if (supervisor_.lost()) return;
      // The agent's own trouble (no memory, no descriptors), not the job's: tried again later.
      failed_starts_.push_back(StartFailure{std::move(q.run), e.with_hint(), Permanent::no});
    }
    queued_.pop_front();
  }
}

void Runner::settle_starts() {
  if (!starting_.empty()) take_reports(0);
}

void Runner::unqueue(Ending why) {
  for (auto& q : queued_)
    finished_.push_back(ended_unstarted(std::move(q.run), why));
  queued_.clear();
}

std::vector<StartFailure> Runner::start_failures() { return std::exchange(failed_starts_, {}); }

// In the order the supervisor reported them: a pid may be reused, and an
// earlier process's exit must end that one, not the next.
void Runner::take_reports(size_t leave) {
  for (auto& r : supervisor_.reports(leave)) {
    if (r.kind == exec::Supervisor::Report::Kind::exit) {
      finish(r.pid, r.status);
      continue;
    }
    auto it = starting_.find(r.ticket);
    if (it == starting_.end()) continue;
    Starting s = std::move(it->second);
    starting_.erase(it);
    if (r.pid < 0) {
      failed_starts_.push_back(StartFailure{std::move(s.run), std::move(r.error),
                                            r.code == ExitCode::usage ? Permanent::yes : Permanent::no});
      continue;
    }
    const auto started = Clock::now();
    Job job{std::move(s.run), r.pid, s.out.release(), s.err.release(), exec::OutputTail(opts_.output_limit),
            exec::OutputTail(opts_.output_limit), started, std::nullopt, std::nullopt, Ending::none, 0, 0,
            started + kShipOutputEvery, false};
    if (job.run.spec.timeout_us > 0) job.deadline = job.started + std::chrono::microseconds(job.run.spec.timeout_us);
    jobs_.emplace(r.pid, std::move(job));
  }
}

void Runner::poll_fds(std::vector<pollfd>& fds) {
  fds_from_ = fds.size();
  fds.push_back({supervisor_.fd(), POLLIN, 0});
  for (const auto& [pid, job] : jobs_) {
    if (job.out_fd >= 0) fds.push_back({job.out_fd, POLLIN, 0});
    if (job.err_fd >= 0) fds.push_back({job.err_fd, POLLIN, 0});
  }
}

void Runner::handle_events(const std::vector<pollfd>& fds) {
  // The jobs are those poll_fds() listed, in the same order: none ended
  // or started between the two.
  size_t i = fds_from_ + 1;
  for (auto& [pid, job] : jobs_) {
    if (job.out_fd >= 0 && fds.at(i++).revents) drain_fd(job.out_fd, job.out);
    if (job.err_fd >= 0 && fds.at(i++).revents) drain_fd(job.err_fd, job.err);
  }
}

void Runner::drain_fd(int& fd, exec::OutputTail& tail) {
  if (fd < 0) return;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      tail.append(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      close(fd);
      fd = -1;
    }
    return;
  }
}

std::vector<Finished> Runner::reap() {
  take_reports(supervisor_.unanswered());
  send_queued();
  return std::exchange(finished_, {});
}

void Runner::finish(pid_t pid, int status) {
  auto it = jobs_.find(pid);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  // The command is over: take the output it left in the pipes, then end
  // anything it left behind in its process group.
  drain_fd(job.out_fd, job.out);
  drain_fd(job.err_fd, job.err);
  exec::signal_group(pid, SIGKILL);
  if (job.out_fd >= 0) close(job.out_fd);
  if (job.err_fd >= 0) close(job.err_fd);
  finished_.push_back(Finished{std::move(job.run), job.ending, status, job.out.str(), job.err.str(),
                               Clock::now() - job.started, std::nullopt, static_cast<int64_t>(job.out.total()),
                               static_cast<int64_t>(job.err.total())});
  jobs_.erase(it);
}

void Runner::terminate(Job& job, Ending why, Now immediately) {
  if (job.ending == Ending::none || why == Ending::lost || why == Ending::drain) job.ending = why;
  if (immediately == Now::yes) {
    exec::signal_group(job.pid, SIGKILL);
    job.kill_at.reset();
    return;
  }
  if (job.kill_at) return;  // already on its way out
  exec::signal_group(job.pid, SIGTERM);
  job.kill_at = Clock::now() + opts_.kill_grace;
}

Runner::Job* Runner::find(const std::string& run_id) {
  for (auto& [pid, job] : jobs_)
    if (job.run.run_id == run_id) return &job;
  return nullptr;
}

void Runner::stop(const std::string& run_id, Ending why, Now immediately) {
  auto queued = std::find_if(queued_.begin(), queued_.end(), [&](const Queued& q) { return q.run.run_id == run_id; });
  if (queued != queued_.end()) {
    finished_.push_back(ended_unstarted(std::move(queued->run), why));
    queued_.erase(queued);
    return;
  }
  // Still starting: its answer first (the others' come with it).
  if (std::any_of(starting_.begin(), starting_.end(), [&](const auto& s) { return s.second.run.run_id == run_id; }))
    settle_starts();
  if (Job* job = find(run_id)) terminate(*job, why, why == Ending::lost ? Now::yes : immediately);
}

void Runner::stop_all(Ending why, Now immediately) {
  unqueue(why);
  settle_starts();
  for (auto& [pid, job] : jobs_) terminate(job, why, immediately);
}

void Runner::enforce_deadlines(Clock::time_point now) {
  for (auto& [pid, job] : jobs_) {
    if (job.kill_at && now >= *job.kill_at) {
      exec::signal_group(pid, SIGKILL);
      job.kill_at.reset();
    } else if (job.deadline && now >= *job.deadline && job.ending == Ending::none) {
      util::log_event(util::LogLevel::warn, "timeout", {{"run_id", job.run.run_id}, {"job_id", job.run.job_id}});
      terminate(job, Ending::timeout, Now::no);
    }
  }
}

std::optional<Clock::time_point> Runner::next_deadline() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](const std::optional<Clock::time_point>& t) {
    if (t && (!next || *t < *next)) next = t;
  };
  for (const auto& [pid, job] : jobs_) {
    consider(job.kill_at);
    if (job.ending == Ending::none) consider(job.deadline);
  }
  consider(supervisor_.next_give_up());  // reap() gives up on a start S has not answered
  return next;
}

std::vector<store::LiveOutput> Runner::output_due(Clock::time_point now) {
  std::vector<store::LiveOutput> due;
  for (auto& [pid, job] : jobs_) {
    if (now < job.next_ship || !job.unshipped()) continue;
    due.push_back({job.run.run_id, job.run.attempt, job.out.str(), job.err.str(),
                   static_cast<int64_t>(job.out.total()), static_cast<int64_t>(job.err.total())});
    job.shipped_out = job.out.total();
    job.shipped_err = job.err.total();
    job.ship_failed = false;
    job.next_ship = now + kShipOutputEvery;
  }
  return due;
}

std::optional<Clock::time_point> Runner::next_output_due() const {
  std::optional<Clock::time_point> next;
  for (const auto& [pid, job] : jobs_)
    if (job.unshipped() && (!next || job.next_ship < *next)) next = job.next_ship;
  return next;
}

void Runner::ship_again(const std::vector<std::string>& run_ids) {
  for (const auto& id : run_ids)
    if (Job* job = find(id)) job->ship_failed = true;
}

std::string Runner::job_of(const std::string& run_id) const {
  if (const Job* job = find(run_id)) return job->run.job_id;
  for (const auto& [ticket, s] : starting_)
    if (s.run.run_id == run_id) return s.run.job_id;
  for (const auto& q : queued_)
    if (q.run.run_id == run_id) return q.run.job_id;
  return {};
}

std::vector<std::string> Runner::run_ids() const {
  std::vector<std::string> ids;
  for (const auto& [pid, job] : jobs_) ids.push_back(job.run.run_id);
  for (const auto& [ticket, s] : starting_) ids.push_back(s.run.run_id);
  for (const auto& q : queued_) ids.push_back(q.run.run_id);
  return ids;
}

}  // namespace jobctl::agent
