#pragma once
// The store: every read and write of jobs, runs, attempts and workers.
//
// One Store over two drivers (store/sql.hpp): SQLite for one host,
// PostgreSQL for a fleet. The logic and nearly all SQL are shared, so the
// two backends cannot drift apart; where the engines differ (the claim
// statement, batch inserts, wake-ups) the dialect picks the spelling.
//
// Contract for every method:
// * Each call is one transaction: it happens entirely or not at all.
// * "Not found" is an empty optional (or, for commands that need the row,
//   Error(ExitCode::not_found) naming the id).
// * Failures throw jobctl::Error (see util/error.hpp).
// * Times are the database clock, microseconds since the epoch.
// * A Store is not thread-safe: one per thread.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "common/config/dsn.hpp"
#include "common/dag/dag.hpp"
#include "common/model/job.hpp"
#include "common/model/schedule.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

struct SubmitResult {
  std::string job_id;
  std::string run_id;
  bool existed = false;  // the idempotency key matched an earlier job
};

struct JobFilter {
  std::optional<model::RunStatus> status;  // of the job's latest run
  std::optional<std::string> queue;
  bool deleted = false;                    // list only soft-deleted jobs (else only live ones)
  int limit = 50;
};

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
  std::optional<int> http_status;            // a webhook's response
  std::optional<model::HttpTimings> timings;
  // --notify: the notification jobs this end sends, written in the same
  // transaction when (and only when) the completion applies.
  std::vector<model::JobSpec> notifications;
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
// start of such an agent (Store::incarnations).
struct Incarnation {
  std::string worker_id;
  int pid = 0;        // the agent's process id on that host
  bool gone = false;  // it stopped, or was found dead (rescue_expired, give_back_runs)
};

// Which dead runs a dead-letter query or a bulk replay covers.
struct DeadFilter {
  std::optional<std::string> queue;
  std::optional<int64_t> since;  // died at or after (store clock, µs)
  std::optional<int64_t> until;  // died before
  int limit = 1000;
};

// A queue: its retry defaults and how many runs it holds in each state.
struct QueueInfo {
  std::string name;
  model::RetryOverrides defaults;
  int64_t pending = 0;
  int64_t running = 0;
  int64_t dead = 0;  // in the dead-letter queue
  bool paused = false;  // jobctl queue pause: no agent claims from it
  int max_concurrent = 0;         // runs of the queue at once; 0 = no limit
  double rate = 0;                // runs started per second; 0 = no limit
  int tenant_max_concurrent = 0;  // runs of one tenant in the queue at once; 0 = no limit
};

// `jobctl queue set` limits; unset fields stay, 0 removes a limit.
struct QueueLimits {
  std::optional<int> max_concurrent;
  std::optional<double> rate;
  std::optional<int> tenant_max_concurrent;

  bool empty() const { return !max_concurrent && !rate && !tenant_max_concurrent; }
};

// jobctl stats / check: which queue and how far back.
struct StatsFilter {
  std::optional<std::string> queue;  // all queues when unset
  int64_t window_us = 3'600'000'000;  // --since: what ended in the last this long
};

struct Percentiles {
  int64_t samples = 0;
  double p50 = 0, p95 = 0, p99 = 0;  // seconds
};

// One queue and priority: now, and over the window.
struct QueueStats {
  std::string queue;
  model::Priority priority = model::Priority::normal;
  int64_t window_us = 0;
  // Now.
  int64_t ready = 0;      // pending and due: waiting for an agent
  int64_t scheduled = 0;  // pending, due later (--at, --in, retries, schedule occurrences made ahead)
  int64_t blocked = 0;    // DAG nodes waiting for their parents
  int64_t running = 0;
  std::optional<int64_t> oldest_ready_us;  // how long the longest-waiting due run has waited
  int64_t dead_letter = 0;                 // dead runs not replayed, of any age
  int64_t held = 0;                        // pending runs of paused jobs (not in ready, scheduled or oldest)
  // Over the window.
  int64_t succeeded = 0;  // runs that ended succeeded
  int64_t dead = 0;       // runs that went to the dead-letter queue
  int64_t cancelled = 0;
  int64_t succeeded_attempts = 0;
  int64_t failed_attempts = 0;  // attempts that failed (retried or not)
  Percentiles lag_s;            // claim − due, of the attempts that started
  Percentiles duration_s;       // of the attempts that ended
};

// A running run that looks stuck (jobctl ls --stuck), with why.
struct StuckRun {
  model::JobView view;     // the job, with the stuck run as latest_run
  std::string why;
  int64_t running_us = 0;  // since its attempt started
  std::string worker;      // the agent running it, by name
};

