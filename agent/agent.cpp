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
#include "common/store/agent.hpp"
#include "common/store/scheduler.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/host.hpp"
#include "common/util/log.hpp"
#include "common/util/time.hpp"

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
      health_(Clock::now(), StoreHealth::stall_after_for(opts_.lease)),
      // A quarter lease (at least 1 s): less than the slack a lease has
      // between two heartbeats.
      clock_watch_(std::max<int64_t>(duration_cast<microseconds>(opts_.lease).count() / 4, 1'000'000)),
      runner_(opts_),
      secrets_(Secrets::load(opts_.environment_secrets, opts_.secrets_file, opts_.credentials_dir)),
      webhooks_(opts_, secrets_) {
  if (opts_.name.empty()) opts_.name = util::host_name();
  // Start-up talks to the store directly (each call bounded by the store
  // timeout); from the loop on, only the store thread does.
  auto store = store::Store::open(dsn_, dsn_.is_default ? store::Create::yes : store::Create::no);
  // A job may run in another directory (--cwd): a SQLite path is made absolute.
  if (opts_.export_db)
    opts_.job_db = dsn_.backend == config::Backend::sqlite
                       ? "sqlite:" + std::filesystem::absolute(dsn_.target).lexically_normal().string()
                       : dsn_.target;
  store->require_schema();
  signal_fd_ = open_signal_fd();
  wakeups_ = store::Wakeups::open(dsn_, opts_.queues, opts_.listen);
  // Before registering: a server with no connection left refuses the
  // agent (exit 5) with no worker row left behind to look alive.
  auto reports = dsn_.backend == config::Backend::postgres ? store::Store::open(dsn_, store::Create::no) : nullptr;
  store::WorkerRegistration reg{opts_.name, util::host_name(), static_cast<int>(getpid()), opts_.queues,
                                opts_.concurrency, JOBCTL_VERSION,
                                duration_cast<microseconds>(opts_.lease).count(), opts_.labels};
  worker_id_ = store->agent().register_worker(reg);
  refuse_namesakes(*store, opts_, worker_id_);
  take_over(*store, runner_, opts_, worker_id_);  // this incarnation's lock; a dead earlier one's runs back
  store_ = std::make_unique<StoreThread>(std::move(store));
  lanes_.push_back(store_.get());
  if (reports) {
    reports_ = std::make_unique<StoreThread>(std::move(reports));
    lanes_.push_back(reports_.get());
  }
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
    // What the store threads finished: claims to start, leases to compare.
    for (auto* t : lanes_) t->deliver();
    // Signals first: a drain must stop the claim below.
    handle_signals();
    // Finished processes become completions, recorded fenced in batches.
    collect_finished();
    report_if_due(now);
    // What running jobs printed, for jobctl logs --follow.
    ship_output_if_due(now);
    // Keep our leases alive; learn of cancels, of runs we lost and of
    // leases we hold without running them.
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
    if (phase_ == Phase::draining && drained(now)) break;
    wait_for_events(now);
  }
  shut_down();
  return exit_code_;
}

// While draining: true once nothing runs and every result is recorded,
// or, with the store away past the drain's deadline, once nothing runs.
bool Agent::drained(Clock::time_point now) {
  if (now >= drain_deadline_ && running() > 0) {
    log_event(LogLevel::warn, "drain_timeout", {{"running", std::to_string(running())}});
    stop_all_runs(Ending::drain, Runner::Now::yes);
    drain_deadline_ = Clock::time_point::max();
    report_deadline_ = now + opts_.kill_grace + std::chrono::seconds(10);
  }
  if (running() > 0) return false;
  if (!reports_pending()) return true;  // shut_down() settles the rest, briefly
  if (report_deadline_ == Clock::time_point{}) report_deadline_ = std::max(now, drain_deadline_);
  waited_out_ = now >= report_deadline_;
  return waited_out_;
}

