#pragma once
// The proleptic Gregorian calendar as plain arithmetic on day numbers (days
// since 1970-01-01), after Howard Hinnant's "chrono-Compatible Low-Level
// Date Algorithms". Used where the zone and cron code need dates without
// going through a zone database.
#include <cstdint>

namespace jobctl::util {

inline constexpr int64_t kSecondsPerDay = 86400;

// Floor division: rounds toward minus infinity, for instants before 1970.
constexpr int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

struct Civil {
  int64_t year = 1970;
  int month = 1;  // 1-12
  int day = 1;    // 1-31
};

constexpr int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

constexpr Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (m <= 2), m, d};
}

constexpr bool is_leap_year(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

constexpr int days_in_month(int64_t y, int m) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap_year(y) ? 29 : kDays[m - 1];
}

// 0 = Sunday … 6 = Saturday; 1970-01-01 was a Thursday.
constexpr int weekday_of(int64_t days) { return static_cast<int>((days % 7 + 11) % 7); }

static_assert(days_from_civil(2000, 3, 1) == 11017);
static_assert(civil_from_days(-1).year == 1969 && civil_from_days(-1).day == 31);
static_assert(weekday_of(0) == 4 && weekday_of(-1) == 3 && weekday_of(-7) == 4);

}  // namespace jobctl::util
