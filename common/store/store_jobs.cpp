// Store: the jobctl side — submit, read, cancel.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/store/cancel_requests.hpp"
#include "common/store/dag_progress.hpp"
#include "common/store/encodings.hpp"
#include "common/store/fan_out.hpp"
#include "common/store/internal.hpp"
#include "common/store/jobs.hpp"
#include "common/store/new_runs.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

// A job's "latest" run, the one get, ls, wait, cancel and retry act on: the
// newest, leaving out a schedule's occurrences made ahead that are not due
// yet (its leader makes runs a horizon ahead, and those are not it). A
// schedule with nothing due yet has its first. `job` is the SQL naming the
// job id.
std::string latest_run_of(const std::string& job) {
  return fmt::format("COALESCE((SELECT max(x.id) FROM runs x WHERE x.job_id = {0} AND NOT (x.occurrence IS NOT NULL "
                     "AND x.status = 'pending' AND x.started_at IS NULL AND x.available_at > NOW_US)), "
                     "(SELECT min(x.id) FROM runs x WHERE x.job_id = {0}))",
                     job);
}

struct NewRow {
  const model::JobSpec* spec;
  const model::RetryPolicy* retry;  // spec's policy, resolved with its queue's defaults
  std::string job_id;
  std::string run_id;
  std::optional<int64_t> due;  // --at, unless it has passed: then now, as for no --at
  const JobOrigin* origin = nullptr;
  // A schedule: where its intervals count from, and its first fire time.
  std::optional<int64_t> schedule_anchor, next_fire_at;
};

void write_job_cells(const NewRow& r, std::span<Value> out) {
  Writes<kJobs> w{Writer::key, Writer::definition, Writer::made};
  w.set("id", r.job_id);
  write_definition(w, *r.spec, *r.retry);
  w.set("kind", r.origin->kind);
  w.set("dag_id", nullable(r.origin->dag_id));
  w.set("schedule_anchor", nullable(r.schedule_anchor));
  w.set("next_fire_at", nullable(r.next_fire_at));
  std::move(w).move_to(out);
}

// A submitted job's run, due at --at when given, else --in after now.
NewRun first_run(const NewRow& row, const std::string& run_id) {
  const model::JobSpec& s = *row.spec;
  const std::string& job_id = row.job_id;
  NewRun r;
  r.id = run_id;
  r.job_id = job_id;
  r.queue = s.queue;
  r.priority = static_cast<int>(s.priority);
  r.available_at = row.due;
  r.delay_us = s.delay_us;
  r.tenant = s.tenant;
  r.group_key = group_of(s, job_id);
  r.group_max = model::group_limit(s);
  return r;
}

// The jobs, in batches (Connection::exec_batch), and their first runs:
// sent with the transaction's next statement (its COMMIT, for a submit).
void insert_jobs_and_runs(Connection& c, const std::vector<NewRow>& rows, const std::string& actor) {
  static const auto columns = batch_columns(kJobs, {Writer::key, Writer::definition, Writer::made});
  const std::string& sql = made_once(c, [&] {
    std::string names;
    for (const auto& col : columns) names += fmt::format("{}{}", names.empty() ? "" : ", ", col.name);
    return fmt::format("INSERT INTO jobs ({0}, created_by, created_at, updated_at) SELECT {0}, $1, {2}, {2} FROM {1}",
                       names, c.batch(columns, 2, "u"), kNowOnce);
  });
  c.exec_batch(
      sql, {actor}, columns, rows.size(), [&](size_t i, std::span<Value> out) { write_job_cells(rows[i], out); },
      Connection::Send::with_next);
  std::vector<const NewRow*> first;  // a schedule's runs are made by its leader, a fan-out's by insert_fan_out
  for (const auto& r : rows)
    if (!r.run_id.empty()) first.push_back(&r);
  insert_runs(
      c, first.size(),
      [&](size_t i) {
        const NewRow& r = *first[i];
        return first_run(r, r.run_id);
      },
      Occurrences::none, Connection::Send::with_next);
}

