// Store: schedules — the scheduler leader's lease, materialising
// occurrences, the overlap sweep, and the jobctl commands on schedules.
//
// The leader lease is one row (scheduler_lease). An agent takes it when it
// is free or expired, bumping its epoch; the holder renews it with its
// heartbeat. Every materialisation re-reads the row inside its own
// transaction (locking it on PostgreSQL) and writes nothing unless this
// agent still holds it at the epoch it was granted, so a deposed leader
// cannot write; the unique (job, version, occurrence) index would refuse a
// second run of an occurrence even so.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "common/cron/plan.hpp"
#include "common/store/fan_out.hpp"
#include "common/store/cancel_requests.hpp"
#include "common/store/internal.hpp"
#include "common/store/new_runs.hpp"
#include "common/store/rows.hpp"
#include "common/store/scheduler.hpp"
#include "common/store/schedules.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {


NewRun occurrence_run(const model::Job& job, int64_t at, const char* origin) {
  NewRun r;
  r.id = util::new_ulid();
  r.job_id = job.id;
  r.queue = job.spec.queue;
  r.priority = static_cast<int>(job.spec.priority);
  r.version = job.version;
  r.occurrence = at;
  r.available_at = at;
  r.origin = origin;
  r.tenant = job.spec.tenant;
  r.group_key = group_of(job.spec, job.id);
  r.group_max = model::group_limit(job.spec);
  return r;
}

std::string per_agent_group(const std::string& job_id, const std::string& agent) { return job_id + "@" + agent; }

// A fan-out job's occurrence becomes one run per agent in `agents`, each
// --stagger after the one before; with no agent, one skipped run that says
// so. Other jobs' runs pass through.
void expand_fan_out(const model::Job& job, NewRun run, const std::vector<std::string>& agents,
                    std::vector<NewRun>& runs, std::vector<NewRun>& skipped) {
  if (!job.spec.fan_out) {
    runs.push_back(std::move(run));
    return;
  }
  if (agents.empty()) {
    run.status = "skipped";
    run.error = no_agent_reason(*job.spec.fan_out, job.spec.queue);
    skipped.push_back(std::move(run));
    return;
  }
  for (size_t i = 0; i < agents.size(); ++i) {
    NewRun r = run;
    if (i > 0) r.id = util::new_ulid();
    r.pinned_to = agents[i];
    // The overlap limit of a schedule is per agent: each host's run waits
    // for that host's previous one, not for the others'. A shared
    // --concurrency-key stays shared.
    if (r.group_key && *r.group_key == job.id) r.group_key = per_agent_group(job.id, agents[i]);
    *r.available_at += static_cast<int64_t>(i) * job.spec.stagger_us;
    runs.push_back(std::move(r));
  }
}

// A stable offset in [0, jitter) per (job, occurrence): the same whichever
// leader materialises it, and different across jobs sharing a minute.
int64_t jitter_of(const std::string& job_id, int64_t at, int64_t jitter_us) {
  if (jitter_us <= 0) return 0;
  const uint64_t h = util::stable_hash(fmt::format("{}:{}", job_id, at));
  return static_cast<int64_t>(h % static_cast<uint64_t>(jitter_us));
}

std::string span_text(const cron::SkippedSpan& s) {
  if (s.count == 1) return s.reason;
  return fmt::format("{} ({} occurrences, through {})", s.reason, s.count, util::format_time(s.last));
}

// The parts of a span of missed occurrences that have no run: a backfill
// may have run some of them, which are then not recorded as skipped too
// (`schedule runs` showed both for one occurrence). One read per span, and
// spans come only after an outage.
std::vector<cron::SkippedSpan> not_run(Connection& c, const model::Job& job, const cron::Expr& expr,
                                       const util::TimeZone& zone, const cron::SkippedSpan& span) {
  auto rows = c.query("SELECT DISTINCT occurrence FROM runs WHERE job_id = $1 AND occurrence BETWEEN $2 AND $3 "
                      "AND status <> 'skipped'",
                      {job.id, span.first, span.last});
  if (rows.empty()) return {span};
  std::set<int64_t> ran;
  for (const auto& row : rows) ran.insert(row.i64(0));
  std::vector<cron::SkippedSpan> parts;
  bool open = false;
  for (std::optional<int64_t> t = span.first; t && *t <= span.last; t = expr.next(*t, zone, job.schedule_anchor)) {
    if (ran.count(*t)) {
      open = false;
      continue;
    }
    if (open) {
      parts.back().last = *t;
      ++parts.back().count;
    } else {
      parts.push_back(cron::SkippedSpan{*t, *t, 1, span.reason});
      open = true;
    }
  }
  return parts;
}

