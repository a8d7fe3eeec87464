#include <doctest/doctest.h>

#include <string>

#include "common/exec/output_tail.hpp"

using jobctl::exec::OutputTail;

TEST_CASE("output tail: keeps the last bytes whatever the write sizes") {
  std::string all;
  OutputTail tail(1000);
  for (int i = 0; i < 5000; ++i) {
    std::string chunk(static_cast<size_t>(i % 37 + 1), static_cast<char>('a' + i % 26));
    all += chunk;
    tail.append(chunk);
  }
  CHECK(tail.total() == all.size());
  CHECK(tail.str() == all.substr(all.size() - 1000));
}

TEST_CASE("output tail: short output is kept whole, and one huge write keeps its end") {
  OutputTail tail(10);
  tail.append("abc");
  CHECK(tail.str() == "abc");
  tail.append(std::string(100, 'x') + "0123456789");
  CHECK(tail.str() == "0123456789");
  tail.append("AB");
  CHECK(tail.str() == "23456789AB");
}