// A fan-out job's runs: one per matching agent, each --stagger after the
// one before. Returns the first run's id; throws invalid_state (and the
// submit writes nothing) when no agent matches.
std::string insert_fan_out(Connection& c, const NewRow& row) {
  const auto& s = *row.spec;
  auto agents = fan_out_agents(c, *s.fan_out, s.queue);
  if (agents.empty())
    throw Error(ExitCode::invalid_state, no_agent_reason(*s.fan_out, s.queue),
                "`jobctl workers` lists the agents and their labels; start one with jobagent --label");
  std::vector<NewRun> runs;
  for (size_t i = 0; i < agents.size(); ++i) {
    NewRun r = first_run(row, util::new_ulid());
    const int64_t stagger = static_cast<int64_t>(i) * s.stagger_us;
    if (r.available_at) *r.available_at += stagger;
    r.delay_us += stagger;
    r.pinned_to = agents[i];
    runs.push_back(std::move(r));
  }
  insert_runs(c, runs);
  return runs.front().id;
}

// The job id and latest run id already holding each key.
std::map<std::string, SubmitResult> existing_keys(Connection& c, const std::set<std::string>& keys) {
  std::map<std::string, SubmitResult> found;
  if (keys.empty()) return found;
  std::vector<std::string> list(keys.begin(), keys.end());
  std::string sql = "SELECT j.idempotency_key, j.id, (SELECT max(r.id) FROM runs r WHERE r.job_id = j.id) FROM jobs j WHERE " +
                    c.in_list("j.idempotency_key", 1);
  for (const auto& row : c.query(sql, {c.list(list)}))
    found[row.text(0)] = SubmitResult{row.text(1), row.text(2), true};
  return found;
}

// Jobs with their latest run: the FROM clause of get_jobs and list_jobs.
// See latest_run_of.
const std::string kJobsWithLatestRun =
    std::string("FROM jobs j LEFT JOIN runs r ON r.id = ") + latest_run_of("j.id");

model::JobView view_from_row(const Row& row) {
  model::JobView v{job_from_row(row), std::nullopt};
  if (!row.is_null(kJobs.size())) v.latest_run = run_from_row(row, kJobs.size());
  return v;
}

}  // namespace

std::vector<SubmitResult> Jobs::submit(const std::vector<model::JobSpec>& specs) {
  OnePart part(specs);
  return submit(part);
}

std::vector<SubmitResult> Jobs::submit(JobParts& parts) {
  // A concurrent submit with the same idempotency key can win the race
  // between our lookup and our insert; the retry then finds its job.
  for (int tries = 0;; ++tries) {
    try {
      Transaction tx(*conn_, TxMode::write);
      JobWriter writer(*conn_, FirstRun::yes);
      std::vector<SubmitResult> results;
      for (auto part = parts.next(); !part.empty(); part = parts.next()) {
        auto written = writer.write(actor_, part);
        results.insert(results.end(), written.begin(), written.end());
      }
      writer.finish();
      tx.commit();
      return results;
    } catch (const UniqueViolation& e) {
      if (tries == 2) throw Error(ExitCode::internal, fmt::format("submit kept conflicting: {}", e.what()));
      parts.rewind();
    }
  }
}