model::Job schedule_job(Connection& c, const std::string& job_id, bool lock) {
  auto rows = c.query(fmt::format("SELECT {} FROM jobs j WHERE j.id = $1{}", select_list(kJobs),
                                  lock ? c.row_lock("FOR UPDATE") : ""),
                      {job_id});
  if (rows.empty())
    throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list schedules with `jobctl schedules ls`");
  auto job = job_from_row(rows[0]);
  if (!job.spec.schedule)
    throw Error(ExitCode::invalid_state, fmt::format("job {} is not a schedule", job_id),
                "schedules are created with `jobctl submit --cron EXPR`");
  return job;
}

}  // namespace

// --- the leader ----------------------------------------------------------------

namespace {

// Where a schedule the leader went through resumes (none: it has ended),
// and how many occurrences it fired.
struct Resumed {
  std::string job_id;
  std::optional<int64_t> next_fire_at;
  int64_t fired = 0;
};

// One statement for a pass's schedules. A statement each cost the leader
// a round trip per schedule: 100,000 of them for a herd of 100,000
// schedules each minute, beside the agents claiming the herd's runs.
void resume_schedules(Connection& c, const std::vector<Resumed>& resumed) {
  static constexpr std::array<BatchColumn, 3> kColumns{
      {{"id", ColumnType::text}, {"next_fire_at", ColumnType::integer}, {"fired", ColumnType::integer}}};
  c.exec_batch("UPDATE jobs AS j SET next_fire_at = u.next_fire_at, fired = j.fired + u.fired FROM " +
                   c.batch(kColumns, 1, "u") + " WHERE j.id = u.id",
               {}, kColumns, resumed.size(), [&](size_t i, std::span<Value> cells) {
                 cells[0] = resumed[i].job_id;
                 cells[1] = nullable(resumed[i].next_fire_at);
                 cells[2] = resumed[i].fired;
               });
}

}  // namespace

std::optional<int64_t> Scheduler::lead(const std::string& worker_id, int64_t lease_us, int64_t misfire_after_us) {
  // The row is taken only if no other transaction holds its lock (and a
  // follower, which may not take it, locks nothing: the condition is in
  // the locking subquery as well, whatever plan runs it): one that
  // did (an operator's SELECT … FOR UPDATE, a transaction left open) held
  // this statement, and with it the agent's claims and heartbeats on the
  // same connection, until statement_timeout (a tester: 4 starts in 58 s).
  auto rows = conn_->query(
      "UPDATE scheduler_lease SET epoch = CASE WHEN holder = $1 THEN epoch ELSE epoch + 1 END, holder = $1, "
      "expires_at = NOW_US + $2, misfire_after = $3 WHERE id = 1 AND (holder = $1 OR holder IS NULL OR "
      "expires_at <= NOW_US) AND id IN (SELECT id FROM scheduler_lease WHERE id = 1 AND (holder = $1 OR "
      "holder IS NULL OR expires_at <= NOW_US)" +
          conn_->row_lock("FOR UPDATE SKIP LOCKED") + ") RETURNING epoch",
      {worker_id, lease_us, misfire_after_us});
  if (!rows.empty()) return rows[0].i64(0);
  // Not renewed: not ours, or locked this moment. A lease still held
  // stands until it expires.
  rows = conn_->query("SELECT epoch FROM scheduler_lease WHERE id = 1 AND holder = $1 AND expires_at > NOW_US",
                      {worker_id});
  if (rows.empty()) return std::nullopt;
  return rows[0].i64(0);
}

void Scheduler::resign(const std::string& worker_id) {
  conn_->exec("UPDATE scheduler_lease SET expires_at = 0 WHERE id = 1 AND holder = $1", {worker_id});
}

