// TimeZone (tz.hpp): IANA zones read from TZif files (RFC 8536).
//
// A TZif file has two parts that matter here: a table of transitions (each
// switching to a "local time type": offset, DST flag, abbreviation) and a
// footer, a POSIX TZ string such as "EST5EDT,M3.2.0,M11.1.0", that rules every
// instant after the last transition in the table. Debian ships "fat" files
// whose tables stop in 2037, so any later instant depends on the footer. A
// zone is therefore two eras: the table up to its last transition, the footer
// rule from there on. The footer's daylight-saving period in a given year is a
// closed formula, so the rule is evaluated on demand for the few years around
// an instant; 9999 costs the same as 2030, and nothing needs caching.
//
// Everything else rests on offset_at and next_transition: a wall-clock reading
// is resolved by trying each offset in effect near it and keeping those that
// agree with themselves.
#include "common/util/tz.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/util/civil.hpp"
#include "common/util/error.hpp"
#include "common/util/utf8.hpp"

namespace jobctl::util {
namespace {

// RFC 8536 says offsets should lie within -25h..+26h; anything beyond is a
// broken file. resolve() relies on this bound for its search window.
constexpr int kMaxOffset = 26 * 3600;
// Instants are capped here (about 2 billion years either way) so that year
// arithmetic never overflows; no calendar question is meaningful beyond it.
constexpr int64_t kFar = int64_t{1} << 56;

int64_t year_of(int64_t utc_s) { return civil_from_days(floor_div(utc_s, kSecondsPerDay)).year; }

// ---------------------------------------------------------------------------
// The footer: a POSIX TZ string with the RFC 8536 extensions.

// The day a daylight-saving change happens, and the local time on that day.
struct DateRule {
  enum class Kind { julian_no_leap, julian_zero, month_week_day } kind = Kind::month_week_day;
  int day = 0;      // Jn: 1..365; n: 0..365; Mm.w.d: the weekday d, 0 = Sunday
  int month = 0;    // Mm.w.d only
  int week = 0;     // Mm.w.d only; 5 = the last such weekday of the month
  int time = 7200;  // seconds past local midnight; may be negative or past 24h
};

int64_t rule_day(const DateRule& rule, int64_t year) {
  const int64_t jan1 = days_from_civil(year, 1, 1);
  switch (rule.kind) {
    case DateRule::Kind::julian_no_leap:  // February 29 is never counted: J60 is always March 1
      return jan1 + rule.day - 1 + (is_leap_year(year) && rule.day >= 60);
    case DateRule::Kind::julian_zero:
      return jan1 + rule.day;
    case DateRule::Kind::month_week_day: {
      const int64_t first = days_from_civil(year, rule.month, 1);
      const int64_t next_month =
          rule.month == 12 ? days_from_civil(year + 1, 1, 1) : days_from_civil(year, rule.month + 1, 1);
      int64_t day = first + (rule.day - weekday_of(first) + 7) % 7 + 7 * (rule.week - 1);
      while (day >= next_month) day -= 7;  // week 5 means "the last", which may be the fourth
      return day;
    }
  }
  return jan1;
}

// A half-open span of instants [begin, end).
struct Period {
  int64_t begin = 0;
  int64_t end = 0;
};

struct PosixTz {
  std::string std_abbr;
  int std_off = 0;  // seconds east of UTC
  bool has_dst = false;
  std::string dst_abbr;
  int dst_off = 0;
  DateRule start;  // in standard time, the time in effect before it
  DateRule stop;   // in daylight-saving time, likewise

  int offset_at(int64_t utc_s) const { return is_dst(utc_s) ? dst_off : std_off; }
  const std::string& abbreviation_at(int64_t utc_s) const { return is_dst(utc_s) ? dst_abbr : std_abbr; }

  // The DST period that starts in `year`. When the stop comes earlier in the
  // year than the start (southern hemisphere, and Dublin, whose "DST" is its
  // winter), the period runs into the next year.
  Period dst_period(int64_t year) const {
    const int64_t begin = rule_day(start, year) * kSecondsPerDay + start.time - std_off;
    int64_t end = rule_day(stop, year) * kSecondsPerDay + stop.time - dst_off;
    if (end < begin) end = rule_day(stop, year + 1) * kSecondsPerDay + stop.time - dst_off;
    return {begin, end};
  }

  bool is_dst(int64_t utc_s) const {
    if (!has_dst) return false;
    const int64_t t = std::clamp(utc_s, -kFar, kFar);
    // A period starts within about eight days of its year (transition times
    // reach 167h) and may end in the year after; these four cover any instant.
    const int64_t year = year_of(t);
    for (int64_t y = year - 2; y <= year + 1; ++y) {
      const Period p = dst_period(y);
      if (p.begin <= t && t < p.end) return true;
    }
    return false;
  }

