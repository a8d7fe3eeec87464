#pragma once
// jobagent's main loop: claim → execute → complete, with heartbeats,
// rescue of dead agents' runs, and a graceful drain on SIGTERM.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/util/error.hpp"
#include "common/util/log.hpp"

#include "agent/metrics.hpp"
#include "agent/metrics_server.hpp"
#include "agent/options.hpp"
#include "agent/runner.hpp"
#include "agent/secrets.hpp"
#include "agent/store_health.hpp"
#include "agent/store_thread.hpp"
#include "agent/systemd.hpp"
#include "agent/webhook_runner.hpp"
#include "common/store/agent.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/store.hpp"
#include "common/store/wakeups.hpp"

namespace jobctl::agent {

// How long the leader waits after an overlap sweep that took `took` before
// it sweeps again: nine times as long, so the sweep has at most a tenth of
// the store connection the leader also claims on, but 10 s at most, so the
// overlap policies are never long behind. A sweep of a few milliseconds
// still runs every tick; one that reads a herd's 100,000 due occurrences
// (1.0-1.4 s) no longer holds the leader's claims back at every tick of
// the herd's first minute.
Clock::duration overlap_pause(Clock::duration took);

class Agent {
 public:
  // Opens the store, checks its schema and registers this worker. Throws
  // jobctl::Error when the store is unreachable or its schema is not current.
  explicit Agent(Options opts);
  ~Agent();

  // Runs until drained (first SIGTERM/SIGINT, or its SQLite file
  // replaced) or stopped (second signal). Returns the process exit code:
  // 0, or 5 (ExitCode::store) after a drain for a replaced file.
  int run();

 private:
  enum class Phase { running, draining, stopping };

  void handle_signals();
  void begin_drain();
  void collect_finished();
  void flush_reports();
  void ship_output_if_due(Clock::time_point now);
  void heartbeat_if_due(Clock::time_point now);
  void heartbeat();
  void reconcile(const std::vector<store::LeaseState>& leases);
  void watch_clock(int64_t store_now_us, Clock::time_point at);
  void rescue_if_safe(Clock::time_point now);
  void reopen_wakeups();
  void claim_if_free(Clock::time_point now);
  void give_back(const std::vector<store::ClaimedRun>& claimed);
  // A run that could not start: its completion, failed for good or retried.
  void fail_start(const store::ClaimedRun& run, const std::string& error, Permanent permanent);
  void record_start_failures();  // those the supervisor refused (Runner::start_failures)
  // When the next run this agent could claim is due (store::Agent::next_due_in), and when that was read.
  struct NextDue {
    std::optional<int64_t> in;
    Clock::time_point at;
  };
  // After a claim short of its slots, the next due run is read: with an
  // empty claim (`due`), or after its runs have started.
  void start_claimed(const std::vector<store::ClaimedRun>& claimed, int want, const std::optional<NextDue>& due);
  // When to claim after a claim short of its slots (claimed_some: it took any).
  void claim_again(const NextDue& due, bool claimed_some);
  // The scheduler leader's duties (agent/scheduling.cpp).
  void lead_if_due(Clock::time_point now);
  void schedule_if_due(Clock::time_point now);
  void gc_if_due(Clock::time_point now);
  void scheduled(const store::MaterialiseResult& r, int overlap, Clock::time_point now);
  void wait_for_events(Clock::time_point now);
  bool drained(Clock::time_point now);
  std::optional<Clock::time_point> watch_store(Clock::time_point now);
  void shut_down();
  // Slots with no run in hand (running, starting or waiting to start).
  int free_slots() const;
  // Whether a claim may go now, if one is wanted; and whether the slots
  // alone would let one go.
  bool may_claim(Clock::time_point now) const;
  bool slots_to_claim() const;
  // Records the completions if they are due, and the releases.
  void report_if_due(Clock::time_point now);
  bool completions_due(Clock::time_point now) const;
  // How long a completion may wait for others to share its store call.
  static constexpr std::chrono::milliseconds kReportDelay{20};
  // A run due that a claim left: how soon to look again (start_claimed).
  static constexpr std::chrono::milliseconds kDueAgain{20};
  // Runs in hand over both executors: processes (runner_, with those
  // waiting to start) and webhooks (webhooks_).
  size_t running() const { return runner_.size() + webhooks_.size(); }
  std::vector<std::string> running_ids() const;
  void stop_run(const std::string& run_id, Ending why);
  void stop_all_runs(Ending why, Runner::Now immediately);
  void reload_secrets();
  // The metrics as of now (gauges refreshed), and the --metrics-file.
  std::string render_metrics();
  void write_metrics_file();
  // A finished attempt, counted by its queue.
  void count_finished(const Finished& f, const store::Completion& c);
  // Queues a store step on the store thread, unless the same step is still
  // queued or running (then returns false). `then` runs on the loop once
  // it succeeded. A failure is logged (an unreachable store through
  // health_, once per outage) and counted, starts a one-second backoff
  // unless Backoff::no, and runs `undo`, which puts back what the step
  // carried, so a database restart is survived rather than fatal.
  enum class Backoff { yes, no };
  // Which store thread a step goes on (see reports_): the claims', which
  // also heartbeats, leads and rescues, or the second, which records
  // completions and releases while the first is busy.
  enum class Lane { claims, reports };
  bool store_step(const char* step, StoreThread::Work work, std::function<void()> then,
                  std::function<void()> undo = {}, Backoff backoff = Backoff::yes, Lane lane = Lane::claims);
  bool busy(const char* step) const { return busy_steps_.count(step) > 0; }
  // A claim, or the read of when the next run is due that follows it, is
  // on its way: the next claim waits for both.
  bool claiming() const { return busy("claim") || busy("next_due"); }
  // Completions or releases waiting to be recorded, or on their way.
  bool reports_pending() const {
    return !completions_.empty() || !releases_.empty() || busy("complete") || busy("release");
  }
  void report(const char* step, std::vector<store::Completion>& queue);
  Lane report_lane() const;  // where a batch of completions or releases goes now
  // The store call waiting longest, on either thread.
  std::optional<StoreThread::Running> longest_call() const;