MaterialiseResult Scheduler::materialise(const std::string& worker_id, int64_t epoch, const SchedulerSettings& s) {
  MaterialiseResult result;
  Transaction tx(*conn_, TxMode::write);
  const std::string holding =
      "SELECT NOW_US FROM scheduler_lease WHERE id = 1 AND holder = $1 AND epoch = $2 AND expires_at > NOW_US";
  auto held = conn_->query(holding + conn_->row_lock("FOR UPDATE SKIP LOCKED"), {worker_id, epoch});
  if (held.empty()) {
    // Locked by another transaction (not waited for: see lead): this tick
    // makes nothing; fenced only if the lease is no longer this agent's.
    result.fenced = conn_->query(holding, {worker_id, epoch}).empty();
    return result;
  }
  int64_t now = held[0].i64(0);
  auto rows = conn_->query(fmt::format("SELECT {} FROM jobs j WHERE j.next_fire_at <= $1 AND j.paused = 0 AND "
                                       "j.deleted_at IS NULL ORDER BY j.next_fire_at LIMIT $2{}",
                                       select_list(kJobs), conn_->row_lock("FOR UPDATE")),
                           {now + s.horizon_us, int64_t{s.batch}});
  result.more = static_cast<int>(rows.size()) == s.batch;
  std::vector<NewRun> runs, skipped;
  std::vector<Resumed> resumed;
  std::set<std::string> queues;
  for (const auto& row : rows) {
    // Where the schedule resumes; unset when it cannot be evaluated.
    std::optional<std::optional<int64_t>> next;
    int64_t fired = 0;
    try {
      auto job = job_from_row(row);
      const auto& sc = *job.spec.schedule;
      auto expr = cron::expr_of(job);
      auto zone = util::TimeZone::locate(sc.tz);
      cron::PlanInput in{&expr, zone.get(), job.schedule_anchor, sc.misfire, sc.catchup_window_us,
                         *job.next_fire_at, now, s.horizon_us, s.misfire_after_us, sc.ends_at_us,
                         cron::remaining_runs(job)};
      auto plan = cron::plan_occurrences(in);
      fired = static_cast<int64_t>(plan.fire.size());
      if (job.kind == "dag") {
        // A scheduled DAG: each occurrence is a DAG run, made once.
        // One refused as made already does not count again.
        fired = 0;
        for (int64_t at : plan.fire)
          if (!start_dag_run(*conn_, job.dag_id, at, at + jitter_of(job.id, at, sc.jitter_us)).empty()) ++fired;
        result.runs += fired;
      } else {
        std::vector<std::string> agents;
        if (job.spec.fan_out && !plan.fire.empty()) agents = fan_out_agents(*conn_, *job.spec.fan_out, job.spec.queue);
        for (int64_t at : plan.fire) {
          auto r = occurrence_run(job, at, "schedule");
          r.available_at = at + jitter_of(job.id, at, sc.jitter_us);
          expand_fan_out(job, std::move(r), agents, runs, skipped);
        }
        for (const auto& missed : plan.skipped)
          for (const auto& span : not_run(*conn_, job, expr, *zone, missed)) {
            auto r = occurrence_run(job, span.first, "schedule");
            r.status = "skipped";
            r.error = span_text(span);
            skipped.push_back(std::move(r));
            result.skipped += span.count;
          }
      }
      if (!plan.fire.empty()) queues.insert(job.spec.queue);
      next = plan.next_fire_at;
      result.more = result.more || plan.more;
    } catch (const Error& e) {
      // The row, expression or zone does not load here (this host's tzdata
      // lacks the zone, or an older agent leads): say so and leave the
      // schedule where it is, for a leader that can evaluate it. A store
      // failure is not the row's: it ends the pass, and its transaction.
      if (e.code() == ExitCode::store) throw;
      result.errors.push_back(fmt::format("schedule {}: {}", row.text(0), e.what()));
    }
    if (next) resumed.push_back(Resumed{row.text(0), *next, fired});
    ++result.schedules;
  }
  resume_schedules(*conn_, resumed);
  result.runs += insert_runs(*conn_, runs);
  insert_runs(*conn_, skipped);
  for (const auto& q : queues) wake_queue(*conn_, q);
  tx.commit();
  return result;
}