  // The first instant after `utc_s` at which the offset changes. Periods that
  // touch merge, so a rule that keeps DST all year ("0/0,J365/25") has none.
  std::optional<int64_t> next_change(int64_t utc_s) const {
    if (!has_dst || dst_off == std_off || utc_s >= kFar) return std::nullopt;
    const int64_t t = std::max(utc_s, -kFar);
    const int64_t year = year_of(t);
    std::array<Period, 7> periods{};
    for (size_t i = 0; i < periods.size(); ++i) periods[i] = dst_period(year - 2 + static_cast<int64_t>(i));
    std::sort(periods.begin(), periods.end(), [](const Period& a, const Period& b) { return a.begin < b.begin; });
    // Walk the union of the periods; its last end is not final (a later
    // period might continue it), every other boundary is.
    std::optional<Period> run;
    for (const Period& p : periods) {
      if (p.begin >= p.end) continue;
      if (run && p.begin <= run->end) {
        run->end = std::max(run->end, p.end);
        continue;
      }
      if (run && run->end > t) return run->end;
      if (p.begin > t) return p.begin;
      run = p;
    }
    return std::nullopt;
  }
};

// Parses "std offset [dst [offset] [,start[/time],end[/time]]]".
class PosixParser {
 public:
  explicit PosixParser(std::string_view text) : text_(text) {}

  std::optional<PosixTz> parse() {
    PosixTz tz;
    int west = 0;  // POSIX offsets count hours west of Greenwich
    if (!abbreviation(tz.std_abbr) || !hms(24, west)) return std::nullopt;
    tz.std_off = -west;
    if (done()) return tz;
    if (!abbreviation(tz.dst_abbr)) return std::nullopt;
    tz.has_dst = true;
    tz.dst_off = tz.std_off + 3600;  // one hour ahead unless stated
    if (!done() && peek() != ',') {
      if (!hms(24, west)) return std::nullopt;
      tz.dst_off = -west;
    }
    if (std::abs(tz.std_off) > kMaxOffset || std::abs(tz.dst_off) > kMaxOffset) return std::nullopt;
    if (done()) {
      // No rule given: POSIX leaves it open; tzcode uses the US rules.
      tz.start = {DateRule::Kind::month_week_day, 0, 3, 2, 7200};
      tz.stop = {DateRule::Kind::month_week_day, 0, 11, 1, 7200};
      return tz;
    }
    if (!eat(',') || !date_rule(tz.start) || !eat(',') || !date_rule(tz.stop) || !done()) return std::nullopt;
    return tz;
  }

