#pragma once
// Cron expressions: parsing and the next fire time in an IANA zone.
//
// Grammar (documented in jobctl(1) "CRON EXPRESSIONS"):
// * 5 fields: minute hour day-of-month month day-of-week.
// * 6 fields: the first is seconds (0-59), then the 5 above.
// * Each field: `*`, N, A-B, lists `a,b,c`, steps `*/N`, `A-B/N`, `A/N`
//   (A to the field's maximum). Months JAN-DEC, days SUN-SAT (case
//   insensitive), day-of-week 0-7 with 0 and 7 both Sunday.
// * Day-of-month: `L` (last day), `L-N` (N days before the last), `NW`
//   (the weekday nearest day N, within the month), `LW` (last weekday).
// * Day-of-week: `NL` (last weekday-N of the month, 5L = last Friday),
//   `N#K` (K-th weekday-N, 1 <= K <= 5).
// * `H` (Jenkins): a value derived from a stable hash of the job, so
//   `H * * * *` spreads a fleet's hourly jobs over the hour. Forms `H`,
//   `H(A-B)`, `H/N`, `H(A-B)/N`.
// * Macros: @yearly (@annually) @monthly @weekly @daily (@midnight)
//   @hourly, and `@every DUR` (a fixed interval from an anchor, e.g. the
//   schedule's creation; DUR >= 1s).
// * Day-of-month and day-of-week combine as in Vixie cron: when both are
//   restricted (neither starts with `*`), a day matching either fires;
//   otherwise both must match.
// * `CRON_TZ=`/`TZ=` prefixes are refused in favour of --tz.
//
// DST, as Debian's cron(8) states it. An expression whose minute or hour
// field starts with `*` (and @hourly, @every) follows elapsed time: it
// fires at every instant whose local reading matches, so local times a
// spring gap skips do not fire and the repeated autumn hour fires again.
// Every other expression fires once for each matching local time: a time
// inside a gap fires at the first instant after the gap, a repeated time
// at its first occurrence. Never two fires of one fixed time, never a
// lost day.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/util/tz.hpp"

namespace jobctl::cron {

class Expr {
 public:
  // Parses `text`; `hash_key` seeds `H` (the job's name, or its id when it
  // has none). Throws usage Error naming the field and the reason, e.g.
  // "cron expression '61 * * * *': minute field '61': 61 is out of range
  // 0-59". An expression that can never fire ("0 0 30 2 *") is refused.
  static Expr parse(std::string_view text, std::string_view hash_key = "");

  // The first fire time strictly after `after_us` (µs since the epoch,
  // UTC; fire times are whole seconds) in `zone`. `anchor_us` is where an
  // @every interval counts from (ignored otherwise). Nothing when none
  // exists (cannot happen for a parsed expression short of year 9999).
  std::optional<int64_t> next(int64_t after_us, const util::TimeZone& zone, int64_t anchor_us = 0) const;

  const std::string& text() const { return text_; }
  // True when both day fields are restricted, so either one matching is
  // enough (cron next prints a note saying so).
  bool days_either() const;
  // True for the elapsed-time DST rule (see above).
  bool follows_elapsed_time() const;
  // @every: its interval in µs; 0 otherwise.
  int64_t every_us() const;

  // The parsed fields: opaque, defined in cron.cpp.
  struct Fields;

 private:
  std::string text_;
  std::shared_ptr<const Fields> fields_;
};

}  // namespace jobctl::cron