void Agent::handle_signals() {
  signalfd_siginfo si;
  while (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGHUP) reload_secrets();
    if (sig != SIGTERM && sig != SIGINT) continue;  // SIGCHLD: reaped below
    if (phase_ == Phase::running) {
      begin_drain();
    } else {
      // A second signal: stop now, giving every run back.
      log_event(LogLevel::warn, "stopping", {{"running", std::to_string(running())}});
      stop_all_runs(Ending::drain, Runner::Now::yes);
      phase_ = Phase::stopping;
    }
  }
}

void Agent::begin_drain() {
  phase_ = Phase::draining;
  drain_deadline_ = Clock::now() + opts_.drain_timeout;
  runner_.unqueue(Ending::drain);  // not started yet: given back, not started to be waited for
  log_event(LogLevel::info, "draining",
            {{"running", std::to_string(running())},
             {"drain_timeout", util::format_duration(duration_cast<microseconds>(opts_.drain_timeout))}});
  store_step("drain", [id = worker_id_](store::Store& s) { s.agent().set_worker_state(id, model::WorkerState::draining); },
             {});
  systemd_.stopping(fmt::format("draining: {} running", running()));
  next_lead_ = Clock::now();  // resign the scheduler lease at once
}

void Agent::collect_finished() {
  auto finished = runner_.reap();
  record_start_failures();
  for (auto& f : webhooks_.collect()) finished.push_back(std::move(f));
  for (auto& f : finished) {
    std::vector<std::pair<std::string, std::string>> fields{{"run_id", f.run.run_id}, {"job_id", f.run.job_id}};
    if (f.ending == Ending::lost) {
      log_event(LogLevel::warn, "lease_lost", fields);
      continue;  // another agent owns the run now: report nothing
    }
    store::Completion c = outcome_of(f, rng_);
    // Recorded as ended now, however long the store takes to hear of it.
    if (const auto& seen = clock_watch_.last()) c.ended_at_us = seen->expected_at(Clock::now());
    count_finished(f, c);
    fields.emplace_back("attempt", std::to_string(f.run.attempt));
    fields.emplace_back("duration", util::format_duration(duration_cast<microseconds>(f.elapsed)));
    if (c.outcome == model::AttemptOutcome::released) {
      log_event(LogLevel::info, "released", fields);
      (f.ran && !f.run.spec.command.webhook ? held_releases_ : releases_).push_back(std::move(c));
      continue;
    }
    fields.emplace_back("status", std::string(model::to_string(c.status)));
    if (c.status == model::RunStatus::pending)
      fields.emplace_back("retry_in", util::format_duration(microseconds(c.retry_delay_us)));
    if (!c.error.empty()) fields.emplace_back("error", c.error);
    log_event(c.status == model::RunStatus::succeeded ? LogLevel::info : LogLevel::warn, "finished", fields);
    completions_.push_back(std::move(c));
  }
  // Their slots are free now: claim them again without waiting for the
  // completions to be recorded (the claim is queued after them, or, with
  // them on their own lane, a claim that missed a place they free in a
  // concurrency limit claims again once they are recorded).
  if (!finished.empty()) claim_wanted_ = true;
  if (phase_ == Phase::stopping || !releases_.empty()) flush_reports();
}

bool Agent::store_step(const char* step, StoreThread::Work work, std::function<void()> then,
                       std::function<void()> undo, Backoff backoff, Lane on) {
  if (!busy_steps_.insert(step).second) return false;
  lane(on).submit(step, std::move(work),
                 [this, step, then = std::move(then), undo = std::move(undo), backoff](const std::optional<Error>& e) {
                   busy_steps_.erase(step);
                   auto now = Clock::now();
                   if (!e) {
                     // A call still stalled on the other thread keeps the outage open.
                     if (auto oldest = longest_call(); !oldest || now - oldest->since < health_.stall_after())
                       health_.succeeded(step, now);
                     if (then) then();
                     return;
                   }
                   ++metrics_.store_errors[step];
                   if (e->code() == ExitCode::store)
                     health_.failed(step, e->what(), now);
                   else if (auto& said = store_errors_said_[step]; said.second != e->what() || now - said.first >= kSayAgainAfter) {
                     // The same error of a step made each second (a damaged schema) is said again each 30 s.
                     said = {now, e->what()};
                     log_event(LogLevel::error, "store_error", {{"step", step}, {"error", e->what()}});
                   }
                   if (backoff == Backoff::yes) store_backoff_until_ = now + std::chrono::seconds(1);
                   if (undo) undo();
                 });
  return true;
}

