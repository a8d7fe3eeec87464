// Store: a job's life after submit — update in place with versions,
// soft-delete and restore — and the audit trail of every change.
//
// The audit trail is written by the same transaction as the change it
// records, so the two cannot disagree. A job's creation is its jobs row
// (created_at, created_by); every later change is a job_events row whose
// version is the job's version after the change. An update compares the
// definition before and after, field by field, in the spelling of
// `jobctl get -o json`: an update that changes nothing writes nothing.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

#include "common/cron/plan.hpp"
#include "common/model/job_json.hpp"
#include "common/store/cancel_requests.hpp"
#include "common/store/internal.hpp"
#include "common/store/jobs.hpp"
#include "common/store/new_runs.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

// The error of an occurrence made ahead that a delete skipped (restore
// makes it pending again).
constexpr const char* kSkippedByDelete = "skipped: the job was deleted";

using nlohmann::json;

// The job, locked for the rest of the transaction (PostgreSQL; SQLite's
// write transaction holds the whole file). Throws not_found.
model::Job locked_job(Connection& c, const std::string& job_id) {
  auto rows = c.query(fmt::format("SELECT {} FROM jobs j WHERE j.id = $1{}", select_list(kJobs),
                                  c.row_lock("FOR UPDATE")),
                      {job_id});
  if (rows.empty())
    throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
  return job_from_row(rows[0]);
}

// What an update may change, flattened ("retry.retries", "schedule.cron"),
// as `jobctl get -o json` spells it.
json definition(const model::Job& job) {
  json full = model::to_json(model::JobView{job, std::nullopt});
  json out = json::object();
  for (const char* key : {"name", "queue", "priority", "command", "timeout", "on", "concurrency_key",
                          "max_concurrent", "tenant", "user"})
    out[key] = full[key];
  for (const auto& [key, value] : full["env"].items()) out["env." + key] = value;
  for (const auto& [key, value] : full["retry"].items()) out["retry." + key] = value;
  if (job.spec.schedule)
    for (const auto& [key, value] : full["schedule"].items())
      if (key != "next_fire_at" && key != "fired") out["schedule." + key] = value;
  return out;
}

// An environment value as the audit trail shows it: only as "(set)", so a
// token rotated with --env does not stay readable in the history.
json audited_env_value(const json& v) { return v.is_null() ? v : json("(set)"); }

json changes_between(const json& before, const json& after) {
  json out = json::object();
  for (const auto& [key, value] : after.items()) {
    if (before.contains(key) && before[key] == value) continue;
    json from = before.contains(key) ? before[key] : json(nullptr);
    if (key.starts_with("env."))
      out[key] = {{"from", audited_env_value(from)}, {"to", audited_env_value(value)}};
    else
      out[key] = {{"from", from}, {"to", value}};
  }
  for (const auto& [key, value] : before.items())
    if (!after.contains(key)) out[key] = {{"from", key.starts_with("env.") ? audited_env_value(value) : value},
                                          {"to", nullptr}};
  return out;
}

void apply_schedule(model::ScheduleSpec& sc, const ScheduleUpdate& u) {
  if (u.cron) sc.cron = *u.cron;
  if (u.tz) sc.tz = *u.tz;
  if (u.misfire) sc.misfire = *u.misfire;
  if (u.catchup_window_us) sc.catchup_window_us = *u.catchup_window_us;
  // The store keeps the effective limit, not whether it was given: a new
  // policy brings its own default unless --max-concurrent comes with it.
  if (u.overlap && *u.overlap != sc.overlap) sc.max_concurrent.reset();
  if (u.overlap) sc.overlap = *u.overlap;
  if (u.max_concurrent) sc.max_concurrent = *u.max_concurrent;
  if (u.jitter_us) sc.jitter_us = *u.jitter_us;
  auto bound = [&](const std::optional<std::string>& text, std::optional<int64_t>& at, const char* flag) {
    if (!text) return;
    at.reset();
    if (!text->empty()) at = util::parse_at(*text, sc.tz, flag, util::OwnOffset::wins);
  };
  bound(u.starts_at, sc.starts_at_us, "--starts-at");
  bound(u.ends_at, sc.ends_at_us, "--ends-at");
  if (u.max_runs) sc.max_runs = *u.max_runs > 0 ? u.max_runs : std::nullopt;
}

