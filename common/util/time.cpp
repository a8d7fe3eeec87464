#include "common/util/time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>

#include <fmt/format.h>

#include "common/util/civil.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::util {

int64_t now_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_time(int64_t micros) {
  // Floored, so that a time before 1970 shows its own second and a
  // fraction counted forward from it.
  std::time_t secs = static_cast<std::time_t>(floor_div(micros, 1000000));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (micros - secs * 1000000) / 1000);
}

std::string format_age(int64_t micros, int64_t now) {
  int64_t delta = now - micros;
  // Whole seconds from one second up: tables want "3m12s", not "3m12s417ms".
  auto round = [](int64_t us) { return us >= 1000000 ? us / 1000000 * 1000000 : us; };
  if (delta >= 0) return format_duration(Micros(round(delta))) + " ago";
  return "in " + format_duration(Micros(round(-delta)));
}

std::optional<DateTime> parse_datetime(const std::string& text, const char* flag) {
  static const std::regex kTime(
      R"(^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?([Zz]|[+-]\d{2}:\d{2})?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kTime)) return std::nullopt;
  DateTime t;
  t.year = std::stoi(m[1]);
  t.month = std::stoi(m[2]);
  t.day = std::stoi(m[3]);
  t.hour = m[4].matched ? std::stoi(m[4]) : 0;
  t.minute = m[5].matched ? std::stoi(m[5]) : 0;
  t.second = m[6].matched ? std::stoi(m[6]) : 0;
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > 31 || t.hour > 23 || t.minute > 59 || t.second > 59)
    throw usage_error(fmt::format("invalid time '{}' for {}: a field is out of range", text, flag));
  if (t.day > days_in_month(t.year, t.month))
    throw usage_error(fmt::format("invalid time '{}' for {}: {:04}-{:02} has {} days", text, flag, t.year, t.month,
                                  days_in_month(t.year, t.month)),
                      "check the date; a time is never moved to the next month");
  // RFC 3339 sets no limit on the fraction (Go and JavaScript print
  // nanoseconds); what is finer than a microsecond is dropped.
  if (m[7].matched) t.micros = std::stoll((m[7].str() + "00000").substr(0, 6));
  if (m[8].matched) {
    const std::string z = m[8].str();
    t.offset_s = 0;
    if (z != "Z" && z != "z") {
      const int hours = std::stoi(z.substr(1, 2)), minutes = std::stoi(z.substr(4, 2));
      if (hours > 23 || minutes > 59)
        throw usage_error(fmt::format("invalid time '{}' for {}: the offset {} is out of range", text, flag, z),
                          "an offset is -23:59 to +23:59, e.g. +01:00");
      int64_t off = (hours * 60 + minutes) * 60;
      t.offset_s = z[0] == '+' ? off : -off;
    }
  }
  return t;
}

namespace {

// Seconds since the epoch of the date and time read as UTC.
int64_t utc_seconds(const DateTime& t) {
  std::tm tm{};
  tm.tm_year = t.year - 1900;
  tm.tm_mon = t.month - 1;
  tm.tm_mday = t.day;
  tm.tm_hour = t.hour;
  tm.tm_min = t.minute;
  tm.tm_sec = t.second;
  return timegm(&tm);
}

}  // namespace

int64_t parse_time_arg(const std::string& text, const char* flag, int64_t now) {
  if (auto t = parse_datetime(text, flag))
    return (utc_seconds(*t) - t->offset_s.value_or(0)) * 1000000 + t->micros;
  try {
    return now - parse_duration(text, flag).count();
  } catch (const Error&) {
    throw usage_error(fmt::format("invalid time '{}' for {}", text, flag),
                      "write an RFC 3339 time like 2026-11-22T03:00:00Z, or a duration ago like 2h");
  }
}

}  // namespace jobctl::util