// A failed attempt, for jobctl top.
struct FailedAttempt {
  std::string job_id;
  std::string job_name;
  std::string queue;
  std::string run_id;
  int attempt = 0;
  int64_t finished_at = 0;
  std::string error;
};

// One finding of jobctl doctor.
struct Finding {
  enum class Level { ok, warn, fail };
  std::string name;    // what was looked at: "schema", "table runs", "WAL", …
  Level level = Level::ok;
  std::string detail;  // what was found
  std::string hint;    // what to do about it (warn, fail)
};

// What jobctl gc removed.
struct GcResult {
  int64_t runs = 0;
  int64_t attempts = 0;
  int64_t jobs = 0;      // one-off jobs left with no run
  int64_t dag_runs = 0;
  int64_t batches = 0;   // transactions
  bool more = false;     // stopped at max_batches: call again
};

// How the leader materialises schedules (jobagent flags).
struct SchedulerSettings {
  int64_t horizon_us = 60'000'000;       // materialise occurrences this far ahead
  int64_t misfire_after_us = 60'000'000;  // an occurrence this late was missed
  int batch = 500;                        // schedules per transaction
};

struct MaterialiseResult {
  bool fenced = false;  // this agent no longer leads: nothing was written
  int schedules = 0;    // schedules looked at
  int64_t runs = 0;     // occurrences that became runs
  int64_t skipped = 0;  // occurrences recorded as skipped (misfire)
  bool more = false;    // stopped at a limit: call again soon
  std::vector<std::string> errors;  // schedules that could not be evaluated
};

// A schedule with its most recent run that is due (not a future occurrence).
struct ScheduleView {
  model::Job job;
  std::optional<model::Run> last_run;
};

// The fields `jobctl update` changes on a schedule; unset ones stay.
struct ScheduleUpdate {
  std::optional<std::string> cron;
  std::optional<std::string> tz;
  std::optional<model::Misfire> misfire;
  std::optional<int64_t> catchup_window_us;
  std::optional<model::Overlap> overlap;
  std::optional<int> max_concurrent;
  std::optional<int64_t> jitter_us;

  bool empty() const {
    return !cron && !tz && !misfire && !catchup_window_us && !overlap && !max_concurrent && !jitter_us;
  }
};

// What `jobctl update` changes on a job; unset fields stay as they are.
struct JobUpdate {
  std::optional<std::string> name;
  std::optional<std::string> queue;
  std::optional<model::Priority> priority;
  std::optional<int64_t> timeout_us;
  std::map<std::string, std::string> set_env;  // added or replaced
  std::vector<std::string> unset_env;          // removed (after set_env)
  std::optional<model::Command> command;
  std::optional<model::Labels> target;         // --on: new target; empty = any agent
  std::optional<std::string> concurrency_key;  // "" = none (the job is its own group)
  std::optional<std::string> tenant;           // "" = the default tenant
  model::RetryOverrides retry;                 // the retry fields given
  ScheduleUpdate schedule;                     // only for a schedule
  // Optimistic concurrency: apply only while the job is at this version,
  // else throw Error(ExitCode::conflict) and write nothing.
  std::optional<int> if_version;
};

struct UpdateResult {
  int version = 0;       // the job's version after the update
  bool changed = false;  // false: every given value was the current one (no new version, no event)
  int dropped = 0;       // pending occurrences dropped because the schedule's timing changed
};

// Whether `jobctl delete` stops a run that is already running.
enum class CancelRunning { no, yes };

struct BackfillResult {
  int64_t occurrences = 0;  // in the span
  int64_t created = 0;      // new runs (the others had one already)
};

// Most occurrences one backfill may create.
inline constexpr size_t kMaxBackfill = 10000;

// jobctl dag submit: a validated definition, as the user wrote it.
struct DagSubmit {
  dag::Definition definition;
  std::string document;  // kept for `dag graph` and `dag status`
  dag::OnFailure on_failure = dag::OnFailure::stop;
  std::optional<model::ScheduleSpec> schedule;  // --cron: one DAG run per occurrence
};

struct DagSubmitResult {
  std::string dag_id;
  std::string dag_run_id;       // empty for a scheduled DAG
  std::string schedule_job_id;  // a scheduled DAG: the job that fires it
};

// One node of a DAG run, with its latest run.
struct DagNodeView {
  std::string name;
  std::string job_id;
  std::vector<std::string> depends_on;
  model::Run run;
};

