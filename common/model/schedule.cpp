#include "common/model/schedule.hpp"

#include <fmt/format.h>

#include "common/util/error.hpp"

namespace jobctl::model {

std::string_view to_string(Misfire m) { return name_of(kMisfireNames, m); }
std::string_view to_string(Overlap o) { return name_of(kOverlapNames, o); }
Misfire parse_misfire(std::string_view text) { return parse_name(kMisfireNames, text, "misfire policy"); }
Overlap parse_overlap(std::string_view text) { return parse_name(kOverlapNames, text, "overlap policy"); }

int effective_max_concurrent(const ScheduleSpec& s) {
  if (s.max_concurrent) return *s.max_concurrent;
  return s.overlap == Overlap::allow ? 0 : 1;
}

void validate(const ScheduleSpec& s) {
  if (s.max_concurrent && (*s.max_concurrent < 1 || *s.max_concurrent > kMaxConcurrentLimit))
    throw usage_error(fmt::format("--max-concurrent must be 1 to {}, not {}", kMaxConcurrentLimit, *s.max_concurrent),
                      "leave it out for the policy's default");
  if (s.jitter_us < 0) throw usage_error("--jitter must not be negative");
  if (s.max_runs && (*s.max_runs < 1 || *s.max_runs > kMaxRunsLimit))
    throw usage_error(fmt::format("--max-runs must be 1 to {}, not {}", kMaxRunsLimit, *s.max_runs),
                      "leave it out for no limit");
  if (s.starts_at_us && s.ends_at_us && *s.ends_at_us < *s.starts_at_us)
    throw usage_error("--ends-at is before --starts-at", "give the later time as --ends-at");
  if (s.catchup_window_us <= 0) throw usage_error("--catchup-window must be positive", "for example --catchup-window 6h");
}

}  // namespace jobctl::model
