#include "common/util/time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>

#include <fmt/format.h>

#include "common/util/duration.hpp"
#include "common/util/error.hpp"

namespace jobctl::util {

int64_t now_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_time(int64_t micros) {
  std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (micros % 1000000) / 1000);
}

std::string format_age(int64_t micros, int64_t now) {
  int64_t delta = now - micros;
  // Whole seconds from one second up: tables want "3m12s", not "3m12s417ms".
  auto round = [](int64_t us) { return us >= 1000000 ? us / 1000000 * 1000000 : us; };
  if (delta >= 0) return format_duration(Micros(round(delta))) + " ago";
  return "in " + format_duration(Micros(round(-delta)));
}

int64_t parse_time_arg(const std::string& text, const char* flag, int64_t now) {
  static const std::regex kTime(
      R"(^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:\d{2})?$)");
  std::smatch m;
  if (std::regex_match(text, m, kTime)) {
    std::tm tm{};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = m[4].matched ? std::stoi(m[4]) : 0;
    tm.tm_min = m[5].matched ? std::stoi(m[5]) : 0;
    tm.tm_sec = m[6].matched ? std::stoi(m[6]) : 0;
    if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
      throw usage_error(fmt::format("invalid time '{}' for {}: a field is out of range", text, flag));
    int64_t secs = timegm(&tm);
    int64_t frac = 0;
    if (m[7].matched) {
      std::string digits = m[7].str() + std::string(6 - m[7].length(), '0');
      frac = std::stoll(digits);
    }
    if (m[8].matched && m[8].str() != "Z") {
      const std::string z = m[8].str();
      int64_t offset = (std::stoi(z.substr(1, 2)) * 60 + std::stoi(z.substr(4, 2))) * 60;
      secs -= z[0] == '+' ? offset : -offset;
    }
    return secs * 1000000 + frac;
  }
  try {
    return now - parse_duration(text, flag).count();
  } catch (const Error&) {
    throw usage_error(fmt::format("invalid time '{}' for {}", text, flag),
                      "write an RFC 3339 time like 2026-11-22T03:00:00Z, or a duration ago like 2h");
  }
}

}  // namespace jobctl::util