// The job as `u` would leave it. Throws invalid_state for schedule fields on
// a job that is none, usage Error for values that make no sense.
model::Job updated(const model::Job& job, const JobUpdate& u) {
  model::Job next = job;
  auto& s = next.spec;
  if (u.name) s.name = *u.name;
  if (u.queue) s.queue = *u.queue;
  if (u.priority) s.priority = *u.priority;
  if (u.timeout_us) s.timeout_us = *u.timeout_us;
  for (const auto& [k, v] : u.set_env) s.env[k] = v;
  for (const auto& k : u.unset_env) s.env.erase(k);
  if (u.command) s.command = *u.command;
  if (u.target) s.target = *u.target;
  if (u.concurrency_key) s.concurrency_key = *u.concurrency_key;
  if (u.tenant) s.tenant = *u.tenant;
  if (u.user) s.user = *u.user;
  s.retry = u.retry.apply_to(s.retry);
  ScheduleUpdate su = u.schedule;
  // --max-concurrent is a schedule's overlap limit, or any other job's.
  if (!s.schedule && su.max_concurrent) s.max_concurrent = std::exchange(su.max_concurrent, std::nullopt);
  if (!su.empty()) {
    if (!s.schedule)
      throw Error(ExitCode::invalid_state, fmt::format("job {} is not a schedule: --cron, --tz and the schedule "
                                                       "options change only schedules", job.id),
                  "submit a new job with --cron for a recurring one");
    apply_schedule(*s.schedule, su);
  }
  model::validate(s);
  model::validate_update(s.retry, u.retry);
  // The jitter is looked at again only with the timing it is bounded by:
  // any other change of a job saved before the bound passes.
  const bool timing = su.cron || su.tz || su.jitter_us || su.starts_at || su.ends_at || u.name;  // a name seeds H
  if (s.schedule)
    cron::validate_schedule(*s.schedule, cron::hash_key(next), timing ? cron::JitterCheck::yes : cron::JitterCheck::no);
  return next;
}

// True when the change moves when occurrences fire: the runs made for the
// old times are dropped and the schedule starts over from now. A new name
// moves them when the expression hashes it (H).
Error deleted_error(const std::string& job_id, const char* action) {
  return Error(ExitCode::invalid_state, fmt::format("job {} is deleted: it cannot be {}", job_id, action),
               fmt::format("restore it first with `jobctl restore {}`", job_id));
}

// A new --starts-at, --ends-at or --max-runs.
bool bounds_changed(const json& changes) {
  return changes.contains("schedule.starts_at") || changes.contains("schedule.ends_at") ||
         changes.contains("schedule.max_runs");
}

bool timing_changed(const json& changes, const model::Job& before, const model::Job& after) {
  if (changes.contains("schedule.cron") || changes.contains("schedule.tz") || changes.contains("schedule.jitter"))
    return true;
  if (!changes.contains("name") || !after.spec.schedule) return false;
  return cron::next_of_expression(before, 0) != cron::next_of_expression(after, 0);
}

}  // namespace

void audit(Connection& c, const std::string& actor, const std::string& job_id, const char* action, const std::string& details) {
  c.exec("INSERT INTO job_events (id, job_id, at, action, actor, version, details) "
              "SELECT $1, id, NOW_US, $3, $4, version, $5 FROM jobs WHERE id = $2",
              {util::new_ulid(), job_id, std::string(action), actor, details});
}

void require_not_deleted(Connection& c, const std::string& job_id, const char* action) {
  auto rows = c.query("SELECT deleted_at FROM jobs WHERE id = $1", {job_id});
  if (!rows.empty() && !rows[0].is_null(0)) throw deleted_error(job_id, action);
}

void refuse_deleted(const model::Job& job, const char* action) {
  if (job.deleted_at) throw deleted_error(job.id, action);
}

