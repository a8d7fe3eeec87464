#include <doctest/doctest.h>

#include "common/util/error.hpp"
#include "common/util/time.hpp"

using jobctl::util::format_time;
using jobctl::util::parse_at;
using jobctl::util::parse_time_arg;

namespace {
constexpr int64_t kSecond = 1'000'000;
// 2030-01-01T00:00:00Z
constexpr int64_t k2030 = 1'893'456'000LL * kSecond;
}  // namespace

TEST_CASE("time: RFC 3339 with an offset is absolute") {
  CHECK(parse_at("2030-01-01T00:00:00Z", "", "--at") == k2030);
  CHECK(parse_at("2030-01-01T01:00:00+01:00", "", "--at") == k2030);
  CHECK(parse_at("2029-12-31T19:00:00.5-05:00", "", "--at") == k2030 + kSecond / 2);
  CHECK(parse_time_arg("2030-01-01", "--since", 0) == k2030);
  CHECK(parse_time_arg("2h", "--since", 10 * 3600 * kSecond) == 8 * 3600 * kSecond);
}

TEST_CASE("time: RFC 3339's lower-case t and z and a nanosecond fraction (Go, JavaScript) are read") {
  CHECK(parse_at("2030-01-01t00:00:00z", "", "--at") == k2030);
  CHECK(parse_time_arg("2030-01-01t01:00:00+01:00", "--since", 0) == k2030);
  // Finer than a microsecond is dropped, never rounded into the next one.
  CHECK(parse_at("2030-01-01T00:00:00.123456789Z", "", "--at") == k2030 + 123'456);
  CHECK(parse_at("2030-01-01T00:00:00.000000999Z", "", "--at") == k2030);
  CHECK_THROWS_AS(parse_at("2030-01-01T00:00:00.1234567890Z", "", "--at"), jobctl::Error);
}

TEST_CASE("time: a local time is read in the --tz zone, across DST") {
  CHECK(parse_at("2030-01-01 01:00", "Europe/Berlin", "--at") == k2030);              // CET, +1
  CHECK(parse_at("2030-07-01 02:00", "Europe/Berlin", "--at") ==
        parse_at("2030-07-01T00:00:00Z", "", "--at"));                                // CEST, +2
  CHECK(parse_at("2030-01-01 00:00", "UTC", "--at") == k2030);
  // The repeated hour after the DST end means its first occurrence (CEST).
  CHECK(parse_at("2030-10-27 02:30", "Europe/Berlin", "--at") == parse_at("2030-10-27T00:30:00Z", "", "--at"));
}

TEST_CASE("time: bad --at values are usage errors naming the problem") {
  auto fails_with = [](const std::string& text, const std::string& tz, const std::string& mention) {
    CAPTURE(text);
    try {
      parse_at(text, tz, "--at");
      FAIL("accepted");
    } catch (const jobctl::Error& e) {
      CHECK(e.code() == jobctl::ExitCode::usage);
      CHECK(std::string(e.what()).find(mention) != std::string::npos);
    }
  };
  fails_with("2030-03-31 02:30", "Europe/Berlin", "does not exist");  // the spring-forward gap
  fails_with("2030-01-01 00:00", "Mars/Olympus", "unknown time zone");
  fails_with("2030-01-01T00:00:00Z", "Europe/Berlin", "drop --tz");
  fails_with("tomorrow", "", "invalid time");
  fails_with("2030-13-01 00:00", "", "out of range");
}

TEST_CASE("time: a day past the end of its month is refused, never moved into the next month") {
  for (const char* text : {"2027-02-30 10:00", "2027-02-29T10:00:00Z", "2100-02-29 00:00", "2027-04-31 00:00"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(parse_at(text, "UTC", "--at"), doctest::Contains("days"), jobctl::Error);
    CHECK_THROWS_AS(parse_time_arg(text, "--from", k2030), jobctl::Error);
  }
  CHECK(parse_at("2028-02-29 00:00", "UTC", "--at") == 1'835'395'200LL * kSecond);  // a leap day
}

TEST_CASE("time: format_time before 1970 shows the second and its fraction, and reads back") {
  // Found by tests/fuzz/time_fuzz: the second was rounded toward 1970 and
  // the fraction printed negative ("1970-01-01T00:00:00.-500Z").
  CHECK(format_time(-kSecond / 2) == "1969-12-31T23:59:59.500Z");
  CHECK(format_time(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(format_time(-kSecond) == "1969-12-31T23:59:59.000Z");
  CHECK(format_time(0) == "1970-01-01T00:00:00.000Z");
  CHECK(parse_time_arg(format_time(-223'951'160'333'000), "--from", 0) == -223'951'160'333'000);
}
