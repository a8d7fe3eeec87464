#include <doctest/doctest.h>

#include "common/util/strings.hpp"

using jobctl::util::split;
using V = std::vector<std::string>;

TEST_CASE("strings: split keeps empty pieces") {
  CHECK(split("a,b", ',') == V{"a", "b"});
  CHECK(split("a,,b", ',') == V{"a", "", "b"});
  CHECK(split("", ',') == V{""});
  CHECK(split("a,", ',') == V{"a", ""});
}

TEST_CASE("strings: stable_hash is FNV-1a, fixed across hosts and releases") {
  CHECK(jobctl::util::stable_hash("") == 0xcbf29ce484222325ULL);
  CHECK(jobctl::util::stable_hash("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(jobctl::util::stable_hash("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("strings: closest names the candidate a typo meant, and nothing when none is near") {
  const std::vector<std::string> commands{"submit", "status", "stats", "ls", "logs", "init"};
  CHECK(jobctl::util::closest("sumbit", commands) == "submit");  // a swap
  CHECK(jobctl::util::closest("submt", commands) == "submit");
  CHECK(jobctl::util::closest("stats", commands) == "stats");
  CHECK(jobctl::util::closest("lss", commands) == "ls");
  CHECK(jobctl::util::closest("frobnicate", commands).empty());
  CHECK(jobctl::util::closest("xy", commands).empty());  // "ls" is 2 edits away: too far for a 2-letter word
}
