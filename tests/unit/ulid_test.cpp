#include <doctest/doctest.h>

#include <set>
#include <string>

#include "common/util/ulid.hpp"

TEST_CASE("ulid: 26 Crockford characters, strictly increasing within a process") {
  std::string prev;
  std::set<std::string> seen;
  for (int i = 0; i < 20000; ++i) {
    std::string id = jobctl::util::new_ulid();
    REQUIRE(id.size() == 26);
    CHECK(jobctl::util::is_ulid(id));
    if (!prev.empty()) CHECK(prev < id);
    seen.insert(id);
    prev = id;
  }
  CHECK(seen.size() == 20000);
}

TEST_CASE("ulid: is_ulid rejects other text") {
  CHECK_FALSE(jobctl::util::is_ulid(""));
  CHECK_FALSE(jobctl::util::is_ulid("01ARZ3NDEKTSV4RRFFQ69G5FA"));     // 25
  CHECK_FALSE(jobctl::util::is_ulid("01ARZ3NDEKTSV4RRFFQ69G5FAVX"));   // 27
  CHECK_FALSE(jobctl::util::is_ulid("01ARZ3NDEKTSV4RRFFQ69G5FAU"));    // U is not Crockford
  CHECK_FALSE(jobctl::util::is_ulid("81ARZ3NDEKTSV4RRFFQ69G5FAV"));    // overflows 128 bits
  CHECK(jobctl::util::is_ulid("01arz3ndektsv4rrffq69g5fav"));          // case-insensitive
}
