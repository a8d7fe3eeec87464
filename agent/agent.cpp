#include "agent/agent.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "agent/incarnation.hpp"
#include "agent/outcome.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/host.hpp"
#include "common/util/log.hpp"
#include "common/util/time.hpp"

extern char** environ;

namespace jobctl::agent {
namespace {

using util::log_event;
using util::LogLevel;
using std::chrono::duration_cast;
using std::chrono::microseconds;

// The agent reads its signals from a descriptor instead of handlers:
// nothing runs asynchronously, the loop sees them like any other event.
int open_signal_fd() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

}  // namespace

Agent::Agent(Options opts)
    : opts_(std::move(opts)),
      dsn_(config::resolve_dsn(opts_.db)),
      runner_(opts_),
      secrets_(Secrets::load(environ, opts_.secrets_file)),
      webhooks_(opts_, secrets_) {
  if (opts_.name.empty()) opts_.name = util::host_name();
  store_ = store::Store::open(dsn_);
  // A job may run in another directory (--cwd): a SQLite path is made absolute.
  if (opts_.export_db)
    opts_.job_db = dsn_.backend == config::Backend::sqlite
                       ? "sqlite:" + std::filesystem::absolute(dsn_.target).lexically_normal().string()
                       : dsn_.target;
  store_->require_schema();
  signal_fd_ = open_signal_fd();
  wakeups_ = store::Wakeups::open(dsn_, opts_.queues, opts_.listen);
  store::WorkerRegistration reg{opts_.name, util::host_name(), static_cast<int>(getpid()), opts_.queues,
                                opts_.concurrency, JOBCTL_VERSION,
                                duration_cast<microseconds>(opts_.lease).count(), opts_.labels};
  worker_id_ = store_->register_worker(reg);
  take_over(*store_, runner_, opts_, worker_id_);  // this incarnation's lock; a dead earlier one's runs back
  metrics_.version = JOBCTL_VERSION;
  metrics_.worker = opts_.name;
  metrics_.slots = opts_.concurrency;
  if (!opts_.metrics_addr.empty()) {
    metrics_server_ = std::make_unique<MetricsServer>(opts_.metrics_addr);
    log_event(LogLevel::info, "metrics_listening", {{"addr", metrics_server_->address()}});
  }
  std::string queues;
  for (const auto& q : opts_.queues) queues += (queues.empty() ? "" : ",") + q;
  log_event(LogLevel::info, "started",
            {{"worker_id", worker_id_}, {"name", opts_.name}, {"db", config::redacted(dsn_)}, {"queues", queues},
             {"concurrency", std::to_string(opts_.concurrency)}, {"version", JOBCTL_VERSION},
             {"secrets", std::to_string(secrets_.size())}});
  systemd_.ready(fmt::format("claiming from {} as {}, {} slots", queues, opts_.name, opts_.concurrency));
}

Agent::~Agent() {
  if (signal_fd_ >= 0) close(signal_fd_);
}

int Agent::run() {
  while (phase_ != Phase::stopping) {
    auto now = Clock::now();
    // Signals first: a drain must stop the claim below.
    handle_signals();
    // Finished processes become completions, recorded fenced in one batch.
    collect_finished();
    flush_reports();
    // Keep our leases alive; learn of cancels and of runs we lost.
    heartbeat_if_due(now);
    systemd_.watchdog_if_due(now);
    // Timeouts and SIGTERM→SIGKILL escalations.
    runner_.enforce_deadlines(now);
    webhooks_.handle_timeout(now);
    // As the scheduler leader: turn cron occurrences into runs.
    lead_if_due(now);
    schedule_if_due(now);
    gc_if_due(now);
    // Fill free slots with due runs.
    claim_if_free(now);
    if (phase_ == Phase::draining && running() == 0 && completions_.empty()) break;
    if (phase_ == Phase::draining && now >= drain_deadline_ && running() > 0) {
      log_event(LogLevel::warn, "drain_timeout", {{"running", std::to_string(running())}});
      stop_all_runs(Ending::drain, Runner::Now::yes);
      drain_deadline_ = Clock::time_point::max();  // once; then wait for their exits, not spin
    }
    wait_for_events(now);
  }
  shut_down();
  return 0;
}

void Agent::handle_signals() {
  signalfd_siginfo si;
  while (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGHUP) reload_secrets();
    if (sig != SIGTERM && sig != SIGINT) continue;  // SIGCHLD: reaped below
    if (phase_ == Phase::running) {
      phase_ = Phase::draining;
      drain_deadline_ = Clock::now() + opts_.drain_timeout;
      log_event(LogLevel::info, "draining",
                {{"running", std::to_string(running())},
                 {"drain_timeout", util::format_duration(duration_cast<microseconds>(opts_.drain_timeout))}});
      with_store("drain", [&] { store_->set_worker_state(worker_id_, model::WorkerState::draining); });
      systemd_.stopping(fmt::format("draining: {} running", running()));
      next_lead_ = Clock::now();  // resign the scheduler lease at once
    } else {
      // A second signal: stop now, giving every run back.
      log_event(LogLevel::warn, "stopping", {{"running", std::to_string(running())}});
      stop_all_runs(Ending::drain, Runner::Now::yes);
      phase_ = Phase::stopping;
    }
  }
}