UpdateResult Jobs::update_job(const std::string& job_id, const JobUpdate& u) {
  Transaction tx(*conn_, TxMode::write);
  auto job = locked_job(*conn_, job_id);
  refuse_deleted(job, "updated");
  if (u.if_version && *u.if_version != job.version)
    throw Error(ExitCode::conflict,
                fmt::format("job {} changed since you read it: it is at version {}, not {}; nothing was updated",
                            job_id, job.version, *u.if_version),
                fmt::format("read it again with `jobctl get {}` and update with --if-version {}", job_id, job.version));
  model::Job next = updated(job, u);
  json changes = changes_between(definition(job), definition(next));
  UpdateResult result;
  result.version = job.version;
  if (changes.empty()) return result;  // nothing written: the transaction rolls back
  result.changed = true;
  result.version = next.version = job.version + 1;
  const auto& s = next.spec;
  const auto why = fmt::format("dropped: the schedule changed (version {})", next.version);
  if (s.schedule && timing_changed(changes, job, next)) {
    // Occurrences made for the old times never run; the new version fires from now.
    auto dropped = drop_occurrences(*conn_, job_id, why, "TRUE", {});
    result.dropped = dropped.runs;
    next.fired -= dropped.fired;
    int64_t now = now_us(*conn_);
    next.schedule_anchor = cron::anchor_of(*s.schedule, now);
    next.next_fire_at = cron::next_occurrence(next, now);
  } else if (s.schedule && bounds_changed(changes)) {
    // The occurrences made outside the new bounds, or past a lower
    // --max-runs, never run. The schedule goes on from its next occurrence;
    // one that had ended goes on after the last it made.
    const auto& sc = *s.schedule;
    auto dropped = drop_occurrences(*conn_, job_id, why, "origin = 'schedule' AND (occurrence < $2 OR occurrence > $3)",
                                    {sc.starts_at_us.value_or(std::numeric_limits<int64_t>::min()),
                                     sc.ends_at_us.value_or(std::numeric_limits<int64_t>::max())});
    next.fired -= dropped.fired;
    result.dropped = dropped.runs;
    if (sc.max_runs && next.fired > *sc.max_runs) {
      auto over = drop_occurrences(
          *conn_, job_id, why,
          "origin = 'schedule' AND occurrence IN (SELECT DISTINCT o.occurrence FROM runs o WHERE o.job_id = $1 "
          "AND o.status = 'pending' AND o.origin = 'schedule' AND o.occurrence IS NOT NULL "
          "ORDER BY o.occurrence DESC LIMIT $2)",
          {next.fired - *sc.max_runs});
      next.fired -= over.fired;
      result.dropped += over.runs;
    }
    int64_t after = resume_after(*conn_, job);
    if (job.next_fire_at) after = std::min(after, *job.next_fire_at - 1);
    // Not begun: an earlier or removed --starts-at moves where @every counts from.
    if (job.fired == 0) next.schedule_anchor = cron::anchor_of(sc, now_us(*conn_));
    next.next_fire_at = cron::next_occurrence(next, after);
  }
  Writes<kJobs> w{Writer::definition};
  write_definition(w, s, s.retry);
  Params params = std::move(w).values();
  const size_t n = params.size();
  params.insert(params.end(),
                {next.schedule_anchor, nullable(next.next_fire_at), int64_t{next.version}, next.fired, job_id});
  conn_->exec(fmt::format("UPDATE jobs SET {}, schedule_anchor = ${}, next_fire_at = ${}, version = ${}, fired = ${}, "
                          "updated_at = NOW_US WHERE id = ${}",
                          set_list(kJobs, Writer::definition, 1), n + 1, n + 2, n + 3, n + 4, n + 5),
              params);
  if (!s.tenant.empty()) conn_->exec("INSERT INTO tenants (name) VALUES ($1) ON CONFLICT DO NOTHING", {s.tenant});
  // What a run copies from its job (kRunFromJob, new_runs.hpp) follows the
  // job on the runs that have not started, and on those running now
  // (should they come back for a retry). Waiting runs move to the new version unless that
  // version already has a run of the same occurrence.
  // A running run counts against its new group at once; a forced trigger's
  // run joins it with no limit of its own (Schedules::trigger).
  const auto group = group_of(s, job_id);
  // A fan-out schedule's own group is per agent (see expand_fan_out).
  conn_->exec("UPDATE runs SET queue = $2, priority = $3, tenant = $4, "
              "group_max = CASE WHEN origin = 'trigger' AND occurrence IS NULL THEN 0 ELSE $6 END, "
              "group_key = CASE WHEN $5 = $1 AND pinned_to IS NOT NULL AND (occurrence IS NOT NULL OR "
              "origin = 'trigger') THEN $1 || '@' || pinned_to ELSE $5 END "
              "WHERE job_id = $1 AND status IN ('pending', 'blocked', 'running')",
              {job_id, s.queue, int64_t{static_cast<int>(s.priority)}, s.tenant,
               nullable(group), int64_t{model::group_limit(s)}});
  conn_->exec("UPDATE runs SET job_version = $2 WHERE job_id = $1 AND status IN ('pending', 'blocked') "
              "AND (occurrence IS NULL OR NOT EXISTS (SELECT 1 FROM runs o WHERE o.job_id = runs.job_id "
              "AND o.job_version = $2 AND o.occurrence = runs.occurrence))",
              {job_id, int64_t{next.version}});
  audit(*conn_, actor_, job_id, "update", changes.dump());
  wake_queue(*conn_, s.queue);
  tx.commit();
  return result;
}