std::vector<Submitted> Jobs::submit_together(const std::vector<Submission>& group) {
  for (int tries = 0;; ++tries) {
    try {
      // One part per actor, of all its submissions' jobs: a few statements
      // for the group, not a few per submission, and each queue's defaults
      // read, and each queue woken, once for all.
      std::map<std::string, std::vector<size_t>> by_actor;
      for (size_t i = 0; i < group.size(); ++i) by_actor[group[i].actor].push_back(i);
      std::vector<Submitted> out(group.size());
      std::vector<SubmitResult> all;
      std::vector<const model::JobSpec*> all_specs;
      Transaction tx(*conn_, TxMode::write);
      // A server's group commits run the same statements again and again:
      // planned at each use, the read-back alone cost 0.9 ms of server
      // CPU a group (pg_stat_statements: 1,065 ms of planning for 1,142
      // groups, more than its execution and the jobs' insert).
      conn_->plan_once("runs");
      JobWriter writer(*conn_, FirstRun::yes);
      for (const auto& [actor, members] : by_actor) {
        std::vector<model::JobSpec> specs;
        for (size_t i : members) specs.insert(specs.end(), group[i].specs.begin(), group[i].specs.end());
        auto results = writer.write(actor, specs);
        all.insert(all.end(), results.begin(), results.end());
        for (size_t i : members)
          for (const auto& spec : group[i].specs) all_specs.push_back(&spec);
        auto next = results.begin();
        for (size_t i : members) {
          out[i].results.assign(next, next + static_cast<std::ptrdiff_t>(group[i].specs.size()));
          next += static_cast<std::ptrdiff_t>(group[i].specs.size());
        }
      }
      writer.finish();
      Rows made;
      auto views = submitted_views(all, all_specs, made);
      tx.commit();
      for (const auto& row : made) {
        auto v = view_from_row(row);
        views.emplace(v.job.id, std::move(v));
      }
      for (auto& s : out)
        for (const auto& r : s.results)
          if (auto it = views.find(r.job_id); it != views.end()) s.views.push_back(it->second);
      return out;
    } catch (const UniqueViolation& e) {  // as in submit
      if (tries == 2) throw Error(ExitCode::internal, fmt::format("submit kept conflicting: {}", e.what()));
    }
  }
}

std::vector<std::string> insert_node_jobs(Connection& c, const std::string& actor,
                                          const std::vector<model::JobSpec>& specs, const JobOrigin& origin) {
  std::vector<std::string> ids;
  for (const auto& r : write_jobs(c, actor, specs, FirstRun::no, origin)) ids.push_back(r.job_id);
  return ids;
}

std::vector<SubmitResult> write_jobs(Connection& c, const std::string& actor, const std::vector<model::JobSpec>& specs,
                                     FirstRun first_run, const JobOrigin& origin) {
  JobWriter writer(c, first_run, origin);
  auto results = writer.write(actor, specs);
  writer.finish();
  return results;
}

// Each spec's retry policy: built-in defaults, its queue's, then its own.
// A queue's defaults are read once, when a part first names it.
std::vector<model::RetryPolicy> JobWriter::retry_policies(std::span<const model::JobSpec> specs) {
  std::set<std::string> unread;
  for (const auto& s : specs)
    if (!defaults_.contains(s.queue)) unread.insert(s.queue);
  if (!unread.empty()) {
    defaults_.merge(queue_defaults(c_, unread));
    for (const auto& q : unread) defaults_.try_emplace(q);  // a queue with no row has none: read all the same
  }
  std::vector<model::RetryPolicy> retry;
  retry.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    const model::RetryOverrides& queue = defaults_.at(s.queue);
    model::RetryOverrides policy = queue;
    policy.merge(s.retry_given);
    try {
      model::validate(policy);
      retry.push_back(policy.resolve());
    } catch (const Error& e) {
      if (queue.empty()) throw JobRefused(e, given_ + i);
      // The queue's defaults are part of it: the job may not have set
      // what is wrong.
      const std::string fix = e.hint().empty() ? "fix the job's retry fields" : e.hint();
      throw JobRefused(Error(e.code(), fmt::format("{}, with queue {}'s retry defaults", e.what(), s.queue),
                             fmt::format("{}, or change the queue's: jobctl queue set {}", fix, s.queue)),
                       given_ + i);
    }
    try {
      if (s.schedule) cron::validate_schedule(*s.schedule, s.name);
    } catch (const Error& e) {
      throw JobRefused(e, given_ + i);
    }
  }
  return retry;
}

