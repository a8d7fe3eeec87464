#pragma once
// The agent's side of the store: registration, the claim, heartbeats,
// completions, releases and the rescue of expired leases.
//
// The lease protocol: see store_agent.cpp.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// A run handed to an agent by claim(): everything it needs to execute.
struct ClaimedRun {
  std::string run_id;
  std::string job_id;
  int64_t fence = 0;       // proves the lease in heartbeat/complete
  int attempt = 0;         // 1-based number of this attempt
  int failures = 0;        // earlier attempts that reported a failure
  int64_t available_at = 0;
  int64_t first_started_at = 0;  // the run's first claim (store clock)
  int64_t claimed_at = 0;        // this claim (store clock)
  std::optional<int64_t> occurrence;  // a schedule's run: its fire time
  std::string queue;                  // the run's queue (its job's, unless an update moved the job meanwhile)
  std::string tenant;                 // the run's tenant
  std::string dag_run_id;             // a DAG node's run: its DAG run, and the node
  std::string dag_node;
  std::map<std::string, std::string> parent_results;  // a DAG node: each parent's result (its stdout's last line)
  std::optional<std::string> checkpoint;  // the last one an earlier attempt left (jobctl progress --checkpoint)
  model::JobSpec spec;
};

// The end of one attempt, as the agent reports it.
struct Completion {
  std::string run_id;
  std::string job_id;  // for logs, and a DAG node's children
  std::string dag_run_id;  // a DAG node: its end may release or cancel other nodes
  int64_t fence = 0;
  int attempt = 0;
  // What becomes of the run: succeeded, cancelled, dead, or pending again
  // (a retry, available after retry_delay_us).
  model::RunStatus status = model::RunStatus::succeeded;
  model::AttemptOutcome outcome = model::AttemptOutcome::succeeded;  // of the attempt
  int64_t retry_delay_us = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string error;
  std::string stdout_tail;   // a webhook: the response body's tail
  std::string stderr_tail;
  int64_t stdout_bytes = 0;  // all the attempt wrote, of which the tails are the end
  int64_t stderr_bytes = 0;
  std::optional<int> http_status;            // a webhook's response
  std::optional<model::HttpTimings> timings;
  // --notify: the notification jobs this end sends, written in the same
  // transaction when (and only when) the completion applies.
  std::vector<model::JobSpec> notifications;
  // When the attempt ended, on the store's clock as its agent reckons it
  // (its last heartbeat's reading of that clock, plus the time since on
  // its own steady clock); unset: when it is recorded. The end is recorded
  // then (between the attempt's start and now), and a retry's delay
  // counts from it: a result held through an outage had the outage's end
  // as its own (a 1 s job lasted 12.5 s).
  std::optional<int64_t> ended_at_us;
};

// The outcome of an attempt that leaves its run `status`: a retry or a
// dead end is a failed attempt.
inline model::AttemptOutcome attempt_outcome_of(model::RunStatus status) {
  if (status == model::RunStatus::succeeded) return model::AttemptOutcome::succeeded;
  if (status == model::RunStatus::cancelled) return model::AttemptOutcome::cancelled;
  return model::AttemptOutcome::failed;
}

// A Completion for `run` with `status`, every other field empty.
inline Completion completion_of(const ClaimedRun& run, model::RunStatus status) {
  Completion c;
  c.run_id = run.run_id;
  c.job_id = run.job_id;
  c.dag_run_id = run.dag_run_id;
  c.fence = run.fence;
  c.attempt = run.attempt;
  c.status = status;
  c.outcome = attempt_outcome_of(status);
  return c;
}

// A running attempt's output so far, shipped while it runs (jobctl logs
// --follow): the tails are the last bytes of all it wrote.
struct LiveOutput {
  std::string run_id;
  int attempt = 0;
  std::string stdout_tail;
  std::string stderr_tail;
  int64_t stdout_bytes = 0;
  int64_t stderr_bytes = 0;
};

// A lease the agent still holds after a heartbeat.
struct LeaseState {
  std::string run_id;
  std::string job_id;
  int64_t fence = 0;
  int attempt = 0;  // the attempt the lease is for
  bool cancel_requested = false;
};