namespace {

// The due occurrences of jobs at their limit that must not wait: all of
// them under skip; under buffer-one, all but the earliest. Only a live
// lease counts as running: a run whose agent died, or that nobody could
// renew during a store outage, is no reason to skip (it is rescued, or its
// agent reports, soon). Under skip, an older occurrence of the same
// schedule that started after this one came due does not count: one due
// while nothing ran (every agent was down) waits its turn behind it, as
// misfire all means (they were all skipped for the first that started, a
// tester). Any other run holding the group (another job's under the same
// key, a trigger) counts however late it started.
// Each is a due occurrence p, of job g, in a group with runs running; $1
// is the overlap policy, $2 the error recorded.
//
// PostgreSQL finds them from those groups, a few, through each one's
// waiting runs, and updates them by key. Asked for every due occurrence
// in a busy group, its planner, under the statistics of a nearly empty
// table (a herd of runs made within the minute, before ANALYZE saw any),
// scanned every due occurrence for each one: 9 s a tick at 5,500, and the
// leader made no more runs meanwhile (scripts/bench, the herd figure).
// SQLite keeps the statement both had (its herd start lag met the goal).
std::string skip_blocked(Dialect d) {
  constexpr const char* kDue =
      "p.status = 'pending' AND p.occurrence IS NOT NULL AND p.origin = 'schedule' AND p.available_at <= NOW_US "
      "AND p.group_key IS NOT NULL";
  constexpr const char* kHeld =
      "g.overlap = $1 AND (SELECT count(*) FROM runs o WHERE o.group_key = p.group_key AND o.status = 'running' "
      "AND o.lease_expires_at > NOW_US AND ($1 <> 'skip' OR COALESCE(o.attempt_started_at, o.started_at) <= "
      "p.available_at OR o.job_id <> p.job_id OR o.occurrence IS NULL OR o.occurrence >= p.occurrence)) >= p.group_max "
      "AND ($1 = 'skip' OR EXISTS (SELECT 1 FROM runs e WHERE e.job_id = p.job_id AND e.status = 'pending' "
      "AND e.occurrence < p.occurrence AND COALESCE(e.pinned_to, '') = COALESCE(p.pinned_to, '')))";
  constexpr const char* kBusy = "SELECT DISTINCT group_key FROM runs WHERE status = 'running' AND group_key IS NOT NULL";
  // The status is checked again on the row updated: on PostgreSQL a run
  // claimed since the subquery read it must keep running.
  constexpr const char* kSet = "UPDATE runs SET status = 'skipped', finished_at = NOW_US, error = $2";
  if (d == Dialect::postgres)
    // OFFSET 0 keeps each group's lookup a lookup (not flattened into a
    // join over every due occurrence). The rows are then updated where they
    // are (a TID scan: by id, the planner read every run when it thought
    // the table small), their status tested again through COALESCE so that
    // no index on pending runs is read for it, as the claim's lock does.
    return fmt::format("{} WHERE ctid = ANY (ARRAY(SELECT p.ctid FROM ({}) busy CROSS JOIN LATERAL (SELECT p.*, p.ctid FROM runs p "
                       "WHERE p.group_key = busy.group_key AND {} OFFSET 0) p JOIN jobs g ON g.id = p.job_id WHERE {})) "
                       "AND COALESCE(status, '') = 'pending'",
                       kSet, kBusy, kDue, kHeld);
  return fmt::format("{} WHERE status = 'pending' AND id IN (SELECT p.id FROM runs p JOIN jobs g ON g.id = p.job_id "
                     "WHERE {} AND p.group_key IN ({}) AND {})",
                     kSet, kDue, kBusy, kHeld);
}

}  // namespace

std::string missed_occurrence(const char* r) {
  // The later occurrence is looked up through runs_occurrence, from this
  // one on: a schedule's history before it is not read. Under latest, a
  // later occurrence the leader has not made yet counts too (next_fire_at
  // is due): after an outage, a claim that came before the leader's first
  // tick ran the oldest occurrence made ahead, 10 minutes late, and the
  // newest was then skipped as overlap (a tester).
  return fmt::format(
      "({0}.occurrence IS NOT NULL AND {0}.origin = 'schedule' AND {0}.started_at IS NULL "
      "AND EXISTS (SELECT 1 FROM scheduler_lease l WHERE l.id = 1 AND {0}.available_at < NOW_US - l.misfire_after) "
      "AND EXISTS (SELECT 1 FROM jobs m WHERE m.id = {0}.job_id AND m.overlap = 'skip' AND (m.misfire = 'skip' "
      "OR (m.misfire = 'all' AND {0}.available_at < NOW_US - m.catchup_window_us) "
      "OR (m.misfire = 'latest' AND (m.next_fire_at <= NOW_US OR EXISTS (SELECT 1 FROM runs n WHERE n.job_id = {0}.job_id "
      "AND n.job_version = {0}.job_version AND n.occurrence > {0}.occurrence "
      "AND COALESCE(n.pinned_to, '') = COALESCE({0}.pinned_to, '') AND n.status <> 'skipped' "
      "AND n.origin = 'schedule' AND n.available_at <= NOW_US "
      "AND (n.status IN ('pending', 'running') OR n.started_at IS NOT NULL)))))))",
      r);
}

