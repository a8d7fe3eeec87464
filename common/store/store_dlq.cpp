// Store: the dead-letter queue, manual retry and pause.
//
// A dead run stays dead forever (it is history). Replaying it inserts a new
// pending run of the same job, linked by replay_of, and stamps the dead
// one's replayed_at, which takes it out of the queue; dismissing it stamps
// dismissed_at, which takes it out without a new run.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "common/store/dead_letter.hpp"
#include "common/store/internal.hpp"
#include "common/store/jobs.hpp"
#include "common/store/new_runs.hpp"
#include "common/store/rows.hpp"
#include "common/store/wakeups.hpp"
#include "common/util/error.hpp"
#include "common/util/ulid.hpp"

namespace jobctl::store {
namespace {

const std::string kDeadWhere =
    std::string(kInDeadLetter) + " AND (r.queue = $1 OR $1 = '') "
    "AND (r.finished_at >= $2 OR $2 < 0) AND (r.finished_at < $3 OR $3 < 0) "
    // After the cursor in the list's order (newest death first, then id).
    "AND ($5 = '' OR r.finished_at < (SELECT c.finished_at FROM runs c WHERE c.id = $5) "
    "OR (r.finished_at = (SELECT c.finished_at FROM runs c WHERE c.id = $5) AND r.id < $5))";

Params dead_params(const DeadFilter& f) {
  return {f.queue.value_or(""), f.since.value_or(-1), f.until.value_or(-1), int64_t{f.limit}, f.before};
}

// For a bulk call: every dead run the filter covers, not one page.
Params every_dead_params(DeadFilter f) {
  f.limit = 1'000'000'000;
  return dead_params(f);
}

// Whether a run made again from `run_id` (of job `job_id`) is still
// there: its replayed_at says it was run again, but `dlq purge` or gc may
// have removed that run since, leaving the job nothing to retry.
bool replay_kept(Connection& c, const std::string& job_id, const std::string& run_id) {
  return !c.query("SELECT 1 FROM runs WHERE job_id = $1 AND replay_of = $2", {job_id, run_id}).empty();
}

}  // namespace

bool Jobs::set_paused(const std::string& job_id, bool paused) {
  Transaction tx(*conn_, TxMode::write);
  auto rows = conn_->query("SELECT paused, deleted_at, queue FROM jobs WHERE id = $1", {job_id});
  if (rows.empty()) throw Error(ExitCode::not_found, fmt::format("no job with id '{}'", job_id), "list jobs with `jobctl ls`");
  if (!rows[0].is_null(1)) require_not_deleted(*conn_, job_id, paused ? "paused" : "resumed");
  if ((rows[0].i64(0) != 0) == paused) return false;
  // A paused schedule leaves the leader's scan (next_fire_at NULL); resume
  // starts it again from now.
  conn_->exec("UPDATE jobs SET paused = $2, updated_at = NOW_US, "
              "next_fire_at = CASE WHEN $2 = 1 THEN NULL ELSE next_fire_at END WHERE id = $1",
              {job_id, int64_t{paused ? 1 : 0}});
  if (!paused) restart_schedule(*conn_, job_id, true);
  if (!paused) wake_queue(*conn_, rows[0].text(2));
  audit(*conn_, actor_, job_id, paused ? "pause" : "resume");
  tx.commit();
  return true;
}

std::vector<model::JobView> DeadLetter::dead_runs(const DeadFilter& filter) {
  std::string sql = fmt::format("SELECT {}, {} FROM runs r JOIN jobs j ON j.id = r.job_id WHERE {} "
                                "ORDER BY r.finished_at DESC, r.id DESC LIMIT $4",
                                select_list(kJobs), select_list(kRuns), kDeadWhere);
  std::vector<model::JobView> out;
  for (const auto& row : conn_->query(sql, dead_params(filter)))
    out.push_back(model::JobView{job_from_row(row), run_from_row(row, kJobs.size())});
  return out;
}

std::optional<std::string> rerun(Connection& c, const std::string& actor, const std::string& run_id,
                                 const char* action) {
  // A DAG node runs again only with its DAG run, behind its parents.
  auto dag = c.query("SELECT dag_run_id FROM runs WHERE id = $1 AND dag_run_id IS NOT NULL", {run_id});
  if (!dag.empty())
    throw Error(ExitCode::invalid_state,
                fmt::format("run {} is a node of DAG run {}: it is not run again on its own", run_id, dag[0].text(0)),
                fmt::format("`jobctl dag retry {}` runs its failed and cancelled nodes again", dag[0].text(0)));
  // The old run and its job, locked: a concurrent `jobctl gc` either
  // removed them already (not found) or waits, and then finds the new run.
  // A concurrent replay or retry of it waits too, and then reads the
  // replayed_at it set (PostgreSQL reads a locked row's newest version):
  // read before the lock, each made a run of its own, and they ran side by side.
  // So is a delete, which cancels the job's pending runs: read before the
  // lock, a job deleted meanwhile got a run nobody would claim (a tester).
  auto old = c.query("SELECT r.replayed_at, j.deleted_at, r.job_id FROM runs r JOIN jobs j ON j.id = r.job_id "
                     "WHERE r.id = $1" + c.row_lock("FOR UPDATE OF r, j"),
                     {run_id});
  if (old.empty()) throw Error(ExitCode::not_found, fmt::format("run {} is gone (removed by jobctl gc?)", run_id));
  if (!old[0].is_null(1) || (!old[0].is_null(0) && replay_kept(c, old[0].text(2), run_id))) return std::nullopt;
  std::string fresh = util::new_ulid();
  // A fan-out run's replay runs on the same agent.
  auto rows = c.query(
      fmt::format("INSERT INTO runs (id, job_id, status, available_at, created_at, replay_of, pinned_to, {}) "
                  "SELECT $2, j.id, 'pending', NOW_US, NOW_US, r.id, r.pinned_to, {} "
                  "FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.id = $1 RETURNING queue, job_id",
                  kRunFromJob.columns, kRunFromJob.values),
      {run_id, fresh});
  c.exec("UPDATE runs SET replayed_at = NOW_US WHERE id = $1", {run_id});
  wake_queue(c, rows.at(0).text(0));
  audit(c, actor, rows.at(0).text(1), action, nlohmann::json{{"run", fresh}, {"of", run_id}}.dump());
  return fresh;
}

std::string rerun_once(Connection& c, const std::string& actor, const std::string& run_id, const char* action) {
  if (auto fresh = rerun(c, actor, run_id, action)) return *fresh;
  const bool replay = std::string_view(action) == "replay";
  // rerun holds the job's lock now: its deleted_at is the last word.
  require_not_deleted(c, c.query("SELECT job_id FROM runs WHERE id = $1", {run_id}).at(0).text(0),
                      replay ? "replayed" : "retried");
  throw Error(ExitCode::invalid_state,
              fmt::format("run {} was run again already (by a replay or a retry): nothing was {}", run_id,
                          replay ? "replayed" : "retried"),
              "see its new run with `jobctl runs` on its job");
}

namespace {

// The dead runs named, each once, in the order named: a run named twice is
// acted on once, not refused as done already. They are locked first, with
// their jobs, in the order of their ids, as the bulk calls lock them: in
// the order named, two calls at once could each wait for the other.
// Throws not_found, or invalid_state for a run that is not dead or was run
// again already, `done` ("replayed") saying what was not done.
struct NamedDeadRun {
  std::string id, job_id;
  bool dismissed = false;
};

std::vector<NamedDeadRun> lock_named_dead_runs(Connection& c, const std::vector<std::string>& ids, const char* done) {
  std::vector<std::string> sorted(ids);
  std::sort(sorted.begin(), sorted.end());
  c.query("SELECT r.id FROM runs r JOIN jobs j ON j.id = r.job_id WHERE " + c.in_list("r.id", 1) + " ORDER BY r.id" +
              c.row_lock("FOR UPDATE OF r, j"),
          {c.list(sorted)});
  std::vector<NamedDeadRun> out;
  std::set<std::string> seen;
  for (const auto& id : ids) {
    if (!seen.insert(id).second) continue;
    auto rows = c.query("SELECT status, replayed_at, dismissed_at, job_id FROM runs WHERE id = $1", {id});
    if (rows.empty()) throw Error(ExitCode::not_found, fmt::format("no run with id '{}'", id));
    if (rows[0].text(0) != "dead")
      throw Error(ExitCode::invalid_state,
                  fmt::format("run {} is {}, not dead: nothing was {}", id, rows[0].text(0), done),
                  "list the dead-letter queue with `jobctl dlq ls`");
    if (!rows[0].is_null(1) && replay_kept(c, rows[0].text(3), id))
      throw Error(ExitCode::invalid_state,
                  fmt::format("run {} was run again already (by a replay or a retry): nothing was {}", id, done),
                  "see its new run with `jobctl runs` on its job");
    out.push_back({id, rows[0].text(3), !rows[0].is_null(2)});
  }
  return out;
}

}  // namespace

std::vector<std::string> DeadLetter::replay(const std::vector<std::string>& dead_run_ids) {
  Transaction tx(*conn_, TxMode::write);
  std::vector<std::string> fresh;
  for (const auto& run : lock_named_dead_runs(*conn_, dead_run_ids, "replayed")) {
    require_not_deleted(*conn_, run.job_id, "replayed");
    fresh.push_back(rerun_once(*conn_, actor_, run.id, "replay"));
  }
  tx.commit();
  return fresh;
}

int DeadLetter::replay_all(const DeadFilter& filter) {
  Transaction tx(*conn_, TxMode::write);
  // Dead runs of deleted jobs stay where they are. Locked as they are
  // chosen, in the order of their ids, so that two replays at once lock
  // them in the same order. PostgreSQL: a dismissal of one under way is
  // waited for, and the run, dismissed by then, no longer qualifies
  // (chosen unlocked, it was replayed and dismissed both).
  auto rows = conn_->query(fmt::format("SELECT r.id FROM runs r JOIN jobs j ON j.id = r.job_id "
                                       "WHERE {} AND j.deleted_at IS NULL AND r.dag_run_id IS NULL ORDER BY r.id LIMIT $4{}",
                                       kDeadWhere, conn_->row_lock("FOR UPDATE OF r")),
                           every_dead_params(filter));
  // One that another replay took meanwhile is left to it.
  int replayed = 0;
  for (const auto& row : rows)
    if (rerun(*conn_, actor_, row.text(0), "replay")) ++replayed;
  tx.commit();
  return replayed;
}

std::vector<std::string> DeadLetter::dismiss(const std::vector<std::string>& dead_run_ids) {
  Transaction tx(*conn_, TxMode::write);
  std::vector<std::string> dismissed;
  for (const auto& run : lock_named_dead_runs(*conn_, dead_run_ids, "dismissed")) {
    if (run.dismissed) continue;
    conn_->exec("UPDATE runs SET dismissed_at = NOW_US WHERE id = $1", {run.id});
    audit(*conn_, actor_, run.job_id, "dismiss", nlohmann::json{{"run", run.id}}.dump());
    dismissed.push_back(run.id);
  }
  tx.commit();
  return dismissed;
}

int DeadLetter::dismiss_all(const DeadFilter& filter) {
  Transaction tx(*conn_, TxMode::write);
  // Locked as they are chosen, in the order of their ids. PostgreSQL: a
  // replay of one under way is waited for, and the run, replayed by then,
  // no longer qualifies. SQLite: one writer.
  auto rows = conn_->query(fmt::format("SELECT r.id, r.job_id FROM runs r WHERE {} ORDER BY r.id LIMIT $4{}", kDeadWhere,
                                       conn_->row_lock("FOR UPDATE")),
                           every_dead_params(filter));
  int dismissed = 0;
  for (const auto& row : rows) {
    conn_->exec("UPDATE runs SET dismissed_at = NOW_US WHERE id = $1", {row.text(0)});
    audit(*conn_, actor_, row.text(1), "dismiss", nlohmann::json{{"run", row.text(0)}}.dump());
    ++dismissed;
  }
  tx.commit();
  return dismissed;
}

// A purge's history entry names at most this many of a job's runs.
constexpr size_t kPurgedRunsShown = 100;

int DeadLetter::purge_dead(int64_t older_than_us) {
  Transaction tx(*conn_, TxMode::write);
  // A DAG node's runs stay: its DAG run's status and retry read them.
  // PostgreSQL: the runs are locked as they are chosen, so a replay under
  // way (it locks the run it replays) is waited for, and the run, replayed
  // by then, no longer qualifies. Two statements with the test in each
  // deleted the runs a replay had just replayed, whose new runs then named
  // a run that was gone (a tester). SQLite: one writer.
  std::vector<std::string> runs;
  std::set<std::string> jobs;
  std::map<std::string, std::vector<std::string>> runs_of_job;
  for (const auto& row : conn_->query(fmt::format("SELECT r.id, r.job_id FROM runs r WHERE {} "
                                                  "AND r.finished_at < NOW_US - $1 AND r.dag_run_id IS NULL "
                                                  "ORDER BY r.id{}",
                                                  kInDeadLetter, conn_->row_lock("FOR UPDATE")),
                                      {older_than_us})) {
    runs.push_back(row.text(0));
    jobs.insert(row.text(1));
    runs_of_job[row.text(1)].push_back(row.text(0));
  }
  if (!runs.empty()) {
    const auto ids = conn_->list(runs);
    conn_->exec("DELETE FROM attempts WHERE " + conn_->in_list("run_id", 1), {ids});
    conn_->exec("DELETE FROM runs WHERE " + conn_->in_list("id", 1), {ids});
    // A one-off job goes with its last run, as under gc: left with none,
    // `jobctl wait` waited for ever and `retry` had nothing to retry.
    delete_jobs_left_without_runs(*conn_, jobs);
    // A job that stays (a schedule's, or one run again before) keeps a
    // record of the dead runs it lost: how many, and the first of them
    // (a per-second schedule failing for a day has 86,400).
    for (const auto& row : conn_->query("SELECT id FROM jobs WHERE " + conn_->in_list("id", 1),
                                        {conn_->list({jobs.begin(), jobs.end()})})) {
      const auto& purged = runs_of_job.at(row.text(0));
      const auto shown = static_cast<std::ptrdiff_t>(std::min(purged.size(), kPurgedRunsShown));
      const std::vector<std::string> named(purged.begin(), purged.begin() + shown);
      audit(*conn_, actor_, row.text(0), "purge", nlohmann::json{{"count", purged.size()}, {"runs", named}}.dump());
    }
  }
  tx.commit();
  return static_cast<int>(runs.size());
}

std::vector<std::string> DeadLetter::retry_job(const std::string& job_id) {
  Transaction tx(*conn_, TxMode::write);
  const auto [run_id, status] = latest_run_for(*conn_, job_id, "retry");
  require_not_deleted(*conn_, job_id, "retried");
  // A run of --on-each is retried with its siblings, as cancel takes them:
  // the runs of the same submit or occurrence on the other agents. Those
  // that ended dead, failed or cancelled and were not run again each get a
  // run on their agent; the latest alone was retried, or refused when it
  // had succeeded while others failed. In the order of their ids, the
  // order two retries at once lock them in.
  // A run whose replay `dlq purge` removed is ended and not run again:
  // the job's latest run is then dead, and retry is how it runs again.
  auto ended = conn_->query(fmt::format("SELECT s.id FROM runs s JOIN runs l ON l.id = $1 WHERE s.job_id = $2 AND "
                                        "(s.id = $1 OR ({})) AND s.status IN ('dead', 'failed', 'cancelled') "
                                        "AND (s.replayed_at IS NULL OR NOT EXISTS (SELECT 1 FROM runs x "
                                        "WHERE x.job_id = s.job_id AND x.replay_of = s.id)) ORDER BY s.id",
                                        kSiblingRuns),
                            {run_id, job_id});
  const bool ended_latest = status == model::RunStatus::dead || status == model::RunStatus::failed ||
                            status == model::RunStatus::cancelled;
  if (ended.empty() && ended_latest)  // another retry or a replay made its run first
    throw Error(ExitCode::invalid_state,
                fmt::format("job {} was run again already (by a replay or a retry): nothing was retried", job_id),
                "see its new run with `jobctl runs`");
  if (ended.empty())
    throw Error(ExitCode::invalid_state, fmt::format("job {} is {}: only a dead, failed or cancelled job can be retried",
                                                     job_id, model::to_string(status)));
  std::vector<std::string> fresh;
  for (const auto& row : ended) fresh.push_back(rerun_once(*conn_, actor_, row.text(0), "retry"));
  tx.commit();
  return fresh;
}

}  // namespace jobctl::store
