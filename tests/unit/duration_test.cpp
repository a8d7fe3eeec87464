#include <doctest/doctest.h>

#include "common/util/duration.hpp"
#include "common/util/error.hpp"

using jobctl::util::format_duration;
using jobctl::util::Micros;
using jobctl::util::parse_duration;

TEST_CASE("duration: parse accepts compound units") {
  CHECK(parse_duration("90s", "x") == Micros(90'000'000));
  CHECK(parse_duration("10m", "x") == Micros(600'000'000));
  CHECK(parse_duration("1h30m", "x") == Micros(5'400'000'000));
  CHECK(parse_duration("250ms", "x") == Micros(250'000));
  CHECK(parse_duration("2d", "x") == Micros(172'800'000'000));
  CHECK(parse_duration("1m30s500ms", "x") == Micros(90'500'000));
}

TEST_CASE("duration: parse rejects bare numbers, unknown units and junk") {
  for (const char* bad : {"", "10", "10x", "s", "1h-5m", "1.5h", " 5s", "5s ", "99999999999999h"}) {
    CAPTURE(bad);
    try {
      parse_duration(bad, "--timeout");
      FAIL("accepted");
    } catch (const jobctl::Error& e) {
      CHECK(e.code() == jobctl::ExitCode::usage);
      CHECK(std::string(e.what()).find("--timeout") != std::string::npos);
    }
  }
}

TEST_CASE("duration: one past 100 years is refused, however large, and never wraps to a small one") {
  CHECK(parse_duration("36500d", "x") == jobctl::util::kMaxDuration);
  // 106751992d and 307445734562m wrapped past int64_t to a negative and a 10 s duration.
  for (const char* big : {"36500d1us", "106751992d", "307445734562m", "999999999999d", "1d999999999999h"}) {
    CAPTURE(big);
    try {
      parse_duration(big, "--older-than");
      FAIL("accepted");
    } catch (const jobctl::Error& e) {
      CHECK(e.code() == jobctl::ExitCode::usage);
      CHECK(std::string(e.what()).find("longer than 100 years") != std::string::npos);
    }
  }
}

TEST_CASE("duration: format round-trips through parse") {
  for (const char* text : {"90s", "1h30m", "250ms", "2d3h", "1m1s"}) {
    CAPTURE(text);
    Micros d = parse_duration(text, "x");
    CHECK(parse_duration(format_duration(d), "x") == d);
  }
  CHECK(format_duration(Micros(5'400'000'000)) == "1h30m");
  CHECK(format_duration(Micros(0)) == "0s");
  CHECK(format_duration(Micros(1500)) == "1ms");
}
