#pragma once
// The store's health and upkeep: the schema, workers, stats, stuck and
// failed runs, doctor, and garbage collection.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// jobctl stats / check: which queue and how far back.
struct StatsFilter {
  std::optional<std::string> queue;  // all queues when unset
  int64_t window_us = 3'600'000'000;  // --since: what ended in the last this long
};

struct Percentiles {
  int64_t samples = 0;
  double p50 = 0, p95 = 0, p99 = 0;  // seconds
};

// One queue and priority: now, and over the window.
struct QueueStats {
  std::string queue;
  model::Priority priority = model::Priority::normal;
  int64_t window_us = 0;
  // Now.
  int64_t ready = 0;      // pending and due: waiting for an agent
  int64_t scheduled = 0;  // pending, due later (--at, --in, retries, schedule occurrences made ahead)
  int64_t blocked = 0;    // DAG nodes waiting for their parents
  int64_t running = 0;
  std::optional<int64_t> oldest_ready_us;  // how long the longest-waiting due run has waited
  int64_t dead_letter = 0;                 // in the dead-letter queue (dead, neither replayed nor dismissed), of any age
  int64_t held = 0;                        // pending runs of paused jobs (not in ready, scheduled or oldest)
  // Over the window.
  int64_t succeeded = 0;  // runs that ended succeeded
  int64_t dead = 0;       // runs that went to the dead-letter queue
  int64_t cancelled = 0;
  int64_t succeeded_attempts = 0;
  int64_t failed_attempts = 0;  // attempts that failed (retried or not)
  Percentiles lag_s;            // claim − due, of the attempts that started
  Percentiles duration_s;       // of the attempts that ended
};

// One step of a time series over the stats window (the console's charts).
struct SeriesPoint {
  int64_t at = 0;         // the start of the step
  int64_t succeeded = 0;  // runs that ended succeeded in the step
  int64_t dead = 0;       // runs that went to the dead-letter queue
  int64_t succeeded_attempts = 0;
  int64_t failed_attempts = 0;
  std::optional<double> lag_p99_s;  // of the attempts that started in the step (sampled as stats does)
};

// What GET /metrics shows of the whole store, now: per queue, and the fleet.
struct QueueGauges {
  std::string queue;
  int64_t ready = 0;    // pending, due, job not paused
  int64_t later = 0;    // pending, due later (--at, --in, a retry's wait, occurrences made ahead)
  int64_t running = 0;
  std::optional<int64_t> oldest_ready_us;  // how long the longest-waiting ready run has waited
  int64_t dead_letter = 0;                 // in the dead-letter queue (dead, neither replayed nor dismissed)
};
struct StoreGauges {
  std::vector<QueueGauges> queues;  // by name: every queue with runs, defaults or limits
  int64_t workers_active = 0;       // agents heartbeating within their lease and taking work
  int64_t workers_draining = 0;     // the same, draining: finishing what they run, claiming nothing
  bool leader_present = false;      // an agent holds the scheduler lease
};

// A running run that looks stuck (jobctl ls --stuck), with why.
struct StuckRun {
  model::JobView view;     // the job, with the stuck run as latest_run
  std::string why;
  int64_t running_us = 0;  // since its attempt started
  std::string worker;      // the agent running it, by name
};

// A failed attempt, for jobctl top.
struct FailedAttempt {
  std::string job_id;
  std::string job_name;
  std::string queue;
  std::string run_id;
  int attempt = 0;
  int64_t finished_at = 0;
  std::string error;
};

// One finding of jobctl doctor.
struct Finding {
  enum class Level { ok, warn, fail };
  std::string name;    // what was looked at: "schema", "table runs", "WAL", …
  Level level = Level::ok;
  std::string detail;  // what was found
  std::string hint;    // what to do about it (warn, fail)
};

// What jobctl gc removed.
struct GcResult {
  int64_t runs = 0;
  int64_t attempts = 0;
  int64_t jobs = 0;      // one-off jobs left with no run
  int64_t dag_runs = 0;
  int64_t batches = 0;   // transactions
  bool more = false;     // stopped at max_batches: call again
};

class Admin {
 public:
  explicit Admin(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  int schema_version();
  int migrate();  // see migrations.hpp
  std::vector<model::Worker> list_workers();
  // The store's own health (jobctl doctor): schema, clock skew to this
  // host, stale agents, and per engine vacuum, long transactions and
  // indexes (PostgreSQL) or file, WAL and integrity (SQLite).
  std::vector<Finding> doctor();
  // The latest failed attempts of the last `within_us`, newest first.
  std::vector<FailedAttempt> recent_failures(int limit, int64_t within_us);
  // Running runs past their --timeout plus their agent's lease (the agent
  // should have killed them), or with no progress report (jobctl progress;
  // else since the attempt started) for `no_progress_us`. Longest first.
  std::vector<StuckRun> stuck_runs(int64_t no_progress_us, int limit, const std::optional<std::string>& queue = {});
  // Per queue and priority, sorted so; see QueueStats. One read transaction.
  std::vector<QueueStats> stats(const StatsFilter& filter);
  // The window of `filter` cut into steps of `step_us`, oldest first, each
  // step present (zeros when nothing happened). One read transaction.
  std::vector<SeriesPoint> series(const StatsFilter& filter, int64_t step_us);
  // StoreGauges, in one statement: cheap enough to scrape every second.
  StoreGauges gauges();
  // Removes finished history older than `older_than_us` (see store_gc.cpp
  // for what stays), at most `batch` runs or DAG runs per transaction and
  // `max_batches` transactions per call.
  GcResult gc(int64_t older_than_us, int batch = 5000, int64_t max_batches = INT64_MAX);

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
