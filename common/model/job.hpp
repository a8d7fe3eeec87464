#pragma once
// The entities of DESIGN.md as plain values: what a user asks for (JobSpec),
// what the store holds (Job, Run, Attempt, Worker). No behaviour beyond
// conversions to and from their text forms.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/labels.hpp"
#include "common/model/notify.hpp"
#include "common/model/retry.hpp"
#include "common/model/names.hpp"
#include "common/model/schedule.hpp"
#include "common/model/webhook.hpp"

namespace jobctl::model {

// Claim order: lower value first. Stored as this integer.
enum class Priority : int { critical = 0, high = 1, normal = 2, low = 3 };

// Run states; see DESIGN.md "Run states".
enum class RunStatus { blocked, pending, running, succeeded, failed, dead, cancelled, skipped };

// How an attempt ended (or that it has not yet).
enum class AttemptOutcome { running, succeeded, failed, cancelled, released, lost };

inline constexpr EnumNames<Priority, 5> kPriorityNames{{
    {Priority::critical, "critical"},
    {Priority::high, "high"},
    {Priority::normal, "normal"},
    {Priority::low, "low"},
    {Priority::normal, "medium"},  // an alias: CRITICAL > HIGH > MEDIUM > LOW elsewhere
}};
inline constexpr EnumNames<RunStatus, 8> kRunStatusNames{{
    {RunStatus::blocked, "blocked"},
    {RunStatus::pending, "pending"},
    {RunStatus::running, "running"},
    {RunStatus::succeeded, "succeeded"},
    {RunStatus::failed, "failed"},
    {RunStatus::dead, "dead"},
    {RunStatus::cancelled, "cancelled"},
    {RunStatus::skipped, "skipped"},
}};
inline constexpr EnumNames<AttemptOutcome, 6> kAttemptOutcomeNames{{
    {AttemptOutcome::running, "running"},
    {AttemptOutcome::succeeded, "succeeded"},
    {AttemptOutcome::failed, "failed"},
    {AttemptOutcome::cancelled, "cancelled"},
    {AttemptOutcome::released, "released"},
    {AttemptOutcome::lost, "lost"},
}};

std::string_view to_string(Priority p);
std::string_view to_string(RunStatus s);
std::string_view to_string(AttemptOutcome o);
// Both throw jobctl::Error(ExitCode::usage) naming the bad value.
Priority parse_priority(std::string_view text);
RunStatus parse_run_status(std::string_view text);
// True for succeeded, failed, dead, cancelled and skipped: nothing more will happen.
bool is_final(RunStatus s);

// What to execute. A command given as one string is run by `sh -c`; one
// given as an argv array is executed directly (PATH is searched). A
// webhook job makes an HTTP request instead, and has no argv.
struct Command {
  std::vector<std::string> argv;  // non-empty, unless webhook
  bool via_shell = false;         // argv has one element: the script for sh -c
  std::optional<Webhook> webhook;  // --webhook

