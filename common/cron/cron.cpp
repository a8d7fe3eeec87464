// Cron expressions (cron.hpp): parsing, and the next fire time in a zone.
//
// Each field parses to a bit mask (bit N set: value N matches); the day
// fields also keep their special forms (L, W, #). Finding the next fire
// time works on the wall clock of the zone, in "local seconds": the
// smallest matching local reading at or after a given one is found field
// by field (month, then day, then hour, minute, second), never second by
// second.
//
// Turning local readings into instants is where the DST rule lives:
// * Elapsed time (`*` in the minute or hour field, @hourly): walk the zone's
//   constant-offset segments; within one, instants and local readings
//   correspond one to one, so the first instant of the segment whose
//   reading matches is found by one local search. A reading the clocks skip
//   lies in no segment; a repeated one lies in two and fires in both.
// * Once per local time (everything else): each matching reading maps to
//   one instant (the instant itself; the end of a gap; the first of a
//   repeated pair). That map never decreases as the reading grows, so the
//   next fire is the first reading whose instant lies after the given one;
//   the search starts a little before, by the smallest offset nearby.
// * @every: arithmetic on instants, no zone at all.
#include "common/cron/cron.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "common/util/civil.hpp"
#include "common/util/duration.hpp"
#include "common/util/error.hpp"
#include "common/util/strings.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::cron {
namespace {

constexpr int64_t kMicros = 1'000'000;

using util::Civil;
using util::civil_from_days;
using util::days_from_civil;
using util::days_in_month;
using util::floor_div;
using util::weekday_of;

const int64_t kLastDay = days_from_civil(9999, 12, 31);

// --- fields ---

enum class FieldId { second, minute, hour, dom, month, dow };

struct FieldInfo {
  const char* name;
  int lo, hi;
};

FieldInfo info(FieldId f) {
  switch (f) {
    case FieldId::second: return {"seconds", 0, 59};
    case FieldId::minute: return {"minute", 0, 59};
    case FieldId::hour: return {"hour", 0, 23};
    case FieldId::dom: return {"day-of-month", 1, 31};
    case FieldId::month: return {"month", 1, 12};
    case FieldId::dow: return {"day-of-week", 0, 7};
  }
  return {"?", 0, 0};
}

// The lowest set bit of `mask` at or above `from`, or -1.
int next_set(uint64_t mask, int from) {
  if (from >= 64) return -1;
  uint64_t rest = mask >> from << from;
  return rest ? std::countr_zero(rest) : -1;
}

uint64_t bit(int n) { return uint64_t{1} << n; }

// A stable hash of the key, mixed (splitmix64) per field so that the
// fields of one job draw independent values.
uint64_t hashed(std::string_view key, FieldId field) {
  uint64_t h = util::stable_hash(key);
  h += 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(field) + 1);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}

}  // namespace

struct Expr::Fields {
  uint64_t second = 0, minute = 0, hour = 0, dom = 0, month = 0, dow = 0;
  std::vector<int> last_minus;                   // L (0) and L-N (N)
  std::vector<int> nearest_weekday;              // NW
  bool last_weekday = false;                     // LW
  std::vector<std::pair<int, int>> nth_weekday;  // N#K as (N, K)
  std::vector<int> last_of_weekday;              // NL
  bool dom_star = true, dow_star = true;         // the field starts with * (or ?)
  bool elapsed = false;
  int64_t every_s = 0;

  bool dom_matches(const Civil& c, int wday) const;
  bool dow_matches(const Civil& c, int wday) const;
  bool day_matches(const Civil& c, int wday) const;
  std::optional<int64_t> time_in_day(int64_t tod) const;
  std::optional<int64_t> next_local(int64_t local_s) const;
};

namespace {

class FieldParser {
 public:
  FieldParser(std::string_view expr, FieldId id, std::string_view text, std::string_view hash_key)
      : expr_(expr), id_(id), text_(text), key_(hash_key), info_(info(id)) {}

  void parse_into(Expr::Fields& f) {
    if (text_.empty()) fail("it is empty");
    for (const auto& item : util::split(text_, ',')) parse_item(item, f);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw usage_error(fmt::format("cron expression '{}': {} field '{}': {}", util::show_bytes(expr_), info_.name,
                                  util::show_bytes(text_), why),
                      "see jobctl(1), CRON EXPRESSIONS; check one with: jobctl cron next 'EXPR'");
  }

  bool day_field() const { return id_ == FieldId::dom || id_ == FieldId::dow; }

