#pragma once
// The leader agent's scheduler: the scheduler lease, turning due
// occurrences into runs, and the overlap policies that act.
// Every method follows the contract in store.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/store/sql.hpp"

namespace jobctl::store {

// How the leader materialises schedules (jobagent flags).
struct SchedulerSettings {
  int64_t horizon_us = 60'000'000;       // materialise occurrences this far ahead
  int64_t misfire_after_us = 60'000'000;  // an occurrence this late was missed
  int batch = 500;                        // schedules per transaction
};

struct MaterialiseResult {
  bool fenced = false;  // this agent no longer leads: nothing was written
  int schedules = 0;    // schedules looked at
  int64_t runs = 0;     // occurrences that became runs
  int64_t skipped = 0;  // occurrences recorded as skipped (misfire)
  bool more = false;    // stopped at a limit: call again soon
  std::vector<std::string> errors;  // schedules that could not be evaluated
};

class Scheduler {
 public:
  explicit Scheduler(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  // Takes or renews the scheduler lease for `lease_us`, and publishes the
  // leader's misfire threshold with it (missed_occurrence). Returns the
  // epoch while this worker leads; nothing when another agent does.
  std::optional<int64_t> lead(const std::string& worker_id, int64_t lease_us,
                              int64_t misfire_after_us = SchedulerSettings{}.misfire_after_us);
  // Gives the lease up (agent shutdown), so another agent takes over at once.
  void resign(const std::string& worker_id);
  // Turns the occurrences of due schedules into runs (see cron/plan.hpp),
  // fenced by the lease: writes nothing unless `worker_id` still leads at
  // `epoch`. On PostgreSQL NOTIFYs the queues that got runs.
  MaterialiseResult materialise(const std::string& worker_id, int64_t epoch, const SchedulerSettings& settings);
  // The overlap policies that act rather than wait: skips due occurrences
  // (skip, buffer-one) and asks running ones to stop (cancel-other); and
  // records the missed occurrences (missed_occurrence) as skipped.
  // Returns how many runs it changed.
  int enforce_overlap();

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
