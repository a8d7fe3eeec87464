// Store: the jobagent side — workers, claim, heartbeat, complete, release,
// rescue.
//
// The lease protocol. A claim sets status=running, a lease_owner, a
// lease_expires_at on the database clock, and bumps the run's fence. The
// owner's heartbeat extends every lease it holds in one statement. Every
// later write by the owner (complete, release) carries the fence it was
// handed and matches `WHERE id = ? AND fence = ? AND status = 'running'`,
// so an agent that lost its lease (paused, partitioned, presumed dead and
// rescued) cannot overwrite the run's new owner. Rescue turns expired
// leases back into pending runs and closes their attempt as `lost`; so does
// a restarted agent for the runs of its dead earlier incarnation.
//
// A run of a deleted job is never pending: nothing would claim it. Each
// path that would make one pending again (a retry, a release, a rescue)
// cancels it instead, as delete_job cancels the waiting ones. On
// PostgreSQL such a path reads the job's row FOR SHARE before it changes
// the run, in the order delete_job locks them, so a concurrent delete
// either sees the run pending (and cancels it) or is seen.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "common/model/job_json.hpp"
#include "common/store/admin.hpp"
#include "common/store/agent.hpp"
#include "common/store/cancel_requests.hpp"
#include "common/store/dag_progress.hpp"
#include "common/store/encodings.hpp"
#include "common/store/internal.hpp"
#include "common/store/jobs.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

// What every end of an attempt writes on its run: no lease, and none of
// the output shipped while it ran (the attempt's row has the final tails).
constexpr const char* kLeaseEnded =
    "lease_owner = NULL, lease_expires_at = NULL, live_stdout_tail = NULL, live_stderr_tail = NULL, "
    "live_stdout_bytes = NULL, live_stderr_bytes = NULL";
// The attempt a run carries until it ends (claim.cpp, opened_attempt), as
// its end returns it for the attempt's row: its number, worker, start and
// job version. A run an agent older than migration 15 claimed has none of
// them, and still gets a row.
constexpr const char* kAttemptOpened =
    "attempts AS attempt, COALESCE(attempt_worker, '') AS attempt_worker, "
    "COALESCE(attempt_started_at, NOW_US) AS attempt_started_at, "
    "COALESCE(attempt_job_version, job_version) AS attempt_job_version";