  // A number or, in the month and day-of-week fields, a name.
  int value(std::string_view s) const {
    static constexpr const char* kMonths[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                              "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
    static constexpr const char* kDays[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
    if (s.empty()) fail("a value is missing");
    if (std::isalpha(static_cast<unsigned char>(s[0]))) {
      std::string upper;
      for (char c : s) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (id_ == FieldId::month)
        for (int i = 0; i < 12; ++i)
          if (upper == kMonths[i]) return i + 1;
      if (id_ == FieldId::dow)
        for (int i = 0; i < 7; ++i)
          if (upper == kDays[i]) return i;
      fail(fmt::format("'{}' is not a {}", s, id_ == FieldId::month ? "month name (JAN-DEC)"
                                               : id_ == FieldId::dow ? "day name (SUN-SAT)"
                                                                       : "number"));
    }
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) fail(fmt::format("'{}' is not a number", s));
    if (v < info_.lo || v > info_.hi) fail(fmt::format("{} is out of range {}-{}", v, info_.lo, info_.hi));
    return v;
  }

  int step(std::string_view s) const {
    int n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n < 1)
      fail(fmt::format("step '{}' must be a whole number of at least 1", s));
    if (n > info_.hi - info_.lo + 1) fail(fmt::format("step {} is larger than the field's range {}-{}", n, info_.lo, info_.hi));
    return n;
  }

  void set_range(Expr::Fields& f, int lo, int hi, int by) const {
    uint64_t& mask = mask_of(f);
    for (int v = lo; v <= hi; v += by) mask |= bit(id_ == FieldId::dow && v == 7 ? 0 : v);
  }

  uint64_t& mask_of(Expr::Fields& f) const {
    switch (id_) {
      case FieldId::second: return f.second;
      case FieldId::minute: return f.minute;
      case FieldId::hour: return f.hour;
      case FieldId::dom: return f.dom;
      case FieldId::month: return f.month;
      case FieldId::dow: break;
    }
    return f.dow;
  }

  void parse_item(std::string_view item, Expr::Fields& f) {
    if (item.empty()) fail("an empty item between commas");
    std::optional<int> by;
    if (auto slash = item.find('/'); slash != std::string_view::npos) {
      by = step(item.substr(slash + 1));
      item = item.substr(0, slash);
      if (item.empty()) fail("a step needs a start: write */N, A/N or A-B/N");
    }
    if (item == "*" || (item == "?" && day_field())) {
      set_range(f, info_.lo, id_ == FieldId::dow ? 6 : info_.hi, by.value_or(1));
      return;
    }
    if (item == "?") fail("'?' is only allowed in the day-of-month and day-of-week fields");
    if (item[0] == 'H' || item[0] == 'h') return parse_hash(item.substr(1), by, f);
    if (parse_special(item, f)) {
      if (by) fail(fmt::format("'{}' takes no step", item));
      return;
    }
    auto dash = item.find('-');
    int lo = value(item.substr(0, dash));
    // A/N runs to the field's maximum; day-of-week's is 6, so that 1/2 does
    // not take Sunday as 7, except from 7 itself (7/2: Sunday).
    int hi = !by ? lo : id_ == FieldId::dow ? std::max(lo, 6) : info_.hi;
    if (dash != std::string_view::npos) {
      hi = value(item.substr(dash + 1));
      // SAT-SUN reads as 6-0: Sunday at the end of a range is day 7.
      if (id_ == FieldId::dow && hi == 0 && lo > 0) hi = 7;
      if (lo > hi) fail(fmt::format("range {}-{} runs backwards", lo, hi));
    }
    set_range(f, lo, hi, by.value_or(1));
  }

  // H, H(A-B), H/N, H(A-B)/N: Jenkins' hashed values. Day-of-month draws
  // from 1-28 so that every month has the day.
  void parse_hash(std::string_view rest, std::optional<int> by, Expr::Fields& f) {
    int lo = info_.lo;
    int hi = id_ == FieldId::dom ? 28 : id_ == FieldId::dow ? 6 : info_.hi;
    if (!rest.empty()) {
      if (rest.front() != '(' || rest.back() != ')') fail("write H, H(A-B), H/N or H(A-B)/N");
      auto inner = rest.substr(1, rest.size() - 2);
      auto dash = inner.find('-');
      if (dash == std::string_view::npos) fail("H(A-B) needs a range");
      lo = value(inner.substr(0, dash));
      hi = value(inner.substr(dash + 1));
      if (lo > hi) fail(fmt::format("range {}-{} runs backwards", lo, hi));
    }
    const uint64_t h = hashed(key_, id_);
    if (by && *by > hi - lo + 1) fail(fmt::format("step {} is larger than the range {}-{}", *by, lo, hi));
    if (!by) {
      set_range(f, lo + static_cast<int>(h % static_cast<uint64_t>(hi - lo + 1)), hi, hi - lo + 1);
      return;
    }
    set_range(f, lo + static_cast<int>(h % static_cast<uint64_t>(*by)), hi, *by);
  }

