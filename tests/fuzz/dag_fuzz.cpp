// libFuzzer: DAG documents (common/dag/dag.hpp), as `dag submit` and
// `dag graph FILE` read them. The whole input is the document.
//
// A DAG that parses has 1 to kMaxNodes nodes with distinct names, each
// after all of its parents, and draws as DOT, plain or coloured.
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "common/dag/dag.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace jobctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::text_of(data, size);
  dag::Definition d;
  if (!fuzz::accepts([&] { d = dag::parse(text); })) return 0;
  if (d.nodes.empty() || d.nodes.size() > dag::kMaxNodes) fuzz::fail(fmt::format("{} nodes", d.nodes.size()));
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const auto& n = d.nodes[i];
    if (!position.emplace(n.name, i).second) fuzz::fail(fmt::format("node '{}' twice", n.name));
    for (const auto& p : n.depends_on)
      if (!position.count(p)) fuzz::fail(fmt::format("node '{}' comes before its parent '{}'", n.name, p));
  }
  std::vector<std::string> status(d.nodes.size(), "running");
  status[0] = "no such state";
  if (dag::to_dot(d).empty() || dag::to_dot(d, status).empty()) fuzz::fail("no DOT");
  return 0;
}
