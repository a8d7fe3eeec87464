// libFuzzer: cron expressions (common/cron/cron.hpp), as --cron, a batch
// line's "cron" and `jobctl cron next` take them. The whole input is the
// expression; a hash of it picks the zone and the instant to start from, so
// each input is one deterministic case.
//
// An expression that parses must give fire times: each strictly after the
// one before, in whole seconds; @every ones on their interval; expressions
// that fire once per local time at strictly later wall-clock readings; and
// in UTC, which skips no reading, always one before year 9999 from a start
// 400 years earlier (the Gregorian calendar repeats every 400 years, and a
// parsed expression fires somewhere in that cycle).
#include <fmt/format.h>

#include <array>
#include <optional>

#include "common/cron/cron.hpp"
#include "common/util/civil.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;

namespace {

constexpr int64_t kSec = 1'000'000;

// UTC, and zones whose rules are unusual: a gap and an overlap at 02:00, a
// half-hour DST, DST that starts at midnight, a winter "DST" (negative
// save), a 45-minute offset, and a zone that skipped a whole day.
constexpr std::array<const char*, 7> kZones{"UTC",          "America/New_York", "Australia/Lord_Howe", "America/Havana",
                                            "Europe/Dublin", "Pacific/Chatham", "Pacific/Apia"};

// Starts: around New York's 2026 spring gap and autumn overlap, a leap
// day, the epoch (negative µs before it), Apia's lost day, the far past,
// and near the end of the range.
constexpr std::array<const char*, 8> kStarts{"2026-03-08T06:30:00Z",     "2026-11-01T05:30:00Z",
                                             "2024-02-28T23:59:59Z",     "1969-12-31T23:59:59.500000Z",
                                             "2011-12-29T09:59:59Z",     "0001-01-01T00:00:00Z",
                                             "2026-06-15T12:34:56.789Z", "9999-12-31T23:00:00Z"};

int64_t at(const char* rfc3339) { return util::parse_time_arg(rfc3339, "fuzz", 0); }

int64_t local_reading(int64_t micros, const util::TimeZone& zone) {
  const int64_t s = micros / kSec;  // fire times are whole seconds
  return s + zone.offset_at(s);
}

[[noreturn]] void fail_with(const cron::Expr& e, const util::TimeZone& zone, int64_t after, const std::string& what) {
  fuzz::fail(fmt::format("cron '{}' in {} after {} µs: {}", e.text(), zone.name(), after, what));
}

// Up to three fire times after `from` in `zone`, checked one against the next.
void check_fires(const cron::Expr& e, const util::TimeZone& zone, int64_t from) {
  const int64_t anchor = util::floor_div(from, kSec) * kSec - 7 * kSec;  // @every counts from a whole second
  std::optional<int64_t> previous;
  int64_t after = from;
  for (int i = 0; i < 3; ++i) {
    const auto next = e.next(after, zone, anchor);
    if (!next) {
      if (zone.name() == "UTC" && from < at("9000-01-01T00:00:00Z"))
        fail_with(e, zone, from, "no fire time in UTC");
      return;
    }
    if (*next <= after) fail_with(e, zone, after, fmt::format("fire time {} is not after the start", *next));
    if (*next % kSec != 0) fail_with(e, zone, after, fmt::format("fire time {} is not a whole second", *next));
    if (e.every_us() && (*next - anchor) % e.every_us() != 0)
      fail_with(e, zone, after, fmt::format("@every fire time {} is off its interval", *next));
    if (previous && !e.follows_elapsed_time() && local_reading(*next, zone) <= local_reading(*previous, zone))
      fail_with(e, zone, after,
                fmt::format("fires at {} after {}: a once-per-local-time expression went back on the wall clock",
                            util::format_local(*next, zone), util::format_local(*previous, zone)));
    previous = after = *next;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::text_of(data, size);
  std::optional<cron::Expr> expr;
  if (!fuzz::accepts([&] { expr = cron::Expr::parse(text, "fuzz"); })) return 0;
  const uint64_t h = util::stable_hash(text);
  const int64_t from = at(kStarts[h % kStarts.size()]);
  const auto zone = util::TimeZone::locate(kZones[h / kStarts.size() % kZones.size()]);
  check_fires(*expr, *zone, from);
  if (zone->name() != "UTC") check_fires(*expr, *util::TimeZone::locate("UTC"), from);
  expr->days_either();
  return 0;
}
