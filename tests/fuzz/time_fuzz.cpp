// libFuzzer: times as users type them (common/util/time.hpp): --at in a
// zone, --from/--to (RFC 3339 or a duration ago) and the bare date-time
// reader under both. The whole input is the text; a hash of it picks the
// zone of --at and whether an offset in the text may stand beside it.
//
// Invariants: --at without an offset lands on the very wall-clock reading
// typed (or is refused as a DST gap); in UTC it agrees with --from's reading
// of the same text; and a time --from accepts prints (format_time, to the
// millisecond) as text that reads back as the same instant.
#include <fmt/format.h>

#include <array>
#include <optional>

#include "common/util/civil.hpp"
#include "common/util/strings.hpp"
#include "common/util/time.hpp"
#include "common/util/tz.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;

namespace {

constexpr std::array<const char*, 6> kZones{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia",
                                            "Europe/Dublin", "Asia/Kathmandu"};
constexpr int64_t kNow = 1'780'000'000'000'000;  // 2026-05-28, the clock --from reads "2h" against

// The first and last instants format_time can print with a four-digit year.
const int64_t kFirst = util::days_from_civil(0, 1, 1) * 86400 * 1'000'000;
const int64_t kLast = util::days_from_civil(10000, 1, 1) * 86400 * 1'000'000 - 1;

void check_at(const std::string& text, const util::DateTime& t, const std::string& tz, util::OwnOffset own) {
  int64_t at = 0;
  if (!fuzz::accepts([&] { at = util::parse_at(text, tz, "--at", own); }) || t.offset_s) return;
  const auto zone = util::TimeZone::locate(tz);
  const std::string typed =
      fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second);
  const std::string shown = util::format_local(at, *zone);
  if (shown.rfind(typed, 0) != 0) fuzz::fail(fmt::format("--at '{}' in {} is {}, not {}", text, tz, shown, typed));
  if (tz == "UTC" && at != util::parse_time_arg(text, "--from", kNow))
    fuzz::fail(fmt::format("'{}': --at in UTC and --from disagree", text));
}

void check_from(const std::string& text) {
  int64_t from = 0;
  if (!fuzz::accepts([&] { from = util::parse_time_arg(text, "--from", kNow); })) return;
  if (from < kFirst || from > kLast) return;  // past 0000 or 9999 by an offset: no four-digit year
  const std::string shown = util::format_time(from);
  int64_t again = 0;
  if (!fuzz::accepts([&] { again = util::parse_time_arg(shown, "--from", kNow); }))
    fuzz::fail(fmt::format("'{}' is {} µs, printed as '{}', which does not read back", text, from, shown));
  const int64_t expected = util::floor_div(from, 1000) * 1000;
  if (again != expected)
    fuzz::fail(fmt::format("'{}' is {} µs, printed as '{}', which reads back as {} µs", text, from, shown, again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::text_of(data, size);
  const uint64_t h = util::stable_hash(text);
  check_from(text);
  std::optional<util::DateTime> t;
  if (!fuzz::accepts([&] { t = util::parse_datetime(text, "--at"); }) || !t) return 0;
  check_at(text, *t, kZones[h % kZones.size()], h & 64 ? util::OwnOffset::wins : util::OwnOffset::conflicts);
  check_at(text, *t, "UTC", util::OwnOffset::wins);
  return 0;
}
