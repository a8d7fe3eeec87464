#pragma once
// The store's own helpers, shared by its roles (common/store/*.cpp only).
// Each works inside the caller's transaction unless it says otherwise;
// `actor` is who the change is recorded as.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/jobs.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

struct ClaimedRun;

// A statement's text, made by make() once per dialect and kept: for a
// long one sent again and again (a batch's INSERT, which jobctl serve's
// group commit sends once a group: made anew each time, the text of its
// batches was 2 % of serve's CPU). Each call site keeps its own text per
// dialect (its own lambda, its own instance), so make() must depend on the
// dialect and nothing else.
template <class Make>
const std::string& made_once(const Connection& c, Make make) {
  if (c.dialect() == Dialect::postgres) {
    static const std::string postgres = make();
    return postgres;
  }
  static const std::string sqlite = make();
  return sqlite;
}

// The store's clock (NOW_US), µs since the epoch.
int64_t now_us(Connection& c);

// What a job is besides its definition, written with it: its kind — 'job'
// (submitted), 'node' (a DAG's node), 'dag' (the schedule that fires a
// DAG) or 'notification' — and the DAG it belongs to.
struct JobOrigin {
  std::string kind = "job";
  std::string dag_id;
};
// Jobs::submit's work inside the caller's transaction; FirstRun::no
// writes jobs without a first run (DAG nodes: their DAG runs make their
// runs). Every row is written whole by its INSERT (a schedule with its
// first fire time): a role that may only add rows (jobctl grant
// submitter) can.
enum class FirstRun { yes, no };
// Writes jobs a part at a time, each part's statements on their way while
// the caller reads the next (Connection::Send::with_next): what one part
// read (its queues' defaults, the store's clock, idempotency keys) serves
// the next, and finish() records the tenants and wakes the queues of all,
// once each. The parts of one transaction: a batch's, or a group commit's
// (a part per actor).
class JobWriter {
 public:
  JobWriter(Connection& c, FirstRun first_run, JobOrigin origin = {})
      : c_(c), first_run_(first_run), origin_(std::move(origin)) {}
  // A result per spec, in order; the jobs are recorded as submitted by
  // `actor`. A key written by an earlier part is found as any other
  // (existed = true). Throws JobRefused for a job whose retry policy or
  // schedule makes no sense.
  std::vector<SubmitResult> write(const std::string& actor, std::span<const model::JobSpec> specs);
  void finish();

 private:
  std::vector<model::RetryPolicy> retry_policies(std::span<const model::JobSpec> specs);
  void find_keys(std::span<const model::JobSpec> specs);

  Connection& c_;
  FirstRun first_run_;
  JobOrigin origin_;
  std::map<std::string, model::RetryOverrides> defaults_;  // of every queue read so far (empty: none of its own)
  std::map<std::string, SubmitResult> keys_;  // every idempotency key looked up so far: found, or then written
  std::optional<int64_t> now_;  // read once, and only for jobs with a time or a schedule
  std::set<std::string> queues_, tenants_;
  size_t given_ = 0;  // the jobs of the parts before: a refused job's index counts from the first part's first
};
// One part, finished.
std::vector<SubmitResult> write_jobs(Connection& c, const std::string& actor, const std::vector<model::JobSpec>& specs,
                                     FirstRun first_run, const JobOrigin& origin = {});
// A DAG's jobs (nodes, or the schedule that fires it). Returns their ids.
std::vector<std::string> insert_node_jobs(Connection& c, const std::string& actor,
                                          const std::vector<model::JobSpec>& specs, const JobOrigin& origin);
// The id and status of the job's latest run, for a command that acts on
// it (`action` names it in errors). Throws not_found / invalid_state.
std::pair<std::string, model::RunStatus> latest_run_for(Connection& c, const std::string& job_id, const char* action);
// Run s is a sibling of run l under --on-each: both pinned to an agent,
// of the same submit or occurrence (cancel and retry take them together).
inline constexpr const char* kSiblingRuns =
    "l.pinned_to IS NOT NULL AND s.pinned_to IS NOT NULL AND COALESCE(s.occurrence, -1) = COALESCE(l.occurrence, -1)";
// Run r is in the dead-letter queue: dead, neither run again (a replay, a
// retry or `dag retry` sets replayed_at) nor dismissed (`jobctl dlq
// dismiss`). Every query of the queue tests this one predicate; the
// partial index runs_dead serves it.
inline constexpr const char* kInDeadLetter =
    "(r.status = 'dead' AND r.replayed_at IS NULL AND r.dismissed_at IS NULL)";

