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
