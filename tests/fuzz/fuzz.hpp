#pragma once
// What the fuzz targets share. The rule they hold the parsers to is the
// tree's error rule (common/util/error.hpp): bad input is answered with
// jobctl::Error(ExitCode::usage) and a message, nothing else. Any other
// exception escapes LLVMFuzzerTestOneInput, ends in std::terminate, and
// libFuzzer keeps the input as a crash; so does a broken invariant, through
// fail().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/util/error.hpp"

namespace jobctl::fuzz {

// Stops the run, naming the invariant that broke; libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

// An Error refusing input: it must be a usage error with a message.
inline void check_refusal(const Error& e) {
  if (e.code() != ExitCode::usage)
    fail("exit code " + std::to_string(static_cast<int>(e.code())) + " for bad input: " + e.what());
  if (std::string_view(e.what()).empty()) fail("a usage error without a message");
}

// Runs `parse`: true when it returned, false when it refused the input
// (checked by check_refusal).
template <class Parse>
bool accepts(Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const Error& e) {
    check_refusal(e);
    return false;
  }
}

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace jobctl::fuzz
