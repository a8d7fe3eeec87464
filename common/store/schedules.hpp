#pragma once
// Schedules as jobctl sees them: list, their runs, trigger, backfill.
// Every method follows the contract in store.hpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/model/job.hpp"
#include "common/store/sql.hpp"

namespace jobctl::store {

// A schedule with its most recent run that is due (not a future occurrence).
struct ScheduleView {
  model::Job job;
  std::optional<model::Run> last_run;
};

struct BackfillResult {
  int64_t occurrences = 0;  // in the span
  int64_t created = 0;      // new runs (the others had one already)
  bool cut = false;         // the span reached past the schedule's --starts-at or --ends-at: it was cut to them
};

// Most occurrences one backfill may create.
inline constexpr size_t kMaxBackfill = 10000;

class Schedules {
 public:
  explicit Schedules(Connection& conn, std::string actor = "unknown") : conn_(&conn), actor_(std::move(actor)) {}

  std::vector<ScheduleView> list_schedules();  // by next fire time
  // The schedule's runs that are due or done, newest first. Throws
  // not_found, or invalid_state when the job is not a schedule.
  std::vector<model::Run> schedule_runs(const std::string& job_id, int limit);
  // One run now. Unless `force`, obeys the overlap policy: throws
  // invalid_state when it would be skipped. Returns the run id.
  std::string trigger(const std::string& job_id, bool force);
  // Runs for the occurrences in [from, to] that have none yet. Throws
  // usage Error when `to` is before `from` or later than the database's
  // now, or the span holds more than kMaxBackfill occurrences.
  BackfillResult backfill(const std::string& job_id, int64_t from_us, int64_t to_us);

 private:
  Connection* conn_;
  std::string actor_;  // who changes are recorded as
};

}  // namespace jobctl::store