  Options opts_;
  config::Dsn dsn_;
  // The store threads, each with a connection of its own. On PostgreSQL
  // completions and releases that would wait behind work on the first
  // (a claim, a heartbeat, the scheduler) are recorded on the second
  // (reports_, see report_lane): on one connection a claim (several
  // milliseconds with a herd of grouped runs due) and the completions
  // took turns, and a claim that waited on a lock held every completion
  // back. SQLite has one writer at a time, so there a second connection
  // would only wait for the first: reports_ is null, and both lanes are
  // store_.
  std::unique_ptr<StoreThread> store_;
  std::unique_ptr<StoreThread> reports_;
  std::vector<StoreThread*> lanes_;  // both threads, for the loop to poll, deliver and settle
  StoreThread& lane(Lane l) { return l == Lane::reports && reports_ ? *reports_ : *store_; }
  // Held by the store threads' work that locks this agent's running runs
  // and their attempts (heartbeat, output, complete, release), for the
  // whole transaction: on two connections side by side, two of those could
  // lock the same rows in opposite orders and deadlock. Claims, which lock
  // only pending runs, and the scheduler do not take it.
  std::shared_ptr<std::mutex> own_runs_ = std::make_shared<std::mutex>();
  StoreHealth health_;
  ClockWatch clock_watch_;
  std::set<std::string> busy_steps_;  // store steps queued or running
  // Each step's last store_error (not an outage's), and when it was said.
  std::map<std::string, std::pair<Clock::time_point, std::string>> store_errors_said_;
  static constexpr std::chrono::seconds kSayAgainAfter{30};
  std::set<std::string> reporting_;   // runs whose completion or release is on its way
  // Runs recorded (on the reports lane) while a heartbeat was on its way:
  // the leases it read may still name them, and they are not given back.
  std::set<std::string> reported_during_beat_;
  bool wakeups_busy_ = false;         // the LISTEN connection is being re-opened on the store thread
  std::unique_ptr<store::Wakeups> wakeups_;
  Runner runner_;
  Secrets secrets_;
  WebhookRunner webhooks_;
  Metrics metrics_;
  std::unique_ptr<MetricsServer> metrics_server_;  // --metrics
  SystemdNotifier systemd_;
  std::string worker_id_;
  int signal_fd_ = -1;
  Phase phase_ = Phase::running;
  Clock::time_point drain_deadline_{};
  bool waited_out_ = false;  // the drain waited for the store to record to its deadline, in vain
  Clock::time_point report_deadline_{};   // draining: when to stop waiting for results to be recorded
  Clock::time_point next_heartbeat_{};
  Clock::time_point next_claim_{};        // when a due run or the poll fallback wants a claim
  Clock::time_point last_cancel_check_{};
  void leave_replaced_store();
  int exit_code_ = 0;
  Clock::time_point store_backoff_until_{};
  bool claim_wanted_ = true;
  bool looked_again_ = false;  // the last claim was the quick second look at a run due (start_claimed)
  std::optional<int64_t> epoch_;          // set while this agent is the scheduler leader
  Clock::time_point next_lead_{};         // next take-or-renew of the leader lease
  Clock::time_point next_schedule_{};     // next materialisation, while leading
  Clock::time_point next_overlap_{};      // next overlap sweep (see overlap_pause)
  Clock::time_point next_gc_{};           // next history retention pass, while leading
  std::map<std::string, Clock::time_point> schedule_errors_;  // last logged, per message
  std::vector<store::Completion> completions_;  // finished, not yet recorded
  std::optional<Clock::time_point> completed_since_;  // when the oldest of them was seen
  std::vector<store::Completion> releases_;     // given back on drain, not yet recorded
  // Given back on drain after their process ran: held until every process
  // the job left is ended too (shut_down), so that no other agent starts
  // the run again beside what is left of it.
  std::vector<store::Completion> held_releases_;
  std::mt19937_64 rng_{std::random_device{}()};  // backoff jitter
};

}  // namespace jobctl::agent