// The jobs already holding the part's idempotency keys, each key looked up
// once: one an earlier part wrote is known already.
void JobWriter::find_keys(std::span<const model::JobSpec> specs) {
  std::set<std::string> unread;
  for (const auto& s : specs)
    if (!s.idempotency_key.empty() && !keys_.contains(s.idempotency_key)) unread.insert(s.idempotency_key);
  if (!unread.empty()) keys_.merge(existing_keys(c_, unread));  // one not found is written by this part
}

std::vector<SubmitResult> JobWriter::write(const std::string& actor, std::span<const model::JobSpec> specs) {
  const auto retry = retry_policies(specs);
  find_keys(specs);
  std::vector<SubmitResult> results;
  std::vector<NewRow> fresh;
  results.reserve(specs.size());
  fresh.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    if (!s.idempotency_key.empty()) {
      if (auto it = keys_.find(s.idempotency_key); it != keys_.end()) {
        results.push_back(it->second);
        continue;
      }
    }
    // A schedule's runs are made by its leader, a fan-out's below. A time
    // in the past means now; a schedule starts now.
    NewRow row{&s, &retry[i], util::new_ulid(),
               s.schedule || s.fan_out || first_run_ == FirstRun::no ? std::string() : util::new_ulid(), s.run_at_us,
               &origin_, std::nullopt, std::nullopt};
    if (row.due || s.schedule) {
      if (!now_) now_ = now_us(c_);
      if (row.due && *row.due < *now_) row.due.reset();
    }
    if (s.schedule) {
      model::Job job;
      job.id = row.job_id;
      job.spec = s;
      job.schedule_anchor = cron::anchor_of(*s.schedule, *now_);
      row.schedule_anchor = job.schedule_anchor;
      row.next_fire_at = cron::next_occurrence(job, *now_);
    }
    if (!s.idempotency_key.empty()) keys_[s.idempotency_key] = SubmitResult{row.job_id, row.run_id, true};
    results.push_back(SubmitResult{row.job_id, row.run_id, false});
    queues_.insert(s.queue);
    if (!s.tenant.empty()) tenants_.insert(s.tenant);
    fresh.push_back(std::move(row));
  }
  insert_jobs_and_runs(c_, fresh, actor);
  given_ += specs.size();
  for (size_t i = 0, f = 0; i < results.size(); ++i) {
    if (results[i].existed) continue;
    const auto& r = fresh[f++];
    if (r.spec->fan_out && !r.spec->schedule && first_run_ == FirstRun::yes)
      results[i].run_id = insert_fan_out(c_, r);
  }
  return results;
}

void JobWriter::finish() {
  for (const auto& t : tenants_) c_.exec("INSERT INTO tenants (name) VALUES ($1) ON CONFLICT DO NOTHING", {t});
  for (const auto& q : queues_) wake_queue(c_, q);
}

std::optional<model::JobView> Jobs::get_job(const std::string& job_id) {
  auto views = get_jobs({job_id});
  if (views.empty()) return std::nullopt;
  return std::move(views[0]);
}

std::vector<model::JobView> Jobs::get_jobs(const std::vector<std::string>& job_ids) {
  // A list of any length: planned at each use (a batch's read-back).
  std::string sql = fmt::format("{}SELECT {}, {} {} WHERE {}", kPlanEachTime, select_list(kJobs), select_list(kRuns),
                                kJobsWithLatestRun, conn_->in_list("j.id", 1));
  std::map<std::string, model::JobView> found;
  for (const auto& row : conn_->query(sql, {conn_->list(job_ids)})) {
    auto v = view_from_row(row);
    found.emplace(v.job.id, std::move(v));
  }
  std::vector<model::JobView> out;
  for (const auto& id : job_ids)
    if (auto it = found.find(id); it != found.end()) out.push_back(it->second);
  return out;
}