// Records a batch of completions or releases; on failure they go back to
// the front of their queue, to be sent again.
void Agent::report(const char* step, std::vector<store::Completion>& queue) {
  if (queue.empty() || busy(step)) return;
  auto batch = std::make_shared<std::vector<store::Completion>>(std::move(queue));
  queue.clear();
  auto applied = std::make_shared<std::vector<bool>>();
  for (const auto& c : *batch) reporting_.insert(c.run_id);
  auto settle = [this, batch] {
    for (const auto& c : *batch) reporting_.erase(c.run_id);
  };
  const bool completing = &queue == &completions_;
  if (completing) completed_since_.reset();  // the next one starts the wait anew
  store_step(
      step,
      [batch, applied, completing, hold = own_runs_](store::Store& s) {
        std::lock_guard one_at_a_time(*hold);
        if (completing)
          *applied = s.agent().complete(*batch);
        else
          s.agent().release(*batch);
      },
      [this, batch, applied, settle] {
        settle();
        // A heartbeat on the other lane may have read their leases before this committed.
        if (busy("heartbeat"))
          for (const auto& c : *batch) reported_during_beat_.insert(c.run_id);
        for (size_t i = 0; i < applied->size(); ++i)
          if (!(*applied)[i])
            log_event(LogLevel::warn, "completion_fenced",
                      {{"run_id", (*batch)[i].run_id}, {"job_id", (*batch)[i].job_id},
                       {"fence", std::to_string((*batch)[i].fence)}});
        claim_wanted_ = true;  // the runs' places in job and group limits were freed
      },
      [batch, settle, &queue] {
        settle();
        queue.insert(queue.begin(), std::make_move_iterator(batch->begin()), std::make_move_iterator(batch->end()));
      },
      Backoff::yes, report_lane());
}

// On the claims' thread while it is idle: a claim that follows then sees
// the places in limits the batch frees, and a flood of short jobs keeps
// its claims and completions apart (side by side, the two connections
// only cost the server more: 10 % fewer `true` jobs a second). Behind
// work on it (a claim, a heartbeat, the scheduler), on its own.
Agent::Lane Agent::report_lane() const { return store_->outstanding() > 0 ? Lane::reports : Lane::claims; }

void Agent::flush_reports() {
  if (Clock::now() < store_backoff_until_) return;
  report("complete", completions_);
  report("release", releases_);
}

void Agent::report_if_due(Clock::time_point now) {
  if (!completions_.empty() && !completed_since_) completed_since_ = now;  // report() resets it
  if (completions_due(now)) flush_reports();
  else if (now >= store_backoff_until_) report("release", releases_);
}

// At once, unless runs are still starting (a flood of short jobs): then
// the store is what bounds the rate, and each batch costs it about as much
// as dozens of runs, so completions wait for half the slots' worth, for
// the next claim (which sends them ahead of itself), or kReportDelay.
bool Agent::completions_due(Clock::time_point now) const {
  if (completions_.empty() || busy("complete") || now < store_backoff_until_) return false;
  return phase_ != Phase::running || runner_.unstarted() == 0 ||
         static_cast<int>(completions_.size()) >= std::max(1, opts_.concurrency / 2) ||
         (completed_since_ && now >= *completed_since_ + kReportDelay);
}

// One store call at a time carries every running job's new output; while
// it is on its way (or the store is away) output only accumulates, its
// tail bounded as ever.
void Agent::ship_output_if_due(Clock::time_point now) {
  if (busy("output") || now < store_backoff_until_) return;
  auto batch = std::make_shared<std::vector<store::LiveOutput>>(runner_.output_due(now));
  if (batch->empty()) return;
  store_step(
      "output",
      [batch, id = worker_id_, hold = own_runs_](store::Store& s) {
        std::lock_guard one_at_a_time(*hold);
        s.agent().ship_output(id, *batch);
      },
      {},
      [this, batch] {
        std::vector<std::string> ids;
        for (const auto& o : *batch) ids.push_back(o.run_id);
        runner_.ship_again(ids);
      },
      Backoff::no);
}