Jobs::Deleted Jobs::delete_job(const std::string& job_id, CancelRunning cancel_running) {
  Transaction tx(*conn_, TxMode::write);
  auto job = locked_job(*conn_, job_id);
  if (job.kind == "node")
    throw Error(ExitCode::invalid_state, fmt::format("job {} is a node of DAG {}: it is not deleted on its own", job_id,
                                                     job.dag_id),
                "`jobctl dag cancel` stops a DAG run");
  if (job.deleted_at)
    throw Error(ExitCode::invalid_state, fmt::format("job {} is deleted already", job_id),
                fmt::format("`jobctl restore {}` undoes the delete", job_id));
  // next_fire_at NULL: the leader's scan no longer meets it (restore sets it again).
  conn_->exec("UPDATE jobs SET deleted_at = NOW_US, updated_at = NOW_US, next_fire_at = NULL WHERE id = $1", {job_id});
  // Occurrences made ahead are skipped, not cancelled: a restore before
  // their time makes them pending again (restore_job).
  Deleted deleted;
  deleted.skipped = static_cast<int>(conn_->exec(
      "UPDATE runs SET finished_at = NOW_US, status = 'skipped', error = '" + std::string(kSkippedByDelete) + "' "
      "WHERE job_id = $1 AND status IN ('pending', 'blocked') AND occurrence IS NOT NULL AND available_at > NOW_US",
      {job_id}));
  // A scheduled DAG's occurrences are DAG runs of its own.
  if (job.kind == "dag") deleted.skipped += static_cast<int>(cancel_dag_runs_ahead(*conn_, job.dag_id));
  const int64_t cancelled =
      conn_->exec("UPDATE runs SET finished_at = NOW_US, status = 'cancelled', error = 'cancelled: the job was deleted' "
                  "WHERE job_id = $1 AND status IN ('pending', 'blocked')",
                  {job_id});
  size_t stopping = 0;
  if (cancel_running == CancelRunning::yes) {
    stopping = ask_to_stop(*conn_, CancelReason::job_deleted, "job_id = $1", {job_id}).size();
  }
  audit(*conn_, actor_, job_id, "delete",
        json{{"cancelled", cancelled}, {"skipped", deleted.skipped}, {"stopping", stopping}}.dump());
  tx.commit();
  deleted.cancelled = static_cast<int>(cancelled + static_cast<int64_t>(stopping));
  return deleted;
}

void Jobs::restore_job(const std::string& job_id) {
  Transaction tx(*conn_, TxMode::write);
  auto job = locked_job(*conn_, job_id);
  if (!job.deleted_at)
    throw Error(ExitCode::invalid_state, fmt::format("job {} is not deleted: there is nothing to restore", job_id));
  conn_->exec("UPDATE jobs SET deleted_at = NULL, updated_at = NOW_US WHERE id = $1", {job_id});
  // The occurrences the delete skipped that are still ahead wait again:
  // each keeps its run, and the leader makes no second one for it.
  conn_->exec(std::string("UPDATE runs SET status = 'pending', finished_at = NULL, error = '' WHERE job_id = $1 "
                          "AND status = 'skipped' AND available_at > NOW_US AND error = '") + kSkippedByDelete + "'",
              {job_id});
  if (job.kind == "dag") restore_dag_runs_ahead(*conn_, job.dag_id);
  restart_schedule(*conn_, job_id, false);
  audit(*conn_, actor_, job_id, "restore");
  tx.commit();
}

std::vector<model::JobEvent> Jobs::history(const std::string& job_id, int limit) {
  auto job = conn_->query("SELECT created_at, created_by FROM jobs WHERE id = $1", {job_id});
  if (job.empty())
    throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
  auto rows = conn_->query("SELECT id, job_id, at, action, actor, version, details FROM job_events "
                           "WHERE job_id = $1 ORDER BY at DESC, id DESC LIMIT $2",
                           {job_id, int64_t{limit}});
  std::vector<model::JobEvent> out;
  for (const auto& row : rows)
    out.push_back(model::JobEvent{row.text(0), row.text(1), row.i64(2), row.text(3), row.text(4),
                                  static_cast<int>(row.i64(5)), row.text(6)});
  if (static_cast<int>(out.size()) < limit)
    out.push_back(model::JobEvent{job_id, job_id, job[0].i64(0), "create",
                                  job[0].text(1).empty() ? "unknown" : job[0].text(1), 1, "{}"});
  return out;
}

}  // namespace jobctl::store