// Read in the submit's transaction, before anyone else can add a run to a
// job it wrote: such a job has only the runs the submit made, so its
// latest run is the one in its SubmitResult (none for a schedule), and a
// join on the two lists of ids finds both without latest_run_of, which
// costs PostgreSQL three times as much to plan and run. A fan-out (which
// made a run per agent) and a job an idempotency key matched are read by
// get_jobs.
std::map<std::string, model::JobView> Jobs::submitted_views(const std::vector<SubmitResult>& results,
                                                            const std::vector<const model::JobSpec*>& specs,
                                                            Rows& made) {
  std::vector<std::string> job_ids, run_ids, others;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.existed || specs[i]->fan_out) {
      others.push_back(r.job_id);
      continue;
    }
    job_ids.push_back(r.job_id);
    if (!r.run_id.empty()) run_ids.push_back(r.run_id);
  }
  std::map<std::string, model::JobView> views;
  if (!job_ids.empty()) {
    // Lookups by key whatever the lists' lengths: planned once (see
    // submit_together).
    std::string sql = fmt::format("SELECT {}, {} FROM jobs j LEFT JOIN runs r ON r.job_id = j.id AND {} WHERE {}",
                                  select_list(kJobs), select_list(kRuns), conn_->in_list("r.id", 2),
                                  conn_->in_list("j.id", 1));
    conn_->query_with_next(sql, {conn_->list(job_ids), conn_->list(run_ids)},
                           [&made](Rows&& rows) { made = std::move(rows); });
  }
  if (!others.empty())
    for (auto& v : get_jobs(others)) views.emplace(v.job.id, std::move(v));
  return views;
}

std::vector<model::JobView> Jobs::list_jobs(const JobFilter& filter) {
  std::string sql = fmt::format(
      "SELECT {}, {} {} "
      "WHERE (j.deleted_at IS NULL) = ($4 = 0) AND ($1 = '' OR r.status = $1 "
      // A run waiting for its retry after a failure is pending; `failed` finds it.
      "OR ($1 = 'failed' AND r.status = 'pending' AND r.failures > 0)) AND ($2 = '' OR j.queue = $2) "
      "AND j.dag_id IS NULL AND j.kind = 'job' AND ($5 = '' OR j.id < $5) "
      "ORDER BY j.id DESC LIMIT $3",
      select_list(kJobs), select_list(kRuns), kJobsWithLatestRun);
  std::string status = filter.status ? std::string(model::to_string(*filter.status)) : "";
  auto rows = conn_->query(sql, {status, filter.queue.value_or(""), int64_t{filter.limit},
                                 int64_t{filter.deleted ? 1 : 0}, filter.before});
  std::vector<model::JobView> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(view_from_row(row));
  return out;
}

std::optional<model::Run> Jobs::get_run(const std::string& run_id) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM runs r WHERE r.id = $1", select_list(kRuns)), {run_id});
  if (rows.empty()) return std::nullopt;
  return run_from_row(rows[0]);
}

std::vector<std::string> Jobs::ids_between(IdKind kind, const std::string& from, const std::string& to, int limit) {
  const char* table = kind == IdKind::job ? "jobs" : kind == IdKind::run ? "runs" : "dag_runs";
  std::vector<std::string> ids;
  for (const auto& row : conn_->query(fmt::format("SELECT id FROM {} WHERE id >= $1 AND ($2 = '' OR id < $2) "
                                                  "ORDER BY id LIMIT $3",
                                                  table),
                                      {from, to, int64_t{limit}}))
    ids.push_back(row.text(0));
  return ids;
}

std::pair<std::string, std::string> Jobs::ids_around(IdKind kind, const std::string& id) {
  const char* table = kind == IdKind::job ? "jobs" : kind == IdKind::run ? "runs" : "dag_runs";
  const char* others = kind == IdKind::run ? " AND job_id <> $1" : "";
  auto row = conn_->query(fmt::format("SELECT (SELECT max(id) FROM {0} WHERE id < $1{1}), "
                                      "(SELECT min(id) FROM {0} WHERE id > $1{1})",
                                      table, others),
                          {id})
                 .at(0);
  return {row.is_null(0) ? "" : row.text(0), row.is_null(1) ? "" : row.text(1)};
}