void Agent::collect_finished() {
  runner_.read_output();
  auto finished = runner_.reap();
  for (auto& f : webhooks_.collect()) finished.push_back(std::move(f));
  for (auto& f : finished) {
    std::vector<std::pair<std::string, std::string>> fields{{"run_id", f.run.run_id}, {"job_id", f.run.job_id}};
    if (f.ending == Ending::lost) {
      log_event(LogLevel::warn, "lease_lost", fields);
      continue;  // another agent owns the run now: report nothing
    }
    store::Completion c = outcome_of(f, rng_);
    count_finished(f, c);
    fields.emplace_back("attempt", std::to_string(f.run.attempt));
    fields.emplace_back("duration", util::format_duration(duration_cast<microseconds>(f.elapsed)));
    if (c.outcome == "released") {
      log_event(LogLevel::info, "released", fields);
      releases_.push_back(std::move(c));
      continue;
    }
    fields.emplace_back("status", std::string(model::to_string(c.status)));
    if (c.status == model::RunStatus::pending)
      fields.emplace_back("retry_in", util::format_duration(microseconds(c.retry_delay_us)));
    if (!c.error.empty()) fields.emplace_back("error", c.error);
    log_event(c.status == model::RunStatus::succeeded ? LogLevel::info : LogLevel::warn, "finished", fields);
    completions_.push_back(std::move(c));
  }
  if (phase_ == Phase::stopping || !releases_.empty()) flush_reports();
}

void Agent::flush_reports() {
  if (!completions_.empty()) {
    with_store("complete", [&] {
      auto applied = store_->complete(completions_);
      for (size_t i = 0; i < applied.size(); ++i)
        if (!applied[i])
          log_event(LogLevel::warn, "completion_fenced",
                    {{"run_id", completions_[i].run_id}, {"job_id", completions_[i].job_id},
                     {"fence", std::to_string(completions_[i].fence)}});
      completions_.clear();
      claim_wanted_ = true;  // slots were freed
    });
  }
  if (!releases_.empty()) with_store("release", [&] {
      store_->release(releases_);
      releases_.clear();
    });
}

void Agent::heartbeat_if_due(Clock::time_point now) {
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + opts_.lease / 3;
  // Also re-opens a broken LISTEN connection (a database restart), whose
  // descriptor is not polled while it is down.
  if (wakeups_->fd() < 0 && wakeups_->drain().work) claim_wanted_ = true;
  heartbeat();
  write_metrics_file();
  with_store("rescue", [&] {
    if (int n = store_->rescue_expired(); n > 0) {
      log_event(LogLevel::warn, "rescued", {{"runs", std::to_string(n)}});
      claim_wanted_ = true;
    }
  });
}