void Agent::heartbeat_if_due(Clock::time_point now) {
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + opts_.lease / 3;
  reopen_wakeups();
  heartbeat();
  write_metrics_file();
}

// A LISTEN connection that broke (a database restart) is re-opened on the
// store thread: connecting may take as long as the store does to answer.
// Not a store step: it never throws, and says nothing of the store's
// health (its own reconnects are at most every 5 s).
void Agent::reopen_wakeups() {
  if (wakeups_busy_ || wakeups_->fd() >= 0) return;
  auto woke = std::make_shared<store::WakeReasons>();
  store::Wakeups* w = wakeups_.get();
  wakeups_busy_ = true;
  store_->submit("listen", [w, woke](store::Store&) { *woke = w->drain(); },
                 [this, woke](const std::optional<Error>&) {
                   wakeups_busy_ = false;
                   if (woke->work) claim_wanted_ = true;
                 });
}

void Agent::heartbeat() {
  last_cancel_check_ = Clock::now();
  auto state = phase_ == Phase::running ? model::WorkerState::active : model::WorkerState::draining;
  struct Beat {
    std::vector<store::LeaseState> leases;
    int64_t store_now = 0;
    Clock::time_point at;
    bool replaced = false;
  };
  auto beat = std::make_shared<Beat>();
  if (!busy("heartbeat")) reported_during_beat_.clear();  // else that one is still on its way
  store_step(
      "heartbeat",
      [beat, id = worker_id_, state, lease = duration_cast<microseconds>(opts_.lease).count(),
       hold = own_runs_](store::Store& s) {
        std::lock_guard one_at_a_time(*hold);
        beat->leases = s.agent().heartbeat(id, state, lease);
        beat->store_now = s.now();
        beat->at = Clock::now();
        beat->replaced = s.connection().file_replaced();
      },
      // Rescue follows the heartbeat that would have noticed a clock step.
      [this, beat] {
        if (beat->replaced) leave_replaced_store();
        reconcile(beat->leases);
        watch_clock(beat->store_now, beat->at);
        rescue_if_safe(Clock::now());
      },
      [this] { ++metrics_.heartbeat_failures; });
}

// The SQLite file this agent has open was deleted or replaced (an operator
// "resetting" the store, or restoring a copy): it went on claiming from a
// file nobody reads, and jobs submitted to the new one waited for ever
// (testers). It drains as on SIGTERM, letting its running jobs finish, and
// exits with 5: a service manager (Restart=on-failure) starts it again on
// the file the path names now, whose leases and worker rows then decide
// what runs, as after any restart.
void Agent::leave_replaced_store() {
  if (exit_code_ != 0) return;  // said once
  exit_code_ = static_cast<int>(ExitCode::store);
  log_event(LogLevel::error, "store_replaced",
            {{"db", config::redacted(dsn_)},
             {"error", "the SQLite file this agent opened was deleted or replaced: what it records there is lost"},
             {"hint", "the agent drains and exits with status 5; start it again (systemd's Restart=on-failure "
                      "does) to open the file the path names now"}});
  if (phase_ == Phase::running) begin_drain();
}

