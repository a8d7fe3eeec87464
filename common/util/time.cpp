#include "common/util/time.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "common/util/duration.hpp"

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

}  // namespace jobctl::util