  // The day fields' special forms (L, L-N, LW, NW, NL, N#K); false when
  // `item` is none of them. Names such as WED or JUL are not.
  bool parse_special(std::string_view item, Expr::Fields& f) const {
    auto upper = [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); };
    const char last = upper(item.back());
    const bool has_hash = item.find('#') != std::string_view::npos;
    const bool l_first = upper(item[0]) == 'L' && (item.size() == 1 || item[1] == '-' || upper(item[1]) == 'W');
    const bool suffix = item.size() >= 2 && std::isdigit(static_cast<unsigned char>(item[item.size() - 2])) &&
                        (last == 'L' || last == 'W');
    if (!has_hash && !l_first && !suffix) return false;
    if (!day_field()) fail(fmt::format("'{}': L, W and # are only allowed in the day fields", item));
    return id_ == FieldId::dom ? parse_dom_special(item, f, has_hash) : parse_dow_special(item, f, last == 'W');
  }

  bool parse_dom_special(std::string_view item, Expr::Fields& f, bool has_hash) const {
    if (has_hash) fail(fmt::format("'{}': # belongs in the day-of-week field (5#3: the third Friday)", item));
    if (item == "L" || item == "l") {
      f.last_minus.push_back(0);
      return true;
    }
    if (item == "LW" || item == "lw") {
      f.last_weekday = true;
      return true;
    }
    if ((item[0] == 'L' || item[0] == 'l') && item.size() > 2 && item[1] == '-') {
      int n = 0;
      auto digits = item.substr(2);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec != std::errc() || end != digits.data() + digits.size() || n < 1 || n > 30)
        fail(fmt::format("'{}': L-N needs N from 1 to 30", item));
      f.last_minus.push_back(n);
      return true;
    }
    if (item.back() == 'W' || item.back() == 'w') {
      f.nearest_weekday.push_back(value(item.substr(0, item.size() - 1)));
      return true;
    }
    fail(fmt::format("'{}' is not a day-of-month form: use L, L-N, NW or LW", item));
  }

  bool parse_dow_special(std::string_view item, Expr::Fields& f, bool has_w) const {
    if (has_w) fail(fmt::format("'{}': W belongs in the day-of-month field (15W: the weekday nearest the 15th)", item));
    if (auto hash = item.find('#'); hash != std::string_view::npos) {
      int day = value(item.substr(0, hash)) % 7;
      int k = 0;
      auto digits = item.substr(hash + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
      if (ec != std::errc() || end != digits.data() + digits.size() || k < 1 || k > 5)
        fail(fmt::format("'{}': N#K needs K from 1 to 5", item));
      f.nth_weekday.emplace_back(day, k);
      return true;
    }
    if (item.size() >= 2 && (item.back() == 'L' || item.back() == 'l')) {
      f.last_of_weekday.push_back(value(item.substr(0, item.size() - 1)) % 7);
      return true;
    }
    fail(fmt::format("'{}' is not a day-of-week form: write 5L (the last Friday) or 5#3 (the third Friday)", item));
  }

  std::string_view expr_;
  FieldId id_;
  std::string_view text_;
  std::string_view key_;
  FieldInfo info_;
};

bool starts_with_star(std::string_view field) { return !field.empty() && (field[0] == '*' || field[0] == '?'); }

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The five fields a macro stands for; empty when `name` is none.
std::string_view macro(std::string_view name) {
  static constexpr std::pair<const char*, const char*> kMacros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
  for (auto [m, fields] : kMacros)
    if (lower(name) == m) return fields;
  return {};
}

[[noreturn]] void fail_expr(std::string_view text, const std::string& why, std::string hint = {}) {
  if (hint.empty()) hint = "see jobctl(1), CRON EXPRESSIONS; check one with: jobctl cron next 'EXPR'";
  throw usage_error(fmt::format("cron expression '{}': {}", util::show_bytes(text), why), std::move(hint));
}

int64_t parse_every(std::string_view text, const std::vector<std::string_view>& w) {
  if (w.size() != 2) fail_expr(text, "@every takes one duration", "for example '@every 90m'");
  int64_t d = 0;
  try {
    d = util::parse_duration(w[1], "@every").count();
  } catch (const Error& e) {
    fail_expr(text, e.what(), "for example '@every 90m' or '@every 1h30m'");
  }
  if (d < kMicros || d % kMicros != 0)
    fail_expr(text, fmt::format("@every {} must be a whole number of seconds, at least 1s", w[1]));
  return d / kMicros;
}