// What the store says this agent leases and what it runs, compared both
// ways. A run it executes that the store no longer leases to it belongs to
// another agent now: stop it, report nothing. A lease it holds on a run it
// does not execute (a claim that committed but whose answer was lost) is
// given back at once, without using up a delivery.
void Agent::reconcile(const std::vector<store::LeaseState>& leases) {
  // A run that finished since the loop last collected (a webhook answered
  // while the heartbeat was on its way) runs no more but has its result:
  // collected first, it waits among the completions, and is not given back.
  collect_finished();
  auto running_now = running_ids();
  for (const auto& id : running_now) {
    auto it = std::find_if(leases.begin(), leases.end(), [&](const auto& l) { return l.run_id == id; });
    if (it == leases.end()) {
      stop_run(id, Ending::lost);
    } else if (it->cancel_requested) {
      std::string job = runner_.job_of(id);
      log_event(LogLevel::info, "cancelling", {{"run_id", id}, {"job_id", job.empty() ? webhooks_.job_of(id) : job}});
      stop_run(id, Ending::cancel);
    }
  }
  auto waiting = [](const std::vector<store::Completion>& q, const std::string& id) {
    return std::any_of(q.begin(), q.end(), [&](const auto& c) { return c.run_id == id; });
  };
  for (const auto& l : leases) {
    if (std::find(running_now.begin(), running_now.end(), l.run_id) != running_now.end()) continue;
    if (reporting_.count(l.run_id) || reported_during_beat_.count(l.run_id) || waiting(completions_, l.run_id) ||
        waiting(releases_, l.run_id))
      continue;
    log_event(LogLevel::warn, "lease_given_back",
              {{"run_id", l.run_id}, {"job_id", l.job_id}, {"attempt", std::to_string(l.attempt)},
               {"why", "the store leases it to this agent, which is not running it"}});
    store::Completion c;
    c.run_id = l.run_id;
    c.job_id = l.job_id;
    c.fence = l.fence;
    c.attempt = l.attempt;
    c.status = model::RunStatus::pending;
    c.outcome = model::AttemptOutcome::released;
    c.error = "not run: the claim committed but its answer never reached the agent; given back";
    releases_.push_back(std::move(c));
  }
}

// A claim that comes back once the agent is draining or stopping (a signal
// arrived while it was on its way): its runs are given back at once,
// unspent, for another agent or this one's successor, not started to be
// waited for, nor left leased until rescue.
void Agent::give_back(const std::vector<store::ClaimedRun>& claimed) {
  for (const auto& run : claimed) {
    log_event(LogLevel::info, "released",
              {{"run_id", run.run_id}, {"job_id", run.job_id}, {"attempt", std::to_string(run.attempt)},
               {"why", "claimed as the agent began to stop"}});
    store::Completion c = store::completion_of(run, model::RunStatus::pending);
    c.outcome = model::AttemptOutcome::released;
    c.error = "not run: the agent was stopping when its claim came back; given back";
    releases_.push_back(std::move(c));
  }
  flush_reports();
}

// The store's clock (SQLite's is this host's wall clock) moved unlike the
// steady clock: leases may look expired that are not, so rescue waits a
// lease, and doctor is told.
void Agent::watch_clock(int64_t store_now_us, Clock::time_point at) {
  auto step = clock_watch_.observe(store_now_us, at);
  if (!step) return;
  health_.clock_stepped(*step, Clock::now());
  store_step("clock_step", [id = worker_id_, us = *step](store::Store& s) { s.agent().record_clock_step(id, us); }, {}, {},
             Backoff::no);
}

// Rescue of expired leases takes only the runs of agents whose lease is
// no longer than the time this agent has had the store calmly: after an
// outage (or a clock step) their owners get a whole lease to renew them.
// And it rescues nothing unless the store's clock reads where the last
// heartbeat says it should, in the statement that compares the leases: a
// step after that heartbeat would otherwise make live leases look expired
// before any heartbeat could notice it.
void Agent::rescue_if_safe(Clock::time_point now) {
  auto calm = duration_cast<microseconds>(health_.calm_for(now)).count();
  const auto& seen = clock_watch_.last();
  if (calm <= 0 || !seen) return;
  auto rescued = std::make_shared<int>(0);
  store_step(
      "rescue",
      [rescued, calm, seen = *seen, tolerance = clock_watch_.tolerance_us(), decided = now,
       stale_after = health_.stall_after()](store::Store& s) {
        // Decided on a calm store, then kept waiting behind calls the store
        // did not answer: the calm it counted on is over, and every agent's
        // leases may have run out meanwhile (found in the fault tests: a
        // rescue queued just before a stall took a live agent's run).
        if (Clock::now() - decided > stale_after) return;
        int64_t expected = seen.expected_at(Clock::now());
        *rescued = s.agent().rescue_expired(calm, expected - tolerance, expected + tolerance);
      },
      [this, rescued] {
        if (*rescued == 0) return;
        log_event(LogLevel::warn, "rescued", {{"runs", std::to_string(*rescued)}});
        claim_wanted_ = true;
      });
}

