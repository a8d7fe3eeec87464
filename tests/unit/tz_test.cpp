#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/util/error.hpp"
#include "common/util/tz.hpp"

using jobctl::util::TimeZone;
using Kind = TimeZone::Local::Kind;

namespace {
constexpr int64_t kHour = 3600;

// Seconds since the epoch of a date and time: an instant when read as UTC, a
// wall-clock reading when passed to resolve().
int64_t at(int year, unsigned month, unsigned day, int hour = 0, int minute = 0) {
  const std::chrono::sys_days days{std::chrono::year{year} / std::chrono::month{month} / std::chrono::day{day}};
  return days.time_since_epoch().count() * 86400 + hour * kHour + minute * 60;
}

std::shared_ptr<const TimeZone> zone(const std::string& name) { return TimeZone::locate(name); }

// A TZif file built by hand, to reach footer forms and file versions the
// system's zones do not use.
struct Type {
  int utoff;
  bool isdst;
  std::string abbr;
};

void put_be(std::string& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

std::string tzif(char version, const std::vector<std::pair<int64_t, uint8_t>>& transitions,
                 const std::vector<Type>& types, const std::string& footer) {
  std::string chars;
  std::vector<size_t> desig;
  for (const Type& t : types) {
    desig.push_back(chars.size());
    chars += t.abbr + '\0';
  }
  auto block = [&](int time_size) {
    std::string out = "TZif";
    out += version;
    out += std::string(15, '\0');
    for (uint64_t n : std::initializer_list<uint64_t>{0, 0, 0, transitions.size(), types.size(), chars.size()})
      put_be(out, n, 4);
    for (const auto& tr : transitions) put_be(out, static_cast<uint64_t>(tr.first), time_size);
    for (const auto& tr : transitions) out += static_cast<char>(tr.second);
    for (size_t i = 0; i < types.size(); ++i) {
      put_be(out, static_cast<uint32_t>(types[i].utoff), 4);
      out += static_cast<char>(types[i].isdst);
      out += static_cast<char>(desig[i]);
    }
    return out + chars;
  };
  std::string out = block(4);
  if (version != '\0') out += block(8) + "\n" + footer + "\n";
  return out;
}

// Points $TZDIR at a scratch directory for the life of the object.
class ScratchZoneDir {
 public:
  ScratchZoneDir() : dir_(std::filesystem::temp_directory_path() / ("jobctl-tz-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_ / "Test");
    if (const char* old = std::getenv("TZDIR")) old_ = old;
    ::setenv("TZDIR", dir_.c_str(), 1);
  }
  ~ScratchZoneDir() {
    if (old_)
      ::setenv("TZDIR", old_->c_str(), 1);
    else
      ::unsetenv("TZDIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchZoneDir(const ScratchZoneDir&) = delete;
  ScratchZoneDir& operator=(const ScratchZoneDir&) = delete;

  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  // A zone with no transitions: the footer rules every instant.
  void write_footer_zone(const std::string& name, const std::string& footer) const {
    write(name, tzif('2', {}, {{0, false, "ZZZ"}}, footer));
  }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> old_;
};

void check_unknown(const std::string& name) {
  CAPTURE(name);
  try {
    TimeZone::locate(name);
    FAIL("accepted");
  } catch (const jobctl::Error& e) {
    CHECK(e.code() == jobctl::ExitCode::usage);
    CHECK(std::string(e.what()) == "unknown time zone '" + name + "'");
    CHECK(e.hint().find("Europe/Berlin") != std::string::npos);
  }
}
}  // namespace

TEST_CASE("tz: the test's own calendar agrees with date(1)") {
  CHECK(at(2038, 7, 1, 12) == 2161598400);  // date -u -d '2038-07-01 12:00' +%s
  CHECK(at(2026, 3, 8, 7) == 1772953200);
}

TEST_CASE("tz: UTC is offset zero and never changes") {
  auto utc = zone("UTC");
  CHECK(utc->name() == "UTC");
  CHECK(utc->offset_at(0) == 0);
  CHECK(utc->offset_at(at(2100, 7, 1)) == 0);
  CHECK(utc->abbreviation_at(at(2026, 1, 1)) == "UTC");
  CHECK_FALSE(utc->next_transition(at(1900, 1, 1)).has_value());
  auto r = utc->resolve(at(2026, 3, 8, 2, 30));
  CHECK(r.kind == Kind::unique);
  CHECK(r.first == at(2026, 3, 8, 2, 30));
  CHECK(r.second == r.first);
}

TEST_CASE("tz: locate caches zones and keeps the name as asked") {
  auto berlin = zone("Europe/Berlin");
  CHECK(berlin == zone("Europe/Berlin"));
  CHECK(berlin->name() == "Europe/Berlin");
}

TEST_CASE("tz: Berlin is CET in winter and CEST in summer") {
  auto berlin = zone("Europe/Berlin");
  CHECK(berlin->offset_at(at(2026, 1, 15, 12)) == kHour);
  CHECK(berlin->abbreviation_at(at(2026, 1, 15, 12)) == "CET");
  CHECK(berlin->offset_at(at(2026, 7, 15, 12)) == 2 * kHour);
  CHECK(berlin->abbreviation_at(at(2026, 7, 15, 12)) == "CEST");
  // Last Sundays of March and October, at 01:00 UTC.
  CHECK(berlin->next_transition(at(2026, 1, 1)) == at(2026, 3, 29, 1));
  CHECK(berlin->next_transition(at(2026, 3, 29, 1)) == at(2026, 10, 25, 1));
  CHECK(berlin->offset_at(at(2026, 3, 29, 1) - 1) == kHour);
  CHECK(berlin->offset_at(at(2026, 3, 29, 1)) == 2 * kHour);
}

TEST_CASE("tz: New York follows its footer rule after 2038") {
  auto ny = zone("America/New_York");
  CHECK(ny->offset_at(at(2038, 7, 1, 12)) == -4 * kHour);
  CHECK(ny->abbreviation_at(at(2038, 7, 1, 12)) == "EDT");
  CHECK(ny->offset_at(at(2100, 7, 1, 12)) == -4 * kHour);
  CHECK(ny->abbreviation_at(at(2100, 7, 1, 12)) == "EDT");
  CHECK(ny->offset_at(at(2100, 1, 15, 12)) == -5 * kHour);
  CHECK(ny->abbreviation_at(at(2100, 1, 15, 12)) == "EST");
}

TEST_CASE("tz: next_transition runs from the table into the footer rule") {
  auto ny = zone("America/New_York");
  // Second Sunday of March 07:00Z, first Sunday of November 06:00Z.
  const int64_t expected[] = {at(2038, 3, 14, 7), at(2038, 11, 7, 6), at(2039, 3, 13, 7), at(2039, 11, 6, 6),
                              at(2040, 3, 11, 7)};
  int64_t t = at(2037, 12, 1);
  for (const int64_t want : expected) {
    const auto next = ny->next_transition(t);
    REQUIRE(next.has_value());
    CHECK(*next == want);
    CHECK(ny->offset_at(*next - 1) != ny->offset_at(*next));
    t = *next;
  }
  // Far out, the rule is computed for the year asked, not walked to.
  CHECK(ny->next_transition(at(9999, 6, 1)) == at(9999, 11, 7, 6));
}

TEST_CASE("tz: resolve in New York: unique, gap, repeated") {
  auto ny = zone("America/New_York");
  auto r = ny->resolve(at(2026, 7, 1, 12));
  CHECK(r.kind == Kind::unique);
  CHECK(r.first == at(2026, 7, 1, 16));
  CHECK(r.second == r.first);

  r = ny->resolve(at(2026, 3, 8, 2, 30));  // the clocks go from 02:00 to 03:00
  CHECK(r.kind == Kind::gap);
  CHECK(r.first == at(2026, 3, 8, 7));
  CHECK(r.second == r.first);
  CHECK(ny->resolve(at(2026, 3, 8, 2)).kind == Kind::gap);
  CHECK(ny->resolve(at(2026, 3, 8, 3)).kind == Kind::unique);
  CHECK(ny->resolve(at(2026, 3, 8, 3)).first == at(2026, 3, 8, 7));

  r = ny->resolve(at(2026, 11, 1, 1, 30));  // 01:00 to 02:00 happens twice
  CHECK(r.kind == Kind::repeated);
  CHECK(r.first == at(2026, 11, 1, 5, 30));
  CHECK(r.second == at(2026, 11, 1, 6, 30));
  CHECK(ny->resolve(at(2026, 11, 1, 2)).kind == Kind::unique);
  CHECK(ny->resolve(at(2026, 11, 1, 2)).first == at(2026, 11, 1, 7));
}

TEST_CASE("tz: resolve in the footer era (New York, 2040)") {
  auto ny = zone("America/New_York");
  auto r = ny->resolve(at(2040, 3, 11, 2, 30));
  CHECK(r.kind == Kind::gap);
  CHECK(r.first == at(2040, 3, 11, 7));
  r = ny->resolve(at(2040, 11, 4, 1, 30));
  CHECK(r.kind == Kind::repeated);
  CHECK(r.first == at(2040, 11, 4, 5, 30));
  CHECK(r.second == at(2040, 11, 4, 6, 30));
  r = ny->resolve(at(2040, 7, 4, 9));
  CHECK(r.kind == Kind::unique);
  CHECK(r.first == at(2040, 7, 4, 13));
}

TEST_CASE("tz: Lord Howe moves its clocks by 30 minutes") {
  auto lh = zone("Australia/Lord_Howe");
  CHECK(lh->offset_at(at(2026, 7, 1)) == 10 * kHour + 1800);
  CHECK(lh->offset_at(at(2026, 12, 1)) == 11 * kHour);
  CHECK(lh->abbreviation_at(at(2026, 12, 1)) == "+11");
  // First Sunday of October: 02:00 becomes 02:30 (at 15:30Z the day before).
  auto r = lh->resolve(at(2026, 10, 4, 2, 15));
  CHECK(r.kind == Kind::gap);
  CHECK(r.first == at(2026, 10, 3, 15, 30));
  CHECK(lh->resolve(at(2026, 10, 4, 2, 30)).kind == Kind::unique);
  // First Sunday of April: 02:00 goes back to 01:30.
  r = lh->resolve(at(2026, 4, 5, 1, 45));
  CHECK(r.kind == Kind::repeated);
  CHECK(r.first == at(2026, 4, 4, 14, 45));
  CHECK(r.second == at(2026, 4, 4, 15, 15));
  // The same in the footer era.
  r = lh->resolve(at(2040, 10, 7, 2, 15));
  CHECK(r.kind == Kind::gap);
  CHECK(r.first == at(2040, 10, 6, 15, 30));
}

TEST_CASE("tz: Dublin's negative DST: GMT in winter, IST in summer") {
  auto dublin = zone("Europe/Dublin");
  for (int year : {2026, 2040}) {
    CAPTURE(year);
    CHECK(dublin->offset_at(at(year, 1, 15, 12)) == 0);
    CHECK(dublin->abbreviation_at(at(year, 1, 15, 12)) == "GMT");
    CHECK(dublin->offset_at(at(year, 7, 15, 12)) == kHour);
    CHECK(dublin->abbreviation_at(at(year, 7, 15, 12)) == "IST");
  }
  CHECK(dublin->next_transition(at(2040, 1, 1)) == at(2040, 3, 25, 1));
  CHECK(dublin->next_transition(at(2040, 3, 25, 1)) == at(2040, 10, 28, 1));
}

TEST_CASE("tz: Kolkata is +5:30 throughout") {
  auto kolkata = zone("Asia/Kolkata");
  for (int64_t t : {at(1990, 1, 1), at(2026, 6, 1), at(2050, 12, 31), at(2300, 3, 1)}) {
    CHECK(kolkata->offset_at(t) == 5 * kHour + 1800);
    CHECK(kolkata->abbreviation_at(t) == "IST");
  }
  CHECK_FALSE(kolkata->next_transition(at(2000, 1, 1)).has_value());
}

TEST_CASE("tz: a zone without DST has no next transition") {
  auto tokyo = zone("Asia/Tokyo");
  CHECK(tokyo->offset_at(at(2026, 7, 1)) == 9 * kHour);
  CHECK(tokyo->abbreviation_at(at(2026, 7, 1)) == "JST");
  CHECK_FALSE(tokyo->next_transition(at(2000, 1, 1)).has_value());
  CHECK(tokyo->resolve(at(2026, 7, 1, 9)).first == at(2026, 7, 1));
}

TEST_CASE("tz: unknown or unsafe zone names are usage errors") {
  check_unknown("Mars/Olympus");
  check_unknown("../etc/passwd");
  check_unknown("Europe/../../etc/passwd");
  check_unknown("/etc/passwd");
  check_unknown("America");  // a directory
}

TEST_CASE("tz: $TZDIR is read, and files that are not TZif are refused") {
  ScratchZoneDir dir;
  dir.write("Test/Bogus", "not a zone file\n");
  dir.write("Test/Truncated", tzif('2', {}, {{0, false, "ZZZ"}}, "UTC0").substr(0, 60));
  dir.write("Test/Copy", tzif('2', {}, {{9 * 3600, false, "JST"}}, "JST-9"));
  check_unknown("Test/Bogus");
  check_unknown("Test/Truncated");
  CHECK(zone("Test/Copy")->offset_at(at(2026, 1, 1)) == 9 * kHour);
}

TEST_CASE("tz: a version 1 file keeps its last type after its last transition") {
  ScratchZoneDir dir;
  dir.write("Test/Version1",
            tzif('\0', {{at(2000, 1, 1), 1}, {at(2001, 1, 1), 2}},
                 {{0, false, "AAA"}, {kHour, true, "BBB"}, {2 * kHour, false, "CCC"}}, ""));
  auto v1 = zone("Test/Version1");
  CHECK(v1->offset_at(at(1999, 6, 1)) == 0);
  CHECK(v1->abbreviation_at(at(2000, 6, 1)) == "BBB");
  CHECK(v1->offset_at(at(2050, 6, 1)) == 2 * kHour);
  CHECK(v1->next_transition(at(1999, 1, 1)) == at(2000, 1, 1));
  CHECK_FALSE(v1->next_transition(at(2001, 1, 1)).has_value());
}

TEST_CASE("tz: footer rules in all RFC 8536 forms") {
  ScratchZoneDir dir;
  SUBCASE("DST all year (RFC 8536's own example)") {
    dir.write_footer_zone("Test/AllYearDst", "EST5EDT,0/0,J365/25");
    auto z = zone("Test/AllYearDst");
    for (int64_t t : {at(2030, 1, 1), at(2030, 1, 1, 5), at(2030, 7, 1), at(2030, 12, 31, 23)}) {
      CHECK(z->offset_at(t) == -4 * kHour);
      CHECK(z->abbreviation_at(t) == "EDT");
    }
    CHECK_FALSE(z->next_transition(at(2030, 1, 1)).has_value());
  }
  SUBCASE("Jn never counts February 29") {
    dir.write_footer_zone("Test/Julian1", "AAA-1BBB,J60/0,J300/0");
    auto z = zone("Test/Julian1");
    CHECK(z->next_transition(at(2027, 1, 1)) == at(2027, 2, 28, 23));  // March 1, local midnight
    CHECK(z->next_transition(at(2028, 1, 1)) == at(2028, 2, 29, 23));
    CHECK(z->next_transition(at(2028, 3, 1)) == at(2028, 10, 26, 22));
    CHECK(z->abbreviation_at(at(2028, 6, 1)) == "BBB");
  }
  SUBCASE("n counts from zero, February 29 included") {
    dir.write_footer_zone("Test/Julian0", "AAA-1BBB,59/0,299/0");
    auto z = zone("Test/Julian0");
    CHECK(z->next_transition(at(2027, 1, 1)) == at(2027, 2, 28, 23));  // March 1
    CHECK(z->next_transition(at(2028, 1, 1)) == at(2028, 2, 28, 23));  // February 29
    CHECK(z->next_transition(at(2028, 3, 1)) == at(2028, 10, 25, 22));
  }
  SUBCASE("negative transition times (Nuuk's rule until 2023)") {
    dir.write_footer_zone("Test/Negative", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
    auto z = zone("Test/Negative");
    CHECK(z->next_transition(at(2027, 1, 1)) == at(2027, 3, 28, 1));  // 23:00 on the Saturday
    CHECK(z->next_transition(at(2027, 3, 28, 1)) == at(2027, 10, 31, 1));
    CHECK(z->abbreviation_at(at(2027, 6, 1)) == "-01");
  }
  SUBCASE("transition times up to 167 hours either way") {
    dir.write_footer_zone("Test/Hours167", "XXX3YYY,M3.1.0/167,M10.1.0/-167");
    auto z = zone("Test/Hours167");
    CHECK(z->next_transition(at(2027, 1, 1)) == at(2027, 3, 14, 2));
    CHECK(z->next_transition(at(2027, 3, 14, 2)) == at(2027, 9, 26, 3));
  }
  SUBCASE("offsets with minutes and seconds") {
    dir.write_footer_zone("Test/Seconds", "<+0530>-5:30<+063015>-6:30:15,M3.5.0/1:02:03,M10.5.0");
    auto z = zone("Test/Seconds");
    CHECK(z->offset_at(at(2030, 1, 1)) == 5 * kHour + 1800);
    CHECK(z->abbreviation_at(at(2030, 1, 1)) == "+0530");
    CHECK(z->offset_at(at(2030, 7, 1)) == 6 * kHour + 1800 + 15);
    // Last Sunday of March 2030 is the 31st; 01:02:03 at +5:30.
    CHECK(z->next_transition(at(2030, 1, 1)) == at(2030, 3, 30, 19, 32) + 3);
  }
}