struct DagRunView {
  std::string id;
  std::string dag_id;
  std::string name;
  dag::OnFailure on_failure = dag::OnFailure::stop;
  std::string status;  // running, paused, succeeded, failed, cancelled
  int64_t created_at = 0;
  std::optional<int64_t> finished_at;  // when its last node ended
  std::optional<int64_t> occurrence;   // a scheduled DAG's fire time
  std::map<std::string, int64_t> counts;  // nodes by the status of their latest run
  std::vector<DagNodeView> nodes;         // get_dag_run only, in topological order
};

enum class CancelOutcome {
  cancelled,  // it had not started: it is cancelled now
  requested,  // it is running: its agent kills it at its next heartbeat
};

class Store {
 public:
  // Opens the database. On SQLite an empty file gets the schema at once
  // (zero set-up); otherwise the schema must be current (require_schema).
  static std::unique_ptr<Store> open(const config::Dsn& dsn);

  explicit Store(std::unique_ptr<Connection> conn);
  Dialect dialect() const { return conn_->dialect(); }
  Connection& connection() { return *conn_; }

  // --- schema -------------------------------------------------------------
  int schema_version();
  int migrate();  // see migrations.hpp
  // Throws Error(ExitCode::store) with "run jobctl init" when the schema is
  // missing or older than this build, or "upgrade" when it is newer.
  void require_schema();

  // --- jobs (jobctl) ------------------------------------------------------
  // Writes each job and its first run (pending, available now) in one
  // transaction; on PostgreSQL NOTIFYs the queues in it. Each job's retry
  // policy is resolved here: built-in defaults, its queue's defaults, then
  // spec.retry_given (throws usage Error when the result makes no sense). A spec whose
  // idempotency key exists returns the existing job (existed = true),
  // also for two equal keys inside one batch.
  std::vector<SubmitResult> submit(const std::vector<model::JobSpec>& specs);
  std::optional<model::JobView> get_job(const std::string& job_id);
  // The jobs that exist among `job_ids`, in that order, in one query.
  std::vector<model::JobView> get_jobs(const std::vector<std::string>& job_ids);
  std::vector<model::JobView> list_jobs(const JobFilter& filter);
  std::optional<model::Run> get_run(const std::string& run_id);
  std::vector<model::Run> runs_of(const std::string& job_id);
  std::vector<model::Attempt> attempts(const std::string& run_id);  // oldest first
  // Cancels the job's latest run. Throws not_found, or invalid_state when
  // that run already finished.
  CancelOutcome cancel(const std::string& job_id);

  // Pauses or resumes a job: a paused job's pending runs are not claimed.
  // Returns false when it already was in that state. Throws not_found.
  bool set_paused(const std::string& job_id, bool paused);

  // --- queues ---------------------------------------------------------------
  // Sets the given retry defaults of a queue (others keep their value);
  // `clear` first resets all of them. Applies to jobs submitted afterwards.
  enum class Clear { no, yes };
  void set_queue_defaults(const std::string& queue, const model::RetryOverrides& defaults, Clear clear);
  // Sets the given limits of a queue (see QueueLimits). Throws usage Error
  // for a negative one.
  void set_queue_limits(const std::string& queue, const QueueLimits& limits);
  // Every queue that has defaults or runs, by name.
  std::vector<QueueInfo> list_queues();
  // Pauses or resumes a queue: no agent claims the runs of a paused queue
  // (running ones finish). Returns false when it already was in that state.
  bool set_queue_paused(const std::string& queue, bool paused);

  // --- the dead-letter queue ----------------------------------------------
  // Dead runs not replayed yet, newest death first, each with its job.
  std::vector<model::JobView> dead_runs(const DeadFilter& filter);
  // For each dead run, a fresh pending run of its job with a fresh retry
  // budget, linked to it (replay_of); the dead run leaves the queue. All or
  // nothing: throws invalid_state naming the first run that is not dead
  // (or was replayed already). Returns the new run ids.
  std::vector<std::string> replay(const std::vector<std::string>& dead_run_ids);
  // Replays every dead run the filter covers, in one transaction.
  int replay_all(const DeadFilter& filter);
  // Deletes dead runs (and their attempts) that died before now - age.
  int purge_dead(int64_t older_than_us);
  // Manual retry: a fresh run of a job whose latest run is dead, failed or
  // cancelled. Throws not_found, or invalid_state for a job still pending,
  // running or succeeded. Returns the new run id.
  std::string retry_job(const std::string& job_id);

  // --- agents (jobagent) --------------------------------------------------
  std::string register_worker(const WorkerRegistration& w);  // returns the worker id
  void set_worker_state(const std::string& worker_id, model::WorkerState state);
  std::vector<model::Worker> list_workers();

