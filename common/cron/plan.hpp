#pragma once
// What the scheduler does with one schedule at one tick: which
// occurrences become runs, which are recorded as skipped and why, and where
// the schedule resumes next time. A pure function of the schedule, its
// policies and the clock, so every misfire case is tested without a
// database.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cron/cron.hpp"
#include "common/model/job.hpp"
#include "common/model/schedule.hpp"

namespace jobctl::cron {

// Consecutive occurrences recorded as one skipped run.
struct SkippedSpan {
  int64_t first = 0;  // fire time of the first (µs)
  int64_t last = 0;
  int64_t count = 0;
  std::string reason;
};

struct Plan {
  std::vector<int64_t> fire;          // occurrences to materialise, in order
  std::vector<SkippedSpan> skipped;
  std::optional<int64_t> next_fire_at;  // where the next tick starts; none: never again
  bool more = false;                  // stopped at a limit: tick again soon
};

struct PlanInput {
  const Expr* expr = nullptr;
  const util::TimeZone* zone = nullptr;
  int64_t anchor_us = 0;
  model::Misfire misfire = model::Misfire::latest;
  int64_t catchup_window_us = 0;
  int64_t next_fire_at = 0;      // the first occurrence not materialised yet
  int64_t now_us = 0;
  int64_t horizon_us = 0;        // materialise occurrences up to now + horizon
  int64_t misfire_after_us = 0;  // an occurrence this far in the past was missed
  // The schedule's bounds (model::ScheduleSpec): nothing after ends_at, and
  // at most `remaining` occurrences fired. Reaching either ends it.
  std::optional<int64_t> ends_at_us;
  std::optional<int64_t> remaining;
};

// Bounds on one tick's work per schedule: a long outage of a per-second
// schedule is worked off over several ticks instead of one huge
// transaction, and `misfire all` starts at most kCatchUpPerTick missed
// occurrences per tick.
inline constexpr int kStepsPerTick = 20000;
inline constexpr int kCatchUpPerTick = 10;

Plan plan_occurrences(const PlanInput& in);

// Checks what the store cannot: the expression parses (`hash_key` seeds
// H), the zone exists, the numbers make sense, and, unless `jitter` is
// no, the jitter is no longer than the shortest gap between two
// occurrences (an update that leaves the timing as it was does not look
// again). Throws usage Error.
enum class JitterCheck { yes, no };
void validate_schedule(const model::ScheduleSpec& s, std::string_view hash_key,
                       JitterCheck jitter = JitterCheck::yes);

// What H in a schedule's expression hashes: the job's name, or its id when
// it has none.
std::string hash_key(const model::Job& job);
// The schedule's expression, parsed with its hash key. Throws usage Error.
Expr expr_of(const model::Job& job);
// The schedule's first occurrence after `after_us` in its zone (@every
// counts from its anchor) and inside its bounds: none when it will not fire
// again (past --ends-at, or --max-runs made). Throws usage Error when the
// expression or zone does not load.
std::optional<int64_t> next_occurrence(const model::Job& job, int64_t after_us);
// Where @every intervals count from for a schedule starting at `now_us`:
// its --starts-at when that is later.
int64_t anchor_of(const model::ScheduleSpec& s, int64_t now_us);
// The expression's own first occurrence after `after_us` (@every from the
// anchor), whatever the bounds: none when it never fires again.
std::optional<int64_t> next_of_expression(const model::Job& job, int64_t after_us);
// How many more occurrences the leader may make of it; none: no limit.
std::optional<int64_t> remaining_runs(const model::Job& job);

}  // namespace jobctl::cron
