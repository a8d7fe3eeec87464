// parse_at (time.hpp): local times in IANA zones, through date/tz and the
// system tzdata.
#include <date/tz.h>

#include <fmt/format.h>

#include "common/util/error.hpp"
#include "common/util/time.hpp"

namespace jobctl::util {

int64_t parse_at(const std::string& text, const std::string& tz, const char* flag) {
  auto t = parse_datetime(text, flag);
  if (!t)
    throw usage_error(fmt::format("invalid time '{}' for {}", text, flag),
                      "write 2026-11-22T03:00:00Z, 2026-11-22T04:00:00+01:00, or '2026-11-22 04:00' with --tz");
  if (t->offset_s) {
    if (!tz.empty()) throw usage_error(fmt::format("{} '{}' carries its own offset: drop --tz", flag, text));
    return parse_time_arg(text, flag, 0);
  }
  const date::time_zone* zone = nullptr;
  try {
    zone = tz.empty() ? date::current_zone() : date::locate_zone(tz);
  } catch (const std::exception&) {
    throw usage_error(fmt::format("unknown time zone '{}'", tz), "use an IANA name like Europe/Berlin or UTC");
  }
  using namespace std::chrono;
  auto local = date::local_days{date::year{t->year} / t->month / t->day} + hours{t->hour} + minutes{t->minute} +
               seconds{t->second};
  auto info = zone->get_info(local);
  if (info.result == date::local_info::nonexistent)
    throw usage_error(fmt::format("{} '{}' does not exist in {}: the clocks skip it", flag, text, zone->name()),
                      "pick a time outside the daylight-saving gap");
  // Unique, or ambiguous (the repeated hour): the first occurrence.
  auto sys = local.time_since_epoch() - info.first.offset;
  return duration_cast<microseconds>(sys).count() + t->micros;
}

}  // namespace jobctl::util