// PostgreSQL: a batch of completions in one statement. Fenced like
// finish_run_sql(); returns the runs it finished. A cancelled run's error is
// the reason its cancel was asked for (cancel_requests.hpp): CANCEL_ERROR.
constexpr const char* kCompletePostgresTemplate = R"SQL(
WITH input AS (
  -- The arrays side by side in the select list, zipped as they are read
  -- (PostgresConnection::batch says why not unnest(a, b, …) in FROM).
  SELECT unnest($1::text[]) AS run_id, unnest($2::int8[]) AS fence, unnest($3::text[]) AS status,
         unnest($4::int[]) AS exit_code, unnest($5::int[]) AS signal, unnest($6::text[]) AS error,
         unnest($7::bytea[]) AS out_tail, unnest($8::bytea[]) AS err_tail, unnest($9::text[]) AS outcome,
         unnest($10::int8[]) AS delay, unnest($11::int[]) AS http_status, unnest($12::text[]) AS timings,
         unnest($13::int8[]) AS out_bytes, unnest($14::int8[]) AS err_bytes,
         unnest($15::int8[]) AS ended
), done AS (
  -- A retry of a deleted job's run is cancelled instead (the job read FOR SHARE, before the run).
  SELECT d.*, CASE WHEN d.status = 'pending' THEN COALESCE((SELECT j.deleted_at IS NOT NULL FROM runs x
         JOIN jobs j ON j.id = x.job_id WHERE x.id = d.run_id FOR SHARE OF j), false) ELSE false END AS deleted
  FROM input d
), finished AS (
  -- Each run looked up by its key. The status test is written on COALESCE
  -- (status is NOT NULL, so it means the same) so that no partial index
  -- on running runs is taken for it: under the statistics of a large
  -- history PostgreSQL estimated one running run, read every running run
  -- from such an index and rescanned the whole batch for each (running
  -- runs times the batch: 1 ms of the 2 a batch of 64 took).
  -- A retry of a run asked to stop is cancelled too (RECORDED_STATUS).
  UPDATE runs r SET status = CASE WHEN d.deleted THEN 'cancelled' ELSE RECORDED_STATUS END,
         finished_at = CASE WHEN RECORDED_STATUS = 'pending' AND NOT d.deleted THEN NULL ELSE ENDED_AT END,
         available_at = CASE WHEN RECORDED_STATUS = 'pending' AND NOT d.deleted
                        THEN GREATEST(ENDED_AT + d.delay, NOW_US) ELSE r.available_at END,
         failures = r.failures + CASE WHEN d.outcome = 'failed' THEN 1 ELSE 0 END,
         LEASE_ENDED, exit_code = d.exit_code,
         error = CASE WHEN d.deleted THEN 'cancelled: the job was deleted' ELSE CANCEL_ERROR END
  FROM done d WHERE r.id = d.run_id AND r.fence = d.fence AND COALESCE(r.status, '') = 'running'
  RETURNING r.id, r.queue, r.group_key, r.error, ATTEMPT_OPENED, d.status, d.outcome, d.exit_code, d.signal,
            d.error AS given_error, d.out_tail, d.err_tail, d.http_status, d.timings, d.out_bytes, d.err_bytes,
            d.ended, r.status AS recorded
), closed AS (
  -- Each finished run's attempt, written whole now that it has ended.
  INSERT INTO attempts (run_id, attempt, worker_id, started_at, finished_at, outcome, exit_code, signal, error,
                        stdout_tail, stderr_tail, job_version, http_status, timings, stdout_bytes, stderr_bytes)
  SELECT f.id, f.attempt, f.attempt_worker, f.attempt_started_at,
         GREATEST(LEAST(COALESCE(f.ended, NOW_US), NOW_US), f.attempt_started_at), f.outcome, f.exit_code, f.signal,
         CASE WHEN f.status = 'cancelled' THEN f.error ELSE f.given_error END, f.out_tail, f.err_tail,
         f.attempt_job_version, f.http_status, f.timings, f.out_bytes, f.err_bytes
  FROM finished f
)
-- A run that held a place under a limit frees it: its queue is woken.
SELECT f.id, f.queue, f.group_key IS NOT NULL OR EXISTS (SELECT 1 FROM queues x WHERE x.name = f.queue
       AND (x.max_concurrent > 0 OR x.tenant_max_concurrent > 0)), f.recorded, f.error
FROM finished f
)SQL";

const std::string& complete_postgres_sql() {
  static const std::string sql = [] {
    std::string s = kCompletePostgresTemplate;
    const std::string recorded = recorded_status_sql("d.status", "r.cancel_requested");
    s.replace(s.find("CANCEL_ERROR"), std::string_view("CANCEL_ERROR").size(),
              cancelled_error_sql(recorded, "r.cancel_requested", "d.error"));
    for (size_t at = s.find("RECORDED_STATUS"); at != std::string::npos; at = s.find("RECORDED_STATUS", at))
      s.replace(at, std::string_view("RECORDED_STATUS").size(), recorded);
    // When the attempt ended: as its agent says, between its start and now.
    const std::string ended = "GREATEST(LEAST(COALESCE(d.ended, NOW_US), NOW_US), COALESCE(r.attempt_started_at, NOW_US))";
    for (size_t at = s.find("ENDED_AT"); at != std::string::npos; at = s.find("ENDED_AT", at))
      s.replace(at, std::string_view("ENDED_AT").size(), ended);
    s.replace(s.find("LEASE_ENDED"), std::string_view("LEASE_ENDED").size(), kLeaseEnded);
    s.replace(s.find("ATTEMPT_OPENED"), std::string_view("ATTEMPT_OPENED").size(), kAttemptOpened);
    return s;
  }();
  return sql;
}

