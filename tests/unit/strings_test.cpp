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
