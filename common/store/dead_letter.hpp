#pragma once
// The dead-letter queue: dead runs, replay, dismiss, purge, and manual retry.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// Which dead runs a dead-letter query or a bulk replay covers.
struct DeadFilter {
  std::optional<std::string> queue;
  std::optional<int64_t> since;  // died at or after (store clock, µs)
  std::optional<int64_t> until;  // died before
  std::string before;            // only runs after this dead run in the list (a page's cursor); "" for none
  int limit = 1000;
};

class DeadLetter {
 public:
  explicit DeadLetter(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  // Dead runs neither replayed nor dismissed, newest death first, each
  // with its job.
  std::vector<model::JobView> dead_runs(const DeadFilter& filter);
  // For each dead run, a fresh pending run of its job with a fresh retry
  // budget, linked to it (replay_of); the dead run leaves the queue. All or
  // nothing: throws invalid_state naming the first run that is not dead
  // (or was run again already). A run named twice is replayed once.
  // Returns the new run ids, in the order named.
  std::vector<std::string> replay(const std::vector<std::string>& dead_run_ids);
  // Replays every dead run the filter covers, in one transaction.
  int replay_all(const DeadFilter& filter);
  // Takes dead runs out of the queue without running them again
  // (dismissed_at): they stay in history, for their job's and DAG run's
  // status, `dlq show` and `retry`, until gc. All or nothing, as replay:
  // throws not_found, or invalid_state for a run that is not dead or was
  // run again already. One dismissed already is left as it is. Returns the
  // runs this call dismissed, in the order named.
  std::vector<std::string> dismiss(const std::vector<std::string>& dead_run_ids);
  // Dismisses every dead run the filter covers (DAG nodes and runs of
  // deleted jobs too), in one transaction.
  int dismiss_all(const DeadFilter& filter);
  // Deletes dead runs (and their attempts) that died before now - age.
  int purge_dead(int64_t older_than_us);
  // Manual retry: a fresh run of a job whose latest run is dead, failed or
  // cancelled; for a job of --on-each, one for each agent's run of that
  // submit or occurrence that is (a fresh run on the same agent). Throws
  // not_found, or invalid_state when no such run is left (the job is
  // pending, running or succeeded). Returns the new run ids, by the ids of
  // the runs they retry.
  std::vector<std::string> retry_job(const std::string& job_id);

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