// One completion, fenced; returns the error recorded (see
// cancel_requests.hpp), which a cancelled attempt gets too, then when the
// attempt ended: $8 (Completion::ended_at_us), or now, between its start
// and now.
// Returns after them the status recorded (a retry of a run asked to stop
// is cancelled).
const std::string& finish_run_sql() {
  static const std::string sql = [] {
    const std::string status = recorded_status_sql("$3", "cancel_requested");
    const std::string ended =
        "CASE WHEN COALESCE($8, NOW_US) > NOW_US THEN NOW_US WHEN COALESCE($8, NOW_US) < "
        "COALESCE(attempt_started_at, NOW_US) THEN COALESCE(attempt_started_at, NOW_US) ELSE COALESCE($8, NOW_US) END";
    return fmt::format(
        "UPDATE runs SET status = {0}, finished_at = CASE WHEN {0} = 'pending' THEN NULL ELSE {4} END, "
        "available_at = CASE WHEN {0} = 'pending' THEN CASE WHEN {4} + $6 > NOW_US THEN {4} + $6 ELSE NOW_US END "
        "ELSE available_at END, failures = failures + $7, "
        "{1}, exit_code = $4, error = {2} WHERE id = $1 AND fence = $2 AND status = 'running' "
        "RETURNING error, {4}, {3}, status",
        status, kLeaseEnded, cancelled_error_sql(status, "cancel_requested", "$5"), kAttemptOpened, ended);
  }();
  return sql;
}
// $3: 'pending', or 'cancelled' for a deleted job's run; a run asked to
// stop is not given back but cancelled, with the reason it was asked for
// ($4: a deleted job's). Returns after them the status recorded.
// A run given back keeps its due time, and so its place in the claim's
// order, as a rescued one does (lose_runs): made due now, a schedule's
// occurrence given back started after the newer ones due meanwhile.
const std::string& release_run_sql() {
  static const std::string sql = [] {
    const std::string status = recorded_status_sql("$3", "cancel_requested");
    return fmt::format(
        "UPDATE runs SET status = {0}, {1}, deliveries = deliveries - 1, "
        "finished_at = CASE WHEN {0} = 'cancelled' THEN NOW_US END, "
        "error = CASE WHEN {0} = 'cancelled' THEN {2} ELSE error END "
        "WHERE id = $1 AND fence = $2 AND status = 'running' RETURNING queue, NOW_US, {3}, status, error",
        status, kLeaseEnded, cancelled_error_sql(status, "cancel_requested", "$4"), kAttemptOpened);
  }();
  return sql;
}
constexpr const char* kDeletedError = "cancelled: the job was deleted";
// An ended attempt's row: $2-$5 its number, worker, start and job version
// (kAttemptOpened, as its run's statement returned them), $6 when it ended,
// as that statement said (a retry's due time is counted from it).
constexpr const char* kCloseAttempt =
    "INSERT INTO attempts (run_id, attempt, worker_id, started_at, job_version, finished_at, outcome, exit_code, "
    "signal, error, stdout_tail, stderr_tail, http_status, timings, stdout_bytes, stderr_bytes) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

// Whether the run's job is deleted; on PostgreSQL the job's row is read
// FOR SHARE (see the top of this file).
bool job_deleted(Connection& c, const std::string& run_id) {
  auto rows = c.query(std::string("SELECT j.deleted_at FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.id = $1") +
                          c.row_lock("FOR SHARE OF j"),
                      {run_id});
  return !rows.empty() && !rows[0].is_null(0);
}

Value opt_int(const std::optional<int>& v) {
  if (!v) return nullptr;
  return int64_t{*v};
}

// `ended`: the row its run's statement returned, from column 1 when it
// ended (the clock as the statement read it, or earlier: finish_run_sql)
// and kAttemptOpened.
void close_attempt(Connection& c, const Completion& d, model::AttemptOutcome outcome, const std::string& error,
                   const Row& ended) {
  c.exec(kCloseAttempt, {d.run_id, ended.i64(2), ended.text(3), ended.i64(4), ended.i64(5), ended.i64(1),
                         std::string(model::to_string(outcome)), opt_int(d.exit_code), opt_int(d.signal), error,
                         Blob{d.stdout_tail}, Blob{d.stderr_tail}, opt_int(d.http_status),
                         d.timings ? Value(timings_to_text(*d.timings)) : Value(nullptr), d.stdout_bytes,
                         d.stderr_bytes});
}