bool Agent::may_claim(Clock::time_point now) const {
  return slots_to_claim() && now >= store_backoff_until_ && !claiming();
}

bool Agent::slots_to_claim() const {
  if (phase_ != Phase::running || free_slots() == 0) return false;
  // While runs are still starting, the supervisor has work: a claim waits
  // until half the slots are free. A claim costs the store as much as
  // dozens of runs' completions: claims of one or two runs, one per
  // process ended, would make the store the bottleneck of short jobs.
  return runner_.unstarted() == 0 || free_slots() >= std::max(1, opts_.concurrency / 2);
}

void Agent::claim_if_free(Clock::time_point now) {
  if (!may_claim(now)) return;
  if (!claim_wanted_ && now < next_claim_) return;
  int want = free_slots();
  claim_wanted_ = false;
  // What finished goes just ahead of it (report_lane: a store thread
  // keeps their order), so its places in job and group limits are free
  // for this claim; or, when the claims' thread is busy, on its own.
  report("complete", completions_);
  next_claim_ = now + opts_.poll_interval;
  struct Claim {
    std::vector<store::ClaimedRun> runs;
    std::optional<NextDue> due;  // read with the claim when it took nothing
  };
  auto got = std::make_shared<Claim>();
  store_step(
      "claim",
      [got, want, id = worker_id_, queues = opts_.queues,
       lease = duration_cast<microseconds>(opts_.lease).count()](store::Store& s) {
        got->runs = s.agent().claim(id, queues, want, lease);
        if (got->runs.empty()) got->due = NextDue{s.agent().next_due_in(id, queues), Clock::now()};
      },
      [this, got, want] { start_claimed(got->runs, want, got->due); },
      // The claim may have committed all the same: the next heartbeat reads
      // back what this agent leases and gives back what it does not run.
      [this] { next_heartbeat_ = Clock::now(); });
}

void Agent::start_claimed(const std::vector<store::ClaimedRun>& claimed, int want, const std::optional<NextDue>& due) {
  ++metrics_.claims;
  if (claimed.empty()) ++metrics_.empty_polls;
  if (phase_ != Phase::running) {
    give_back(claimed);
    return;
  }
  // The supervisor starts the processes one after another, so a big claim
  // takes a while to start: the runner queues them (their slots are taken)
  // and this loop goes on meanwhile, reaping, reporting and claiming again
  // as processes end, never waiting for the starts.
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
      // With its hint: the run's error is where an operator reads what to do.
      error = e.with_hint();
      permanent = Permanent::no;
    }
    if (error) fail_start(run, *error, permanent);
  }
  record_start_failures();
  // Send the new requests now, not after the next round of store work.
  webhooks_.handle_timeout(Clock::now());
  claim_wanted_ = claim_wanted_ || (static_cast<int>(claimed.size()) == want && free_slots() > 0);
  if (static_cast<int>(claimed.size()) == want) {
    looked_again_ = false;
  } else if (due) {
    claim_again(*due, false);  // an empty claim (an idle agent's poll) read it in the same store step
  } else {
    // The runs it took are on their way to starting: none waits for this
    // read, which costs the server a plan each time (1.3-2.4 ms).
    auto read = std::make_shared<NextDue>();
    store_step(
        "next_due",
        [read, id = worker_id_, queues = opts_.queues](store::Store& s) {
          *read = NextDue{s.agent().next_due_in(id, queues), Clock::now()};
        },
        [this, read] { claim_again(*read, true); }, {},
        // A read that failed only leaves the poll to find the next due run:
        // what finished is still recorded at once.
        Backoff::no);
  }
}

