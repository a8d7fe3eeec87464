#pragma once
// A recurring job: its cron expression, zone and the policies that decide
// what happens to occurrences the scheduler missed (misfire) and to those
// that come due while an earlier one still runs (overlap).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/model/names.hpp"

namespace jobctl::model {

// Occurrences whose time passed while no scheduler ran.
enum class Misfire {
  skip,    // record them as skipped
  latest,  // run the most recent one, record the others as skipped
  all,     // run each one within the catch-up window, rate-limited
};

// An occurrence that comes due while the job is at max_concurrent.
enum class Overlap {
  skip,          // record it as skipped
  buffer_one,    // let one wait for a free slot; skip any later one
  buffer_all,    // let each wait, in order
  cancel_other,  // cancel the running one; this one starts when it ends
  allow,         // no limit (unless --max-concurrent sets one: then as buffer-all)
};

inline constexpr EnumNames<Misfire, 3> kMisfireNames{{
    {Misfire::skip, "skip"},
    {Misfire::latest, "latest"},
    {Misfire::all, "all"},
}};
inline constexpr EnumNames<Overlap, 5> kOverlapNames{{
    {Overlap::skip, "skip"},
    {Overlap::buffer_one, "buffer-one"},
    {Overlap::buffer_all, "buffer-all"},
    {Overlap::cancel_other, "cancel-other"},
    {Overlap::allow, "allow"},
}};

std::string_view to_string(Misfire m);
std::string_view to_string(Overlap o);
Misfire parse_misfire(std::string_view text);  // throws usage Error
Overlap parse_overlap(std::string_view text);  // throws usage Error

// The largest limit --max-concurrent (and a batch line's max_concurrent) takes.
inline constexpr int kMaxConcurrentLimit = 100'000;

struct ScheduleSpec {
  std::string cron;                      // the expression as typed
  std::string tz = "UTC";                // IANA zone it is evaluated in
  Misfire misfire = Misfire::latest;
  int64_t catchup_window_us = 3600'000'000;  // how far back `misfire all` reaches
  Overlap overlap = Overlap::skip;
  std::optional<int> max_concurrent;     // unset: 1, or no limit for allow
  int64_t jitter_us = 0;                 // each occurrence starts up to this much later
  // Its bounds: no occurrence before starts_at nor after ends_at (µs, both
  // inclusive), and at most max_runs occurrences made by the leader.
  std::optional<int64_t> starts_at_us;
  std::optional<int64_t> ends_at_us;
  std::optional<int64_t> max_runs;
};

inline constexpr int64_t kMaxRunsLimit = 1'000'000;

// The limit a schedule's runs are held to; 0 means none.
int effective_max_concurrent(const ScheduleSpec& s);

// Checks the numbers (the expression and zone are checked by
// cron::validate_schedule, which calls this). Throws usage Error.
void validate(const ScheduleSpec& s);

}  // namespace jobctl::model