int Scheduler::enforce_overlap() {
  // Several occurrences of a one-at-a-time (overlap skip) schedule due at
  // once and none really running: after an outage or a crash. Misfire
  // latest runs the latest; the older ones were missed, unless they had
  // started (a rescued attempt, a retry): those run again. Each waiting
  // occurrence's job is looked up by key: asked for the jobs of that
  // policy first, SQLite read every job each time (every job has it unless
  // told otherwise), and an idle agent with 200,000 jobs in its history
  // spent 75 ms of CPU a second on it.
  constexpr const char* kSuperseded =
      "UPDATE runs SET status = 'skipped', finished_at = NOW_US, "
      "error = 'missed: a later occurrence runs instead (misfire latest)' "
      "WHERE status = 'pending' AND occurrence IS NOT NULL AND origin = 'schedule' AND available_at <= NOW_US "
      "AND started_at IS NULL "
      "AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = runs.job_id AND j.overlap = 'skip' AND j.misfire = 'latest' "
      "AND j.paused = 0 AND j.deleted_at IS NULL) "
      "AND EXISTS (SELECT 1 FROM runs e WHERE e.job_id = runs.job_id AND e.status = 'pending' "
      "AND e.origin = 'schedule' AND e.occurrence > runs.occurrence AND e.available_at <= NOW_US "
      "AND COALESCE(e.pinned_to, '') = COALESCE(runs.pinned_to, '')) "
      "AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.job_id = runs.job_id AND o.status = 'running' "
      "AND o.lease_expires_at > NOW_US AND COALESCE(o.pinned_to, '') = COALESCE(runs.pinned_to, ''))";
  // Missed occurrences (missed_occurrence), which no claim takes: those
  // of a paused or deleted schedule are left to resume and restore, as
  // above (superseded while paused, they read "a later occurrence runs
  // instead" when none did).
  static const std::string kMissed = fmt::format(
      "UPDATE runs SET status = 'skipped', finished_at = NOW_US, error = CASE (SELECT j.misfire FROM jobs j "
      "WHERE j.id = runs.job_id) WHEN 'skip' THEN 'missed: no agent started it in time (misfire skip)' "
      "WHEN 'all' THEN 'missed: older than the catch-up window (misfire all)' "
      "ELSE 'missed: a later occurrence runs instead (misfire latest)' END "
      "WHERE status = 'pending' AND {} AND NOT EXISTS (SELECT 1 FROM jobs h WHERE h.id = runs.job_id "
      "AND (h.paused = 1 OR h.deleted_at IS NOT NULL))",
      missed_occurrence("runs"));
  Transaction tx(*conn_, TxMode::write);
  int64_t n = conn_->exec(kMissed);
  n += conn_->exec(kSuperseded);
  const std::string blocked = skip_blocked(conn_->dialect());
  for (auto [policy, reason] : {std::pair{"skip", "overlap: an earlier occurrence was still running (overlap skip)"},
                                std::pair{"buffer-one", "overlap: another occurrence already waited (overlap buffer-one)"}})
    n += conn_->exec(blocked, {std::string(policy), std::string(reason)});
  // cancel-other: a due occurrence asks the older running ones to stop; it
  // starts once they have.
  auto cancelled = ask_to_stop(*conn_, CancelReason::overlap,
      "occurrence IS NOT NULL AND EXISTS (SELECT 1 FROM runs p JOIN jobs g ON g.id = p.job_id "
      "WHERE p.job_id = runs.job_id AND g.overlap = 'cancel-other' AND p.status = 'pending' "
      "AND COALESCE(p.pinned_to, '') = COALESCE(runs.pinned_to, '') "
      "AND p.occurrence > runs.occurrence AND p.available_at <= NOW_US AND p.group_key IS NOT NULL "
      "AND (SELECT count(*) FROM runs o WHERE o.group_key = p.group_key AND o.status = 'running') >= p.group_max)",
      {});
  tx.commit();
  return static_cast<int>(n + static_cast<int64_t>(cancelled.size()));
}