std::optional<std::string> opt_text(const std::optional<int>& v) {
  if (!v) return std::nullopt;
  return std::to_string(*v);
}

std::string bytea_text(const std::string& bytes) { return "\\x" + util::hex(bytes); }

// What the store recorded of an end of an attempt that applied: the run's
// status and error, which differ from what its agent reported when a retry
// or a release of a run asked to stop is cancelled instead.
struct Recorded {
  model::RunStatus status;
  std::string error;
};
using RecordedEnds = std::vector<std::optional<Recorded>>;

// One completion, in the caller's transaction: the run fenced, its attempt
// closed. Nothing when the fence no longer holds.
std::optional<Recorded> finish_one(Connection& c, const Completion& d) {
  std::string status(model::to_string(d.status)), error = d.error;
  if (d.status == model::RunStatus::pending && job_deleted(c, d.run_id)) {
    status = "cancelled";
    error = kDeletedError;
  }
  auto finished = c.query(finish_run_sql(), {d.run_id, d.fence, status, opt_int(d.exit_code), error, d.retry_delay_us,
                                             int64_t{d.outcome == model::AttemptOutcome::failed ? 1 : 0},
                                             d.ended_at_us ? Value(*d.ended_at_us) : Value(nullptr)});
  if (finished.empty()) return std::nullopt;
  // A cancelled attempt says why it was stopped; any other keeps its own
  // error. It ends at the time its run's retry delay counts from.
  close_attempt(c, d, d.outcome, d.status == model::RunStatus::cancelled ? finished[0].text(0) : d.error,
                finished[0]);
  return Recorded{model::parse_run_status(finished[0].text(6)), finished[0].text(0)};
}

RecordedEnds complete_postgres(Connection& c, const std::vector<Completion>& done) {
  std::vector<std::vector<std::optional<std::string>>> cols(15);
  for (const auto& d : done) {
    cols[0].push_back(d.run_id);
    cols[1].push_back(std::to_string(d.fence));
    cols[2].push_back(std::string(model::to_string(d.status)));
    cols[3].push_back(opt_text(d.exit_code));
    cols[4].push_back(opt_text(d.signal));
    cols[5].push_back(d.error);
    cols[6].push_back(bytea_text(d.stdout_tail));
    cols[7].push_back(bytea_text(d.stderr_tail));
    cols[8].push_back(std::string(model::to_string(d.outcome)));
    cols[9].push_back(std::to_string(d.retry_delay_us));
    cols[10].push_back(opt_text(d.http_status));
    cols[11].push_back(d.timings ? std::optional<std::string>(timings_to_text(*d.timings)) : std::nullopt);
    cols[12].push_back(std::to_string(d.stdout_bytes));
    cols[13].push_back(std::to_string(d.stderr_bytes));
    cols[14].push_back(d.ended_at_us ? std::optional<std::string>(std::to_string(*d.ended_at_us)) : std::nullopt);
  }
  Params params;
  for (const auto& col : cols) params.emplace_back(pg_array(col));
  std::map<std::string, Recorded> finished;
  std::set<std::string> wake;
  for (const auto& row : c.query(complete_postgres_sql(), params)) {
    finished.emplace(row.text(0), Recorded{model::parse_run_status(row.text(3)), row.text(4)});
    if (row.text(2) == "t") wake.insert(row.text(1));
  }
  for (const auto& q : wake) wake_queue(c, q);
  RecordedEnds recorded;
  for (const auto& d : done) {
    auto it = finished.find(d.run_id);
    recorded.push_back(it == finished.end() ? std::nullopt : std::optional<Recorded>(it->second));
  }
  return recorded;
}

std::vector<bool> applied_of(const RecordedEnds& recorded) {
  std::vector<bool> applied;
  for (const auto& r : recorded) applied.push_back(r.has_value());
  return applied;
}

