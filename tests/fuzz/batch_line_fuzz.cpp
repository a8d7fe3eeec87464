// libFuzzer: `jobctl submit --file` lines (common/jobdef/job_input.hpp,
// read through common/util/json_input.hpp), each line as the CLI reads it.
// The input is the file: lines split at '\n', blank ones skipped.
//
// A job that parses keeps its payload as JSON text that reads back under
// the same limits (it sat one level deeper in the line).
#include <fmt/format.h>

#include <sstream>

#include "common/jobdef/job_input.hpp"
#include "common/util/json_input.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(fuzz::text_of(data, size));
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    model::JobSpec spec;
    if (!fuzz::accepts([&] { spec = jobdef::job_spec_from_json(util::parse_json_input(line, "the job", "")); }))
      continue;
    if (spec.payload && !fuzz::accepts([&] { util::parse_json_input(*spec.payload, "the payload", ""); }))
      fuzz::fail(fmt::format("the payload of '{}' does not read back: {}", line, *spec.payload));
  }
  return 0;
}