void Agent::heartbeat() {
  last_cancel_check_ = Clock::now();
  auto state = phase_ == Phase::running ? model::WorkerState::active : model::WorkerState::draining;
  bool ok = with_store("heartbeat", [&] {
    auto leases = store_->heartbeat(worker_id_, state, duration_cast<microseconds>(opts_.lease).count());
    for (const auto& id : running_ids()) {
      auto it = std::find_if(leases.begin(), leases.end(), [&](const auto& l) { return l.run_id == id; });
      if (it == leases.end()) {
        stop_run(id, Ending::lost);
      } else if (it->cancel_requested) {
        std::string job = runner_.job_of(id);
        log_event(LogLevel::info, "cancelling", {{"run_id", id}, {"job_id", job.empty() ? webhooks_.job_of(id) : job}});
        stop_run(id, Ending::cancel);
      }
    }
  });
  if (!ok) ++metrics_.heartbeat_failures;
}

void Agent::claim_if_free(Clock::time_point now) {
  if (phase_ != Phase::running || free_slots() == 0 || now < store_backoff_until_) return;
  if (!claim_wanted_ && now < next_claim_) return;
  int want = free_slots();
  with_store("claim", [&] {
    auto claimed = store_->claim(worker_id_, opts_.queues, want, duration_cast<microseconds>(opts_.lease).count());
    ++metrics_.claims;
    if (claimed.empty()) ++metrics_.empty_polls;
    for (const auto& run : claimed) {
      ++metrics_.runs_started[run.queue];
      metrics_.scheduling_lag[run.queue].observe(static_cast<double>(std::max<int64_t>(0, run.claimed_at - run.available_at)) / 1e6);
      log_event(LogLevel::debug, "claimed",
                {{"run_id", run.run_id}, {"job_id", run.job_id}, {"attempt", std::to_string(run.attempt)}});
      std::optional<std::string> error;
      Permanent permanent = Permanent::yes;
      try {
        error = run.spec.command.webhook ? webhooks_.start(run) : runner_.start(run);
      } catch (const Error& e) {  // the agent's own trouble, not the job's: try again later
        error = e.what();
        permanent = Permanent::no;
      }
      if (error) {
        log_event(LogLevel::warn, "start_failed", {{"run_id", run.run_id}, {"job_id", run.job_id}, {"error", *error}});
        completions_.push_back(start_failure(run, *error, rng_, permanent));
        ++metrics_.runs_failed[run.queue];
        if (completions_.back().status == model::RunStatus::dead) ++metrics_.runs_dead[run.queue];
      }
    }
    // Send the new requests now, not after the next round of store work.
    webhooks_.handle_timeout(Clock::now());
    claim_wanted_ = static_cast<int>(claimed.size()) == want && free_slots() > 0;
    next_claim_ = now + opts_.poll_interval;
    if (static_cast<int>(claimed.size()) < want) {
      // Sleep exactly until the next known due run, if it is sooner. A run
      // due already that this claim left is either held by another agent
      // (no point spinning) or the next of a concurrency group that takes
      // one per claim: claim again at once while claims make progress.
      auto due_in = store_->next_due_in(worker_id_, opts_.queues);
      if (due_in && *due_in > 0)
        next_claim_ = std::min(next_claim_, now + microseconds(*due_in));
      else if (due_in && !claimed.empty() && free_slots() > 0)
        claim_wanted_ = true;
    }
  });
}

void Agent::wait_for_events(Clock::time_point now) {
  bool store_ok = now >= store_backoff_until_;
  if (claim_wanted_ && free_slots() > 0 && phase_ == Phase::running && store_ok) return;
  if ((!completions_.empty() || !releases_.empty()) && store_ok) return;
  Clock::time_point until = std::min(next_heartbeat_, phase_ == Phase::running ? next_claim_ : next_heartbeat_);
  if (opts_.scheduler && phase_ == Phase::running) until = std::min(until, epoch_ ? next_schedule_ : next_lead_);
  if (epoch_ && opts_.gc_older_than.count() > 0 && phase_ == Phase::running) until = std::min(until, next_gc_);
  if (auto d = runner_.next_deadline()) until = std::min(until, *d);
  if (auto d = webhooks_.next_deadline()) until = std::min(until, *d);
  if (metrics_server_)
    if (auto d = metrics_server_->next_deadline()) until = std::min(until, *d);
  if (auto d = systemd_.next_deadline()) until = std::min(until, *d);
  if (phase_ == Phase::draining) until = std::min(until, drain_deadline_);
  if (store_backoff_until_ > now) until = std::max(until, store_backoff_until_);
  auto timeout_ms = duration_cast<std::chrono::milliseconds>(until - now).count();
  timeout_ms = std::clamp<long long>(timeout_ms, 0, INT_MAX);

  std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
  int wake_fd = wakeups_->fd();
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  runner_.poll_fds(fds);
  webhooks_.poll_fds(fds);
  if (metrics_server_) metrics_server_->poll_fds(fds);
  // Round up: poll() in whole milliseconds must not wake just before a
  // deadline and spin.
  int n = poll(fds.data(), fds.size(), static_cast<int>(timeout_ms) + (timeout_ms > 0 ? 1 : 0));
  if (n > 0) webhooks_.handle_events(fds);
  if (metrics_server_) {
    if (n > 0) metrics_server_->handle_events(fds, [this] { return render_metrics(); });
    metrics_server_->expire(Clock::now());
  }
  if (n <= 0 || wake_fd < 0 || !(fds[1].revents & POLLIN)) return;
  auto why = wakeups_->drain();
  if (why.work) claim_wanted_ = true;
  // Cancels are checked through the heartbeat; at most a few times a second.
  if (why.cancel && running() > 0 && Clock::now() - last_cancel_check_ > std::chrono::milliseconds(200))
    heartbeat();
}