// Sleep exactly until the next known due run, if it is sooner (counted
// from when that was read: from before the claim, the agent woke early by
// the claim's time, claimed nothing, and could meet the next case). A run
// due already that the claim left is the next of a concurrency group that
// takes one per claim (claim again at once while claims make progress), or
// it fell due between the claim and the reading (look again shortly, once:
// the herd's runs started a second late, at the next poll), or another
// agent's claim holds it, or this agent cannot take it yet (a group behind
// another's long backlog): those wait for a wake-up or the poll, as a claim
// that spun on them would not help.
void Agent::claim_again(const NextDue& due, bool claimed_some) {
  bool look_again = false;
  if (due.in && *due.in > 0) {
    next_claim_ = std::min(next_claim_, due.at + microseconds(*due.in));
  } else if (due.in && claimed_some && free_slots() > 0) {
    claim_wanted_ = true;
  } else if (due.in && !looked_again_) {
    next_claim_ = std::min(next_claim_, due.at + kDueAgain);
    look_again = true;
  }
  looked_again_ = look_again;
}

void Agent::fail_start(const store::ClaimedRun& run, const std::string& error, Permanent permanent) {
  log_event(LogLevel::warn, "start_failed", {{"run_id", run.run_id}, {"job_id", run.job_id}, {"error", error}});
  completions_.push_back(start_failure(run, error, rng_, permanent));
  ++metrics_.runs_failed[run.queue];
  if (completions_.back().status == model::RunStatus::dead) ++metrics_.runs_dead[run.queue];
}

void Agent::record_start_failures() {
  for (const auto& f : runner_.start_failures()) fail_start(f.run, f.error, f.permanent);
}

