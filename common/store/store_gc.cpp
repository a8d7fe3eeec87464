// Store: history retention (jobctl gc, jobagent --gc-older-than). Finished
// runs and their attempts older than the retention go, a bounded batch per
// transaction, so neither the store nor a single transaction grows without
// end and agents keep claiming in between.
//
// What stays, whatever its age: runs still waiting or running; dead runs in
// the dead-letter queue (neither replayed nor dismissed: `jobctl dlq purge`
// removes those); a DAG run's node runs until the whole DAG run has ended
// before the cutoff (its status and `dag retry` read them), and all of a
// DAG run that has a node in the dead-letter queue. A one-off job goes with
// its last run, with its audit trail; schedules, DAGs and their node jobs
// stay.
#include <fmt/format.h>

#include <set>

#include "common/store/admin.hpp"
#include "common/store/internal.hpp"
#include "common/store/rows.hpp"
#include "common/util/error.hpp"

namespace jobctl::store {
namespace {

constexpr const char* kDoneRuns =
    "SELECT r.id, r.job_id FROM runs r WHERE r.finished_at < $1 AND r.dag_run_id IS NULL "
    "AND r.status IN ('succeeded', 'failed', 'cancelled', 'skipped', 'dead') AND NOT {} "
    "ORDER BY r.finished_at LIMIT $2{}";

// DAG runs whose every node run has ended, the last before the cutoff,
// with no node in the dead-letter queue.
constexpr const char* kDoneDagRuns =
    "SELECT d.id FROM dag_runs d WHERE d.created_at < $1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE "
    "r.dag_run_id = d.id AND (r.finished_at IS NULL OR r.finished_at >= $1 OR {})) ORDER BY d.created_at LIMIT $2{}";

}  // namespace

int64_t delete_jobs_left_without_runs(Connection& c, const std::set<std::string>& jobs) {
  if (jobs.empty()) return 0;
  // Their rows are locked first, so a run being added to one is waited for.
  const auto ids = c.list({jobs.begin(), jobs.end()});
  c.query("SELECT id FROM jobs WHERE " + c.in_list("id", 1) + c.row_lock("FOR UPDATE"), {ids});
  auto gone = c.query("DELETE FROM jobs WHERE " + c.in_list("id", 1) +
                          " AND kind IN ('job', 'notification') AND cron IS NULL AND NOT EXISTS "
                          "(SELECT 1 FROM runs r WHERE r.job_id = jobs.id) RETURNING id",
                      {ids});
  std::vector<std::string> gone_ids;
  for (const auto& row : gone) gone_ids.push_back(row.text(0));
  if (!gone_ids.empty()) c.exec("DELETE FROM job_events WHERE " + c.in_list("job_id", 1), {c.list(gone_ids)});
  return static_cast<int64_t>(gone_ids.size());
}

GcResult Admin::gc(int64_t older_than_us, int batch, int64_t max_batches) {
  GcResult total;
  if (older_than_us <= 0) throw usage_error("--older-than must be longer than 0s", "e.g. --older-than 30d");
  const int64_t cutoff = now_us(*conn_) - older_than_us;
  // PostgreSQL: the rows to delete are locked as they are chosen, and ones
  // another transaction holds are left for next time. A replay (which locks
  // the run it replays) and a `dag retry` (which locks its DAG run) thus
  // either finish first, and the row no longer qualifies, or wait for gc
  // and find it gone; nothing they add is removed. SQLite: one writer.
  const std::string lock = conn_->row_lock("FOR UPDATE SKIP LOCKED");
  const std::string lock_dag = conn_->row_lock("FOR UPDATE OF d SKIP LOCKED");
  // Plain runs, a batch at a time.
  for (;;) {
    if (total.batches >= max_batches) {
      total.more = true;
      return total;
    }
    Transaction tx(*conn_, TxMode::write);
    std::vector<std::string> runs;
    std::set<std::string> jobs;
    for (const auto& row : conn_->query(fmt::format(kDoneRuns, kInDeadLetter, lock), {cutoff, int64_t{batch}})) {
      runs.push_back(row.text(0));
      jobs.insert(row.text(1));
    }
    if (runs.empty()) break;
    auto ids = conn_->list(runs);
    total.attempts += conn_->exec("DELETE FROM attempts WHERE " + conn_->in_list("run_id", 1), {ids});
    total.runs += conn_->exec("DELETE FROM runs WHERE " + conn_->in_list("id", 1), {ids});
    total.jobs += delete_jobs_left_without_runs(*conn_, jobs);
    tx.commit();
    ++total.batches;
    if (static_cast<int>(runs.size()) < batch) break;
  }
  // Whole DAG runs.
  for (;;) {
    if (total.batches >= max_batches) {
      total.more = true;
      return total;
    }
    Transaction tx(*conn_, TxMode::write);
    std::vector<std::string> dag_runs;
    for (const auto& row : conn_->query(fmt::format(kDoneDagRuns, kInDeadLetter, lock_dag), {cutoff, int64_t{batch}}))
      dag_runs.push_back(row.text(0));
    if (dag_runs.empty()) break;
    auto ids = conn_->list(dag_runs);
    total.attempts += conn_->exec(
        "DELETE FROM attempts WHERE run_id IN (SELECT id FROM runs WHERE " + conn_->in_list("dag_run_id", 1) + ")",
        {ids});
    total.runs += conn_->exec("DELETE FROM runs WHERE " + conn_->in_list("dag_run_id", 1), {ids});
    total.dag_runs += conn_->exec("DELETE FROM dag_runs WHERE " + conn_->in_list("id", 1), {ids});
    tx.commit();
    ++total.batches;
    if (static_cast<int>(dag_runs.size()) < batch) break;
  }
  return total;
}

}  // namespace jobctl::store