std::vector<model::Run> Jobs::runs_of(const std::string& job_id) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM runs r WHERE r.job_id = $1 ORDER BY r.id", select_list(kRuns)), {job_id});
  std::vector<model::Run> out;
  for (const auto& row : rows) out.push_back(run_from_row(row));
  return out;
}

std::vector<model::Attempt> Jobs::attempts(const std::string& run_id) {
  // The attempts that ended, and the one running now, which its run
  // carries until it ends (migration 15); unless an agent older than that
  // claimed the run, and its claim opened the attempt's row.
  auto rows = conn_->query(
      "SELECT a.run_id, a.attempt, a.worker_id, COALESCE(w.name, ''), a.started_at, a.finished_at, a.outcome, "
      "a.exit_code, a.signal, a.error, a.stdout_tail, a.stderr_tail, a.job_version, a.http_status, a.timings, "
      "a.stdout_bytes, a.stderr_bytes FROM attempts a LEFT JOIN workers w ON w.id = a.worker_id WHERE a.run_id = $1 "
      "UNION ALL "
      "SELECT r.id, r.attempts, r.attempt_worker, COALESCE(w.name, ''), r.attempt_started_at, NULL, 'running', NULL, "
      "NULL, '', r.live_stdout_tail, r.live_stderr_tail, r.attempt_job_version, NULL, NULL, r.live_stdout_bytes, "
      "r.live_stderr_bytes FROM runs r LEFT JOIN workers w ON w.id = r.attempt_worker "
      "WHERE r.id = $1 AND r.status = 'running' "
      "AND NOT EXISTS (SELECT 1 FROM attempts o WHERE o.run_id = r.id AND o.attempt = r.attempts) ORDER BY 2",
      {run_id});
  std::vector<model::Attempt> out;
  for (const auto& row : rows) {
    model::Attempt a;
    a.run_id = row.text(0);
    a.number = static_cast<int>(row.i64(1));
    a.worker_id = row.text(2);
    a.worker_name = row.text(3);
    a.started_at = row.i64(4);
    a.finished_at = row.opt_i64(5);
    a.outcome = row.text(6);
    if (auto v = row.opt_i64(7)) a.exit_code = static_cast<int>(*v);
    if (auto v = row.opt_i64(8)) a.signal = static_cast<int>(*v);
    a.error = row.text(9);
    a.stdout_tail = row.text(10);
    a.stderr_tail = row.text(11);
    a.job_version = static_cast<int>(row.i64(12));
    if (auto v = row.opt_i64(13)) a.http_status = static_cast<int>(*v);
    if (!row.is_null(14)) a.timings = timings_from_text(row.text(14));
    a.stdout_bytes = row.opt_i64(15);
    a.stderr_bytes = row.opt_i64(16);
    out.push_back(std::move(a));
  }
  return out;
}

std::pair<std::string, model::RunStatus> latest_run_for(Connection& c, const std::string& job_id, const char* action) {
  auto rows = c.query(std::string("SELECT r.id, r.status FROM runs r WHERE r.id = ") + latest_run_of("$1"), {job_id});
  if (rows.empty()) {
    if (c.query("SELECT 1 FROM jobs WHERE id = $1", {job_id}).empty())
      throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
    throw Error(ExitCode::invalid_state, fmt::format("job {} has no run to {}", job_id, action));
  }
  return {rows[0].text(0), model::parse_run_status(rows[0].text(1))};
}