void Agent::wait_for_events(Clock::time_point now) {
  bool store_ok = now >= store_backoff_until_;
  if (claim_wanted_ && may_claim(now)) return;
  if (completions_due(now) || (store_ok && !releases_.empty() && !busy("release"))) return;
  // The poll's time for a claim only when one could go: with every slot
  // busy, or a claim on its way (a slow store), what changes that (an
  // exit, an answer, a webhook's end, the claim's result) comes on a
  // descriptor polled here, and a time past would make this loop spin.
  const bool claim_could_go = slots_to_claim() && !claiming();
  Clock::time_point until = std::min(next_heartbeat_, claim_could_go ? next_claim_ : next_heartbeat_);
  // A step on its way is not due again until it returns (its lane's
  // descriptor wakes the poll): a tick passed during a slow call made this
  // loop spin at 100 % CPU for as long as the call took (a tester).
  if (opts_.scheduler && phase_ == Phase::running && !busy(epoch_ ? "schedule" : "lead"))
    until = std::min(until, epoch_ ? next_schedule_ : next_lead_);
  if (epoch_ && opts_.gc_older_than.count() > 0 && phase_ == Phase::running && !busy("gc"))
    until = std::min(until, next_gc_);
  if (auto d = runner_.next_deadline()) until = std::min(until, *d);
  if (completed_since_ && !busy("complete")) until = std::min(until, *completed_since_ + kReportDelay);
  if (auto d = runner_.next_output_due(); d && !busy("output")) until = std::min(until, *d);
  if (auto d = webhooks_.next_deadline()) until = std::min(until, *d);
  if (metrics_server_)
    if (auto d = metrics_server_->next_deadline()) until = std::min(until, *d);
  if (auto d = systemd_.next_deadline()) until = std::min(until, *d);
  if (phase_ == Phase::draining) {
    until = std::min(until, drain_deadline_);
    if (report_deadline_ != Clock::time_point{}) until = std::min(until, report_deadline_);
  }
  if (auto d = watch_store(now)) until = std::min(until, *d);
  if (store_backoff_until_ > now) until = std::max(until, store_backoff_until_);
  auto timeout_ms = duration_cast<std::chrono::milliseconds>(until - now).count();
  timeout_ms = std::clamp<long long>(timeout_ms, 0, INT_MAX);

  std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
  int wake_fd = wakeups_busy_ ? -1 : wakeups_->fd();
  fds.push_back({wake_fd, POLLIN, 0});  // poll() skips a negative descriptor
  for (auto* t : lanes_) fds.push_back({t->fd(), POLLIN, 0});
  runner_.poll_fds(fds);
  webhooks_.poll_fds(fds);
  if (metrics_server_) metrics_server_->poll_fds(fds);
  // Round up: poll() in whole milliseconds must not wake just before a
  // deadline and spin.
  int n = poll(fds.data(), fds.size(), static_cast<int>(timeout_ms) + (timeout_ms > 0 ? 1 : 0));
  if (n > 0) {
    runner_.handle_events(fds);
    webhooks_.handle_events(fds);
  }
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

// A store call that does not answer is an outage too: it is reported
// after StoreHealth::stall_after(), not when the driver gives up. Returns
// when to look again.
std::optional<Clock::time_point> Agent::watch_store(Clock::time_point now) {
  auto call = longest_call();
  if (!call) return std::nullopt;
  health_.waiting(call->step, call->since, now);
  return health_.next_look(call->since);
}

std::optional<StoreThread::Running> Agent::longest_call() const {
  std::optional<StoreThread::Running> call;
  for (auto* t : lanes_)
    if (auto c = t->running(); c && (!call || c->since < call->since)) call = c;
  return call;
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
  // What the jobs given back left running (a setsid child, a daemon) is
  // ended before their runs are: released first, a run was started again
  // by another agent while its leftovers still ran.
  if (!held_releases_.empty()) {
    runner_.end_every_process();
    std::move(held_releases_.begin(), held_releases_.end(), std::back_inserter(releases_));
    held_releases_.clear();
  }
  // What is left to record gets a few seconds more, unless the drain has
  // waited for it to its deadline already; a store that is away longer
  // leaves those runs to lease expiry and rescue.
  auto settle_by = Clock::now() + (waited_out_ ? std::chrono::seconds(0) : std::chrono::seconds(5));
  do {
    flush_reports();
    for (auto* t : lanes_) t->settle(std::min(settle_by, Clock::now() + std::chrono::milliseconds(200)));
  } while ((reports_pending() || claiming()) && Clock::now() < settle_by);
  if (epoch_) store_step("resign", [id = worker_id_](store::Store& s) { s.scheduler().resign(id); }, {});
  store_step("stop", [id = worker_id_](store::Store& s) { s.agent().set_worker_state(id, model::WorkerState::gone); }, {});
  bool recorded = true;
  for (auto* t : lanes_) {
    bool settled = t->settle(std::max(settle_by, Clock::now() + std::chrono::seconds(1)));
    if (!settled) t->leave_after = std::chrono::milliseconds(0);  // it had its chance
    recorded = recorded && settled;
  }
  // Sent and not answered counts too: the store may or may not have applied them.
  if (!recorded || !completions_.empty() || !releases_.empty())
    log_event(LogLevel::error, "unrecorded",
              {{"completions", std::to_string(completions_.size())}, {"releases", std::to_string(releases_.size())},
               {"unanswered", std::to_string(reporting_.size())},
               {"why", "the store did not answer; these runs are rescued once their leases expire"}});
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
  if (c.outcome == model::AttemptOutcome::succeeded) ++metrics_.runs_succeeded[q];
  if (c.outcome == model::AttemptOutcome::failed) ++metrics_.runs_failed[q];
  if (c.outcome == model::AttemptOutcome::cancelled) ++metrics_.runs_cancelled[q];
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
    secrets_ = Secrets::load(opts_.environment_secrets, opts_.secrets_file, opts_.credentials_dir);
    log_event(LogLevel::info, "secrets_reloaded", {{"secrets", std::to_string(secrets_.size())}});
  } catch (const Error& e) {
    log_event(LogLevel::error, "secrets_reload_failed", {{"error", e.what()}, {"kept", "the secrets loaded before"}});
  }
}


}  // namespace jobctl::agent