// --notify: notification jobs (kind 'notification') and their runs.
void write_notifications(Connection& c, const std::string& actor, const std::vector<model::JobSpec>& specs);
// Agent::rescue_expired and give_back_runs: the running runs `where` picks
// (over runs r, jobs j and workers w, with `params`) lost their agent.
// Each is pending again at once (or dead, or cancelled: see
// rescue_expired), its attempt closed as lost with why_for(the worker's
// name). Returns how many.
// A claimed run whose job's row did not decode (Job::damaged) goes dead at
// once with the damage as its error; its attempt is closed as failed.
void end_damaged_run(Connection& c, const ClaimedRun& run, const std::string& damage);

int lose_runs(Connection& c, const std::string& actor, const std::string& where, const Params& params,
              const std::function<std::string(const std::string&)>& why_for);

// A DAG run of `dag_id`: one run per node, roots pending at `at` (now
// when unset). Returns its id.
std::string start_dag_run(Connection& c, const std::string& dag_id, std::optional<int64_t> occurrence,
                          std::optional<int64_t> at);
// The DAG run of `id` (a DAG run id, or a DAG id: its newest run).
std::string resolve_dag_run(Connection& c, const std::string& id);
// A scheduled DAG's schedule is deleted: the DAG runs its leader made
// ahead, none of whose nodes is due yet, are cancelled. Returns how many.
int64_t cancel_dag_runs_ahead(Connection& c, const std::string& dag_id);
// It is restored: those still ahead wait again, as they were.
void restore_dag_runs_ahead(Connection& c, const std::string& dag_id);

// Each queue's retry defaults.
std::map<std::string, model::RetryOverrides> queue_defaults(Connection& c, const std::set<std::string>& queues);

// A fresh pending run replaying `run_id`, audited as `action` ("replay" or
// "retry"); none when the run was run again already or its job is deleted
// (read under the locks of the run and its job: another replay, retry or
// delete committed first).
std::optional<std::string> rerun(Connection& c, const std::string& actor, const std::string& run_id,
                                 const char* action);
// rerun, refusing (invalid_state) a run that was run again already, or of
// a deleted job.
std::string rerun_once(Connection& c, const std::string& actor, const std::string& run_id, const char* action);

// Deletes those of `jobs` that are one-off jobs or notifications left
// with no run (gc, dlq purge): a job goes with its last run. Returns how
// many went.
int64_t delete_jobs_left_without_runs(Connection& c, const std::set<std::string>& jobs);

// Records an audit event for the job.
void audit(Connection& c, const std::string& actor, const std::string& job_id, const char* action,
           const std::string& details = "{}");
// Throw invalid_state naming `action` when the job is soft-deleted (the
// first reads the job's row, the second uses one already read).
void require_not_deleted(Connection& c, const std::string& job_id, const char* action);
void refuse_deleted(const model::Job& job, const char* action);

// Resume and restore: a schedule goes on from now; what came due while it
// was paused or deleted is skipped. After a pause (`resumed`) the
// occurrences it had no run for are recorded too, as one skipped run.
void restart_schedule(Connection& c, const std::string& job_id, bool resumed);
// Where a schedule goes on after a pause, a restore or a change of its
// bounds: after now and after the last occurrence it made that still
// stands, so that none is made (and counted against --max-runs) twice.
int64_t resume_after(Connection& c, const model::Job& job);

// Whether the run `r` (its alias) is a missed occurrence: one the leader
// made, never started, due longer ago than the leader's
// --misfire-threshold (scheduler_lease.misfire_after), of an overlap-skip
// schedule whose misfire policy says not to run it late: skip always,
// latest once a later occurrence of it is due or has started, all once it
// is older than the schedule's --catchup-window. The
// leader's sweep records it as skipped (Scheduler::enforce_overlap); the
// claim passes it over meanwhile, so that no agent starts it first. SQL,
// never NULL; a run not of a schedule costs one test.
std::string missed_occurrence(const char* r);

// Pending occurrences of a schedule skipped, with `why`: how many runs, and
// how many of the occurrences the leader had made (they no longer count
// against --max-runs). `which` is SQL on runs, with $2 on from `more`.
struct Dropped {
  int runs = 0;
  int64_t fired = 0;
};
Dropped drop_occurrences(Connection& c, const std::string& job_id, const std::string& why, const std::string& which,
                         const Params& more = {});

}  // namespace jobctl::store