  // Claims up to `limit` pending runs of `queues` that are due and that this
  // worker's labels allow (--on), in priority then FIFO order, in one statement; each gets a lease of `lease_us`, a
  // new fence and a new attempt row.
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
  int64_t now();  // the database clock
  // Records that this worker saw the store's clock step by `step_us` (for
  // jobctl doctor).
  void record_clock_step(const std::string& worker_id, int64_t step_us);

  // --- from inside a job (jobctl progress) --------------------------------------
  // Records the attempt's progress (0..1), a message, and (when given) the
  // checkpoint the run's next attempt receives. Fenced: throws
  // invalid_state when `fence` is not the running attempt's.
  void report_progress(const std::string& run_id, int64_t fence, double progress, const std::string& message,
                       const std::optional<std::string>& checkpoint);

  // --- health (jobctl stats, check, ls --stuck) ------------------------------------
  // Running runs past their --timeout plus their agent's lease (the agent
  // should have killed them), or with no progress report (jobctl progress;
  // else since the attempt started) for `no_progress_us`. Longest first.
  // The store's own health (jobctl doctor): schema, clock skew to this
  // host, stale agents, and per engine vacuum, long transactions and
  // indexes (PostgreSQL) or file, WAL and integrity (SQLite).
  std::vector<Finding> doctor();
  // The latest failed attempts of the last `within_us`, newest first.
  std::vector<FailedAttempt> recent_failures(int limit, int64_t within_us);
  std::vector<StuckRun> stuck_runs(int64_t no_progress_us, int limit, const std::optional<std::string>& queue = {});
  // Per queue and priority, sorted so; see QueueStats. One read transaction.
  std::vector<QueueStats> stats(const StatsFilter& filter);

  // Removes finished history older than `older_than_us` (see store_gc.cpp
  // for what stays), at most `batch` runs or DAG runs per transaction and
  // `max_batches` transactions per call.
  GcResult gc(int64_t older_than_us, int batch = 5000, int64_t max_batches = INT64_MAX);

  // --- the scheduler (the leader agent) -------------------------------------
  // Takes or renews the scheduler lease for `lease_us`. Returns the epoch
  // while this worker leads; nothing when another agent does.
  std::optional<int64_t> lead(const std::string& worker_id, int64_t lease_us);
  // Gives the lease up (agent shutdown), so another agent takes over at once.
  void resign(const std::string& worker_id);
  // Turns the occurrences of due schedules into runs (see cron/plan.hpp),
  // fenced by the lease: writes nothing unless `worker_id` still leads at
  // `epoch`. On PostgreSQL NOTIFYs the queues that got runs.
  MaterialiseResult materialise(const std::string& worker_id, int64_t epoch, const SchedulerSettings& settings);
  // The overlap policies that act rather than wait: skips due occurrences
  // (skip, buffer-one) and asks running ones to stop (cancel-other).
  // Returns how many runs it changed.
  int enforce_overlap();

  // --- schedules (jobctl) -----------------------------------------------------
  std::vector<ScheduleView> list_schedules();  // by next fire time
  // The schedule's runs that are due or done, newest first. Throws
  // not_found, or invalid_state when the job is not a schedule.
  std::vector<model::Run> schedule_runs(const std::string& job_id, int limit);
  // One run now. Unless `force`, obeys the overlap policy: throws
  // invalid_state when it would be skipped. Returns the run id.
  std::string trigger(const std::string& job_id, bool force);
  // Runs for the occurrences in [from, to] that have none yet.
  BackfillResult backfill(const std::string& job_id, int64_t from_us, int64_t to_us);

  // --- DAGs (jobctl dag) -------------------------------------------------------
  // Writes the DAG, its node jobs and edges, and (unless scheduled) its
  // first DAG run, in one transaction.
  DagSubmitResult submit_dag(const DagSubmit& dag);
  // A DAG run with its nodes; `id` may also name a DAG (its newest run).
  // Throws not_found.
  DagRunView get_dag_run(const std::string& id);
  std::vector<DagRunView> list_dag_runs(int limit);  // newest first, without nodes
  // Cancels the nodes not started and asks running ones to stop. Returns
  // how many it cancelled or asked. Throws not_found / invalid_state.
  int cancel_dag_run(const std::string& id);
  // Pause: no node of the run starts until resume. False when it already was.
  bool set_dag_run_paused(const std::string& id, bool paused);
  // A fresh run of every node whose latest run failed or was cancelled,
  // blocked behind those of its parents that have not succeeded; succeeded
  // nodes are kept. Throws invalid_state while a node still runs or waits.
  int retry_dag_run(const std::string& id);
  // The definition the DAG was submitted with.
  std::string dag_document(const std::string& dag_id);