void Agent::shut_down() {
  // Kill and give back whatever still runs (second signal), then wait for
  // the processes so their runs are released, not left to lease expiry.
  stop_all_runs(Ending::drain, Runner::Now::yes);
  auto give_up = Clock::now() + std::chrono::seconds(5);
  do {
    collect_finished();
    if (running() > 0) usleep(10000);
  } while (running() > 0 && Clock::now() < give_up);
  flush_reports();
  if (epoch_) with_store("resign", [&] { store_->resign(worker_id_); });
  with_store("stop", [&] { store_->set_worker_state(worker_id_, model::WorkerState::gone); });
  write_metrics_file();
  log_event(LogLevel::info, "stopped", {{"worker_id", worker_id_}});
}

int Agent::free_slots() const { return std::max(0, opts_.concurrency - static_cast<int>(running())); }

std::vector<std::string> Agent::running_ids() const {
  auto ids = runner_.run_ids();
  for (auto& id : webhooks_.run_ids()) ids.push_back(std::move(id));
  return ids;
}

void Agent::stop_run(const std::string& run_id, Ending why) {
  runner_.stop(run_id, why);
  webhooks_.stop(run_id, why);
}

void Agent::stop_all_runs(Ending why, Runner::Now immediately) {
  runner_.stop_all(why, immediately);
  webhooks_.stop_all(why);
}

void Agent::count_finished(const Finished& f, const store::Completion& c) {
  const std::string& q = f.run.queue;
  metrics_.attempt_duration[q].observe(std::chrono::duration<double>(f.elapsed).count());
  if (c.outcome == "succeeded") ++metrics_.runs_succeeded[q];
  if (c.outcome == "failed") ++metrics_.runs_failed[q];
  if (c.outcome == "cancelled") ++metrics_.runs_cancelled[q];
  if (c.status == model::RunStatus::dead) ++metrics_.runs_dead[q];
}

std::string Agent::render_metrics() {
  metrics_.slots_busy = static_cast<int>(running());
  metrics_.leader = epoch_.has_value();
  return metrics_.render();
}

void Agent::write_metrics_file() {
  if (opts_.metrics_file.empty()) return;
  // Written beside it and renamed over it: node_exporter never reads half a file.
  std::string tmp = opts_.metrics_file + ".tmp." + std::to_string(getpid());
  std::string text = render_metrics();
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), opts_.metrics_file.c_str()) != 0) {
    std::remove(tmp.c_str());
    log_event(LogLevel::warn, "metrics_file_failed", {{"path", opts_.metrics_file}, {"error", std::strerror(errno)}});
  }
}

void Agent::reload_secrets() {
  try {
    secrets_ = Secrets::load(environ, opts_.secrets_file);
    log_event(LogLevel::info, "secrets_reloaded", {{"secrets", std::to_string(secrets_.size())}});
  } catch (const Error& e) {
    log_event(LogLevel::error, "secrets_reload_failed", {{"error", e.what()}, {"kept", "the secrets loaded before"}});
  }
}


}  // namespace jobctl::agent