// --notify's notifications of a run the store ended otherwise than its
// agent said (a retry cancelled, a lost attempt): the job is read only
// when it may ask for them.
std::vector<model::JobSpec> store_notifications(Connection& c, const model::NotificationFacts& facts,
                                                bool attempt_failed) {
  auto job = c.query(select_job_by_id(), {facts.job_id});
  if (job.empty()) return {};
  return model::notification_jobs(job_from_row(job[0]).spec, facts, attempt_failed);
}

// What follows an end the store recorded, in its transaction: a DAG node's
// DAG run moves on, and --notify hears of it. Where the store recorded
// what the agent reported, the agent's notifications are sent; where it
// recorded a cancel instead, the cancel's.
void after_end(Connection& c, const Completion& d, const Recorded& r, std::vector<model::JobSpec>& notifications) {
  advance_dag(c, d.dag_run_id, d.job_id, r.status);
  if (r.status == d.status) {
    notifications.insert(notifications.end(), d.notifications.begin(), d.notifications.end());
    return;
  }
  model::NotificationFacts facts{d.job_id, d.run_id, r.status, d.attempt, r.error, std::nullopt, d.exit_code,
                                 d.http_status, 0};
  auto more = store_notifications(c, facts, d.outcome == model::AttemptOutcome::failed);
  notifications.insert(notifications.end(), more.begin(), more.end());
}

}  // namespace

std::string Agent::register_worker(const WorkerRegistration& w) {
  std::string id = util::new_ulid();
  std::string queues;
  for (const auto& q : w.queues) queues += (queues.empty() ? "" : ",") + q;
  conn_->exec(
      "INSERT INTO workers (id, name, host, pid, queues, capacity, version, lease_us, labels, started_at, "
      "heartbeat_at, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NOW_US, NOW_US, 'active')",
      {id, w.name, w.host, int64_t{w.pid}, queues, int64_t{w.capacity}, w.version, w.lease_us,
       labels_to_text(w.labels)});
  return id;
}

void Agent::set_worker_state(const std::string& worker_id, model::WorkerState state) {
  conn_->exec("UPDATE workers SET state = $2, heartbeat_at = NOW_US WHERE id = $1",
              {worker_id, std::string(model::to_string(state))});
}