  // --- lifecycle and audit (jobctl update, delete, restore, history) ---------
  // Who the changes this Store makes are recorded as (jobctl: --actor,
  // JOBCTL_ACTOR or user@host). Default "unknown".
  void set_actor(std::string actor) { actor_ = std::move(actor); }
  // Changes the job's definition and bumps its version, in one transaction
  // with its audit event. Pending runs run the new definition (their queue,
  // priority and version follow it); a running one keeps what it started
  // with. A schedule whose timing changed (cron, tz, jitter) drops its
  // pending occurrences and fires from now under the new version. Throws
  // not_found; invalid_state for a deleted job or schedule fields on a job
  // that is no schedule; conflict when if_version does not match; usage
  // for values that make no sense. Nothing is written when it throws.
  UpdateResult update_job(const std::string& job_id, const JobUpdate& update);
  // Soft-deletes the job: it makes no new runs, its pending and blocked runs
  // are cancelled, a running one finishes (or is asked to stop with
  // CancelRunning::yes); the job and its history stay. Throws not_found,
  // or invalid_state when it is deleted already. Returns how many runs it
  // cancelled or asked to stop.
  int delete_job(const std::string& job_id, CancelRunning cancel_running);
  // Undoes delete_job: a schedule fires again from now (no catch-up); runs
  // the delete cancelled stay cancelled. Throws not_found, or
  // invalid_state when the job is not deleted.
  void restore_job(const std::string& job_id);
  // The job's audit trail, newest first: its creation, then every event.
  // Throws not_found.
  std::vector<model::JobEvent> history(const std::string& job_id, int limit);

 private:
  std::vector<SubmitResult> insert_jobs(std::vector<model::JobSpec> specs);
  // insert_jobs' work inside the caller's transaction; FirstRun::no writes
  // jobs without a first run (DAG nodes: their DAG runs make their runs).
  enum class FirstRun { yes, no };
  std::vector<SubmitResult> write_jobs(std::vector<model::JobSpec> specs, FirstRun first_run);
  // --notify: notification jobs (kind 'notification') and their runs,
  // inside the caller's transaction.
  void write_notifications(std::vector<model::JobSpec> specs);
  // DAG nodes' jobs, inside the caller's transaction. Returns their ids.
  std::vector<std::string> insert_node_jobs(std::vector<model::JobSpec> specs);
  // A DAG run of `dag_id`: one run per node, roots pending at `at` (now
  // when unset). Inside a transaction. Returns its id.
  std::string start_dag_run(const std::string& dag_id, std::optional<int64_t> occurrence, std::optional<int64_t> at);
  // The DAG run of `id` (a DAG run id, or a DAG id: its newest run).
  std::string resolve_dag_run(const std::string& id);
  std::map<std::string, model::RetryOverrides> queue_defaults(const std::set<std::string>& queues);
  // A fresh pending run replaying `run_id`, audited as `action`. Inside a
  // transaction.
  std::string rerun(const std::string& run_id, const char* action);
  // rescue_expired and give_back_runs: the running runs `where` picks (over
  // runs r, jobs j and workers w, with `params`) lost their agent. Each is
  // pending again at once (or dead, or cancelled: see rescue_expired), its
  // attempt closed as lost with why_for(the worker's name). Inside the
  // caller's transaction; returns how many.
  int lose_runs(const std::string& where, const Params& params,
                const std::function<std::string(const std::string&)>& why_for);
  // Records an audit event for the job, inside the caller's transaction.
  void audit(const std::string& job_id, const char* action, const std::string& details = "{}");
  // Throw invalid_state naming `action` when the job is soft-deleted (the
  // first reads the job's row, the second uses one already read).
  void require_not_deleted(const std::string& job_id, const char* action);
  static void refuse_deleted(const model::Job& job, const char* action);
  // Submit: fills in the schedule columns of new jobs (id, spec) that have
  // one. Inside the submit transaction.
  void start_schedules(const std::vector<std::pair<std::string, const model::JobSpec*>>& jobs);
  // Resume: a schedule starts over from now. Inside a transaction.
  void restart_schedule(const std::string& job_id);
  // The id and status of the job's latest run, for a command that acts on
  // it (`action` names it in errors). Throws not_found / invalid_state.
  std::pair<std::string, model::RunStatus> latest_run_for(const std::string& job_id, const char* action);

  std::unique_ptr<Connection> conn_;
  std::string actor_ = "unknown";
};

}  // namespace jobctl::store
