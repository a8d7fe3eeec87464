#pragma once
// IANA time zones read straight from the system's TZif files
// (/usr/share/zoneinfo, or $TZDIR), including the footer rule (RFC 8536
// §3.3) that governs every instant after the last listed transition. The
// footer is why this exists: Debian's date/tz ignores it and gets, say,
// New York in July 2038 wrong (EST instead of EDT).
//
// Times are whole seconds since the Unix epoch. A "local" time is the wall
// clock reading expressed the same way (seconds since 1970-01-01 00:00 on
// the wall clock).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jobctl::util {

class TimeZone {
 public:
  // The zone named `name` ("UTC", "Europe/Berlin"; "" = this host's zone,
  // from $TZ or /etc/localtime, UTC when neither says). Loaded once and
  // cached for the life of the process. Throws usage Error
  // "unknown time zone 'X'" with a hint when there is no such zone file or
  // it is not a valid TZif file.
  static std::shared_ptr<const TimeZone> locate(const std::string& name);

  virtual ~TimeZone() = default;
  virtual const std::string& name() const = 0;

  // Seconds east of UTC in effect at `utc_s`.
  virtual int offset_at(int64_t utc_s) const = 0;
  // The abbreviation in effect at `utc_s` ("CEST"; "+0530" style when the
  // file has a numeric one).
  virtual std::string abbreviation_at(int64_t utc_s) const = 0;
  // The first instant after `utc_s` at which the offset changes, if any.
  virtual std::optional<int64_t> next_transition(int64_t utc_s) const = 0;

  // What a wall-clock reading means in this zone.
  struct Local {
    enum class Kind { unique, gap, repeated } kind = Kind::unique;
    // unique: the instant. gap (the clocks skip this reading): the first
    // instant after the gap, i.e. the transition. repeated (the clocks
    // show it twice): the earlier instant.
    int64_t first = 0;
    // repeated: the later instant; otherwise equal to first.
    int64_t second = 0;
  };
  virtual Local resolve(int64_t local_s) const = 0;
};

// A zone name a user gave (--tz, "tz"), checked: an empty one is refused,
// since it would mean this host's zone to one command and the default to
// another. Throws usage Error naming `what`; returns `name`.
const std::string& given_zone(const std::string& name, std::string_view what);

}  // namespace jobctl::util
