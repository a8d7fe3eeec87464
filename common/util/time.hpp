#pragma once
// Timestamps travel through the tree as microseconds since the Unix epoch
// (UTC), the unit both stores keep. These helpers turn them into text.
#include <cstdint>
#include <optional>
#include <string>

namespace jobctl::util {

// Wall-clock microseconds since the epoch (this host's clock: use it for
// display and client-side measurement only; the hot path uses the store's).
int64_t now_micros();

// RFC 3339 in UTC with milliseconds: "2026-11-22T03:12:48.123Z".
std::string format_time(int64_t micros);

// "3s ago" / "in 2m" relative to `now`, for tables.
std::string format_age(int64_t micros, int64_t now);

// A date and time as typed: "YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][Z|±HH:MM]".
struct DateTime {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int64_t micros = 0;                 // fraction of the second
  std::optional<int64_t> offset_s;    // when the text carries Z or ±HH:MM
};
// Nothing when the text is not of that shape; throws usage Error naming
// `flag` when it is but a field is out of range.
std::optional<DateTime> parse_datetime(const std::string& text, const char* flag);

// A point in time typed by a user: RFC 3339 ("2026-11-22T03:00:00Z",
// "…+01:00"; a date and time without an offset is UTC; "YYYY-MM-DD" is its
// midnight UTC) or a duration meaning that long before `now` ("2h").
// Throws jobctl::Error(ExitCode::usage) naming `flag`.
int64_t parse_time_arg(const std::string& text, const char* flag, int64_t now);

class TimeZone;

// --at: RFC 3339 with an offset, or a date and time without one read in the
// IANA zone `tz` ("" = this host's zone). A local time the zone skips (a DST
// gap) is an error; a repeated one (the hour after a DST end) means its
// first occurrence. Throws usage Error naming `flag`. A text with its own
// offset beside a `tz` the user typed is refused as contradictory
// (OwnOffset::conflicts); where `tz` is only a default, the text's offset
// wins (OwnOffset::wins).
enum class OwnOffset { conflicts, wins };
int64_t parse_at(const std::string& text, const std::string& tz, const char* flag,
                 OwnOffset own = OwnOffset::conflicts);

// The wall clock of `zone` at `micros`, with the zone's abbreviation:
// "2026-03-08 03:00:00 EDT".
std::string format_local(int64_t micros, const TimeZone& zone);

}  // namespace jobctl::util