// True when some day in a 400-year Gregorian cycle matches: the calendar
// repeats after that, so an expression with no such day never fires.
bool can_fire(const Expr::Fields& f) {
  const bool plain_days = f.last_minus.empty() && f.nearest_weekday.empty() && !f.last_weekday &&
                          f.nth_weekday.empty() && f.last_of_weekday.empty();
  if (plain_days) {
    // Every month has every weekday, so only the day-of-month can rule a
    // month out; February counts its leap day.
    if (!f.dom_star && !f.dow_star && f.dow) return true;
    for (int m = 1; m <= 12; ++m)
      if ((f.month & bit(m)) && next_set(f.dom, 1) >= 1 && next_set(f.dom, 1) <= days_in_month(2000, m)) return true;
    return false;
  }
  const int64_t start = days_from_civil(2000, 1, 1);
  for (int64_t d = start; d < start + 146097; ++d) {
    Civil c = civil_from_days(d);
    if (!(f.month & bit(c.month))) {
      d = days_from_civil(c.year + (c.month == 12), c.month % 12 + 1, 1) - 1;
      continue;
    }
    if (f.day_matches(c, weekday_of(d))) return true;
  }
  return false;
}

// Offsets in effect in the two days either side of `utc_s`: the smallest.
int smallest_offset_near(const util::TimeZone& zone, int64_t utc_s) {
  int64_t t = utc_s - 2 * util::kSecondsPerDay;
  int lowest = zone.offset_at(t);
  while (auto next = zone.next_transition(t)) {
    if (*next > utc_s + 2 * util::kSecondsPerDay) break;
    lowest = std::min(lowest, zone.offset_at(*next));
    t = *next;
  }
  return lowest;
}

}  // namespace

bool Expr::Fields::dom_matches(const Civil& c, int wday) const {
  if (dom & bit(c.day)) return true;
  const int last = days_in_month(c.year, c.month);
  for (int n : last_minus)
    if (c.day == last - n) return true;
  const bool weekday = wday >= 1 && wday <= 5;
  if (last_weekday && weekday && c.day >= last - 2) {
    // The last weekday: the last day, unless a weekend pushes it back.
    const int last_wday = (wday + (last - c.day)) % 7;
    if (c.day == last - (last_wday == 6 ? 1 : last_wday == 0 ? 2 : 0)) return true;
  }
  for (int n : nearest_weekday) {
    if (n > last || !weekday) continue;
    // The weekday nearest day n, never crossing into another month.
    const int n_wday = ((wday + (n - c.day)) % 7 + 7) % 7;
    int target = n;
    if (n_wday == 6) target = n == 1 ? 3 : n - 1;
    if (n_wday == 0) target = n == last ? n - 2 : n + 1;
    if (c.day == target) return true;
  }
  return false;
}

bool Expr::Fields::dow_matches(const Civil& c, int wday) const {
  if (dow & bit(wday)) return true;
  for (auto [d, k] : nth_weekday)
    if (d == wday && (c.day - 1) / 7 + 1 == k) return true;
  for (int d : last_of_weekday)
    if (d == wday && c.day + 7 > days_in_month(c.year, c.month)) return true;
  return false;
}

// Vixie cron: both day fields restricted means either may match.
bool Expr::Fields::day_matches(const Civil& c, int wday) const {
  if (!(month & bit(c.month))) return false;
  if (!dom_star && !dow_star) return dom_matches(c, wday) || dow_matches(c, wday);
  return dom_matches(c, wday) && dow_matches(c, wday);
}

// The first matching time of day at or after `tod` (seconds since midnight).
std::optional<int64_t> Expr::Fields::time_in_day(int64_t tod) const {
  const int h0 = static_cast<int>(tod / 3600), m0 = static_cast<int>(tod / 60 % 60), s0 = static_cast<int>(tod % 60);
  for (int h = next_set(hour, h0); h >= 0; h = next_set(hour, h + 1)) {
    for (int m = next_set(minute, h == h0 ? m0 : 0); m >= 0; m = next_set(minute, m + 1)) {
      int s = next_set(second, h == h0 && m == m0 ? s0 : 0);
      if (s >= 0) return h * 3600 + m * 60 + s;
    }
  }
  return std::nullopt;
}