std::vector<model::Worker> Admin::list_workers() {
  auto rows = conn_->query(
      // An agent that stopped heartbeating is gone, whether or not a live
      // agent has marked it so yet (rescue does, and takes its runs).
      "SELECT w.id, w.name, w.host, w.pid, w.queues, w.capacity, w.version, w.started_at, w.heartbeat_at, "
      "CASE WHEN w.heartbeat_at + w.lease_us < NOW_US THEN 'gone' ELSE w.state END, "
      "(SELECT count(*) FROM runs r WHERE r.lease_owner = w.id AND r.status = 'running'), "
      "(SELECT count(*) FROM scheduler_lease l WHERE l.holder = w.id AND l.expires_at > NOW_US), w.labels "
      "FROM workers w ORDER BY CASE WHEN w.state = 'gone' OR w.heartbeat_at + w.lease_us < NOW_US THEN 1 ELSE 0 END, "
      "w.heartbeat_at DESC");
  std::vector<model::Worker> out;
  for (const auto& row : rows) {
    model::Worker w;
    w.id = row.text(0);
    w.name = row.text(1);
    w.host = row.text(2);
    w.pid = static_cast<int>(row.i64(3));
    w.queues = util::split(row.text(4), ',');
    w.capacity = static_cast<int>(row.i64(5));
    w.version = row.text(6);
    w.started_at = row.i64(7);
    w.heartbeat_at = row.i64(8);
    const auto& st = row.text(9);
    w.state = st == "draining" ? model::WorkerState::draining
              : st == "gone"   ? model::WorkerState::gone
                               : model::WorkerState::active;
    w.running = static_cast<int>(row.i64(10));
    w.leader = row.i64(11) > 0;
    w.labels = labels_from_text(row.text(12));
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<LeaseState> Agent::heartbeat(const std::string& worker_id, model::WorkerState state, int64_t lease_us) {
  Transaction tx(*conn_, TxMode::write);
  conn_->exec("UPDATE workers SET heartbeat_at = NOW_US, state = $2 WHERE id = $1",
              {worker_id, std::string(model::to_string(state))});
  auto rows = conn_->query(
      "UPDATE runs SET lease_expires_at = NOW_US + $2 WHERE lease_owner = $1 AND status = 'running' "
      "RETURNING id, job_id, fence, attempts, cancel_requested",
      {worker_id, lease_us});
  tx.commit();
  std::vector<LeaseState> out;
  for (const auto& row : rows)
    out.push_back({row.text(0), row.text(1), row.i64(2), static_cast<int>(row.i64(3)), row.i64(4) != 0});
  return out;
}

void Agent::record_clock_step(const std::string& worker_id, int64_t step_us) {
  conn_->exec("UPDATE workers SET clock_step_us = $2, clock_step_at = NOW_US WHERE id = $1", {worker_id, step_us});
}

void Agent::ship_output(const std::string& worker_id, const std::vector<LiveOutput>& output) {
  if (output.empty()) return;
  Transaction tx(*conn_, TxMode::write);
  for (const auto& o : output)
    conn_->exec("UPDATE runs SET live_stdout_tail = $3, live_stderr_tail = $4, live_stdout_bytes = $5, "
                "live_stderr_bytes = $6 WHERE id = $1 AND attempts = $2 AND lease_owner = $7 AND status = 'running'",
                {o.run_id, int64_t{o.attempt}, Blob{o.stdout_tail}, Blob{o.stderr_tail}, o.stdout_bytes,
                 o.stderr_bytes, worker_id});
  tx.commit();
}

std::vector<bool> Agent::complete(const std::vector<Completion>& done) {
  if (done.empty()) return {};
  // A retry may be recorded as a cancel (recorded_status_sql), and what
  // follows a cancel is written with it.
  const bool more = std::any_of(done.begin(), done.end(), [](const Completion& d) {
    return !d.dag_run_id.empty() || !d.notifications.empty() || d.status == model::RunStatus::pending;
  });
  // PostgreSQL records a batch in one statement, alone when nothing more
  // may follow; a DAG node's end moves its DAG run on, and a notification
  // is written, in the same transaction.
  if (conn_->dialect() == Dialect::postgres && !more) return applied_of(complete_postgres(*conn_, done));
  Transaction tx(*conn_, TxMode::write);
  RecordedEnds recorded;
  if (conn_->dialect() == Dialect::postgres) {
    recorded = complete_postgres(*conn_, done);
  } else {
    for (const auto& d : done) recorded.push_back(finish_one(*conn_, d));
  }
  std::vector<model::JobSpec> notifications;
  for (size_t i = 0; i < done.size(); ++i)
    if (recorded[i]) after_end(*conn_, done[i], *recorded[i], notifications);
  write_notifications(*conn_, actor_, std::move(notifications));
  tx.commit();
  return applied_of(recorded);
}

void Jobs::report_progress(const std::string& run_id, int64_t fence, double progress, const std::string& message,
                            const std::optional<std::string>& checkpoint) {
  int64_t n = conn_->exec(
      "UPDATE runs SET progress = $3, progress_message = $4, progress_at = NOW_US, "
      "checkpoint = COALESCE($5, checkpoint) WHERE id = $1 AND fence = $2 AND status = 'running'",
      {run_id, fence, fmt::format("{:.6f}", progress), message, checkpoint ? Value(*checkpoint) : Value(nullptr)});
  if (n == 1) return;
  auto run = get_run(run_id);
  if (!run) throw Error(ExitCode::not_found, fmt::format("no run with id '{}'", run_id));
  throw Error(ExitCode::invalid_state,
              run->status != model::RunStatus::running
                  ? fmt::format("run {} is {}, not running: its progress is not recorded", run_id,
                                model::to_string(run->status))
                  : fmt::format("stale fence {}: run {} is now attempt {} (fence {}); this attempt no longer owns it",
                                fence, run_id, run->attempts, run->fence),
              "jobctl progress runs inside the job's own attempt (JOB_RUN_ID, JOB_FENCE_TOKEN)");
}

void write_notifications(Connection& c, const std::string& actor, const std::vector<model::JobSpec>& specs) {
  if (specs.empty()) return;
  write_jobs(c, actor, specs, FirstRun::yes, JobOrigin{"notification", ""});
}

void Agent::release(const std::vector<Completion>& runs) {
  if (runs.empty()) return;
  Transaction tx(*conn_, TxMode::write);
  std::vector<model::JobSpec> notifications;
  for (const auto& d : runs) {
    const bool deleted = job_deleted(*conn_, d.run_id);
    auto rows = conn_->query(release_run_sql(), {d.run_id, d.fence, deleted ? "cancelled" : "pending", kDeletedError});
    if (rows.empty()) continue;
    close_attempt(*conn_, d, model::AttemptOutcome::released, d.error, rows[0]);
    const Recorded r{model::parse_run_status(rows[0].text(6)), rows[0].text(7)};
    if (r.status == model::RunStatus::pending) {
      wake_queue(*conn_, rows[0].text(0));
    } else if (!deleted) {  // asked to stop: ended, as a cancel that came in time would have
      Completion given_back = d;
      given_back.status = model::RunStatus::pending;
      after_end(*conn_, given_back, r, notifications);
    }
  }
  write_notifications(*conn_, actor_, std::move(notifications));
  tx.commit();
}

int Agent::rescue_expired(int64_t calm_us, int64_t clock_from_us, int64_t clock_to_us) {
  const Params params{calm_us, clock_from_us, clock_to_us};
  const char* clock_as_expected = "NOW_US BETWEEN $2 AND $3";
  const std::string stale_workers = fmt::format(
      "state <> 'gone' AND heartbeat_at + lease_us < NOW_US AND lease_us <= $1 AND {}", clock_as_expected);
  // Cheap read first: almost always nothing expired, and then no write
  // lock is taken at all.
  bool anything = conn_->query(fmt::format("SELECT CASE WHEN EXISTS (SELECT 1 FROM runs WHERE status = 'running' "
                                           "AND lease_expires_at < NOW_US AND {}) OR EXISTS (SELECT 1 FROM workers "
                                           "WHERE {}) THEN 1 ELSE 0 END",
                                           clock_as_expected, stale_workers),
                               params)
                      .at(0)
                      .i64(0) == 1;
  if (!anything) return 0;

  Transaction tx(*conn_, TxMode::write);
  int n = lose_runs(*conn_, actor_, fmt::format("r.status = 'running' AND r.lease_expires_at < NOW_US AND COALESCE(w.lease_us, 0) "
                                "<= $1 AND {}",
                                clock_as_expected),
                    params, [](const std::string& worker) {
                      return fmt::format("lease expired: worker {} stopped heartbeating", worker);
                    });
  conn_->exec(fmt::format("UPDATE workers SET state = 'gone' WHERE {}", stale_workers), params);
  tx.commit();
  return n;
}

std::vector<Incarnation> Agent::incarnations(const std::string& name, const std::string& host) {
  std::vector<Incarnation> out;
  for (const auto& row : conn_->query("SELECT id, pid, state FROM workers WHERE name = $1 AND host = $2 "
                                      "ORDER BY started_at, id",
                                      {name, host}))
    out.push_back(Incarnation{row.text(0), static_cast<int>(row.i64(1)), row.text(2) == "gone"});
  return out;
}

int Agent::give_back_runs(const std::string& worker_id, const std::string& why) {
  Transaction tx(*conn_, TxMode::write);
  int n = lose_runs(*conn_, actor_, "r.status = 'running' AND r.lease_owner = $1", {worker_id},
                    [&](const std::string&) { return why; });
  conn_->exec("UPDATE workers SET state = 'gone' WHERE id = $1", {worker_id});
  tx.commit();
  return n;
}

void end_damaged_run(Connection& c, const ClaimedRun& run, const std::string& damage) {
  Completion d = completion_of(run, model::RunStatus::dead);
  d.error = "the job's stored row is damaged, so it cannot run: " + damage +
            " (fix the row, or resubmit the job and delete this one)";
  if (auto r = finish_one(c, d)) advance_dag(c, d.dag_run_id, d.job_id, r->status);
}

int lose_runs(Connection& c, const std::string& actor, const std::string& where, const Params& params,
                     const std::function<std::string(const std::string&)>& why_for) {
  // PostgreSQL: runs another rescuer holds are left to it, and so are the
  // runs of a job someone is changing (a delete among them): next time.
  std::string lock = c.row_lock("FOR UPDATE OF r SKIP LOCKED FOR SHARE OF j SKIP LOCKED");
  auto lost = c.query(
      "SELECT r.id, r.attempts, r.queue, COALESCE(w.name, r.lease_owner), r.deliveries - r.failures, "
      "j.max_deliveries, j.delivery, r.dag_run_id, r.job_id, CASE WHEN j.notify IS NULL THEN 0 ELSE 1 END, "
      "CASE WHEN j.deleted_at IS NULL THEN 0 ELSE 1 END, r.cancel_requested FROM runs r JOIN jobs j ON j.id = r.job_id "
      "LEFT JOIN workers w ON w.id = r.lease_owner WHERE " + where + lock,
      params);
  for (const auto& row : lost) {
    std::string why = why_for(row.text(3));
    // A lost attempt is run again at once, unless the job may not run
    // twice, or it has now been delivered too often without any result,
    // or the job was deleted meanwhile, or it was asked to stop. The run
    // keeps its due time, and so its place in the claim's order: made due
    // now, a schedule's occurrence started after the newer ones.
    std::string status = "pending", run_error = why;
    if (row.i64(10) == 1) {
      status = "cancelled";
      run_error = kDeletedError;
    } else if (row.i64(11) != 0) {
      status = "cancelled";
      run_error = cancelled_error(row.i64(11)) + " (its agent was lost before it stopped)";
    } else if (row.text(6) == "at-most-once") {
      status = "dead";
      run_error = "at-most-once: its agent was lost during the attempt, so it is not run again";
    } else if (row.i64(4) >= row.i64(5)) {
      status = "dead";
      run_error = fmt::format("poison: delivered {} without a result",
                              row.i64(4) == 1 ? std::string("once") : fmt::format("{} times", row.i64(4)));
    }
    // With the output its agent shipped. The row is there already when an
    // agent older than migration 15 claimed the run (its claim opened it).
    c.exec(std::string("INSERT INTO attempts (run_id, attempt, worker_id, started_at, job_version, finished_at, outcome, "
                       "error, stdout_tail, stderr_tail, stdout_bytes, stderr_bytes) SELECT id, ") +
               kAttemptOpened +
               ", NOW_US, 'lost', $2, live_stdout_tail, live_stderr_tail, live_stdout_bytes, live_stderr_bytes "
               "FROM runs WHERE id = $1 AND status = 'running' ON CONFLICT (run_id, attempt) DO UPDATE SET "
               "finished_at = excluded.finished_at, outcome = excluded.outcome, error = excluded.error",
           {row.text(0), why});
    c.exec(std::string("UPDATE runs SET status = $2, ") + kLeaseEnded +
               ", error = $3, finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE NOW_US END "
               "WHERE id = $1",
           {row.text(0), status, run_error});
    if (status == "pending") wake_queue(c, row.text(2));
    if (status != "pending") advance_dag(c, row.text(7), row.text(8), model::parse_run_status(status));
    // A lost attempt is a failed one: --notify hears of it as the agent's
    // own failures are heard of. (The job is read only when it asks.)
    if (row.i64(9) == 0) continue;
    model::NotificationFacts facts{row.text(8), row.text(0), model::parse_run_status(status),
                                   static_cast<int>(row.i64(1)), run_error, std::nullopt, std::nullopt,
                                   std::nullopt, 0};
    write_notifications(c, actor, store_notifications(c, facts, true));
  }
  return static_cast<int>(lost.size());
}

}  // namespace jobctl::store
