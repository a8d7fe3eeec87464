// libFuzzer: durations (common/util/duration.hpp), as --in, --timeout,
// --older-than and a batch line's duration fields take them. The whole
// input is the text.
//
// A duration that parses lies in [0, 100 years], and its formatted form
// (lossless down to milliseconds, exact below one) parses back to it.
#include <fmt/format.h>

#include "common/util/duration.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::text_of(data, size);
  util::Micros d{};
  if (!fuzz::accepts([&] { d = util::parse_duration(text, "--in"); })) return 0;
  const int64_t us = d.count();
  if (us < 0 || d > util::kMaxDuration) fuzz::fail(fmt::format("'{}' parsed to {} µs, out of range", text, us));
  const std::string shown = util::format_duration(d);
  util::Micros again{};
  if (!fuzz::accepts([&] { again = util::parse_duration(shown, "--in"); }))
    fuzz::fail(fmt::format("'{}' formats as '{}', which does not parse", text, shown));
  const int64_t expected = us < 1000 ? us : us - us % 1000;
  if (again.count() != expected)
    fuzz::fail(fmt::format("'{}' is {} µs, formats as '{}', which parses to {} µs", text, us, shown, again.count()));
  return 0;
}