// --- jobctl ----------------------------------------------------------------------

std::vector<ScheduleView> Schedules::list_schedules() {
  auto rows = conn_->query(fmt::format(
      "SELECT {}, {} FROM jobs j LEFT JOIN runs r ON r.id = (SELECT max(x.id) FROM runs x WHERE x.job_id = j.id "
      "AND (x.available_at <= NOW_US OR x.started_at IS NOT NULL)) WHERE j.cron IS NOT NULL AND j.deleted_at IS NULL "
      "ORDER BY j.next_fire_at IS NULL, j.next_fire_at, j.id",
      select_list(kJobs), select_list(kRuns)));
  std::vector<ScheduleView> out;
  for (const auto& row : rows) {
    ScheduleView v{job_from_row(row), std::nullopt};
    if (!row.is_null(kJobs.size())) v.last_run = run_from_row(row, kJobs.size());
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<model::Run> Schedules::schedule_runs(const std::string& job_id, int limit) {
  schedule_job(*conn_, job_id, false);
  // What is due or has started (one waiting for its retry has): not the
  // runs made ahead for times still to come.
  auto rows = conn_->query(fmt::format("SELECT {} FROM runs r WHERE r.job_id = $1 AND (r.available_at <= NOW_US "
                                       "OR r.started_at IS NOT NULL) "
                                       "ORDER BY r.id DESC LIMIT $2",
                                       select_list(kRuns)),
                           {job_id, int64_t{limit}});
  std::vector<model::Run> out;
  for (const auto& row : rows) out.push_back(run_from_row(row));
  return out;
}

std::string Schedules::trigger(const std::string& job_id, bool force) {
  Transaction tx(*conn_, TxMode::write);
  auto job = schedule_job(*conn_, job_id, true);
  refuse_deleted(job, "triggered");
  if (job.kind == "dag") {
    // A scheduled DAG's trigger is a DAG run now.
    auto dag_run = start_dag_run(*conn_, job.dag_id, std::nullopt, std::nullopt);
    audit(*conn_, actor_, job_id, "trigger", nlohmann::json{{"dag_run", dag_run}, {"force", force}}.dump());
    tx.commit();
    return dag_run;
  }
  int limit = model::group_limit(job.spec);
  auto overlap = job.spec.schedule->overlap;
  const auto group = group_of(job.spec, job.id);
  if (!force && group && (overlap == model::Overlap::skip || overlap == model::Overlap::buffer_one)) {
    auto busy = conn_->query(
        "SELECT (SELECT count(*) FROM runs WHERE group_key = $2 AND status = 'running'), "
        "(SELECT count(*) FROM runs WHERE job_id = $1 AND status = 'pending' AND occurrence IS NOT NULL "
        "AND available_at <= NOW_US)",
        {job_id, *group});
    int64_t running = busy.at(0).i64(0), waiting = busy.at(0).i64(1);
    if (running >= limit && (overlap == model::Overlap::skip || waiting > 0))
      throw Error(ExitCode::invalid_state,
                  fmt::format("job {} already runs {} of at most {} (overlap {}): the trigger would be skipped",
                              job_id, running, limit, model::to_string(overlap)),
                  "wait for it, or add --force to start one now regardless");
  }
  auto run = occurrence_run(job, now_us(*conn_), "trigger");
  // A forced run carries no occurrence, so the overlap rules do not hold
  // it; it stays in its group with no limit of its own (group_max 0), so
  // the limit never holds it either, yet it counts against the limit for
  // the others while it runs.
  if (force) run.occurrence.reset();
  std::vector<NewRun> runs, skipped;
  std::vector<std::string> agents;
  if (job.spec.fan_out) agents = fan_out_agents(*conn_, *job.spec.fan_out, job.spec.queue);
  expand_fan_out(job, std::move(run), agents, runs, skipped);
  if (force)
    for (auto& r : runs) r.group_max = 0;
  if (runs.empty())
    throw Error(ExitCode::invalid_state, no_agent_reason(*job.spec.fan_out, job.spec.queue), "start a matching agent, then trigger");
  insert_runs(*conn_, runs);
  wake_queue(*conn_, job.spec.queue);
  audit(*conn_, actor_, job_id, "trigger", nlohmann::json{{"run", runs[0].id}, {"force", force}}.dump());
  tx.commit();
  return runs[0].id;
}

BackfillResult Schedules::backfill(const std::string& job_id, int64_t from_us, int64_t to_us) {
  if (to_us < from_us) throw usage_error("--to is before --from", "give the earlier time as --from");
  Transaction tx(*conn_, TxMode::write);
  // Occurrences still to come are the scheduler's to make, when they are
  // due; runs made for them here would be due at once and out of sight of
  // `schedule runs`, which shows what is due or done.
  const int64_t now = now_us(*conn_);
  if (to_us > now)
    throw usage_error(fmt::format("--to {} is in the future", util::format_time(to_us)),
                      "backfill runs a past span: give a --to up to now; the scheduler runs what comes after");
  auto job = schedule_job(*conn_, job_id, true);
  refuse_deleted(job, "backfilled");
  BackfillResult result;
  // Its bounds hold for backfills too; --max-runs counts only the leader's runs.
  const auto& sc = *job.spec.schedule;
  if (sc.starts_at_us && from_us < *sc.starts_at_us) {
    from_us = *sc.starts_at_us;
    result.cut = true;
  }
  if (sc.ends_at_us && to_us > *sc.ends_at_us) {
    to_us = *sc.ends_at_us;
    result.cut = true;
  }
  // An occurrence that has a run, of this version or an earlier one, is
  // left alone; one that was only skipped (or dropped by an update) is not.
  std::set<int64_t> taken;
  for (const auto& row : conn_->query("SELECT occurrence FROM runs WHERE job_id = $1 AND occurrence >= $2 "
                                      "AND occurrence <= $3 AND status <> 'skipped'",
                                      {job_id, from_us, to_us}))
    taken.insert(row.i64(0));
  std::vector<NewRun> runs, skipped;
  std::vector<std::string> agents;
  if (job.spec.fan_out) {
    agents = fan_out_agents(*conn_, *job.spec.fan_out, job.spec.queue);
    if (agents.empty())
      throw Error(ExitCode::invalid_state, no_agent_reason(*job.spec.fan_out, job.spec.queue), "start a matching agent, then backfill");
  }
  int64_t occurrences = 0, dag_runs = 0;
  // Parsed once: a span may hold thousands of occurrences.
  const auto expr = cron::expr_of(job);
  const auto zone = util::TimeZone::locate(job.spec.schedule->tz);
  for (auto t = expr.next(from_us - 1, *zone, job.schedule_anchor); t && *t <= to_us;
       t = expr.next(*t, *zone, job.schedule_anchor)) {
    if (++occurrences > static_cast<int64_t>(kMaxBackfill))
      throw usage_error(fmt::format("{} to {} holds more than {} occurrences of job {}", util::format_time(from_us),
                                    util::format_time(to_us), kMaxBackfill, job_id),
                        "backfill a shorter span at a time");
    // Due now, not at the occurrence: a run is late only from when it
    // was made (backfilled runs due weeks ago made stats' lag and OLDEST,
    // and check's --max-lag and --max-oldest, say weeks: a tester). They
    // keep the order of their occurrences (of their ids).
    if (job.kind == "dag") {
      // A scheduled DAG's occurrence is a DAG run, made once.
      if (!start_dag_run(*conn_, job.dag_id, *t, now).empty()) ++dag_runs;
      continue;
    }
    if (taken.count(*t)) continue;
    NewRun run = occurrence_run(job, *t, "backfill");
    run.available_at = now;
    expand_fan_out(job, std::move(run), agents, runs, skipped);
  }

  result.occurrences = occurrences;
  result.created = insert_runs(*conn_, runs) + dag_runs;
  if (result.created > 0) wake_queue(*conn_, job.spec.queue);
  audit(*conn_, actor_, job_id, "backfill",
        nlohmann::json{{"from", util::format_time(from_us)}, {"to", util::format_time(to_us)},
                       {"occurrences", result.occurrences}, {"created", result.created}}
            .dump());
  tx.commit();
  return result;
}

namespace {

constexpr const char* kPausedWhenDue = "paused when it came due";

// The occurrences of a schedule being resumed that came due while it was
// paused and had no run yet (the leader makes none for a paused schedule),
// recorded as one skipped run for the span: after its last pause, and
// after the occurrences made before it (whose runs drop_occurrences
// records). At most kStepsPerTick of them are counted.
void record_paused_span(Connection& c, const model::Job& job) {
  if (job.kind == "dag") return;
  auto since = c.query("SELECT (SELECT max(at) FROM job_events WHERE job_id = $1 AND action = 'pause'), "
                       "(SELECT max(occurrence) FROM runs WHERE job_id = $1 AND origin = 'schedule')",
                       {job.id});
  if (since.at(0).is_null(0)) return;
  int64_t after = since[0].i64(0) - 1;
  if (!since[0].is_null(1)) after = std::max(after, since[0].i64(1));
  const auto& sc = *job.spec.schedule;
  const auto expr = cron::expr_of(job);
  const auto zone = util::TimeZone::locate(sc.tz);
  const int64_t now = now_us(c);
  if (sc.starts_at_us) after = std::max(after, *sc.starts_at_us - 1);
  cron::SkippedSpan span{0, 0, 0, kPausedWhenDue};
  for (auto t = expr.next(after, *zone, job.schedule_anchor);
       t && *t <= now && !(sc.ends_at_us && *t > *sc.ends_at_us) && span.count < cron::kStepsPerTick;
       t = expr.next(*t, *zone, job.schedule_anchor)) {
    if (span.count == 0) span.first = *t;
    span.last = *t;
    ++span.count;
  }
  if (span.count == 0) return;
  auto run = occurrence_run(job, span.first, "schedule");
  run.status = "skipped";
  run.error = span_text(span);
  insert_runs(c, std::vector<NewRun>{run});
}

}  // namespace

void restart_schedule(Connection& c, const std::string& job_id, bool resumed) {
  auto rows = c.query(select_job_by_id(), {job_id});
  if (rows.empty()) return;
  auto job = job_from_row(rows[0]);
  if (!job.spec.schedule) return;
  // Resume continues from now: what came due while paused is not run, and
  // does not count against --max-runs. What was made ahead still runs.
  if (resumed) record_paused_span(c, job);
  auto skipped = drop_occurrences(c, job_id, kPausedWhenDue, "origin = 'schedule' AND available_at <= NOW_US");
  job.fired -= skipped.fired;
  c.exec("UPDATE jobs SET next_fire_at = $2, fired = $3 WHERE id = $1",
         {job_id, nullable(cron::next_occurrence(job, resume_after(c, job))), job.fired});
}

int64_t resume_after(Connection& c, const model::Job& job) {
  // A scheduled DAG's occurrences are DAG runs. A run a changed schedule
  // dropped does not stand: its occurrence may be made again.
  auto last = job.kind == "dag"
                  ? c.query("SELECT max(occurrence) FROM dag_runs WHERE dag_id = $1", {job.dag_id})
                  : c.query("SELECT max(occurrence) FROM runs WHERE job_id = $1 AND origin = 'schedule' "
                            "AND NOT (status = 'skipped' AND error LIKE 'dropped: %')",
                            {job.id});
  const int64_t now = now_us(c);
  return last.at(0).is_null(0) ? now : std::max(now, last[0].i64(0));
}

Dropped drop_occurrences(Connection& c, const std::string& job_id, const std::string& why, const std::string& which,
                         const Params& more) {
  const std::string pending =
      fmt::format("job_id = $1 AND status = 'pending' AND occurrence IS NOT NULL AND ({})", which);
  Params params{job_id};
  params.insert(params.end(), more.begin(), more.end());
  // Locked first (PostgreSQL: a claim skips them), so that what is counted
  // is what is skipped.
  c.query(fmt::format("SELECT id FROM runs WHERE {}{}", pending, c.row_lock("FOR UPDATE")), params);
  // An occurrence one of whose runs has started (a retry waiting, or
  // another agent's run of it) ran: it still counts.
  Dropped d;
  d.fired = c.query(fmt::format("SELECT count(DISTINCT runs.occurrence) FROM runs WHERE {} AND origin = 'schedule' "
                                "AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.job_id = runs.job_id "
                                "AND x.origin = 'schedule' AND x.occurrence = runs.occurrence AND x.attempts > 0)",
                                pending),
                    params)
                .at(0)
                .i64(0);
  params.push_back(why);
  d.runs = static_cast<int>(c.exec(
      fmt::format("UPDATE runs SET status = 'skipped', finished_at = NOW_US, error = ${} WHERE {}", params.size(),
                  pending),
      params));
  return d;
}

}  // namespace jobctl::store