  std::vector<std::string> exec_argv() const;  // what the executor spawns
  std::string display() const;                 // for tables and logs
};

// A job as submitted: every field a user can set. Defaults are the CLI's.
struct JobSpec {
  std::string name;                          // free text; empty = unnamed
  std::string queue = "default";             // agents claim from named queues
  Priority priority = Priority::normal;
  Command command;
  int64_t timeout_us = 0;                    // 0 = no timeout
  std::map<std::string, std::string> env;    // added to the job's environment
  std::string cwd;                           // empty = the agent's working directory
  std::string user;                          // --user: run as this user on the agent's host; empty = the agent's
                                             // --run-as, else the agent's own user
  std::optional<std::string> payload;        // JSON text; on stdin and in JOB_PAYLOAD
  std::string idempotency_key;               // empty = none
  std::optional<int64_t> run_at_us;          // --at: due at this time (µs since epoch); else now
  int64_t delay_us = 0;                      // --in: due this long after submit (store clock)
  RetryOverrides retry_given;                // submit: the retry fields the user set
  RetryPolicy retry;                         // the resolved policy (what a failure leads to)
  std::optional<ScheduleSpec> schedule;      // --cron: a recurring job; it gets no first run
  Labels target;                             // --on: only agents with all these labels run it; empty = any
  // --on-each: one run per live agent with all these labels (empty: every
  // agent), each --stagger after the one before. Unset: one run.
  std::optional<Labels> fan_out;
  int64_t stagger_us = 0;
  // --concurrency-key / --max-concurrent: at most max_concurrent runs of the
  // job's concurrency group at once, fleet-wide. The group is the job itself
  // unless concurrency_key names a shared one. A schedule keeps its limit in
  // ScheduleSpec (its overlap policy); see group_limit().
  std::string concurrency_key;
  std::optional<int> max_concurrent;
  std::string tenant;                        // --tenant: served fairly against other tenants in its queue
  Notify notify;                             // --notify / --notify-on: who hears of its runs' ends
};

// The limit of the job's concurrency group; 0 means none. A concurrency key
// without a number means 1.
int group_limit(const JobSpec& s);

struct Job {
  std::string id;        // ULID
  JobSpec spec;
  int version = 1;       // bumped by every `jobctl update` that changes something
  bool paused = false;
  int64_t created_at = 0;  // µs since epoch, store clock
  std::optional<int64_t> deleted_at;  // `jobctl delete`: soft-deleted at (until `restore`)
  // A schedule: its first occurrence not materialised yet (none: it will
  // not fire again), and where @every intervals count from.
  std::optional<int64_t> next_fire_at;
  int64_t schedule_anchor = 0;
  int64_t fired = 0;  // occurrences the leader has made, held to max_runs
  // "job"; "node": a DAG's node (dag_id its DAG); "dag": the schedule that
  // starts a DAG's runs (its occurrences become DAG runs, not runs);
  // "notification": a --notify delivery of another job's run.
  std::string kind = "job";
  std::string dag_id;
  // What of its stored row could not be read (a value edited by hand or
  // written by a broken tool), those fields left at their defaults; empty
  // when the row is sound. Such a job is listed, and its runs go dead.
  std::string damaged;
};

struct Run {
  std::string id;  // ULID
  std::string job_id;
  std::string queue;  // where it waits or ran: its job's queue when made (update moves one not ended)
  RunStatus status = RunStatus::pending;
  int64_t created_at = 0;
  int64_t available_at = 0;
  std::optional<int64_t> started_at;   // first claim
  std::optional<int64_t> finished_at;
  std::string lease_owner;             // worker id while running
  std::optional<int64_t> lease_expires_at;
  int64_t fence = 0;                   // bumped at every claim
  int deliveries = 0;                  // claims that did not end in a release
  int attempts = 0;                    // attempts started so far (one per claim)
  int failures = 0;                    // attempts that reported a failure
  std::optional<int64_t> occurrence;   // a schedule's run: the fire time it is for
  std::string pinned_to;               // a fan-out run (--on-each): the agent (by name) it is for
  std::string dag_run_id;              // a DAG node's run: its DAG run and node name
  std::string dag_node;
  int waiting_on = 0;                  // blocked: the parents that have not succeeded yet
  // jobctl progress, from inside the job: of the current attempt (a claim
  // clears it), and the checkpoint the next attempt receives.
  std::optional<double> progress;      // 0..1
  std::string progress_message;
  std::optional<int64_t> progress_at;
  std::optional<std::string> checkpoint;  // JSON text
  // The job's version the run belongs to: the one it was made under, moved
  // forward by `jobctl update` while the run waits. What each attempt ran
  // is Attempt::job_version.
  int job_version = 1;
  std::string replay_of;               // the dead run this run replays, if any
  std::optional<int64_t> replayed_at;  // a dead run: when it was replayed
  std::optional<int64_t> dismissed_at;  // a dead run: when `jobctl dlq dismiss` took it out of the queue
  bool cancel_requested = false;
  std::optional<int> exit_code;        // of the last attempt
  std::string error;                   // of the last attempt
};

// How an attempt stopped by its --timeout begins its error: "timed out after 5m".
inline constexpr std::string_view kTimedOutAfter = "timed out after ";

struct Attempt {
  std::string run_id;
  int number = 0;                      // 1-based
  std::string worker_id;
  std::string worker_name;
  int64_t started_at = 0;
  std::optional<int64_t> finished_at;
  std::string outcome;                 // running, succeeded, failed, cancelled, released, lost
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string error;
  std::string stdout_tail;             // bytes, not necessarily UTF-8
  std::string stderr_tail;
  // All the attempt wrote to each stream so far (the tails are its last
  // 64 KiB); unknown for attempts recorded before jobctl counted it.
  std::optional<int64_t> stdout_bytes;
  std::optional<int64_t> stderr_bytes;
  int job_version = 1;                 // the job's version this attempt ran
  std::optional<int> http_status;      // a webhook's response status
  std::optional<HttpTimings> timings;  // a webhook's phases
};

enum class WorkerState { active, draining, gone };
std::string_view to_string(WorkerState s);

struct Worker {
  std::string id;
  std::string name;
  std::string host;
  int pid = 0;
  std::vector<std::string> queues;
  int capacity = 0;
  std::string version;
  int64_t started_at = 0;
  int64_t heartbeat_at = 0;
  WorkerState state = WorkerState::active;
  int running = 0;  // runs it holds a lease on (filled by list queries)
  bool leader = false;  // it holds the scheduler lease
  Labels labels;        // --label, and host=<host>
};

// One entry of a job's audit trail (`jobctl history`): a change a user
// made, recorded in the transaction that made it.
struct JobEvent {
  std::string id;       // ULID: events sort by it
  std::string job_id;
  int64_t at = 0;       // store clock
  std::string action;   // create, update, pause, resume, cancel, retry, replay, dismiss, purge, trigger, backfill, delete, restore
  std::string actor;    // who: --actor / JOBCTL_ACTOR, else user@host of the jobctl that made it
  int version = 1;      // the job's version after the change
  std::string details;  // JSON object: for update, {"field": {"from": …, "to": …}}; else what the action touched
};

// A job together with its latest run, as `get` and `ls` show it.
struct JobView {
  Job job;
  std::optional<Run> latest_run;
};

}  // namespace jobctl::model