 private:
  bool done() const { return pos_ == text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

  // "<+0530>" (quoted, for numeric ones) or "CEST" (three letters or more).
  bool abbreviation(std::string& out) {
    const size_t begin = pos_;
    if (eat('<')) {
      while (!done() && (is_digit(peek()) || is_alpha(peek()) || peek() == '+' || peek() == '-')) ++pos_;
      out = text_.substr(begin + 1, pos_ - begin - 1);
      return eat('>') && !out.empty();
    }
    while (is_alpha(peek())) ++pos_;
    out = text_.substr(begin, pos_ - begin);
    return out.size() >= 3;
  }

  bool number(int max_digits, int max_value, int& out) {
    out = 0;
    int digits = 0;
    while (digits < max_digits && is_digit(peek())) {
      out = out * 10 + (text_[pos_++] - '0');
      ++digits;
    }
    return digits > 0 && out <= max_value;
  }

  // [+-]h[h[h]][:mm[:ss]] in seconds. Offsets allow hours up to 24; RFC 8536
  // lets transition times run from -167h to 167h.
  bool hms(int max_hours, int& seconds) {
    int sign = 1;
    if (eat('-'))
      sign = -1;
    else
      eat('+');
    int hours = 0;
    int minutes = 0;
    int secs = 0;
    if (!number(3, max_hours, hours)) return false;
    if (eat(':')) {
      if (!number(2, 59, minutes)) return false;
      if (eat(':') && !number(2, 59, secs)) return false;
    }
    seconds = sign * (hours * 3600 + minutes * 60 + secs);
    return true;
  }

  bool date_rule(DateRule& rule) {
    if (eat('J')) {
      rule.kind = DateRule::Kind::julian_no_leap;
      if (!number(3, 365, rule.day) || rule.day < 1) return false;
    } else if (eat('M')) {
      rule.kind = DateRule::Kind::month_week_day;
      if (!number(2, 12, rule.month) || rule.month < 1 || !eat('.') || !number(1, 5, rule.week) ||
          rule.week < 1 || !eat('.') || !number(1, 6, rule.day))
        return false;
    } else {
      rule.kind = DateRule::Kind::julian_zero;
      if (!number(3, 365, rule.day)) return false;
    }
    rule.time = 7200;
    return !eat('/') || hms(167, rule.time);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// The TZif file itself.

struct LocalType {
  int utoff = 0;
  bool isdst = false;
  std::string abbr;
};

struct Tzif {
  std::vector<int64_t> at;      // transition instants, strictly ascending
  std::vector<uint8_t> type;    // the local type each transition switches to
  std::vector<LocalType> types;  // types[0] also rules before the first transition
  std::optional<PosixTz> footer;
};

// Big-endian fields read byte by byte: the file gives no alignment, and the
// byte order is fixed whatever the host's.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  bool has(uint64_t n) const { return bytes_.size() - pos_ >= n; }
  uint64_t be(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(bytes_[pos_++]);
    return v;
  }
  std::string_view take(size_t n) {
    const std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view rest() const { return bytes_.substr(pos_); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

struct Header {
  char version = 0;
  uint32_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;

  uint64_t block_size(uint64_t time_size) const {
    return uint64_t{timecnt} * (time_size + 1) + uint64_t{typecnt} * 6 + charcnt +
           uint64_t{leapcnt} * (time_size + 4) + isstdcnt + isutcnt;
  }
};

std::optional<Header> read_header(ByteReader& in) {
  if (!in.has(44) || in.take(4) != "TZif") return std::nullopt;
  Header h;
  h.version = in.take(1)[0];
  in.take(15);  // reserved
  for (uint32_t* count : {&h.isutcnt, &h.isstdcnt, &h.leapcnt, &h.timecnt, &h.typecnt, &h.charcnt})
    *count = static_cast<uint32_t>(in.be(4));
  return h;
}

std::optional<LocalType> read_local_type(ByteReader& in, std::string_view chars, uint32_t desig_limit) {
  const auto utoff = static_cast<int32_t>(static_cast<uint32_t>(in.be(4)));
  const auto isdst = in.be(1);
  const auto desig = in.be(1);
  if (utoff < -kMaxOffset || utoff > kMaxOffset || isdst > 1 || desig >= desig_limit) return std::nullopt;
  const std::string_view abbr = chars.substr(desig);
  return LocalType{utoff, isdst == 1, std::string(abbr.substr(0, abbr.find('\0')))};
}

// One data block, with 4-byte (version 1) or 8-byte times. Leap-second
// records are skipped: only the "right/" zones have them.
std::optional<Tzif> read_block(ByteReader& in, const Header& h, size_t time_size) {
  if (!in.has(h.block_size(time_size)) || h.typecnt == 0 || h.charcnt == 0) return std::nullopt;
  Tzif tz;
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    const uint64_t raw = in.be(time_size);
    const int64_t t = time_size == 8 ? static_cast<int64_t>(raw) : static_cast<int32_t>(static_cast<uint32_t>(raw));
    if (!tz.at.empty() && t <= tz.at.back()) return std::nullopt;  // binary search needs order
    tz.at.push_back(t);
  }
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    tz.type.push_back(static_cast<uint8_t>(in.be(1)));
    if (tz.type.back() >= h.typecnt) return std::nullopt;
  }
  // The abbreviations follow the types that point into them.
  ByteReader types_in(in.take(uint64_t{h.typecnt} * 6));
  const std::string_view chars = in.take(h.charcnt);
  for (uint32_t i = 0; i < h.typecnt; ++i) {
    auto type = read_local_type(types_in, chars, h.charcnt);
    if (!type) return std::nullopt;
    tz.types.push_back(std::move(*type));
  }
  in.take(uint64_t{h.leapcnt} * (time_size + 4) + h.isstdcnt + h.isutcnt);
  return tz;
}

std::optional<Tzif> parse_tzif(std::string_view bytes) {
  ByteReader in(bytes);
  const auto v1 = read_header(in);
  if (!v1) return std::nullopt;
  // Version 1 has only 32-bit times and no footer.
  if (v1->version == '\0') return read_block(in, *v1, 4);
  // Later versions repeat everything with 64-bit times; the 32-bit block is
  // only there for old readers.
  if (!in.has(v1->block_size(4))) return std::nullopt;
  in.take(v1->block_size(4));
  const auto v2 = read_header(in);
  if (!v2) return std::nullopt;
  auto tz = read_block(in, *v2, 8);
  if (!tz) return std::nullopt;
  const std::string_view rest = in.rest();
  const size_t newline = rest.find('\n', 1);
  if (rest.empty() || rest[0] != '\n' || newline == std::string_view::npos) return std::nullopt;
  // A footer we cannot read is dropped rather than refusing the zone: the
  // table is still right up to its end.
  if (newline > 1) tz->footer = PosixParser(rest.substr(1, newline - 1)).parse();
  return tz;
}

// ---------------------------------------------------------------------------
// The zone.

class Zone final : public TimeZone {
 public:
  Zone(std::string name, Tzif tz) : name_(std::move(name)), tz_(std::move(tz)) {
    footer_from_ = tz_.at.empty() ? std::numeric_limits<int64_t>::min() : tz_.at.back();
    // Transitions that change only the abbreviation or the DST flag (say,
    // "BST" for British Standard Time) are not offset changes.
    int previous = tz_.types[0].utoff;
    for (size_t i = 0; i < tz_.at.size(); ++i) {
      const int off = utoff_at(tz_.at[i]);
      if (off != previous) changes_.push_back(tz_.at[i]);
      previous = off;
    }
  }

  const std::string& name() const override { return name_; }

  int offset_at(int64_t utc_s) const override { return utoff_at(utc_s); }

  std::string abbreviation_at(int64_t utc_s) const override {
    return in_footer_era(utc_s) ? tz_.footer->abbreviation_at(utc_s) : table_type(utc_s).abbr;
  }

  std::optional<int64_t> next_transition(int64_t utc_s) const override {
    // changes_ ends at footer_from_, where the footer takes over.
    const auto it = std::upper_bound(changes_.begin(), changes_.end(), utc_s);
    if (it != changes_.end()) return *it;
    if (tz_.footer) return tz_.footer->next_change(std::max(utc_s, footer_from_));
    return std::nullopt;
  }

  Local resolve(int64_t local_s) const override {
    const int64_t local = std::clamp(local_s, -kFar, kFar);
    // Any instant that reads `local` lies within kMaxOffset of it, so the
    // offsets in effect in this window are the only candidates.
    constexpr int64_t kWindow = 2 * kSecondsPerDay;
    std::vector<int64_t> transitions;
    for (auto t = next_transition(local - kWindow); t && *t <= local + kWindow; t = next_transition(*t))
      transitions.push_back(*t);

    std::vector<int64_t> instants;
    auto try_offset = [&](int off) {
      const int64_t utc = local - off;
      if (offset_at(utc) == off && std::find(instants.begin(), instants.end(), utc) == instants.end())
        instants.push_back(utc);
    };
    try_offset(offset_at(local - kWindow));
    for (const int64_t t : transitions) try_offset(offset_at(t));
    std::sort(instants.begin(), instants.end());

    using Kind = Local::Kind;
    if (instants.size() == 1) return {Kind::unique, instants[0], instants[0]};
    if (instants.size() > 1) return {Kind::repeated, instants.front(), instants.back()};
    for (const int64_t t : transitions) {
      if (t + offset_at(t - 1) <= local && local < t + offset_at(t)) return {Kind::gap, t, t};
    }
    throw Error(ExitCode::internal, fmt::format("time zone {}: cannot resolve local time {}", name_, local_s));
  }

 private:
  bool in_footer_era(int64_t utc_s) const { return tz_.footer && utc_s >= footer_from_; }

  int utoff_at(int64_t utc_s) const {
    return in_footer_era(utc_s) ? tz_.footer->offset_at(utc_s) : table_type(utc_s).utoff;
  }

  const LocalType& table_type(int64_t utc_s) const {
    const auto it = std::upper_bound(tz_.at.begin(), tz_.at.end(), utc_s);
    if (it == tz_.at.begin()) return tz_.types[0];
    return tz_.types[tz_.type[static_cast<size_t>(it - tz_.at.begin()) - 1]];
  }

  std::string name_;
  Tzif tz_;
  int64_t footer_from_ = 0;       // the last transition; the footer rules from here
  std::vector<int64_t> changes_;  // table instants where the offset changes
};

std::shared_ptr<const TimeZone> fixed_zone(std::string name, PosixTz rule, std::optional<PosixTz> footer = {}) {
  Tzif tz;
  tz.types.push_back({rule.std_off, false, rule.std_abbr});
  tz.footer = std::move(footer);
  return std::make_shared<const Zone>(std::move(name), std::move(tz));
}

std::shared_ptr<const TimeZone> utc_zone() {
  PosixTz utc;
  utc.std_abbr = "UTC";
  return fixed_zone("UTC", utc);
}

// ---------------------------------------------------------------------------
// Finding the files.

[[noreturn]] void throw_unknown(const std::string& name) {
  throw usage_error(fmt::format("unknown time zone '{}'", show_bytes(name)),
                    "use an IANA name like Europe/Berlin or UTC (see /usr/share/zoneinfo)");
}

std::string zone_dir() {
  const char* dir = std::getenv("TZDIR");
  return dir && *dir ? dir : "/usr/share/zoneinfo";
}

// Names must stay inside the zone directory.
bool safe_name(const std::string& name) {
  return !name.empty() && name[0] != '/' && name.find("..") == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::optional<std::string> read_file(const std::string& path) {
  // TZif files are a few KiB; the cap keeps a $TZ like /dev/zero from eating memory.
  constexpr size_t kMaxSize = size_t{4} << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes;
  std::array<char, 4096> buffer{};
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    bytes.append(buffer.data(), static_cast<size_t>(in.gcount()));
    if (bytes.size() > kMaxSize) return std::string();
  }
  return bytes;
}

// nullptr when there is no such file (so that callers may fall back);
// throws when there is one but it is not TZif.
std::shared_ptr<const TimeZone> load_file(const std::string& path, std::string name, const std::string& asked) {
  const auto bytes = read_file(path);
  if (!bytes) return nullptr;
  auto tz = parse_tzif(*bytes);
  if (!tz) throw_unknown(asked);
  return std::make_shared<const Zone>(std::move(name), std::move(*tz));
}

std::shared_ptr<const TimeZone> find_named(const std::string& name) {
  if (!safe_name(name)) return nullptr;
  if (auto zone = load_file(zone_dir() + "/" + name, name, name)) return zone;
  // UTC must work on a host without tzdata (a minimal container).
  if (name == "UTC") return utc_zone();
  return nullptr;
}

std::shared_ptr<const TimeZone> load_named(const std::string& name) {
  if (auto zone = find_named(name)) return zone;
  throw_unknown(name);
}

// "/usr/share/zoneinfo/Europe/Berlin" -> "Europe/Berlin".
std::string name_from_path(const std::string& path, const std::string& fallback) {
  const size_t pos = path.rfind("zoneinfo/");
  return pos == std::string::npos ? fallback : path.substr(pos + 9);
}

std::shared_ptr<const TimeZone> load_from_tz_variable(const std::string& tz) {
  if (tz[0] == '/') {
    if (auto zone = load_file(tz, name_from_path(tz, tz), tz)) return zone;
    throw_unknown(tz);
  }
  if (auto zone = find_named(tz)) return zone;
  // POSIX also allows the rule itself in $TZ ("CET-1CEST,M3.5.0,M10.5.0/3").
  if (auto rule = PosixParser(tz).parse()) return fixed_zone(tz, *rule, rule);
  throw_unknown(tz);
}

std::shared_ptr<const TimeZone> load_host() {
  if (const char* env = std::getenv("TZ")) {
    std::string tz = env;
    if (tz.empty()) return utc_zone();  // as glibc reads an empty $TZ
    if (tz[0] == ':') tz.erase(0, 1);
    if (!tz.empty()) return load_from_tz_variable(tz);
  }
  constexpr const char* kLocaltime = "/etc/localtime";
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(kLocaltime, ec);
  const std::string name = ec ? "localtime" : name_from_path(target.string(), "localtime");
  if (auto zone = load_file(kLocaltime, name, "localtime")) return zone;
  return utc_zone();
}

struct Cache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const TimeZone>> zones;
};

Cache& cache() {
  static Cache instance;
  return instance;
}

}  // namespace

std::shared_ptr<const TimeZone> TimeZone::locate(const std::string& name) {
  Cache& c = cache();
  // Loading under the lock means a zone is read once even when threads race
  // for it; the files are a few KiB.
  const std::lock_guard lock(c.mutex);
  if (const auto it = c.zones.find(name); it != c.zones.end()) return it->second;
  auto zone = name.empty() ? load_host() : load_named(name);
  c.zones.emplace(name, zone);
  return zone;
}

const std::string& given_zone(const std::string& name, std::string_view what) {
  if (name.empty())
    throw usage_error(fmt::format("{} is empty", what),
                      "give an IANA zone name, e.g. UTC or Europe/Berlin; leave it out for the default");
  return name;
}

}  // namespace jobctl::util
