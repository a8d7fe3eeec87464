// Local times in IANA zones (time.hpp): parse_at and format_local, through
// TimeZone (tz.hpp), so a time after 2038 follows the zone's rule too.
#include <fmt/format.h>

#include "common/util/civil.hpp"
#include "common/util/error.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"

namespace jobctl::util {

int64_t parse_at(const std::string& text, const std::string& tz, const char* flag, OwnOffset own) {
  auto t = parse_datetime(text, flag);
  if (!t)
    throw usage_error(fmt::format("invalid time '{}' for {}", text, flag),
                      "write 2026-11-22T03:00:00Z, 2026-11-22T04:00:00+01:00, or '2026-11-22 04:00' with --tz");
  if (t->offset_s) {
    if (!tz.empty() && own == OwnOffset::conflicts) throw usage_error(fmt::format("{} '{}' carries its own offset: drop --tz", flag, text));
    return parse_time_arg(text, flag, 0);
  }
  auto zone = TimeZone::locate(tz);
  const int64_t local = days_from_civil(t->year, t->month, t->day) * kSecondsPerDay + t->hour * 3600 + t->minute * 60 + t->second;
  auto resolved = zone->resolve(local);
  if (resolved.kind == TimeZone::Local::Kind::gap)
    throw usage_error(fmt::format("{} '{}' does not exist in {}: the clocks skip it", flag, text, zone->name()),
                      "pick a time outside the daylight-saving gap");
  // Unique, or the repeated hour: its first occurrence.
  return resolved.first * 1'000'000 + t->micros;
}

std::string format_local(int64_t micros, const TimeZone& zone) {
  const int64_t s = floor_div(micros, 1'000'000);
  const int64_t local = s + zone.offset_at(s);
  const int64_t day = floor_div(local, kSecondsPerDay);
  const int64_t sod = local - day * kSecondsPerDay;
  const Civil c = civil_from_days(day);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} {}", c.year, c.month, c.day, sod / 3600, sod / 60 % 60, sod % 60,
                     zone.abbreviation_at(s));
}

}  // namespace jobctl::util
