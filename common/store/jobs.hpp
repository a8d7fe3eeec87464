#pragma once
// Jobs as jobctl sees them: submit, read, cancel, pause, update, delete
// and restore, the audit trail, and a job's own progress reports.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/model/schedule.hpp"
#include "common/store/sql.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {

struct SubmitResult {
  std::string job_id;
  std::string run_id;
  bool existed = false;  // the idempotency key matched an earlier job
};

// A job of a batch that the store refused, and nothing of the batch was
// written: its retry policy makes no sense once its queue's defaults are
// applied, or its schedule cannot be read. index() is its place in the
// batch (from 0), for the caller to name it (a --file line, an array item).
class JobRefused : public Error {
 public:
  JobRefused(const Error& e, size_t index) : Error(e), index_(index) {}
  size_t index() const { return index_; }

 private:
  size_t index_;
};

// A batch of jobs given a part at a time (Jobs::submit): each part goes
// to the store while the next is read.
class JobParts {
 public:
  virtual ~JobParts() = default;
  // The next part, once it is read; empty after the last. Throws what
  // stops the reading (the submit then writes nothing).
  virtual std::span<const model::JobSpec> next() = 0;
  // From the first part again: the submit is tried again after a conflict.
  virtual void rewind() = 0;
};

// The jobs of a vector, as one part.
class OnePart final : public JobParts {
 public:
  explicit OnePart(std::span<const model::JobSpec> specs) : specs_(specs) {}
  std::span<const model::JobSpec> next() override { return std::exchange(given_, true) ? std::span<const model::JobSpec>() : specs_; }
  void rewind() override { given_ = false; }

 private:
  std::span<const model::JobSpec> specs_;
  bool given_ = false;
};

// One caller's jobs in a group commit (Jobs::submit_together).
struct Submission {
  std::string actor;  // who they are recorded as submitted by
  std::vector<model::JobSpec> specs;
};

// What one Submission became: a result per spec and, in the same order,
// each job as the submit left it, with its latest run (as get_jobs reads it).
struct Submitted {
  std::vector<SubmitResult> results;
  std::vector<model::JobView> views;
};

struct JobFilter {
  std::optional<model::RunStatus> status;  // of the job's latest run
  std::optional<std::string> queue;
  bool deleted = false;                    // list only soft-deleted jobs (else only live ones)
  std::string before;                      // only jobs older than this job id (a page's cursor); "" for none
  int limit = 50;
};

enum class CancelOutcome {
  cancelled,  // it had not started: it is cancelled now
  requested,  // it is running: its agent kills it at its next heartbeat
  // It was asked to stop already and still runs: nothing changed, nothing
  // is recorded (each cancel again added a "cancel" to its history).
  requested_already,
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
  // Bounds: a time as typed, read in the schedule's zone ("" removes it),
  // and a number of runs (0 removes the limit).
  std::optional<std::string> starts_at;
  std::optional<std::string> ends_at;
  std::optional<int64_t> max_runs;

  bool empty() const {
    return !cron && !tz && !misfire && !catchup_window_us && !overlap && !max_concurrent && !jitter_us &&
           !starts_at && !ends_at && !max_runs;
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
  std::optional<std::string> user;             // "" = the agent's --run-as, else its own user
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

class Jobs {
 public:
  explicit Jobs(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  // Writes each job and its first run (pending, available now) in one
  // transaction; on PostgreSQL NOTIFYs the queues in it. Each job's retry
  // policy is resolved here: built-in defaults, its queue's defaults, then
  // spec.retry_given (throws usage Error when the result makes no sense). A spec whose
  // idempotency key exists returns the existing job (existed = true),
  // also for two equal keys inside one batch.
  std::vector<SubmitResult> submit(const std::vector<model::JobSpec>& specs);
  // The same for a batch read a part at a time: all in one transaction,
  // each part written while the next is read. A result per job, in order.
  std::vector<SubmitResult> submit(JobParts& parts);
  // Several callers' submissions, each as submit() would write it, in one
  // transaction (group commit: one commit, one NOTIFY per queue, for all),
  // with their jobs read back in it. All or nothing for the group: when one
  // is refused, none is written.
  std::vector<Submitted> submit_together(const std::vector<Submission>& group);
  std::optional<model::JobView> get_job(const std::string& job_id);
  // The jobs that exist among `job_ids`, in that order, in one query.
  std::vector<model::JobView> get_jobs(const std::vector<std::string>& job_ids);
  std::vector<model::JobView> list_jobs(const JobFilter& filter);
  std::optional<model::Run> get_run(const std::string& run_id);
  // Ids of `kind` that sort in [from, to) (`to` empty: no end), in order,
  // at most `limit`: those a typed prefix names (ops::expand_id).
  enum class IdKind { job, run, dag_run };
  std::vector<std::string> ids_between(IdKind kind, const std::string& from, const std::string& to, int limit);
  // The ids of `kind` nearest `id` on either side ("" for none), leaving
  // out `id` itself and, among runs, those of the job `id` (a job's first
  // run has its id plus one): how much of `id` a unique prefix needs.
  std::pair<std::string, std::string> ids_around(IdKind kind, const std::string& id);
  std::vector<model::Run> runs_of(const std::string& job_id);
  std::vector<model::Attempt> attempts(const std::string& run_id);  // oldest first
  // Cancels the job's latest run. Throws not_found, or invalid_state when
  // that run already finished.
  CancelOutcome cancel(const std::string& job_id);
  // Pauses or resumes a job: a paused job's pending runs are not claimed.
  // Returns false when it already was in that state. Throws not_found.
  bool set_paused(const std::string& job_id, bool paused);
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
  // are cancelled (a schedule's occurrences made ahead skipped), a running
  // one finishes (or is asked to stop with CancelRunning::yes); the job and
  // its history stay. Throws not_found, or invalid_state when it is deleted
  // already.
  struct Deleted {
    int cancelled = 0;  // cancelled, or running and asked to stop
    int skipped = 0;    // occurrences made ahead (a restore in time makes them wait again)
  };
  Deleted delete_job(const std::string& job_id, CancelRunning cancel_running);
  // Undoes delete_job: a schedule fires again from now (no catch-up); runs
  // the delete cancelled stay cancelled. Throws not_found, or
  // invalid_state when the job is not deleted.
  void restore_job(const std::string& job_id);
  // The job's audit trail, newest first: its creation, then every event.
  // Throws not_found.
  std::vector<model::JobEvent> history(const std::string& job_id, int limit);
  // Records the attempt's progress (0..1), a message, and (when given) the
  // checkpoint the run's next attempt receives. Fenced: throws
  // invalid_state when `fence` is not the running attempt's.
  void report_progress(const std::string& run_id, int64_t fence, double progress, const std::string& message,
                       const std::optional<std::string>& checkpoint);

 private:
  // The jobs of `results`, just written from `specs` (one each) in the
  // caller's transaction, by id. Those the submit made are read with the
  // transaction's next statement, its COMMIT (a round trip less): their
  // rows land in `made` then, for view_from_row.
  std::map<std::string, model::JobView> submitted_views(const std::vector<SubmitResult>& results,
                                                        const std::vector<const model::JobSpec*>& specs, Rows& made);

  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
