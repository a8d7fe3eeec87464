#include "common/model/schedule.hpp"

#include <fmt/format.h>

#include "common/cron/cron.hpp"
#include "common/util/error.hpp"

namespace jobctl::model {

std::string_view to_string(Misfire m) {
  switch (m) {
    case Misfire::skip: return "skip";
    case Misfire::latest: return "latest";
    case Misfire::all: return "all";
  }
  return "latest";
}

std::string_view to_string(Overlap o) {
  switch (o) {
    case Overlap::skip: return "skip";
    case Overlap::buffer_one: return "buffer-one";
    case Overlap::buffer_all: return "buffer-all";
    case Overlap::cancel_other: return "cancel-other";
    case Overlap::allow: return "allow";
  }
  return "skip";
}

Misfire parse_misfire(std::string_view text) {
  for (Misfire m : {Misfire::skip, Misfire::latest, Misfire::all})
    if (to_string(m) == text) return m;
  throw usage_error(fmt::format("invalid misfire policy '{}'", text), "use skip, latest or all");
}

Overlap parse_overlap(std::string_view text) {
  for (Overlap o : {Overlap::skip, Overlap::buffer_one, Overlap::buffer_all, Overlap::cancel_other, Overlap::allow})
    if (to_string(o) == text) return o;
  throw usage_error(fmt::format("invalid overlap policy '{}'", text),
                    "use skip, buffer-one, buffer-all, cancel-other or allow");
}

int effective_max_concurrent(const ScheduleSpec& s) {
  if (s.max_concurrent) return *s.max_concurrent;
  return s.overlap == Overlap::allow ? 0 : 1;
}

void validate(const ScheduleSpec& s, std::string_view hash_key) {
  cron::Expr::parse(s.cron, hash_key);
  util::TimeZone::locate(s.tz);
  if (s.max_concurrent && *s.max_concurrent < 1)
    throw usage_error(fmt::format("--max-concurrent must be at least 1, not {}", *s.max_concurrent),
                      "leave it out for the policy's default");
  if (s.jitter_us < 0) throw usage_error("--jitter must not be negative");
  if (s.catchup_window_us <= 0) throw usage_error("--catchup-window must be positive", "for example --catchup-window 6h");
}

}  // namespace jobctl::model