// The smallest matching local reading at or after `local_s`.
std::optional<int64_t> Expr::Fields::next_local(int64_t local_s) const {
  int64_t day = floor_div(local_s, util::kSecondsPerDay);
  int64_t tod = local_s - day * util::kSecondsPerDay;
  for (; day <= kLastDay; ++day, tod = 0) {
    Civil c = civil_from_days(day);
    if (!(month & bit(c.month))) {
      // Skip to the first of the next month.
      day = days_from_civil(c.year + (c.month == 12), c.month % 12 + 1, 1) - 1;
      continue;
    }
    if (!day_matches(c, weekday_of(day))) continue;
    if (auto t = time_in_day(tod)) return day * util::kSecondsPerDay + *t;
  }
  return std::nullopt;
}

Expr Expr::parse(std::string_view text, std::string_view hash_key) {
  auto w = words(text);
  if (w.empty()) fail_expr(text, "it is empty", "for example '0 3 * * *' (03:00 every day) or '@hourly'");
  if (w[0].starts_with("CRON_TZ=") || w[0].starts_with("TZ="))
    fail_expr(text, fmt::format("{} is not supported in the expression", w[0].substr(0, w[0].find('=') + 1)),
              "give the zone with --tz, e.g. --tz Europe/Berlin");
  auto fields = std::make_shared<Fields>();
  Expr e;
  e.text_ = std::string(text);
  if (w[0][0] == '@') {
    if (lower(w[0]) == "@every") {
      fields->every_s = parse_every(text, w);
      fields->elapsed = true;
      e.fields_ = std::move(fields);
      return e;
    }
    auto expanded = macro(w[0]);
    if (expanded.empty())
      fail_expr(text, fmt::format("unknown macro '{}'", w[0]),
                "use @yearly, @monthly, @weekly, @daily, @hourly or @every DUR");
    if (w.size() != 1) fail_expr(text, fmt::format("{} takes no fields after it", w[0]));
    w = words(expanded);
  }
  if (w.size() != 5 && w.size() != 6)
    fail_expr(text, fmt::format("expected 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got {}",
                                w.size()));
  const bool with_seconds = w.size() == 6;
  if (!with_seconds) fields->second = 1;  // second 0
  static constexpr FieldId kIds[] = {FieldId::second, FieldId::minute, FieldId::hour,
                                     FieldId::dom,    FieldId::month,  FieldId::dow};
  for (size_t i = 0; i < w.size(); ++i)
    FieldParser(text, kIds[i + (with_seconds ? 0 : 1)], w[i], hash_key).parse_into(*fields);
  const size_t first = with_seconds ? 1 : 0;
  fields->elapsed = starts_with_star(w[first]) || starts_with_star(w[first + 1]);
  fields->dom_star = starts_with_star(w[first + 2]);
  fields->dow_star = starts_with_star(w[first + 4]);
  if (!can_fire(*fields))
    fail_expr(text, "it can never fire: no month has a day that matches",
              "check the day-of-month against the months (February has at most 29 days)");
  e.fields_ = std::move(fields);
  return e;
}

std::optional<int64_t> Expr::next(int64_t after_us, const util::TimeZone& zone, int64_t anchor_us) const {
  const Fields& f = *fields_;
  const int64_t after_s = floor_div(after_us, kMicros);
  const int64_t last_s = (kLastDay + 1) * util::kSecondsPerDay;
  if (f.every_s) {
    const int64_t anchor_s = floor_div(anchor_us, kMicros);
    const int64_t k = after_s < anchor_s ? 1 : (after_s - anchor_s) / f.every_s + 1;
    const int64_t t = anchor_s + k * f.every_s;
    return t < last_s ? std::optional<int64_t>(t * kMicros) : std::nullopt;
  }
  if (f.elapsed) {
    // Each constant-offset segment in turn: its first matching reading.
    for (int64_t t = after_s + 1;;) {
      const int off = zone.offset_at(t);
      const auto segment_end = zone.next_transition(t);
      auto local = f.next_local(t + off);
      if (!local) return std::nullopt;
      if (!segment_end || *local - off < *segment_end) return (*local - off) * kMicros;
      t = *segment_end;
    }
  }
  // Once per local time: the first reading whose instant is after after_s.
  auto local = f.next_local(after_s + smallest_offset_near(zone, after_s) + 1);
  for (; local; local = f.next_local(*local + 1)) {
    const int64_t at = zone.resolve(*local).first;
    if (at > after_s) return at * kMicros;
  }
  return std::nullopt;
}

bool Expr::days_either() const { return !fields_->every_s && !fields_->dom_star && !fields_->dow_star; }

bool Expr::follows_elapsed_time() const { return fields_->elapsed; }

int64_t Expr::every_us() const { return fields_->every_s * kMicros; }

}  // namespace jobctl::cron