struct WorkerRegistration {
  std::string name;
  std::string host;
  int pid = 0;
  std::vector<std::string> queues;
  int capacity = 0;
  std::string version;
  int64_t lease_us = 0;
  model::Labels labels;  // jobs with --on run here only if all their labels are among these
};

// A worker row of an agent with a given name on a given host: one per
// start of such an agent (Agent::incarnations).
struct Incarnation {
  std::string worker_id;
  int pid = 0;        // the agent's process id on that host
  bool gone = false;  // it stopped, or was found dead (rescue_expired, give_back_runs)
};

class Agent {
 public:
  explicit Agent(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  std::string register_worker(const WorkerRegistration& w);  // returns the worker id
  void set_worker_state(const std::string& worker_id, model::WorkerState state);
  // Claims up to `limit` pending runs of `queues` that are due and that this
  // worker's labels allow (--on), in priority then FIFO order, in one statement; each gets a lease of `lease_us`, a
  // new fence and a new attempt, which the run carries until the attempt
  // ends and its row is written (complete, release, rescue).
  std::vector<ClaimedRun> claim(const std::string& worker_id, const std::vector<std::string>& queues, int limit,
                                int64_t lease_us);
  // Extends the leases of every run this worker holds and marks it alive.
  // Returns the runs it holds, as the store sees them: a run it runs that
  // is missing here was lost (rescued elsewhere): kill it, do not report
  // it; a run here that it does not run (a claim whose answer was lost) is
  // its to give back with release().
  std::vector<LeaseState> heartbeat(const std::string& worker_id, model::WorkerState state, int64_t lease_us);
  // Records finished attempts, fenced: an entry whose fence is stale
  // changes nothing and comes back false. A retry (status pending) of a
  // deleted job's run is recorded as cancelled ("cancelled: the job was
  // deleted"): nothing would claim it.
  std::vector<bool> complete(const std::vector<Completion>& done);
  // Records running attempts' output so far, in one transaction. An
  // attempt that has ended, or that is not this worker's, is left alone.
  void ship_output(const std::string& worker_id, const std::vector<LiveOutput>& output);
  // Gives runs back without using up an attempt (agent drain): pending
  // again, available now (a deleted job's: cancelled). Fenced like complete().
  void release(const std::vector<Completion>& runs);
  // Makes runs whose lease expired claimable again, closing their attempt
  // as lost; an at-most-once run, or one delivered max_deliveries times
  // without a result, is dead instead, and a deleted job's is cancelled.
  // Marks workers that stopped heartbeating as gone. Returns how many runs
  // it rescued. Only runs (and workers) whose owner's lease is at most
  // `calm_us` long count: a caller that has reached the store without
  // trouble for only that long (after an outage or a clock step) leaves
  // owners with longer leases the time to renew them. Nothing is rescued
  // unless the store's clock reads within `[clock_from_us, clock_to_us]`
  // in the very statement that compares leases with it: a caller that
  // knows where the clock should be (from its last heartbeat) thereby
  // rescues nothing across a clock step it has not yet seen.
  int rescue_expired(int64_t calm_us = INT64_MAX, int64_t clock_from_us = INT64_MIN,
                     int64_t clock_to_us = INT64_MAX);
  // Every worker row named `name` on `host`, oldest first: a restarted
  // agent's earlier incarnations.
  std::vector<Incarnation> incarnations(const std::string& name, const std::string& host);
  // For an agent known dead, every process of its jobs gone (a restarted
  // agent that took its lock): its runs are given back at once, as
  // rescue_expired gives back expired ones (attempt lost with `why`,
  // at-most-once, poison and deleted jobs alike), whatever their leases
  // say, and it is marked gone. Returns how many runs. (On PostgreSQL a
  // run whose job someone is changing at that moment is left to its lease.)
  int give_back_runs(const std::string& worker_id, const std::string& why);
  // How long (µs, store clock) until the earliest pending run of `queues`
  // that `worker_id` could claim is due: 0 or less when one is due now,
  // nothing when none waits. Runs of paused or deleted jobs, of jobs whose
  // --on labels this worker lacks, and occurrences their overlap policy
  // holds back, do not count.
  std::optional<int64_t> next_due_in(const std::string& worker_id, const std::vector<std::string>& queues);
  // Records that this worker saw the store's clock step by `step_us` (for
  // jobctl doctor).
  void record_clock_step(const std::string& worker_id, int64_t step_us);

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