namespace {

// One look at a job's runs for Jobs::cancel, and what it does from it; no
// value when what it saw had changed by the time it acted, and nothing
// was written.
std::optional<CancelOutcome> cancel_as_seen(Connection& c, const std::string& actor, const std::string& job_id) {
  const auto [run_id, status] = latest_run_for(c, job_id, "cancel");
  // A run of --on-each goes with its siblings: the runs of the same submit
  // or occurrence on the other agents that have not ended (the latest may
  // have ended while the others run).
  auto siblings = c.query(fmt::format("SELECT s.id FROM runs s JOIN runs l ON l.id = $1 WHERE s.job_id = $2 "
                                      "AND s.id <> $1 AND {} AND s.status IN ('pending', 'blocked', 'running')",
                                      kSiblingRuns),
                          {run_id, job_id});
  const bool open =
      status == model::RunStatus::pending || status == model::RunStatus::blocked || status == model::RunStatus::running;
  if (!open && siblings.empty())
    throw Error(ExitCode::invalid_state,
                fmt::format("job {} already finished ({}); there is nothing to cancel", job_id, model::to_string(status)));
  CancelOutcome outcome = CancelOutcome::cancelled;
  bool changed = false;
  nlohmann::json details{{"run", run_id}};
  if (!open) {
    details["run"] = nullptr;  // it had ended: only its siblings are cancelled
  } else if (status == model::RunStatus::running) {
    changed = !ask_to_stop(c, CancelReason::user, "id = $1", {run_id}).empty();
    outcome = CancelOutcome::requested;
    details["running"] = true;
  } else {
    auto dag = c.query("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = 'cancelled by user' "
                       "WHERE id = $1 AND status IN ('pending', 'blocked') RETURNING dag_run_id",
                       {run_id});
    if (dag.empty()) return std::nullopt;  // it started or ended meanwhile: nothing written yet
    advance_dag(c, dag[0].text(0), job_id, model::RunStatus::cancelled);
    changed = true;
  }
  if (!siblings.empty()) {
    auto ids = nlohmann::json::array();
    for (const auto& row : siblings) {
      const std::string id = row.text(0);
      ids.push_back(id);
      if (c.exec("UPDATE runs SET status = 'cancelled', finished_at = NOW_US, error = 'cancelled by user' "
                 "WHERE id = $1 AND status IN ('pending', 'blocked')",
                 {id}) > 0)
        changed = true;
      if (!ask_to_stop(c, CancelReason::user, "id = $1 AND status = 'running'", {id}).empty()) {
        outcome = CancelOutcome::requested;
        changed = true;
      }
    }
    details["with"] = ids;
  }
  if (!changed) {
    // Nothing asked or cancelled, nothing written: what runs was asked to
    // stop before, or what was seen has ended or gone back to wait since.
    std::vector<std::string> seen{run_id};
    for (const auto& row : siblings) seen.push_back(row.text(0));
    if (c.query("SELECT 1 FROM runs WHERE " + c.in_list("id", 1) + " AND status = 'running' AND cancel_requested <> 0",
                {c.list(seen)})
            .empty())
      return std::nullopt;
    return CancelOutcome::requested_already;
  }
  audit(c, actor, job_id, "cancel", details.dump());
  return outcome;
}

}  // namespace

CancelOutcome Jobs::cancel(const std::string& job_id) {
  Transaction tx(*conn_, TxMode::write);
  // PostgreSQL: each statement sees what committed before it, so a run can
  // start, end or go back to wait between the look at its status and the
  // statement that acts on it. Such a look is taken again: a run that ended
  // meanwhile "already finished", one back to wait for a retry is
  // cancelled. SQLite: the write lock keeps every run as it was seen.
  for (int look = 0; look < 3; ++look) {
    if (auto outcome = cancel_as_seen(*conn_, actor_, job_id)) {
      if (*outcome != CancelOutcome::requested_already) tx.commit();
      return *outcome;
    }
  }
  throw Error(ExitCode::invalid_state, fmt::format("job {}'s runs kept changing while it was being cancelled", job_id),
              "look at it with `jobctl get`, and cancel again if it still runs or waits");
}

}  // namespace jobctl::store
